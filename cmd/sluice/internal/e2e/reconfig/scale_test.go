package reconfig

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/cmd/sluice/internal/sluicetest"
	"github.com/sluicehq/sluice/host/api/schema"
	"github.com/sluicehq/sluice/host/cluster"
)

// scale runs sluice cluster scale --wait on the operator count, and
// returns its output.
func scale(t *testing.T, s *sluicetest.Spread, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	args = append([]string{"cluster", "scale", "-c", s.File, "--operator", "count", "--wait"}, args...)
	out, err := exec.CommandContext(ctx, sl.Bin, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("sluice %s: %v\n%s\n%s", strings.Join(args, " "), err, out, s.Logs())
	}
	return string(out)
}

// runsWorkers checks, by sluice cluster status --json, that the workers
// record gives the operator count n workers on every host, and that each
// host of ids is live and reports it runs n.
func runsWorkers(t *testing.T, s *sluicetest.Spread, st schema.ClusterStatus, n int, ids ...string) {
	t.Helper()
	w := st.Workers
	if w == nil || len(w.Operators) != 1 || w.Operators[0].Operator != "count" || w.Operators[0].Count != n || w.Operators[0].By != "cli" || len(w.Pending) != 0 {
		t.Fatalf("cluster status: workers %+v, want count %d on every host, none pending", w, n)
	}
	running := map[string]int{}
	for _, h := range st.Hosts {
		if h.Live {
			running[h.ID] = h.Workers["count"]
		}
	}
	for _, id := range ids {
		if running[id] != n {
			t.Errorf("cluster status: host %s runs %d workers of count (live hosts: %v), want %d", id, running[id], running, n)
		}
	}
}

// TestClusterScaleEveryHost runs wordcount (keyed, parallelism 2 in the
// file) on two hosts and scales it with sluice cluster scale --wait to 1
// and then 3 workers while records flow: each time every host runs the
// new count (sluice cluster status says so). A scale the pipeline cannot
// take is refused and recorded nowhere; a record edited by hand to name
// an operator the pipeline lacks is refused by every host. A host started
// after the scales starts with the recorded 3, not the file's 2. Every
// record is counted exactly once.
func TestClusterScaleEveryHost(t *testing.T) {
	if testing.Short() {
		t.Skip("starts two NATS servers and three hosts")
	}
	t0 := time.Now()
	s := sluicetest.StartSpread(t, sl, 2, 9000, 50, 2*time.Second, "")
	s.Start("h1")
	s.Wait("h1's first outputs", func() bool { return s.Outputs() > 0 })
	s.Start("h2")
	s.Wait("the groups spread over two hosts", func() bool { return s.Owned("h1") == 8 && s.Owned("h2") == 8 && s.Settled() })
	t.Logf("%v: spread over two hosts, %d of %d records counted; scaling to 1", time.Since(t0).Round(time.Second), s.Outputs(), s.Count)

	out := scale(t, s, "1")
	if !strings.Contains(out, "operator count: 1 workers on every host") || !strings.Contains(out, "every live host runs the recorded count of operator count") {
		t.Fatalf("sluice cluster scale 1 printed:\n%s", out)
	}
	runsWorkers(t, s, status(t, s), 1, "h1", "h2")
	t.Logf("%v: every host runs 1 worker, %d records counted; scaling to 3", time.Since(t0).Round(time.Second), s.Outputs())

	t.Logf("sluice cluster scale 3 printed:\n%s", scale(t, s, "3"))
	st := status(t, s)
	runsWorkers(t, s, st, 3, "h1", "h2")
	if st.Workers.Epoch != 2 {
		t.Errorf("workers epoch %d after two scales, want 2", st.Workers.Epoch)
	}
	t.Logf("%v: every host runs 3 workers, %d records counted", time.Since(t0).Round(time.Second), s.Outputs())

	// Refused, with nothing recorded: an operator the pipeline lacks, a
	// count out of range.
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--operator", "counts", "2"}, `operator "counts": the pipeline has no such operator (operators: count)`},
		{[]string{"--operator", "count", "70000"}, `operator "count": 70000 workers: want 1 to 65536`},
		{[]string{"--operator", "count", "--host", "h9", "2"}, `--host h9: host "h9" has never joined the cluster (hosts: h1, h2)`},
	} {
		out, err := exec.Command(sl.Bin, append([]string{"cluster", "scale", "-c", s.File}, c.args...)...).CombinedOutput()
		if err == nil || !strings.Contains(string(out), c.want) {
			t.Errorf("sluice cluster scale %s: %v, want a refusal saying %q:\n%s", strings.Join(c.args, " "), err, c.want, out)
		}
	}
	if st := status(t, s); st.Workers == nil || st.Workers.Epoch != 2 {
		t.Errorf("refused scales were recorded: workers %+v", st.Workers)
	}
	// A record edited by hand to name an operator the pipeline lacks is
	// refused by every host, which applies nothing; the person removes it.
	if _, err := s.Cluster.Update(context.Background(), func(a *cluster.Assignment) error { return a.SetWorkers("nope", "", 2, "by hand", time.Now()) }); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"h1", "h2"} {
		s.Wait(id+" refusing the record edited by hand", func() bool {
			log, err := os.ReadFile(filepath.Join(s.Dir, id+".log"))
			return err == nil && strings.Contains(string(log), "workers record (epoch 3) is refused, nothing applied")
		})
	}
	if _, err := s.Cluster.Update(context.Background(), func(a *cluster.Assignment) error { delete(a.Workers.Operators, "nope"); return nil }); err != nil {
		t.Fatal(err)
	}
	runsWorkers(t, s, status(t, s), 3, "h1", "h2")

	// A host that starts now starts with the recorded count.
	s.Start("h3")
	s.Wait("h3 live and reporting the recorded count", func() bool {
		rs, err := s.Cluster.Reports(context.Background())
		return err == nil && s.Leased("h3") && rs["h3"].Workers["count"] == 3
	})
	if log, err := os.ReadFile(filepath.Join(s.Dir, "h3.log")); err != nil ||
		!strings.Contains(string(log), `"msg":"starting with the worker count the cluster records, not the pipeline file's","pipeline":"spread","operator":"count","workers":3,"file":2`) {
		t.Errorf("h3 did not start with the count the cluster records (%v):\n%s", err, log)
	}
	s.Wait("every record counted", func() bool { return s.Outputs() >= s.Count })
	t.Logf("%v: every record counted", time.Since(t0).Round(time.Second))
	runsWorkers(t, s, status(t, s), 3, "h1", "h2", "h3")
	s.Check()
	s.Stop("h3")
	s.Stop("h2")
	s.Stop("h1")
}
