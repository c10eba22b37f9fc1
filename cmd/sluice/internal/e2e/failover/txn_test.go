package failover

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/sluicehq/sluice/cmd/sluice/internal/sluicetest"
	"github.com/sluicehq/sluice/connectors/natsconn/natstest"
	"github.com/sluicehq/sluice/host/registry"
)

// ledgerEvents is how many Streaming Ledger events the generator of
// ledgerSpread makes.
const ledgerEvents = "3000"

// ledgerSpread is Streaming Ledger (plugins/ledger, a transactional
// operator) over 64 accounts, spread over hosts: its key groups live on
// one host together. Its outcomes, one per event, go to the stream OUT.
const ledgerSpread = `
name: spread
nats: {url: "NATSURL"}
http: {addr: "127.0.0.1:0"}
state: {key_groups: 16}
cluster: {lease: 2s, CHECKPOINTS}
sources:
  - {name: events, type: generator, mode: txn, app: sl, count: EVENTS, rate: 200, knobs: {keys: 64, seed: 7}}
operators:
  - name: ledger
    plugin: PLUGINS/ledger.wasm
    kind: transactional
    tables:
      - {name: accounts, init: {generator: {app: sl, keys: 64, seed: 7}}}
      - {name: book_entries, init: {generator: {app: sl, keys: 64, seed: 7}}}
    punctuation: {events: 20, interval: 5ms}
    strategy: ns-op-eager
    workers: 2
sinks:
  - {name: out, type: jetstream, subject: out, stream: OUT, create: true}
`

// TestTransactionalClusterMovesWhole runs Streaming Ledger as two sluice
// processes over three NATS servers. The first host takes every key
// group and the second stands by with none; a move of one group is
// refused, naming the reason. The first host is killed with SIGKILL: the
// second takes every group from the last cut and replays from its
// floors. The first, started again, stands by, and every group is moved
// back to it while events flow, after a plugin swap recorded for every
// host. The outcomes must be the oracle's: the
// same pipeline run in one process, without cluster, over the same
// events (the outcomes carry the balances each transaction read, so a
// transaction applied twice or lost changes the ones after it).
//
// In "first cut", the hosts checkpoint once an hour: the kill comes
// before any periodic checkpoint, and the second host starts from the
// cut the first put before its first record (the initial tables, every
// floor 0).
func TestTransactionalClusterMovesWhole(t *testing.T) {
	if testing.Short() {
		t.Skip("starts three NATS servers and three sluice processes")
	}
	for _, tc := range []struct {
		name, checkpoints string
		moveBack          bool
	}{
		{"last cut", "checkpoint_every: 500ms, duplicates: 2m", true},
		{"first cut", "checkpoint_every: 1h, duplicates: 2h", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			text := strings.NewReplacer("EVENTS", ledgerEvents, "CHECKPOINTS", tc.checkpoints).Replace(ledgerSpread)
			servers := natstest.StartCluster(t, 3)
			s := sluicetest.StartSpreadText(t, sl, servers, text, 2*time.Second)
			oracle := runOracle(t, s, text)
			t.Logf("the oracle: %d outcomes", len(oracle))

			s.Start("h1")
			s.Wait("h1 takes every key group", func() bool { return s.Owned("h1") == sluicetest.SpreadGroups })
			s.Start("h2")
			s.Wait("h2 joins", func() bool { return s.Leased("h2") })
			s.Wait("some outcomes", func() bool { return s.Outputs() > 300 })
			if n := s.Owned("h2"); n != 0 {
				t.Fatalf("h2 owns %d key groups, want none: they live on h1 together", n)
			}
			status, err := exec.Command(sl.Bin, "cluster", "status", "-c", s.File).CombinedOutput()
			if err != nil || !strings.Contains(string(status), "whole: the key groups live on one host together") {
				t.Fatalf("sluice cluster status: %v\n%s", err, status)
			}
			move := exec.Command(sl.Bin, "cluster", "move", "-c", s.File, "--groups", "3", "--to", "h2")
			if out, err := move.CombinedOutput(); err == nil || !strings.Contains(string(out), "keeps its key groups on one host together") {
				t.Fatalf("a move of one group: %v\n%s", err, out)
			}

			if err := s.Hosts["h1"].Process.Signal(syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
			_ = s.Hosts["h1"].Wait()
			s.Wait("h1's groups taken by h2", func() bool { return s.Owned("h2") == sluicetest.SpreadGroups && s.Settled() })
			stop := []string{"h2"}
			if tc.moveBack {
				s.Start("h1")
				s.Wait("h1 back, standing by", func() bool { return s.Leased("h1") })
				// The operator swapped for a relabelled copy of itself, on
				// every host, before the groups move back: the standby loads
				// it too, and the owner checkpoints a cut after the switch.
				v2 := filepath.Join(s.Dir, "ledger-2.wasm")
				module, err := os.ReadFile(sl.Plugin("ledger"))
				if err == nil {
					module, err = registry.AppendVersion(module, "ledger-2")
				}
				if err == nil {
					err = os.WriteFile(v2, module, 0o644)
				}
				if err != nil {
					t.Fatal(err)
				}
				swap := exec.Command(sl.Bin, "plugin", "swap", "--data-dir", filepath.Join(s.Dir, "h2"), "--operator", "ledger", v2)
				if out, err := swap.CombinedOutput(); err != nil {
					t.Fatalf("sluice plugin swap: %v\n%s", err, out)
				}
				s.Wait("both hosts run the swapped module", func() bool { return runsEverywhere(s, "ledger", "h1", "h2") })
				move = exec.Command(sl.Bin, "cluster", "move", "-c", s.File, "--groups", "all", "--to", "h1", "--batch", "4")
				if out, err := move.CombinedOutput(); err != nil {
					t.Fatalf("sluice cluster move --groups all: %v\n%s", err, out)
				}
				s.Wait("every group back on h1", func() bool { return s.Owned("h1") == sluicetest.SpreadGroups && s.Settled() })
				stop = []string{"h1", "h2"}
			}
			s.Wait("every outcome", func() bool { return s.Outputs() >= len(oracle) })
			got := readOutcomes(s, "OUT")
			if len(got) != len(oracle) {
				t.Fatalf("%d outcomes, want %d", len(got), len(oracle))
			}
			for i := range got {
				if got[i] != oracle[i] {
					t.Fatalf("the outcomes differ from one process's (sorted, entry %d): %q, want %q\n%s", i, got[i], oracle[i], s.Logs())
				}
			}
			// Every host stopped at once: each hands the groups over only
			// to a host still live, and none gives up on a host that has
			// left.
			s.Stop(stop...)
			if logs := s.Logs(); strings.Contains(logs, "stopped before every key group was handed over") {
				t.Errorf("a host gave up handing its groups over\n%s", logs)
			}
		})
	}
}

