package natsconn

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/sluicehq/sluice/abi"
	"github.com/sluicehq/sluice/connectors"
)

// readN reads from src until it has n messages.
func readN(ctx context.Context, t testing.TB, src connectors.Source, n int) []connectors.Message {
	t.Helper()
	out := make([]connectors.Message, 0, n)
	buf := make([]connectors.Message, 64)
	for len(out) < n {
		k, err := src.Read(ctx, buf[:min(len(buf), n-len(out))])
		if err != nil {
			t.Fatalf("read after %d of %d: %v", len(out), n, err)
		}
		if k == 0 {
			t.Fatal("Read returned 0 messages and no error")
		}
		out = append(out, buf[:k]...)
	}
	return out
}

func testRecords(n int) []connectors.Out {
	out := make([]connectors.Out, n)
	for i := range out {
		out[i] = connectors.Out{
			Record: abi.Record{
				Time:  int64(1000 + i),
				Value: []byte(fmt.Sprintf("value-%d", i)),
			},
			ID: fmt.Sprintf("id-%d", i),
		}
		if i%2 == 0 {
			out[i].Record.Key = []byte(fmt.Sprintf("key-%d", i%7))
		}
		if i%3 == 0 {
			out[i].Record.Headers = []abi.Header{hdr("H", fmt.Sprint(i))}
		}
	}
	return out
}

func newCoreSource(t testing.TB, nc *nats.Conn, cfg CoreSourceConfig) *CoreSource {
	t.Helper()
	src, err := NewCoreSource(nc, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = src.Close() })
	return src
}

func TestCoreRoundTrip(t *testing.T) {
	e := startServer(t)
	nc := connect(t, e.ClientURL())
	ctx := testCtx(t)
	src := newCoreSource(t, nc, CoreSourceConfig{Subject: "in"})
	if err := src.Open(ctx, 100); err != nil {
		t.Fatal(err)
	}
	sink, err := NewCoreSink(nc, CoreSinkConfig{Subject: "in", Mapping: Mapping{Time: true}})
	if err != nil {
		t.Fatal(err)
	}
	defer sink.Close()
	want := testRecords(500)
	if err := sink.Write(ctx, want); err != nil {
		t.Fatal(err)
	}
	if err := sink.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	got := readN(ctx, t, src, len(want))
	for i, m := range got {
		if m.Err != nil {
			t.Fatalf("message %d: %v", i, m.Err)
		}
		if m.Position != uint64(101+i) {
			t.Fatalf("message %d position %d, want %d (positions continue after Open's)", i, m.Position, 101+i)
		}
		if !reflect.DeepEqual(m.Record, want[i].Record) {
			t.Fatalf("message %d:\n got %+v\nwant %+v", i, m.Record, want[i].Record)
		}
	}
}

