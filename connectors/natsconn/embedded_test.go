package natsconn

import (
	"context"
	"errors"
	"io/fs"
	"net"
	"os"
	"path/filepath"
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
	if !errors.Is(err, syscall.EADDRNOTAVAIL) {
		t.Errorf("err = %q, want one matching the listener's EADDRNOTAVAIL", err)
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

// A single server keeps its defaults: named "sluice", no routes, nothing
// written beside JetStream's store.
func TestEmbeddedSingleServerDefaults(t *testing.T) {
	dir := t.TempDir()
	e, err := StartEmbedded(testCtx(t), Options{Dir: dir, Port: -1, Logger: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Shutdown(context.Background())
	if e.Name() != "sluice" || e.RouteURL() != "" || e.Server().JetStreamIsClustered() {
		t.Errorf("name %q, route URL %q, clustered %v; want sluice, none, false", e.Name(), e.RouteURL(), e.Server().JetStreamIsClustered())
	}
	if _, err := os.Stat(filepath.Join(dir, nameFile)); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("%s: %v, want no such file", nameFile, err)
	}
}

func TestEmbeddedClusterOptionsRefused(t *testing.T) {
	for _, tc := range []struct {
		name    string
		cluster ClusterOptions
		want    string // in the message
	}{
		{"no name", ClusterOptions{Routes: []string{"nats-route://127.0.0.1:6222"}}, "Options.Cluster.Name is required"},
		{"name with a space", ClusterOptions{Name: "a b", Routes: []string{"nats-route://127.0.0.1:6222"}}, `Options.Cluster.Name "a b"`},
		{"no routes", ClusterOptions{Name: "c"}, "Options.Cluster.Routes is empty"},
		{"route not a URL", ClusterOptions{Name: "c", Routes: []string{"nats-route://127.0.0.1:6222", "nats-route://[::1"}}, `Options.Cluster.Routes[1] "nats-route://[::1"`},
		{"route of another scheme", ClusterOptions{Name: "c", Routes: []string{"http://127.0.0.1:6222"}}, `Options.Cluster.Routes[0] "http://127.0.0.1:6222"`},
		{"route without a port", ClusterOptions{Name: "c", Routes: []string{"nats-route://127.0.0.1"}}, `Options.Cluster.Routes[0] "nats-route://127.0.0.1": want a host and a port`},
		{"route port out of range", ClusterOptions{Name: "c", Routes: []string{"nats-route://127.0.0.1:70000"}}, `port "70000" out of range`},
		{"route port below -1", ClusterOptions{Name: "c", Port: -2, Routes: []string{"nats-route://127.0.0.1:6222"}}, "Options.Cluster.Port -2"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			_, err := StartEmbedded(testCtx(t), Options{Dir: dir, Port: -1, Cluster: &tc.cluster, Logger: quiet()})
			if !errors.Is(err, ErrInvalidOptions) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want ErrInvalidOptions with %q", err, tc.want)
			}
		})
	}
}

func TestEmbeddedRoutePortInUseFailsClearly(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	port := l.Addr().(*net.TCPAddr).Port
	route := "nats-route://" + l.Addr().String()
	_, err = StartEmbedded(testCtx(t), Options{Dir: t.TempDir(), Port: -1, Logger: quiet(),
		Cluster: &ClusterOptions{Name: "c", Port: port, Routes: []string{route}}})
	if !errors.Is(err, ErrPortInUse) || !errors.Is(err, syscall.EADDRINUSE) {
		t.Fatalf("err = %v, want one matching ErrPortInUse and EADDRINUSE", err)
	}
	if !strings.Contains(err.Error(), "route listener") || !strings.Contains(err.Error(), strconv.Itoa(port)) {
		t.Errorf("err = %q, want the route listener and its port", err)
	}
}

// A cluster member given no name makes one up at its first start and keeps
// it across restarts: JetStream knows a member by its name.
func TestEmbeddedClusterMemberKeepsItsName(t *testing.T) {
	dir := t.TempDir()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close() // a member that never answers: the one started here stays alone
	var names []string
	for range 2 {
		e, err := StartEmbedded(testCtx(t), Options{Dir: dir, Port: -1, Logger: quiet(),
			Cluster: &ClusterOptions{Name: "c", Port: -1, Routes: []string{"nats-route://" + l.Addr().String()}}})
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, e.Name())
		route := e.RouteURL()
		if !strings.HasPrefix(route, "nats-route://127.0.0.1:") || strings.HasSuffix(route, ":-1") || strings.HasSuffix(route, ":0") {
			t.Errorf("RouteURL = %q, want nats-route://127.0.0.1:<port>", route)
		}
		if !e.Server().JetStreamIsClustered() {
			t.Error("JetStream is not clustered")
		}
		if err := e.Shutdown(testCtx(t)); err != nil {
			t.Fatal(err)
		}
	}
	if !strings.HasPrefix(names[0], "sluice-") || names[1] != names[0] {
		t.Fatalf("names %q, want one sluice-... twice", names)
	}
	b, err := os.ReadFile(filepath.Join(dir, nameFile))
	if err != nil || strings.TrimSpace(string(b)) != names[0] {
		t.Fatalf("%s holds %q, %v; want %q", nameFile, b, err, names[0])
	}
}
