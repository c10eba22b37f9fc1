package interrupt

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/tetratelabs/wazero"
)

// FuzzInstrument feeds the instrumenter mutations of the test modules. It
// must never panic; its errors wrap a sentinel; its output is refused when
// fed back (the reserved names are taken); and whenever wazero accepts a
// module that the instrumenter accepted too, wazero accepts the
// instrumented copy, with every combination of options. That last check is made only on modules whose
// declared counts are plausible (see plausible): wazero's decoder sizes its
// slices and maps by the counts a module declares, and a mutated count
// exhausts the fuzzer's memory.
//
//	go test -fuzz FuzzInstrument ./runtime/internal/interrupt/
func FuzzInstrument(f *testing.F) {
	files, _ := filepath.Glob("testdata/*.wasm")
	for _, p := range files {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add(module([]byte{opLoop, blockEmpty, opBr, 0, opEnd}))
	f.Add(dispatchFunc{segments: 3, jumps: []jump{{kind: 1, target: 2}, {kind: 2, target: 0, bit: 3}, {kind: 2, target: 4}}}.wasm())
	f.Add(module([]byte{0xfd, 0x0c, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x1a}))
	ctx := context.Background()
	// The interpreter validates like the compiler, and compiles faster.
	rt := wazero.NewRuntimeWithConfig(ctx, wazero.NewRuntimeConfigInterpreter())
	f.Cleanup(func() { _ = rt.Close(ctx) })
	f.Fuzz(func(t *testing.T, wasm []byte) {
		bounded, err := InstrumentWith(wasm, Options{TableLimit: 16})
		if err != nil && !errors.Is(err, ErrMalformed) && !errors.Is(err, ErrUnsupported) {
			t.Fatalf("error %v of the table limit alone wraps neither sentinel", err)
		}
		if err == nil && plausible(wasm) {
			if orig, err := rt.CompileModule(ctx, wasm); err == nil {
				_ = orig.Close(ctx)
				cm, err := rt.CompileModule(ctx, bounded.Wasm)
				if err != nil {
					t.Fatalf("wazero accepts the module but not its copy with a table limit: %v", err)
				}
				_ = cm.Close(ctx)
			}
		}
		res, err := Instrument(wasm)
		if err != nil {
			if !errors.Is(err, ErrMalformed) && !errors.Is(err, ErrUnsupported) {
				t.Fatalf("error %v wraps neither sentinel", err)
			}
			return
		}
		if _, err := Instrument(res.Wasm); !errors.Is(err, ErrUnsupported) {
			t.Fatalf("instrumenting twice: %v, want ErrUnsupported", err)
		}
		if !plausible(wasm) {
			return
		}
		orig, err := rt.CompileModule(ctx, wasm)
		if err != nil {
			return
		}
		_ = orig.Close(ctx)
		inst, err := rt.CompileModule(ctx, res.Wasm)
		if err != nil {
			t.Fatalf("wazero accepts the module but not its instrumented copy: %v", err)
		}
		_ = inst.Close(ctx)
		for _, opts := range []Options{{Deadline: true, TableLimit: 16}, {ThreadJumps: true}, {Deadline: true, TableLimit: 16, ThreadJumps: true}} {
			res, err := InstrumentWith(wasm, opts)
			if err != nil {
				t.Fatalf("the instrumenter accepts the module, but not with %+v: %v", opts, err)
			}
			if inst, err = rt.CompileModule(ctx, res.Wasm); err != nil {
				t.Fatalf("wazero accepts the module but not its copy with %+v: %v", opts, err)
			}
			_ = inst.Close(ctx)
		}
	})
}

// plausible reports whether wazero can decode wasm without allocating by
// an absurd count: every vector section announces no more entries than it
// has bytes, no function declares more than 10,000 locals, and there is no
// element, data or name section, whose inner counts it does not check.
func plausible(wasm []byte) bool {
	sections, err := splitSections(wasm)
	if err != nil {
		return false
	}
	for _, s := range sections {
		switch s.id {
		case secCustom:
			if s.name == "name" {
				return false
			}
			continue
		case secElement, secData:
			return false
		case secStart, secDataCnt:
			continue
		}
		r := &reader{B: s.content}
		n, err := r.U32()
		if err != nil || uint64(n) > uint64(len(s.content)) {
			return false
		}
		if s.id != secCode {
			continue
		}
		for range n {
			size, err := r.U32()
			if err != nil {
				return false
			}
			body, err := r.Bytes(uint64(size))
			if err != nil {
				return false
			}
			br := &reader{B: body}
			groups, err := br.U32()
			if err != nil || uint64(groups) > uint64(len(body)) {
				return false
			}
			var locals uint64
			for range groups {
				k, err := br.U32()
				if err != nil {
					return false
				}
				if locals += uint64(k); locals > 10000 {
					return false
				}
				if _, err := br.Byte(); err != nil {
					return false
				}
			}
		}
	}
	return true
}
