package natsconn

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"pgregory.net/rapid"

	"github.com/sluicehq/sluice/abi"
	"github.com/sluicehq/sluice/connectors"
	"github.com/sluicehq/sluice/state"
)

func newPartSource(t testing.TB, nc *nats.Conn, cfg PartitionedSourceConfig) *PartitionedSource {
	t.Helper()
	if cfg.Logger == nil {
		cfg.Logger = quiet()
	}
	src, err := NewPartitionedSource(nc, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = src.Close() })
	return src
}

// partStream creates stream name capturing "<prefix>.*".
func partStream(t testing.TB, nc *nats.Conn, name, prefix string) jetstream.JetStream {
	t.Helper()
	return newStream(t, nc, name, prefix+".*")
}

// partRecord is a record published to a partition subject, as the tests
// expect it back.
type partRecord struct {
	seq   uint64
	group int
	value string
}

// publishGroup publishes value to "<prefix>.<kg>" and returns it with its
// stream sequence.
func publishGroup(t testing.TB, js jetstream.JetStream, prefix string, kg int, value string) partRecord {
	t.Helper()
	ack, err := js.Publish(testCtx(t), prefix+"."+strconv.Itoa(kg), []byte(value))
	if err != nil {
		t.Fatal(err)
	}
	return partRecord{seq: ack.Sequence, group: kg, value: value}
}

// expectRecords reads len(want) messages and checks them against want, in
// order.
func expectRecords(ctx context.Context, t testing.TB, src connectors.Source, want []partRecord) []connectors.Message {
	t.Helper()
	got := readN(ctx, t, src, len(want))
	for i, m := range got {
		w := want[i]
		if m.Err != nil || m.Position != w.seq || m.Group != w.group || string(m.Record.Value) != w.value {
			t.Fatalf("message %d: position %d group %d value %q err %v; want position %d group %d value %q",
				i, m.Position, m.Group, m.Record.Value, m.Err, w.seq, w.group, w.value)
		}
	}
	return got
}

// expectGroupSet fails unless every message was read under group set n.
func expectGroupSet(t testing.TB, msgs []connectors.Message, n uint64) {
	t.Helper()
	for _, m := range msgs {
		if m.GroupSet != n {
			t.Fatalf("record at %d read under group set %d, want %d", m.Position, m.GroupSet, n)
		}
	}
}

// above returns the records of recs in groups with a floor below their
// sequence.
func above(recs []partRecord, floors map[int]uint64) []partRecord {
	var out []partRecord
	for _, r := range recs {
		if f, ok := floors[r.group]; ok && r.seq > f {
			out = append(out, r)
		}
	}
	return out
}

func TestJetStreamSinkPartitionsByKeyGroup(t *testing.T) {
	e := startServer(t)
	nc := connect(t, e.ClientURL())
	ctx := testCtx(t)
	const groups = 8
	sink := newJSSink(t, nc, JetStreamSinkConfig{
		Subject: "part", Stream: "PART", CreateStream: &StreamSpec{}, KeyGroups: groups, KeyGroup: state.KeyGroup,
	})
	out := make([]connectors.Out, 100)
	for i := range out {
		out[i] = connectors.Out{Record: abi.Record{Value: fmt.Appendf(nil, "v%d", i)}, ID: fmt.Sprint("id-", i)}
		if i%10 != 0 { // every tenth record has no key
			out[i].Record.Key = fmt.Appendf(nil, "key-%d", i%23)
		}
	}
	if err := sink.Write(ctx, out); err != nil {
		t.Fatal(err)
	}
	if err := sink.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	st, err := js.Stream(ctx, "PART")
	if err != nil {
		t.Fatal(err)
	}
	if subj := st.CachedInfo().Config.Subjects; !slices.Equal(subj, []string{"part.*"}) {
		t.Fatalf("the stream created captures %q, want [part.*]", subj)
	}
	var all []partRecord
	for i, o := range out {
		seq := uint64(i + 1)
		kg := state.KeyGroup(o.Record.Key, groups)
		m, err := st.GetMsg(ctx, seq)
		if err != nil {
			t.Fatal(err)
		}
		if want := fmt.Sprint("part.", kg); m.Subject != want || string(m.Data) != string(o.Record.Value) {
			t.Fatalf("record %d (key %q) stored on %s as %q, want on %s", i, o.Record.Key, m.Subject, m.Data, want)
		}
		all = append(all, partRecord{seq: seq, group: kg, value: string(o.Record.Value)})
	}

	// Every group: all of them, in stream order.
	src := newPartSource(t, nc, PartitionedSourceConfig{Stream: "PART", Prefix: "part", KeyGroups: groups})
	if err := src.Open(ctx, 0); err != nil {
		t.Fatal(err)
	}
	expectRecords(ctx, t, src, all)

	// A subset: exactly theirs, keys included.
	floors := map[int]uint64{1: 0, 3: 0, state.KeyGroup(nil, groups): 0}
	sub := newPartSource(t, nc, PartitionedSourceConfig{Stream: "PART", Prefix: "part", KeyGroups: groups})
	if err := sub.OpenGroups(ctx, floors); err != nil {
		t.Fatal(err)
	}
	want := above(all, floors)
	got := readN(ctx, t, sub, len(want))
	for i, m := range got {
		o := out[m.Position-1]
		if m.Position != want[i].seq || m.Group != want[i].group || string(m.Record.Key) != string(o.Record.Key) {
			t.Fatalf("message %d: position %d group %d key %q; want position %d group %d key %q",
				i, m.Position, m.Group, m.Record.Key, want[i].seq, want[i].group, o.Record.Key)
		}
	}
	// Nothing else is pending: the next record of a group read comes next.
	next := publishGroup(t, js, "part", 5, "other") // not read
	last := publishGroup(t, js, "part", 3, "last")
	_ = next
	expectRecords(ctx, t, sub, []partRecord{last})
}

