package runtime

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"
)

// tablesWasm grows a table of function references (grow_f) and one of
// external references (grow_e), both declared with room for 2 and 0
// entries; size_f and size_e return their sizes (see the .wat).
func tablesWasm(t testing.TB) []byte {
	t.Helper()
	b, err := os.ReadFile("internal/interrupt/testdata/tables.wasm")
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func call32(t *testing.T, inst Instance, export string, args ...uint64) int32 {
	t.Helper()
	f, ok := inst.Func(export)
	if !ok {
		t.Fatalf("no export %s", export)
	}
	stack := make([]uint64, max(len(args), 1))
	copy(stack, args)
	if err := f.Call(context.Background(), stack); err != nil {
		t.Fatalf("%s%v: %v", export, args, err)
	}
	return int32(uint32(stack[0]))
}

// table.grow fails past the table limit, with the call timeout on
// (instrumented on wazero) or off; within the limit a table grows.
func TestTableLimit(t *testing.T) {
	for _, timeout := range []time.Duration{0, time.Second} {
		e := newEngine(t, baseConfig().WithCallTimeout(timeout).WithTableLimit(10))
		inst := instantiate(t, compile(t, e, "tables", tablesWasm(t)))
		for _, step := range []struct {
			export string
			arg    uint64
			want   int32
		}{
			{"grow_f", 8, 2},
			{"grow_f", 1, -1},
			{"grow_f", 0x40000000, -1}, // 8 GiB of host memory without the limit
			{"grow_e", 0x80000000, -1},
			{"grow_e", 10, 0},
			{"size_f", 0, 10},
			{"size_e", 0, 10},
		} {
			if got := call32(t, inst, step.export, step.arg); got != step.want {
				t.Errorf("timeout %v: %s(%#x) = %d, want %d", timeout, step.export, step.arg, got, step.want)
			}
		}
	}
}

// NewConfig bounds tables at DefaultTableLimit entries.
func TestDefaultTableLimit(t *testing.T) {
	inst := instantiate(t, compile(t, newEngine(t, baseConfig()), "tables", tablesWasm(t)))
	if got := call32(t, inst, "grow_f", DefaultTableLimit-1); got != -1 {
		t.Errorf("grow_f(DefaultTableLimit-1) = %d, want -1", got)
	}
	if got := call32(t, inst, "grow_f", DefaultTableLimit-2); got != 2 {
		t.Errorf("grow_f(DefaultTableLimit-2) = %d, want 2", got)
	}
}

// A module that declares a table larger than the limit does not compile;
// a Config with no room for any table is refused.
func TestTableLimitRefusesLargeTables(t *testing.T) {
	e := newEngine(t, baseConfig().WithTableLimit(1))
	_, err := e.Compile(context.Background(), "tables", tablesWasm(t))
	checkError(t, asError(t, err), KindCompile, "tables", "",
		"table 0 declares at least 2 entries, past the table limit of 1 entries")
	if _, err := newEngineErr(baseConfig().WithTableLimit(0)); err == nil || !strings.Contains(err.Error(), "table limit of 0") {
		t.Errorf("an engine with a table limit of 0: %v", err)
	}
}
