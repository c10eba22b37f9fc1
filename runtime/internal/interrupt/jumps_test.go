package interrupt

import (
	"context"
	"os"
	"slices"
	"testing"

	"github.com/tetratelabs/wazero"
	"pgregory.net/rapid"
)

// The jumps of testdata/jumps.wat, counted by hand: three forward in
// sum_odd, three in resume, one in spin_dispatch; the other test modules
// have no dispatch loop.
func TestThreadJumpsCounts(t *testing.T) {
	for name, want := range map[string]int{"jumps": 7, "control": 0, "features": 0, "tables": 0, "env": 0} {
		wasm, err := os.ReadFile("testdata/" + name + ".wasm")
		if err != nil {
			t.Fatal(err)
		}
		for _, opts := range []Options{{ThreadJumps: true}, {ThreadJumps: true, Deadline: true}} {
			res, err := InstrumentWith(wasm, opts)
			if err != nil {
				t.Fatal(name, err)
			}
			if res.ThreadedJumps != want {
				t.Errorf("%s, %+v: ThreadedJumps = %d, want %d", name, opts, res.ThreadedJumps, want)
			}
			if want == 0 && !opts.Deadline && !slices.Equal(res.Wasm, wasm) {
				t.Errorf("%s: changed, with no jump to thread", name)
			}
		}
		res, err := InstrumentWith(wasm, Options{Deadline: true})
		if err != nil || res.ThreadedJumps != 0 {
			t.Errorf("%s without ThreadJumps: ThreadedJumps = %d (%v)", name, res.ThreadedJumps, err)
		}
	}
}

// dispatchFunc is a random function in the form of Go's WebAssembly code
// (see dispatch): segments, each of which adds to an accumulator, spends
// fuel, and then falls through, jumps, or jumps when a bit of the
// accumulator is set, to a segment or out of the dispatch.
type dispatchFunc struct {
	segments int
	jumps    []jump // one per segment; kind 0 falls through
	forward  int    // jumps whose target encloses them
}

type jump struct {
	kind   int // 0: none; 1: always; 2: when bit is set in the accumulator
	target int // a segment, or segments and above: out
	bit    int
}

func drawDispatch(t *rapid.T) dispatchFunc {
	f := dispatchFunc{segments: rapid.IntRange(1, 12).Draw(t, "segments")}
	for i := range f.segments {
		j := jump{
			kind:   rapid.IntRange(0, 2).Draw(t, "kind"),
			target: rapid.IntRange(0, f.segments+1).Draw(t, "target"),
			bit:    rapid.IntRange(0, 63).Draw(t, "bit"),
		}
		if j.kind != 0 && j.target > i {
			f.forward++
		}
		f.jumps = append(f.jumps, j)
	}
	return f
}

// wasm returns a module exporting f as "run" (param $acc i64) (result i64).
// Local 1 is the dispatch's local, 2 the fuel.
func (f dispatchFunc) wasm() []byte {
	const acc, pc, fuel = 0, 1, 2
	s := f.segments
	var b []byte
	b = append(b, 1, 2, 0x7f) // locals: two i32
	b = append(b, opI32Const)
	b = appendSLEB(b, 500)
	b = append(b, opLocalSet, fuel)
	b = append(b, opBlock, blockEmpty, opLoop, blockEmpty) // $exit, $dispatch
	for range s {
		b = append(b, opBlock, blockEmpty)
	}
	// Entry k is block k (label k from the innermost); the default and
	// entry s leave: label s+1 is $exit.
	b = append(b, opLocalGet, pc, opBrTable)
	b = appendULEB(b, uint64(s+1))
	for k := range s {
		b = appendULEB(b, uint64(k))
	}
	b = appendULEB(b, uint64(s+1))
	b = appendULEB(b, uint64(s+1))
	for i, j := range f.jumps {
		b = append(b, opEnd) // of block i: segment i follows
		// acc = acc*31 + i + 1
		b = append(b, opLocalGet, acc, opI64Const, 31, 0x7e, opI64Const)
		b = appendSLEB(b, int64(i+1))
		b = append(b, opI64Add, opLocalSet, acc)
		// if --fuel == 0 { return acc }
		b = append(b, opLocalGet, fuel, opI32Const, 1, opI32Sub, opLocalTee, fuel, opI32Eqz,
			opIf, blockEmpty, opLocalGet, acc, opReturn, opEnd)
		depth := s - 1 - i // to $dispatch, from segment i
		switch j.kind {
		case 1:
			b = append(b, opI32Const)
			b = appendSLEB(b, int64(j.target))
			b = append(b, opLocalSet, pc, opBr)
			b = appendULEB(b, uint64(depth))
		case 2:
			b = append(b, opLocalGet, acc, opI64Const)
			b = appendSLEB(b, int64(1)<<j.bit)
			b = append(b, 0x83, 0x50, opIf, blockEmpty, opI32Const) // i64.and, i64.eqz
			b = appendSLEB(b, int64(j.target))
			b = append(b, opLocalSet, pc, opBr)
			b = appendULEB(b, uint64(depth+1))
			b = append(b, opEnd)
		}
	}
	b = append(b, opEnd, opEnd, opLocalGet, acc, opEnd) // $dispatch, $exit; the result

	out := slices.Clone(header)
	out = append(out, 1, 6, 1, 0x60, 1, 0x7e, 1, 0x7e) // type: (i64) -> i64
	out = append(out, 3, 2, 1, 0)                      // function section
	out = append(out, 7, 7, 1, 3, 'r', 'u', 'n', 0, 0) // export "run"
	content := appendULEB([]byte{1}, uint64(len(b)))
	content = append(content, b...)
	out = append(out, secCode)
	out = appendULEB(out, uint64(len(content)))
	return append(out, content...)
}

// Threaded jumps are the same program: on random dispatch functions, the
// copy with the jumps threaded (alone and with the interrupt checks)
// returns what the original returns, and threads every forward jump.
func TestThreadJumpsSameResults(t *testing.T) {
	ctx := context.Background()
	rt := wazero.NewRuntime(ctx)
	defer rt.Close(ctx)
	rapid.Check(t, func(t *rapid.T) {
		f := drawDispatch(t)
		wasm := f.wasm()
		run := func(wasm []byte, what string) []uint64 {
			mod, err := rt.Instantiate(ctx, wasm)
			if err != nil {
				t.Fatalf("%s: %v", what, err)
			}
			defer mod.Close(ctx)
			var out []uint64
			for _, acc := range []uint64{0, 1, 0x5555, 1 << 40, ^uint64(0)} {
				res, err := mod.ExportedFunction("run").Call(ctx, acc)
				if err != nil {
					t.Fatalf("%s: run(%d): %v", what, acc, err)
				}
				out = append(out, res...)
			}
			return out
		}
		want := run(wasm, "original")
		for _, opts := range []Options{{ThreadJumps: true}, {ThreadJumps: true, Deadline: true}} {
			res, err := InstrumentWith(wasm, opts)
			if err != nil {
				t.Fatalf("%+v: %v", opts, err)
			}
			if res.ThreadedJumps != f.forward {
				t.Fatalf("%+v: ThreadedJumps = %d, want the %d forward jumps", opts, res.ThreadedJumps, f.forward)
			}
			if got := run(res.Wasm, "threaded"); !slices.Equal(got, want) {
				t.Fatalf("%+v: results %v, the original %v", opts, got, want)
			}
		}
	})
}