func TestCoreSinkPublishesPlainMessagesWhenItCan(t *testing.T) {
	e := startServer(t)
	nc := connect(t, e.ClientURL())
	ctx := testCtx(t)
	sub, err := nc.SubscribeSync("out")
	if err != nil {
		t.Fatal(err)
	}
	sink, err := NewCoreSink(nc, CoreSinkConfig{Subject: "out"})
	if err != nil {
		t.Fatal(err)
	}
	defer sink.Close()
	err = sink.Write(ctx, []connectors.Out{
		{Record: abi.Record{Time: 7, Value: []byte("plain")}},
		{Record: abi.Record{Time: 7, Key: []byte("k"), Value: []byte("keyed")}},
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := sink.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	plain, err := sub.NextMsgWithContext(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if plain.Header != nil || string(plain.Data) != "plain" {
		t.Fatalf("plain record published as %q with headers %v, want no header block", plain.Data, plain.Header)
	}
	keyed, err := sub.NextMsgWithContext(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if keyed.Header.Get(HeaderKey) != "k" || keyed.Header.Get(HeaderTime) != "" {
		t.Fatalf("keyed record headers %v, want Sluice-Key only", keyed.Header)
	}
}

// TestCoreSinkStartedFlush writes while a started flush is under way and
// waits for it; a flush started on a closed connection, or by a closed
// sink, fails when waited for.
func TestCoreSinkStartedFlush(t *testing.T) {
	e := startServer(t)
	nc := connect(t, e.ClientURL())
	ctx := testCtx(t)
	sub, err := nc.SubscribeSync("out")
	if err != nil {
		t.Fatal(err)
	}
	sink, err := NewCoreSink(nc, CoreSinkConfig{Subject: "out"})
	if err != nil {
		t.Fatal(err)
	}
	out := func(v string) []connectors.Out { return []connectors.Out{{Record: abi.Record{Value: []byte(v)}}} }
	if err := sink.Write(ctx, out("first")); err != nil {
		t.Fatal(err)
	}
	wait := sink.StartFlush(ctx)
	if err := sink.Write(ctx, out("second")); err != nil {
		t.Fatal(err)
	}
	if err := wait(); err != nil {
		t.Fatalf("started flush: %v", err)
	}
	for _, want := range []string{"first", "second"} {
		m, err := sub.NextMsgWithContext(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if string(m.Data) != want {
			t.Fatalf("got %q, want %q", m.Data, want)
		}
	}

	gone := connect(t, e.ClientURL())
	lost, err := NewCoreSink(gone, CoreSinkConfig{Subject: "out"})
	if err != nil {
		t.Fatal(err)
	}
	if err := lost.Write(ctx, out("lost")); err != nil {
		t.Fatal(err)
	}
	gone.Close()
	if err := lost.StartFlush(ctx)(); !errors.Is(err, nats.ErrConnectionClosed) {
		t.Errorf("flush started on a closed connection: %v, want %v", err, nats.ErrConnectionClosed)
	}

	if err := sink.Close(); err != nil {
		t.Fatal(err)
	}
	if err := sink.StartFlush(ctx)(); !errors.Is(err, connectors.ErrClosed) {
		t.Errorf("flush started by a closed sink: %v, want %v", err, connectors.ErrClosed)
	}
}

func TestCoreSourceBufferFullLosesNothing(t *testing.T) {
	e := startServer(t)
	nc := connect(t, e.ClientURL())
	ctx := testCtx(t)
	src := newCoreSource(t, nc, CoreSourceConfig{Subject: "in", Buffer: 4})
	if err := src.Open(ctx, 0); err != nil {
		t.Fatal(err)
	}
	const n = 1000
	for i := range n {
		if err := nc.Publish("in", []byte(fmt.Sprint(i))); err != nil {
			t.Fatal(err)
		}
	}
	got := readN(ctx, t, src, n)
	for i, m := range got {
		if string(m.Record.Value) != fmt.Sprint(i) || m.Position != uint64(i+1) {
			t.Fatalf("message %d = %q at %d", i, m.Record.Value, m.Position)
		}
	}
}

func TestCoreSourceReadWaitsAndHonoursContext(t *testing.T) {
	e := startServer(t)
	nc := connect(t, e.ClientURL())
	src := newCoreSource(t, nc, CoreSourceConfig{Subject: "in"})
	buf := make([]connectors.Message, 8)
	if _, err := src.Read(testCtx(t), buf); !errors.Is(err, connectors.ErrNotOpen) {
		t.Fatalf("Read before Open: %v, want ErrNotOpen", err)
	}
	if err := src.Open(testCtx(t), 0); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(testCtx(t))
	cancel()
	if n, err := src.Read(ctx, buf); n != 0 || !errors.Is(err, context.Canceled) {
		t.Fatalf("Read with a canceled context = %d, %v", n, err)
	}
	// A Read blocked on an empty subject returns when the source closes.
	errc := make(chan error, 1)
	go func() {
		_, err := src.Read(testCtx(t), buf)
		errc <- err
	}()
	if err := src.Close(); err != nil {
		t.Fatal(err)
	}
	if err := <-errc; !errors.Is(err, connectors.ErrClosed) {
		t.Fatalf("Read across Close: %v, want ErrClosed", err)
	}
}

func TestCoreSourceQueueGroupSharesMessages(t *testing.T) {
	e := startServer(t)
	nc := connect(t, e.ClientURL())
	ctx := testCtx(t)
	srcs := []*CoreSource{
		newCoreSource(t, nc, CoreSourceConfig{Subject: "in", Queue: "q"}),
		newCoreSource(t, nc, CoreSourceConfig{Subject: "in", Queue: "q"}),
	}
	for _, s := range srcs {
		if err := s.Open(ctx, 0); err != nil {
			t.Fatal(err)
		}
	}
	const n = 400
	for i := range n {
		if err := nc.Publish("in", []byte(fmt.Sprint(i))); err != nil {
			t.Fatal(err)
		}
	}
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	// Each message goes to one member: read until all n are seen once.
	var mu sync.Mutex
	seen := map[string]int{}
	rctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	for _, s := range srcs {
		wg.Go(func() {
			buf := make([]connectors.Message, 32)
			for {
				k, err := s.Read(rctx, buf)
				if err != nil {
					return
				}
				mu.Lock()
				for _, m := range buf[:k] {
					seen[string(m.Record.Value)]++
				}
				done := len(seen) == n
				mu.Unlock()
				if done {
					cancel()
				}
			}
		})
	}
	wg.Wait()
	if len(seen) != n {
		t.Fatalf("saw %d distinct messages, want %d", len(seen), n)
	}
	for v, c := range seen {
		if c != 1 {
			t.Fatalf("message %s delivered %d times", v, c)
		}
	}
}

func TestCoreSourceMalformedTime(t *testing.T) {
	e := startServer(t)
	nc := connect(t, e.ClientURL())
	ctx := testCtx(t)
	src := newCoreSource(t, nc, CoreSourceConfig{Subject: "in"})
	if err := src.Open(ctx, 0); err != nil {
		t.Fatal(err)
	}
	m := nats.NewMsg("in")
	m.Data = []byte("raw")
	m.Header.Set(HeaderTime, "noon")
	if err := nc.PublishMsg(m); err != nil {
		t.Fatal(err)
	}
	got := readN(ctx, t, src, 1)[0]
	if !errors.Is(got.Err, connectors.ErrMalformed) || string(got.Record.Value) != "raw" || got.Position != 1 {
		t.Fatalf("got %+v, want ErrMalformed with the raw payload at position 1", got)
	}
}

func TestCoreSourceCloseWithDeliveryBlocked(t *testing.T) {
	e := startServer(t)
	nc := connect(t, e.ClientURL())
	ctx := testCtx(t)
	src := newCoreSource(t, nc, CoreSourceConfig{Subject: "in", Buffer: 2})
	if err := src.Open(ctx, 0); err != nil {
		t.Fatal(err)
	}
	for range 100 {
		if err := nc.Publish("in", []byte("x")); err != nil {
			t.Fatal(err)
		}
	}
	waitFor(ctx, t, "a full buffer and a waiting delivery", func() bool {
		src.mu.Lock()
		defer src.mu.Unlock()
		return src.waiters > 0
	})
	if err := src.Close(); err != nil { // must not wait for the blocked delivery
		t.Fatal(err)
	}
}

// TestArrivalClock checks the receipt clock: its times lie between two
// readings of the wall clock taken around them and never go back, and
// once arrivalRebase has passed it reads the wall clock again, so a wall
// clock that moved (here: a base an hour behind) shows.
func TestArrivalClock(t *testing.T) {
	var c arrivalClock
	before := time.Now().UnixNano()
	a := c.now()
	b := c.now()
	after := time.Now().UnixNano()
	if a < before || b < a || b > after {
		t.Fatalf("times %d, %d; want between %d and %d, in order", a, b, before, after)
	}
	c.base = c.base.Add(-2 * arrivalRebase)
	c.wall -= int64(time.Hour)
	if got := c.now(); got < after {
		t.Errorf("after %v: %d, before the earlier reading %d; want the wall clock read again", 2*arrivalRebase, got, after)
	}
	c.base = c.base.Add(-arrivalRebase / 2)
	c.wall -= int64(time.Hour)
	if got := c.now(); got > before {
		t.Errorf("within %v: %d, want the base's wall clock (an hour behind) advanced, not read again", arrivalRebase, got)
	}
}

// Keys and header values that a NATS header would change (line breaks,
// spaces and tabs around them), and headers named with the base64 prefix,
// come back as they were sent.
func TestCoreRoundTripAwkwardHeaders(t *testing.T) {
	e := startServer(t)
	nc := connect(t, e.ClientURL())
	ctx := testCtx(t)
	src := newCoreSource(t, nc, CoreSourceConfig{Subject: "in"})
	if err := src.Open(ctx, 0); err != nil {
		t.Fatal(err)
	}
	sink, err := NewCoreSink(nc, CoreSinkConfig{Subject: "in"})
	if err != nil {
		t.Fatal(err)
	}
	defer sink.Close()
	var want []connectors.Out
	for _, v := range []string{" lead", "trail ", "\ttab", "line\nbreak", "x\ry", "plain", "é\x00\xff", "a: b"} {
		want = append(want, connectors.Out{Record: abi.Record{Key: []byte(v), Value: []byte("v"), Headers: []abi.Header{
			{Name: []byte("h"), Value: []byte("plain")},
			{Name: []byte("h"), Value: []byte(v)},
			{Name: []byte(HeaderBase64Prefix + "own"), Value: []byte(v)},
		}}})
	}
	if err := sink.Write(ctx, want); err != nil {
		t.Fatal(err)
	}
	if err := sink.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	for i, m := range readN(ctx, t, src, len(want)) {
		w := want[i].Record
		if m.Err != nil || string(m.Record.Key) != string(w.Key) || !slices.ContainsFunc(m.Record.Headers, func(h abi.Header) bool {
			return string(h.Name) == "h" && string(h.Value) == string(w.Headers[1].Value)
		}) || !slices.ContainsFunc(m.Record.Headers, func(h abi.Header) bool {
			return string(h.Name) == HeaderBase64Prefix+"own" && string(h.Value) == string(w.Headers[2].Value)
		}) || len(m.Record.Headers) != 3 {
			t.Errorf("message %d: %v, key %q, headers %q; sent key %q, headers %q", i, m.Err, m.Record.Key, m.Record.Headers, w.Key, w.Headers)
		}
	}
	var rec abi.Record
	if err := decodeMsg(nil, nats.Header{HeaderKeyBase64: {"not base64!"}}, 0, &rec); !errors.Is(err, connectors.ErrMalformed) {
		t.Errorf("a key not in base64: %v, want ErrMalformed", err)
	}
}
