package wasmbin

import (
	"bytes"
	"errors"
	"fmt"
)

// Bounds a module must keep for CheckBounds, beyond the format's own.
const (
	// MaxLocals bounds the locals of one function, as browsers and
	// wasmtime do: a compiler allocates per declared local.
	MaxLocals = 50_000
	// MaxTableEntries bounds the initial size of a table, which an
	// instance allocates (8 bytes an entry) outside its memory limit.
	MaxTableEntries = 1 << 20
)

// CheckBounds walks the structure of a module far enough to check every
// count and length it declares against the bytes that follow: a count of
// entries whose smallest encodings cannot fit, a name or data segment
// longer than its section, a section longer than the module. It also
// bounds the locals of a function and the initial size of a table. The
// engine's decoder trusts some of these numbers and allocates what they
// declare before reading the entries (wazero 1.12 makes a slice of every
// count it reads), so that a module of a hundred bytes declaring 2^28
// imports would exhaust the host's memory, a fatal error that no recover
// catches. Everything else is left to the engine: CheckBounds accepts
// every module of the features the engine enables by default (WebAssembly
// 2.0 and exception handling; not the GC proposal's types) that it can
// load, and fails some it would refuse anyway, with a message of its own.
// It allocates nothing.
func CheckBounds(wasm []byte) error {
	if !bytes.HasPrefix(wasm, []byte("\x00asm\x01\x00\x00\x00")) {
		return nil // not a module of version 1: the engine says what is wrong
	}
	r := checker{Reader: Reader{B: wasm, Pos: 8}}
	for !r.Done() && r.err == nil {
		at := r.Pos
		id := r.byte("section id")
		size := r.u32("section size")
		if r.err == nil && uint64(size) > uint64(r.Left()) {
			return fmt.Errorf("%s at %#x declares %d bytes, but %d bytes follow", sectionName(id), at, size, r.Left())
		}
		s := checker{Reader: Reader{B: wasm[:r.Pos+int(size)], Pos: r.Pos}}
		r.Pos += int(size)
		if err := s.section(id); err != nil {
			return fmt.Errorf("%s at %#x: %w", sectionName(id), at, err)
		}
	}
	return r.err
}

// sectionName names a section by its id, for messages.
func sectionName(id byte) string {
	names := [...]string{"custom", "type", "import", "function", "table", "memory", "global",
		"export", "start", "element", "code", "data", "data count", "tag"}
	if int(id) < len(names) {
		return names[id] + " section"
	}
	return fmt.Sprintf("section %d", id)
}

// checker walks a module for CheckBounds with a Reader. Its first error
// sticks; later reads return zero.
type checker struct {
	Reader
	err error
}

func (r *checker) fail(format string, args ...any) {
	if r.err == nil {
		r.err = fmt.Errorf("at %#x: "+format, append([]any{r.Base + r.Pos}, args...)...)
	}
}

// failed records a Reader's error, reading what.
func (r *checker) failed(what string, err error) {
	var e *Error
	if errors.As(err, &e) {
		r.fail("%s: %s", what, e.Reason)
		return
	}
	r.fail("%s: %v", what, err)
}

func (r *checker) byte(what string) byte {
	if r.err != nil {
		return 0
	}
	b, err := r.Byte()
	if err != nil {
		r.failed(what, err)
	}
	return b
}

// u32 reads an unsigned 32-bit LEB128 number.
func (r *checker) u32(what string) uint32 {
	if r.err != nil {
		return 0
	}
	v, err := r.U32()
	if err != nil {
		r.failed(what, err)
	}
	return v
}

// sleb skips a signed LEB128 number of at most bits bits.
func (r *checker) sleb(what string, bits uint) {
	if r.err != nil {
		return
	}
	if _, err := r.SLEB(bits); err != nil {
		r.failed(what, err)
	}
}

// count reads the length of a vector whose entries take at least min
// bytes each, and fails unless they can fit in what is left. It returns 0
// on failure, so that the caller's loop over the entries does not run.
func (r *checker) count(what string, min int) uint32 {
	n := r.u32(what + " count")
	if r.err == nil && uint64(n)*uint64(min) > uint64(r.Left()) {
		r.fail("%d %s cannot fit in the %d bytes left", n, what, r.Left())
	}
	if r.err != nil {
		return 0
	}
	return n
}

