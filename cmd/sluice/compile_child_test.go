package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	wasm "github.com/sluicehq/sluice/runtime"
)

// The sluice binary, started as a ProcessCompiler's child, compiles a
// plugin into the cache it is given, and reports a module it cannot
// compile by name.
func TestSluiceServesChildCompiles(t *testing.T) {
	ctx := context.Background()
	code, err := os.ReadFile(filepath.Join(pluginsDir, "upper.wasm"))
	if err != nil {
		t.Fatal(err)
	}
	cache := t.TempDir()
	cfg := wasm.NewConfig().WithCacheDir(cache)
	pc := &wasm.ProcessCompiler{Path: sluiceBin, Nice: wasm.LowestNice}
	if err := pc.Compile(ctx, wasm.EngineWazero, cfg, "upper.wasm", code); err != nil {
		t.Fatal(err)
	}
	entries, err := filepath.Glob(filepath.Join(cache, "wazero-*", "*"))
	if err != nil || len(entries) != 1 {
		t.Errorf("the cache holds %v (%v), want one compiled module", entries, err)
	}
	err = pc.Compile(ctx, wasm.EngineWazero, cfg, "broken.wasm", code[:len(code)/2])
	if err == nil || !strings.Contains(err.Error(), "sluice: compile:") || !strings.Contains(err.Error(), `"broken.wasm"`) {
		t.Errorf("compiling half a module: %v, want the child's error naming it", err)
	}
}
