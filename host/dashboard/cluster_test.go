package dashboard_test

import (
	"context"
	"errors"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/sluicehq/sluice/host/api"
	"github.com/sluicehq/sluice/host/api/schema"
	"github.com/sluicehq/sluice/host/dashboard"
)

// fakeCluster is a cluster of three hosts (h3 gone) over 16 key groups,
// with a migration of two steps; the test moves it to its second step.
type fakeCluster struct {
	mu         sync.Mutex
	step       int
	rebalances []schema.ClusterRebalanceRequest
}

func (f *fakeCluster) Status(context.Context) (schema.ClusterStatus, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	age := 0.4
	st := schema.ClusterStatus{Host: "h1", Pipeline: "orders", KeyGroups: 16, Revision: uint64(10 + f.step), LeaseSeconds: 10,
		Hosts: []schema.ClusterHost{
			{ID: "h1", Live: true, Addr: "127.0.0.1:8081", Started: time.Now().Add(-time.Hour), LeaseAgeSeconds: &age, Groups: 8,
				KeyGroups: []int{0, 1, 2, 3, 4, 5, 6, 7}, Ranges: "0-7"},
			{ID: "h2", Live: true, Addr: "127.0.0.1:8082", Started: time.Now().Add(-time.Hour), LeaseAgeSeconds: &age, Groups: 6,
				KeyGroups: []int{8, 9, 10, 11, 12, 13}, Ranges: "8-13"},
			{ID: "h3", KeyGroups: []int{}},
		},
		Unassigned: []int{14, 15}, UnassignedRanges: "14-15",
		Migration: &schema.ClusterMigration{ID: "move-20261202-101500-3f9a", Step: 1 + f.step, Steps: 2, State: "released",
			Moves:      []schema.ClusterMove{{Group: 6 + f.step, From: "h1", To: "h2", Replicated: true, State: "released"}},
			GroupsDone: f.step, GroupsTotal: 2},
		Checkpoints: []schema.ClusterCheckpoints{{Host: "h1", Count: 8, Bytes: 4096, Newest: time.Now().Add(-time.Minute)}},
	}
	return st, nil
}

func (f *fakeCluster) Scale(context.Context, string, int, string) (schema.ClusterScale, error) {
	return schema.ClusterScale{}, errors.New("not in this test")
}

func (f *fakeCluster) ChangeHost(context.Context, string, bool) (schema.ClusterHostChange, error) {
	return schema.ClusterHostChange{}, errors.New("not served by the dashboard")
}

func (f *fakeCluster) Move(context.Context, schema.ClusterMoveRequest) (schema.ClusterStart, error) {
	return schema.ClusterStart{}, errors.New("not in this test")
}

func (f *fakeCluster) Place(context.Context, schema.ClusterPlaceRequest) (schema.ClusterStart, error) {
	return schema.ClusterStart{}, errors.New("the dashboard does not place operators")
}

func (f *fakeCluster) Rebalance(_ context.Context, req schema.ClusterRebalanceRequest) (schema.ClusterStart, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.rebalances = append(f.rebalances, req)
	return schema.ClusterStart{Revision: 12, Migration: &schema.ClusterPlan{ID: "rebalance-1", Steps: [][]schema.ClusterMove{
		{{Group: 14, From: "h1", To: "h2", State: "planned"}}}}}, nil
}

// site serves the dashboard over the API with the given cluster (nil: a
// host not in cluster mode) and a status that never changes.
func site(t *testing.T, c api.Cluster) string {
	t.Helper()
	routes := api.NewHandler(api.Options{Registry: prometheus.NewRegistry(),
		Status:    func() schema.Status { return schema.Status{Pipeline: "orders", State: "running"} },
		Updated:   func() <-chan struct{} { return nil },
		Decisions: func(string, int) (schema.Decisions, error) { return nil, nil },
		Cluster:   c, Token: "tok"})
	h, err := dashboard.Mount(routes, dashboard.Options{Version: "test"})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv.URL + "/"
}

