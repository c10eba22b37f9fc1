package interrupt

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/sluicehq/sluice/runtime/wasmbin"
)

// Reserved export names. A module that already exports either is refused
// (ErrUnsupported), so the embedder never confuses the guest's own export
// with the instrumenter's.
const (
	// FlagExport is the name under which the interrupt flag, a mutable i32
	// global, is exported.
	FlagExport = "sluice:interrupt"
	// StartExport is the name under which a module's start function is
	// exported once its start section is removed.
	StartExport = "sluice:start"
)

// Interval is how often a guest yields to the embedder and tests the flag:
// every Interval iterations of the loops of one function call, and every
// Interval calls of functions that call others. A tight loop runs about a
// thousand iterations a microsecond, so a raised flag stops a guest, and a
// Go stop-the-world (for the garbage collector) reaches it, within
// microseconds in general. The worst case is Interval calls each looping
// Interval-1 times, a million loop iterations or about a millisecond. A
// power of two.
const Interval = 1024

// Errors returned, wrapped, by Instrument. Either way the module can still
// be run uninstrumented, with the engine's own interruption mechanism.
var (
	// ErrMalformed is a module that is not well-formed WebAssembly, as far
	// as the instrumenter reads it: wasmbin.ErrMalformed, which the
	// reader it shares with the plugin loader returns.
	ErrMalformed = wasmbin.ErrMalformed
	// ErrUnsupported is a construct the instrumenter does not handle: an
	// opcode of a proposal it does not decode (exceptions, tail calls,
	// relaxed SIMD, GC), or a reserved export name already in use.
	ErrUnsupported = errors.New("interrupt: unsupported module")
)

// Result is an instrumented module.
type Result struct {
	// Wasm is the instrumented module.
	Wasm []byte
	// Flag is the index of the interrupt flag global, Calls that of the
	// call count, Table that of the table the yield grows by nothing.
	Flag, Calls, Table uint32
	// Start reports whether the module had a start section, which is gone:
	// the embedder must call StartExport right after instantiation, before
	// anything else, as the start section would have.
	Start bool
	// LoopChecks counts the loops checked, WrappedLoops those whose check
	// branches out of the loop to the yield (all but those with
	// parameters). EntryChecks counts the functions that call others and
	// count their calls in a check at their entry; Seeds those that count
	// them in the loop count of the loop they open with.
	LoopChecks, WrappedLoops, EntryChecks, Seeds int
	// DroppedSections names the custom sections left out (DWARF), whose code
	// offsets instrumentation makes wrong.
	DroppedSections []string
	// Tables holds the declared minimum number of entries of each table
	// of the module, imported ones first, in index order (without the
	// instrumenter's own).
	Tables []uint64
	// TableGrows counts the table.grow instructions bounded by
	// Options.TableLimit; GrowFuncs the functions added to bound them (one
	// per table grown).
	TableGrows, GrowFuncs int
	// ThreadedJumps counts the jumps made direct branches
	// (Options.ThreadJumps).
	ThreadedJumps int
}

// Section ids of the binary format.
const (
	secCustom   = 0
	secType     = 1
	secImport   = 2
	secFunction = 3
	secTable    = 4
	secMemory   = 5
	secGlobal   = 6
	secExport   = 7
	secStart    = 8
	secElement  = 9
	secCode     = 10
	secData     = 11
	secDataCnt  = 12
	secTag      = 13
)

// rank is the position of each known section id in the order the binary
// format requires (the tag section of the exception proposal comes between
// memory and global, data count between element and code).
var rank = [...]int{
	secType: 1, secImport: 2, secFunction: 3, secTable: 4, secMemory: 5, secTag: 6,
	secGlobal: 7, secExport: 8, secStart: 9, secElement: 10, secDataCnt: 11, secCode: 12, secData: 13,
}

const exportGlobal = 0x03

// header is the magic number and version 1 of the binary format.
var header = []byte{0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00}

type section struct {
	id      byte
	raw     []byte // id, size and content, as in the module
	content []byte
	base    int // offset of content in the module
	name    string
}

