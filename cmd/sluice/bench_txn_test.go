package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/host/bench"
	"github.com/sluicehq/sluice/txn/apps/workload"
)

// TestBenchTxnQuick runs `sluice bench txn --quick` for every application
// with one strategy, Wasm and native interleaved on 1 and 2 workers (which
// builds each application's plugin from source, as a user's run does), and
// checks the table and the JSON report: a row per worker count and logic,
// the ratio and speedup tables, and a report that parses with every run's
// figures present. Correctness is the command's own check (every run's
// state and outputs equal the serial strategy's, or it fails).
func TestBenchTxnQuick(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the five transactional plugins to WebAssembly; skipped in -short mode")
	}
	for _, app := range workload.Apps() {
		t.Run(app, func(t *testing.T) {
			jsonFile := filepath.Join(t.TempDir(), "txn.json")
			code, out, errOut := sluice(t, ".", "bench", "txn", "--quick", "--app", app, "--strategy", "ns-op-lazy",
				"--workers", "1,2", "--compare", "--keys", "2000", "--json", jsonFile)
			if code != 0 {
				t.Fatalf("sluice bench txn exited %d\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
			}
			for _, want := range []string{
				"Sluice transactional benchmark", "(" + app + ")", "keys=2000", "events/s", "latency p99",
				"op plan+post", "Wasm / native", "Speedup, 2 workers over 1", "results written to",
			} {
				if !strings.Contains(out, want) {
					t.Errorf("the output lacks %q:\n%s", want, out)
				}
			}
			rows := 0
			for _, line := range strings.Split(out, "\n") {
				if f := strings.Fields(line); len(f) > 3 && f[0] == "ns-op-lazy" && (f[2] == "wasm" || f[2] == "native") {
					rows++
				}
			}
			if rows != 4 {
				t.Errorf("%d strategy rows, want 4 (1 and 2 workers, wasm and native):\n%s", rows, out)
			}
			if !strings.Contains(errOut, "building the") || !strings.Contains(errOut, "strategy ns-op-lazy (1/1)") {
				t.Errorf("the progress on stderr lacks the build or the strategy:\n%s", errOut)
			}

			b, err := os.ReadFile(jsonFile)
			if err != nil {
				t.Fatal(err)
			}
			var rep bench.TxnReport
			if err := json.Unmarshal(b, &rep); err != nil {
				t.Fatalf("the JSON report does not parse: %v\n%s", err, b)
			}
			if rep.App != app || !rep.Quick || rep.Knobs["keys"] != "2000" || len(rep.Runs) != 4 || len(rep.Ratios) != 2 ||
				len(rep.Speedups) != 2 || rep.StateHash == "" || rep.CallTimeoutSeconds <= 0 {
				t.Fatalf("report: app %q quick %v knobs %v, %d runs, %d ratios, %d speedups, state %q, timeout %v",
					rep.App, rep.Quick, rep.Knobs, len(rep.Runs), len(rep.Ratios), len(rep.Speedups), rep.StateHash, rep.CallTimeoutSeconds)
			}
			for _, r := range rep.Runs {
				if r.Rate <= 0 || r.Events == 0 || r.LatencyP99Ms <= 0 || r.Committed+r.Aborted != uint64(rep.Events) {
					t.Errorf("run %+v", r)
				}
			}
		})
	}
}

