package natsconn

import (
	"context"
	"errors"
	"fmt"
	"net"
	"syscall"
	"testing"

	"github.com/nats-io/nats.go"
)

// freePort returns a TCP port nothing listens on.
func freePort(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	return port
}

func TestConnectRefusedSaysWhy(t *testing.T) {
	url := fmt.Sprintf("nats://127.0.0.1:%d", freePort(t))
	_, err := Connect(testCtx(t), url, "test", WithLogger(quiet()))
	want := "nats: cannot connect to " + url + ": connection refused (is the server running?)"
	if err == nil || err.Error() != want {
		t.Fatalf("err = %v\nwant  %s", err, want)
	}
	if !errors.Is(err, syscall.ECONNREFUSED) {
		t.Errorf("errors.Is(err, ECONNREFUSED) = false for %v", err)
	}
	var ce *ConnectError
	if !errors.As(err, &ce) || ce.URL != url || !ce.Unreachable() {
		t.Errorf("err is not a *ConnectError for %s, unreachable: %#v", url, err)
	}
}

func TestConnectCanceled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := Connect(ctx, "nats://127.0.0.1:1", "test", WithLogger(quiet()))
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
}

func TestConnectReconnectsForever(t *testing.T) {
	e := startServer(t)
	nc := connect(t, e.ClientURL())
	if got := nc.Opts.MaxReconnect; got != -1 {
		t.Errorf("MaxReconnect = %d, want -1 (forever)", got)
	}
	if nc.Opts.RetryOnFailedConnect {
		t.Error("RetryOnFailedConnect is on; a server down at start must be reported")
	}
	if nc.Status() != nats.CONNECTED {
		t.Errorf("status = %v", nc.Status())
	}
}

func TestReconnectDelayBacksOff(t *testing.T) {
	prev := reconnectDelay(1)
	if prev < reconnectBase || prev > reconnectBase*5/4 {
		t.Fatalf("first delay %v, want within [%v, %v]", prev, reconnectBase, reconnectBase*5/4)
	}
	for a := 2; a < 40; a++ {
		d := reconnectDelay(a)
		if d > reconnectMax*5/4 {
			t.Fatalf("delay %d = %v, over the cap", a, d)
		}
		if a > 8 && d < reconnectMax {
			t.Fatalf("delay %d = %v, want at least %v", a, d, reconnectMax)
		}
	}
}

func TestRedactURLs(t *testing.T) {
	for in, want := range map[string]string{
		"nats://127.0.0.1:4222":              "nats://127.0.0.1:4222",
		"nats://user:secret@h:4222":          "nats://user:xxxxx@h:4222",
		"nats://s3cr3ttoken@h:4222":          "nats://xxxxx@h:4222",
		"nats://a:1@h1:4222, nats://h2:4222": "nats://a:xxxxx@h1:4222,nats://h2:4222",
	} {
		if got := redactURLs(in); got != want {
			t.Errorf("redactURLs(%q) = %q, want %q", in, got, want)
		}
	}
}
