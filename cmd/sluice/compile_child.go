package main

import (
	"fmt"
	"os"

	wasm "github.com/sluicehq/sluice/runtime"
)

// selfCompiler returns the compiler that compiles plugins in a child
// sluice process at the lowest CPU priority (runtime.ProcessCompiler),
// so that a module compiled while a pipeline runs (a swap, a rollback)
// leaves the CPU to the pipeline; nil when this executable cannot be
// found, and the engines compile in this process.
func selfCompiler() wasm.Compiler {
	exe, err := os.Executable()
	if err != nil {
		return nil
	}
	return &wasm.ProcessCompiler{Path: exe, Nice: wasm.LowestNice}
}

// serveCompileChild serves one compile for the sluice process that
// started this one (runtime.ServeCompile) and returns the exit status.
func serveCompileChild() int {
	ctx, stop := signalContext()
	defer stop()
	if err := wasm.ServeCompile(ctx, os.Stdin); err != nil {
		fmt.Fprintln(os.Stderr, "sluice: compile:", err)
		return exitFailure
	}
	return 0
}