// Options says what InstrumentWith does to a module.
type Options struct {
	// Deadline inserts the interrupt checks, the flag and the yield (see
	// Instrument).
	Deadline bool
	// TableLimit, when non-zero, bounds every table of the module at
	// TableLimit entries: each table.grow of the module's code becomes a
	// call of a function, appended after the module's own, that returns -1
	// (the growth failed, as the specification lets an engine answer)
	// where the table would grow past TableLimit entries, and grows it
	// otherwise. A growth by zero entries always goes through. Result.Tables
	// gives the tables' declared minimums, which the embedder checks
	// against the limit itself.
	TableLimit uint32
	// ThreadJumps makes each jump through a dispatch loop whose target
	// encloses the jump a direct branch to that target (see dispatch): the
	// jumps forward of Go's WebAssembly code, which otherwise all go back
	// to the function's head and through its jump table.
	ThreadJumps bool
}

// Instrument is InstrumentWith(wasm, Options{Deadline: true}): the
// interrupt checks, and no table limit.
func Instrument(wasm []byte) (Result, error) {
	return InstrumentWith(wasm, Options{Deadline: true})
}

// InstrumentWith returns a copy of wasm in which loops count their iterations
// and functions that call others count their calls, and every Interval of
// either the guest yields to the embedder (grows a table of its own by
// nothing, which leaves the compiled code for the engine's Go code, where
// the Go scheduler can stop the goroutine) and executes unreachable if the
// interrupt flag is set (see newCode). The flag and the call count are new
// mutable i32 globals, appended after the module's own (so no index
// changes); the flag is exported as FlagExport. Each function with loops
// gets a local, after its own, for their count. The table is appended after
// the module's tables. A start section is replaced by the export StartExport (see
// Result.Start). DWARF custom sections (".debug_*") are dropped, and so is
// a malformed name section; every other section is kept byte for byte,
// except the table, global, export and code sections, which are rewritten.
// wasm is not modified. That is what opts.Deadline asks; opts.TableLimit
// rewrites table.grow (see Options); with neither, InstrumentWith only
// reads the module's tables (Result.Tables). Without Deadline, a module with no
// table.grow is returned as it is (Result.Wasm is wasm), so that it pays
// nothing, and one with a table.grow changes in that instruction only, in
// the type, function and code sections, which grow by the functions
// added; its start section and exports stay.
//
// InstrumentWith never panics, whatever wasm holds. It checks the structure
// it needs, not validity: the result of an invalid module is invalid too,
// and the engine's compiler says why.
func InstrumentWith(wasm []byte, opts Options) (Result, error) {
	var res Result
	sections, err := splitSections(wasm)
	if err != nil {
		return res, err
	}
	find := func(id byte) *section {
		for i := range sections {
			if sections[i].id == id {
				return &sections[i]
			}
		}
		return nil
	}

	var imported imports
	if s := find(secImport); s != nil {
		if imported, err = countImports(s); err != nil {
			return res, err
		}
	}
	definedGlobals, err := vectorLength(find(secGlobal))
	if err != nil {
		return res, err
	}
	definedTables, err := vectorLength(find(secTable))
	if err != nil {
		return res, err
	}
	tables := imported.tables
	if s := find(secTable); s != nil {
		if tables, err = readTables(s, tables); err != nil {
			return res, err
		}
	}
	res.Tables = make([]uint64, len(tables))
	for i, t := range tables {
		res.Tables[i] = t.min
	}
	if uint64(imported.globals)+uint64(definedGlobals) >= math.MaxUint32-2 ||
		uint64(len(imported.tables))+uint64(definedTables) >= math.MaxUint32-1 {
		return res, fmt.Errorf("%w: too many globals or tables", ErrMalformed)
	}
	g := globals{
		flag:  imported.globals + definedGlobals,
		calls: imported.globals + definedGlobals + 1,
		table: uint32(len(tables)),
	}
	res.Flag, res.Calls, res.Table = g.flag, g.calls, g.table

	start := -1
	if s := find(secStart); s != nil && opts.Deadline {
		r := &reader{B: s.content, Base: s.base}
		idx, err := r.U32()
		if err != nil {
			return res, err
		}
		if !r.Done() {
			return res, r.Errorf("start section longer than its function index")
		}
		start, res.Start = int(idx), true
	}

	type replacement struct {
		id      byte
		content []byte
	}
	var replaced []replacement // the sections rewritten or added
	if opts.Deadline {
		exports, err := rewriteExports(find(secExport), g.flag, start)
		if err != nil {
			return res, err
		}
		newGlobals := appendVector(find(secGlobal), definedGlobals, 2,
			0x7f, 0x01, opI32Const, 0x00, opEnd, // the flag: mutable i32, 0
			0x7f, 0x01, opI32Const, 0x00, opEnd) // the call count: mutable i32, 0
		newTables := appendVector(find(secTable), definedTables, 1, funcRef, 0x00, 0x00) // funcref, minimum 0, no maximum
		replaced = append(replaced, replacement{secTable, newTables}, replacement{secGlobal, newGlobals}, replacement{secExport, exports})
	}

	var code []byte
	if s := find(secCode); s != nil && (opts.Deadline || opts.TableLimit > 0 || opts.ThreadJumps) {
		params, err := functionParams(find(secType), find(secFunction))
		if err != nil {
			return res, err
		}
		c := newCode(g)
		c.deadline = opts.Deadline
		c.threads = opts.ThreadJumps
		if opts.TableLimit > 0 {
			c.grow = &growers{limit: opts.TableLimit, tables: tables,
				firstFunc: uint64(imported.funcs) + uint64(len(params))}
		}
		if code, err = rewriteCode(s, params, c, &res); err != nil {
			return res, err
		}
		if c.grow != nil && len(c.grow.order) > 0 {
			types, err := vectorLength(find(secType))
			if err != nil {
				return res, err
			}
			newTypes, newFuncs, err := c.grow.declare(find(secType), types, find(secFunction), uint32(len(params)))
			if err != nil {
				return res, err
			}
			replaced = append(replaced, replacement{secType, newTypes}, replacement{secFunction, newFuncs})
		}
	}
	if !opts.Deadline && res.TableGrows == 0 && res.ThreadedJumps == 0 {
		res.Wasm = wasm
		return res, nil
	}

	out := make([]byte, 0, len(wasm)+len(wasm)/8+64)
	out = append(out, header...)
	emitted := map[byte]bool{}
	emit := func(id byte, content []byte) {
		out = append(out, id)
		out = appendULEB(out, uint64(len(content)))
		out = append(out, content...)
		emitted[id] = true
	}
	// pending emits the sections the instrumenter adds or rewrites before
	// the first section that must follow them, when the module has none.
	slices.SortFunc(replaced, func(a, b replacement) int { return rank[a.id] - rank[b.id] })
	isReplaced := func(id byte) bool {
		for _, r := range replaced {
			if r.id == id {
				return true
			}
		}
		return false
	}
	pending := func(before int) {
		for _, r := range replaced {
			if !emitted[r.id] && before > rank[r.id] {
				emit(r.id, r.content)
			}
		}
	}
	for _, s := range sections {
		switch s.id {
		case secCustom:
			if strings.HasPrefix(s.name, ".debug_") || (s.name == "name" && !wellFormedNames(&s)) {
				res.DroppedSections = append(res.DroppedSections, s.name)
				continue
			}
			out = append(out, s.raw...)
			continue
		case secStart:
			if opts.Deadline {
				continue
			}
		}
		pending(rank[s.id])
		switch {
		case isReplaced(s.id):
			pending(rank[s.id] + 1)
		case s.id == secCode:
			emit(secCode, code)
		default:
			out = append(out, s.raw...)
		}
	}
	pending(math.MaxInt)
	res.Wasm = out
	return res, nil
}

