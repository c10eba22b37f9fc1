package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/host/join"
)

// TestBenchJoinQuick runs `sluice bench join --quick` with every algorithm
// and checks the table (a row per algorithm, auto's choice and ratio), the
// progress on stderr and the JSON report. That a wrong match count fails
// the run is tested in host/join (TestRunBenchFailsOnWrongCount), with a
// broken kernel the binary cannot be given.
func TestBenchJoinQuick(t *testing.T) {
	jsonFile := filepath.Join(t.TempDir(), "join.json")
	code, out, errOut := sluice(t, ".", "bench", "join", "--quick", "--workers", "2", "--json", jsonFile)
	if code != 0 {
		t.Fatalf("sluice bench join exited %d\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
	for _, want := range []string{"Sluice join kernels benchmark", "inputs/s", "p95 latency", "50% at", "auto chose", "results written to"} {
		if !strings.Contains(out, want) {
			t.Errorf("the output lacks %q:\n%s", want, out)
		}
	}
	rows := map[string]bool{}
	for _, line := range strings.Split(out, "\n") {
		if f := strings.Fields(line); len(f) > 5 {
			rows[f[0]] = true
		}
	}
	for _, name := range join.Names() {
		if !rows[name] {
			t.Errorf("no row for %s:\n%s", name, out)
		}
	}
	if !strings.Contains(errOut, "bench join: point 1/1: auto (9/9)") {
		t.Errorf("the progress lacks auto's run:\n%s", errOut)
	}
	b, err := os.ReadFile(jsonFile)
	if err != nil {
		t.Fatal(err)
	}
	var rep join.BenchReport
	if err := json.Unmarshal(b, &rep); err != nil {
		t.Fatalf("the JSON report does not parse: %v\n%s", err, b)
	}
	if len(rep.Points) != 1 || len(rep.Points[0].Results) != len(join.Names()) {
		t.Fatalf("the JSON report has %d points, want 1 with %d results:\n%s", len(rep.Points), len(join.Names()), b)
	}
	for _, res := range rep.Points[0].Results {
		if res.Matches != rep.Points[0].Matches || res.Throughput <= 0 {
			t.Errorf("%s: %+v", res.Algorithm, res)
		}
	}
}

func TestBenchJoinBadFlags(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--algorithm", "hash"}, `--algorithm "hash"`},
		{[]string{"--workload", "tpch"}, `--workload "tpch"`},
		{[]string{"--sweep", "size"}, `--sweep "size"`},
		{[]string{"--objective", "speed"}, `--objective "speed"`},
		{[]string{"--dupe", "0"}, "--dupe 0"},
		{[]string{"--repeat", "0"}, "--repeat 0"},
		{[]string{"--warmup", "-1"}, "--warmup -1"},
	} {
		code, _, errOut := sluice(t, ".", append([]string{"bench", "join", "--quick", "--json", "-"}, c.args...)...)
		if code == 0 || !strings.Contains(errOut, c.want) {
			t.Errorf("sluice bench join %v: exit %d, stderr %q, want a failure naming %s", c.args, code, errOut, c.want)
		}
	}
}
