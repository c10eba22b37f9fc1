package main

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/host/bench"
)

// TestBenchWindow runs a small `sluice bench window` (built-in count only)
// and checks the table, the progress and the JSON report; a wrong count
// fails a round (host/bench checks the windows' counts against the input).
func TestBenchWindow(t *testing.T) {
	jsonFile := filepath.Join(t.TempDir(), "window.json")
	code, out, errOut := sluice(t, ".", "bench", "window", "--no-wasm", "--records", "20000", "--keys", "500", "--size", "10s",
		"--slide", "2s", "--rounds", "1", "--workers", "2", "--json", jsonFile)
	if code != 0 {
		t.Fatalf("sluice bench window exited %d\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
	for _, want := range []string{"windowed count per key: 20000 records over 500 keys", "records/s", "built-in", "tumbling", "sliding", "results written to"} {
		if !strings.Contains(out, want) {
			t.Errorf("the output lacks %q:\n%s", want, out)
		}
	}
	if !strings.Contains(errOut, "bench: window: round 1/1: built-in count per key, sliding windows") {
		t.Errorf("the progress lacks the sliding round:\n%s", errOut)
	}
	b, err := os.ReadFile(jsonFile)
	if err != nil {
		t.Fatal(err)
	}
	var rep bench.WindowReport
	if err := json.Unmarshal(b, &rep); err != nil {
		t.Fatalf("the JSON report does not parse: %v\n%s", err, b)
	}
	if len(rep.Cases) != 2 || rep.Cases[0].Rate <= 0 || rep.Cases[1].SlidingCost <= 0 || rep.Cases[1].Outputs <= rep.Cases[0].Outputs {
		t.Fatalf("the JSON report's cases: %+v", rep.Cases)
	}
	tum, sl := rep.Cases[0], rep.Cases[1]
	if want := sl.SlidingCost * float64(tum.Outputs) / float64(sl.Outputs); math.Abs(sl.SlidingCostPerOutput-want) > 1e-9*want {
		t.Errorf("sliding cost per output %v, want %v (the cost per record times the outputs' ratio)", sl.SlidingCostPerOutput, want)
	}
	if code, _, errOut := sluice(t, ".", "bench", "window", "--size", "10s", "--slide", "3s"); code != 2 || !strings.Contains(errOut, "a multiple of the slide") {
		t.Errorf("--size 10s --slide 3s: exit %d, %s", code, errOut)
	}
	if code, _, errOut := sluice(t, ".", "bench", "window", "--commit-interval", "-1s"); code != 2 || !strings.Contains(errOut, "--commit-interval -1s") {
		t.Errorf("--commit-interval -1s: exit %d, %s", code, errOut)
	}
	// Commits deferred: the counts still add up (the command checks them).
	code, out, errOut = sluice(t, ".", "bench", "window", "--no-wasm", "--records", "20000", "--keys", "500", "--size", "10s",
		"--slide", "2s", "--rounds", "1", "--workers", "2", "--commit-interval", "1h", "--json", jsonFile)
	if code != 0 {
		t.Fatalf("sluice bench window --commit-interval 1h exited %d\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
	if want := "committed at most every 1h0m0s while batches come full"; !strings.Contains(out, want) {
		t.Errorf("the output lacks %q:\n%s", want, out)
	}
}
