package dashboard_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"

	"github.com/sluicehq/sluice/host/pipeline"
	"github.com/sluicehq/sluice/host/runner"
	"github.com/sluicehq/sluice/sdk/go/wasmbuild"
)

// mapPipeline: generated records through one map operator, whose plugin
// the test swaps from the page.
const mapPipeline = `
name: dash
sources:
  - {name: seq, type: generator, mode: sequence, rate: 3000}
operators:
  - {name: up, plugin: upper.wasm, kind: map, parallelism: 2}
sinks:
  - {name: out, type: file, path: out.jsonl}
dead_letter: {path: dead.jsonl}
`

// ledgerPipeline: Streaming Ledger under the adaptive strategy.
const ledgerPipeline = `
name: ledger
sources:
  - {name: events, type: generator, mode: txn, app: sl, rate: 3000, knobs: {keys: 200, seed: 7}}
operators:
  - name: ledger
    plugin: ledger.wasm
    kind: transactional
    tables:
      - {name: accounts, init: {generator: {app: sl, keys: 200, seed: 7}}}
      - {name: book_entries, init: {generator: {app: sl, keys: 200, seed: 7}}}
    punctuation: {events: 64, interval: 5ms}
    strategy: adaptive
    workers: 2
sinks:
  - {name: out, type: file, path: out.jsonl}
dead_letter: {path: dead.jsonl}
`

// windowPipeline: a windowed count over generated records whose event
// time advances with the host's clock (one record a millisecond), so that
// windows fire while the page is open.
const windowPipeline = `
name: windows
sources:
  - {name: seq, type: generator, mode: sequence, rate: 1000, keys: 20, watermark: {out_of_orderness: 100ms}}
operators:
  - name: per-second
    kind: aggregate
    function: count
    parallelism: 2
    window: {type: tumbling, size: 1s}
sinks:
  - {name: out, type: file, path: out.jsonl, format: json}
dead_letter: {path: dead.jsonl}
`

// chromium finds Debian's Chromium (or another Chrome), or skips the test
// unless SLUICE_REQUIRE_TOOLCHAINS=1, as the other toolchain tests do.
func chromium(t testing.TB) string {
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("SLUICE_REQUIRE_TOOLCHAINS") == "1" {
		t.Fatal("chromium is not installed; SLUICE_REQUIRE_TOOLCHAINS=1 requires it (scripts/install-toolchains.sh installs it)")
	}
	t.Skip("chromium is not installed (scripts/install-toolchains.sh installs it)")
	return ""
}

// host starts the pipeline text in dir with the given plugins, its API on
// a free port, and runs it until the test ends.
func host(t testing.TB, dir, text string, plugins map[string][]byte) *runner.Host {
	t.Helper()
	for name, code := range plugins {
		if err := os.WriteFile(filepath.Join(dir, name), code, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	file := filepath.Join(dir, "p.yaml")
	if err := os.WriteFile(file, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	p, err := pipeline.Load(file)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	h, err := runner.Start(ctx, p, runner.Options{DataDir: filepath.Join(dir, "data"), HTTPAddr: "127.0.0.1:0",
		Logger: slog.New(slog.DiscardHandler), Version: "test"})
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- h.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("the pipeline: %v", err)
		}
	})
	return h
}

// consoleErrors collects what a page logs as an error, and its uncaught
// exceptions.
type consoleErrors struct {
	mu   sync.Mutex
	errs []string
}

func (c *consoleErrors) listen(ev any) {
	c.mu.Lock()
	defer c.mu.Unlock()
	switch ev := ev.(type) {
	case *runtime.EventConsoleAPICalled:
		if ev.Type == runtime.ConsoleAPICalledTypeError {
			var args []string
			for _, a := range ev.Args {
				args = append(args, string(a.Value))
			}
			c.errs = append(c.errs, "console.error: "+strings.Join(args, " "))
		}
	case *runtime.EventExceptionThrown:
		d := ev.ExceptionDetails
		msg := d.Text
		if d.Exception != nil {
			msg += " " + d.Exception.Description
		}
		c.errs = append(c.errs, fmt.Sprintf("exception at %s:%d: %s", d.URL, d.LineNumber+1, msg))
	}
}

