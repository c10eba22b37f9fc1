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

// fakeControlPlane is a control plane of three workers (good, moderate,
// severe) with a finding and two decisions; the test adds a third.
type fakeControlPlane struct {
	mu  sync.Mutex
	doc schema.Control
}

func newFakeControlPlane() *fakeControlPlane {
	at := time.Now().Add(-time.Minute)
	return &fakeControlPlane{doc: schema.Control{Enabled: true, Policies: []string{"latency", "ds2", "straggler", "doctor"}, Rounds: 61, LastRound: at,
		Workers: []schema.WorkerHealth{
			{Operator: "count", Worker: 0, KeyGroups: 40, ArrivalRate: 3000, ServiceRate: 10000, Utilization: 0.3, DelaySeconds: 0.01, PredictedSeconds: 0.0001, State: "good"},
			{Operator: "count", Worker: 1, KeyGroups: 44, ArrivalRate: 7000, ServiceRate: 9000, Utilization: 0.78, DelaySeconds: 0.07, PredictedSeconds: 0.0005, State: "moderate"},
			{Operator: "count", Worker: 2, KeyGroups: 44, ArrivalRate: 9500, ServiceRate: 9000, Utilization: 1.06, DelaySeconds: 0.4, Saturated: true, State: "severe"},
		},
		Decisions: []schema.Decision{
			{ID: 2, Time: at, Trigger: "condition: latency over the bound", Policy: "latency",
				Action:   schema.Action{Kind: "move-groups", Operator: "count", Moves: []schema.GroupMove{{Group: 17, FromWorker: 2, ToWorker: 0}}},
				Reason:   "worker count/2 is severe: its delay is over l_high and L over lreq",
				Evidence: []schema.Evidence{{Name: "delay of count/2", Value: 0.4, Unit: "s"}},
				Outcome:  "rolled back", Observed: []schema.Evidence{{Name: "delay of count/0", Value: 0.6, Unit: "s"}}},
			{ID: 1, Time: at.Add(-time.Minute), Trigger: "period", Policy: "ds2", Action: schema.Action{Kind: "set-workers", Operator: "count", From: 2, To: 3},
				Reason: "count's input needs 2.6 workers", Predicted: []schema.Evidence{{Name: "utilization of count", Value: 0.8, Unit: "ratio"}}, Outcome: "kept"},
		},
		Findings: []schema.Finding{{Cause: "hot-key", Subject: "count", Summary: "one key is 41% of the operator's input",
			Evidence:       []schema.Evidence{{Name: "share of key k17", Value: 0.41, Unit: "ratio"}},
			Recommendation: "salt the key, or aggregate it in two steps", Since: at}},
	}}
}

func (f *fakeControlPlane) control() schema.Control {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.doc
}

// siteWith serves the dashboard over the API with o's control plane
// and a status that never changes.
func siteWith(t *testing.T, o api.Options) string {
	t.Helper()
	o.Registry = prometheus.NewRegistry()
	o.Status = func() schema.Status { return schema.Status{Pipeline: "orders", State: "running"} }
	o.Updated = func() <-chan struct{} { return nil }
	o.Decisions = func(string, int) (schema.Decisions, error) { return nil, nil }
	o.Token = "tok"
	h, err := dashboard.Mount(api.NewHandler(o), dashboard.Options{Version: "test"})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv.URL + "/"
}

