package reconfig

import (
	"context"
	"os/exec"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sluicehq/sluice/cmd/sluice/internal/sluicetest"
	"github.com/sluicehq/sluice/connectors/natsconn/natstest"
	"github.com/sluicehq/sluice/host/cluster"
	"github.com/sluicehq/sluice/host/migrate"
)

// stagedWordCount is Spread's word count cut into two stages: upper (a
// map) runs on the hosts that own the source's key groups, count on the
// hosts that own stage count's, and records cross from one to the other
// through stage count's partition stream.
const stagedWordCount = `
name: spread
nats: {url: "NATSURL"}
http: {addr: "127.0.0.1:0"}
state: {key_groups: 16}
batch: {size: 20}
cluster: {lease: 2s, checkpoint_every: 500ms, duplicates: 2m, stages: [count]}
sources:
  - {name: gen, type: generator, mode: sequence, keys: 50, count: 9000, rate: 600}
operators:
  - {name: upper, plugin: PLUGINS/upper.wasm, kind: map}
  - {name: count, plugin: PLUGINS/wordcount.wasm, kind: keyed, parallelism: 2, state: [counts]}
sinks:
  - {name: out, type: jetstream, subject: out, stream: OUT, create: true}
`

// TestClusterPlaceOperator places operator count of a pipeline cut into
// two stages on host h2 while it runs (sluice cluster place): stage
// count's key groups all go to h2 and stay there when h3 joins and when
// h1 is killed with SIGKILL (its groups of the first stage replayed by
// the survivors, the outputs made again dropped by id), while the first
// stage's groups are spread over the live hosts; a rebalance of the stage
// then forgets the placement. Every record is counted once.
func TestClusterPlaceOperator(t *testing.T) {
	if testing.Short() {
		t.Skip("starts two NATS servers and three hosts")
	}
	ctx := context.Background()
	s := sluicetest.StartSpreadText(t, sl, natstest.StartCluster(t, 2), stagedWordCount, 2*time.Second)
	s.Count, s.Keys = 9000, 50
	var stage *cluster.Cluster // stage count's cluster, once a host made it
	table := func() *cluster.Assignment {
		if stage == nil {
			if !s.Open() {
				return nil
			}
			c, err := cluster.Open(ctx, s.JS, cluster.Config{Pipeline: "spread-count", Text: []byte(s.Text), KeyGroups: sluicetest.SpreadGroups, Lease: s.Lease})
			if err != nil {
				return nil
			}
			stage = c
		}
		a, err := stage.Assignment(ctx)
		if err != nil {
			return nil
		}
		return a
	}
	stageOwned := func(id string) int {
		if a := table(); a != nil && a.Migration == nil {
			return len(migrate.Owned(a, id))
		}
		return -1
	}
	sluiceCmd := func(args ...string) string {
		t.Helper()
		out, err := exec.Command(sl.Bin, append(args, "-c", s.File)...).CombinedOutput()
		if err != nil {
			t.Fatalf("sluice %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return string(out)
	}

	s.Start("h1")
	s.Start("h2")
	s.Wait("both stages spread over two hosts", func() bool {
		return s.Owned("h1") == 8 && s.Owned("h2") == 8 && s.Settled() && stageOwned("h1") == 8 && stageOwned("h2") == 8
	})
	s.Wait("some records counted", func() bool { return s.Outputs() > s.Count/5 })

	out := sluiceCmd("cluster", "place", "--operator", "count", "--to", "h2", "--wait")
	if !strings.Contains(out, " h1 -> h2") || !strings.Contains(out, "operator count (pipeline spread-count) is placed on host h2") {
		t.Errorf("sluice cluster place said:\n%s", out)
	}
	if a := table(); a == nil || a.Placed != "h2" || len(migrate.Owned(a, "h2")) != 16 || a.Migration != nil {
		t.Fatalf("stage count after the placement: %+v", a)
	}
	if s.Owned("h1") != 8 {
		t.Errorf("the placement of count moved the first stage's groups: h1 owns %d", s.Owned("h1"))
	}

	// A host that joins takes a share of the first stage, and none of the
	// placed stage: the rebalances keep it on h2.
	s.Start("h3")
	s.Wait("the first stage spread over three hosts", func() bool { return s.Owned("h3") > 0 && s.Settled() })
	s.Wait("h3 in stage count", func() bool {
		ms, err := stage.Members(ctx)
		return err == nil && slices.ContainsFunc(ms, func(m cluster.HostInfo) bool { return m.ID == "h3" })
	})
	if a := table(); a == nil || a.Placed != "h2" || len(migrate.Owned(a, "h2")) != 16 {
		t.Errorf("stage count after h3 joined: %+v, want every group on h2, placed", a)
	}

	// h1, which runs a share of the first stage, fails: the survivors
	// replay its groups from their checkpoints, and the outputs it made
	// again to stage count's partition stream are dropped there by id.
	if err := s.Hosts["h1"].Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = s.Hosts["h1"].Wait()
	s.Wait("h1's groups of the first stage taken by the others", func() bool { return s.Owned("h2")+s.Owned("h3") == 16 && s.Settled() })
	s.Wait("every record counted", func() bool { return s.Outputs() >= s.Count })
	if a := table(); a == nil || a.Placed != "h2" || len(migrate.Owned(a, "h2")) != 16 {
		t.Errorf("stage count after h1 failed: %+v, want every group on h2, placed", a)
	}
	if out := sluiceCmd("cluster", "status", "--stage", "count"); !strings.Contains(out, "stage count (2 of 2)") ||
		!strings.Contains(out, "placed: every key group was placed on host h2") {
		t.Errorf("sluice cluster status --stage count said:\n%s", out)
	}

	// A rebalance of the stage forgets the placement.
	sluiceCmd("cluster", "rebalance", "--stage", "count", "--wait")
	if a := table(); a == nil || a.Placed != "" || len(migrate.Owned(a, "h2")) != 8 || len(migrate.Owned(a, "h3")) != 8 {
		t.Errorf("stage count after a rebalance: %+v, want it spread over h2 and h3 and not placed", a)
	}
	s.Check()
	s.Stop("h2", "h3")
}
