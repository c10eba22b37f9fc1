package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/host/api/schema"
	"github.com/sluicehq/sluice/host/cluster"
)

// scale runs sluice cluster scale --wait on the operator count, and
// returns its output.
func (s *spread) scale(args ...string) string {
	t := s.t
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	args = append([]string{"cluster", "scale", "-c", s.file, "--operator", "count", "--wait"}, args...)
	out, err := exec.CommandContext(ctx, sluiceBin, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("sluice %s: %v\n%s\n%s", strings.Join(args, " "), err, out, s.logs())
	}
	return string(out)
}

// runsWorkers checks, by sluice cluster status --json, that the workers
// record gives the operator count n workers on every host, and that each
// host of ids is live and reports it runs n.
func (s *spread) runsWorkers(st schema.ClusterStatus, n int, ids ...string) {
	t := s.t
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
	s := startSpread(t, 2, 9000, 50, 2*time.Second, "")
	s.start("h1")
	s.wait("h1's first outputs", func() bool { return s.outputs() > 0 })
	s.start("h2")
	s.wait("the groups spread over two hosts", func() bool { return s.owned("h1") == 8 && s.owned("h2") == 8 && s.settled() })
	t.Logf("%v: spread over two hosts, %d of %d records counted; scaling to 1", time.Since(t0).Round(time.Second), s.outputs(), s.count)

	out := s.scale("1")
	if !strings.Contains(out, "operator count: 1 workers on every host") || !strings.Contains(out, "every live host runs the recorded count of operator count") {
		t.Fatalf("sluice cluster scale 1 printed:\n%s", out)
	}
	s.runsWorkers(s.status(), 1, "h1", "h2")
	t.Logf("%v: every host runs 1 worker, %d records counted; scaling to 3", time.Since(t0).Round(time.Second), s.outputs())

	t.Logf("sluice cluster scale 3 printed:\n%s", s.scale("3"))
	st := s.status()
	s.runsWorkers(st, 3, "h1", "h2")
	if st.Workers.Epoch != 2 {
		t.Errorf("workers epoch %d after two scales, want 2", st.Workers.Epoch)
	}
	t.Logf("%v: every host runs 3 workers, %d records counted", time.Since(t0).Round(time.Second), s.outputs())

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
		out, err := exec.Command(sluiceBin, append([]string{"cluster", "scale", "-c", s.file}, c.args...)...).CombinedOutput()
		if err == nil || !strings.Contains(string(out), c.want) {
			t.Errorf("sluice cluster scale %s: %v, want a refusal saying %q:\n%s", strings.Join(c.args, " "), err, c.want, out)
		}
	}
	if st := s.status(); st.Workers == nil || st.Workers.Epoch != 2 {
		t.Errorf("refused scales were recorded: workers %+v", st.Workers)
	}
	// A record edited by hand to name an operator the pipeline lacks is
	// refused by every host, which applies nothing; the person removes it.
	if _, err := s.c.Update(context.Background(), func(a *cluster.Assignment) error { return a.SetWorkers("nope", "", 2, "by hand", time.Now()) }); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"h1", "h2"} {
		s.wait(id+" refusing the record edited by hand", func() bool {
			log, err := os.ReadFile(filepath.Join(s.dir, id+".log"))
			return err == nil && strings.Contains(string(log), "workers record (epoch 3) is refused, nothing applied")
		})
	}
	if _, err := s.c.Update(context.Background(), func(a *cluster.Assignment) error { delete(a.Workers.Operators, "nope"); return nil }); err != nil {
		t.Fatal(err)
	}
	s.runsWorkers(s.status(), 3, "h1", "h2")

	// A host that starts now starts with the recorded count.
	s.start("h3")
	s.wait("h3 live and reporting the recorded count", func() bool {
		rs, err := s.c.Reports(context.Background())
		return err == nil && s.leased("h3") && rs["h3"].Workers["count"] == 3
	})
	if log, err := os.ReadFile(filepath.Join(s.dir, "h3.log")); err != nil ||
		!strings.Contains(string(log), `"msg":"starting with the worker count the cluster records, not the pipeline file's","pipeline":"spread","operator":"count","workers":3,"file":2`) {
		t.Errorf("h3 did not start with the count the cluster records (%v):\n%s", err, log)
	}
	s.wait("every record counted", func() bool { return s.outputs() >= s.count })
	t.Logf("%v: every record counted", time.Since(t0).Round(time.Second))
	s.runsWorkers(s.status(), 3, "h1", "h2", "h3")
	s.check()
	s.stop("h3")
	s.stop("h2")
	s.stop("h1")
}

// TestClusterStatusWorkersText checks the text of the workers part of
// sluice cluster status.
func TestClusterStatusWorkersText(t *testing.T) {
	st := &schema.ClusterStatus{
		Hosts: []schema.ClusterHost{
			{ID: "h1", Live: true, Workers: map[string]int{"count": 3}},
			{ID: "h2", Live: true, Workers: map[string]int{"count": 2}},
			{ID: "h3"},
		},
		Workers: &schema.ClusterWorkers{Epoch: 4, Scaled: []string{"h1"}, Pending: []string{"h2"},
			Operators: []schema.ClusterOperatorWorkers{{Operator: "count", Count: 3, Hosts: map[string]int{"h3": 1}, Epoch: 4, By: "cli"}}},
	}
	var b strings.Builder
	if err := printWorkers(&b, st); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"workers: epoch 4, scale in progress: scaled h1; not yet h2",
		"count     3        h3 1        4      cli",
		"h1    count     3     3",
		"h2    count     2     3",
	} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("the status does not hold %q:\n%s", want, b.String())
		}
	}
	if strings.Contains(b.String(), "h3    count") {
		t.Errorf("the status shows host h3, which is not live:\n%s", b.String())
	}
	b.Reset()
	if err := printWorkers(&b, &schema.ClusterStatus{}); err != nil || !strings.Contains(b.String(), "workers: the pipeline file's (no scale recorded)") {
		t.Errorf("no record: %v\n%s", err, b.String())
	}
}
