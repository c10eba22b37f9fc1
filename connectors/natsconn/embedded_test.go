package natsconn

import (
	"context"
	"errors"
	"net"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

func TestEmbeddedServesJetStream(t *testing.T) {
	e := startServer(t)
	if !strings.HasPrefix(e.ClientURL(), "nats://127.0.0.1:") || strings.HasSuffix(e.ClientURL(), ":-1") {
		t.Fatalf("ClientURL = %q, want nats://127.0.0.1:<port>", e.ClientURL())
	}
	nc := connect(t, e.ClientURL())
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	ctx := testCtx(t)
	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "S", Subjects: []string{"s.>"}}); err != nil {
		t.Fatalf("create stream: %v", err)
	}
	if _, err := js.Publish(ctx, "s.1", []byte("x")); err != nil {
		t.Fatalf("publish: %v", err)
	}
}

func TestEmbeddedKeepsStreamsAcrossRestarts(t *testing.T) {
	dir := t.TempDir()
	ctx := testCtx(t)
	for round := range 2 {
		e, err := StartEmbedded(ctx, Options{Dir: dir, Port: -1, Logger: quiet()})
		if err != nil {
			t.Fatal(err)
		}
		nc := connect(t, e.ClientURL())
		js, err := jetstream.New(nc)
		if err != nil {
			t.Fatal(err)
		}
		if round == 0 {
			if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "S", Subjects: []string{"s"}}); err != nil {
				t.Fatal(err)
			}
			if _, err := js.Publish(ctx, "s", []byte("kept")); err != nil {
				t.Fatal(err)
			}
		} else {
			st, err := js.Stream(ctx, "S")
			if err != nil {
				t.Fatalf("stream after restart: %v", err)
			}
			msg, err := st.GetMsg(ctx, 1)
			if err != nil || string(msg.Data) != "kept" {
				t.Fatalf("message after restart = %v, %v; want \"kept\"", msg, err)
			}
		}
		nc.Close()
		if err := e.Shutdown(ctx); err != nil {
			t.Fatal(err)
		}
	}
}

func TestEmbeddedNeedsDir(t *testing.T) {
	_, err := StartEmbedded(testCtx(t), Options{Port: -1})
	if err == nil || !strings.Contains(err.Error(), "Dir") {
		t.Fatalf("err = %v, want one naming Options.Dir", err)
	}
}

func TestEmbeddedPortInUseFailsClearly(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	port := l.Addr().(*net.TCPAddr).Port
	_, err = StartEmbedded(testCtx(t), Options{Dir: t.TempDir(), Port: port, ReadyTimeout: 2 * time.Second, Logger: quiet()})
	if err == nil {
		t.Fatal("started on a port in use")
	}
	if !strings.Contains(err.Error(), strconv.Itoa(port)) || !strings.Contains(err.Error(), "address already in use") {
		t.Fatalf("err = %q, want the port and the cause", err)
	}
	if !errors.Is(err, ErrPortInUse) || !errors.Is(err, syscall.EADDRINUSE) {
		t.Errorf("err = %q, want one matching ErrPortInUse and EADDRINUSE", err)
	}
}

// A server whose listener fails (here on an address no interface has)
// fails the start with the server's error as soon as it gives up, not
// after ReadyTimeout with "not ready".
func TestEmbeddedListenerFailureEndsTheWait(t *testing.T) {
	_, err := StartEmbedded(testCtx(t), Options{Dir: t.TempDir(), Host: "192.0.2.1", Port: -1, ReadyTimeout: time.Minute, Logger: quiet()})
	if err == nil {
		t.Fatal("started on an address no interface has")
	}
	if !strings.Contains(err.Error(), "Error listening") || strings.Contains(err.Error(), "not ready") {
		t.Errorf("err = %q, want the server's listener error", err)
	}
}

func TestEmbeddedShutdownClosesPort(t *testing.T) {
	ctx := testCtx(t)
	e, err := StartEmbedded(ctx, Options{Dir: t.TempDir(), Port: -1, Logger: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	url := e.ClientURL()
	if err := e.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	_, err = Connect(ctx, url, "after-shutdown", WithLogger(quiet()))
	if !errors.Is(err, syscall.ECONNREFUSED) {
		t.Fatalf("connect after shutdown: %v, want connection refused", err)
	}
}

func TestEmbeddedHonoursContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := StartEmbedded(ctx, Options{Dir: t.TempDir(), Port: -1, Logger: quiet()})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
}