// vectorLength reads the number of entries of section s, 0 if s is nil.
func vectorLength(s *section) (uint32, error) {
	if s == nil {
		return 0, nil
	}
	r := &reader{B: s.content, Base: s.base}
	return r.U32()
}

// appendVector returns the content of section s, a vector of count
// entries (none if s is nil), with added more entries, encoded in entries,
// at its end.
func appendVector(s *section, count, added uint32, entries ...byte) []byte {
	out := appendULEB(nil, uint64(count)+uint64(added))
	if s != nil {
		r := &reader{B: s.content}
		_, _ = r.U32() // read once already by vectorLength
		out = append(out, s.content[r.Pos:]...)
	}
	return append(out, entries...)
}

// splitSections checks the header and cuts the module into sections. Each
// non-custom section may appear once, in the order the format requires.
func splitSections(wasm []byte) ([]section, error) {
	if len(wasm) < len(header) || string(wasm[:4]) != string(header[:4]) {
		return nil, fmt.Errorf("%w: no WebAssembly magic number", ErrMalformed)
	}
	if string(wasm[4:8]) != string(header[4:]) {
		return nil, fmt.Errorf("%w: binary format version %x, want 1", ErrUnsupported, wasm[4:8])
	}
	r := &reader{B: wasm, Pos: len(header)}
	var sections []section
	last := 0
	for !r.Done() {
		offset := r.Pos
		id, err := r.Byte()
		if err != nil {
			return nil, err
		}
		size, err := r.U32()
		if err != nil {
			return nil, err
		}
		base := r.Pos
		content, err := r.Bytes(uint64(size))
		if err != nil {
			return nil, err
		}
		s := section{id: id, raw: wasm[offset:r.Pos], content: content, base: base}
		switch {
		case id == secCustom:
			cr := &reader{B: content, Base: base}
			if s.name, err = cr.Name(); err != nil {
				return nil, err
			}
		case int(id) >= len(rank):
			return nil, fmt.Errorf("%w: at byte %d: unknown section id %d", ErrMalformed, offset, id)
		case rank[id] <= last:
			return nil, fmt.Errorf("%w: at byte %d: section %d out of order or repeated", ErrMalformed, offset, id)
		default:
			last = rank[id]
		}
		sections = append(sections, s)
	}
	return sections, nil
}

