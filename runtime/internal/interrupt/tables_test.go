package interrupt

import (
	"context"
	"os"
	"slices"
	"testing"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
)

// instantiateWith instruments testdata/name.wasm with opts and instantiates
// it on wazero's interpreter (which validates like the compiler) with its
// start function run, as an embedder would run it: StartExport first when
// the instrumenter moved the start section.
func instantiateWith(t *testing.T, name string, opts Options) (api.Module, Result) {
	t.Helper()
	wasm, err := os.ReadFile("testdata/" + name + ".wasm")
	if err != nil {
		t.Fatal(err)
	}
	res, err := InstrumentWith(wasm, opts)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	rt := wazero.NewRuntimeWithConfig(ctx, wazero.NewRuntimeConfigInterpreter())
	t.Cleanup(func() { _ = rt.Close(ctx) })
	mod, err := rt.Instantiate(ctx, res.Wasm)
	if err != nil {
		t.Fatalf("instantiating the instrumented %s: %v", name, err)
	}
	if res.Start {
		if _, err := mod.ExportedFunction(StartExport).Call(ctx); err != nil {
			t.Fatal(err)
		}
	}
	return mod, res
}

func callI32(t *testing.T, mod api.Module, export string, args ...uint64) int32 {
	t.Helper()
	out, err := mod.ExportedFunction(export).Call(context.Background(), args...)
	if err != nil {
		t.Fatalf("%s%v: %v", export, args, err)
	}
	return int32(uint32(out[0]))
}

// table.grow fails (returns -1) past the limit, with the interrupt checks
// or without, on tables of either reference type; within it, and by zero
// entries, it grows as before.
func TestTableLimit(t *testing.T) {
	for _, deadline := range []bool{false, true} {
		mod, res := instantiateWith(t, "tables", Options{Deadline: deadline, TableLimit: 10})
		if res.TableGrows != 3 || res.GrowFuncs != 2 {
			t.Errorf("deadline %v: %d table.grow bounded by %d functions, want 3 by 2", deadline, res.TableGrows, res.GrowFuncs)
		}
		if !slices.Equal(res.Tables, []uint64{2, 0}) {
			t.Errorf("deadline %v: table minimums %v, want [2 0]", deadline, res.Tables)
		}
		if res.Start != deadline {
			t.Errorf("deadline %v: start section moved = %v", deadline, res.Start)
		}
		if got := callI32(t, mod, "started"); got != 1 {
			t.Errorf("deadline %v: the start function did not run", deadline)
		}
		for _, step := range []struct {
			export string
			arg    uint64
			want   int32
		}{
			{"grow_f", 3, 2},
			{"grow_f", 5, 5},
			{"grow_f", 0x40000000, -1}, // 8 GiB of host memory without the limit
			{"grow_f", 0xffffffff, -1}, // past 2^32 entries in 64 bits
			{"grow_f", 2, -1},          // 12 > 10
			{"grow_f", 0, 10},          // by nothing: the size
			{"loop_grow", 5, -1},
			{"grow_e", 11, -1},
			{"grow_e", 10, 0},
			{"grow_e", 1, -1},
		} {
			if got := callI32(t, mod, step.export, step.arg); got != step.want {
				t.Errorf("deadline %v: %s(%d) = %d, want %d", deadline, step.export, step.arg, got, step.want)
			}
		}
		if f, e := callI32(t, mod, "size_f"), callI32(t, mod, "size_e"); f != 10 || e != 10 {
			t.Errorf("deadline %v: sizes %d and %d, want 10 and 10", deadline, f, e)
		}
	}
}

// The loop's last table.grow within the limit returns the size before it.
func TestTableLimitInLoop(t *testing.T) {
	mod, _ := instantiateWith(t, "tables", Options{Deadline: true, TableLimit: 1 << 20})
	if got := callI32(t, mod, "loop_grow", 3000); got != 2+2999 {
		t.Errorf("loop_grow(3000) = %d, want %d", got, 2+2999)
	}
}

// Without the deadline, a module that never grows a table is returned as it
// is: the table limit costs it nothing.
func TestTableLimitLeavesOtherModulesAlone(t *testing.T) {
	for _, name := range []string{"control", "empty", "env", "noglobals"} {
		wasm, err := os.ReadFile("testdata/" + name + ".wasm")
		if err != nil {
			t.Fatal(err)
		}
		res, err := InstrumentWith(wasm, Options{TableLimit: 10})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if res.TableGrows != 0 || &res.Wasm[0] != &wasm[0] || len(res.Wasm) != len(wasm) {
			t.Errorf("%s: changed by the table limit alone (%d table.grow)", name, res.TableGrows)
		}
	}
}

// With no option, InstrumentWith only reads the tables.
func TestTablesOnly(t *testing.T) {
	wasm, err := os.ReadFile("testdata/tables.wasm")
	if err != nil {
		t.Fatal(err)
	}
	res, err := InstrumentWith(wasm, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if &res.Wasm[0] != &wasm[0] || len(res.Wasm) != len(wasm) || res.TableGrows != 0 || !slices.Equal(res.Tables, []uint64{2, 0}) {
		t.Errorf("Options{}: %d table.grow rewritten, tables %v, module changed %v", res.TableGrows, res.Tables, &res.Wasm[0] != &wasm[0])
	}
}