func (c *consoleErrors) take() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	errs := c.errs
	c.errs = nil
	return errs
}

// waitFor polls the page's expression until it is true, for at most two
// minutes (a swap compiles its module, slow on a busy machine).
func waitFor(ctx context.Context, t *testing.T, what, expr string) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for {
		ok, err := chromedp.Run(ctx, chromedp.Evaluate[bool](expr))
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		if ok {
			return
		}
		if time.Now().After(deadline) {
			// What the page shows then, to tell why.
			shown, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`"token placeholder: " + document.getElementById("token").placeholder + ", stored: " + (sessionStorage.getItem("sluice-token") || "none").length + " chars\\n" + document.body.innerText.slice(0, 3000)`))
			t.Fatalf("%s: not within two minutes (%s); the page shows:\n%s", what, expr, shown)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// text returns the text of the element sel.
func text(ctx context.Context, t *testing.T, sel string) string {
	t.Helper()
	s, err := chromedp.Run(ctx, chromedp.Evaluate[string](fmt.Sprintf(`(document.querySelector(%q) || {}).textContent || ""`, sel)))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// screenshot saves the page to dir/name.png.
func screenshot(ctx context.Context, t *testing.T, dir, name string) {
	t.Helper()
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, name+".png"), png, 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestDashboardInBrowser opens every page of the dashboard in Chromium
// against running pipelines: each loads without console errors, the
// charts advance while records flow, the transactional page shows the
// ledger's decisions, and a swap from the page is refused without the
// token and made with it. Screenshots go to a temporary directory, or to
// $SLUICE_DASHBOARD_SCREENSHOTS (docs/img to refresh the documentation's).
func TestDashboardInBrowser(t *testing.T) {
	if raceEnabled {
		// The page's swap compiles a module in the host, which the race
		// detector slows past any sensible wait on 2 cores; the page's Go
		// side (routes, the event stream) is raced in dashboard_test.go
		// and host/api.
		t.Skip("the browser test drives a swap; it runs without the race detector")
	}
	browser := chromium(t)
	mods, err := wasmbuild.GoModules(context.Background(), map[string]string{
		"upper": "../../plugins/upper", "lower": "../exec/testdata/lower", "ledger": "../../plugins/ledger",
	})
	if err != nil {
		t.Fatal(err)
	}
	shots := os.Getenv("SLUICE_DASHBOARD_SCREENSHOTS")
	if shots == "" {
		shots = t.TempDir()
	} else if err := os.MkdirAll(shots, 0o755); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	lower := filepath.Join(dir, "lower.wasm")
	if err := os.WriteFile(lower, mods["lower"], 0o644); err != nil {
		t.Fatal(err)
	}
	mapDir, ledgerDir, windowDir := filepath.Join(dir, "map"), filepath.Join(dir, "ledger"), filepath.Join(dir, "window")
	for _, d := range []string{mapDir, ledgerDir, windowDir} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	mh := host(t, mapDir, mapPipeline, map[string][]byte{"upper.wasm": mods["upper"]})
	lh := host(t, ledgerDir, ledgerPipeline, map[string][]byte{"ledger.wasm": mods["ledger"]})
	wh := host(t, windowDir, windowPipeline, nil)
	token, err := os.ReadFile(filepath.Join(mapDir, "data", "api-token"))
	if err != nil {
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
	// Everything below within six minutes, whatever the machine.
	ctx, cancel := context.WithTimeout(ctx, 6*time.Minute)
	defer cancel()

	open := func(h *runner.Host, page string) {
		t.Helper()
		if err := chromedp.Do(ctx, chromedp.Navigate(h.DashboardURL()+page)); err != nil {
			t.Fatal(err)
		}
		waitFor(ctx, t, "the page's first status", `document.body.dataset.ready === "1"`)
	}
	clean := func(page string) {
		t.Helper()
		if errs := console.take(); len(errs) > 0 {
			t.Errorf("%s logged errors:\n%s", page, strings.Join(errs, "\n"))
		}
	}

	// Overview: the graph, and charts that advance.
	open(mh, "#/")
	readyMs, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.body.dataset.readyMs`))
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("overview interactive %s ms after navigation started", readyMs)
	waitFor(ctx, t, "the graph's nodes", `document.querySelectorAll("#graph g.node").length === 3`)
	waitFor(ctx, t, "the throughput chart", `+document.querySelector("#chart-throughput").dataset.points >= 2`)
	first := text(ctx, t, "#t-in")
	last, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.querySelector("#chart-throughput").dataset.last`))
	if err != nil {
		t.Fatal(err)
	}
	waitFor(ctx, t, "the throughput chart advancing", fmt.Sprintf(`document.querySelector("#chart-throughput").dataset.last > %q`, last))
	waitFor(ctx, t, "records in rising", fmt.Sprintf(`document.querySelector("#t-in").textContent !== %q`, first))
	waitFor(ctx, t, "an edge's rate", `[...document.querySelectorAll("#graph .edge text")].some(e => e.textContent.endsWith("/s"))`)
	screenshot(ctx, t, shots, "overview")
	clean("overview")

	// Operator.
	open(mh, "#/operator/up")
	waitFor(ctx, t, "the operator's charts", `+document.querySelector("#chart-op-throughput").dataset.points >= 2 && +document.querySelector("#chart-op-latency").dataset.points >= 2`)
	waitFor(ctx, t, "the operator's workers", `document.querySelectorAll("tbody tr").length >= 2`)
	screenshot(ctx, t, shots, "operator")
	clean("operator")

	// Windows: a pipeline without windows says so; one with a windowed
	// count shows its source's watermark and the windows it fires.
	open(mh, "#/windows")
	waitFor(ctx, t, "the note that there are no windows", `document.querySelector("#page").textContent.includes("no windowed operator")`)
	clean("windows without windows")
	open(wh, "#/windows")
	waitFor(ctx, t, "the source's watermark", `[...document.querySelectorAll("#w-sources td")].some(td => td.textContent.includes("UTC"))`)
	waitFor(ctx, t, "the windowed operator", `[...document.querySelectorAll("#w-operators td")].some(td => td.textContent === "per-second")`)
	waitFor(ctx, t, "the firings and lag charts", `+document.querySelector("#chart-window-rates").dataset.points >= 2 && +document.querySelector("#chart-watermark-lag").dataset.points >= 2`)
	fired := text(ctx, t, "#w-operators td:nth-child(5)")
	waitFor(ctx, t, "windows firing", fmt.Sprintf(`document.querySelector("#w-operators td:nth-child(5)").textContent !== %q`, fired))
	screenshot(ctx, t, shots, "windows")
	clean("windows")

	// A host that runs the whole pipeline has no cluster to show
	// (cluster_test.go shows one).
	open(mh, "#/cluster")
	waitFor(ctx, t, "the cluster page saying why", `((document.querySelector(".unavailable") || {}).textContent || "").includes("does not run in cluster mode")`)
	clean("cluster")

	// A pipeline without a control: section has no control plane to show
	// (doctor_test.go shows one).
	open(mh, "#/doctor")
	waitFor(ctx, t, "the doctor page saying control is off", `((document.querySelector(".unavailable") || {}).textContent || "").includes("Control is off: add a control: section")`)
	clean("doctor")

	// Plugins: a swap without the token is refused, with it made.
	open(mh, "#/plugins")
	waitFor(ctx, t, "the operator's swap button", `!!document.querySelector("#swap-up")`)
	if err := chromedp.Do(ctx, chromedp.SetUploadFiles(chromedp.CSS("#swap-file-up"), []string{lower}), chromedp.Click(chromedp.CSS("#swap-up"))); err != nil {
		t.Fatal(err)
	}
	waitFor(ctx, t, "the swap's answer", `/refused|swapped/.test(document.querySelector("#swap-result-up").textContent)`)
	if s := text(ctx, t, "#swap-result-up"); !strings.Contains(s, "refused (401)") {
		t.Errorf("a swap without the token: %q, want it refused with 401", s)
	}
	if v := mh.Status().Operators[0].Swaps; v != 0 {
		t.Errorf("a swap without the token was made (%d swaps)", v)
	}
	console.take() // the browser may log the 401
	if err := chromedp.Do(ctx,
		chromedp.SendKeys(chromedp.CSS("#token"), strings.TrimSpace(string(token))), chromedp.Click(chromedp.CSS("#token-form button")),
	); err != nil {
		t.Fatal(err)
	}
	waitFor(ctx, t, "the plugins page again", `!!document.querySelector("#swap-up") && document.querySelector("#swap-result-up").textContent.includes("refused")`)
	if err := chromedp.Do(ctx, chromedp.SetUploadFiles(chromedp.CSS("#swap-file-up"), []string{lower}), chromedp.Click(chromedp.CSS("#swap-up"))); err != nil {
		t.Fatal(err)
	}
	waitFor(ctx, t, "the swap's answer", `/swapped:/.test(document.querySelector("#swap-result-up").textContent)`)
	if v := mh.Status().Operators[0].Swaps; v != 1 {
		t.Errorf("after a swap with the token: %d swaps, want 1", v)
	}
	waitFor(ctx, t, "the deployment in the history", `[...document.querySelectorAll("td")].some(td => td.textContent === "swap")`)
	screenshot(ctx, t, shots, "plugins")
	clean("plugins")

	// The transactional operator: outcomes, phases, decisions.
	open(lh, "#/operator/ledger")
	waitFor(ctx, t, "the transactions chart", `+(document.querySelector("#chart-txn-outcomes") || {dataset: {}}).dataset.points >= 2`)
	waitFor(ctx, t, "the time by phase", `document.querySelectorAll("#txn-phases span").length === 6`)
	waitFor(ctx, t, "the adaptive strategy's decisions", `document.querySelectorAll("#txn-decisions tbody tr").length >= 2`)
	waitFor(ctx, t, "a sampled batch's task precedence graph", `document.querySelectorAll("#tpg g.tpg-op").length >= 2`)
	// Which kinds a batch has depends on its events; a ledger's
	// transactions have several operations (logical) and share accounts,
	// but a batch cut small by a busy machine may touch each account once:
	// until a sampled batch has a temporal or parametric dependency, the
	// test asks for another sample (the page's button), every 2 s.
	waitFor(ctx, t, "the graph's logical dependencies", `document.querySelectorAll("#tpg path.tpg-edge.logical").length >= 1`)
	waitFor(ctx, t, "the graph's temporal or parametric dependencies", `(() => {
		if (document.querySelectorAll("#tpg path.tpg-edge.temporal, #tpg path.tpg-edge.parametric").length >= 1) return true;
		const again = document.querySelector("#tpg-again");
		if (again && !(Date.now() < (window.tpgAskedAt || 0) + 2000)) { window.tpgAskedAt = Date.now(); again.click(); }
		return false;
	})()`)
	waitFor(ctx, t, "the order the units ran in", `[...document.querySelectorAll("#tpg g.tpg-op")].some(g => +g.dataset.order > 0)`)
	screenshot(ctx, t, shots, "transactional")
	clean("transactional")
	open(lh, "#/")
	waitFor(ctx, t, "the ledger's graph", `document.querySelectorAll("#graph g.node").length === 3`)
	clean("ledger overview")
	again, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.body.dataset.readyMs`))
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("the ledger's overview interactive %s ms after navigation started (the browser warm)", again)

	if ms, err := strconv.Atoi(readyMs); err == nil && ms <= 0 {
		t.Errorf("interactive after %d ms", ms)
	}
	if err := chromedp.Cancel(ctx); err != nil && !errors.Is(err, context.Canceled) {
		t.Logf("closing the browser: %v", err)
	}
}
