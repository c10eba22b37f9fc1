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
}

// Load compiles wasm and checks that it can serve as an operator of kind:
// the exports and memory the ABI requires, with their signatures; imports
// only from "sluice", with the signatures the host provides, and
// "wasi_snapshot_preview1"; a reactor, not a WASI command; and, by
// instantiating it once, the ABI version it declares. A module that fails
// any check is refused with a *LoadError listing every problem, before it
// sees any record. name identifies the plugin in errors and logs.
//
// eng must have HostModule() among its host modules.
func Load(ctx context.Context, eng runtime.Engine, name string, wasm []byte, kind Kind, opts ...Option) (*Plugin, error) {
	if !kind.valid() {
		_, err := ParseKind(string(kind))
		return nil, fmt.Errorf("plugin %q: %w", name, err)
	}
	o := buildOptions(opts)
	mod, lerr := compile(ctx, eng, name, wasm)
	if lerr != nil {
		return nil, lerr
	}
	p := &Plugin{
		name:   name,
		kind:   kind,
		mod:    mod,
		limits: o.limits,
		tables: o.tables,
		logger: o.logger.With(slog.String("plugin", name), slog.String("kind", string(kind))),
	}
	s := inspectKind(mod, kind, fmt.Sprintf("%s operators", kind))
	if s.instantiable {
		v, err := abiVersion(ctx, mod, p.newCall())
		s.version(v, err)
	}
	if len(s.problems) > 0 {
		_ = mod.Close(context.WithoutCancel(ctx))
		return nil, &LoadError{Plugin: name, Problems: s.problems, causes: s.causes}
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
	return &call{plugin: p.name, kind: p.kind, limits: p.limits, logger: p.logger, tables: p.tables}
}

// compile compiles wasm, reporting failure as a *LoadError.
func compile(ctx context.Context, eng runtime.Engine, name string, wasm []byte) (runtime.Module, *LoadError) {
	mod, err := eng.Compile(ctx, name, wasm)
	if err == nil {
		return mod, nil
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

// abiVersion instantiates mod once and returns what sluice_abi_version says.
func abiVersion(ctx context.Context, mod runtime.Module, c *call) (int32, error) {
	c.begin(abi.ExportInitialize, nil, nil, 0, 0)
	cctx := context.WithValue(ctx, callKey{}, c)
	inst, err := mod.Instantiate(cctx)
	c.end(ctx)
	if err != nil {
		hint := ""
		if errors.Is(err, runtime.ErrLink) {
			hint = " (is plugin.HostModule() registered with the engine?)"
		}
		return 0, fmt.Errorf("instantiating the module failed: %s%s: %w", innerError(err), hint, err)
	}
	defer func() { _ = inst.Close(context.WithoutCancel(ctx)) }()
	f, ok := inst.Func(abi.ExportABIVersion)
	if !ok {
		return 0, fmt.Errorf("missing export %s after instantiation", abi.ExportABIVersion)
	}
	var stack [1]uint64
	c.begin(abi.ExportABIVersion, nil, nil, 0, 0)
	err = f.Call(cctx, stack[:])
	c.end(ctx)
	if err != nil {
		return 0, fmt.Errorf("calling %s failed: %s: %w", abi.ExportABIVersion, innerError(err), err)
	}
	return i32(stack[0]), nil
}

// hostFuncNames lists the host functions of m, for messages.
func hostFuncNames(m runtime.HostModule) string {
	names := make([]string, len(m.Funcs))
	for i, f := range m.Funcs {
		names[i] = f.Name
	}
	return strings.Join(names, ", ")
}
