package runner

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/sluicehq/sluice/connectors/natsconn/natstest"
	"github.com/sluicehq/sluice/host/api"
	"github.com/sluicehq/sluice/host/cluster"
	"github.com/sluicehq/sluice/host/clusterctl"
	"github.com/sluicehq/sluice/host/migrate"
	"github.com/sluicehq/sluice/host/pipeline"
	"github.com/sluicehq/sluice/sdk/go/wasmbuild"
)

// poolCluster is a running test cluster of one pipeline: its file, the
// NATS server its hosts share, and a view of its buckets.
type poolCluster struct {
	t    *testing.T
	dir  string
	file string
	js   jetstream.JetStream
	c    *cluster.Cluster
}

// newPoolCluster writes the wordcount module and the pipeline text
// (clusterPipeline's layout, with extra appended) and opens the cluster's
// buckets.
func newPoolCluster(t *testing.T, count, rate int, extra string) *poolCluster {
	t.Helper()
	ctx := context.Background()
	dir := t.TempDir()
	mods, err := wasmbuild.GoModules(ctx, map[string]string{"wordcount": "../../plugins/wordcount"})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "wordcount.wasm"), mods["wordcount"], 0o644); err != nil {
		t.Fatal(err)
	}
	srv := natstest.StartServer(t)
	file := filepath.Join(dir, "spread.yaml")
	writeFile(t, file, fmt.Sprintf(clusterPipeline, srv.ClientURL(), count, rate)+extra)
	nc, err := nats.Connect(srv.ClientURL())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	c, err := cluster.Open(ctx, js, cluster.Config{Pipeline: "spread", Text: mustRead(t, file), KeyGroups: 16, Lease: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	return &poolCluster{t: t, dir: dir, file: file, js: js, c: c}
}

// start starts host id (a pool host with pool) and returns a function
// that stops it and waits for it to end; the test's end stops it too.
func (pc *poolCluster) start(id string, pool bool) (h *Host, stop func()) {
	t := pc.t
	t.Helper()
	p, err := pipeline.Load(pc.file)
	if err != nil {
		t.Fatal(err)
	}
	h, err = Start(context.Background(), p, Options{DataDir: filepath.Join(pc.dir, id), HostID: id, Pool: pool, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- h.Run(ctx) }()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			if err := <-done; err != nil {
				t.Errorf("host %s stopped with %v", id, err)
			}
		})
	}
	t.Cleanup(stop)
	return h, stop
}

// table reads the assignment.
func (pc *poolCluster) table() *cluster.Assignment {
	pc.t.Helper()
	a, err := pc.c.Assignment(context.Background())
	if err != nil {
		pc.t.Fatal(err)
	}
	return a
}

// live reports whether host id holds a lease.
func (pc *poolCluster) live(id string) bool {
	pc.t.Helper()
	live, err := migrate.Live(context.Background(), pc.c)
	if err != nil {
		pc.t.Fatal(err)
	}
	return slices.Contains(live, id)
}

// outputs counts the records in the OUT stream.
func (pc *poolCluster) outputs() int {
	s, err := pc.js.Stream(context.Background(), "OUT")
	if err != nil {
		return 0
	}
	info, err := s.Info(context.Background())
	if err != nil {
		pc.t.Fatal(err)
	}
	return int(info.State.Msgs)
}

// checkOnce checks that every key's counts in OUT run 1 to count/keys,
// each once: every record was counted exactly once.
func (pc *poolCluster) checkOnce(count, keys int) { countedOnce(pc.t, pc.js, count, keys) }

