package natsconn

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"reflect"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/sluicehq/sluice/connectors"
)

func newJSSource(t testing.TB, nc *nats.Conn, cfg JetStreamSourceConfig) *JetStreamSource {
	t.Helper()
	if cfg.Logger == nil {
		cfg.Logger = quiet()
	}
	src, err := NewJetStreamSource(nc, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = src.Close() })
	return src
}

func newJSSink(t testing.TB, nc *nats.Conn, cfg JetStreamSinkConfig) *JetStreamSink {
	t.Helper()
	if cfg.Logger == nil {
		cfg.Logger = quiet()
	}
	sink, err := NewJetStreamSink(testCtx(t), nc, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sink.Close() })
	return sink
}

// newStream creates stream name capturing subject.
func newStream(t testing.TB, nc *nats.Conn, name, subject string) jetstream.JetStream {
	t.Helper()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := js.CreateStream(testCtx(t), jetstream.StreamConfig{Name: name, Subjects: []string{subject}}); err != nil {
		t.Fatal(err)
	}
	return js
}

// publishValues publishes the values "<prefix>1".."<prefix>n" to subject.
func publishValues(t testing.TB, js jetstream.JetStream, subject, prefix string, n int) {
	t.Helper()
	for i := 1; i <= n; i++ {
		if _, err := js.Publish(testCtx(t), subject, []byte(fmt.Sprint(prefix, i))); err != nil {
			t.Fatal(err)
		}
	}
}

// expectPositions checks that msgs are at positions from, from+1, ... with
// the values published by publishValues.
func expectPositions(t testing.TB, msgs []connectors.Message, from uint64, prefix string) {
	t.Helper()
	for i, m := range msgs {
		pos := from + uint64(i)
		if m.Position != pos || string(m.Record.Value) != fmt.Sprint(prefix, pos) || m.Err != nil {
			t.Fatalf("message %d: position %d value %q err %v; want position %d value %s%d", i, m.Position, m.Record.Value, m.Err, pos, prefix, pos)
		}
	}
}

// waitFor polls cond until it holds or ctx ends.
func waitFor(ctx context.Context, t testing.TB, what string, cond func() bool) {
	t.Helper()
	for !cond() {
		select {
		case <-ctx.Done():
			t.Fatalf("waiting for %s: %v", what, ctx.Err())
		case <-time.After(20 * time.Millisecond):
		}
	}
}

func consumerInfo(t testing.TB, js jetstream.JetStream, stream, durable string) *jetstream.ConsumerInfo {
	t.Helper()
	c, err := js.Consumer(testCtx(t), stream, durable)
	if err != nil {
		t.Fatal(err)
	}
	info, err := c.Info(testCtx(t))
	if err != nil {
		t.Fatal(err)
	}
	return info
}

func TestJetStreamRoundTrip(t *testing.T) {
	e := startServer(t)
	nc := connect(t, e.ClientURL())
	ctx := testCtx(t)
	sink := newJSSink(t, nc, JetStreamSinkConfig{
		Subject: "in", Stream: "IN", CreateStream: &StreamSpec{Subjects: []string{"in"}},
		Mapping: Mapping{Time: true}, MaxInFlight: 16,
	})
	want := testRecords(300)
	if err := sink.Write(ctx, want); err != nil {
		t.Fatal(err)
	}
	if err := sink.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	src := newJSSource(t, nc, JetStreamSourceConfig{Stream: "IN", Durable: "d"})
	if err := src.Open(ctx, 0); err != nil {
		t.Fatal(err)
	}
	got := readN(ctx, t, src, len(want))
	for i, m := range got {
		if m.Err != nil || m.Position != uint64(i+1) || !reflect.DeepEqual(m.Record, want[i].Record) {
			t.Fatalf("message %d at %d (err %v):\n got %+v\nwant %+v", i, m.Position, m.Err, m.Record, want[i].Record)
		}
	}

	// Without Sluice-Time the event time is the stored timestamp.
	before := time.Now()
	if err := nc.Publish("in", []byte("untimed")); err != nil {
		t.Fatal(err)
	}
	m := readN(ctx, t, src, 1)[0]
	if m.Record.Time < before.Add(-time.Second).UnixNano() || m.Record.Time > time.Now().Add(time.Second).UnixNano() {
		t.Fatalf("time of an untimed message = %v, want its storage time", time.Unix(0, m.Record.Time))
	}
}

