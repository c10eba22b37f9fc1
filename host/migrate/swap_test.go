package migrate_test

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/sluicehq/sluice/abi"
	"github.com/sluicehq/sluice/connectors/natsconn"
	"github.com/sluicehq/sluice/connectors/natsconn/natstest"
	"github.com/sluicehq/sluice/host/checkpoint"
	"github.com/sluicehq/sluice/host/cluster"
	"github.com/sluicehq/sluice/host/migrate"
)

// TestStartWaitsForASwap records a plugin swap that host b does not run
// yet: a migration is refused, naming b, and nothing is written; once b
// reports it runs the module, the migration begins. A swap recorded while
// the migration is in progress is refused, naming it.
func TestStartWaitsForASwap(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	nc, err := nats.Connect(natstest.StartServer(t).ClientURL())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	c, err := cluster.Open(ctx, js, cluster.Config{Pipeline: "p", Text: []byte("name: p\n"), KeyGroups: 4, Lease: lease, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"a", "b"} {
		h, err := cluster.Open(ctx, js, cluster.Config{Pipeline: "p", Text: []byte("name: p\n"), KeyGroups: 4, Lease: lease, Logger: slog.New(slog.DiscardHandler)})
		if err != nil {
			t.Fatal(err)
		}
		if err := h.Join(ctx, cluster.HostInfo{ID: id}); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			if err := h.Leave(context.Background()); err != nil {
				t.Error(err)
			}
		})
	}
	const hash = "8c2a0e3b2a1f0d9e8c7b6a5f4e3d2c1b0a9f8e7d6c5b4a3f2e1d0c9b8a7f6e5d"
	swap := func(a *cluster.Assignment) error {
		return a.SetVersion("count", cluster.OperatorVersion{SHA256: hash, Name: "count.wasm", Reason: cluster.ReasonSwap, Host: "a"})
	}
	before, err := c.Update(ctx, func(a *cluster.Assignment) error {
		a.Owners = []string{"a", "a", "a", "a"}
		return swap(a)
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Report(ctx, cluster.Running{Host: "a", Operators: map[string]string{"count": hash}}); err != nil {
		t.Fatal(err)
	}
	target := []string{"a", "a", "b", "b"}
	_, err = migrate.Start(ctx, c, "m1", target, cluster.AllAtOnce(), nil)
	if !errors.Is(err, cluster.ErrSwapPending) || !strings.Contains(err.Error(), "hosts b ") {
		t.Fatalf("a migration while b has not switched: %v, want ErrSwapPending naming b", err)
	}
	if now, err := c.Assignment(ctx); err != nil || now.Revision != before.Revision {
		t.Fatalf("the refused migration wrote the table: revision %d, was %d (%v)", now.Revision, before.Revision, err)
	}
	if err := c.Report(ctx, cluster.Running{Host: "b", Operators: map[string]string{"count": hash}}); err != nil {
		t.Fatal(err)
	}
	if _, err := migrate.Start(ctx, c, "m1", target, cluster.AllAtOnce(), nil); err != nil {
		t.Fatalf("a migration once every live host switched: %v", err)
	}
	if _, err := c.Update(ctx, swap); !errors.Is(err, cluster.ErrMigration) || !strings.Contains(err.Error(), "m1") {
		t.Fatalf("a swap during migration m1: %v, want ErrMigration naming m1", err)
	}
}

// heldMove is a migration of every key group from host a, which runs
// plugin versions epoch 1, to host b, which runs epoch 0 and so does not
// install them (ErrNewerVersion) until the test sets epochB to 1.
type heldMove struct {
	ctx    context.Context
	js     jetstream.JetStream
	in     *natsconn.JetStreamSink
	out    *outputs
	a, b   *host
	epochB *atomic.Uint64
	keys   []string
}

// holdMove counts half of 200 records on host a, then begins the
// migration and returns once a has released every group.
func holdMove(t *testing.T, ctx context.Context) *heldMove {
	t.Helper()
	nc, js, in := setup(t, ctx)
	m := &heldMove{ctx: ctx, js: js, in: in, out: &outputs{byID: map[string]abi.Record{}}, epochB: new(atomic.Uint64)}
	var epochA atomic.Uint64
	epochA.Store(1)
	m.a = startHost(t, ctx, nc, js, "a", m.out, true, hostOpts{epoch: &epochA})
	m.b = startHost(t, ctx, nc, js, "b", m.out, false, hostOpts{epoch: m.epochB})
	m.keys = make([]string, 200)
	for i := range m.keys {
		m.keys[i] = "k" + strconv.Itoa(i*7%23)
	}
	publish(t, ctx, in, m.keys[:100], 0)
	waitFor(t, func() bool { return m.out.len() >= 100 })
	if _, err := migrate.Start(ctx, m.a.mig.Cluster, "all", slices.Repeat([]string{"b"}, groups), cluster.AllAtOnce(), nil); err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() bool {
		tbl, err := m.a.mig.Cluster.Assignment(ctx)
		return err == nil && tbl.Migration != nil && tbl.Migration.Steps[0].State == cluster.StepReleased
	})
	return m
}

// finish publishes the other half of the records, lets b switch to epoch
// 1, and checks that the migration ends with every record counted once.
func (m *heldMove) finish(t *testing.T) {
	t.Helper()
	publish(t, m.ctx, m.in, m.keys[100:], 100)
	m.epochB.Store(1)
	waitFor(t, func() bool {
		tbl, err := m.a.mig.Cluster.Assignment(m.ctx)
		return err == nil && tbl.Migration == nil
	})
	waitFor(t, func() bool { return m.out.len() >= len(m.keys) })
	checkCounts(t, m.out, m.keys)
}