// TestClusterPageInBrowser opens the Cluster page in Chromium against a
// fake cluster: it shows the hosts, the key groups coloured by owner, the
// migration and the checkpoints, follows the migration to its next step,
// and its rebalance is refused without the token and sent with it. A host
// not in cluster mode hides the page's link and the page says why. The
// screenshot goes where TestDashboardInBrowser's go.
func TestClusterPageInBrowser(t *testing.T) {
	if raceEnabled {
		t.Skip("the browser tests run without the race detector (the routes are raced in host/api)")
	}
	browser := chromium(t)
	fake := &fakeCluster{}
	withCluster, without := site(t, fake), site(t, nil)
	dir := t.TempDir()
	shots := os.Getenv("SLUICE_DASHBOARD_SCREENSHOTS")
	if shots == "" {
		shots = t.TempDir()
	} else if err := os.MkdirAll(shots, 0o755); err != nil {
		t.Fatal(err)
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(browser),
		chromedp.NoSandbox, chromedp.DisableGPU, chromedp.WindowSize(1280, 900),
		chromedp.UserDataDir(filepath.Join(dir, "chromium")))
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	defer cancelAlloc()
	ctx, cancelTab := chromedp.NewContext(actx)
	defer cancelTab()
	var console consoleErrors
	if err := chromedp.Listen(ctx, console.listen); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(ctx, 3*time.Minute)
	defer cancel()
	open := func(url string) {
		t.Helper()
		if err := chromedp.Do(ctx, chromedp.Navigate(url)); err != nil {
			t.Fatal(err)
		}
	}

	// The overview links to the cluster, and so does the menu.
	open(withCluster + "#/")
	waitFor(ctx, t, "the overview's link to the cluster", `!document.getElementById("cluster-link").hidden && !!document.querySelector('#cluster-link a[href="#/cluster"]')`)
	waitFor(ctx, t, "the menu's Cluster link", `!document.querySelector('nav a[data-page="cluster"]').hidden`)

	open(withCluster + "#/cluster")
	waitFor(ctx, t, "the key groups", `document.querySelectorAll("#cl-groups .kg").length === 16`)
	waitFor(ctx, t, "the hosts", `document.querySelectorAll("#cl-hosts tr").length === 3`)
	if s := text(ctx, t, `#cl-hosts tr[data-host="h1"]`); !strings.Contains(s, "(this host)") || !strings.Contains(s, "live") || !strings.Contains(s, "0-7") {
		t.Errorf("host h1's row: %q", s)
	}
	if s := text(ctx, t, `#cl-hosts tr[data-host="h3"]`); !strings.Contains(s, "gone") || !strings.Contains(s, "none") {
		t.Errorf("host h3's row: %q", s)
	}
	colours, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](`[0, 8, 14].map(g => getComputedStyle(document.querySelector('#cl-groups .kg[data-group="' + g + '"]')).backgroundColor)`))
	if err != nil {
		t.Fatal(err)
	}
	if colours[0] == colours[1] || colours[1] == colours[2] || colours[0] == colours[2] {
		t.Errorf("groups of h1, h2 and none coloured %v: want three colours", colours)
	}
	if s := text(ctx, t, "#cl-migration-state"); !strings.Contains(s, "step 1 of 2, released; 0 of 2 key groups moved") {
		t.Errorf("the migration: %q", s)
	}
	if s := text(ctx, t, "#cl-moves"); !strings.Contains(s, "released (replicated)") {
		t.Errorf("the migration's moves: %q", s)
	}
	waitFor(ctx, t, "group 6 marked moving", `document.querySelector('#cl-groups .kg[data-group="6"]').classList.contains("moving")`)
	if s := text(ctx, t, "#cl-checkpoints"); !strings.Contains(s, "h1") || !strings.Contains(s, "4096") {
		t.Errorf("the checkpoints: %q", s)
	}
	screenshot(ctx, t, shots, "cluster")

	// The page follows the cluster.
	fake.mu.Lock()
	fake.step = 1
	fake.mu.Unlock()
	waitFor(ctx, t, "the migration's second step", `document.getElementById("cl-migration-state").textContent.includes("step 2 of 2")`)
	waitFor(ctx, t, "group 7 marked moving", `document.querySelector('#cl-groups .kg[data-group="7"]').classList.contains("moving")`)

	// Rebalance: refused without the token, sent with it.
	if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS("#rebalance"))); err != nil {
		t.Fatal(err)
	}
	waitFor(ctx, t, "the refusal", `document.getElementById("rebalance-result").textContent.includes("refused (401)")`)
	fake.mu.Lock()
	n := len(fake.rebalances)
	fake.mu.Unlock()
	if n != 0 {
		t.Fatalf("a rebalance without the token reached the cluster")
	}
	if err := chromedp.Do(ctx,
		chromedp.SendKeys(chromedp.CSS("#token"), "tok"), chromedp.Click(chromedp.CSS("#token-form button")),
		chromedp.SetValue(chromedp.CSS("#rebalance-batch"), "4"),
		chromedp.Click(chromedp.CSS("#rebalance"))); err != nil {
		t.Fatal(err)
	}
	waitFor(ctx, t, "the rebalance started", `document.getElementById("rebalance-result").textContent.includes("started migration rebalance-1: 1 key groups in 1 steps")`)
	fake.mu.Lock()
	got := fake.rebalances
	fake.mu.Unlock()
	if len(got) != 1 || got[0].Knobs.Batch != 4 {
		t.Errorf("the cluster got rebalances %+v, want one with batch 4", got)
	}
	if errs := console.take(); len(errs) > 0 {
		t.Errorf("the cluster page logged errors:\n%s", strings.Join(errs, "\n"))
	}

	// A host not in cluster mode.
	open(without + "#/")
	waitFor(ctx, t, "the first status", `document.body.dataset.ready === "1"`)
	waitFor(ctx, t, "the overview without a cluster link", `document.getElementById("cluster-link").hidden && document.querySelector('nav a[data-page="cluster"]').hidden`)
	open(without + "#/cluster")
	waitFor(ctx, t, "the page saying why", `!!document.querySelector(".unavailable") && document.querySelector(".unavailable").textContent.includes("does not run in cluster mode")`)
	if errs := console.take(); len(errs) > 0 {
		t.Errorf("the pages of a host not in cluster mode logged errors:\n%s", strings.Join(errs, "\n"))
	}
	if err := chromedp.Cancel(ctx); err != nil && !errors.Is(err, context.Canceled) {
		t.Logf("closing the browser: %v", err)
	}
}
