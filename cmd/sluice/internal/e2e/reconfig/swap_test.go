package reconfig

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/cmd/sluice/internal/sluicetest"
	"github.com/sluicehq/sluice/host/api/schema"
	"github.com/sluicehq/sluice/host/cluster"
	"github.com/sluicehq/sluice/host/registry"
)

// swapCount swaps the operator count's plugin to module through host id's
// API (sluice plugin swap), and returns the command's output and error.
func swapCount(s *sluicetest.Spread, id, module string) (string, error) {
	out, err := exec.Command(sl.Bin, "plugin", "swap", "--data-dir", filepath.Join(s.Dir, id), "--operator", "count", module).CombinedOutput()
	return string(out), err
}

// runs reports whether the cluster records module hash for the operator
// count and every host of ids reports it runs it.
func runs(s *sluicetest.Spread, hash string, ids ...string) bool {
	ctx := context.Background()
	if !s.Open() {
		return false
	}
	a, err := s.Cluster.Assignment(ctx)
	if err != nil || a.Versions == nil || a.Versions.Operators["count"].SHA256 != hash {
		return false
	}
	rs, err := s.Cluster.Reports(ctx)
	if err != nil {
		return false
	}
	for _, id := range ids {
		if rs[id].Operators["count"] != hash || !rs[id].Runs(a.Versions) {
			return false
		}
	}
	return true
}

// marks returns, for each key, which of its counts 1 to n were made by
// testdata/wordcountv2 (their output marked "v2:").
func marks(t *testing.T, s *sluicetest.Spread) map[string][]bool {
	t.Helper()
	out := map[string][]bool{}
	for _, o := range s.Read() {
		for len(out[o.Key]) < o.Count {
			out[o.Key] = append(out[o.Key], false)
		}
		out[o.Key][o.Count-1] = o.V2
	}
	return out
}

// checkSwitch checks that every key switched version once: its counts
// made by wordcount come before those made by wordcountv2, and its last
// count is wordcountv2's.
func checkSwitch(t *testing.T, s *sluicetest.Spread) {
	t.Helper()
	for k, ms := range marks(t, s) {
		at := slices.Index(ms, true)
		if at < 0 {
			t.Errorf("key %s: no count made by the module swapped in (%d counts)", k, len(ms))
			continue
		}
		if i := slices.Index(ms[at:], false); i >= 0 {
			t.Errorf("key %s: count %d made by the old module after count %d by the new one", k, at+i+1, at+1)
		}
	}
}

// status runs sluice cluster status --json.
func status(t *testing.T, s *sluicetest.Spread) schema.ClusterStatus {
	t.Helper()
	out, err := exec.Command(sl.Bin, "cluster", "status", "-c", s.File, "--json").Output()
	if err != nil {
		t.Fatalf("sluice cluster status: %v", err)
	}
	var st schema.ClusterStatus
	if err := json.Unmarshal(out, &st); err != nil {
		t.Fatalf("sluice cluster status --json: %v\n%s", err, out)
	}
	return st
}

