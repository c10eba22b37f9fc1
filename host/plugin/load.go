package plugin

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"

	"github.com/sluicehq/sluice/abi"
	"github.com/sluicehq/sluice/runtime"
	"github.com/sluicehq/sluice/runtime/wasmbin"
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
// sizes are checked first (wasmbin.CheckBounds), so that the engine never sees
// one that would make it exhaust the host's memory.
func compile(ctx context.Context, eng runtime.Engine, name string, wasm []byte) (runtime.Module, error) {
	if err := wasmbin.CheckBounds(wasm); err != nil {
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
// operators of kind require: sluice_process for the batch kinds;
// sluice_plan, sluice_apply and sluice_post for transactional operators;
// the sluice_agg_ exports for aggregates; sluice_window_fire for window
// functions; sluice_join for joins. An export that is not required is still checked when present.
func abiExports(kind Kind) []exportSpec {
	txn, agg := kind.Transactional(), kind == KindAggregate
	return []exportSpec{
		{abi.ExportABIVersion, sig(0, 1), true},
		{abi.ExportAlloc, sig(1, 1), true},
		{abi.ExportProcess, sig(2, 1), kind.batch()},
		{abi.ExportPlan, sig(2, 1), txn},
		{abi.ExportApply, sig(2, 1), txn},
		{abi.ExportPost, sig(4, 1), txn},
		{abi.ExportAggAdd, sig(2, 1), agg},
		{abi.ExportAggMerge, sig(2, 1), agg},
		{abi.ExportAggFire, sig(2, 1), agg},
		{abi.ExportWindowFire, sig(2, 1), kind == KindWindow},
		{abi.ExportJoin, sig(2, 1), kind == KindJoin},
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