// runsEverywhere reports whether the cluster records a module for
// operator op and every host of ids reports it runs it.
func runsEverywhere(s *sluicetest.Spread, op string, ids ...string) bool {
	ctx := context.Background()
	if !s.Open() {
		return false
	}
	a, err := s.Cluster.Assignment(ctx)
	if err != nil || a.Versions == nil || a.Versions.Operators[op].SHA256 == "" {
		return false
	}
	rs, err := s.Cluster.Reports(ctx)
	if err != nil {
		return false
	}
	for _, id := range ids {
		if rs[id].Operators[op] != a.Versions.Operators[op].SHA256 || !rs[id].Runs(a.Versions) {
			return false
		}
	}
	return true
}

// runOracle runs text without its cluster section, in one process, into
// the stream ORACLE, and returns its outcomes sorted.
func runOracle(t *testing.T, s *sluicetest.Spread, text string) []string {
	t.Helper()
	text = strings.NewReplacer("NATSURL", s.NATS.URLs(), "PLUGINS", sl.Plugins, "name: spread", "name: oracle",
		"http: {addr: \"127.0.0.1:0\"}", "http: {addr: \"off\"}", "stream: OUT", "stream: ORACLE", "subject: out", "subject: oracle", ", rate: 200", "").Replace(text)
	text = strings.Join(slices.DeleteFunc(strings.Split(text, "\n"), func(l string) bool { return strings.HasPrefix(l, "cluster:") }), "\n")
	file := filepath.Join(s.Dir, "oracle.yaml")
	if err := os.WriteFile(file, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	run := exec.Command(sl.Bin, "run", "-c", file, "--data-dir", filepath.Join(s.Dir, "oracle"))
	if out, err := run.CombinedOutput(); err != nil {
		t.Fatalf("the oracle's run: %v\n%s", err, out)
	}
	return readOutcomes(s, "ORACLE")
}

// readOutcomes returns the records of stream, each as its key and value,
// sorted.
func readOutcomes(s *sluicetest.Spread, stream string) []string {
	var out []string
	for _, m := range s.Messages(stream) {
		out = append(out, m.Header.Get("Sluice-Key")+" "+string(m.Data))
	}
	slices.Sort(out)
	return out
}

// TestTransactionalClusterNemesis runs Streaming Ledger on three sluice
// processes over three NATS server processes, every stream and bucket
// replicated three times, through a random schedule of faults while
// events arrive: a host killed with SIGKILL, a host stopped with SIGTERM,
// a host started again, a NATS server killed and started again, every key
// group moved to another host. The outcomes must be the one-process
// oracle's. SLUICE_NEMESIS_SEED repeats a schedule.
//
// Its 2,000 accounts (and as many book entries) change a few at a time
// between two cuts, so that the cuts after the first are sent as deltas
// (checkpoint's Deltas) and the failovers and moves read them.
func TestTransactionalClusterNemesis(t *testing.T) {
	if testing.Short() {
		t.Skip("starts three NATS server processes and three hosts")
	}
	// The lease outlasts the elections that follow a server's loss.
	text := strings.NewReplacer("EVENTS", ledgerEvents, "lease: 2s", "lease: 15s", "CHECKPOINTS", "checkpoint_every: 500ms, duplicates: 2m, replicas: 3",
		"rate: 200", "rate: 100", "keys: 64", "keys: 2000").Replace(ledgerSpread)
	servers := natstest.StartClusterProcesses(t, 3)
	s := sluicetest.StartSpreadText(t, sl, servers, text, 15*time.Second)
	if _, err := s.JS.CreateStream(context.Background(), jetstream.StreamConfig{Name: "OUT", Subjects: []string{"out"}, Replicas: 3, Duplicates: 2 * time.Minute}); err != nil {
		t.Fatal(err)
	}
	oracle := runOracle(t, s, text)
	ids := []string{"h1", "h2", "h3"}
	nem := s.NewNemesis(ids...)
	s.Wait("the first outcomes", func() bool { return s.Outputs() > 0 })
	own := map[string]func(step int){
		"move": func(step int) {
			to := nem.Pick(true)
			out, err := exec.Command(sl.Bin, "cluster", "move", "-c", s.File, "--groups", "all", "--to", to).CombinedOutput()
			t.Logf("step %d: move every group to %s: %v %s", step, to, err, strings.TrimSpace(string(out)))
		},
	}
	for step := range 8 {
		before := s.Outputs()
		nem.Step(step, own, func() bool { n := s.Outputs(); return n > before || n >= len(oracle) })
	}
	nem.Heal()
	s.Wait("every outcome", func() bool { return s.Outputs() >= len(oracle) })
	got := readOutcomes(s, "OUT")
	if len(got) != len(oracle) {
		t.Fatalf("%d outcomes, want %d\n%s", len(got), len(oracle), s.Logs())
	}
	for i := range got {
		if got[i] != oracle[i] {
			t.Fatalf("the outcomes differ from one process's (sorted, entry %d): %q, want %q\n%s", i, got[i], oracle[i], s.Logs())
		}
	}
	s.Stop(ids...)
	if n := deltaCuts(t, s.Dir, ids); n == 0 {
		t.Errorf("no cut was sent as a delta: the installs above read whole cuts only\n%s", s.Logs())
	} else {
		t.Logf("%d cuts sent as deltas", n)
	}
}

// deltaCuts counts, in the hosts' JSON logs in dir, the periodic cuts sent
// as a delta: "key groups checkpointed" with fewer bytes sent than
// exported.
func deltaCuts(t *testing.T, dir string, ids []string) int {
	t.Helper()
	n := 0
	for _, id := range ids {
		data, err := os.ReadFile(filepath.Join(dir, id+".log"))
		if err != nil {
			t.Fatal(err)
		}
		for line := range strings.Lines(string(data)) {
			var l struct {
				Msg   string `json:"msg"`
				Bytes int64  `json:"bytes"`
				Sent  int64  `json:"sent"`
			}
			if json.Unmarshal([]byte(line), &l) == nil && l.Msg == "key groups checkpointed" && l.Sent < l.Bytes {
				n++
			}
		}
	}
	return n
}