// TestInstallWaitsForTheVersion moves every key group from host a, which
// runs plugin versions epoch 1, to host b, which runs epoch 0: b refuses
// to install the groups a released (ErrNewerVersion) until it runs epoch
// 1 too; then the migration ends and every record is counted once.
func TestInstallWaitsForTheVersion(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	m := holdMove(t, ctx)
	if _, err := m.b.mig.Step(ctx); !errors.Is(err, migrate.ErrNewerVersion) {
		t.Fatalf("b installing groups of epoch 1 at epoch 0: %v, want ErrNewerVersion", err)
	}
	m.finish(t)
}

// TestFailoverDoesNotWaitForASwap kills host a, which ran a recorded
// swap (epoch 1) and checkpointed its groups at that epoch, while host b
// has not switched yet: the failover begins at once (a dead host's groups
// wait for nobody), b does not install the groups while it runs epoch 0,
// and once it switches the failover ends with every record counted once.
func TestFailoverDoesNotWaitForASwap(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	nc, js, in := setup(t, ctx)
	out := &outputs{byID: map[string]abi.Record{}}
	var epochA, epochB atomic.Uint64
	epochA.Store(1)
	a := startHost(t, ctx, nc, js, "a", out, true, hostOpts{lease: lease, checkpoint: 50 * time.Millisecond, epoch: &epochA})
	b := startHost(t, ctx, nc, js, "b", out, false, hostOpts{lease: lease, epoch: &epochB})
	const hash = "8c2a0e3b2a1f0d9e8c7b6a5f4e3d2c1b0a9f8e7d6c5b4a3f2e1d0c9b8a7f6e5d"
	if _, err := a.mig.Cluster.Update(ctx, func(t *cluster.Assignment) error {
		return t.SetVersion("count", cluster.OperatorVersion{SHA256: hash, Name: "count.wasm", Reason: cluster.ReasonSwap, Host: "a"})
	}); err != nil {
		t.Fatal(err)
	}
	if err := a.mig.Cluster.Report(ctx, cluster.Running{Host: "a", Operators: map[string]string{"count": hash}}); err != nil {
		t.Fatal(err)
	}
	keys := make([]string, 300)
	for i := range keys {
		keys[i] = "k" + strconv.Itoa(i*7%23)
	}
	publish(t, ctx, in, keys[:150], 0)
	waitFor(t, func() bool { return out.len() >= 150 })
	waitFor(t, func() bool {
		infos, err := a.mig.Checkpoints.List(ctx)
		return err == nil && len(infos) > 0
	})
	a.kill()
	publish(t, ctx, in, keys[150:], 150)
	waitFor(t, func() bool {
		ms, err := b.mig.Cluster.Members(ctx)
		return err == nil && len(ms) == 1 && ms[0].ID == "b"
	})
	if _, err := migrate.Failover(ctx, b.mig.Cluster, "a", []string{"b"}, cluster.AllAtOnce()); err != nil {
		t.Fatalf("a failover while b has not switched: %v, want it begun", err)
	}
	waitFor(t, func() bool {
		tbl, err := b.mig.Cluster.Assignment(ctx)
		return err == nil && tbl.Migration != nil && tbl.Migration.Steps[0].State == cluster.StepReleased
	})
	if _, err := b.mig.Step(ctx); !errors.Is(err, migrate.ErrNewerVersion) {
		t.Fatalf("b installing groups of epoch 1 at epoch 0: %v, want ErrNewerVersion", err)
	}
	if got := b.job.Groups(); len(got) != 0 {
		t.Fatalf("b owns %v before it switched, want none", got)
	}
	epochB.Store(1)
	waitFor(t, func() bool {
		tbl, err := b.mig.Cluster.Assignment(ctx)
		return err == nil && tbl.Migration == nil
	})
	waitFor(t, func() bool { return out.len() >= len(keys) })
	checkCounts(t, out, keys)
}

// TestInstallNamesTheGroupItCannotRead moves every key group from host a
// to host b, which runs an older epoch so that it does not install them
// on its own, and deletes one group's checkpoint from the bucket: b's
// install, which reads the groups several at once, fails naming that
// group as not found (before the groups it must wait for), installs none,
// and, once b switches and the group is back in the bucket, the migration
// ends with every record counted once.
func TestInstallNamesTheGroupItCannotRead(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	m := holdMove(t, ctx)
	obs, err := m.js.ObjectStore(ctx, m.a.mig.Checkpoints.Name())
	if err != nil {
		t.Fatal(err)
	}
	const lost = groups / 2
	saved, err := obs.GetBytes(ctx, checkpoint.ObjectName(lost))
	if err != nil {
		t.Fatal(err)
	}
	if err := obs.Delete(ctx, checkpoint.ObjectName(lost)); err != nil {
		t.Fatal(err)
	}
	_, err = m.b.mig.Step(ctx)
	if !errors.Is(err, checkpoint.ErrNotFound) || !strings.Contains(err.Error(), "key group "+strconv.Itoa(lost)+":") {
		t.Fatalf("b installing with group %d's checkpoint gone: %v, want ErrNotFound naming the group", lost, err)
	}
	if got := m.b.job.Groups(); len(got) != 0 {
		t.Fatalf("b owns %v after a failed install, want none", got)
	}
	if _, err := obs.PutBytes(ctx, checkpoint.ObjectName(lost), saved); err != nil {
		t.Fatal(err)
	}
	m.finish(t)
}
