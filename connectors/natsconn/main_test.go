package natsconn

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"go.uber.org/goleak"
)

// natsServerBin is the nats-server binary built by TestMain for the tests
// that run the server as a separate process; empty under -short.
var natsServerBin string

func TestMain(m *testing.M) {
	flag.Parse()
	code := func() int {
		if !testing.Short() {
			dir, err := os.MkdirTemp("", "natsconn-test-")
			if err != nil {
				fmt.Fprintln(os.Stderr, err)
				return 1
			}
			defer os.RemoveAll(dir)
			natsServerBin = filepath.Join(dir, "nats-server")
			build := exec.Command("go", "build", "-o", natsServerBin, "github.com/nats-io/nats-server/v2")
			build.Stdout, build.Stderr = os.Stderr, os.Stderr
			if err := build.Run(); err != nil {
				fmt.Fprintln(os.Stderr, "building nats-server:", err)
				return 1
			}
		}
		code := m.Run()
		if code == 0 {
			// nats.go's async publisher can leave its reconnect listener
			// waiting on a channel its cleanup cleared (a race in the
			// library, rare: see package checkpoint's doc); the JetStream
			// sink publishes asynchronously. And the servers of a cluster
			// whose member was stopped and started again can leave a
			// stream's file store flushing, and the server's clock for
			// file stores (package ats) ticking for it, after
			// WaitForShutdown (1 run in 100 or so of
			// TestJetStreamOnAClusterLosingAMember).
			if err := goleak.Find(
				goleak.IgnoreTopFunction("github.com/nats-io/nats.go/jetstream.(*jetStream).resetPendingAcksOnReconnect"),
				goleak.IgnoreTopFunction("github.com/nats-io/nats-server/v2/server.(*fileStore).flushStreamStateLoop"),
				goleak.IgnoreTopFunction("github.com/nats-io/nats-server/v2/server/ats.Register.func1"),
			); err != nil {
				fmt.Fprintln(os.Stderr, "goleak:", err)
				return 1
			}
		}
		return code
	}()
	os.Exit(code)
}

// quiet is the logger of the connectors under test.
func quiet() *slog.Logger { return slog.New(slog.DiscardHandler) }

// testCtx returns a context that ends with the test, bounded so that a
// hang fails the test instead of the whole run.
func testCtx(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// startServer starts an embedded server on a free port for one test.
func startServer(t testing.TB) *Embedded {
	t.Helper()
	e, err := StartEmbedded(testCtx(t), Options{Dir: t.TempDir(), Port: -1, Logger: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := e.Shutdown(context.Background()); err != nil {
			t.Error(err)
		}
	})
	return e
}

// connect connects to url for one test.
func connect(t testing.TB, url string) *nats.Conn {
	t.Helper()
	nc, err := Connect(testCtx(t), url, t.Name(), WithLogger(quiet()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	return nc
}