func TestJetStreamSinkPartitionedRewind(t *testing.T) {
	e := startServer(t)
	nc := connect(t, e.ClientURL())
	cfg := JetStreamSinkConfig{Subject: "part", Stream: "PART", CreateStream: &StreamSpec{}, KeyGroups: 4, KeyGroup: state.KeyGroup}
	sink := newJSSink(t, nc, cfg)
	batch(t, sink, outputs([2]int{1, 0}, [2]int{2, 0}))
	offset := sink.Offset()
	batch(t, sink, outputs([2]int{3, 0}, [2]int{4, 0}, [2]int{5, 0})) // not committed
	if err := sink.Close(); err != nil {
		t.Fatal(err)
	}
	// The restarted sink finds the uncommitted batch on the partition
	// subjects.
	again := newJSSink(t, nc, cfg)
	if err := again.Rewind(context.Background(), offset); err != nil {
		t.Fatal(err)
	}
	if len(again.skip) != 3 {
		t.Fatalf("Rewind found %d ids of the uncommitted batch, want 3", len(again.skip))
	}
}

func TestJetStreamSinkPartitionConfig(t *testing.T) {
	e := startServer(t)
	nc := connect(t, e.ClientURL())
	for _, tc := range []struct {
		cfg  JetStreamSinkConfig
		want string
	}{
		{JetStreamSinkConfig{Subject: "a.*", KeyGroups: 4, KeyGroup: state.KeyGroup}, `subject "a.*" cannot be partitioned`},
		{JetStreamSinkConfig{Subject: "a..b", KeyGroups: 4, KeyGroup: state.KeyGroup}, `subject "a..b" cannot be partitioned`},
		{JetStreamSinkConfig{Subject: "a", KeyGroups: -1}, "KeyGroups -1 out of range"},
		{JetStreamSinkConfig{Subject: "a", KeyGroups: 4}, "KeyGroups needs KeyGroup, the partition function"},
		{JetStreamSinkConfig{Subject: "a", KeyGroups: state.MaxKeyGroups + 1}, "KeyGroups 65537 out of range"},
		{JetStreamSinkConfig{Subject: "a", Stream: "A", KeyGroups: 4, KeyGroup: state.KeyGroup, CreateStream: &StreamSpec{Subjects: []string{"a"}}},
			`subjects ["a"] do not capture "a.0", the subject of key group 0`},
		{JetStreamSinkConfig{Subject: "a", Stream: "A", KeyGroups: 12, KeyGroup: state.KeyGroup, CreateStream: &StreamSpec{Subjects: []string{"a.1", "a.0", "x.>"}}},
			`do not capture "a.2"`},
	} {
		_, err := NewJetStreamSink(testCtx(t), nc, tc.cfg)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: err = %v, want %q", tc.cfg, err, tc.want)
		}
	}
	// Subjects that capture every group are taken as they are.
	newJSSink(t, nc, JetStreamSinkConfig{Subject: "b", Stream: "B", KeyGroups: 4, KeyGroup: state.KeyGroup, CreateStream: &StreamSpec{Subjects: []string{"b.>"}}})
}

