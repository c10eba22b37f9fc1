//go:build wasmtime

package runtime

import (
	"context"
	"testing"
)

// engineName names the engine under test in benchmark and test output.
const engineName = "wasmtime"

// stopsOnCancel: wasmtime-go cannot interrupt one store from another
// goroutine except by its epoch deadline, so a cancelled call stops at the
// call timeout (and is reported as cancelled).
const stopsOnCancel = false

func newEngineErr(cfg Config) (Engine, error) { return NewWasmtime(context.Background(), cfg) }

// newEngine returns a wasmtime engine closed at the end of the test.
func newEngine(t testing.TB, cfg Config) Engine {
	t.Helper()
	e, err := newEngineErr(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = e.Close(context.Background()) })
	return e
}

// A host call looks nothing up per call: the calling instance's memory and
// the results slice are kept on the instance, so what a guest-to-host
// round trip allocates is wasmtime-go's own (its argument values, the
// boxed result of the call): 3 allocations. Looking the memory export up
// through the Caller on every host call made 8.
func TestWasmtimeHostCallAllocations(t *testing.T) {
	e := newEngine(t, testConfig().WithCallTimeout(0))
	f := fn(t, instantiate(t, compile(t, e, "hostcall", guests["hostcall"])), "call_host")
	ctx := context.Background()
	stack := make([]uint64, 2)
	allocs := testing.AllocsPerRun(100, func() {
		if err := f.Call(ctx, stack); err != nil {
			t.Fatal(err)
		}
	})
	if allocs > 3 {
		t.Errorf("a guest-to-host round trip allocates %v times, want at most 3 (wasmtime-go's own)", allocs)
	}
}
