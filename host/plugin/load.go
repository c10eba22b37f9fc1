package plugin

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"slices"
	"strings"

	"github.com/sluicehq/sluice/abi"
	"github.com/sluicehq/sluice/runtime"
)

// wasiModule is the WASI import module every engine provides.
const wasiModule = "wasi_snapshot_preview1"

// exportStart is the entry point of a WASI command module.
const exportStart = "_start"

// Plugin is a compiled, checked module ready to serve one kind of operator.
// It is safe for concurrent use: each worker makes its own Instance.
type Plugin struct {
	name   string
	kind   Kind
	mod    runtime.Module
	limits Limits
	logger *slog.Logger
	tables []string // a transactional operator's tables, by handle
	// features are the abi.Feature* bits the module declares
	// (features.go).
	features int32
}

// Load compiles wasm and checks that it can serve as an operator of kind:
// the exports and memory the ABI requires, with their signatures; imports
// only from "sluice", with the signatures the host provides, and
// "wasi_snapshot_preview1"; a reactor, not a WASI command; kind among the
// kinds it declares in its sluice.kinds custom section, when it has one
// (ABI.md section 12; a module without it may serve any kind whose exports
// it has); and, by instantiating it once, the ABI version it declares. A
// module that fails any check is refused with a *LoadError listing every
// problem, before it sees any record. name identifies the plugin in errors
// and logs.
//
// eng must have HostModule() among its host modules.
func Load(ctx context.Context, eng runtime.Engine, name string, wasm []byte, kind Kind, opts ...Option) (*Plugin, error) {
	if !kind.valid() {
		_, err := ParseKind(string(kind))
		return nil, fmt.Errorf("plugin %q: %w", name, err)
	}
	o := buildOptions(opts)
	mod, err := compile(ctx, eng, name, wasm)
	if err != nil {
		return nil, err
	}
	p := &Plugin{
		name:   name,
		kind:   kind,
		mod:    mod,
		limits: o.limits,
		tables: o.tables,
		logger: o.logger.With(slog.String("plugin", name), slog.String("kind", string(kind))),
	}
	// A module that declares its kinds (ABI.md section 12) and not kind
	// is refused as such, with the problems it has as an operator of a
	// kind it declares: those of kind's exports would only mislead.
	var problems []string
	inspectAs := kind
	d := declaredKinds(wasm)
	if p := d.problem(); p != "" {
		problems = append(problems, p)
	} else if d.declared() && !slices.Contains(d.kinds, kind) {
		problems = append(problems, d.mismatch(kind))
		inspectAs = d.kinds[0]
	}
	s := inspectKind(mod, inspectAs, fmt.Sprintf("%s operators", inspectAs))
	if s.instantiable {
		v, f, err := loadABI(ctx, mod, p.newCall(), s.exportsFeatures())
		s.version(v, err)
		p.features = f
	}
	if problems = append(problems, s.problems...); len(problems) > 0 {
		_ = mod.Close(context.WithoutCancel(ctx))
		return nil, &LoadError{Plugin: name, Problems: problems, causes: s.causes}
	}
	return p, nil
}

// Name returns the plugin's name, as given to Load.
func (p *Plugin) Name() string { return p.name }

// Kind returns the kind of operator the plugin was loaded for.
func (p *Plugin) Kind() Kind { return p.kind }

// Limits returns the limits the plugin's instances enforce.
func (p *Plugin) Limits() Limits { return p.limits }

// Close releases the compiled module. Instances must be closed first.
func (p *Plugin) Close(ctx context.Context) error {
	if err := p.mod.Close(ctx); err != nil {
		return fmt.Errorf("plugin %q: closing: %w", p.name, err)
	}
	return nil
}

// newCall returns a call for this plugin, with no call in progress.
func (p *Plugin) newCall() *call {
	c := &call{plugin: p.name, kind: p.kind, limits: p.limits, logger: p.logger, tables: p.tables}
	c.dec.AllowInputs(p.ReadsInputs()) // an output forwarded from an input keeps its flags
	return c
}