func TestJetStreamSinkDeduplicatesByID(t *testing.T) {
	e := startServer(t)
	nc := connect(t, e.ClientURL())
	ctx := testCtx(t)
	sink := newJSSink(t, nc, JetStreamSinkConfig{
		Subject: "out", Stream: "OUT",
		CreateStream: &StreamSpec{Subjects: []string{"out"}, Duplicates: time.Hour},
	})
	recs := testRecords(100)
	for range 2 {
		if err := sink.Write(ctx, recs); err != nil {
			t.Fatal(err)
		}
		if err := sink.Flush(ctx); err != nil {
			t.Fatal(err)
		}
	}
	js, _ := jetstream.New(nc)
	st, err := js.Stream(ctx, "OUT")
	if err != nil {
		t.Fatal(err)
	}
	info, err := st.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if info.State.Msgs != 100 {
		t.Fatalf("stream holds %d messages after publishing 100 ids twice, want 100", info.State.Msgs)
	}
	if info.Config.Duplicates != time.Hour {
		t.Fatalf("duplicate window = %v, want the configured hour", info.Config.Duplicates)
	}
}

// Messages published while no stream captures their subject fail with "no
// responders"; once the stream exists the sink publishes them again, and
// the stream holds each once, in the order they were written (the NATS
// client's own retries, from timers, stored them in any order).
func TestJetStreamSinkKeepsOrderAcrossFailures(t *testing.T) {
	e := startServer(t)
	nc := connect(t, e.ClientURL())
	ctx := testCtx(t)
	sink := newJSSink(t, nc, JetStreamSinkConfig{Subject: "late", AckTimeout: 2 * time.Second})
	const n = 500
	recs := testRecords(n)
	if err := sink.Write(ctx, recs); err != nil {
		t.Fatal(err)
	}
	// Created on the same connection, after the messages: the server has
	// answered each with "no responders" before the stream exists.
	js := newStream(t, nc, "LATE", "late")
	if err := sink.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	st, err := js.Stream(ctx, "LATE")
	if err != nil {
		t.Fatal(err)
	}
	if msgs := st.CachedInfo().State.Msgs; msgs != n {
		t.Fatalf("stream holds %d messages, want %d", msgs, n)
	}
	for seq := uint64(1); seq <= n; seq++ {
		m, err := st.GetMsg(ctx, seq)
		if err != nil {
			t.Fatal(err)
		}
		if id, want := m.Header.Get(jetstream.MsgIDHeader), recs[seq-1].ID; id != want {
			t.Fatalf("sequence %d holds %s, want %s: the stream's order is not the order written", seq, id, want)
		}
	}
}