// TestClusterPoolHost runs one active host and one pool host: the pool
// host joins the pool and is given no key group; taken into service
// through clusterctl (what sluice cluster host activate runs) it gets half
// of them by the coordinator's rebalance, and given back (cluster host
// release) it holds none again, while it stays live. Every record is
// counted exactly once throughout.
func TestClusterPoolHost(t *testing.T) {
	const count, keys = 4000, 40
	pc := newPoolCluster(t, count, 500, "")
	ctx := context.Background()
	admin := &clusterctl.Admin{Pipeline: "spread", JS: pc.js, Cluster: pc.c}

	pc.start("a", false)
	waitUntil(t, "host a's first outputs", func() bool { return pc.outputs() > 100 })
	pc.start("b", true)
	waitUntil(t, "host b live", func() bool { return pc.live("b") })
	a := pc.table()
	if !a.Pooled("b") || len(migrate.Owned(a, "b")) != 0 || a.Pooled("a") {
		t.Fatalf("after pool host b joined: pool %v, b owns %v: want b pooled with no key group", a.PoolHosts(), migrate.Owned(a, "b"))
	}
	st, err := admin.Status(ctx, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	for _, h := range st.Hosts {
		if h.Pool != (h.ID == "b") {
			t.Errorf("status: host %s pool %v", h.ID, h.Pool)
		}
	}

	if _, err := admin.Release(ctx, "a", "test"); err == nil {
		t.Fatal("releasing the only active host was not refused")
	}
	// Through the API's provider, as POST /api/v1/cluster/hosts/b/activate.
	viaAPI := clusterctl.API{Host: "a", Admin: admin}
	if ch, err := viaAPI.ChangeHost(ctx, "b", true); err != nil || ch.Pool || ch.Host != "b" {
		t.Fatalf("activate b: %+v, %v", ch, err)
	}
	if _, err := viaAPI.ChangeHost(ctx, "b", true); !errors.Is(err, api.ErrRefused) {
		t.Errorf("activating a host not in the pool: %v, want api.ErrRefused", err)
	}
	waitUntil(t, "the groups spread over a and b", func() bool {
		a := pc.table()
		return a.Migration == nil && len(migrate.Owned(a, "a")) == 8 && len(migrate.Owned(a, "b")) == 8
	})

	if _, err := admin.Release(ctx, "b", "test"); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, "host b drained", func() bool {
		a := pc.table()
		return a.Migration == nil && len(migrate.Owned(a, "a")) == 16 && a.Pooled("b")
	})
	if !pc.live("b") {
		t.Error("host b given back to the pool is not live")
	}
	if a := pc.table(); a.Pool.Last == nil || a.Pool.Last.By != "test" || a.Pool.Last.Action != cluster.PoolActionPool {
		t.Errorf("the pool's last change: %+v", a.Pool.Last)
	}
	waitUntil(t, "every record counted", func() bool { return pc.outputs() >= count })
	pc.checkOnce(count, keys)
}

// TestClusterPoolFailover: when the only active host stops, the pool host
// is taken into service and takes its key groups, so the pipeline goes
// on: every record is counted exactly once.
func TestClusterPoolFailover(t *testing.T) {
	const count, keys = 3000, 40
	pc := newPoolCluster(t, count, 500, "")
	_, stopB := pc.start("b", true) // the first host takes every group, pool or not
	a := pc.table()
	if a.Pooled("b") || len(migrate.Owned(a, "b")) != 16 {
		t.Fatalf("the first host, started with --pool: pooled %v, owns %d groups; want it to take every group", a.Pooled("b"), len(migrate.Owned(a, "b")))
	}
	waitUntil(t, "host b's first outputs", func() bool { return pc.outputs() > 100 })
	pc.start("a", true)
	waitUntil(t, "host a in the pool", func() bool { return pc.live("a") && pc.table().Pooled("a") })
	// b stops: with no other active host it hands nothing over and
	// deletes its lease, and the coordinator, a, takes itself from the
	// pool and its groups by failover.
	stopB()
	waitUntil(t, "host a took every group", func() bool {
		a := pc.table()
		return a.Migration == nil && len(migrate.Owned(a, "a")) == 16 && !a.Pooled("a")
	})
	if last := pc.table().Pool.Last; last == nil || last.By != "failover" || last.Host != "a" {
		t.Errorf("the pool's last change: %+v, want a taken into service by failover", last)
	}
	waitUntil(t, "every record counted", func() bool { return pc.outputs() >= count })
	pc.checkOnce(count, keys)
}

