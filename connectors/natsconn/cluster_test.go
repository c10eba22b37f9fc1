package natsconn_test

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/sluicehq/sluice/abi"
	"github.com/sluicehq/sluice/connectors"
	"github.com/sluicehq/sluice/connectors/natsconn"
	"github.com/sluicehq/sluice/connectors/natsconn/natstest"
)

// The members of a cluster of embedded servers each listen for routes on
// a port of their own, and are clustered with JetStream.
func TestEmbeddedClusterMembers(t *testing.T) {
	c := natstest.StartCluster(t, 3)
	seen := map[string]bool{}
	for i := range c.Len() {
		e := c.Server(i)
		route := e.RouteURL()
		if !strings.HasPrefix(route, "nats-route://127.0.0.1:") || seen[route] {
			t.Errorf("member %d: RouteURL = %q, want a route of its own", i, route)
		}
		seen[route] = true
		if e.Name() != c.Name(i) || !e.Server().JetStreamIsClustered() {
			t.Errorf("member %d: name %q, clustered %v; want %q, true", i, e.Name(), e.Server().JetStreamIsClustered(), c.Name(i))
		}
		if !strings.Contains(c.URLs(), e.ClientURL()) {
			t.Errorf("member %d: URLs() = %q lacks %q", i, c.URLs(), e.ClientURL())
		}
	}
}

