package runner

import (
	"context"
	"errors"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/host/api"
	"github.com/sluicehq/sluice/host/api/schema"
	"github.com/sluicehq/sluice/host/registry"
	"github.com/sluicehq/sluice/sdk/go/wasmbuild"
)

// TestPrepareThenSwap prepares a module through the API, checks that the
// pipeline still runs the old one and that refusals name the operator and
// the module, then swaps the prepared module in and checks that the swap
// neither checked nor loaded it again, and that every answer's times add
// up.
func TestPrepareThenSwap(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	mods, err := wasmbuild.GoModules(ctx, map[string]string{
		"upper": "../../plugins/upper", "lower": "../exec/testdata/lower", "version2": "../plugin/testdata/guests/version2",
	})
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
	token, err := ReadToken(data)
	if err != nil {
		t.Fatal(err)
	}
	c := &api.Client{Addr: h.HTTPAddr(), Token: token}
	preparedHash := func() string {
		h.ctlMu.Lock()
		defer h.ctlMu.Unlock()
		if p := h.deployed["case"].prepared; p != nil {
			return p.entry.SHA256
		}
		return ""
	}

	// Refusals name the operator and the module, and prepare nothing.
	for _, tc := range []struct {
		operator, file string
		module         []byte
		is             error
		want           []string
	}{
		{"nope", "lower.wasm", lower, api.ErrNotFound, []string{`"nope"`, "lower.wasm"}},
		{"case", "junk.wasm", []byte("not wasm"), api.ErrRefused, []string{`"case"`, "junk.wasm"}},
		{"case", "v2.wasm", mods["version2"], api.ErrRefused, []string{`"case"`, "v2.wasm", "ABI version 2"}},
	} {
		_, err := c.Prepare(ctx, tc.operator, tc.file, tc.module)
		if !errors.Is(err, tc.is) {
			t.Errorf("prepare %s for %s: %v, want %v", tc.file, tc.operator, err, tc.is)
			continue
		}
		for _, w := range tc.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("prepare %s for %s: %v, want it to say %s", tc.file, tc.operator, err, w)
			}
		}
	}
	if got := preparedHash(); got != "" {
		t.Fatalf("after refusals, %s is prepared", got)
	}

	pr, err := c.Prepare(ctx, "case", "lower.wasm", lower)
	if err != nil {
		t.Fatal(err)
	}
	hash := registry.Hash(lower)
	if pr.Operator != "case" || pr.Module.SHA256 != hash || pr.Module.Version != "lower-2.0" || pr.Source != schema.SourceUpload {
		t.Errorf("prepare answered %+v", pr)
	}
	if pr.Steps.CheckMS <= 0 || pr.Steps.LoadMS <= 0 || micros(pr.Steps.TotalMS) < micros(pr.Steps.CheckMS)+micros(pr.Steps.LoadMS) {
		t.Errorf("prepare's steps %+v: want the check and the load timed, within the total", pr.Steps)
	}
	if _, err := h.reg.Get(hash); err != nil {
		t.Errorf("the prepared module is not in the registry: %v", err)
	}
	if got := preparedHash(); got != hash {
		t.Errorf("prepared %q, want %q", got, hash)
	}
	if v := h.Status().Operators[0].Version; v != "upper-1.0" {
		t.Errorf("after a prepare the operator runs %q, want upper-1.0 still", v)
	}
	// The same bytes again: found in the registry, not checked again.
	pr, err = c.Prepare(ctx, "case", "lower-again.wasm", lower)
	if err != nil || pr.Source != schema.SourceRegistry || pr.Steps.CheckMS != 0 || pr.Module.Name != "lower.wasm" {
		t.Errorf("second prepare: %+v, %v; want the registry's entry, unchecked", pr, err)
	}

	sw, err := c.Swap(ctx, "case", "lower.wasm", lower)
	if err != nil {
		t.Fatal(err)
	}
	if sw.Source != schema.SourcePrepared || sw.Steps.CheckMS != 0 || sw.Steps.LoadMS != 0 || sw.From.Version != "upper-1.0" || sw.To.Version != "lower-2.0" {
		t.Errorf("swap of the prepared module answered %+v: want it neither checked nor loaded again", sw)
	}
	checkSteps(t, "swap of the prepared module", sw.Steps)
	if v := h.Status().Operators[0].Version; v != "lower-2.0" {
		t.Errorf("after the swap the operator runs %q", v)
	}
	if got := preparedHash(); got != "" {
		t.Errorf("after its swap, %s is still prepared", got)
	}

	// A rollback loads the module it returns to from the registry.
	rb, err := c.Rollback(ctx, "case")
	if err != nil {
		t.Fatal(err)
	}
	if rb.Source != schema.SourceRegistry || rb.Steps.CheckMS != 0 || rb.Steps.LoadMS <= 0 || rb.To.Version != "upper-1.0" {
		t.Errorf("rollback answered %+v", rb)
	}
	checkSteps(t, "rollback", rb.Steps)

	// A swap of a module new to the host checks it; one prepared before
	// it and not swapped in is closed.
	if _, err := c.Prepare(ctx, "case", "lower.wasm", lower); err != nil {
		t.Fatal(err)
	}
	lower3 := versioned(t, mods["lower"], "lower-3.0")
	sw, err = c.Swap(ctx, "case", "lower3.wasm", lower3)
	if err != nil {
		t.Fatal(err)
	}
	if sw.Source != schema.SourceUpload || sw.Steps.CheckMS <= 0 || sw.Steps.LoadMS <= 0 || sw.To.Version != "lower-3.0" {
		t.Errorf("swap of a new module answered %+v", sw)
	}
	checkSteps(t, "swap of a new module", sw.Steps)
	if got := preparedHash(); got != "" {
		t.Errorf("after the swap of another module, %s is still prepared", got)
	}

	// Run closes the host, which closes what is prepared and refuses
	// more.
	if _, err := c.Prepare(ctx, "case", "lower.wasm", lower); err != nil {
		t.Fatal(err)
	}
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	if got := preparedHash(); got != "" {
		t.Errorf("after Close, %s is still prepared", got)
	}
	if _, err := h.Prepare(ctx, "case", "lower.wasm", lower); !errors.Is(err, api.ErrConflict) {
		t.Errorf("prepare after Close: %v, want ErrConflict", err)
	}
}

// micros returns ms, a time the API gives in milliseconds to the
// microsecond, in whole microseconds, so that sums are exact.
func micros(ms float64) int64 { return int64(math.Round(ms * 1000)) }

// checkSteps checks that a swap's steps were timed: none negative, the
// instances made (two workers), and the total at least their sum.
func checkSteps(t *testing.T, what string, s schema.SwapSteps) {
	t.Helper()
	parts := []float64{s.CheckMS, s.LoadMS, s.InstancesMS, s.BoundaryMS, s.InstallMS}
	var sum int64
	for _, p := range parts {
		if p < 0 {
			t.Errorf("%s: steps %+v: a negative time", what, s)
		}
		sum += micros(p)
	}
	if s.InstancesMS <= 0 || micros(s.TotalMS) < sum {
		t.Errorf("%s: steps %+v: want the instances timed and the total (%d µs) at least the sum of the steps (%d µs)", what, s, micros(s.TotalMS), sum)
	}
}