// The sink checks, as it trims its window, that the stream stored its
// messages in the order written, and warns when it did not (what a
// connection lost while publishing can make). The acknowledgements are
// handed to the sink's handler directly, in the order under test.
func TestJetStreamSinkWarnsOfOrderBroken(t *testing.T) {
	e := startServer(t)
	nc := connect(t, e.ClientURL())
	var logs syncBuffer
	sink := newJSSink(t, nc, JetStreamSinkConfig{Subject: "o", Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	type ack struct {
		id       string
		seq      uint64
		dup      bool
		failedAt bool // failed for a passing reason before
	}
	// run puts a window of messages a, b, c in flight and acknowledges
	// them as acks says.
	run := func(acks ...ack) {
		t.Helper()
		msgs := map[string]*nats.Msg{}
		sink.mu.Lock()
		for _, id := range []string{"a", "b", "c"} {
			msgs[id] = &nats.Msg{Subject: "o", Header: nats.Header{jetstream.MsgIDHeader: {id}}}
			sink.add(msgs[id])
			f := &sink.win[len(sink.win)-1]
			f.state = inFlight
			f.again = slices.ContainsFunc(acks, func(a ack) bool { return a.id == id && a.failedAt })
			sink.sent++
		}
		sink.next = len(sink.win)
		sink.mu.Unlock()
		for _, a := range acks {
			sink.onAck(nil, msgs[a.id], &jetstream.PubAck{Sequence: a.seq, Duplicate: a.dup})
		}
		if err := sink.Flush(testCtx(t)); err != nil {
			t.Fatal(err)
		}
	}

	// In order, answered out of order; then c written again, stored by
	// the first write: no warning.
	run(ack{id: "b", seq: 2}, ack{id: "a", seq: 1}, ack{id: "c", seq: 3})
	run(ack{id: "a", seq: 4}, ack{id: "b", seq: 5}, ack{id: "c", seq: 3, dup: true})
	if strings.Contains(logs.String(), "level=WARN") {
		t.Fatalf("warned of messages stored in order:\n%s", logs.String())
	}
	// b stored before a; and c, failed once, was stored after all at 8,
	// before a was published again: both reported.
	run(ack{id: "b", seq: 9}, ack{id: "a", seq: 10}, ack{id: "c", seq: 8, dup: true, failedAt: true})
	for _, want := range []string{
		`id=b sequence=9 "written after id"=a "at sequence"=10`,
		`msg="messages stored out of the order written since the last flush" sink=jetstream:o messages=2`,
	} {
		if !strings.Contains(logs.String(), want) {
			t.Errorf("logs lack %s:\n%s", want, logs.String())
		}
	}
}

func TestJetStreamSinkReportsLastingFailure(t *testing.T) {
	e := startServer(t)
	nc := connect(t, e.ClientURL())
	ctx := testCtx(t)
	js, _ := jetstream.New(nc)
	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "SMALL", Subjects: []string{"small"}, MaxMsgSize: 16}); err != nil {
		t.Fatal(err)
	}
	sink := newJSSink(t, nc, JetStreamSinkConfig{Subject: "small"})
	big := []connectors.Out{{Record: testRecords(1)[0].Record, ID: "big"}}
	big[0].Record.Value = make([]byte, 100)
	if err := sink.Write(ctx, big); err != nil {
		t.Fatal(err)
	}
	err := sink.Flush(ctx)
	var apiErr *jetstream.APIError
	if !errors.As(err, &apiErr) || !strings.Contains(err.Error(), `"big"`) {
		t.Fatalf("Flush = %v, want the stream's rejection naming the message id", err)
	}
	if err := sink.Flush(ctx); err != nil {
		t.Fatalf("second Flush = %v, want nil: a failure is reported once", err)
	}
}

func TestJetStreamSinkFlushTimesOutWithCause(t *testing.T) {
	e := startServer(t)
	nc := connect(t, e.ClientURL())
	sink := newJSSink(t, nc, JetStreamSinkConfig{Subject: "nowhere", AckTimeout: time.Second})
	if err := sink.Write(testCtx(t), testRecords(3)); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(testCtx(t), 2*time.Second)
	defer cancel()
	err := sink.Flush(ctx)
	if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "no response from stream") {
		t.Fatalf("Flush = %v, want a deadline error that names the cause", err)
	}
}

func TestJetStreamSinkNeedsStream(t *testing.T) {
	e := startServer(t)
	nc := connect(t, e.ClientURL())
	_, err := NewJetStreamSink(testCtx(t), nc, JetStreamSinkConfig{Subject: "x", Stream: "MISSING", Logger: quiet()})
	if !errors.Is(err, jetstream.ErrStreamNotFound) || !strings.Contains(err.Error(), `"MISSING" does not exist`) {
		t.Fatalf("err = %v, want stream not found naming it", err)
	}
}

