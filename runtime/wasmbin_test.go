package runtime

// A minimal WebAssembly binary encoder for tests: enough to write modules
// that no Go compiler produces (an explicit unreachable, a trapping start
// function, an import the host lacks, a module without memory) and modules
// whose exports do nothing, to measure the engine rather than a guest
// runtime.

// Value type and opcode bytes of the binary format.
const (
	wI32 byte = 0x7f
	wI64 byte = 0x7e

	opUnreachable byte = 0x00
	opLoop        byte = 0x03
	opBlock       byte = 0x02
	opBr          byte = 0x0c
	opBrIf        byte = 0x0d
	opCall        byte = 0x10
	opLocalGet    byte = 0x20
	opLocalSet    byte = 0x21
	opI32Load     byte = 0x28
	opI32Store    byte = 0x36
	opI32Const    byte = 0x41
	opI32Eqz      byte = 0x45
	opI32Sub      byte = 0x6b
	opI32DivS     byte = 0x6d
	opEnd         byte = 0x0b
	blockEmpty    byte = 0x40
)

type wasmImport struct {
	module, name    string
	params, results []byte
}

type wasmFunc struct {
	export          string // "" for none
	params, results []byte
	body            []byte // instructions, without the final end
}

// wasmModule describes a module: imported functions come first in the
// function index space, then funcs.
type wasmModule struct {
	imports []wasmImport
	funcs   []wasmFunc
	memory  int // pages of a memory exported as "memory"; 0 for no memory
	start   int // function index of the start function, or -1
}

func uleb(v uint64) []byte {
	var out []byte
	for {
		b := byte(v & 0x7f)
		v >>= 7
		if v != 0 {
			out = append(out, b|0x80)
			continue
		}
		return append(out, b)
	}
}

func sleb(v int64) []byte {
	var out []byte
	for {
		b := byte(v & 0x7f)
		v >>= 7
		if (v == 0 && b&0x40 == 0) || (v == -1 && b&0x40 != 0) {
			return append(out, b)
		}
		out = append(out, b|0x80)
	}
}

func wname(s string) []byte { return append(uleb(uint64(len(s))), s...) }

func wvec(items [][]byte) []byte {
	out := uleb(uint64(len(items)))
	for _, it := range items {
		out = append(out, it...)
	}
	return out
}

func wsection(id byte, content []byte) []byte {
	return append(append([]byte{id}, uleb(uint64(len(content)))...), content...)
}

func functype(params, results []byte) []byte {
	out := append([]byte{0x60}, uleb(uint64(len(params)))...)
	out = append(out, params...)
	out = append(out, uleb(uint64(len(results)))...)
	return append(out, results...)
}

// encode returns the module's binary. Each function gets its own type.
func (m wasmModule) encode() []byte {
	out := []byte{0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00}
	var types, imports, funcs, exports, code [][]byte
	for _, imp := range m.imports {
		idx := len(types)
		types = append(types, functype(imp.params, imp.results))
		entry := append(wname(imp.module), wname(imp.name)...)
		imports = append(imports, append(append(entry, 0x00), uleb(uint64(idx))...))
	}
	for i, f := range m.funcs {
		idx := len(types)
		types = append(types, functype(f.params, f.results))
		funcs = append(funcs, uleb(uint64(idx)))
		if f.export != "" {
			exports = append(exports, append(append(wname(f.export), 0x00), uleb(uint64(len(m.imports)+i))...))
		}
		body := append([]byte{0x00}, f.body...) // no locals
		body = append(body, opEnd)
		code = append(code, append(uleb(uint64(len(body))), body...))
	}
	if m.memory > 0 {
		exports = append(exports, append(append(wname("memory"), 0x02), 0x00))
	}
	out = append(out, wsection(1, wvec(types))...)
	if len(imports) > 0 {
		out = append(out, wsection(2, wvec(imports))...)
	}
	out = append(out, wsection(3, wvec(funcs))...)
	if m.memory > 0 {
		out = append(out, wsection(5, wvec([][]byte{append([]byte{0x00}, uleb(uint64(m.memory))...)}))...)
	}
	out = append(out, wsection(7, wvec(exports))...)
	if m.start >= 0 {
		out = append(out, wsection(8, uleb(uint64(m.start)))...)
	}
	return append(out, wsection(10, wvec(code))...)
}

// Modules the tests use.

// rawModule has empty and trapping exports and no imports.
func rawModule() []byte {
	return wasmModule{
		start:  -1,
		memory: 1,
		funcs: []wasmFunc{
			{export: "noop"},
			{export: "unreachable", body: []byte{opUnreachable}},
			{export: "div", params: []byte{wI32, wI32}, results: []byte{wI32},
				body: []byte{opLocalGet, 0, opLocalGet, 1, opI32DivS}},
			{export: "load", params: []byte{wI32}, results: []byte{wI32},
				body: []byte{opLocalGet, 0, opI32Load, 2, 0}},
			{export: "spin", body: []byte{opLoop, blockEmpty, opBr, 0, opEnd}},
			{export: "count", params: []byte{wI32}, results: []byte{wI32}, body: countBody},
		},
	}.encode()
}

// countBody counts its i32 parameter down to zero in a loop, and returns
// it (zero).
var countBody = []byte{
	opBlock, blockEmpty,
	opLoop, blockEmpty,
	opLocalGet, 0, opI32Eqz, opBrIf, 1,
	opLocalGet, 0, opI32Const, 1, opI32Sub, opLocalSet, 0,
	opBr, 0,
	opEnd,
	opEnd,
	opLocalGet, 0,
}

// hostNopModule calls test.nop from its export call_nop, and test.sum on
// a memory it does not have from sum_nomem.
func hostNopModule() []byte {
	return wasmModule{
		start: -1,
		imports: []wasmImport{
			{module: "test", name: "nop"},
			{module: "test", name: "sum", params: []byte{wI32, wI32}, results: []byte{wI64}},
		},
		funcs: []wasmFunc{
			{export: "call_nop", body: []byte{opCall, 0}},
			{export: "sum_nomem", results: []byte{wI64},
				body: append(append(append([]byte{opI32Const}, sleb(0)...), append([]byte{opI32Const}, sleb(4)...)...), opCall, 1)},
		},
	}.encode()
}

// importModule imports one function and does nothing with it.
func importModule(module, name string, params, results []byte) []byte {
	return wasmModule{
		start:   -1,
		imports: []wasmImport{{module: module, name: name, params: params, results: results}},
		funcs:   []wasmFunc{{export: "noop"}},
	}.encode()
}

// startTrapModule has a start function that traps.
func startTrapModule() []byte {
	return wasmModule{start: 0, funcs: []wasmFunc{{body: []byte{opUnreachable}}}}.encode()
}

// initTrapModule exports an _initialize that traps.
func initTrapModule() []byte {
	return wasmModule{start: -1, funcs: []wasmFunc{{export: "_initialize", body: []byte{opUnreachable}}}}.encode()
}
