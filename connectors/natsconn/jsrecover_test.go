package natsconn

import (
	"bytes"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/sluicehq/sluice/abi"
	"github.com/sluicehq/sluice/connectors"
)

// outputs returns one output per (position, n) pair, with the id the host
// derives ("p/in/<position>/<n>") and a value naming it.
func outputs(pairs ...[2]int) []connectors.Out {
	out := make([]connectors.Out, len(pairs))
	for i, p := range pairs {
		id := fmt.Sprintf("p/in/%d/%d", p[0], p[1])
		out[i] = connectors.Out{Record: abi.Record{Value: []byte("v:" + id)}, ID: id}
	}
	return out
}

// batch writes out and flushes it.
func batch(t testing.TB, s *JetStreamSink, out []connectors.Out) {
	t.Helper()
	if err := s.Write(testCtx(t), out); err != nil {
		t.Fatal(err)
	}
	if err := s.Flush(testCtx(t)); err != nil {
		t.Fatal(err)
	}
}

// recoveryStream creates the stream OUT with the smallest duplicate window
// JetStream allows, capturing the sinks' subject "out" and "probe" (for
// waitPastDuplicateWindow).
func recoveryStream(t testing.TB, nc *nats.Conn, cfg jetstream.StreamConfig) jetstream.Stream {
	t.Helper()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Name, cfg.Subjects, cfg.Duplicates = "OUT", []string{"out", "probe"}, 100*time.Millisecond
	st, err := js.CreateStream(testCtx(t), cfg)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// waitPastDuplicateWindow returns once the stream has forgotten every
// Nats-Msg-Id it stored before the call: it stores a probe id on subject
// "probe" and publishes it again until the stream no longer takes it for a
// duplicate. A stream forgets ids oldest first, so the earlier ones are
// forgotten by then.
func waitPastDuplicateWindow(t testing.TB, nc *nats.Conn) {
	t.Helper()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	ctx := testCtx(t)
	id := fmt.Sprint("probe-", time.Now().UnixNano())
	if _, err := js.Publish(ctx, "probe", nil, jetstream.WithMsgID(id)); err != nil {
		t.Fatal(err)
	}
	waitFor(ctx, t, "the stream to forget the ids stored before", func() bool {
		ack, err := js.Publish(ctx, "probe", nil, jetstream.WithMsgID(id))
		if err != nil {
			t.Fatal(err)
		}
		return !ack.Duplicate
	})
}

// storedIDs returns how many times each Nats-Msg-Id appears on subject
// "out" of st.
func storedIDs(t testing.TB, st jetstream.Stream) map[string]int {
	t.Helper()
	ctx := testCtx(t)
	info, err := st.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	ids := map[string]int{}
	for seq := info.State.FirstSeq; seq <= info.State.LastSeq && info.State.Msgs > 0; seq++ {
		m, err := st.GetMsg(ctx, seq)
		if err != nil {
			t.Fatalf("message %d: %v", seq, err)
		}
		if m.Subject == "out" {
			ids[m.Header.Get(jetstream.MsgIDHeader)]++
		}
	}
	return ids
}

// expectOnce checks that the stream holds exactly the outputs of pairs on
// subject "out", each once.
func expectOnce(t testing.TB, st jetstream.Stream, pairs ...[2]int) {
	t.Helper()
	got := storedIDs(t, st)
	want := map[string]int{}
	for _, o := range outputs(pairs...) {
		want[o.ID] = 1
	}
	if !maps.Equal(got, want) {
		t.Fatalf("stream holds (id: times) %v\nwant each of %v once", got, slices.Sorted(maps.Keys(want)))
	}
}

// TestJetStreamSinkReplayAfterTheDuplicateWindow is a crash after a batch
// was published and before it was committed, with a restart later than
// the stream's duplicate window: the replay must not store the batch's
// outputs again. The replay runs in two batches that cut the crashed one
// differently, with a second crash between them, and its outputs come in
// another order than the crashed run's (as a keyed operator's may).
func TestJetStreamSinkReplayAfterTheDuplicateWindow(t *testing.T) {
	e := startServer(t)
	nc := connect(t, e.ClientURL())
	st := recoveryStream(t, nc, jetstream.StreamConfig{})
	cfg := JetStreamSinkConfig{Subject: "out", Stream: "OUT"}

	first := newJSSink(t, nc, cfg)
	if off := first.Offset(); off != 0 {
		t.Fatalf("Offset of a sink on an empty stream = %d, want 0", off)
	}
	batch(t, first, outputs([2]int{1, 0}, [2]int{2, 0}, [2]int{2, 1}))
	committed := first.Offset()
	if committed != 3 {
		t.Fatalf("Offset after 3 messages = %d, want 3", committed)
	}
	// The crashed batch: positions 3 to 5, published, never committed.
	batch(t, first, outputs([2]int{5, 0}, [2]int{3, 0}, [2]int{4, 0}, [2]int{3, 1}))
	if err := first.Close(); err != nil {
		t.Fatal(err)
	}
	waitPastDuplicateWindow(t, nc)

	second := newJSSink(t, nc, cfg)
	if err := second.Rewind(t.Context(), committed); err != nil {
		t.Fatal(err)
	}
	// The replay's first batch: positions 3 and 4 only.
	batch(t, second, outputs([2]int{3, 1}, [2]int{3, 0}, [2]int{4, 0}))
	again := second.Offset()
	if again != committed {
		// 5/0 is at sequence 4, the first of the crashed batch.
		t.Fatalf("Offset while 5/0 is not replayed = %d, want %d: a second crash must find it again", again, committed)
	}
	// A second crash.
	if err := second.Close(); err != nil {
		t.Fatal(err)
	}
	waitPastDuplicateWindow(t, nc)

	third := newJSSink(t, nc, cfg)
	if err := third.Rewind(t.Context(), again); err != nil {
		t.Fatal(err)
	}
	batch(t, third, outputs([2]int{5, 0}, [2]int{6, 0}))
	last := third.Offset()
	batch(t, third, outputs([2]int{7, 0}))
	if off := third.Offset(); off != last+1 || len(third.skip) != 0 {
		t.Fatalf("Offset after the replay = %d with %d ids left to skip, want %d and none: the check ends with the replay", off, len(third.skip), last+1)
	}
	expectOnce(t, st, [2]int{1, 0}, [2]int{2, 0}, [2]int{2, 1}, [2]int{3, 0}, [2]int{3, 1}, [2]int{4, 0}, [2]int{5, 0}, [2]int{6, 0}, [2]int{7, 0})
}

// TestJetStreamSinkForgetsWhatTheReplayDoesNotWrite: an output of the
// crashed batch that the replay does not produce again (its operator
// changed) holds Offset back only until a later position is written.
func TestJetStreamSinkForgetsWhatTheReplayDoesNotWrite(t *testing.T) {
	e := startServer(t)
	nc := connect(t, e.ClientURL())
	st := recoveryStream(t, nc, jetstream.StreamConfig{})
	cfg := JetStreamSinkConfig{Subject: "out", Stream: "OUT"}
	first := newJSSink(t, nc, cfg)
	batch(t, first, outputs([2]int{1, 0}, [2]int{1, 1}))
	if err := first.Close(); err != nil {
		t.Fatal(err)
	}

	second := newJSSink(t, nc, cfg)
	if err := second.Rewind(t.Context(), 0); err != nil {
		t.Fatal(err)
	}
	batch(t, second, outputs([2]int{1, 0}, [2]int{2, 0}))
	if off := second.Offset(); off != 3 || len(second.skip) != 0 {
		t.Fatalf("Offset = %d with %d ids to skip, want 3 and none: 1/1 can no longer be written", off, len(second.skip))
	}
	expectOnce(t, st, [2]int{1, 0}, [2]int{1, 1}, [2]int{2, 0})
}

// TestJetStreamSinkDoesNotSkipInputThatIsNotReplayed: after a crash, a
// core NATS source gives new input the positions of the lost batch, so
// the ids its outputs had are not skipped.
func TestJetStreamSinkDoesNotSkipInputThatIsNotReplayed(t *testing.T) {
	e := startServer(t)
	nc := connect(t, e.ClientURL())
	recoveryStream(t, nc, jetstream.StreamConfig{})
	cfg := JetStreamSinkConfig{Subject: "out", Stream: "OUT", NotReplayed: []string{"p/core"}}
	first := newJSSink(t, nc, cfg)
	batch(t, first, []connectors.Out{
		{Record: abi.Record{Value: []byte("lost")}, ID: "p/core/1/0"},
		{Record: abi.Record{Value: []byte("kept")}, ID: "p/in/1/0"},
	})
	if err := first.Close(); err != nil {
		t.Fatal(err)
	}
	second := newJSSink(t, nc, cfg)
	if err := second.Rewind(t.Context(), 0); err != nil {
		t.Fatal(err)
	}
	if got := slices.Sorted(maps.Keys(second.skip)); !slices.Equal(got, []string{"p/in/1/0"}) {
		t.Errorf("ids to skip %v, want only the replayed source's", got)
	}
}

// TestJetStreamSinkCleanRestart: with nothing published after the
// committed offset, Rewind finds nothing to skip, on a stream shared with
// other subjects too.
func TestJetStreamSinkCleanRestart(t *testing.T) {
	e := startServer(t)
	nc := connect(t, e.ClientURL())
	st := recoveryStream(t, nc, jetstream.StreamConfig{})
	cfg := JetStreamSinkConfig{Subject: "out"} // the stream found by subject
	first := newJSSink(t, nc, cfg)
	batch(t, first, outputs([2]int{1, 0}))
	committed := first.Offset()
	if err := first.Close(); err != nil {
		t.Fatal(err)
	}
	js, _ := jetstream.New(nc)
	if _, err := js.Publish(testCtx(t), "probe", []byte("another subject")); err != nil {
		t.Fatal(err)
	}
	second := newJSSink(t, nc, cfg)
	if err := second.Rewind(t.Context(), committed); err != nil {
		t.Fatal(err)
	}
	if len(second.skip) != 0 {
		t.Fatalf("%d ids to skip after a clean stop", len(second.skip))
	}
	batch(t, second, outputs([2]int{2, 0}))
	expectOnce(t, st, [2]int{1, 0}, [2]int{2, 0})
	if err := second.Rewind(t.Context(), 0); err == nil || !strings.Contains(err.Error(), "rewind after a write") {
		t.Errorf("Rewind after Write = %v, want an error", err)
	}
}

// syncBuffer is a bytes.Buffer safe for a logger's concurrent writes.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// TestJetStreamSinkWarnsWhenTheStreamDiscardedTheBatch: a stream whose
// limits discarded messages stored after the commit cannot say whether
// they were outputs of the crashed batch; Rewind warns, and skips those it
// still holds.
func TestJetStreamSinkWarnsWhenTheStreamDiscardedTheBatch(t *testing.T) {
	e := startServer(t)
	nc := connect(t, e.ClientURL())
	st := recoveryStream(t, nc, jetstream.StreamConfig{MaxMsgs: 2})
	var logs syncBuffer
	cfg := JetStreamSinkConfig{Subject: "out", Stream: "OUT", Logger: slog.New(slog.NewTextHandler(&logs, nil))}
	first := newJSSink(t, nc, cfg)
	batch(t, first, outputs([2]int{1, 0}))
	committed := first.Offset()
	batch(t, first, outputs([2]int{2, 0}, [2]int{2, 1}, [2]int{2, 2})) // 1/0 and 2/0 discarded
	if err := first.Close(); err != nil {
		t.Fatal(err)
	}
	second := newJSSink(t, nc, cfg)
	if err := second.Rewind(t.Context(), committed); err != nil {
		t.Fatal(err)
	}
	if l := logs.String(); !strings.Contains(l, "no longer holds messages stored after the last commit") || !strings.Contains(l, "from=2 to=2") {
		t.Errorf("log %q, want a warning naming the discarded sequences", l)
	}
	if got := slices.Sorted(maps.Keys(second.skip)); !slices.Equal(got, []string{"p/in/2/1", "p/in/2/2"}) {
		t.Errorf("ids to skip %v, want those the stream still holds", got)
	}
	batch(t, second, outputs([2]int{2, 0}, [2]int{2, 1}, [2]int{2, 2}))
	// 2/0 is published again (stored unless within the duplicate window,
	// when it discards 2/1); nothing is stored twice.
	for id, n := range storedIDs(t, st) {
		if n != 1 {
			t.Errorf("%s stored %d times", id, n)
		}
	}
}

// TestJetStreamSinkWarnsOfRetentionThatLosesMessages: a stream that removes
// what was consumed, or keeps few messages per subject, may have lost a
// crashed batch's outputs before the restart; the sink says so when it is
// created.
func TestJetStreamSinkWarnsOfRetentionThatLosesMessages(t *testing.T) {
	e := startServer(t)
	nc := connect(t, e.ClientURL())
	js, _ := jetstream.New(nc)
	for _, c := range []struct {
		cfg  jetstream.StreamConfig
		want string
	}{
		{jetstream.StreamConfig{Name: "WQ", Subjects: []string{"wq"}, Retention: jetstream.WorkQueuePolicy}, "retention=WorkQueue"},
		{jetstream.StreamConfig{Name: "INTEREST", Subjects: []string{"interest"}, Retention: jetstream.InterestPolicy}, "retention=Interest"},
		{jetstream.StreamConfig{Name: "PER", Subjects: []string{"per"}, MaxMsgsPerSubject: 10}, "max_msgs_per_subject=10"},
		{jetstream.StreamConfig{Name: "PLAIN", Subjects: []string{"plain"}, MaxAge: time.Hour}, ""},
	} {
		if _, err := js.CreateStream(testCtx(t), c.cfg); err != nil {
			t.Fatal(err)
		}
		var logs syncBuffer
		newJSSink(t, nc, JetStreamSinkConfig{Subject: c.cfg.Subjects[0], Logger: slog.New(slog.NewTextHandler(&logs, nil))})
		l := logs.String()
		if c.want == "" {
			if l != "" {
				t.Errorf("stream %s: log %q, want none", c.cfg.Name, l)
			}
			continue
		}
		if !strings.Contains(l, "level=WARN") || !strings.Contains(l, c.want) {
			t.Errorf("stream %s: log %q, want a warning with %s", c.cfg.Name, l, c.want)
		}
	}
}

// TestJetStreamSinkOffsetStartsAtTheStreamsEnd: a sink with nothing
// committed yet starts from the stream's last sequence, so that the host
// can commit it before the first batch.
func TestJetStreamSinkOffsetStartsAtTheStreamsEnd(t *testing.T) {
	e := startServer(t)
	nc := connect(t, e.ClientURL())
	js := newStream(t, nc, "OUT", "out")
	publishValues(t, js, "out", "x", 5)
	if off := newJSSink(t, nc, JetStreamSinkConfig{Subject: "out"}).Offset(); off != 5 {
		t.Errorf("Offset = %d, want the stream's last sequence 5", off)
	}
	// A subject no stream captures: nothing to recover, and no error.
	nowhere := newJSSink(t, nc, JetStreamSinkConfig{Subject: "nowhere"})
	if err := nowhere.Rewind(t.Context(), 7); err != nil || nowhere.Offset() != 7 {
		t.Errorf("Rewind without a stream = %v, Offset %d; want nil and 7", err, nowhere.Offset())
	}
}

func TestIDPosition(t *testing.T) {
	for _, c := range []struct {
		id     string
		prefix string
		pos    uint64
		ok     bool
	}{
		{"p/in/12/0", "p/in", 12, true},
		{"a/b/c/7/3", "a/b/c", 7, true},
		{"p/dead/in/4/1", "p/dead/in", 4, true},
		{"in/5/x", "", 0, false},
		{"5/0", "", 0, false},
		{"id-3", "", 0, false},
		{"p/in/-1/0", "", 0, false},
	} {
		prefix, pos, ok := idPosition(c.id)
		if prefix != c.prefix || pos != c.pos || ok != c.ok {
			t.Errorf("idPosition(%q) = %q, %d, %v; want %q, %d, %v", c.id, prefix, pos, ok, c.prefix, c.pos, c.ok)
		}
	}
}