func TestJetStreamSourceResumesAfterClose(t *testing.T) {
	e := startServer(t)
	nc := connect(t, e.ClientURL())
	ctx := testCtx(t)
	js := newStream(t, nc, "IN", "in")
	publishValues(t, js, "in", "v", 100)

	src1 := newJSSource(t, nc, JetStreamSourceConfig{Stream: "IN", Durable: "d"})
	if err := src1.Open(ctx, 0); err != nil {
		t.Fatal(err)
	}
	expectPositions(t, readN(ctx, t, src1, 60), 1, "v")
	if err := src1.Ack(ctx, 40); err != nil {
		t.Fatal(err)
	}
	if err := src1.Close(); err != nil {
		t.Fatal(err)
	}

	src2 := newJSSource(t, nc, JetStreamSourceConfig{Stream: "IN", Durable: "d"})
	if err := src2.Open(ctx, 40); err != nil {
		t.Fatal(err)
	}
	expectPositions(t, readN(ctx, t, src2, 60), 41, "v")
	// Nothing more than the next message published.
	publishValues(t, js, "in", "w", 1)
	if m := readN(ctx, t, src2, 1)[0]; m.Position != 101 || string(m.Record.Value) != "w1" {
		t.Fatalf("after the backlog: position %d value %q, want 101 w1", m.Position, m.Record.Value)
	}
	if err := src2.Ack(ctx, 101); err != nil {
		t.Fatal(err)
	}
	waitFor(ctx, t, "all acknowledged", func() bool {
		info := consumerInfo(t, js, "IN", "d")
		return info.NumAckPending == 0 && info.AckFloor.Stream == 101
	})
}

func TestJetStreamSourceResumesAfterCrash(t *testing.T) {
	e := startServer(t)
	nc := connect(t, e.ClientURL())
	ctx := testCtx(t)
	js := newStream(t, nc, "IN", "in")
	publishValues(t, js, "in", "v", 100)

	// The first host reads 60, commits 40 and dies without closing.
	crashed := connect(t, e.ClientURL())
	src1 := newJSSource(t, crashed, JetStreamSourceConfig{Stream: "IN", Durable: "d"})
	if err := src1.Open(ctx, 0); err != nil {
		t.Fatal(err)
	}
	expectPositions(t, readN(ctx, t, src1, 60), 1, "v")
	crashed.Close()

	// The long AckWait (5 minutes) would hold 41..60 back; the reset in
	// Open makes them come at once.
	src2 := newJSSource(t, nc, JetStreamSourceConfig{Stream: "IN", Durable: "d"})
	if err := src2.Open(ctx, 40); err != nil {
		t.Fatal(err)
	}
	expectPositions(t, readN(ctx, t, src2, 60), 41, "v")
}

func TestJetStreamSourceStartsNewConsumerAfter(t *testing.T) {
	e := startServer(t)
	nc := connect(t, e.ClientURL())
	ctx := testCtx(t)
	js := newStream(t, nc, "IN", "in")
	publishValues(t, js, "in", "v", 20)
	src := newJSSource(t, nc, JetStreamSourceConfig{Stream: "IN", Durable: "fresh"})
	if err := src.Open(ctx, 10); err != nil {
		t.Fatal(err)
	}
	expectPositions(t, readN(ctx, t, src, 10), 11, "v")
}

func TestJetStreamSourceDropsRedeliveries(t *testing.T) {
	e := startServer(t)
	nc := connect(t, e.ClientURL())
	ctx := testCtx(t)
	js := newStream(t, nc, "IN", "in")
	publishValues(t, js, "in", "v", 5)
	src := newJSSource(t, nc, JetStreamSourceConfig{Stream: "IN", Durable: "d", AckWait: 300 * time.Millisecond})
	if err := src.Open(ctx, 0); err != nil {
		t.Fatal(err)
	}
	expectPositions(t, readN(ctx, t, src, 5), 1, "v")
	// Not acknowledged within AckWait: the server delivers them again.
	waitFor(ctx, t, "a redelivery", func() bool { return consumerInfo(t, js, "IN", "d").NumRedelivered > 0 })
	publishValues(t, js, "in", "w", 1)
	if m := readN(ctx, t, src, 1)[0]; m.Position != 6 || string(m.Record.Value) != "w1" {
		t.Fatalf("after redeliveries: position %d value %q, want 6 w1", m.Position, m.Record.Value)
	}
	if err := src.Ack(ctx, 6); err != nil {
		t.Fatal(err)
	}
	waitFor(ctx, t, "all acknowledged", func() bool { return consumerInfo(t, js, "IN", "d").NumAckPending == 0 })
}

