package runner

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/sluicehq/sluice/host/pipeline"
)

// TestStartWithoutJetStream starts a host of a pipeline spread over hosts
// against a NATS server that runs without JetStream: the start fails at
// once (no waiting for an answer that cannot come) with an error that says
// what is missing.
func TestStartWithoutJetStream(t *testing.T) {
	srv, err := server.NewServer(&server.Options{Host: "127.0.0.1", Port: -1, NoLog: true, NoSigs: true})
	if err != nil {
		t.Fatal(err)
	}
	go srv.Start()
	defer srv.Shutdown()
	if !srv.ReadyForConnections(10 * time.Second) {
		t.Fatal("the NATS server did not start")
	}
	dir := t.TempDir()
	file := filepath.Join(dir, "spread.yaml")
	writeFile(t, filepath.Join(dir, "wordcount.wasm"), "not read: the start fails before the plugins load")
	writeFile(t, file, fmt.Sprintf(clusterPipeline, srv.ClientURL(), 100, 1000))
	p, err := pipeline.Load(file)
	if err != nil {
		t.Fatal(err)
	}
	var logged logBuffer
	h, err := Start(context.Background(), p, Options{DataDir: filepath.Join(dir, "a"), HostID: "a", Logger: logged.logger()})
	if err == nil {
		h.Close(context.Background())
		t.Fatal("the start succeeded without JetStream")
	}
	if !errors.Is(err, jetstream.ErrJetStreamNotEnabled) || !strings.Contains(err.Error(), "nats-server with -js") {
		t.Errorf("the start without JetStream failed with %v; want JetStream's not enabled and how to enable it", err)
	}
	if strings.Contains(logged.String(), "trying again") {
		t.Errorf("the start waited for a JetStream that is not there:\n%s", logged.String())
	}
}

// TestStartWithUnreachableNATS starts a pipeline whose nats.url names no
// server: the error says so, and what to do, which differs for a pipeline
// spread over hosts (no embedded server can stand in for a shared one).
func TestStartWithUnreachableNATS(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	url := "nats://" + l.Addr().String()
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "wordcount.wasm"), "not read: the start fails before the plugins load")
	for _, tc := range []struct {
		name, text, hint string
	}{
		{"one host", fmt.Sprintf(`
name: one
nats: {url: %q}
sources:
  - {name: in, type: jetstream, stream: IN, subjects: [in], create: true}
sinks:
  - {name: out, type: stdout}
`, url), "leave nats.url and --nats-url unset"},
		{"spread over hosts", fmt.Sprintf(clusterPipeline, url, 100, 1000), "share a NATS cluster: start it, or correct nats.url"},
	} {
		file := filepath.Join(dir, strings.ReplaceAll(tc.name, " ", "-")+".yaml")
		writeFile(t, file, tc.text)
		p, err := pipeline.Load(file)
		if err != nil {
			t.Fatal(err)
		}
		h, err := Start(context.Background(), p, Options{DataDir: filepath.Join(dir, tc.name), Logger: slog.New(slog.DiscardHandler)})
		if err == nil {
			h.Close(context.Background())
			t.Fatalf("%s: started against %s, where no server listens", tc.name, url)
		}
		if msg := err.Error(); !strings.Contains(msg, "cannot connect to "+url) || !strings.Contains(msg, tc.hint) {
			t.Errorf("%s: %v; want it to name %s and say %q", tc.name, err, url, tc.hint)
		}
	}
}