// compile compiles wasm, reporting the module's failure as a *LoadError,
// and the host's (a compilation cache it cannot read or write, wrapping
// runtime.ErrCache) as an error naming the plugin. The module's declared
// sizes are checked first (checkBounds), so that the engine never sees
// one that would make it exhaust the host's memory.
func compile(ctx context.Context, eng runtime.Engine, name string, wasm []byte) (runtime.Module, error) {
	if err := checkBounds(wasm); err != nil {
		err = &runtime.Error{Kind: runtime.KindCompile, Module: name, Err: err}
		return nil, &LoadError{Plugin: name, Problems: []string{"not a valid WebAssembly module: " + innerError(err)}, causes: []error{err}}
	}
	mod, err := eng.Compile(ctx, name, wasm)
	if err == nil {
		return mod, nil
	}
	if errors.Is(err, runtime.ErrCache) {
		return nil, fmt.Errorf("plugin %q: %w", name, err)
	}
	problem := "not a valid WebAssembly module: " + innerError(err)
	if !bytes.HasPrefix(wasm, []byte("\x00asm")) {
		problem = fmt.Sprintf("not a WebAssembly module: %d bytes that do not begin with the \\0asm magic number", len(wasm))
	}
	return nil, &LoadError{Plugin: name, Problems: []string{problem}, causes: []error{err}}
}

// innerError returns what the engine said, without the plugin name a
// *runtime.Error repeats.
func innerError(err error) string {
	var re *runtime.Error
	if errors.As(err, &re) && re.Err != nil {
		return re.Err.Error()
	}
	return err.Error()
}

// exportSpec is an export the ABI defines.
type exportSpec struct {
	name     string
	sig      runtime.Signature
	required bool
}

// abiExports returns the function exports of the ABI and which of them
// operators of kind require: sluice_process for every kind but
// transactional, which requires sluice_plan, sluice_apply and sluice_post
// instead. An export that is not required is still checked when present.
func abiExports(kind Kind) []exportSpec {
	txn := kind.Transactional()
	return []exportSpec{
		{abi.ExportABIVersion, sig(0, 1), true},
		{abi.ExportAlloc, sig(1, 1), true},
		{abi.ExportProcess, sig(2, 1), !txn},
		{abi.ExportPlan, sig(2, 1), txn},
		{abi.ExportApply, sig(2, 1), txn},
		{abi.ExportPost, sig(4, 1), txn},
		{abi.ExportConfigure, sig(2, 1), false},
		{abi.ExportKinds, sig(0, 1), false},
		{abi.ExportFeatures, sig(0, 1), false},
		{abi.ExportInitialize, sig(0, 0), false},
	}
}

// shape is what inspecting a compiled module found.
type shape struct {
	exports, imports []runtime.FuncInfo
	memory           bool
	command          bool     // a WASI command: exports _start and no _initialize
	usesState        []string // the state host functions it imports
	exportsOK        bool     // every required export present with its signature
	instantiable     bool     // imports are all provided: worth instantiating
	abiVersion       int32    // 0 until version is called with a result
	problems         []string
	causes           []error
}

// inspect checks a module's exports and imports against the ABI for the
// kinds that process batches (map, filter, flatmap, keyed). requiredBy names
// who needs the required exports, for the messages.
func inspect(mod runtime.Module, requiredBy string) *shape {
	return inspectKind(mod, KindMap, requiredBy)
}

