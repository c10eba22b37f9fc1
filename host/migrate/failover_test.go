package migrate_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/sluicehq/sluice/abi"
	"github.com/sluicehq/sluice/connectors/natsconn"
	"github.com/sluicehq/sluice/connectors/natsconn/natstest"
	"github.com/sluicehq/sluice/host/cluster"
	"github.com/sluicehq/sluice/host/migrate"
	"github.com/sluicehq/sluice/state"
)

// lease is the tests' short lease, so that a killed host's expires soon.
const lease = 1500 * time.Millisecond

// setup starts a NATS server and the partitioned input stream's sink.
func setup(t *testing.T, ctx context.Context) (*nats.Conn, jetstream.JetStream, *natsconn.JetStreamSink) {
	t.Helper()
	srv := natstest.StartServer(t)
	nc, err := nats.Connect(srv.ClientURL())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	in, err := natsconn.NewJetStreamSink(ctx, nc, natsconn.JetStreamSinkConfig{Subject: "in", Stream: "IN", KeyGroups: groups, KeyGroup: state.KeyGroup,
		CreateStream: &natsconn.StreamSpec{Subjects: []string{"in.*"}}, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = in.Close() })
	return nc, js, in
}

// checkCounts checks that every record of keys has its output, the
// running count of a serial run, and nothing more.
func checkCounts(t *testing.T, out *outputs, keys []string) {
	t.Helper()
	out.mu.Lock()
	defer out.mu.Unlock()
	if out.err != nil {
		t.Fatal(out.err)
	}
	running := map[string]int{}
	for i, k := range keys {
		running[k]++
		r, ok := out.byID[fmt.Sprintf("p/in/%d/0", i+1)]
		if !ok {
			t.Fatalf("no output for record %d (%s)", i+1, k)
		}
		if got, want := string(r.Key)+"="+string(r.Value), k+"="+strconv.Itoa(running[k]); got != want {
			t.Fatalf("output of record %d is %s, want %s", i+1, got, want)
		}
	}
	if n := len(out.byID); n != len(keys) {
		t.Errorf("%d outputs for %d records", n, len(keys))
	}
}

// TestFailoverLosesNothing runs two hosts, host a owning every key group;
// records flow, then host a is killed (its job stopped, its lease left to
// expire) and more records arrive; Failover gives its groups to host b,
// which installs them from their checkpoints (or, never checkpointed,
// from nothing) and replays the input from their floors. Every record is
// counted once, in its key's order, and the outputs a made after its
// checkpoint are made again by b, the same under the same ids.
func TestFailoverLosesNothing(t *testing.T) {
	for _, checkpointed := range []bool{true, false} {
		t.Run(fmt.Sprintf("checkpointed=%v", checkpointed), func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			nc, js, in := setup(t, ctx)
			out := &outputs{byID: map[string]abi.Record{}}
			opts := hostOpts{lease: lease}
			if checkpointed {
				opts.checkpoint = 50 * time.Millisecond
			}
			a := startHost(t, ctx, nc, js, "a", out, true, opts)
			b := startHost(t, ctx, nc, js, "b", out, false, opts)

			keys := make([]string, 400)
			for i := range keys {
				keys[i] = "k" + strconv.Itoa(i*7%23)
			}
			publish(t, ctx, in, keys[:200], 0)
			waitFor(t, func() bool { return out.len() >= 200 })
			if checkpointed {
				waitFor(t, func() bool { // a periodic checkpoint
					infos, err := a.mig.Checkpoints.List(ctx)
					return err == nil && len(infos) > 0
				})
			} else if infos, err := a.mig.Checkpoints.List(ctx); err != nil || len(infos) != 0 {
				t.Fatalf("checkpoints %v (%v), want none", infos, err)
			}
			publish(t, ctx, in, keys[200:300], 200)
			waitFor(t, func() bool { return out.len() >= 300 })
			a.kill()
			publish(t, ctx, in, keys[300:], 300)
			waitFor(t, func() bool {
				ms, err := b.mig.Cluster.Members(ctx)
				return err == nil && len(ms) == 1 && ms[0].ID == "b"
			})
			if _, err := migrate.Failover(ctx, b.mig.Cluster, "a", []string{"b"}, cluster.AllAtOnce()); err != nil {
				t.Fatal(err)
			}
			waitFor(t, func() bool {
				tbl, err := b.mig.Cluster.Assignment(ctx)
				return err == nil && tbl.Migration == nil
			})
			waitFor(t, func() bool { return out.len() >= len(keys) })
			checkCounts(t, out, keys)
			if got := b.job.Groups(); len(got) != groups {
				t.Errorf("host b owns %v, want every group", got)
			}
		})
	}
}