// TestClusterSwapEveryHost runs wordcount on two hosts and swaps it, through
// one host's API, for wordcountv2, whose outputs are marked: both hosts
// switch (sluice cluster status says which module each runs), every key's
// outputs switch once, from the old module's to the new one's, and every
// record is counted once. Then a third host starts (a rebalance) while the
// plugin is swapped again, through another host: both finish, and every
// host runs the last module (the third loaded the first swap's at start).
// A rollback through the third host returns every host to the module
// before; every record is counted once.
func TestClusterSwapEveryHost(t *testing.T) {
	if testing.Short() {
		t.Skip("starts two NATS servers and three hosts")
	}
	t0 := time.Now()
	s := sluicetest.StartSpread(t, sl, 2, 9000, 50, 2*time.Second, "")
	v2 := filepath.Join(sl.Plugins, "wordcountv2.wasm")
	code, err := os.ReadFile(v2)
	if err != nil {
		t.Fatal(err)
	}
	// The same code under another hash: a version section added.
	v3 := filepath.Join(s.Dir, "wordcountv3.wasm")
	code3, err := registry.AppendVersion(code, "3")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(v3, code3, 0o644); err != nil {
		t.Fatal(err)
	}
	hash2, hash3 := registry.Hash(code), registry.Hash(code3)

	s.Start("h1")
	s.Wait("h1's first outputs", func() bool { return s.Outputs() > 0 })
	s.Start("h2")
	s.Wait("the groups spread over two hosts", func() bool { return s.Owned("h1") == 8 && s.Owned("h2") == 8 && s.Settled() })
	t.Logf("%v: spread over two hosts; swapping through h1", time.Since(t0).Round(time.Second))
	if out, err := swapCount(s, "h1", v2); err != nil {
		t.Fatalf("sluice plugin swap through h1: %v\n%s", err, out)
	}
	s.Wait("both hosts run wordcountv2", func() bool { return runs(s, hash2, "h1", "h2") })
	st := status(t, s)
	if st.Versions == nil || !slices.Equal(st.Versions.Switched, []string{"h1", "h2"}) || len(st.Versions.Pending) != 0 {
		t.Fatalf("cluster status: versions %+v, want h1 and h2 switched, none pending", st.Versions)
	}
	for _, h := range st.Hosts {
		if h.Operators["count"] != hash2 {
			t.Errorf("cluster status: host %s runs %q, want %s", h.ID, h.Operators["count"], hash2)
		}
	}

	// A host joins (the coordinator rebalances) while the plugin is
	// swapped again, through h2. A swap is refused while groups move; it
	// is tried again until it lands.
	t.Logf("%v: both hosts switched; starting h3", time.Since(t0).Round(time.Second))
	s.Start("h3")
	s.Wait("h3 joined and the rebalance begun", func() bool {
		a, err := s.Cluster.Assignment(context.Background())
		return err == nil && (a.Migration != nil || s.Owned("h3") > 0)
	})
	var refusals int
	s.Wait("the swap through h2 recorded", func() bool {
		out, err := swapCount(s, "h2", v3)
		if err != nil {
			if !strings.Contains(out, "migration") {
				t.Fatalf("sluice plugin swap through h2: %v, and not for a migration in progress:\n%s", err, out)
			}
			refusals++
		}
		return err == nil
	})
	t.Logf("the swap was refused %d times while key groups moved", refusals)
	s.Wait("the groups spread over three hosts, every host running the last module", func() bool {
		return s.Owned("h3") >= 5 && s.Settled() && runs(s, hash3, "h1", "h2", "h3")
	})
	t.Logf("%v: three hosts, every one running the last module", time.Since(t0).Round(time.Second))
	// h3 started after the first swap: it loaded the recorded module, not
	// the file's.
	if log, err := os.ReadFile(filepath.Join(s.Dir, "h3.log")); err != nil || !strings.Contains(string(log), `"msg":"loading the module the cluster records, not the pipeline file's","pipeline":"spread","operator":"count"`) {
		t.Errorf("h3 did not start with the module the cluster records (%v):\n%s", err, log)
	}
	// A rollback through h3 returns every host to the module before
	// h3's current one: wordcountv2.
	if out, err := exec.Command(sl.Bin, "plugin", "rollback", "--data-dir", filepath.Join(s.Dir, "h3"), "--operator", "count").CombinedOutput(); err != nil {
		t.Fatalf("sluice plugin rollback through h3: %v\n%s", err, out)
	}
	s.Wait("every host back on wordcountv2", func() bool { return runs(s, hash2, "h1", "h2", "h3") })
	if a, err := s.Cluster.Assignment(context.Background()); err != nil || a.Versions.Operators["count"].Reason != cluster.ReasonRollback {
		t.Fatalf("the record after the rollback: %+v, %v; want a rollback", a, err)
	}
	s.Wait("every record counted", func() bool { return s.Outputs() >= s.Count })
	t.Logf("%v: every record counted", time.Since(t0).Round(time.Second))
	s.Check()
	checkSwitch(t, s)
	// One at a time: each hands its groups to the hosts still running.
	s.Stop("h3")
	s.Stop("h2")
	s.Stop("h1")
}
