package main

import (
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	wasm "github.com/sluicehq/sluice/runtime"
)

// registerEngineFlag adds --engine to cmd, stored in p: the WebAssembly
// engine that runs the modules the command runs.
func registerEngineFlag(cmd *cobra.Command, p *string) {
	cmd.Flags().StringVar(p, "engine", wasm.EngineWazero,
		"the WebAssembly engine that runs the module: wazero, or wasmtime in a build with the wasmtime tag")
}

// checkEngineFlag refuses an --engine value this build cannot run, as a
// usage error that says why and, for wasmtime, how to get a build that
// holds it.
func checkEngineFlag(name string) error {
	switch err := wasm.CheckEngine(name); {
	case errors.Is(err, wasm.ErrEngineNotBuilt):
		return &usageError{fmt.Sprintf("--engine %s: this build of sluice does not hold the %s engine (it was built without the %s build tag): build sluice with %s, or leave --engine out to use %s",
			name, name, wasm.EngineWasmtime, wasm.WasmtimeBuild, wasm.EngineWazero)}
	case err != nil:
		return &usageError{fmt.Sprintf("--engine %q: unknown engine (want %s or %s)", name, wasm.EngineWazero, wasm.EngineWasmtime)}
	}
	return nil
}