// wellFormedNames reports whether the name section s is well-formed: each
// subsection's content fills exactly the size it announces. A compiler may
// read a malformed one past its end, into the sections that follow, which
// instrumentation changes; it is dropped rather than kept.
func wellFormedNames(s *section) bool {
	r := &reader{B: s.content}
	if _, err := r.Name(); err != nil {
		return false
	}
	for !r.Done() {
		id, err := r.Byte()
		if err != nil {
			return false
		}
		size, err := r.U32()
		if err != nil {
			return false
		}
		content, err := r.Bytes(uint64(size))
		if err != nil {
			return false
		}
		sub := &reader{B: content}
		switch id {
		case 0: // module name
			_, err = sub.Name()
		case 1: // function names
			err = skipNameMap(sub)
		case 2: // local names: function index, name map
			var n uint32
			if n, err = sub.U32(); err == nil {
				for i := uint32(0); i < n && err == nil; i++ {
					if _, err = sub.U32(); err == nil {
						err = skipNameMap(sub)
					}
				}
			}
		default:
			continue
		}
		if err != nil || !sub.Done() {
			return false
		}
	}
	return true
}

// skipNameMap skips a vector of (index, name) pairs.
func skipNameMap(r *reader) error {
	n, err := r.U32()
	for i := uint32(0); i < n && err == nil; i++ {
		if _, err = r.U32(); err == nil {
			_, err = r.Name()
		}
	}
	return err
}

// imports counts what a module imports of the kinds whose index spaces the
// instrumenter appends to: imports come first in each.
type imports struct {
	funcs, globals uint32
	tables         []table
}

// table is what the instrumenter needs to know of a table: its reference
// type and its declared minimum.
type table struct {
	ref byte
	min uint64
}

