package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/sluicehq/sluice/connectors/natsconn/natstest"
	"github.com/sluicehq/sluice/host/cluster"
	"github.com/sluicehq/sluice/host/migrate"
)

// spreadWordCount counts generated records by key on several hosts that
// share a NATS cluster, into a JetStream stream.
const spreadWordCount = `
name: spread
nats: {url: "NATSURL"}
http: {addr: "127.0.0.1:0"}
state: {key_groups: 16}
batch: {size: 20}
cluster: {lease: 2s, checkpoint_every: 500ms, duplicates: 2m}
sources:
  - {name: gen, type: generator, mode: sequence, keys: 50, count: COUNT, rate: RATE}
operators:
  - {name: count, plugin: PLUGINS/wordcount.wasm, kind: keyed, parallelism: 2, state: [counts]}
sinks:
  - {name: out, type: jetstream, subject: out, stream: OUT, create: true}
`

// TestClusterOfProcesses runs a pipeline as three sluice processes over a
// cluster of three NATS servers: the key groups spread over them, one
// host is killed with SIGKILL (its groups go to the others, which load its
// last checkpoint and replay from there), and every record is counted
// exactly once: the output stream holds, for each key, the counts 1 to n
// once each.
func TestClusterOfProcesses(t *testing.T) {
	if testing.Short() {
		t.Skip("starts three NATS servers and three hosts")
	}
	nc3 := natstest.StartCluster(t, 3)
	const count, keys = 3000, 50
	dir := t.TempDir()
	file := filepath.Join(dir, "spread.yaml")
	text := strings.NewReplacer("NATSURL", nc3.URLs(), "PLUGINS", pluginsDir, "COUNT", strconv.Itoa(count), "RATE", "600").Replace(spreadWordCount)
	if err := os.WriteFile(file, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	nc, err := nats.Connect(nc3.URLs())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}

	hosts := map[string]*exec.Cmd{}
	start := func(id string) {
		t.Helper()
		cmd := exec.Command(sluiceBin, "run", "-c", file, "--host-id", id, "--data-dir", filepath.Join(dir, id), "--log-format", "json")
		cmd.Dir = dir
		logFile, err := os.Create(filepath.Join(dir, id+".log"))
		if err != nil {
			t.Fatal(err)
		}
		cmd.Stderr, cmd.Stdout = logFile, logFile
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		hosts[id] = cmd
		t.Cleanup(func() {
			if cmd.ProcessState == nil {
				_ = cmd.Process.Kill()
				_ = cmd.Wait()
			}
			logFile.Close()
		})
	}
	logs := func() string {
		var b strings.Builder
		for _, id := range []string{"h1", "h2", "h3"} {
			data, _ := os.ReadFile(filepath.Join(dir, id+".log"))
			fmt.Fprintf(&b, "--- %s\n%s", id, data)
		}
		return b.String()
	}
	var c *cluster.Cluster
	owned := func(id string) int {
		if c == nil {
			cl, err := cluster.Open(ctx, js, cluster.Config{Pipeline: "spread", Text: []byte(text), KeyGroups: 16})
			if err != nil {
				return -1
			}
			c = cl
		}
		a, err := c.Assignment(ctx)
		if err != nil {
			return -1
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
			return 0
		}
		return int(info.State.Msgs)
	}
	wait := func(what string, cond func() bool) {
		t.Helper()
		deadline := time.Now().Add(3 * time.Minute)
		for !cond() {
			if time.Now().After(deadline) {
				t.Fatalf("%s: not within three minutes\n%s", what, logs())
			}
			time.Sleep(50 * time.Millisecond)
		}
	}

	start("h1")
	wait("h1's first outputs", func() bool { return outputs() > 0 })
	start("h2")
	start("h3")
	wait("the groups spread over three hosts", func() bool {
		return owned("h1") >= 5 && owned("h2") >= 5 && owned("h3") >= 5
	})
	wait("some records counted on every host", func() bool { return outputs() > count/4 })
	if err := hosts["h3"].Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = hosts["h3"].Wait()
	wait("h3's groups taken by the others", func() bool { return owned("h1")+owned("h2") == 16 })
	wait("every record counted", func() bool { return outputs() >= count })

	s, err := js.Stream(ctx, "OUT")
	if err != nil {
		t.Fatal(err)
	}
	info, err := s.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	perKey := map[string][]int{}
	for seq := info.State.FirstSeq; seq <= info.State.LastSeq; seq++ {
		m, err := s.GetMsg(ctx, seq)
		if err != nil {
			t.Fatalf("output %d: %v", seq, err)
		}
		n, err := strconv.Atoi(string(m.Data))
		if err != nil {
			t.Fatalf("output %d: %q is not a count", seq, m.Data)
		}
		k := m.Header.Get("Sluice-Key")
		perKey[k] = append(perKey[k], n)
	}
	if len(perKey) != keys {
		t.Errorf("%d keys counted, want %d", len(perKey), keys)
	}
	for k, ns := range perKey {
		slices.Sort(ns)
		for i, n := range ns {
			if n != i+1 || len(ns) != count/keys {
				t.Fatalf("key %s: counts %v, want 1 to %d once each", k, ns, count/keys)
			}
		}
	}
	for _, id := range []string{"h1", "h2"} {
		if err := hosts[id].Process.Signal(syscall.SIGTERM); err != nil {
			t.Fatal(err)
		}
	}
	for _, id := range []string{"h1", "h2"} {
		if err := hosts[id].Wait(); err != nil {
			t.Errorf("host %s ended with %v after SIGTERM\n%s", id, err, logs())
		}
	}
}
