package runtime

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
)

// New makes the engine a name asks for, wasmtime only in a build with the
// tag; an unknown name and wasmtime in a build without it are refused with
// errors that say so and, for wasmtime, how to get a build with it.
func TestNewByName(t *testing.T) {
	ctx := context.Background()
	for _, name := range []string{"", EngineWazero, EngineWasmtime} {
		err := CheckEngine(name)
		eng, nerr := New(ctx, name, testConfig())
		if name == EngineWasmtime && !wasmtimeBuilt {
			for _, e := range []error{err, nerr} {
				if !errors.Is(e, ErrEngineNotBuilt) || !strings.Contains(e.Error(), "-tags wasmtime") {
					t.Errorf("%q in a build without wasmtime: %v, want ErrEngineNotBuilt naming -tags wasmtime", name, e)
				}
			}
			continue
		}
		if err != nil || nerr != nil {
			t.Fatalf("%q: CheckEngine: %v, New: %v", name, err, nerr)
		}
		want := "*runtime.wazeroEngine"
		if name == EngineWasmtime {
			want = "*runtime.wasmtimeEngine"
		}
		if got := fmt.Sprintf("%T", eng); got != want {
			t.Errorf("New(%q) made a %s, want a %s", name, got, want)
		}
		// The engine runs a module.
		inst := instantiate(t, compile(t, eng, "raw", rawModule()))
		_ = inst.Close(ctx)
		if err := eng.Close(ctx); err != nil {
			t.Fatal(err)
		}
	}
	for _, name := range []string{"wasmtim", "Wazero", "v8"} {
		_, err := New(ctx, name, testConfig())
		if !errors.Is(err, ErrUnknownEngine) || !errors.Is(CheckEngine(name), ErrUnknownEngine) ||
			!strings.Contains(err.Error(), `"`+name+`"`) || !strings.Contains(err.Error(), "wazero or wasmtime") {
			t.Errorf("New(%q) = %v, want ErrUnknownEngine naming it and the engines", name, err)
		}
	}
}
