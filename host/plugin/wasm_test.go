package plugin

import (
	"github.com/sluicehq/sluice/runtime"
)

// wasmModule describes a small module assembled byte by byte, for the load
// checks that need a precise shape (no memory, a command module, a wrong
// signature) rather than a real guest. Every function body returns the
// constant ret (when it has a result).
type wasmModule struct {
	imports []wasmImport
	funcs   []wasmFunc
	memory  bool // define and export "memory" (one page)
}

type wasmImport struct {
	module, name string
	sig          runtime.Signature
}

type wasmFunc struct {
	export string // exported under this name when not empty
	sig    runtime.Signature
	ret    int32 // the i32 the body returns, when it returns one
}

// reactor returns the functions of a minimal well-formed Sluice reactor
// declaring ABI version version.
func reactor(version int32) []wasmFunc {
	return []wasmFunc{
		{export: "sluice_abi_version", sig: sig(0, 1), ret: version},
		{export: "sluice_alloc", sig: sig(1, 1), ret: 1024},
		{export: "sluice_process", sig: sig(2, 1), ret: 0},
	}
}

func (m wasmModule) bytes() []byte {
	var types []runtime.Signature
	typeIndex := func(s runtime.Signature) uint32 {
		for i, t := range types {
			if t.Equal(s) {
				return uint32(i)
			}
		}
		types = append(types, s)
		return uint32(len(types) - 1)
	}
	var imports, funcs, exports, code []byte
	for _, im := range m.imports {
		imports = appendName(imports, im.module)
		imports = appendName(imports, im.name)
		imports = append(imports, 0x00)
		imports = appendU32(imports, typeIndex(im.sig))
	}
	nExports := 0
	for i, f := range m.funcs {
		funcs = appendU32(funcs, typeIndex(f.sig))
		if f.export != "" {
			exports = appendName(exports, f.export)
			exports = append(exports, 0x00)
			exports = appendU32(exports, uint32(len(m.imports)+i))
			nExports++
		}
		body := []byte{0x00} // no locals
		for _, r := range f.sig.Results {
			switch r {
			case runtime.I32:
				body = append(body, 0x41)
				body = appendS32(body, f.ret)
			case runtime.I64:
				body = append(body, 0x42)
				body = appendS32(body, f.ret) // small values: same LEB128
			}
		}
		body = append(body, 0x0b)
		code = appendU32(code, uint32(len(body)))
		code = append(code, body...)
	}
	if m.memory {
		exports = appendName(exports, "memory")
		exports = append(exports, 0x02, 0x00)
		nExports++
	}
	var typeSec []byte
	for _, t := range types {
		typeSec = append(typeSec, 0x60)
		typeSec = appendTypes(typeSec, t.Params)
		typeSec = appendTypes(typeSec, t.Results)
	}
	out := []byte{0x00, 'a', 's', 'm', 0x01, 0x00, 0x00, 0x00}
	out = appendSection(out, 1, len(types), typeSec)
	if len(m.imports) > 0 {
		out = appendSection(out, 2, len(m.imports), imports)
	}
	out = appendSection(out, 3, len(m.funcs), funcs)
	if m.memory {
		out = appendSection(out, 5, 1, []byte{0x00, 0x01}) // min 1 page, no max
	}
	out = appendSection(out, 7, nExports, exports)
	out = appendSection(out, 10, len(m.funcs), code)
	return out
}

func appendSection(out []byte, id byte, count int, content []byte) []byte {
	body := appendU32(nil, uint32(count))
	body = append(body, content...)
	out = append(out, id)
	out = appendU32(out, uint32(len(body)))
	return append(out, body...)
}

func appendTypes(b []byte, ts []runtime.ValueType) []byte {
	b = appendU32(b, uint32(len(ts)))
	for _, t := range ts {
		switch t {
		case runtime.I32:
			b = append(b, 0x7f)
		case runtime.I64:
			b = append(b, 0x7e)
		case runtime.F32:
			b = append(b, 0x7d)
		case runtime.F64:
			b = append(b, 0x7c)
		}
	}
	return b
}

func appendName(b []byte, s string) []byte {
	b = appendU32(b, uint32(len(s)))
	return append(b, s...)
}

func appendU32(b []byte, v uint32) []byte {
	for {
		c := byte(v & 0x7f)
		v >>= 7
		if v == 0 {
			return append(b, c)
		}
		b = append(b, c|0x80)
	}
}

func appendS32(b []byte, v int32) []byte {
	for {
		c := byte(v & 0x7f)
		v >>= 7
		if (v == 0 && c&0x40 == 0) || (v == -1 && c&0x40 != 0) {
			return append(b, c)
		}
		b = append(b, c|0x80)
	}
}
