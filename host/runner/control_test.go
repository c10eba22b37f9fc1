package runner

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/sluicehq/sluice/host/pipeline"
	"github.com/sluicehq/sluice/host/registry"
	"github.com/sluicehq/sluice/sdk/go/wasmbuild"
)

const swapPipeline = `
name: swap
sources:
  - name: seq
    type: generator
    mode: sequence
    rate: 20000
operators:
  - name: case
    plugin: upper.wasm
    kind: map
    parallelism: 2
    rollback_batches: 2
sinks:
  - name: out
    type: file
    path: out.jsonl
dead_letter:
  path: dead.jsonl
http:
  addr: 127.0.0.1:0
  auth: all
  max_body_bytes: 16MiB
`

// TestSwapAndRollbackThroughTheAPI runs a pipeline, swaps its operator's
// plugin through the HTTP API with the token the host wrote, rolls it back,
// and checks the registry, the refusals, and that every generated record
// reached the sink exactly once.
func TestSwapAndRollbackThroughTheAPI(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	mods, err := wasmbuild.GoModules(ctx, map[string]string{"upper": "../../plugins/upper", "lower": "../exec/testdata/lower"})
	if err != nil {
		t.Fatal(err)
	}
	upper, lower := versioned(t, mods["upper"], "upper-1.0"), versioned(t, mods["lower"], "lower-2.0")
	if err := os.WriteFile(filepath.Join(dir, "upper.wasm"), upper, 0o644); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(dir, "p.yaml"), swapPipeline)
	data := filepath.Join(dir, "data")
	h := startPipeline(ctx, t, dir, Options{DataDir: data})
	stop := runInBackground(ctx, h)
	defer stop()

	st, err := os.Stat(filepath.Join(data, TokenFile))
	if err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("token file: %v, mode %v; want mode 0600", err, st.Mode())
	}
	token, err := ReadToken(data)
	if err != nil || len(token) != 64 {
		t.Fatalf("token %q, %v: want 32 random bytes in hex", token, err)
	}
	base := "http://" + h.HTTPAddr()
	post := func(path, tok string, body []byte) (int, string) {
		req, _ := http.NewRequest("POST", base+path, bytes.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+tok)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}

	if code, body := post("/api/v1/operators/case/swap?file=lower.wasm", "wrong", lower); code != 401 {
		t.Errorf("swap with a wrong token: %d %s", code, body)
	}
	if code, body := post("/api/v1/operators/case/swap?file=junk.wasm", token, []byte("not wasm")); code != 422 {
		t.Errorf("swap with junk: %d %s, want 422", code, body)
	}
	if code, body := post("/api/v1/operators/nope/swap", token, lower); code != 404 {
		t.Errorf("swap of an unknown operator: %d %s, want 404", code, body)
	}
	if code, body := post("/api/v1/operators/case/rollback", token, nil); code != 409 {
		t.Errorf("rollback with no history: %d %s, want 409", code, body)
	}
	if len(lower) > 16<<20 {
		t.Fatalf("lower.wasm is %d bytes, past the pipeline's max_body_bytes", len(lower))
	}
	if code, body := post("/api/v1/operators/case/swap?file=big.wasm", token, make([]byte, 16<<20+1)); code != 413 {
		t.Errorf("swap of a module past http.max_body_bytes: %d %s, want 413", code, body)
	}
	code, body := post("/api/v1/operators/case/swap?file=lower.wasm", token, lower)
	if code != 200 {
		t.Fatalf("swap: %d %s", code, body)
	}
	var res SwapResult
	if err := json.Unmarshal([]byte(body), &res); err != nil || res.From.Version != "upper-1.0" || res.To.Version != "lower-2.0" {
		t.Errorf("swap answer %s (%v)", body, err)
	}
	if v := h.Status().Operators[0].Version; v != "lower-2.0" {
		t.Errorf("status version %q after the swap", v)
	}
	get := func(tok string) *http.Response {
		req, _ := http.NewRequest("GET", base+"/api/v1/plugins", nil)
		req.Header.Set("Authorization", "Bearer "+tok)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	resp := get("wrong")
	resp.Body.Close()
	if resp.StatusCode != 401 {
		t.Errorf("GET /api/v1/plugins with a wrong token under http.auth all: %d, want 401", resp.StatusCode)
	}
	resp = get(token)
	var pl Plugins
	err = json.NewDecoder(resp.Body).Decode(&pl)
	resp.Body.Close()
	if err != nil || len(pl.Modules) != 2 || len(pl.Operators) != 1 || pl.Operators[0].Current.Version != "lower-2.0" ||
		len(pl.Operators[0].Previous) != 1 || pl.Operators[0].Previous[0].Version != "upper-1.0" {
		t.Errorf("plugins %+v (%v)", pl, err)
	}
	if code, body := post("/api/v1/operators/case/rollback", token, nil); code != 200 {
		t.Fatalf("rollback: %d %s", code, body)
	}
	if v := h.Status().Operators[0].Version; v != "upper-1.0" {
		t.Errorf("status version %q after the rollback", v)
	}
	if ents, err := os.ReadDir(filepath.Join(data, "uploads")); err != nil || len(ents) != 0 {
		t.Errorf("uploads directory after the swaps: %d files (%v), want it there and empty", len(ents), err)
	}
	deps, err := h.reg.Deployments("case")
	if err != nil {
		t.Fatal(err)
	}
	var reasons []string
	for _, d := range deps {
		reasons = append(reasons, d.Reason)
	}
	if fmt.Sprint(reasons) != "[start swap rollback]" {
		t.Errorf("deployments %v", reasons)
	}

	if err := stop(); err != nil {
		t.Fatal(err)
	}
	// Every generated position came out once, in order.
	f, err := os.Open(filepath.Join(dir, "out.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	n := 0
	for sc.Scan() {
		var rec struct{ Value string }
		if err := json.Unmarshal(sc.Bytes(), &rec); err != nil {
			t.Fatal(err)
		}
		n++
		if rec.Value != strconv.Itoa(n) {
			t.Fatalf("output %d is %q: a record was lost or repeated", n, rec.Value)
		}
	}
	if n == 0 {
		t.Error("no outputs")
	}
}

// TestRestartResumesTheDeployedModule checks that a swap outlives a
// restart when the pipeline file still names the module it replaced, that
// the rollback history is rebuilt from the registry, and that a pipeline
// file changed since the last start wins.
func TestRestartResumesTheDeployedModule(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	mods, err := wasmbuild.GoModules(ctx, map[string]string{"upper": "../../plugins/upper", "lower": "../exec/testdata/lower"})
	if err != nil {
		t.Fatal(err)
	}
	version := func(name, v string) []byte { return versioned(t, mods[name], v) }
	writeModule := func(b []byte) {
		if err := os.WriteFile(filepath.Join(dir, "upper.wasm"), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	writeModule(version("upper", "upper-1.0"))
	writeFile(t, filepath.Join(dir, "p.yaml"), swapPipeline)
	p, err := pipeline.Load(filepath.Join(dir, "p.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	opts := Options{DataDir: filepath.Join(dir, "data"), HTTPAddr: "off", Logger: slog.New(slog.DiscardHandler)}
	// run starts the host, checks the version it starts with and the
	// modules a rollback would return to (most recent first), runs act while the pipeline runs, and stops it.
	run := func(wantVersion string, wantPrevious []string, act func(h *Host)) {
		t.Helper()
		h, err := Start(ctx, p, opts)
		if err != nil {
			t.Fatal(err)
		}
		if v := h.Status().Operators[0].Version; v != wantVersion {
			t.Errorf("started with %q, want %q", v, wantVersion)
		}
		pl, err := h.Plugins()
		if err != nil {
			t.Fatal(err)
		}
		var prev []string
		for _, e := range pl.Operators[0].Previous {
			prev = append(prev, e.Version)
		}
		if fmt.Sprint(prev) != fmt.Sprint(wantPrevious) {
			t.Errorf("started with previous modules %q, want %q", prev, wantPrevious)
		}
		stop := runInBackground(ctx, h)
		if act != nil {
			act(h)
		}
		if err := stop(); err != nil {
			t.Fatal(err)
		}
	}
	run("upper-1.0", nil, func(h *Host) {
		if _, err := h.Swap(ctx, "case", "lower.wasm", version("lower", "lower-2.0")); err != nil {
			t.Fatal(err)
		}
	})
	// The file still names upper-1.0: the swap holds.
	run("lower-2.0", []string{"upper-1.0"}, func(h *Host) {
		if _, err := h.Rollback(ctx, "case"); err != nil {
			t.Fatal(err)
		}
	})
	run("upper-1.0", nil, nil)
	// A new release in the pipeline file: it runs, and upper-1.0 is the
	// module to roll back to.
	writeModule(version("upper", "upper-3.0"))
	run("upper-3.0", []string{"upper-1.0"}, func(h *Host) {
		if _, err := h.Swap(ctx, "case", "lower.wasm", version("lower", "lower-2.0")); err != nil {
			t.Fatal(err)
		}
	})
	run("lower-2.0", []string{"upper-3.0", "upper-1.0"}, nil) // most recent first
}

// versioned returns module with version v written into its custom section.
func versioned(t *testing.T, module []byte, v string) []byte {
	t.Helper()
	b, err := registry.AppendVersion(module, v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// runInBackground runs h until the returned stop is called; stop returns
// Run's error, and may be called again (it then returns nil).
// startPipeline loads the pipeline file dir/p.yaml and starts a host for
// it with opts, logging nowhere unless opts say otherwise.
func startPipeline(ctx context.Context, t *testing.T, dir string, opts Options) *Host {
	t.Helper()
	p, err := pipeline.Load(filepath.Join(dir, "p.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	h, err := Start(ctx, p, opts)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

func runInBackground(ctx context.Context, h *Host) (stop func() error) {
	runCtx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- h.Run(runCtx) }()
	stopped := false
	return func() error {
		if stopped {
			return nil
		}
		stopped = true
		cancel()
		return <-done
	}
}