// skip skips a length-prefixed byte string (a name, a data segment's
// bytes).
func (r *checker) skip(what string) {
	n := r.u32(what + " length")
	if r.err == nil && uint64(n) > uint64(r.Left()) {
		r.fail("%s of %d bytes runs past the %d bytes left", what, n, r.Left())
		return
	}
	r.Pos += int(n)
}

// section checks the content of a section with id.
func (r *checker) section(id byte) error {
	switch id {
	case 0: // custom
		nameAt := r.Pos
		r.skip("custom section name")
		if r.err == nil && r.name(nameAt) == "name" {
			r.names()
		}
	case 1: // type
		for range r.count("types", 3) {
			if form := r.byte("type form"); form != 0x60 && r.err == nil {
				r.fail("type form %#x is not a function type (the types of the GC proposal are not supported)", form)
			}
			for range r.count("parameters", 1) {
				r.valType()
			}
			for range r.count("results", 1) {
				r.valType()
			}
		}
	case 2: // import
		for range r.count("imports", 4) {
			r.skip("import module name")
			r.skip("import name")
			switch kind := r.byte("import kind"); kind {
			case 0:
				r.u32("type index")
			case 1:
				r.tableType()
			case 2:
				r.limits()
			case 3:
				r.valType()
				r.byte("global mutability")
			case 4:
				r.byte("tag attribute")
				r.u32("tag type index")
			default:
				r.fail("import kind %#x", kind)
			}
		}
	case 3: // function
		for range r.count("functions", 1) {
			r.u32("type index")
		}
	case 4: // table
		for range r.count("tables", 3) {
			if !r.Done() && r.B[r.Pos] == 0x40 { // a table with an initialiser
				r.Pos++
				r.byte("table reserved byte")
				r.tableType()
				r.constExpr()
				continue
			}
			r.tableType()
		}
	case 5: // memory
		for range r.count("memories", 2) {
			r.limits()
		}
	case 6: // global
		for range r.count("globals", 3) {
			r.valType()
			r.byte("global mutability")
			r.constExpr()
		}
	case 7: // export
		for range r.count("exports", 3) {
			r.skip("export name")
			r.byte("export kind")
			r.u32("export index")
		}
	case 8: // start
		r.u32("start function index")
	case 9: // element
		for range r.count("element segments", 3) {
			r.element()
		}
	case 10: // code
		for range r.count("function bodies", 2) {
			r.body()
		}
	case 11: // data
		for range r.count("data segments", 2) {
			switch flags := r.u32("data segment flags"); flags {
			case 0:
				r.constExpr()
			case 1:
			case 2:
				r.u32("memory index")
				r.constExpr()
			default:
				r.fail("data segment flags %d", flags)
			}
			r.skip("data segment")
		}
	case 12: // data count
		r.u32("data count")
	case 13: // tag
		for range r.count("tags", 2) {
			r.byte("tag attribute")
			r.u32("tag type index")
		}
	default:
		r.fail("unknown section id %d", id)
	}
	return r.err
}

// name returns the length-prefixed name that begins at off, which the
// reader has just skipped (so it is well-formed).
func (r *checker) name(off int) string {
	s := checker{Reader: Reader{B: r.B, Pos: off}}
	n := s.u32("name length")
	return string(r.B[s.Pos : s.Pos+int(n)])
}

// names checks the name section's subsections that the engine decodes.
func (r *checker) names() {
	for !r.Done() && r.err == nil {
		id := r.byte("name subsection id")
		size := r.u32("name subsection size")
		if r.err == nil && uint64(size) > uint64(r.Left()) {
			r.fail("name subsection %d of %d bytes runs past the %d bytes left", id, size, r.Left())
			return
		}
		s := checker{Reader: Reader{B: r.B[:r.Pos+int(size)], Pos: r.Pos}}
		r.Pos += int(size)
		switch id {
		case 0:
			s.skip("module name")
		case 1:
			for range s.count("function names", 2) {
				s.u32("function index")
				s.skip("function name")
			}
		case 2:
			for range s.count("functions with local names", 2) {
				s.u32("function index")
				for range s.count("local names", 2) {
					s.u32("local index")
					s.skip("local name")
				}
			}
		}
		if s.err != nil {
			r.err = s.err
		}
	}
}