// inspectKind checks a module's exports and imports against the ABI for
// operators of kind.
func inspectKind(mod runtime.Module, kind Kind, requiredBy string) *shape {
	s := &shape{exports: mod.Exports(), imports: mod.Imports(), memory: mod.ExportedMemory(abi.ExportMemory)}
	s.exportsOK = true
	if !s.memory {
		s.exportsOK = false
		s.problems = append(s.problems, fmt.Sprintf("missing export %s: the module must export its linear memory as %q", abi.ExportMemory, abi.ExportMemory))
	}
	byName := make(map[string]runtime.FuncInfo, len(s.exports))
	for _, e := range s.exports {
		byName[e.Name] = e
	}
	_, hasStart := byName[exportStart]
	_, hasInit := byName[abi.ExportInitialize]
	if hasStart && !hasInit {
		s.command = true
		s.exportsOK = false
		s.problems = append(s.problems, "module is a WASI command (it exports _start), not a reactor: rebuild it as a reactor; "+
			"for Go: GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared")
	}
	for _, e := range s.exports {
		if abi.Reserved(e.Name) {
			s.exportsOK = false
			s.problems = append(s.problems, fmt.Sprintf("export %s is reserved for a later version of the ABI (abi/ABI.md section 11): a version-%d module must not export it", e.Name, abi.Version))
		}
	}
	for _, spec := range abiExports(kind) {
		e, ok := byName[spec.name]
		switch {
		case !ok && spec.required:
			s.exportsOK = false
			s.problems = append(s.problems, fmt.Sprintf("missing export %s %s, required by %s", spec.name, spec.sig.String(), requiredBy))
		case ok && !e.Signature.Equal(spec.sig):
			s.exportsOK = false
			s.problems = append(s.problems, fmt.Sprintf("export %s has signature %s, want %s", spec.name, e.Signature.String(), spec.sig.String()))
		}
	}
	host := HostModule()
	s.instantiable = true
	for _, im := range s.imports {
		switch im.Module {
		case wasiModule:
		case abi.HostModule:
			i := slices.IndexFunc(host.Funcs, func(f runtime.HostFunc) bool { return f.Name == im.Name })
			switch {
			case i < 0 && abi.Reserved(im.Name):
				s.instantiable = false
				s.problems = append(s.problems, fmt.Sprintf("import %s.%s is reserved for a later version of the ABI (abi/ABI.md section 11): this host, of version %d, does not provide it", im.Module, im.Name, abi.Version))
			case i < 0:
				s.instantiable = false
				s.problems = append(s.problems, fmt.Sprintf("import %s.%s: the host has no such function (it provides %s)", im.Module, im.Name, hostFuncNames(host)))
			case !im.Signature.Equal(host.Funcs[i].Signature):
				s.instantiable = false
				s.problems = append(s.problems, fmt.Sprintf("import %s.%s has signature %s, want %s", im.Module, im.Name, im.Signature.String(), host.Funcs[i].Signature.String()))
			case strings.HasPrefix(im.Name, "state_") || im.Name == abi.FuncTableID:
				s.usesState = append(s.usesState, im.Name)
			}
		default:
			s.instantiable = false
			s.problems = append(s.problems, fmt.Sprintf("import %s.%s %s: module %q is not provided; plugins may import only from %q and %q",
				im.Module, im.Name, im.Signature.String(), im.Module, abi.HostModule, wasiModule))
		}
	}
	if e, ok := byName[abi.ExportABIVersion]; !ok || !e.Signature.Equal(sig(0, 1)) {
		s.instantiable = false // nothing to learn by instantiating
	}
	return s
}

// version records the outcome of calling sluice_abi_version.
func (s *shape) version(v int32, err error) {
	if err != nil {
		s.problems = append(s.problems, err.Error())
		s.causes = append(s.causes, err)
		return
	}
	s.abiVersion = v
	if v != abi.Version {
		s.problems = append(s.problems, fmt.Sprintf("module declares ABI version %d, this host speaks version %d", v, abi.Version))
	}
}

// instantiate instantiates mod, running its initialiser, for calls made
// with c. A failure is a *problemError.
func instantiate(ctx context.Context, mod runtime.Module, c *call) (runtime.Instance, error) {
	c.begin(abi.ExportInitialize, nil, nil, 0, 0)
	inst, err := mod.Instantiate(context.WithValue(ctx, callKey{}, c))
	c.end(ctx)
	if err == nil {
		return inst, nil
	}
	var re *runtime.Error
	switch {
	case errors.As(err, &re) && re.Export != "":
		// The module's initialiser failed (trap, timeout, exit).
		return nil, &problemError{fmt.Sprintf("calling %s failed: %s", re.Export, innerError(err)), err}
	case errors.Is(err, runtime.ErrLink) && strings.Contains(err.Error(), missingHostImport):
		// inspect found every import provided by HostModule(): the
		// engine lacks what it provides.
		return nil, &problemError{fmt.Sprintf("instantiating the module failed: %s (is plugin.HostModule() registered with the engine?)", innerError(err)), err}
	}
	// A start function that failed, a data segment that does not fit its
	// memory, a memory over the engine's limit...
	return nil, &problemError{"instantiating the module failed: " + innerError(err), err}
}

// callI32 calls inst's export of signature () -> i32 with c and returns
// its result. A failure is a *problemError.
func callI32(ctx context.Context, inst runtime.Instance, c *call, export string) (int32, error) {
	f, ok := inst.Func(export)
	if !ok {
		return 0, fmt.Errorf("missing export %s after instantiation", export)
	}
	var stack [1]uint64
	c.begin(export, nil, nil, 0, 0)
	err := f.Call(context.WithValue(ctx, callKey{}, c), stack[:])
	c.end(ctx)
	if err != nil {
		return 0, &problemError{fmt.Sprintf("calling %s failed: %s", export, innerError(err)), err}
	}
	return i32(stack[0]), nil
}

