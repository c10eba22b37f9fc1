//go:build !wasmtime

package runtime

import "context"

// wasmtimeBuilt reports whether this build holds the wasmtime engine.
const wasmtimeBuilt = false

// newWasmtime is never called in a build without wasmtime: CheckEngine
// refuses the name first.
func newWasmtime(context.Context, Config) (Engine, error) {
	return nil, CheckEngine(EngineWasmtime)
}
