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
