//go:build !wasmtime

package runtime

import (
	"context"
	"testing"
)

// engineName names the engine under test in benchmark and test output.
const engineName = "wazero"

// stopsOnCancel: wazero stops a running guest as soon as the caller's
// context is cancelled.
const stopsOnCancel = true

func newEngineErr(cfg Config) (Engine, error) { return NewWazero(context.Background(), cfg) }

// newEngine returns a wazero engine closed at the end of the test.
func newEngine(t testing.TB, cfg Config) Engine {
	t.Helper()
	e, err := newEngineErr(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = e.Close(context.Background()) })
	return e
}

// Calls allocate nothing when the timeout is off: not the engine, not the
// stack-based host function adapter.
func TestWazeroCallsDoNotAllocate(t *testing.T) {
	e := newEngine(t, testConfig().WithCallTimeout(0))
	ctx := context.Background()
	raw := instantiate(t, compile(t, e, "raw", rawModule()))
	host := instantiate(t, compile(t, e, "hostnop", hostNopModule()))
	hc := instantiate(t, compile(t, e, "hostcall", guests["hostcall"]))
	stack := make([]uint64, 2)
	for _, tc := range []struct {
		name string
		f    Func
	}{
		{"empty export", fn(t, raw, "noop")},
		{"host round trip", fn(t, host, "call_nop")},
		{"go guest host round trip", fn(t, hc, "call_host")},
	} {
		allocs := testing.AllocsPerRun(1000, func() {
			if err := tc.f.Call(ctx, stack); err != nil {
				t.Fatal(err)
			}
		})
		if allocs != 0 {
			t.Errorf("%s: %v allocations per call, want 0", tc.name, allocs)
		}
	}
}
