package migrate_test

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"go.uber.org/goleak"

	"github.com/sluicehq/sluice/abi"
	"github.com/sluicehq/sluice/connectors"
	"github.com/sluicehq/sluice/connectors/natsconn"
	"github.com/sluicehq/sluice/host/checkpoint"
	"github.com/sluicehq/sluice/host/cluster"
	"github.com/sluicehq/sluice/host/exec"
	"github.com/sluicehq/sluice/host/migrate"
	"github.com/sluicehq/sluice/host/plugin"
	wasm "github.com/sluicehq/sluice/runtime"
	"github.com/sluicehq/sluice/sdk/go/wasmbuild"
	"github.com/sluicehq/sluice/state"
)

// wordcount is the word count plugin's module, built once in TestMain.
var wordcount []byte

// compileCache is the directory of the compilation cache every test
// host's engine shares, made in TestMain: the module is compiled once,
// not once per host (under the race detector on a loaded machine one
// compile can take most of a test's deadline).
var compileCache string

func TestMain(m *testing.M) {
	mods, err := wasmbuild.GoModules(context.Background(), map[string]string{"wordcount": "../../plugins/wordcount"})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	wordcount = mods["wordcount"]
	if compileCache, err = os.MkdirTemp("", "migrate-test-cache-"); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	goleak.VerifyTestMain(m,
		goleak.Cleanup(func(code int) {
			_ = os.RemoveAll(compileCache)
			os.Exit(code)
		}),
		// nats.go's object store Put can leave its reconnect listener
		// waiting on a channel it cleared (see package checkpoint's tests).
		goleak.IgnoreTopFunction("github.com/nats-io/nats.go/jetstream.(*jetStream).resetPendingAcksOnReconnect"))
}

const groups = 16

// outputs is a sink that keeps what it is given by id, as a JetStream
// sink's stream does, and fails on an id given twice with other content.
type outputs struct {
	mu   sync.Mutex
	byID map[string]abi.Record
	err  error
}

func (s *outputs) Name() string  { return "outputs" }
func (s *outputs) UsesIDs() bool { return true }
func (s *outputs) Write(_ context.Context, out []connectors.Out) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, o := range out {
		if prev, ok := s.byID[o.ID]; ok && string(prev.Value) != string(o.Record.Value) && s.err == nil {
			s.err = fmt.Errorf("output %s written as %q and as %q", o.ID, prev.Value, o.Record.Value)
		}
		s.byID[o.ID] = abi.Record{Key: append([]byte(nil), o.Record.Key...), Value: append([]byte(nil), o.Record.Value...)}
	}
	return nil
}
func (s *outputs) Flush(context.Context) error { return nil }
func (s *outputs) Close() error                { return nil }
func (s *outputs) len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.byID)
}

// host is one sluice host in the test: its job, its part in migrations.
type host struct {
	id     string
	job    *exec.Job
	store  *state.Store
	mig    *migrate.Host
	cancel context.CancelFunc
	done   chan error
	// kill stops the job and the lease's renewals, with no Leave: the
	// lease expires.
	kill func()
}

// hostOpts are a test host's settings; the zero value is the default.
type hostOpts struct {
	lease      time.Duration  // cluster.Config.Lease
	checkpoint time.Duration  // migrate.Host.CheckpointEvery
	epoch      *atomic.Uint64 // migrate.Host.Epoch; nil: none
	whole      bool           // migrate.Host.Whole, and the table's Whole
}