func TestSubjectMatches(t *testing.T) {
	for _, tc := range []struct {
		pattern, subject string
		want             bool
	}{
		{"a", "a", true}, {"a", "a.b", false}, {"a.b", "a", false}, {"a.*", "a.b", true},
		{"a.*", "a.b.c", false}, {"a.>", "a.b.c", true}, {">", "a", true}, {"*.b", "a.b", true},
		{"a.*", "a", false}, {"a.b", "a.c", false},
	} {
		if got := subjectMatches(tc.pattern, tc.subject); got != tc.want {
			t.Errorf("subjectMatches(%q, %q) = %v, want %v", tc.pattern, tc.subject, got, tc.want)
		}
	}
}

func TestParseGroup(t *testing.T) {
	for _, tc := range []struct {
		subject string
		group   int
		ok      bool
	}{
		{"p.0", 0, true}, {"p.7", 7, true}, {"p.8", 0, false}, {"p.07", 0, false}, {"p.-1", 0, false},
		{"p.x", 0, false}, {"p.", 0, false}, {"p", 0, false}, {"q.1", 0, false}, {"px1", 0, false},
		{"p.1.2", 0, false}, {"p.99999999999999999999", 0, false},
	} {
		kg, ok := parseGroup(tc.subject, "p", 8)
		if ok != tc.ok || (ok && kg != tc.group) {
			t.Errorf("parseGroup(%q) = %d, %v; want %d, %v", tc.subject, kg, ok, tc.group, tc.ok)
		}
	}
}

func TestPartitionedSourceFloorsAndSetGroups(t *testing.T) {
	for _, maxFilters := range []int{1, 4} { // through "p.*", through each group's subject
		t.Run(fmt.Sprint("MaxFilters=", maxFilters), func(t *testing.T) { testFloorsAndSetGroups(t, maxFilters) })
	}
}

func testFloorsAndSetGroups(t *testing.T, maxFilters int) {
	e := startServer(t)
	nc := connect(t, e.ClientURL())
	ctx := testCtx(t)
	js := partStream(t, nc, "P", "p")
	var recs []partRecord
	for i := range 30 {
		recs = append(recs, publishGroup(t, js, "p", i%4, fmt.Sprint("a", i)))
	}
	src := newPartSource(t, nc, PartitionedSourceConfig{Stream: "P", Prefix: "p", KeyGroups: 4, MaxFilters: maxFilters, Batch: 4})
	if src.Name() != "jetstream-partitioned:P" || src.KeyGroups() != 4 || !src.Resumable() {
		t.Fatalf("name %q, key groups %d, resumable %v", src.Name(), src.KeyGroups(), src.Resumable())
	}
	// Group 0 after 12, group 1 after 2: the consumer starts at 3 and drops
	// group 0's records up to 12.
	floors := map[int]uint64{0: 12, 1: 2}
	if err := src.OpenGroups(ctx, floors); err != nil {
		t.Fatal(err)
	}
	want := above(recs, floors)
	expectGroupSet(t, expectRecords(ctx, t, src, want[:5]), 0)

	// Group 2 joins at floor 6, older than what was read of the others;
	// group 0 leaves. Group 1's floor is now the last record of it read.
	floors = map[int]uint64{1: want[4].seq, 2: 6}
	if err := src.SetGroups(ctx, floors); err != nil {
		t.Fatal(err)
	}
	for i := range 8 {
		recs = append(recs, publishGroup(t, js, "p", i%4, fmt.Sprint("b", i)))
	}
	expectGroupSet(t, expectRecords(ctx, t, src, above(recs, floors)), 1)

	// Nothing but groups 1 and 2, nothing at or below their floors: the
	// next record read is the next of group 2.
	publishGroup(t, js, "p", 0, "gone")
	publishGroup(t, js, "p", 3, "never")
	expectGroupSet(t, expectRecords(ctx, t, src, []partRecord{publishGroup(t, js, "p", 2, "next")}), 1)

	// No groups: nothing is read until SetGroups gives some back.
	if err := src.SetGroups(ctx, nil); err != nil {
		t.Fatal(err)
	}
	short, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
	defer cancel()
	if n, err := src.Read(short, make([]connectors.Message, 4)); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Read with no groups = %d, %v; want the context's deadline", n, err)
	}
	last := publishGroup(t, js, "p", 3, "after")
	if err := src.SetGroups(ctx, map[int]uint64{3: last.seq - 1}); err != nil {
		t.Fatal(err)
	}
	expectGroupSet(t, expectRecords(ctx, t, src, []partRecord{last}), 3)
}

