package reconfig

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/sluicehq/sluice/cmd/sluice/internal/sluicetest"
	"github.com/sluicehq/sluice/connectors/natsconn/natstest"
	"github.com/sluicehq/sluice/host/registry"
)

// TestClusterRefusesAnotherPipelineFile starts a host, then one whose
// pipeline file differs from the cluster's: the second is refused, with
// the line that differs, and the first keeps running.
func TestClusterRefusesAnotherPipelineFile(t *testing.T) {
	if testing.Short() {
		t.Skip("starts two NATS servers")
	}
	s := sluicetest.StartSpread(t, sl, 2, 100000, 10, 2*time.Second, "")
	s.Start("h1")
	s.Wait("h1 owns every group", func() bool { return s.Owned("h1") == 16 })
	other := filepath.Join(s.Dir, "other.yaml")
	if err := os.WriteFile(other, []byte(strings.Replace(s.Text, "batch: {size: 20}", "batch: {size: 21}", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(sl.Bin, "run", "-c", other, "--host-id", "h2", "--data-dir", filepath.Join(s.Dir, "h2")).CombinedOutput()
	if err == nil {
		t.Fatalf("a host with another pipeline file was let in:\n%s", out)
	}
	for _, want := range []string{"line 6", "batch: {size: 20}", "batch: {size: 21}"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("the refusal does not say %q:\n%s", want, out)
		}
	}
	if s.Hosts["h1"].ProcessState != nil {
		t.Fatalf("h1 stopped:\n%s", s.Logs())
	}
	s.Stop("h1")
}

// TestClusterNemesis runs a pipeline on three hosts over three NATS
// servers (each a process of its own, the streams and buckets replicated
// on all three) while a random schedule of faults hits them: hosts killed
// with SIGKILL, stopped with SIGTERM (they hand their groups over),
// started again on their data directories, a NATS server killed with
// SIGKILL and started again on its storage, key groups moved to a random
// host with `sluice cluster move` (which may be refused while another
// migration runs), and the operator's plugin swapped on every host, or
// rolled back, through a random host with `sluice plugin swap` and
// `rollback` (refused while a migration runs), racing the migrations the
// other faults start. At least one host and two servers run throughout.
// At the end every host and server runs again, every host runs the module
// the cluster records, and every record must have been counted exactly
// once: the output stream holds, for each key, the counts 1 to n once
// each. The schedule is drawn from a seed the test logs;
// SLUICE_NEMESIS_SEED repeats it, SLUICE_NEMESIS_STEPS sets its length
// (default 8).
func TestClusterNemesis(t *testing.T) {
	if testing.Short() {
		t.Skip("starts three NATS server processes and three hosts")
	}
	steps := 8
	if v := os.Getenv("SLUICE_NEMESIS_STEPS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			t.Fatalf("SLUICE_NEMESIS_STEPS: %q is not a count", v)
		}
		steps = n
	}
	// The lease outlasts the elections of new stream and bucket leaders
	// that follow a server's loss (seconds on a loaded machine).
	// 4,500 records at 150 a second, so that records are still arriving
	// while the schedule's faults play out (at 600 a second most were
	// counted before its later steps).
	s := sluicetest.StartSpreadRate(t, sl, natstest.StartClusterProcesses(t, 3), 4500, 50, 150, 15*time.Second, ", replicas: 3")
	if _, err := s.JS.CreateStream(context.Background(), jetstream.StreamConfig{Name: "OUT", Subjects: []string{"out"}, Replicas: 3, Duplicates: 2 * time.Minute}); err != nil {
		t.Fatal(err)
	}
	// The modules a swap picks from: wordcountv2, and the same code under
	// another hash. Both mark their outputs "v2:", which check accepts.
	v2 := filepath.Join(sl.Plugins, "wordcountv2.wasm")
	code, err := os.ReadFile(v2)
	if err != nil {
		t.Fatal(err)
	}
	code3, err := registry.AppendVersion(code, "3")
	if err != nil {
		t.Fatal(err)
	}
	v3 := filepath.Join(s.Dir, "wordcountv3.wasm")
	if err := os.WriteFile(v3, code3, 0o644); err != nil {
		t.Fatal(err)
	}
	ids := []string{"h1", "h2", "h3"}
	nem := s.NewNemesis(ids...)
	s.Wait("the first outputs", func() bool { return s.Outputs() > 0 })
	own := map[string]func(step int){
		"move": func(step int) {
			to := nem.Pick(true)
			var groups []string
			for range 1 + nem.Rand.IntN(4) {
				groups = append(groups, strconv.Itoa(nem.Rand.IntN(16)))
			}
			slices.Sort(groups)
			groups = slices.Compact(groups)
			out, err := exec.Command(sl.Bin, "cluster", "move", "-c", s.File, "--groups", strings.Join(groups, ","), "--to", to, "--batch", strconv.Itoa(nem.Rand.IntN(3))).CombinedOutput()
			t.Logf("step %d: move %v to %s: %v %s", step, groups, to, err, strings.TrimSpace(string(out)))
		},
		"swap": func(step int) {
			through := nem.Pick(true)
			args := []string{"plugin", "rollback", "--data-dir", filepath.Join(s.Dir, through), "--operator", "count"}
			if n := nem.Rand.IntN(3); n < 2 {
				args = []string{"plugin", "swap", "--data-dir", filepath.Join(s.Dir, through), "--operator", "count", []string{v2, v3}[n]}
			}
			out, err := exec.Command(sl.Bin, args...).CombinedOutput()
			t.Logf("step %d: %s %s through %s: %v %s", step, args[1], args[len(args)-1], through, err, strings.TrimSpace(string(out)))
		},
	}
	for step := range steps {
		before := s.Outputs()
		nem.Step(step, own, func() bool { n := s.Outputs(); return n > before || n >= s.Count })
	}
	nem.Heal()
	s.Wait("every record counted", func() bool { return s.Outputs() >= s.Count })
	s.Check()
	s.Wait("every host running the module the cluster records", func() bool {
		if !s.Open() {
			return false
		}
		a, err := s.Cluster.Assignment(context.Background())
		if err != nil {
			return false
		}
		if a.Versions == nil {
			return true // no swap recorded: every host runs the file's
		}
		return runs(s, a.Versions.Operators["count"].SHA256, ids...)
	})
	s.Stop(ids...)
}