// missingHostImport begins how the runtime's link error names an import
// from the sluice host module that the engine does not provide ("module
// imports sluice.emit (i32, i32), which the host does not provide").
const missingHostImport = "module imports " + abi.HostModule + "."

// problemError is a problem found by running the module at load: its
// message is the problem in a plugin author's words (the engine's error
// already names the plugin, which the LoadError names once), and it wraps
// the engine's error for errors.Is and errors.As.
type problemError struct {
	problem string
	err     error
}

func (e *problemError) Error() string { return e.problem }
func (e *problemError) Unwrap() error { return e.err }

// hostFuncNames lists the host functions of m, for messages.
func hostFuncNames(m runtime.HostModule) string {
	names := make([]string, len(m.Funcs))
	for i, f := range m.Funcs {
		names[i] = f.Name
	}
	return strings.Join(names, ", ")
}

// Bounds a module must keep for checkBounds, beyond the format's own.
const (
	// maxLocals bounds the locals of one function, as browsers and
	// wasmtime do: a compiler allocates per declared local.
	maxLocals = 50_000
	// maxTableEntries bounds the initial size of a table, which an
	// instance allocates (8 bytes an entry) outside its memory limit.
	maxTableEntries = 1 << 20
)

// checkBounds walks the structure of a module far enough to check every
// count and length it declares against the bytes that follow: a count of
// entries whose smallest encodings cannot fit, a name or data segment
// longer than its section, a section longer than the module. It also
// bounds the locals of a function and the initial size of a table. The
// engine's decoder trusts some of these numbers and allocates what they
// declare before reading the entries (wazero 1.12 makes a slice of every
// count it reads), so that a module of a hundred bytes declaring 2^28
// imports would exhaust the host's memory, a fatal error that no recover
// catches. Everything else is left to the engine: checkBounds accepts
// every module of the features the engine enables by default (WebAssembly
// 2.0 and exception handling; not the GC proposal's types) that it can
// load, and fails some it would refuse anyway, with a message of its own.
// It allocates nothing.
func checkBounds(wasm []byte) error {
	if !bytes.HasPrefix(wasm, []byte("\x00asm\x01\x00\x00\x00")) {
		return nil // not a module of version 1: the engine says what is wrong
	}
	r := wasmReader{b: wasm, off: 8}
	for r.more() && r.err == nil {
		at := r.off
		id := r.byte("section id")
		size := r.u32("section size")
		if r.err == nil && uint64(size) > uint64(r.left()) {
			return fmt.Errorf("%s at %#x declares %d bytes, but %d bytes follow", sectionName(id), at, size, r.left())
		}
		s := wasmReader{b: wasm[:r.off+int(size)], off: r.off}
		r.off += int(size)
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

// wasmReader reads a module's bytes b from off, for checkBounds. Its first
// error sticks; later reads return zero.
type wasmReader struct {
	b   []byte
	off int
	err error
}

func (r *wasmReader) more() bool { return r.off < len(r.b) }
func (r *wasmReader) left() int  { return len(r.b) - r.off }

func (r *wasmReader) fail(format string, args ...any) {
	if r.err == nil {
		r.err = fmt.Errorf("at %#x: "+format, append([]any{r.off}, args...)...)
	}
}

func (r *wasmReader) byte(what string) byte {
	if r.err != nil {
		return 0
	}
	if !r.more() {
		r.fail("%s: unexpected end", what)
		return 0
	}
	b := r.b[r.off]
	r.off++
	return b
}

// leb skips a LEB128 number of at most maxBytes bytes and returns its low
// 64 bits.
func (r *wasmReader) leb(what string, maxBytes int) uint64 {
	var v uint64
	for i := 0; i < maxBytes; i++ {
		b := r.byte(what)
		if r.err != nil {
			return 0
		}
		if i < 10 {
			v |= uint64(b&0x7f) << (7 * i)
		}
		if b&0x80 == 0 {
			return v
		}
	}
	r.fail("%s: LEB128 number longer than %d bytes", what, maxBytes)
	return 0
}

// u32 reads an unsigned 32-bit LEB128 number.
func (r *wasmReader) u32(what string) uint32 {
	v := r.leb(what, 5)
	if v > math.MaxUint32 {
		r.fail("%s: %d does not fit 32 bits", what, v)
		return 0
	}
	return uint32(v)
}

// count reads the length of a vector whose entries take at least min
// bytes each, and fails unless they can fit in what is left. It returns 0
// on failure, so that the caller's loop over the entries does not run.
func (r *wasmReader) count(what string, min int) uint32 {
	n := r.u32(what + " count")
	if r.err == nil && uint64(n)*uint64(min) > uint64(r.left()) {
		r.fail("%d %s cannot fit in the %d bytes left", n, what, r.left())
	}
	if r.err != nil {
		return 0
	}
	return n
}

// skip skips a length-prefixed byte string (a name, a data segment's
// bytes).
func (r *wasmReader) skip(what string) {
	n := r.u32(what + " length")
	if r.err == nil && uint64(n) > uint64(r.left()) {
		r.fail("%s of %d bytes runs past the %d bytes left", what, n, r.left())
		return
	}
	r.off += int(n)
}

// section checks the content of a section with id.
func (r *wasmReader) section(id byte) error {
	switch id {
	case 0: // custom
		nameAt := r.off
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
			if r.more() && r.b[r.off] == 0x40 { // a table with an initialiser
				r.off++
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
func (r *wasmReader) name(off int) string {
	s := wasmReader{b: r.b, off: off}
	n := s.u32("name length")
	return string(r.b[s.off : s.off+int(n)])
}

// names checks the name section's subsections that the engine decodes.
func (r *wasmReader) names() {
	for r.more() && r.err == nil {
		id := r.byte("name subsection id")
		size := r.u32("name subsection size")
		if r.err == nil && uint64(size) > uint64(r.left()) {
			r.fail("name subsection %d of %d bytes runs past the %d bytes left", id, size, r.left())
			return
		}
		s := wasmReader{b: r.b[:r.off+int(size)], off: r.off}
		r.off += int(size)
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
func (r *wasmReader) valType() {
	switch t := r.byte("value type"); t {
	case 0x7f, 0x7e, 0x7d, 0x7c, 0x7b, 0x70, 0x6f, 0x69: // i32 i64 f32 f64 v128 funcref externref exnref
	case 0x63, 0x64: // (ref null ht), (ref ht)
		r.leb("heap type", 5)
	default:
		if r.err == nil {
			r.fail("value type %#x", t)
		}
	}
}

// tableType skips a table type, bounding its initial size.
func (r *wasmReader) tableType() {
	r.valType()
	if min := r.limits(); min > maxTableEntries {
		r.fail("a table of %d entries at the start, over the %d the host allows", min, maxTableEntries)
	}
}

// limits skips a memory's or a table's limits and returns the minimum.
func (r *wasmReader) limits() uint32 {
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
func (r *wasmReader) constExpr() {
	for r.err == nil {
		switch op := r.byte("constant expression"); op {
		case 0x0b: // end
			return
		case 0x41: // i32.const
			r.leb("i32 constant", 5)
		case 0x42: // i64.const
			r.leb("i64 constant", 10)
		case 0x43: // f32.const
			r.bytes("f32 constant", 4)
		case 0x44: // f64.const
			r.bytes("f64 constant", 8)
		case 0x23, 0xd2: // global.get, ref.func
			r.u32("index")
		case 0xd0: // ref.null
			r.leb("heap type", 5)
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
func (r *wasmReader) bytes(what string, n int) {
	if r.err == nil && r.left() < n {
		r.fail("%s: unexpected end", what)
		return
	}
	r.off += n
}

// element skips an element segment, in any of its eight encodings.
func (r *wasmReader) element() {
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
func (r *wasmReader) body() {
	size := r.u32("function body size")
	if r.err == nil && uint64(size) > uint64(r.left()) {
		r.fail("function body of %d bytes runs past the %d bytes left", size, r.left())
		return
	}
	s := wasmReader{b: r.b[:r.off+int(size)], off: r.off}
	r.off += int(size)
	var locals uint64
	for range s.count("local declarations", 2) {
		locals += uint64(s.u32("local count"))
		if s.err == nil && locals > maxLocals {
			s.fail("the function declares over %d locals", maxLocals)
		}
		s.valType()
	}
	if s.err != nil {
		r.err = s.err
	}
}
