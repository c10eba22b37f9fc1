package runner

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/sluicehq/sluice/connectors/natsconn/natstest"
	"github.com/sluicehq/sluice/host/cluster"
	"github.com/sluicehq/sluice/host/migrate"
	"github.com/sluicehq/sluice/host/pipeline"
	"github.com/sluicehq/sluice/sdk/go/wasmbuild"
)

// clusterPipeline counts generated records by key on hosts that share a
// NATS server, into a JetStream stream.
const clusterPipeline = `
name: spread
nats: {url: %s}
http: {addr: "off"}
state: {key_groups: 16}
batch: {size: 16}
cluster: {lease: 2s, checkpoint_every: 1s, duplicates: 1m}
sources:
  - {name: gen, type: generator, mode: sequence, keys: 40, count: %d, rate: %d}
operators:
  - {name: count, plugin: wordcount.wasm, kind: keyed, parallelism: 2, state: [counts]}
sinks:
  - {name: out, type: jetstream, subject: out, stream: OUT, create: true}
`

// TestClusterSpreadsAndHandsOver runs a pipeline on one host, starts a
// second host while records flow (the groups are rebalanced over both),
// then stops the second (it hands its groups back first): every record is
// counted once, by whichever host owned its key's group at the time.
func TestClusterSpreadsAndHandsOver(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	mods, err := wasmbuild.GoModules(ctx, map[string]string{"wordcount": "../../plugins/wordcount"})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "wordcount.wasm"), mods["wordcount"], 0o644); err != nil {
		t.Fatal(err)
	}
	srv := natstest.StartServer(t)
	const count, keys = 3000, 40
	file := filepath.Join(dir, "spread.yaml")
	writeFile(t, file, fmt.Sprintf(clusterPipeline, srv.ClientURL(), count, 1000))

	type running struct {
		h    *Host
		stop context.CancelFunc
		done chan error
	}
	start := func(id string) *running {
		t.Helper()
		p, err := pipeline.Load(file)
		if err != nil {
			t.Fatal(err)
		}
		h, err := Start(ctx, p, Options{DataDir: filepath.Join(dir, id), HostID: id, Logger: slog.New(slog.DiscardHandler)})
		if err != nil {
			t.Fatal(err)
		}
		runCtx, stop := context.WithCancel(ctx)
		r := &running{h: h, stop: stop, done: make(chan error, 1)}
		go func() { r.done <- h.Run(runCtx) }()
		t.Cleanup(func() {
			stop()
			<-r.done
		})
		return r
	}

	nc, err := nats.Connect(srv.ClientURL())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	c, err := cluster.Open(ctx, js, cluster.Config{Pipeline: "spread", Text: mustRead(t, file), KeyGroups: 16, Lease: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	owned := func(id string) int {
		a, err := c.Assignment(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return len(migrate.Owned(a, id))
	}
	outputs := func() int {
		s, err := js.Stream(ctx, "OUT")
		if err != nil {
			return 0
		}
		info, err := s.Info(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return int(info.State.Msgs)
	}

	a := start("a")
	waitUntil(t, "host a's first outputs", func() bool { return outputs() > 100 })
	b := start("b")
	waitUntil(t, "the groups spread over both hosts", func() bool { return owned("b") == 8 && owned("a") == 8 })
	b.stop()
	if err := <-b.done; err != nil {
		t.Fatalf("host b stopped with %v", err)
	}
	b.done <- nil // for the cleanup
	if got := owned("a"); got != 16 {
		t.Errorf("after host b stopped, host a owns %d groups, want 16: b hands its groups over before it stops", got)
	}
	waitUntil(t, "every record counted", func() bool { return outputs() >= count })

	countedOnce(t, js, count, keys)
	_ = a
}

func mustRead(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// waitUntil polls cond until it holds; two minutes fail the test (it is no
// assertion about speed).
func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within two minutes", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// countedOnce checks that every key's counts in the stream OUT run 1 to
// count/keys, each once: every record was counted exactly once.
func countedOnce(t *testing.T, js jetstream.JetStream, count, keys int) {
	t.Helper()
	s, err := js.Stream(context.Background(), "OUT")
	if err != nil {
		t.Fatal(err)
	}
	perKey := map[string][]int{}
	for _, o := range outputIDs(t, s) {
		k, v, _ := strings.Cut(o.value, "=")
		n, err := strconv.Atoi(v)
		if err != nil {
			t.Fatalf("output %s: %q is not a count", o.id, o.value)
		}
		perKey[k] = append(perKey[k], n)
	}
	if len(perKey) != keys {
		t.Errorf("%d keys counted, want %d", len(perKey), keys)
	}
	for k, ns := range perKey {
		slices.Sort(ns)
		for i, n := range ns {
			if n != i+1 {
				t.Fatalf("key %s: counts %v, want 1 to %d once each", k, ns, count/keys)
			}
		}
		if len(ns) != count/keys {
			t.Errorf("key %s: %d counts, want %d", k, len(ns), count/keys)
		}
	}
}