// countImports reads the import section.
func countImports(s *section) (imports, error) {
	var n imports
	r := &reader{B: s.content, Base: s.base}
	count, err := r.U32()
	if err != nil {
		return n, err
	}
	for range count {
		if _, err := r.Name(); err != nil {
			return n, err
		}
		if _, err := r.Name(); err != nil {
			return n, err
		}
		kind, err := r.Byte()
		if err != nil {
			return n, err
		}
		switch kind {
		case 0x00: // function: type index
			_, err = r.U32()
			n.funcs++
		case 0x01: // table: reference type, limits
			var t table
			if t, err = readTable(r); err == nil {
				n.tables = append(n.tables, t)
			}
		case 0x02: // memory: limits
			_, err = skipLimits(r)
		case 0x03: // global: value type, mutability
			var t byte
			if t, err = r.Byte(); err == nil {
				if !valueType(t) {
					return n, fmt.Errorf("%w: at byte %d: global of type 0x%02x", ErrUnsupported, r.Base+r.Pos-1, t)
				}
				_, err = r.Byte()
				n.globals++
			}
		case 0x04: // tag: attribute, type index
			if _, err = r.Byte(); err == nil {
				_, err = r.U32()
			}
		default:
			return n, r.Errorf("import of unknown kind 0x%02x", kind)
		}
		if err != nil {
			return n, err
		}
	}
	if !r.Done() {
		return n, r.Errorf("import section longer than its %d entries", count)
	}
	return n, nil
}

// readTable reads a table type: a reference type and limits.
func readTable(r *reader) (table, error) {
	var t table
	ref, err := r.Byte()
	if err != nil {
		return t, err
	}
	if ref != 0x70 && ref != 0x6f {
		return t, fmt.Errorf("%w: at byte %d: table of type 0x%02x", ErrUnsupported, r.Base+r.Pos-1, ref)
	}
	t.ref = ref
	t.min, err = skipLimits(r)
	return t, err
}

// readTables appends the tables of the table section s to tables.
func readTables(s *section, tables []table) ([]table, error) {
	r := &reader{B: s.content, Base: s.base}
	n, err := r.U32()
	if err != nil {
		return nil, err
	}
	if uint64(n) > uint64(len(s.content)) {
		return nil, r.Errorf("%d tables in a section of %d bytes", n, len(s.content))
	}
	tables = append([]table(nil), tables...)
	for range n {
		t, err := readTable(r)
		if err != nil {
			return nil, err
		}
		tables = append(tables, t)
	}
	if !r.Done() {
		return nil, r.Errorf("table section longer than its %d entries", n)
	}
	return tables, nil
}

// skipLimits skips the limits of a table or memory: flags (bit 0: a maximum
// follows; bit 1: shared; bit 2: 64-bit), minimum and maximum.
// It returns the minimum.
func skipLimits(r *reader) (uint64, error) {
	flags, err := r.Byte()
	if err != nil {
		return 0, err
	}
	if flags > 0x07 {
		return 0, fmt.Errorf("%w: at byte %d: limits flags 0x%02x", ErrUnsupported, r.Base+r.Pos-1, flags)
	}
	low, err := r.ULEB(64)
	if err != nil {
		return 0, err
	}
	if flags&0x01 != 0 {
		_, err = r.ULEB(64)
	}
	return low, err
}

// rewriteExports returns the content of the export section with the flag
// exported as FlagExport and, when start >= 0, that function as StartExport.
// It refuses a module that uses either name.
func rewriteExports(s *section, flag uint32, start int) ([]byte, error) {
	var count uint32
	var entries []byte
	if s != nil {
		r := &reader{B: s.content, Base: s.base}
		var err error
		if count, err = r.U32(); err != nil {
			return nil, err
		}
		first := r.Pos
		for range count {
			name, err := r.Name()
			if err != nil {
				return nil, err
			}
			if name == FlagExport || name == StartExport {
				return nil, fmt.Errorf("%w: the module exports %q, a name the instrumenter reserves", ErrUnsupported, name)
			}
			if _, err := r.Byte(); err != nil {
				return nil, err
			}
			if _, err := r.U32(); err != nil {
				return nil, err
			}
		}
		if !r.Done() {
			return nil, r.Errorf("export section longer than its %d entries", count)
		}
		entries = s.content[first:]
	}
	added := uint64(1)
	if start >= 0 {
		added++
	}
	if uint64(count)+added > math.MaxUint32 {
		return nil, fmt.Errorf("%w: %d exports", ErrMalformed, count)
	}
	out := appendULEB(nil, uint64(count)+added)
	out = append(out, entries...)
	out = appendName(out, FlagExport)
	out = appendULEB(append(out, exportGlobal), uint64(flag))
	if start >= 0 {
		out = appendName(out, StartExport)
		out = appendULEB(append(out, 0x00), uint64(start))
	}
	return out, nil
}

