//go:build !wasmtime

package runtime

import (
	"context"
	"testing"
	"time"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/imports/wasi_snapshot_preview1"

	"github.com/sluicehq/sluice/runtime/internal/interrupt"
)

// Under a call timeout, a module that runs without the interrupt checks
// (the instrumenter refuses it, or the platform interprets) still has its
// tables bounded.
func TestWazeroTableLimitWithoutInterruptChecks(t *testing.T) {
	ctx := context.Background()
	e, err := newWazero(ctx, baseConfig().WithCallTimeout(time.Second).WithTableLimit(10), false)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = e.Close(ctx) })
	m := compile(t, e, "tables", tablesWasm(t))
	if wazeroModuleOf(t, m).interrupt {
		t.Fatal("the module was instrumented for the deadline")
	}
	inst := instantiate(t, m)
	if got := call32(t, inst, "grow_f", 0x40000000); got != -1 {
		t.Errorf("grow_f(0x40000000) = %d, want -1", got)
	}
	if got := call32(t, inst, "grow_f", 8); got != 2 {
		t.Errorf("grow_f(8) = %d, want 2", got)
	}
}

// BenchmarkTableLimit measures what the table limit costs on wazero with
// the call timeout off. scan is the time InstrumentWith adds to compiling
// a Go guest, which has no table.grow and comes back unchanged; mix-1000
// calls that guest's loop on the engine (limit) and on a bare wazero
// runtime given the same bytes (bare): the same code, so the same time.
// grow0 calls a table.grow by nothing, through the bounding function
// (limit) and as the module has it (bare).
//
//	go test -run XXX -bench TableLimit ./runtime/
func BenchmarkTableLimit(b *testing.B) {
	ctx := context.Background()
	b.Run("scan/go-basic", func(b *testing.B) {
		b.SetBytes(int64(len(guests["basic"])))
		for b.Loop() {
			res, err := interrupt.InstrumentWith(guests["basic"], interrupt.Options{TableLimit: DefaultTableLimit})
			if err != nil || res.TableGrows != 0 {
				b.Fatal(err, res.TableGrows)
			}
		}
	})
	e := newEngine(b, baseConfig().WithCallTimeout(0))
	bare := wazero.NewRuntime(ctx)
	b.Cleanup(func() { _ = bare.Close(ctx) })
	if _, err := wasi_snapshot_preview1.Instantiate(ctx, bare); err != nil {
		b.Fatal(err)
	}
	for _, w := range []struct {
		name, export string
		wasm         []byte
		arg          uint64
	}{
		{"mix-1000", "mix", guests["basic"], 1000},
		{"grow0", "grow_f", tablesWasm(b), 0},
	} {
		f := fn(b, instantiate(b, compile(b, e, w.name, w.wasm)), w.export)
		b.Run(w.name+"/limit", func(b *testing.B) {
			stack := make([]uint64, 1)
			for b.Loop() {
				stack[0] = w.arg
				if err := f.Call(ctx, stack); err != nil {
					b.Fatal(err)
				}
			}
		})
		mod, err := bare.InstantiateWithConfig(ctx, w.wasm, wazero.NewModuleConfig().WithName(w.name).WithStartFunctions("_initialize"))
		if err != nil {
			b.Fatal(err)
		}
		g := mod.ExportedFunction(w.export)
		b.Run(w.name+"/bare", func(b *testing.B) {
			stack := make([]uint64, 1)
			for b.Loop() {
				stack[0] = w.arg
				if err := g.CallWithStack(ctx, stack); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
