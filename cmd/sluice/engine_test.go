package main

import (
	"path/filepath"
	"strings"
	"testing"

	wasm "github.com/sluicehq/sluice/runtime"
)

// --engine picks the engine of plugin check and bench: wasmtime runs in a
// build with the wasmtime tag and is refused, saying how to get one, in a
// build without; an unknown engine is a usage error.
func TestEngineFlag(t *testing.T) {
	dir := t.TempDir()
	upper := filepath.Join(pluginsDir, "upper.wasm")
	code, out, errOut := sluice(t, dir, "plugin", "check", "--engine", "wasmtime", upper)
	if wasm.CheckEngine(wasm.EngineWasmtime) == nil {
		if code != 0 || !strings.Contains(out, "ok: the host accepts this module") {
			t.Errorf("plugin check --engine wasmtime in a build with it exited %d:\n%s%s", code, out, errOut)
		}
	} else {
		for _, args := range [][]string{
			{"plugin", "check", "--engine", "wasmtime", upper},
			{"bench", "--engine", "wasmtime"},
			{"bench", "txn", "--engine", "wasmtime"},
		} {
			code, out, errOut := sluice(t, dir, args...)
			if code != 2 || !strings.Contains(errOut, "--engine wasmtime: this build of sluice does not hold the wasmtime engine") ||
				!strings.Contains(errOut, "go build -tags wasmtime ./cmd/sluice") {
				t.Errorf("sluice %s in a build without wasmtime exited %d:\n%s%s", strings.Join(args, " "), code, out, errOut)
			}
		}
	}
	code, out, errOut = sluice(t, dir, "plugin", "check", "--engine", "wazero", upper)
	if code != 0 {
		t.Errorf("plugin check --engine wazero exited %d:\n%s%s", code, out, errOut)
	}
	for _, args := range [][]string{
		{"plugin", "check", "--engine", "v8", upper},
		{"bench", "--engine", "v8"},
	} {
		code, out, errOut := sluice(t, dir, args...)
		if code != 2 || !strings.Contains(errOut, `--engine "v8": unknown engine (want wazero or wasmtime)`) {
			t.Errorf("sluice %s exited %d:\n%s%s", strings.Join(args, " "), code, out, errOut)
		}
	}
}