func TestJetStreamSourceAckBetweenPositions(t *testing.T) {
	e := startServer(t)
	nc := connect(t, e.ClientURL())
	ctx := testCtx(t)
	js, _ := jetstream.New(nc)
	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "IN", Subjects: []string{"in.*"}}); err != nil {
		t.Fatal(err)
	}
	// Filtered: positions 1, 3, 5 (the b's are not ours).
	for _, s := range []string{"in.a", "in.b", "in.a", "in.b", "in.a"} {
		if _, err := js.Publish(ctx, s, []byte(s)); err != nil {
			t.Fatal(err)
		}
	}
	src := newJSSource(t, nc, JetStreamSourceConfig{Stream: "IN", Durable: "d", FilterSubject: "in.a"})
	if err := src.Open(ctx, 0); err != nil {
		t.Fatal(err)
	}
	got := readN(ctx, t, src, 3)
	if got[0].Position != 1 || got[1].Position != 3 || got[2].Position != 5 {
		t.Fatalf("positions %d %d %d, want 1 3 5", got[0].Position, got[1].Position, got[2].Position)
	}
	// Ack(4) acknowledges 1 and 3, not 5.
	if err := src.Ack(ctx, 4); err != nil {
		t.Fatal(err)
	}
	waitFor(ctx, t, "ack floor 3", func() bool { return consumerInfo(t, js, "IN", "d").AckFloor.Stream == 3 })
	if info := consumerInfo(t, js, "IN", "d"); info.NumAckPending != 1 {
		t.Fatalf("%d pending after Ack(4), want 1 (position 5)", info.NumAckPending)
	}
}

func TestJetStreamSourceRequiresAckAll(t *testing.T) {
	e := startServer(t)
	nc := connect(t, e.ClientURL())
	ctx := testCtx(t)
	js := newStream(t, nc, "IN", "in")
	if _, err := js.CreateConsumer(ctx, "IN", jetstream.ConsumerConfig{Durable: "explicit", AckPolicy: jetstream.AckExplicitPolicy}); err != nil {
		t.Fatal(err)
	}
	src := newJSSource(t, nc, JetStreamSourceConfig{Stream: "IN", Durable: "explicit"})
	err := src.Open(ctx, 0)
	if err == nil || !strings.Contains(err.Error(), "ack policy") {
		t.Fatalf("Open = %v, want an error about the ack policy", err)
	}
	if _, err := src.Read(ctx, make([]connectors.Message, 1)); !errors.Is(err, connectors.ErrClosed) {
		t.Fatalf("Read after a failed Open = %v, want ErrClosed", err)
	}
}

func TestJetStreamSourceStreamMissing(t *testing.T) {
	e := startServer(t)
	nc := connect(t, e.ClientURL())
	src := newJSSource(t, nc, JetStreamSourceConfig{Stream: "NOPE", Durable: "d"})
	err := src.Open(testCtx(t), 0)
	if !errors.Is(err, jetstream.ErrStreamNotFound) || !strings.Contains(err.Error(), `"NOPE" does not exist`) {
		t.Fatalf("Open = %v, want stream not found, named", err)
	}
}

