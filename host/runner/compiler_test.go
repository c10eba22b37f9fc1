package runner

import (
	"context"
	"path/filepath"
	"slices"
	"sync"
	"testing"

	wasm "github.com/sluicehq/sluice/runtime"
)

// recordingCompiler records the modules it is asked to compile and leaves
// the compile to the engine.
type recordingCompiler struct {
	mu    sync.Mutex
	names []string
}

func (c *recordingCompiler) Compile(_ context.Context, _ string, cfg wasm.Config, name string, _ []byte) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if cfg.CacheDir() != "" {
		c.names = append(c.names, name)
	}
	return nil
}

func (c *recordingCompiler) compiled() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.names)
}

// The host's Compiler is asked for the operator's module at start and for
// a swapped-in module once, though the swap both checks and loads it.
func TestCompilerCompilesWhatTheHostLoads(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	rc := &recordingCompiler{}
	h, lower := startSwapPipelineWith(t, dir, Options{Compiler: rc})
	stop := runInBackground(ctx, h)
	if got := rc.compiled(); !slices.ContainsFunc(got, func(name string) bool { return filepath.Base(name) == "upper.wasm" }) {
		t.Fatalf("compiled %v at start, want upper.wasm among them", got)
	}
	if _, err := h.Swap(ctx, "case", "lower.wasm", lower); err != nil {
		t.Fatal(err)
	}
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, name := range rc.compiled() {
		if name == "lower.wasm" {
			n++
		}
	}
	if n != 1 {
		t.Errorf("the swapped-in lower.wasm was compiled %d times by the compiler (%v), want once", n, rc.compiled())
	}
}