// TestPartitionedSourceSetGroupsWhileReadWaits changes the groups while
// another goroutine waits in Read for records of a group that has none.
func TestPartitionedSourceSetGroupsWhileReadWaits(t *testing.T) {
	e := startServer(t)
	nc := connect(t, e.ClientURL())
	ctx := testCtx(t)
	js := partStream(t, nc, "P", "p")
	var recs []partRecord
	for i := range 10 {
		recs = append(recs, publishGroup(t, js, "p", 1, fmt.Sprint("v", i)))
	}
	src := newPartSource(t, nc, PartitionedSourceConfig{Stream: "P", Prefix: "p", KeyGroups: 2})
	if err := src.OpenGroups(ctx, map[int]uint64{0: 0}); err != nil {
		t.Fatal(err)
	}
	type result struct {
		msgs []connectors.Message
		err  error
	}
	got := make(chan result, 1)
	go func() {
		buf := make([]connectors.Message, 16)
		var msgs []connectors.Message
		for len(msgs) < len(recs) {
			n, err := src.Read(ctx, buf)
			if err != nil {
				got <- result{err: err}
				return
			}
			msgs = append(msgs, buf[:n]...)
		}
		got <- result{msgs: msgs}
	}()
	if err := src.SetGroups(ctx, map[int]uint64{0: 0, 1: 0}); err != nil {
		t.Fatal(err)
	}
	r := <-got
	if r.err != nil {
		t.Fatal(r.err)
	}
	for i, m := range r.msgs {
		if m.Position != recs[i].seq || m.Group != 1 {
			t.Fatalf("message %d: position %d group %d, want %d group 1", i, m.Position, m.Group, recs[i].seq)
		}
	}
}

func TestPartitionedSourceMalformedSubject(t *testing.T) {
	e := startServer(t)
	nc := connect(t, e.ClientURL())
	ctx := testCtx(t)
	js := partStream(t, nc, "P", "p")
	bad := []string{"p.x", "p.07", "p.4"} // KeyGroups 4: group 4 does not exist
	var seqs []uint64
	for _, subj := range bad {
		ack, err := js.Publish(ctx, subj, []byte("raw"))
		if err != nil {
			t.Fatal(err)
		}
		seqs = append(seqs, ack.Sequence)
	}
	good := publishGroup(t, js, "p", 3, "good")
	src := newPartSource(t, nc, PartitionedSourceConfig{Stream: "P", Prefix: "p", KeyGroups: 4})
	if err := src.Open(ctx, 0); err != nil {
		t.Fatal(err)
	}
	got := readN(ctx, t, src, len(bad)+1)
	for i, m := range got[:len(bad)] {
		if !errors.Is(m.Err, connectors.ErrMalformed) || m.Position != seqs[i] || m.Group != 0 || string(m.Record.Value) != "raw" {
			t.Fatalf("%s: position %d group %d value %q err %v; want a malformed message at %d in group 0", bad[i], m.Position, m.Group, m.Record.Value, m.Err, seqs[i])
		}
		if !strings.Contains(m.Err.Error(), bad[i]) {
			t.Errorf("the error does not name the subject %s: %v", bad[i], m.Err)
		}
	}
	if m := got[len(bad)]; m.Err != nil || m.Position != good.seq || m.Group != 3 {
		t.Fatalf("after the malformed ones: position %d group %d err %v; want %d group 3", m.Position, m.Group, m.Err, good.seq)
	}
	// Group 0's floor applies to them.
	src2 := newPartSource(t, nc, PartitionedSourceConfig{Stream: "P", Prefix: "p", KeyGroups: 4})
	if err := src2.OpenGroups(ctx, map[int]uint64{0: seqs[1], 1: 0, 2: 0, 3: 0}); err != nil {
		t.Fatal(err)
	}
	got = readN(ctx, t, src2, 2)
	if got[0].Position != seqs[2] || !errors.Is(got[0].Err, connectors.ErrMalformed) || got[1].Position != good.seq {
		t.Fatalf("with group 0 after %d: positions %d, %d; want %d (malformed), %d", seqs[1], got[0].Position, got[1].Position, seqs[2], good.seq)
	}
}