func TestJetStreamSourceMalformedTime(t *testing.T) {
	e := startServer(t)
	nc := connect(t, e.ClientURL())
	ctx := testCtx(t)
	js := newStream(t, nc, "IN", "in")
	m := nats.NewMsg("in")
	m.Data = []byte("raw")
	m.Header.Set(HeaderTime, "1.5")
	if _, err := js.PublishMsg(ctx, m); err != nil {
		t.Fatal(err)
	}
	src := newJSSource(t, nc, JetStreamSourceConfig{Stream: "IN", Durable: "d"})
	if err := src.Open(ctx, 0); err != nil {
		t.Fatal(err)
	}
	got := readN(ctx, t, src, 1)[0]
	if !errors.Is(got.Err, connectors.ErrMalformed) || string(got.Record.Value) != "raw" || got.Position != 1 {
		t.Fatalf("got %+v, want ErrMalformed with the raw payload at position 1", got)
	}
	if !strings.Contains(got.Err.Error(), "stream sequence 1") {
		t.Fatalf("error %q does not name the sequence", got.Err)
	}
}

// lostMsg is a delivery the test makes up, as if the server had sent it
// after deliveries that were lost in transit.
type lostMsg struct {
	jetstream.Msg // nil: other methods are not called
	meta          jetstream.MsgMetadata
}

func (m *lostMsg) Metadata() (*jetstream.MsgMetadata, error) { return &m.meta, nil }
func (m *lostMsg) Data() []byte                              { return []byte("made up") }
func (m *lostMsg) Headers() nats.Header                      { return nil }
func (m *lostMsg) Subject() string                           { return "in" }

func TestJetStreamSourceRecoversLostDeliveries(t *testing.T) {
	e := startServer(t)
	nc := connect(t, e.ClientURL())
	ctx := testCtx(t)
	js := newStream(t, nc, "IN", "in")
	publishValues(t, js, "in", "v", 3)
	src := newJSSource(t, nc, JetStreamSourceConfig{Stream: "IN", Durable: "d"})
	if err := src.Open(ctx, 0); err != nil {
		t.Fatal(err)
	}
	expectPositions(t, readN(ctx, t, src, 3), 1, "v")

	// Delivery 5 of stream sequence 5 arrives: delivery 4 (sequence 4) was
	// lost. Returning 5 would let a later AckAll acknowledge 4 unseen.
	src.msgs <- &lostMsg{meta: jetstream.MsgMetadata{Sequence: jetstream.SequencePair{Consumer: 5, Stream: 5}}}
	publishValues(t, js, "in", "x", 2) // sequences 4 and 5
	got := readN(ctx, t, src, 2)
	if got[0].Position != 4 || string(got[0].Record.Value) != "x1" || got[1].Position != 5 || string(got[1].Record.Value) != "x2" {
		t.Fatalf("after a lost delivery: %d %q, %d %q; want 4 x1, 5 x2", got[0].Position, got[0].Record.Value, got[1].Position, got[1].Record.Value)
	}
	publishValues(t, js, "in", "y", 1)
	if m := readN(ctx, t, src, 1)[0]; m.Position != 6 {
		t.Fatalf("next position %d, want 6", m.Position)
	}
}

func TestJetStreamSourceRecoversAfterReconnect(t *testing.T) {
	e := startServer(t)
	nc := connect(t, e.ClientURL())
	ctx := testCtx(t)
	js := newStream(t, nc, "IN", "in")
	publishValues(t, js, "in", "v", 10)
	src := newJSSource(t, nc, JetStreamSourceConfig{Stream: "IN", Durable: "d"})
	if err := src.Open(ctx, 0); err != nil {
		t.Fatal(err)
	}
	expectPositions(t, readN(ctx, t, src, 3), 1, "v")
	src.reconnected <- nats.CONNECTED // as the client does after a reconnection
	expectPositions(t, readN(ctx, t, src, 7), 4, "v")
	publishValues(t, js, "in", "w", 1)
	if m := readN(ctx, t, src, 1)[0]; m.Position != 11 {
		t.Fatalf("next position %d, want 11", m.Position)
	}
}