// valType skips a value type.
func (r *checker) valType() {
	switch t := r.byte("value type"); t {
	case 0x7f, 0x7e, 0x7d, 0x7c, 0x7b, 0x70, 0x6f, 0x69: // i32 i64 f32 f64 v128 funcref externref exnref
	case 0x63, 0x64: // (ref null ht), (ref ht)
		r.sleb("heap type", 33)
	default:
		if r.err == nil {
			r.fail("value type %#x", t)
		}
	}
}

// tableType skips a table type, bounding its initial size.
func (r *checker) tableType() {
	r.valType()
	if min := r.limits(); min > MaxTableEntries {
		r.fail("a table of %d entries at the start, over the %d the host allows", min, MaxTableEntries)
	}
}

// limits skips a memory's or a table's limits and returns the minimum.
func (r *checker) limits() uint32 {
	flags := r.byte("limits flags")
	if flags > 3 {
		r.fail("limits flags %#x", flags)
		return 0
	}
	min := r.u32("minimum")
	if flags&1 != 0 {
		r.u32("maximum")
	}
	return min
}

// constExpr skips a constant expression.
func (r *checker) constExpr() {
	for r.err == nil {
		switch op := r.byte("constant expression"); op {
		case 0x0b: // end
			return
		case 0x41: // i32.const
			r.sleb("i32 constant", 32)
		case 0x42: // i64.const
			r.sleb("i64 constant", 64)
		case 0x43: // f32.const
			r.bytes("f32 constant", 4)
		case 0x44: // f64.const
			r.bytes("f64 constant", 8)
		case 0x23, 0xd2: // global.get, ref.func
			r.u32("index")
		case 0xd0: // ref.null
			r.sleb("heap type", 33)
		case 0x6a, 0x6b, 0x6c, 0x7c, 0x7d, 0x7e: // i32 and i64 add, sub, mul
		case 0xfd: // v128.const
			if sub := r.u32("vector opcode"); sub != 12 {
				r.fail("vector opcode %d in a constant expression", sub)
			}
			r.bytes("v128 constant", 16)
		default:
			if r.err == nil {
				r.fail("opcode %#x in a constant expression", op)
			}
		}
	}
}

// bytes skips n bytes.
func (r *checker) bytes(what string, n int) {
	if r.err == nil && r.Left() < n {
		r.fail("%s: unexpected end", what)
		return
	}
	r.Pos += n
}

// element skips an element segment, in any of its eight encodings.
func (r *checker) element() {
	flags := r.u32("element segment flags")
	if flags > 7 {
		r.fail("element segment flags %d", flags)
		return
	}
	if flags&3 == 2 { // an explicit table index
		r.u32("table index")
	}
	if flags&1 == 0 { // active: an offset
		r.constExpr()
	}
	if flags&3 != 0 { // an element kind or a reference type
		if flags&4 == 0 {
			r.byte("element kind")
		} else {
			r.valType()
		}
	}
	if flags&4 == 0 {
		for range r.count("function indices", 1) {
			r.u32("function index")
		}
		return
	}
	for range r.count("element expressions", 2) {
		r.constExpr()
	}
}

// body checks a function body's local declarations and skips its code.
func (r *checker) body() {
	size := r.u32("function body size")
	if r.err == nil && uint64(size) > uint64(r.Left()) {
		r.fail("function body of %d bytes runs past the %d bytes left", size, r.Left())
		return
	}
	s := checker{Reader: Reader{B: r.B[:r.Pos+int(size)], Pos: r.Pos}}
	r.Pos += int(size)
	var locals uint64
	for range s.count("local declarations", 2) {
		locals += uint64(s.u32("local count"))
		if s.err == nil && locals > MaxLocals {
			s.fail("the function declares over %d locals", MaxLocals)
		}
		s.valType()
	}
	if s.err != nil {
		r.err = s.err
	}
}