func TestPartitionedSourceLifecycle(t *testing.T) {
	e := startServer(t)
	nc := connect(t, e.ClientURL())
	ctx := testCtx(t)
	partStream(t, nc, "P", "p")
	for _, tc := range []struct {
		cfg  PartitionedSourceConfig
		want string
	}{
		{PartitionedSourceConfig{Prefix: "p", KeyGroups: 4}, "Stream and Prefix are required"},
		{PartitionedSourceConfig{Stream: "P", KeyGroups: 4}, "Stream and Prefix are required"},
		{PartitionedSourceConfig{Stream: "P", Prefix: "p"}, "KeyGroups 0 out of range"},
		{PartitionedSourceConfig{Stream: "P", Prefix: "p.>", KeyGroups: 4}, `subject "p.>" cannot be partitioned`},
		{PartitionedSourceConfig{Stream: "Q", Prefix: "q", KeyGroups: 4, CreateStream: &StreamSpec{Subjects: []string{"q.1"}}}, `do not capture "q.0"`},
	} {
		if _, err := NewPartitionedSource(nc, tc.cfg); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: err = %v, want %q", tc.cfg, err, tc.want)
		}
	}

	src := newPartSource(t, nc, PartitionedSourceConfig{Stream: "P", Prefix: "p", KeyGroups: 4})
	buf := make([]connectors.Message, 4)
	if _, err := src.Read(ctx, buf); !errors.Is(err, connectors.ErrNotOpen) {
		t.Fatalf("Read before open: %v", err)
	}
	if err := src.SetGroups(ctx, nil); !errors.Is(err, connectors.ErrNotOpen) {
		t.Fatalf("SetGroups before open: %v", err)
	}
	if err := src.OpenGroups(ctx, map[int]uint64{0: 0}); err != nil {
		t.Fatal(err)
	}
	err := src.SetGroups(ctx, map[int]uint64{1: 0, 4: 0})
	if err == nil || !strings.Contains(err.Error(), "key group 4 out of range: the input has 4 key groups") {
		t.Fatalf("SetGroups with group 4 of 4: %v", err)
	}
	if err := src.Ack(ctx, 10); err != nil {
		t.Fatalf("Ack: %v", err)
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := src.Read(cctx, buf); !errors.Is(err, context.Canceled) {
		t.Fatalf("Read with a done context: %v", err)
	}
	// Close while Read waits.
	readErr := make(chan error, 1)
	go func() {
		_, err := src.Read(ctx, buf)
		readErr <- err
	}()
	if err := src.Close(); err != nil {
		t.Fatal(err)
	}
	if err := <-readErr; !errors.Is(err, connectors.ErrClosed) {
		t.Fatalf("Read when closed: %v", err)
	}
	if err := src.SetGroups(ctx, nil); !errors.Is(err, connectors.ErrClosed) {
		t.Fatalf("SetGroups after close: %v", err)
	}
	if err := src.Ack(ctx, 1); !errors.Is(err, connectors.ErrClosed) {
		t.Fatalf("Ack after close: %v", err)
	}
	if err := src.OpenGroups(ctx, nil); !errors.Is(err, connectors.ErrClosed) {
		t.Fatalf("OpenGroups after close: %v", err)
	}

	// A missing stream is an error, and closes the source.
	missing := newPartSource(t, nc, PartitionedSourceConfig{Stream: "NONE", Prefix: "n", KeyGroups: 4})
	if err := missing.Open(ctx, 0); err == nil || !strings.Contains(err.Error(), `"NONE" does not exist`) {
		t.Fatalf("open on a missing stream: %v", err)
	}
	if _, err := missing.Read(ctx, buf); !errors.Is(err, connectors.ErrClosed) {
		t.Fatalf("Read after a failed open: %v", err)
	}

	// The consumers are deleted when replaced and closed.
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	st, err := js.Stream(ctx, "P")
	if err != nil {
		t.Fatal(err)
	}
	info, err := st.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if info.State.Consumers != 0 {
		t.Fatalf("%d consumers left on the stream, want 0", info.State.Consumers)
	}
}

