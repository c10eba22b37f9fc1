package runtime

import (
	"context"
	"errors"
	"fmt"
)

// Names of the engines, as New and a pipeline's engine key take them.
const (
	// EngineWazero names NewWazero's engine, the default.
	EngineWazero = "wazero"
	// EngineWasmtime names NewWasmtime's engine, in builds with the
	// "wasmtime" tag only.
	EngineWasmtime = "wasmtime"
)

// WasmtimeBuild says how to get a build of sluice that holds the wasmtime
// engine, for the messages that refuse it in a build without.
const WasmtimeBuild = "go build -tags wasmtime ./cmd/sluice (cgo: it needs a C compiler, CGO_ENABLED=1)"

// Errors of CheckEngine and New, matched with errors.Is.
var (
	// ErrUnknownEngine: the name is no engine's.
	ErrUnknownEngine = errors.New("unknown engine")
	// ErrEngineNotBuilt: the engine exists but this binary was built
	// without it (wasmtime without the "wasmtime" build tag).
	ErrEngineNotBuilt = errors.New("engine not in this build")
)

// Engines lists the names of every engine, in this build or not: wazero
// first, the default.
func Engines() []string { return []string{EngineWazero, EngineWasmtime} }

// CheckEngine reports whether New can make the engine named name: nil for
// "" (wazero) and for an engine of this build, an error wrapping
// ErrEngineNotBuilt for wasmtime in a build without it, and one wrapping
// ErrUnknownEngine for any other name.
func CheckEngine(name string) error {
	switch name {
	case "", EngineWazero:
		return nil
	case EngineWasmtime:
		if wasmtimeBuilt {
			return nil
		}
		return fmt.Errorf("runtime: engine %q: %w: this binary was built without the wasmtime build tag; build one with %s",
			name, ErrEngineNotBuilt, WasmtimeBuild)
	}
	return fmt.Errorf("runtime: engine %q: %w (want %s or %s)", name, ErrUnknownEngine, EngineWazero, EngineWasmtime)
}

// New returns the engine named name, configured with cfg: NewWazero for
// "wazero" or "", NewWasmtime for "wasmtime" in a build with the
// "wasmtime" tag. Another name, or wasmtime in a build without it, fails
// with CheckEngine's error. With a Compiler and a cache directory in cfg,
// the engine has the Compiler compile each new module before it loads it.
func New(ctx context.Context, name string, cfg Config) (Engine, error) {
	if err := CheckEngine(name); err != nil {
		return nil, err
	}
	var eng Engine
	var err error
	if name == EngineWasmtime {
		eng, err = newWasmtime(ctx, cfg)
	} else {
		eng, err = NewWazero(ctx, cfg)
	}
	if err != nil {
		return nil, err
	}
	return withCompiler(eng, name, cfg), nil
}