// TestDoctorPageInBrowser opens the Doctor page in Chromium against a
// fake control plane: it shows the finding, the workers coloured by
// state, and the decisions with their evidence and outcome, and follows a
// new decision. A host without a control plane says control is off. The
// screenshot goes where TestDashboardInBrowser's go.
func TestDoctorPageInBrowser(t *testing.T) {
	if raceEnabled {
		t.Skip("the browser tests run without the race detector (the routes are raced in host/api)")
	}
	browser := chromium(t)
	fake := newFakeControlPlane()
	with, without := siteWith(t, api.Options{ControlPlane: fake.control}), siteWith(t, api.Options{})
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

	open(with + "#/doctor")
	waitFor(ctx, t, "the workers", `document.querySelectorAll("#dr-workers tr[data-worker]").length === 3`)
	if s := text(ctx, t, "#dr-info"); !strings.Contains(s, "Policies latency, ds2, straggler, doctor") || !strings.Contains(s, "61 rounds") {
		t.Errorf("the control plane's line: %q", s)
	}
	if s := text(ctx, t, "#dr-severe"); s != "1 of 3" {
		t.Errorf("severe workers: %q", s)
	}
	if s := text(ctx, t, "#dr-findings"); !strings.Contains(s, "hot-key") || !strings.Contains(s, "one key is 41% of the operator's input") ||
		!strings.Contains(s, "evidence: share of key k17 0.41 ratio") || !strings.Contains(s, "recommendation: salt the key") {
		t.Errorf("the findings: %q", s)
	}
	if s := text(ctx, t, `#dr-workers tr[data-worker="count/2"]`); !strings.Contains(s, "saturated") || !strings.Contains(s, "severe") || !strings.Contains(s, "1.06") {
		t.Errorf("worker count/2's row: %q", s)
	}
	colours, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](`["good", "moderate", "severe"].map(s => getComputedStyle(document.querySelector('#dr-workers tr[data-state="' + s + '"] .pill.state')).backgroundColor)`))
	if err != nil {
		t.Fatal(err)
	}
	if colours[0] == colours[1] || colours[1] == colours[2] || colours[0] == colours[2] {
		t.Errorf("good, moderate and severe workers coloured %v: want three colours", colours)
	}
	if s := text(ctx, t, `#dr-decisions li[data-id="2"]`); !strings.Contains(s, "move-groups count: group 17 worker 2 → 0") || !strings.Contains(s, "rolled back") ||
		!strings.Contains(s, "evidence: delay of count/2 400.0 ms") || !strings.Contains(s, "observed: delay of count/0 600.0 ms") ||
		!strings.Contains(s, "worker count/2 is severe") || !strings.Contains(s, "trigger: condition: latency over the bound") {
		t.Errorf("decision 2: %q", s)
	}
	if s := text(ctx, t, `#dr-decisions li[data-id="1"]`); !strings.Contains(s, "set-workers count 2 → 3") || !strings.Contains(s, "kept") ||
		!strings.Contains(s, "predicted: utilization of count 0.80 ratio") {
		t.Errorf("decision 1: %q", s)
	}
	outcomes, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](`[...document.querySelectorAll("#dr-decisions li")].map(li => li.className)`))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(outcomes, " ") != "outcome-rolled-back outcome-kept" {
		t.Errorf("the decisions' classes %q", outcomes)
	}
	screenshot(ctx, t, shots, "doctor")

	// The page follows the control plane.
	fake.mu.Lock()
	fake.doc.Rounds = 62
	fake.doc.Decisions = append([]schema.Decision{{ID: 3, Time: time.Now(), Trigger: "request: test", Policy: "ds2",
		Action: schema.Action{Kind: "set-workers", Operator: "count", From: 3, To: 4}, Reason: "more input", Outcome: "failed",
		Error: "operator count is on trial"}}, fake.doc.Decisions...)
	fake.mu.Unlock()
	waitFor(ctx, t, "the new decision", `!!document.querySelector('#dr-decisions li[data-id="3"]')`)
	if s := text(ctx, t, `#dr-decisions li:first-child`); !strings.Contains(s, "failed") || !strings.Contains(s, "operator count is on trial") {
		t.Errorf("the newest decision: %q", s)
	}
	if errs := console.take(); len(errs) > 0 {
		t.Errorf("the doctor page logged errors:\n%s", strings.Join(errs, "\n"))
	}

	open(without + "#/doctor")
	waitFor(ctx, t, "the page saying control is off", `((document.querySelector(".unavailable") || {}).textContent || "").includes("Control is off: add a control: section to the pipeline file (docs/control.md)")`)
	if errs := console.take(); len(errs) > 0 {
		t.Errorf("the doctor page of a host without a control plane logged errors:\n%s", strings.Join(errs, "\n"))
	}
	if err := chromedp.Cancel(ctx); err != nil && !errors.Is(err, context.Canceled) {
		t.Logf("closing the browser: %v", err)
	}
}
