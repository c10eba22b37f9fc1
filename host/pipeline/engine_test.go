package pipeline

import (
	"errors"
	"strings"
	"testing"

	wasm "github.com/sluicehq/sluice/runtime"
)

// An operator's engine defaults to wazero; wasmtime is taken in a build
// with the wasmtime tag and refused in one without, naming the operator,
// the key, its line and the build that holds it; an unknown name is
// refused with the nearest engine suggested.
func TestOperatorEngine(t *testing.T) {
	p, err := Parse("p.yaml", "/pipes", []byte(good))
	if err != nil {
		t.Fatal(err)
	}
	if got := p.Operators[1].Engine; got != wasm.EngineWazero {
		t.Errorf("default engine %q, want %q", got, wasm.EngineWazero)
	}
	withEngine := func(name string) string {
		return strings.Replace(good, "kind: keyed", "kind: keyed\n    engine: "+name, 1)
	}
	if p, err = Parse("p.yaml", "/pipes", []byte(withEngine("wazero"))); err != nil || p.Operators[1].Engine != wasm.EngineWazero {
		t.Errorf("engine: wazero: %v", err)
	}

	p, err = Parse("p.yaml", "/pipes", []byte(withEngine("wasmtime")))
	if wasm.CheckEngine(wasm.EngineWasmtime) == nil {
		if err != nil || p.Operators[1].Engine != wasm.EngineWasmtime {
			t.Errorf("engine: wasmtime in a build with it: %v", err)
		}
	} else {
		checkLineError(t, err, "p.yaml", 19, "operators[1].engine",
			`operator "count" asks for engine "wasmtime"`, "-tags wasmtime", "leave engine out")
	}

	_, err = Parse("p.yaml", "/pipes", []byte(withEngine("wasmtim")))
	checkLineError(t, err, "p.yaml", 19, "operators[1].engine", `unknown engine "wasmtim": did you mean "wasmtime"? (want wazero or wasmtime)`)
	_, err = Parse("p.yaml", "/pipes", []byte(withEngine("v8")))
	checkLineError(t, err, "p.yaml", 19, "operators[1].engine", `unknown engine "v8" (want wazero or wasmtime)`)
}

// checkLineError checks that err is an *Error at file:line and path whose
// message holds every one of want.
func checkLineError(t *testing.T, err error, file string, line int, path string, want ...string) {
	t.Helper()
	var pe *Error
	if !errors.As(err, &pe) {
		t.Fatalf("error %v is not an *Error", err)
	}
	if pe.File != file || pe.Line != line || pe.Path != path {
		t.Errorf("error at %s:%d %s, want %s:%d %s (%v)", pe.File, pe.Line, pe.Path, file, line, path, err)
	}
	for _, w := range want {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("error %q does not contain %q", err, w)
		}
	}
}