// TestClusterPoolByControl: with control.hosts on, the coordinator takes
// the pool host into service when its own workers, capped under the
// input rate, are saturated for the span, and, once both hosts are
// saturated and the pool is empty, runs the request command. Both are
// recorded as the control plane's decisions.
func TestClusterPoolByControl(t *testing.T) {
	dir := t.TempDir()
	requests := filepath.Join(dir, "requests")
	pc := newPoolCluster(t, 10_000_000, 1000, fmt.Sprintf(`control:
  period: 200ms
  lock: 1s
  settle: 1s
  window: 1s
  policies: []
  hosts: {max: 3, span: 1s, timeout: 30s, request: 'echo "$SLUICE_ACTIVE_HOSTS" >> %s'}
`, requests))
	// One worker per host, so that a host's utilisation is its
	// worker's, not lowered by a worker waiting for the batch's other.
	text := strings.Replace(string(mustRead(t, pc.file)), "parallelism: 2", "parallelism: 1", 1)
	writeFile(t, pc.file, text)
	ha, _ := pc.start("a", false)
	hb, _ := pc.start("b", true)
	for _, h := range []*Host{ha, hb} {
		// A worker of 50 records/s, far under the input's 1000/s.
		if err := h.job.SetWorkerCap("count", -1, 50); err != nil {
			t.Fatal(err)
		}
	}
	waitUntil(t, "pool host b taken into service by the control plane", func() bool {
		a := pc.table()
		return a.Pool != nil && a.Pool.Last != nil && a.Pool.Last.Host == "b" && a.Pool.Last.Action == cluster.PoolActionActivate
	})
	if last := pc.table().Pool.Last; last.By != "control a" {
		t.Errorf("b was taken into service by %q, want the coordinator's control plane (control a)", last.By)
	}
	// The command's file is written before the decision is recorded.
	kinds := map[string]bool{}
	waitUntil(t, "the request command's decision recorded", func() bool {
		for _, d := range ha.ctrl.Status().Decisions {
			if d.Policy == "hosts" {
				kinds[d.Action.Kind] = true
				if len(d.Evidence) == 0 {
					t.Errorf("decision %d (%s) has no evidence", d.ID, d.Action.Kind)
				}
				if d.Outcome != "applied" && d.Outcome != "kept" { // kept: checked once settled
					t.Errorf("decision %d (%s): outcome %s (%s)", d.ID, d.Action.Kind, d.Outcome, d.Error)
				}
			}
		}
		return kinds["request-host"]
	})
	if b := mustRead(t, requests); len(strings.Fields(string(b))) == 0 || strings.Fields(string(b))[0] != "2" {
		t.Errorf("the request command wrote %q, want SLUICE_ACTIVE_HOSTS 2 first", b)
	}
	if !kinds["activate-host"] || !kinds["request-host"] {
		t.Errorf("host a's recorded hosts decisions: %v, want activate-host and request-host", kinds)
	}
}

// TestClusterReleaseByControl: with control.hosts on and a load that
// fits on one host, the coordinator gives one of two active hosts back
// to the pool; once its key groups have moved off, the release command
// runs with its id in SLUICE_HOST_ID. Every record is counted exactly
// once.
func TestClusterReleaseByControl(t *testing.T) {
	const count, keys = 4000, 40
	dir := t.TempDir()
	released := filepath.Join(dir, "released")
	pc := newPoolCluster(t, count, 400, fmt.Sprintf(`control:
  period: 200ms
  lock: 1s
  settle: 1s
  window: 1s
  policies: []
  hosts: {min: 1, span: 1s, timeout: 30s, release: 'echo "$SLUICE_HOST_ID" >> %s'}
`, released))
	ha, _ := pc.start("a", false)
	pc.start("b", false)
	var gone string
	waitUntil(t, "a host given back to the pool and drained", func() bool {
		a := pc.table()
		hs := a.PoolHosts()
		if len(hs) != 1 || a.Migration != nil || slices.Contains(a.Owners, hs[0]) {
			return false
		}
		gone = hs[0]
		return true
	})
	if last := pc.table().Pool.Last; last.By != "control a" {
		t.Errorf("host %s was given back by %q, want the coordinator's control plane (control a)", gone, last.By)
	}
	waitUntil(t, "the release command run", func() bool {
		for _, d := range ha.ctrl.Status().Decisions {
			if d.Policy == "hosts" && strings.HasPrefix(d.Trigger, "host ") {
				return true
			}
		}
		return false
	})
	if got := strings.TrimSpace(string(mustRead(t, released))); got != gone {
		t.Errorf("the release command saw SLUICE_HOST_ID %q, want %q", got, gone)
	}
	if !pc.live(gone) {
		t.Errorf("host %s, given back to the pool, is not live", gone)
	}
	waitUntil(t, "every record counted", func() bool { return pc.outputs() >= count })
	pc.checkOnce(count, keys)
}

// TestPoolNeedsCluster: --pool on a pipeline that is not spread over
// hosts is refused at start, naming the file.
func TestPoolNeedsCluster(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "one.yaml")
	writeFile(t, file, "name: one\nhttp: {addr: \"off\"}\nsources:\n  - {name: in, type: generator, count: 3}\nsinks:\n  - {name: out, type: stdout}\n")
	p, err := pipeline.Load(file)
	if err != nil {
		t.Fatal(err)
	}
	h, err := Start(context.Background(), p, Options{DataDir: filepath.Join(dir, "data"), Pool: true, Logger: slog.New(slog.DiscardHandler)})
	if err == nil {
		h.Close(context.Background())
		t.Fatal("--pool without a cluster section was not refused")
	}
	if !strings.Contains(err.Error(), file) || !strings.Contains(err.Error(), "no cluster: section") {
		t.Errorf("%v: want the file and the missing cluster section named", err)
	}
}
