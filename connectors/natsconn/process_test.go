package natsconn

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/sluicehq/sluice/abi"
	"github.com/sluicehq/sluice/connectors"
)

// natsProcess is a nats-server running as a separate process, built by
// TestMain, so that a test can kill it as a crash would.
type natsProcess struct {
	t    testing.TB
	port int
	dir  string
	mu   sync.Mutex
	cmd  *exec.Cmd
}

func newNATSProcess(t testing.TB, port int) *natsProcess {
	t.Helper()
	if natsServerBin == "" {
		t.Skip("the nats-server binary is not built under -short")
	}
	p := &natsProcess{t: t, port: port, dir: t.TempDir()}
	t.Cleanup(p.kill)
	return p
}

func (p *natsProcess) url() string { return fmt.Sprintf("nats://127.0.0.1:%d", p.port) }

// start starts the server and waits until it accepts connections.
func (p *natsProcess) start() {
	p.t.Helper()
	if err := p.startErr(); err != nil {
		p.t.Fatal(err)
	}
}

func (p *natsProcess) startErr() error {
	log, err := os.OpenFile(filepath.Join(p.dir, "server.log"), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	defer log.Close()
	cmd := exec.Command(natsServerBin, "-a", "127.0.0.1", "-p", strconv.Itoa(p.port), "-js", "-sd", filepath.Join(p.dir, "store"))
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		return err
	}
	p.mu.Lock()
	p.cmd = cmd
	p.mu.Unlock()
	deadline := time.Now().Add(20 * time.Second)
	for {
		c, err := net.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", p.port))
		if err == nil {
			c.Close()
			return nil
		}
		if time.Now().After(deadline) {
			out, _ := os.ReadFile(filepath.Join(p.dir, "server.log"))
			return fmt.Errorf("nats-server not listening on %d after 20s: %v\n%s", p.port, err, out)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// kill stops the server at once (SIGKILL), as a crash would.
func (p *natsProcess) kill() {
	p.mu.Lock()
	cmd := p.cmd
	p.cmd = nil
	p.mu.Unlock()
	if cmd == nil {
		return
	}
	_ = cmd.Process.Kill()
	_ = cmd.Wait()
}

func TestProcessServerDownAtStart(t *testing.T) {
	p := newNATSProcess(t, freePort(t))
	_, err := Connect(testCtx(t), p.url(), "test", WithLogger(quiet()))
	want := "nats: cannot connect to " + p.url() + ": connection refused (is the server running?)"
	if err == nil || err.Error() != want {
		t.Fatalf("err = %v\nwant  %s", err, want)
	}
	p.start()
	nc, err := Connect(testCtx(t), p.url(), "test", WithLogger(quiet()))
	if err != nil {
		t.Fatalf("connect once the server runs: %v", err)
	}
	nc.Close()
}

// TestProcessServerRestart kills the server in the middle of a run and
// starts it again on the same port and store: the JetStream sink and source
// reconnect, and every record arrives once.
func TestProcessServerRestart(t *testing.T) {
	const (
		total = 3000
		chunk = 100
	)
	p := newNATSProcess(t, freePort(t))
	p.start()
	ctx := testCtx(t)
	nc := connect(t, p.url())
	var logs syncBuffer
	sink := newJSSink(t, nc, JetStreamSinkConfig{
		Subject: "in", Stream: "IN", CreateStream: &StreamSpec{Subjects: []string{"in"}},
		AckTimeout: 2 * time.Second, Logger: slog.New(slog.NewTextHandler(&logs, nil)),
	})
	src := newJSSource(t, nc, JetStreamSourceConfig{Stream: "IN", Durable: "d"})
	if err := src.Open(ctx, 0); err != nil {
		t.Fatal(err)
	}

	// The reader counts each value, checks that positions increase, and
	// notes the first value read out of the order written (the messages
	// the client had buffered when the connection broke can be stored
	// before those lost with it, and the sink must then say so).
	seen := make(map[string]int, total)
	var outOfOrder string
	var mu sync.Mutex
	readErr := make(chan error, 1)
	readCtx, stopReading := context.WithCancel(ctx)
	defer stopReading()
	go func() {
		buf := make([]connectors.Message, 64)
		var last uint64
		for {
			n, err := src.Read(readCtx, buf)
			if err != nil {
				readErr <- err
				return
			}
			mu.Lock()
			for _, m := range buf[:n] {
				if m.Position <= last {
					mu.Unlock()
					readErr <- fmt.Errorf("position %d after %d", m.Position, last)
					return
				}
				last = m.Position
				if want := fmt.Sprint("v-", len(seen)); string(m.Record.Value) != want && outOfOrder == "" {
					outOfOrder = fmt.Sprintf("read %s at position %d, want %s", m.Record.Value, m.Position, want)
				}
				seen[string(m.Record.Value)]++
			}
			done := len(seen) == total
			mu.Unlock()
			_ = src.Ack(readCtx, last) // a lost ack is made good by the next one
			if done {
				readErr <- nil
				return
			}
		}
	}()

	restarted := make(chan error, 1)
	for start := 0; start < total; start += chunk {
		out := make([]connectors.Out, chunk)
		for i := range out {
			out[i] = connectors.Out{Record: abi.Record{Value: fmt.Appendf(nil, "v-%d", start+i)}, ID: fmt.Sprint("id-", start+i)}
		}
		if err := sink.Write(ctx, out); err != nil {
			t.Fatalf("write at %d: %v", start, err)
		}
		if start == total/3 {
			// Killed with publications and deliveries in flight.
			p.kill()
			// Writes go on while the server is down (they block once
			// the client cannot buffer them) until it is back.
			go func() {
				time.Sleep(time.Second)
				restarted <- p.startErr() // same port, same store
			}()
		}
	}
	if err := <-restarted; err != nil {
		t.Fatal(err)
	}
	if err := sink.Flush(ctx); err != nil {
		t.Fatalf("flush after the restart: %v", err)
	}
	if err := <-readErr; err != nil {
		t.Fatalf("reader: %v", err)
	}
	mu.Lock()
	defer mu.Unlock()
	if outOfOrder != "" && !strings.Contains(logs.String(), "the stream stored a message before one written before it") {
		t.Fatalf("%s, and the sink did not warn of it; its log:\n%s", outOfOrder, logs.String())
	} else if outOfOrder != "" {
		t.Logf("%s; the sink warned of it", outOfOrder)
	}
	for i := range total {
		if c := seen[fmt.Sprint("v-", i)]; c != 1 {
			t.Fatalf("value v-%d read %d times, want once", i, c)
		}
	}
	js, _ := jetstream.New(nc)
	st, err := js.Stream(ctx, "IN")
	if err != nil {
		t.Fatal(err)
	}
	info, err := st.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if info.State.Msgs != total {
		t.Fatalf("stream holds %d messages, want %d: duplicates were stored", info.State.Msgs, total)
	}
}
