package runner

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	wasm "github.com/sluicehq/sluice/runtime"
	"github.com/sluicehq/sluice/sdk/go/wasmbuild"
)

// An operator's plugin runs on the engine its engine key names: wazero by
// default, and wasmtime in a build with the wasmtime tag (a build without
// it refuses the file, which host/pipeline tests).
func TestOperatorRunsOnItsEngine(t *testing.T) {
	ctx := context.Background()
	mods, err := wasmbuild.GoModules(ctx, map[string]string{"upper": "../../plugins/upper"})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"": "*runtime.wazeroEngine", "wazero": "*runtime.wazeroEngine", "wasmtime": "*runtime.wasmtimeEngine"}
	for _, engine := range []string{"", wasm.EngineWazero, wasm.EngineWasmtime} {
		if wasm.CheckEngine(engine) != nil {
			continue
		}
		t.Run("engine="+engine, func(t *testing.T) {
			dir := t.TempDir()
			if err := os.WriteFile(filepath.Join(dir, "upper.wasm"), mods["upper"], 0o644); err != nil {
				t.Fatal(err)
			}
			writeFile(t, filepath.Join(dir, "in.txt"), "a\nb\n")
			key := ""
			if engine != "" {
				key = "\n    engine: " + engine
			}
			writeFile(t, filepath.Join(dir, "p.yaml"), fmt.Sprintf(`name: eng
compile_cache: cache
sources:
  - name: in
    type: file
    path: in.txt
    format: lines
operators:
  - name: up
    plugin: upper.wasm
    kind: map%s
sinks:
  - name: out
    type: file
    path: out.jsonl
`, key))
			h := startPipeline(ctx, t, dir, Options{DataDir: filepath.Join(dir, "data")})
			defer func() {
				if err := h.Close(ctx); err != nil {
					t.Error(err)
				}
			}()
			if len(h.engines) != 1 {
				t.Fatalf("%d engines, want 1", len(h.engines))
			}
			if got := fmt.Sprintf("%T", h.engines[0]); got != want[engine] {
				t.Errorf("the operator runs on a %s, want a %s", got, want[engine])
			}
		})
	}
}