// TestPartitionedSourceSurvivesServerRestart stops the embedded server and
// starts it again on the same directory and port: the source goes on
// after the last record it returned.
func TestPartitionedSourceSurvivesServerRestart(t *testing.T) {
	opts := Options{Dir: t.TempDir(), Port: freePort(t), Logger: quiet()}
	ctx := testCtx(t)
	e, err := StartEmbedded(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = e.Shutdown(context.Background()) }()
	nc := connect(t, e.ClientURL())
	js := partStream(t, nc, "P", "p")
	var recs []partRecord
	for i := range 10 {
		recs = append(recs, publishGroup(t, js, "p", i%3, fmt.Sprint("a", i)))
	}
	src := newPartSource(t, nc, PartitionedSourceConfig{Stream: "P", Prefix: "p", KeyGroups: 3, PullExpiry: time.Second})
	floors := map[int]uint64{0: 0, 2: 0}
	if err := src.OpenGroups(ctx, floors); err != nil {
		t.Fatal(err)
	}
	expectRecords(ctx, t, src, above(recs, floors))
	before := src.cur.Load().cons.CachedInfo().Name

	if err := e.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	if e, err = StartEmbedded(ctx, opts); err != nil {
		t.Fatal(err)
	}
	waitFor(ctx, t, "the client to reconnect", func() bool { return nc.Stats().Reconnects > 0 && nc.IsConnected() })
	var more []partRecord
	for i := range 10 {
		// A publication lost with the old connection is retried; its id
		// keeps it from being stored twice.
		kg, value := i%3, fmt.Sprint("b", i)
		for {
			pctx, cancel := context.WithTimeout(ctx, 2*time.Second)
			ack, err := js.Publish(pctx, fmt.Sprint("p.", kg), []byte(value), jetstream.WithMsgID(value))
			cancel()
			if err == nil {
				more = append(more, partRecord{seq: ack.Sequence, group: kg, value: value})
				break
			}
			if ctx.Err() != nil {
				t.Fatalf("publishing after the restart: %v", err)
			}
		}
	}
	expectRecords(ctx, t, src, above(more, floors))
	if after := src.cur.Load().cons.CachedInfo().Name; after == before {
		t.Fatalf("the consumer %s read on after the restart: the test did not lose it", after)
	}
}