func startHost(t *testing.T, ctx context.Context, nc *nats.Conn, js jetstream.JetStream, id string, out *outputs, first bool, opts hostOpts) *host {
	t.Helper()
	quiet := slog.New(slog.DiscardHandler)
	c, err := cluster.Open(ctx, js, cluster.Config{Pipeline: "p", Text: []byte("name: p\n"), KeyGroups: groups, Lease: opts.lease, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	joinCtx, stopRenewing := context.WithCancel(ctx)
	if err := c.Join(joinCtx, cluster.HostInfo{ID: id}); err != nil {
		stopRenewing()
		t.Fatal(err)
	}
	t.Cleanup(stopRenewing)
	t.Cleanup(func() { _ = c.Leave(context.Background()) })
	if first {
		if _, err := c.Update(ctx, func(a *cluster.Assignment) error {
			a.Owners, a.Whole = cluster.Spread(groups, []string{id}), opts.whole
			return nil
		}); err != nil {
			t.Fatal(err)
		}
	}
	a, err := c.Assignment(ctx)
	if err != nil {
		t.Fatal(err)
	}
	ckpt, err := checkpoint.Open(ctx, js, "p", checkpoint.Options{Host: id, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	store, err := state.Open(t.TempDir(), state.Options{KeyGroups: groups, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	src, err := natsconn.NewPartitionedSource(nc, natsconn.PartitionedSourceConfig{Stream: "IN", Prefix: "in", KeyGroups: groups, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	eng, err := wasm.NewWazero(ctx, wasm.NewConfig().WithHostModules(plugin.HostModule()).WithCacheDir(compileCache))
	if err != nil {
		t.Fatal(err)
	}
	wc, err := plugin.Load(ctx, eng, "wordcount.wasm", wordcount, plugin.KindKeyed)
	if err != nil {
		t.Fatal(err)
	}
	job, err := exec.New(ctx, exec.Config{
		Name: "p", Sources: []exec.Input{{Name: "in", Source: src}},
		Operators: []exec.Operator{{Name: "count", Kind: plugin.KindKeyed, Plugin: wc, Parallelism: 2, Tables: []string{"counts"}}},
		Sinks:     []exec.Output{{Name: "out", Sink: out}}, DeadLetter: &outputs{byID: map[string]abi.Record{}}, Store: store,
		BatchSize: 8, Linger: time.Millisecond, Groups: migrate.Owned(a, id), Logger: quiet,
	})
	if err != nil {
		t.Fatal(err)
	}
	h := &host{id: id, job: job, store: store, done: make(chan error, 1),
		mig: &migrate.Host{ID: id, Job: job, Cluster: c, Checkpoints: ckpt, CheckpointEvery: opts.checkpoint, Whole: opts.whole}}
	if opts.epoch != nil {
		h.mig.Epoch = opts.epoch.Load
	}
	runCtx, cancel := context.WithCancel(ctx)
	h.cancel = cancel
	h.kill = func() {
		stopRenewing()
		cancel()
	}
	go func() { h.done <- job.Run(runCtx) }()
	migDone := make(chan struct{})
	go func() {
		defer close(migDone)
		// As the runner does: a failed round is logged and tried again
		// after a pause. (The runner pauses a second; a pause much shorter
		// than it takes a loaded machine to reopen a group's input after
		// a failed hand-over gives it back can keep the group's records
		// from being read at all.)
		for {
			err := h.mig.Run(runCtx, 10*time.Millisecond)
			if err == nil || runCtx.Err() != nil {
				return
			}
			t.Logf("host %s: %v (trying again)", id, err)
			time.Sleep(250 * time.Millisecond)
		}
	}()
	t.Cleanup(func() {
		cancel()
		<-h.done
		// The host's Run stops its replica's watch, which can be in a
		// checkpoint's download: nats.go's object reader does not see a
		// cancelled context until its deadline (checkpoint's fetchStall).
		<-migDone
		_ = job.Close(context.Background())
		_ = src.Close()
		_ = store.Close()
		_ = eng.Close(context.Background())
	})
	return h
}

// publish writes records with keys to the partitioned input stream.
func publish(t *testing.T, ctx context.Context, sink *natsconn.JetStreamSink, keys []string, from int) {
	t.Helper()
	out := make([]connectors.Out, len(keys))
	for i, k := range keys {
		out[i] = connectors.Out{Record: abi.Record{Key: []byte(k), Value: []byte(k)}, ID: "in/" + strconv.Itoa(from+i)}
	}
	if err := sink.Write(ctx, out); err != nil {
		t.Fatal(err)
	}
	if err := sink.Flush(ctx); err != nil {
		t.Fatal(err)
	}
}

// TestMigrationMovesEveryGroupWithNothingLost runs two hosts of one
// pipeline over one NATS server: host a starts with every key group, half
// of them move to host b in steps of two while records arrive, then the
// rest at once; each record must be counted once, in its key's order, by
// whichever host owned its group.
func TestMigrationMovesEveryGroupWithNothingLost(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	nc, js, in := setup(t, ctx)
	out := &outputs{byID: map[string]abi.Record{}}
	a := startHost(t, ctx, nc, js, "a", out, true, hostOpts{})
	b := startHost(t, ctx, nc, js, "b", out, false, hostOpts{})

	keys := make([]string, 600)
	for i := range keys {
		keys[i] = "k" + strconv.Itoa(i*7%23)
	}
	over := func() bool {
		tbl, err := a.mig.Cluster.Assignment(ctx)
		return err == nil && tbl.Migration == nil
	}
	publish(t, ctx, in, keys[:200], 0)
	waitFor(t, func() bool { return out.len() >= 100 })
	half := cluster.Spread(groups, []string{"a", "b"})
	if _, err := migrate.Start(ctx, a.mig.Cluster, "half", half, cluster.Knobs{Order: cluster.OrderKeyGroup, Batch: 2}, nil); err != nil {
		t.Fatal(err)
	}
	publish(t, ctx, in, keys[200:300], 200) // while groups move
	waitFor(t, over)
	if got := b.job.Groups(); len(got) != groups/2 {
		t.Errorf("after the first migration host b owns %v, want half", got)
	}
	publish(t, ctx, in, keys[300:400], 300)
	if _, err := migrate.Start(ctx, b.mig.Cluster, "rest", slices.Repeat([]string{"b"}, groups), cluster.AllAtOnce(), nil); err != nil {
		t.Fatal(err)
	}
	waitFor(t, over)
	publish(t, ctx, in, keys[400:], 400)
	waitFor(t, func() bool { return out.len() >= len(keys) })

	checkCounts(t, out, keys)
	if got := a.job.Groups(); len(got) != 0 {
		t.Errorf("host a still owns %v", got)
	}
	if got := b.job.Groups(); len(got) != groups {
		t.Errorf("host b owns %v, want every group", got)
	}
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not met within a minute")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestHandOverWaitsForTheBucket removes the checkpoint bucket under a
// migration: the source's hand-over fails before it releases anything
// (the bucket does not answer), so it goes on counting every group,
// nothing is marked, and once the bucket is back the step is done; every
// record is counted once, in its key's order.
func TestHandOverWaitsForTheBucket(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	nc, js, in := setup(t, ctx)
	out := &outputs{byID: map[string]abi.Record{}}
	a := startHost(t, ctx, nc, js, "a", out, true, hostOpts{})
	b := startHost(t, ctx, nc, js, "b", out, false, hostOpts{})
	keys := make([]string, 300)
	for i := range keys {
		keys[i] = "k" + strconv.Itoa(i*7%23)
	}
	publish(t, ctx, in, keys[:100], 0)
	waitFor(t, func() bool { return out.len() >= 100 })
	if err := js.DeleteObjectStore(ctx, checkpoint.BucketName("p")); err != nil {
		t.Fatal(err)
	}
	if _, err := migrate.Start(ctx, a.mig.Cluster, "half", cluster.Spread(groups, []string{"a", "b"}), cluster.AllAtOnce(), nil); err != nil {
		t.Fatal(err)
	}
	// The hand-over fails (Run logs it and tries again): host a keeps its
	// groups and counts what arrives meanwhile.
	publish(t, ctx, in, keys[100:200], 100)
	waitFor(t, func() bool { return out.len() >= 200 })
	if got := len(a.job.Groups()); got != groups {
		t.Fatalf("while the bucket is gone, host a owns %d groups, want all %d", got, groups)
	}
	tbl, err := a.mig.Cluster.Assignment(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, mv := range tbl.Migration.Steps[0].Moves {
		if mv.State != cluster.StepPlanned {
			t.Fatalf("move of group %d is %s after a failed hand-over, want planned", mv.Group, mv.State)
		}
	}
	if _, err := js.CreateObjectStore(ctx, jetstream.ObjectStoreConfig{Bucket: checkpoint.BucketName("p")}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() bool {
		tbl, err := a.mig.Cluster.Assignment(ctx)
		return err == nil && tbl.Migration == nil
	})
	publish(t, ctx, in, keys[200:], 200)
	waitFor(t, func() bool { return out.len() >= len(keys) })
	checkCounts(t, out, keys)
	if got := len(b.job.Groups()); got != groups/2 {
		t.Errorf("host b owns %d groups, want %d", got, groups/2)
	}
}

// TestCancelledMoveIsTakenBack moves every group of host a to host b,
// whose job has stopped, so that a releases them and nothing installs
// them; the moves are then cancelled (as the coordinator does when b is
// gone and a is the only live host): a takes every group back from the
// state it released, with its floors, and every record is counted once,
// in its key's order.
func TestCancelledMoveIsTakenBack(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	nc, js, in := setup(t, ctx)
	out := &outputs{byID: map[string]abi.Record{}}
	a := startHost(t, ctx, nc, js, "a", out, true, hostOpts{})
	b := startHost(t, ctx, nc, js, "b", out, false, hostOpts{})
	b.kill()
	keys := make([]string, 300)
	for i := range keys {
		keys[i] = "k" + strconv.Itoa(i*7%23)
	}
	publish(t, ctx, in, keys[:100], 0)
	waitFor(t, func() bool { return out.len() >= 100 })
	if _, err := migrate.Start(ctx, a.mig.Cluster, "to-b", slices.Repeat([]string{"b"}, groups), cluster.AllAtOnce(), nil); err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() bool {
		tbl, err := a.mig.Cluster.Assignment(ctx)
		return err == nil && tbl.Migration != nil && tbl.Migration.Steps[0].State == cluster.StepReleased
	})
	publish(t, ctx, in, keys[100:200], 100) // waits in the stream
	if _, err := a.mig.Cluster.Update(ctx, func(tbl *cluster.Assignment) error {
		for kg := range groups {
			if tbl.Migration == nil {
				return fmt.Errorf("the migration ended before group %d's move was cancelled", kg)
			}
			if mv := tbl.Migration.Steps[0].Moves; !slices.ContainsFunc(mv, func(m cluster.Move) bool { return m.Group == kg && m.State == cluster.StepReleased }) {
				return fmt.Errorf("group %d's move is not released: %+v", kg, mv)
			}
			if _, err := tbl.Cancel(kg); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() bool { return len(a.job.Groups()) == groups })
	publish(t, ctx, in, keys[200:], 200)
	waitFor(t, func() bool { return out.len() >= len(keys) })
	checkCounts(t, out, keys)
	tbl, err := a.mig.Cluster.Assignment(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if tbl.Migration != nil || !slices.Equal(tbl.Owners, slices.Repeat([]string{"a"}, groups)) {
		t.Errorf("table %+v after the cancel, want every group a's and no migration", tbl)
	}
}