// TestBenchTxnPipelineQuick runs `sluice bench txn --quick --pipeline`
// natively (no plugin to build) and checks the pipeline's table and JSON:
// one pipeline run per worker count, its state equal to the oracle's
// (which the command checks, failing otherwise), its ratio present.
func TestBenchTxnPipelineQuick(t *testing.T) {
	jsonFile := filepath.Join(t.TempDir(), "txn.json")
	code, out, errOut := sluice(t, ".", "bench", "txn", "--quick", "--pipeline", "--native", "--app", "gs", "--strategy", "tstream",
		"--workers", "1,2", "--memtable-size", "1048576", "--json", jsonFile)
	if code != 0 {
		t.Fatalf("sluice bench txn exited %d\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
	for _, want := range []string{"Through a pipeline", "memtable 1 MiB", "pipeline / in memory", "pipeline (Pebble commits) over in-memory rate"} {
		if !strings.Contains(out, want) {
			t.Errorf("the output lacks %q:\n%s", want, out)
		}
	}
	b, err := os.ReadFile(jsonFile)
	if err != nil {
		t.Fatal(err)
	}
	var rep bench.TxnReport
	if err := json.Unmarshal(b, &rep); err != nil {
		t.Fatalf("the JSON report does not parse: %v\n%s", err, b)
	}
	if len(rep.Pipeline) != 2 {
		t.Fatalf("%d pipeline runs, want 2 (1 and 2 workers)", len(rep.Pipeline))
	}
	for _, p := range rep.Pipeline {
		if p.Rate <= 0 || p.Ratio <= 0 || p.StateHash != rep.StateHash || p.Committed+p.Aborted != uint64(rep.Events) || p.MemTableSize != 1<<20 || p.Commits != p.Batches {
			t.Errorf("pipeline run %+v (oracle state %s, %d events)", p, rep.StateHash, rep.Events)
		}
	}

	// With an hour's commit interval the full batches are committed
	// together, at the end, and the state read back is still the oracle's.
	code, out, errOut = sluice(t, ".", "bench", "txn", "--quick", "--pipeline", "--native", "--app", "gs", "--strategy", "tstream",
		"--commit-interval", "1h", "--json", jsonFile)
	if code != 0 {
		t.Fatalf("sluice bench txn --commit-interval 1h exited %d\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
	if want := "committed at most every 1h0m0s while batches come full"; !strings.Contains(out, want) {
		t.Errorf("the output lacks %q:\n%s", want, out)
	}
	if b, err = os.ReadFile(jsonFile); err != nil {
		t.Fatal(err)
	}
	rep = bench.TxnReport{}
	if err := json.Unmarshal(b, &rep); err != nil {
		t.Fatalf("the JSON report does not parse: %v\n%s", err, b)
	}
	for _, p := range rep.Pipeline {
		if p.StateHash != rep.StateHash || p.CommitInterval != "1h0m0s" || p.Batches < 2 || p.Commits >= p.Batches {
			t.Errorf("pipeline run %+v: want the oracle's state (%s), commits fewer than batches", p, rep.StateHash)
		}
	}
}

// TestBenchTxnBadFlags checks that a wrong application, strategy, knob or
// value fails at once (before any build) with a usage error naming it.
func TestBenchTxnBadFlags(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--app", "zz"}, `--app "zz"`},
		{[]string{"--strategy", "serial,fastest"}, `--strategy "fastest"`},
		{[]string{"--frobnicate", "3"}, "--frobnicate"},
		{[]string{"--skew", "steep"}, `--skew "steep"`},
		{[]string{"--app", "gs", "--deposit-ratio", "0.5"}, "--deposit-ratio: the gs application does not read"},
		{[]string{"--workers", "0"}, `--workers "0"`},
		{[]string{"--native=maybe"}, `--native "maybe"`},
		{[]string{"--punctuation", "0"}, "--punctuation 0"},
		{[]string{"--keys", "100,1"}, `--keys "1"`},
		{[]string{"--keys", "100,100"}, "100 given twice"},
		{[]string{"--keys", "100,200", "--key-sweep"}, "--key-sweep: give either"},
		{[]string{"--keys", "2000000", "--key-sweep"}, "--key-sweep: 100 times 2000000"},
		{[]string{"--key-sweep", "--dynamic", "morphstream"}, "--dynamic runs one worker count, one logic and one key space"},
		{[]string{"--pipeline", "--dynamic", "morphstream"}, "--pipeline runs a static workload"},
		{[]string{"--pipeline", "--key-sweep"}, "--pipeline runs a static workload"},
		{[]string{"--memtable-size", "67108864"}, "--memtable-size: only with --pipeline"},
		{[]string{"--pipeline", "--memtable-size", "10"}, "--memtable-size 10"},
		{[]string{"--commit-interval", "1s"}, "--commit-interval: only with --pipeline"},
		{[]string{"--pipeline", "--commit-interval", "-1s"}, "--commit-interval -1s"},
	} {
		code, _, errOut := sluice(t, ".", append([]string{"bench", "txn", "--quick"}, c.args...)...)
		if code != 2 || !strings.Contains(errOut, c.want) || strings.Contains(errOut, "building") {
			t.Errorf("sluice bench txn %v: exit %d, stderr %q; want 2 and a message naming %s", c.args, code, errOut, c.want)
		}
	}
}