func TestJetStreamSourceAckFromAnotherGoroutine(t *testing.T) {
	e := startServer(t)
	nc := connect(t, e.ClientURL())
	ctx := testCtx(t)
	js := newStream(t, nc, "IN", "in")
	const n = 2000
	for i := range n {
		if _, err := js.PublishAsync("in", []byte(fmt.Sprint(i))); err != nil {
			t.Fatal(err)
		}
	}
	<-js.PublishAsyncComplete()
	src := newJSSource(t, nc, JetStreamSourceConfig{Stream: "IN", Durable: "d", Batch: 64})
	if err := src.Open(ctx, 0); err != nil {
		t.Fatal(err)
	}
	// The reader hands positions to a committer that acknowledges them.
	committed := make(chan uint64, 16)
	go func() {
		defer close(committed)
		buf := make([]connectors.Message, 50)
		for read := 0; read < n; {
			k, err := src.Read(ctx, buf)
			if err != nil {
				t.Error(err)
				return
			}
			read += k
			committed <- buf[k-1].Position
		}
	}()
	for pos := range committed {
		if err := src.Ack(ctx, pos); err != nil {
			t.Fatal(err)
		}
	}
	waitFor(ctx, t, "everything acknowledged", func() bool {
		info := consumerInfo(t, js, "IN", "d")
		return info.AckFloor.Stream == n && info.NumAckPending == 0
	})
}

func TestRetriable(t *testing.T) {
	for _, c := range []struct {
		err  error
		want bool
	}{
		{nats.ErrDisconnected, true},
		{fmt.Errorf("wrapped: %w", jetstream.ErrNoStreamResponse), true},
		{jetstream.ErrAsyncPublishTimeout, true},
		{&net.OpError{Op: "write", Net: "tcp", Err: syscall.ECONNRESET}, true},
		{&jetstream.APIError{Code: 503}, true},
		{&jetstream.APIError{Code: 400, Description: "message size exceeds maximum allowed"}, false},
		{nats.ErrMaxPayload, false},
		{nats.ErrConnectionClosed, false},
	} {
		if got := retriable(c.err); got != c.want {
			t.Errorf("retriable(%v) = %v, want %v", c.err, got, c.want)
		}
	}
}

func TestJetStreamSourceSkipsUpToAfter(t *testing.T) {
	e := startServer(t)
	nc := connect(t, e.ClientURL())
	ctx := testCtx(t)
	js := newStream(t, nc, "IN", "in")
	// A consumer made elsewhere with policy "new" can only be reset to its
	// acknowledgement floor (0 here): the source must skip 1..5 itself.
	if _, err := js.CreateConsumer(ctx, "IN", jetstream.ConsumerConfig{
		Durable: "new", AckPolicy: jetstream.AckAllPolicy, DeliverPolicy: jetstream.DeliverNewPolicy,
	}); err != nil {
		t.Fatal(err)
	}
	publishValues(t, js, "in", "v", 10)
	src := newJSSource(t, nc, JetStreamSourceConfig{Stream: "IN", Durable: "new"})
	if err := src.Open(ctx, 5); err != nil {
		t.Fatal(err)
	}
	expectPositions(t, readN(ctx, t, src, 5), 6, "v")
	waitFor(ctx, t, "the skipped messages acknowledged", func() bool { return consumerInfo(t, js, "IN", "new").AckFloor.Stream >= 5 })
}

// TestJetStreamSourceBacklog: the backlog is the pending count that came
// with the last message read: the messages not read yet.
func TestJetStreamSourceBacklog(t *testing.T) {
	e := startServer(t)
	nc := connect(t, e.ClientURL())
	ctx := testCtx(t)
	js := newStream(t, nc, "IN", "in")
	publishValues(t, js, "in", "v", 10)
	src := newJSSource(t, nc, JetStreamSourceConfig{Stream: "IN", Durable: "d"})
	if b := src.Backlog(); b != -1 {
		t.Errorf("backlog %d before any message, want -1", b)
	}
	if err := src.Open(ctx, 0); err != nil {
		t.Fatal(err)
	}
	expectPositions(t, readN(ctx, t, src, 1), 1, "v")
	if b := src.Backlog(); b != 9 {
		t.Errorf("backlog %d after reading 1 of 10, want 9", b)
	}
	expectPositions(t, readN(ctx, t, src, 9), 2, "v")
	if b := src.Backlog(); b != 0 {
		t.Errorf("backlog %d after reading all 10, want 0", b)
	}
}