// The JetStream sink and source keep writing and reading a stream with 3
// replicas when the server that leads it stops.
func TestJetStreamOnAClusterLosingAMember(t *testing.T) {
	if raceEnabled {
		// A stream leader's election after a member stops took past the
		// test's deadline under the detector on a loaded machine; the
		// test checks the cluster's behaviour, not the code's races, and
		// runs in the untagged suite.
		t.Skip("runs without the race detector")
	}
	c := natstest.StartCluster(t, 3)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	quiet := slog.New(slog.DiscardHandler)
	nc, err := natsconn.Connect(ctx, c.URLs(), t.Name(), natsconn.WithLogger(quiet))
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	sink, err := natsconn.NewJetStreamSink(ctx, nc, natsconn.JetStreamSinkConfig{
		Subject: "in", Stream: "IN", CreateStream: &natsconn.StreamSpec{Subjects: []string{"in"}, Replicas: 3},
		AckTimeout: 2 * time.Second, Logger: quiet,
	})
	if err != nil {
		t.Fatal(err)
	}
	defer sink.Close()
	src, err := natsconn.NewJetStreamSource(nc, natsconn.JetStreamSourceConfig{Stream: "IN", Durable: "d", PullExpiry: time.Second, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	if err := src.Open(ctx, 0); err != nil {
		t.Fatal(err)
	}
	// write writes and reads records from to to-1, and checks that each
	// arrives once, in order, at sequence i+1.
	write := func(from, to int) {
		t.Helper()
		out := make([]connectors.Out, 0, to-from)
		for i := from; i < to; i++ {
			out = append(out, connectors.Out{Record: abi.Record{Value: fmt.Appendf(nil, "v%d", i)}, ID: fmt.Sprintf("id-%d", i)})
		}
		if err := sink.Write(ctx, out); err != nil {
			t.Fatal(err)
		}
		if err := sink.Flush(ctx); err != nil {
			t.Fatal(err)
		}
		buf := make([]connectors.Message, 16)
		for i := from; i < to; {
			n, err := src.Read(ctx, buf[:min(len(buf), to-i)])
			if err != nil {
				t.Fatalf("read %d: %v", i, err)
			}
			for _, m := range buf[:n] {
				if m.Err != nil || m.Position != uint64(i+1) || string(m.Record.Value) != fmt.Sprintf("v%d", i) {
					t.Fatalf("read %q at %d (%v), want v%d at %d", m.Record.Value, m.Position, m.Err, i, i+1)
				}
				i++
			}
		}
		if err := src.Ack(ctx, uint64(to)); err != nil {
			t.Fatal(err)
		}
	}
	write(0, 50)

	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	leader := func(not string) string {
		t.Helper()
		deadline := time.Now().Add(time.Minute)
		for {
			// A stream without a leader does not answer: ask again.
			actx, acancel := context.WithTimeout(ctx, 2*time.Second)
			s, err := js.Stream(actx, "IN")
			acancel()
			if err == nil {
				if cl := s.CachedInfo().Cluster; cl != nil && cl.Leader != "" && cl.Leader != not {
					return cl.Leader
				}
			}
			if time.Now().After(deadline) {
				t.Fatalf("stream IN has no leader other than %q (%v)", not, err)
			}
			time.Sleep(25 * time.Millisecond)
		}
	}
	old := leader("")
	stopped := c.Index(old)
	c.Stop(stopped)
	leader(old)
	write(50, 100)
	c.Restart(stopped)
	write(100, 150)
}

// signalWriter collects log lines and closes seen at the first that holds
// want.
type signalWriter struct {
	mu   sync.Mutex
	want string
	buf  strings.Builder
	seen chan struct{}
}

func (w *signalWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf.Write(p)
	if strings.Contains(string(p), w.want) && w.seen != nil {
		close(w.seen)
		w.seen = nil
	}
	return len(p), nil
}

// A sink restarted after a crash recovers while the server that holds its
// stream is down: Rewind waits for the stream, warning, and recovers once
// the server is back, so that the replay stores each output once. A host
// started while a NATS cluster elects leaders must not fail to start.
func TestJetStreamSinkRewindWaitsForItsStream(t *testing.T) {
	if raceEnabled {
		t.Skip("runs without the race detector (a leader's election under it can outlast the deadlines)")
	}
	c := natstest.StartCluster(t, 2)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	quiet := slog.New(slog.DiscardHandler)
	nc, err := natsconn.Connect(ctx, c.URLs(), t.Name(), natsconn.WithLogger(quiet))
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	cfg := natsconn.JetStreamSinkConfig{
		Subject: "out", Stream: "OUT", CreateStream: &natsconn.StreamSpec{Subjects: []string{"out"}, Replicas: 1},
		AckTimeout: time.Second, Logger: quiet,
	}
	outs := func(from, to int) []connectors.Out {
		var out []connectors.Out
		for i := from; i < to; i++ {
			out = append(out, connectors.Out{Record: abi.Record{Value: fmt.Appendf(nil, "v%d", i)}, ID: fmt.Sprintf("p/%d/0", i)})
		}
		return out
	}
	write := func(s *natsconn.JetStreamSink, out []connectors.Out) {
		t.Helper()
		if err := s.Write(ctx, out); err != nil {
			t.Fatal(err)
		}
		if err := s.Flush(ctx); err != nil {
			t.Fatal(err)
		}
	}
	first, err := natsconn.NewJetStreamSink(ctx, nc, cfg)
	if err != nil {
		t.Fatal(err)
	}
	write(first, outs(0, 10))
	committed := first.Offset()
	write(first, outs(10, 15)) // the crashed batch: stored, not committed
	if err := first.Close(); err != nil {
		t.Fatal(err)
	}

	// The restarted host connects to the server that does not hold OUT.
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	st, err := js.Stream(ctx, "OUT")
	if err != nil {
		t.Fatal(err)
	}
	holder := c.Index(st.CachedInfo().Cluster.Leader)
	other := c.Server(1 - holder)
	logs := &signalWriter{want: "trying again", seen: make(chan struct{})}
	seen := logs.seen
	nc2, err := natsconn.Connect(ctx, other.ClientURL(), t.Name()+"-2", natsconn.WithLogger(quiet))
	if err != nil {
		t.Fatal(err)
	}
	defer nc2.Close()
	cfg.Logger = slog.New(slog.NewTextHandler(logs, nil))
	second, err := natsconn.NewJetStreamSink(ctx, nc2, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer second.Close()
	c.Stop(holder)
	done := make(chan error, 1)
	go func() { done <- second.Rewind(ctx, committed) }()
	select {
	case <-seen:
	case err := <-done:
		t.Fatalf("Rewind with the stream's server down returned %v before retrying", err)
	}
	c.Restart(holder)
	if err := <-done; err != nil {
		logs.mu.Lock()
		t.Fatalf("Rewind after the server came back: %v\nlogs:\n%s", err, logs.buf.String())
		logs.mu.Unlock()
	}
	// The replay of the crashed batch and one more.
	write(second, outs(10, 20))
	info, err := st.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if info.State.Msgs != 20 {
		t.Fatalf("stream OUT holds %d messages after the replay, want 20 (each output once)", info.State.Msgs)
	}
}
