package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/host/api/schema"
	"github.com/sluicehq/sluice/host/cluster"
)

// TestClusterHost: cluster host release puts a live active host into the
// pool and activate takes it out, each a recorded pool change by "cli";
// status shows the pool; a release of the last active host, an
// activation of a host not in the pool and a move to a pool host are
// refused with nothing written; rebalance leaves pool hosts out. No host
// runs: the commands only change the buckets.
func TestClusterHost(t *testing.T) {
	ctx := testContext(t)
	tc := startTestCluster(t, ctx) // h1 and h2 live, h3 gone
	tc.set(t, ctx, cluster.Spread(clusterGroups, []string{"h1"}))
	pool := func() (*cluster.Assignment, []string) {
		a, err := tc.admin.Assignment(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return a, a.PoolHosts()
	}

	out, _, err := sluiceIn(ctx, "cluster", "host", "release", "-c", tc.file, "h2")
	if err != nil || !strings.Contains(out, "host h2: in the pool (pool epoch 1") {
		t.Fatalf("release h2: %v, %q", err, out)
	}
	if _, hs := pool(); len(hs) != 1 || hs[0] != "h2" {
		t.Fatalf("pool after release h2: %v", hs)
	}
	_, _, err = sluiceIn(ctx, "cluster", "host", "release", "-c", tc.file, "h1")
	if err == nil || !strings.Contains(err.Error(), "no other live active host") {
		t.Errorf("release of the last active host: %v", err)
	}
	_, _, err = sluiceIn(ctx, "cluster", "host", "activate", "-c", tc.file, "h1")
	if err == nil || !strings.Contains(err.Error(), "not in the pool") {
		t.Errorf("activate of an active host: %v", err)
	}
	_, _, err = sluiceIn(ctx, "cluster", "host", "activate", "-c", tc.file, "h9")
	if err == nil || !strings.Contains(err.Error(), `"h9" has never joined`) {
		t.Errorf("activate of an unknown host: %v", err)
	}
	_, _, err = sluiceIn(ctx, "cluster", "move", "-c", tc.file, "--groups", "0", "--to", "h2")
	if err == nil || !strings.Contains(err.Error(), "h2 is a pool host") {
		t.Errorf("move to a pool host: %v", err)
	}
	out, _, err = sluiceIn(ctx, "cluster", "rebalance", "-c", tc.file)
	if err != nil || !strings.Contains(out, "nothing to migrate") {
		t.Errorf("rebalance with h2 pooled: %v, %q: want nothing to migrate", err, out)
	}

	out, _, err = sluiceIn(ctx, "cluster", "status", "-c", tc.file, "--json")
	if err != nil {
		t.Fatal(err)
	}
	var st schema.ClusterStatus
	if err := json.Unmarshal([]byte(out), &st); err != nil {
		t.Fatal(err)
	}
	for _, h := range st.Hosts {
		if h.Pool != (h.ID == "h2") {
			t.Errorf("status: host %s pool %v", h.ID, h.Pool)
		}
	}
	if st.PoolEpoch != 1 || !strings.Contains(st.PoolLast, "pool h2 by cli") {
		t.Errorf("status: pool epoch %d, last %q", st.PoolEpoch, st.PoolLast)
	}
	out, _, err = sluiceIn(ctx, "cluster", "status", "-c", tc.file)
	if err != nil || !strings.Contains(out, "POOL") || !strings.Contains(out, "pool: epoch 1, last change: pool h2 by cli") {
		t.Errorf("status text: %v\n%s", err, out)
	}

	out, _, err = sluiceIn(ctx, "cluster", "host", "activate", "-c", tc.file, "h2")
	if err != nil || !strings.Contains(out, "host h2: in service (pool epoch 2") {
		t.Fatalf("activate h2: %v, %q", err, out)
	}
	if a, hs := pool(); len(hs) != 0 || a.Pool.Last.By != "cli" || a.Pool.Last.Action != cluster.PoolActionActivate {
		t.Errorf("pool after activate h2: %v, last %+v", hs, a.Pool.Last)
	}
}

// TestActionTextHost: a hosts decision's action names its host.
func TestActionTextHost(t *testing.T) {
	for _, c := range []struct {
		a    schema.Action
		want string
	}{
		{schema.Action{Kind: "activate-host", Host: "p1"}, "activate-host p1"},
		{schema.Action{Kind: "release-host", Host: "h2"}, "release-host h2"},
		{schema.Action{Kind: "request-host"}, "request-host"},
	} {
		if got := actionText(c.a); got != c.want {
			t.Errorf("actionText(%+v) = %q, want %q", c.a, got, c.want)
		}
	}
}