// TestPartitionedSourceProperty publishes random records over random
// groups and changes the groups read and their floors at random: after
// each SetGroups the records read are exactly, in stream order, those of
// the groups read above their floors (records read before, of a group
// still read above its new floor, come again), and none other. The
// watchdog's replacement of the consumer (restart) changes nothing of
// that: no record comes again, none is missed, the GroupSet stays.
func TestPartitionedSourceProperty(t *testing.T) {
	e := startServer(t)
	nc := connect(t, e.ClientURL())
	ctx := testCtx(t)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	iteration := 0
	rapid.Check(t, func(rt *rapid.T) {
		iteration++
		stream, prefix := fmt.Sprint("R", iteration), fmt.Sprint("r", iteration)
		if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: stream, Subjects: []string{prefix + ".*"}, Storage: jetstream.MemoryStorage}); err != nil {
			rt.Fatal(err)
		}
		defer func() { _ = js.DeleteStream(ctx, stream) }()
		groups := rapid.IntRange(1, 6).Draw(rt, "groups")
		var recs []partRecord
		publish := func(rt *rapid.T) {
			kg := rapid.IntRange(0, groups-1).Draw(rt, "group")
			recs = append(recs, publishGroup(t, js, prefix, kg, fmt.Sprint("v", len(recs))))
		}
		for range rapid.IntRange(0, 20).Draw(rt, "initial") {
			publish(rt)
		}
		drawFloors := func(rt *rapid.T) map[int]uint64 {
			floors := map[int]uint64{}
			for kg := range groups {
				if rapid.Bool().Draw(rt, "reads") {
					floors[kg] = rapid.Uint64Range(0, uint64(len(recs))+1).Draw(rt, "floor")
				}
			}
			return floors
		}
		// A consumer that stops delivering is the watchdog's to replace
		// (StallTimeout), which loses and repeats nothing: seen once in
		// CI under the race detector, a read after a replacement waited
		// more than 10 s. A short StallTimeout lets the watchdog repair
		// such a stall here well within a check's wait.
		src, err := NewPartitionedSource(nc, PartitionedSourceConfig{Stream: stream, Prefix: prefix, KeyGroups: groups,
			MaxFilters: rapid.IntRange(1, groups).Draw(rt, "max_filters"), Batch: rapid.IntRange(1, 8).Draw(rt, "batch"),
			StallTimeout: 2 * time.Second, Logger: quiet()})
		if err != nil {
			rt.Fatal(err)
		}
		defer func() {
			if err := src.Close(); err != nil {
				rt.Error(err)
			}
		}()
		floors := drawFloors(rt)
		if err := src.OpenGroups(ctx, floors); err != nil {
			rt.Fatal(err)
		}
		read := 0        // records of above(recs, floors) read
		set := uint64(0) // the GroupSet of the records read
		buf := make([]connectors.Message, 8)
		check := func(rt *rapid.T, want int) {
			expected := above(recs, floors)
			// Bounded, so that a record missed fails the check rather
			// than the whole test's deadline.
			ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
			defer cancel()
			for read < want {
				n, err := src.Read(ctx, buf[:min(len(buf), want-read)])
				if err != nil {
					rt.Fatal(err)
				}
				for _, m := range buf[:n] {
					w := expected[read]
					if m.Err != nil || m.Position != w.seq || m.Group != w.group || string(m.Record.Value) != w.value || m.GroupSet != set {
						rt.Fatalf("read %d with floors %v: position %d group %d value %q group set %d err %v; want position %d group %d value %q group set %d",
							read, floors, m.Position, m.Group, m.Record.Value, m.GroupSet, m.Err, w.seq, w.group, w.value, set)
					}
					read++
				}
			}
		}
		for range rapid.IntRange(1, 12).Draw(rt, "steps") {
			switch rapid.IntRange(0, 3).Draw(rt, "op") {
			case 0:
				publish(rt)
			case 1:
				floors = drawFloors(rt)
				if err := src.SetGroups(ctx, floors); err != nil {
					rt.Fatal(err)
				}
				read, set = 0, set+1
			case 3:
				if err := src.restart(ctx, src.cur.Load()); err != nil {
					rt.Fatal(err)
				}
			case 2:
				if left := len(above(recs, floors)) - read; left > 0 {
					check(rt, read+rapid.IntRange(1, left).Draw(rt, "read"))
				}
			}
		}
		// Everything due, then nothing else: a last record of a group
		// read (if any) comes next.
		check(rt, len(above(recs, floors)))
		next := uint64(len(recs) + 1) // the stream's next sequence
		for _, kg := range slices.Sorted(maps.Keys(floors)) {
			if floors[kg] < next {
				recs = append(recs, publishGroup(t, js, prefix, kg, "last"))
				check(rt, len(above(recs, floors)))
				break
			}
		}
	})
}

// TestPartitionedSourceBacklog: the backlog counts the messages of the
// groups read that were not read yet, not those of other groups (read
// through filters of their own: no more groups than MaxFilters).
func TestPartitionedSourceBacklog(t *testing.T) {
	e := startServer(t)
	nc := connect(t, e.ClientURL())
	ctx := testCtx(t)
	js := newStream(t, nc, "P", "p.*")
	var want []partRecord
	for i := range 7 {
		kg := []int{1, 2, 3}[i%3]
		r := publishGroup(t, js, "p", kg, fmt.Sprint("v", i))
		if kg != 3 {
			want = append(want, r)
		}
	}
	src := newPartSource(t, nc, PartitionedSourceConfig{Stream: "P", Prefix: "p", KeyGroups: 4, MaxFilters: 4})
	if b := src.Backlog(); b != -1 {
		t.Errorf("backlog %d before OpenGroups, want -1", b)
	}
	if err := src.OpenGroups(ctx, map[int]uint64{1: 0, 2: 0}); err != nil {
		t.Fatal(err)
	}
	expectRecords(ctx, t, src, want[:1])
	if b := src.Backlog(); b != int64(len(want)-1) {
		t.Errorf("backlog %d after reading 1 of groups 1 and 2's %d, want %d", b, len(want), len(want)-1)
	}
	expectRecords(ctx, t, src, want[1:])
	if b := src.Backlog(); b != 0 {
		t.Errorf("backlog %d after reading every message of groups 1 and 2, want 0", b)
	}
}