// functionParams returns the number of parameters of each function the
// module defines, from its type and function sections.
func functionParams(types, funcs *section) ([]uint32, error) {
	var counts []uint32 // per type
	if types != nil {
		r := &reader{B: types.content, Base: types.base}
		n, err := r.U32()
		if err != nil {
			return nil, err
		}
		for range n {
			form, err := r.Byte()
			if err != nil {
				return nil, err
			}
			if form != 0x60 {
				return nil, fmt.Errorf("%w: at byte %d: type of form 0x%02x", ErrUnsupported, r.Base+r.Pos-1, form)
			}
			var params uint32
			for i := range 2 { // parameters, results
				k, err := r.U32()
				if err != nil {
					return nil, err
				}
				if _, err := r.Bytes(uint64(k)); err != nil {
					return nil, err
				}
				for _, t := range r.B[r.Pos-int(k) : r.Pos] {
					if !valueType(t) {
						return nil, fmt.Errorf("%w: a function type with a value of type 0x%02x", ErrUnsupported, t)
					}
				}
				if i == 0 {
					params = k
				}
			}
			counts = append(counts, params)
		}
		if !r.Done() {
			return nil, r.Errorf("type section longer than its %d entries", n)
		}
	}
	if funcs == nil {
		return nil, nil
	}
	r := &reader{B: funcs.content, Base: funcs.base}
	n, err := r.U32()
	if err != nil {
		return nil, err
	}
	var params []uint32
	for range n {
		t, err := r.U32()
		if err != nil {
			return nil, err
		}
		if uint64(t) >= uint64(len(counts)) {
			return nil, r.Errorf("function of type %d, of %d types", t, len(counts))
		}
		params = append(params, counts[t])
	}
	if !r.Done() {
		return nil, r.Errorf("function section longer than its %d entries", n)
	}
	return params, nil
}

// rewriteCode returns the content of the code section with the checks
// inserted in every function body, and counts them in res.
func rewriteCode(s *section, params []uint32, c *code, res *Result) ([]byte, error) {
	r := &reader{B: s.content, Base: s.base}
	n, err := r.U32()
	if err != nil {
		return nil, err
	}
	out := make([]byte, 0, len(s.content)+len(s.content)/16)
	out = appendULEB(out, uint64(n)) // rewritten below if functions are added
	var body, scratch []byte
	for i := range n {
		size, err := r.U32()
		if err != nil {
			return nil, err
		}
		base := r.Base + r.Pos
		b, err := r.Bytes(uint64(size))
		if err != nil {
			return nil, err
		}
		if uint64(i) >= uint64(len(params)) {
			return nil, r.Errorf("function body %d of %d functions", i, len(params))
		}
		var st bodyStats
		body, scratch, st, err = rewriteBody(body[:0], b, params[i], base, c, scratch)
		if err != nil {
			return nil, fmt.Errorf("function body %d: %w", i, err)
		}
		out = appendULEB(out, uint64(len(body)))
		out = append(out, body...)
		res.TableGrows += st.grows
		res.ThreadedJumps += st.threaded
		res.LoopChecks += st.loops
		res.WrappedLoops += st.wrapped
		if st.entry {
			res.EntryChecks++
		}
		if st.seed {
			res.Seeds++
		}
	}
	if !r.Done() {
		return nil, r.Errorf("code section longer than its %d function bodies", n)
	}
	if c.grow != nil && len(c.grow.order) > 0 {
		bodies := out[len(appendULEB(nil, uint64(n))):]
		out = appendULEB(make([]byte, 0, len(out)+64*len(c.grow.order)), uint64(n)+uint64(len(c.grow.order)))
		out = append(out, bodies...)
		out = c.grow.appendBodies(out)
		res.GrowFuncs = len(c.grow.order)
	}
	return out, nil
}