// joinAll opens the cluster of pipeline p once per host of ids and joins
// it as that host; a host's stop ends its lease's renewals.
func joinAll(t *testing.T, ctx context.Context, js jetstream.JetStream, ids ...string) (map[string]*cluster.Cluster, map[string]context.CancelFunc) {
	t.Helper()
	quiet := slog.New(slog.DiscardHandler)
	cs := map[string]*cluster.Cluster{}
	stops := map[string]context.CancelFunc{}
	for _, id := range ids {
		c, err := cluster.Open(ctx, js, cluster.Config{Pipeline: "p", Text: []byte("name: p\n"), KeyGroups: groups, Lease: lease, Logger: quiet})
		if err != nil {
			t.Fatal(err)
		}
		jctx, stop := context.WithCancel(ctx)
		t.Cleanup(stop)
		if err := c.Join(jctx, cluster.HostInfo{ID: id}); err != nil {
			t.Fatal(err)
		}
		cs[id], stops[id] = c, stop
	}
	return cs, stops
}

// TestFailoverOnce calls Failover twice at once, from two hosts, for a
// dead host: exactly one migration starts.
func TestFailoverOnce(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	_, js, _ := setup(t, ctx)
	cs, stops := joinAll(t, ctx, js, "a", "b", "c")
	if _, err := cs["a"].Update(ctx, func(a *cluster.Assignment) error {
		a.Owners = cluster.Spread(groups, []string{"a", "b", "c"})
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := migrate.Failover(ctx, cs["b"], "a", []string{"b", "c"}, cluster.AllAtOnce()); !errors.Is(err, migrate.ErrFailover) {
		t.Errorf("failover of a live host: %v, want ErrFailover", err)
	}
	stops["a"]() // a stops renewing: its lease expires
	waitFor(t, func() bool {
		ms, err := cs["b"].Members(ctx)
		return err == nil && len(ms) == 2
	})
	if _, err := migrate.Failover(ctx, cs["b"], "a", []string{"b", "x"}, cluster.AllAtOnce()); !errors.Is(err, migrate.ErrFailover) {
		t.Errorf("failover to a host with no lease: %v, want ErrFailover", err)
	}
	var wg sync.WaitGroup
	errs := make([]error, 2)
	for i, id := range []string{"b", "c"} {
		wg.Go(func() {
			_, errs[i] = migrate.Failover(ctx, cs[id], "a", []string{"b", "c"}, cluster.AllAtOnce())
		})
	}
	wg.Wait()
	started := 0
	for _, err := range errs {
		switch {
		case err == nil:
			started++
		case !errors.Is(err, cluster.ErrMigration):
			t.Errorf("the other failover: %v, want cluster.ErrMigration", err)
		}
	}
	if started != 1 {
		t.Fatalf("%d failovers started (errors %v), want 1", started, errs)
	}
	tbl, err := cs["b"].Assignment(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// Only a's groups move, shared between b and c.
	to := map[string]int{}
	for _, s := range tbl.Migration.Steps {
		for _, mv := range s.Moves {
			if mv.From != "a" {
				t.Errorf("group %d moves from %s, want only a's groups to move", mv.Group, mv.From)
			}
			to[mv.To]++
		}
	}
	a := 0
	for _, o := range tbl.Owners {
		if o == "a" {
			a++
		}
	}
	if to["b"]+to["c"] != a || to["b"]-to["c"] > 1 || to["c"]-to["b"] > 1 {
		t.Errorf("a's %d groups move %v, want shared evenly by b and c", a, to)
	}
}

// TestCheckpointShipsChangedGroups checks that a checkpoint puts the
// groups changed since the last one, and only those.
func TestCheckpointShipsChangedGroups(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	nc, js, in := setup(t, ctx)
	out := &outputs{byID: map[string]abi.Record{}}
	a := startHost(t, ctx, nc, js, "a", out, true, hostOpts{})
	groupsOf := func(keys []string) []int {
		var gs []int
		for _, k := range keys {
			gs = append(gs, state.KeyGroup([]byte(k), groups))
		}
		slices.Sort(gs)
		return slices.Compact(gs)
	}
	first := []string{"k0", "k1", "k2", "k3", "k4", "k5", "k6", "k7", "k0", "k3"}
	publish(t, ctx, in, first, 0)
	waitFor(t, func() bool { return out.len() >= len(first) })
	got, err := a.mig.Checkpoint(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if want := groupsOf(first); !slices.Equal(got.Groups, want) || got.Bytes == 0 {
		t.Errorf("first checkpoint put groups %v (%d bytes), want %v", got.Groups, got.Bytes, want)
	}
	second := []string{"k1", "k1"}
	publish(t, ctx, in, second, len(first))
	waitFor(t, func() bool { return out.len() >= len(first)+len(second) })
	if got, err = a.mig.Checkpoint(ctx); err != nil {
		t.Fatal(err)
	}
	if want := groupsOf(second); !slices.Equal(got.Groups, want) {
		t.Errorf("second checkpoint put groups %v, want %v (only the changed one)", got.Groups, want)
	}
	if got, err = a.mig.Checkpoint(ctx); err != nil {
		t.Fatal(err)
	}
	if len(got.Groups) != 0 {
		t.Errorf("a checkpoint with nothing changed put groups %v", got.Groups)
	}
	if puts, want := a.mig.Checkpoints.Stats().Puts, int64(len(groupsOf(first))+len(groupsOf(second))); puts != want {
		t.Errorf("%d checkpoints put, want %d", puts, want)
	}
}

// TestFailoverWhole checks that the failover of the host of a Whole table
// (its groups live on one host together) gives every group to one live
// host, in one step, whatever the knobs say.
func TestFailoverWhole(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	_, js, _ := setup(t, ctx)
	cs, stops := joinAll(t, ctx, js, "a", "b", "c")
	c := cs["c"]
	if _, err := c.Update(ctx, func(a *cluster.Assignment) error {
		a.Owners, a.Whole = cluster.Spread(groups, []string{"a"}), true
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	stops["a"]()
	waitFor(t, func() bool {
		ms, err := c.Members(ctx)
		return err == nil && len(ms) == 2
	})
	tbl, err := migrate.Failover(ctx, c, "a", []string{"c", "b"}, cluster.Knobs{Order: cluster.OrderKeyGroup, Batch: 2})
	if err != nil {
		t.Fatal(err)
	}
	m := tbl.Migration
	if len(m.Steps) != 1 || len(m.Steps[0].Moves) != groups {
		t.Fatalf("steps %+v, want one step moving all %d groups", m.Steps, groups)
	}
	for _, mv := range m.Steps[0].Moves {
		if mv.From != "a" || mv.To != "b" {
			t.Fatalf("move %+v, want every group from a to b", mv)
		}
	}
}

// TestWholeHostCheckpointsCuts runs TestFailoverLosesNothing's schedule
// with hosts whose groups live together: host a's checkpoints are cuts
// (one object of every group, no group's own), host b takes every group
// from the last cut when a is killed, and moves them all back to a host
// started in a's place through a cut put at the release; every record is
// counted once, in its key's order.
func TestWholeHostCheckpointsCuts(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	nc, js, in := setup(t, ctx)
	out := &outputs{byID: map[string]abi.Record{}}
	opts := hostOpts{lease: lease, checkpoint: 50 * time.Millisecond, whole: true}
	a := startHost(t, ctx, nc, js, "a", out, true, opts)
	b := startHost(t, ctx, nc, js, "b", out, false, opts)
	keys := make([]string, 400)
	for i := range keys {
		keys[i] = "k" + strconv.Itoa(i*7%23)
	}
	publish(t, ctx, in, keys[:200], 0)
	waitFor(t, func() bool { return out.len() >= 200 })
	waitFor(t, func() bool { // a periodic cut
		in, ok, err := a.mig.Checkpoints.CutInfo(ctx)
		return err == nil && ok && in.KeyGroups == groups && in.Host == "a"
	})
	if infos, err := a.mig.Checkpoints.List(ctx); err != nil || len(infos) != 0 {
		t.Fatalf("key group checkpoints %v (%v), want none: a whole host puts cuts", infos, err)
	}
	publish(t, ctx, in, keys[200:300], 200)
	waitFor(t, func() bool { return out.len() >= 300 })
	a.kill()
	publish(t, ctx, in, keys[300:350], 300)
	waitFor(t, func() bool {
		ms, err := b.mig.Cluster.Members(ctx)
		return err == nil && len(ms) == 1 && ms[0].ID == "b"
	})
	if _, err := migrate.Failover(ctx, b.mig.Cluster, "a", []string{"b"}, cluster.Knobs{Batch: 2}); err != nil {
		t.Fatal(err)
	}
	settled := func() bool {
		tbl, err := b.mig.Cluster.Assignment(ctx)
		return err == nil && tbl.Migration == nil
	}
	waitFor(t, settled)
	waitFor(t, func() bool { return out.len() >= 350 })
	c := startHost(t, ctx, nc, js, "c", out, false, opts)
	if _, err := migrate.Start(ctx, b.mig.Cluster, "back", cluster.Spread(groups, []string{"c"}), cluster.AllAtOnce(), nil); err != nil {
		t.Fatal(err)
	}
	waitFor(t, settled)
	if m := b.mig.Moved(); m.Released != groups || m.Whole != groups || m.PutBytes == 0 {
		t.Errorf("b's release: %+v, want every group put in a cut", m)
	}
	if m := c.mig.Moved(); m.Installed != groups || m.FetchedBytes == 0 {
		t.Errorf("c's install: %+v, want every group read from the cut", m)
	}
	publish(t, ctx, in, keys[350:], 350)
	waitFor(t, func() bool { return out.len() >= len(keys) })
	checkCounts(t, out, keys)
	if got := c.job.Groups(); len(got) != groups {
		t.Errorf("host c owns %v, want every group", got)
	}
	if got := b.job.Groups(); len(got) != 0 {
		t.Errorf("host b owns %v after the move, want none", got)
	}
}
