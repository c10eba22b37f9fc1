package runtime

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"reflect"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/imports/wasi_snapshot_preview1"
	"github.com/tetratelabs/wazero/sys"
)

// NewWazero returns an Engine on wazero: one wazero.Runtime holding WASI
// and the host modules of cfg, compiling to machine code where wazero
// supports it (amd64, arm64) and interpreting elsewhere. A compilation cache
// is kept under cfg.CacheDir() when it is set. Close the engine to release
// everything it made.
func NewWazero(ctx context.Context, cfg Config) (Engine, error) {
	if err := validateConfig(cfg); err != nil {
		return nil, err
	}
	// NewRuntimeConfig picks the compiler where the platform supports it and
	// the interpreter elsewhere.
	rc := wazero.NewRuntimeConfig().
		WithMemoryLimitPages(cfg.MemoryLimitPages()).
		WithCloseOnContextDone(cfg.CallTimeout() > 0)
	var cache wazero.CompilationCache
	if dir := cfg.CacheDir(); dir != "" {
		c, err := wazero.NewCompilationCacheWithDir(dir)
		if err != nil {
			return nil, fmt.Errorf("runtime: compilation cache in %s: %w", dir, err)
		}
		cache = c
		rc = rc.WithCompilationCache(cache)
	}
	e := &wazeroEngine{
		cfg:      cfg,
		rt:       wazero.NewRuntimeWithConfig(ctx, rc),
		cache:    cache,
		provided: make(map[string]map[string]Signature),
	}
	if err := e.instantiateHostModules(ctx); err != nil {
		_ = e.Close(ctx)
		return nil, err
	}
	return e, nil
}

// wazeroEngine implements Engine. It records the signature of every
// function the host provides, so that Compile can check a module's imports
// and report each one at fault by name.
type wazeroEngine struct {
	cfg      Config
	rt       wazero.Runtime
	cache    wazero.CompilationCache
	provided map[string]map[string]Signature // import module -> function -> type; read-only after NewWazero
	seq      atomic.Uint64                   // numbers instances, whose names wazero wants unique
	closed   atomic.Bool
}

func (e *wazeroEngine) instantiateHostModules(ctx context.Context) error {
	wasi, err := wasi_snapshot_preview1.NewBuilder(e.rt).Compile(ctx)
	if err != nil {
		return fmt.Errorf("runtime: compiling WASI: %w", err)
	}
	if _, err := e.rt.InstantiateModule(ctx, wasi, wazero.NewModuleConfig()); err != nil {
		return fmt.Errorf("runtime: instantiating WASI: %w", err)
	}
	e.record(wasiModule, wasi)
	for _, hm := range e.cfg.HostModules() {
		b := e.rt.NewHostModuleBuilder(hm.Name)
		for _, f := range hm.Funcs {
			b.NewFunctionBuilder().
				WithGoModuleFunction(wazeroHostFunc(hm.Name+"."+f.Name, f.Fn), toAPITypes(f.Params), toAPITypes(f.Results)).
				Export(f.Name)
		}
		compiled, err := b.Compile(ctx)
		if err != nil {
			return fmt.Errorf("runtime: host module %q: %w", hm.Name, err)
		}
		if _, err := e.rt.InstantiateModule(ctx, compiled, wazero.NewModuleConfig()); err != nil {
			return fmt.Errorf("runtime: host module %q: %w", hm.Name, err)
		}
		e.record(hm.Name, compiled)
	}
	return nil
}

func (e *wazeroEngine) record(module string, compiled wazero.CompiledModule) {
	funcs := make(map[string]Signature)
	for name, def := range compiled.ExportedFunctions() {
		funcs[name] = signatureOf(def)
	}
	e.provided[module] = funcs
}

func (e *wazeroEngine) lookup(module, name string) (Signature, bool) {
	sig, ok := e.provided[module][name]
	return sig, ok
}

// wazeroHostFunc adapts a HostFunc to wazero's stack-based API. The memory
// handed to fn is the calling module's own (api.Memory already has the
// bounds-checked Read, Write and Size of Memory, so no adapter value is
// built per call). A panic in fn is re-raised as a *hostPanic, which wazero
// recovers and returns wrapped from the guest call.
func wazeroHostFunc(name string, fn func(context.Context, Memory, []uint64)) api.GoModuleFunc {
	return func(ctx context.Context, mod api.Module, stack []uint64) {
		defer func() {
			if r := recover(); r != nil {
				panic(&hostPanic{fn: name, value: r})
			}
		}()
		fn(ctx, wazeroMemory(mod), stack)
	}
}

// wazeroMemory returns the memory of mod, or noMemory when it has none.
// wazero returns a nil *MemoryInstance in a non-nil api.Memory then, hence
// the reflect check (it costs a few nanoseconds and allocates nothing).
func wazeroMemory(mod api.Module) Memory {
	m := mod.Memory()
	if m == nil || reflect.ValueOf(m).IsNil() {
		return noMemory{}
	}
	return m
}

// Compile implements Engine.
func (e *wazeroEngine) Compile(ctx context.Context, name string, wasm []byte) (Module, error) {
	if e.closed.Load() {
		return nil, fmt.Errorf("runtime: compiling %q: engine: %w", name, ErrClosed)
	}
	cm, err := e.rt.CompileModule(ctx, wasm)
	if err != nil {
		return nil, &Error{Kind: KindCompile, Module: name, Err: err}
	}
	m := &wazeroModule{engine: e, name: name, compiled: cm, instances: make(map[*wazeroInstance]struct{})}
	for _, def := range cm.ImportedFunctions() {
		mod, fn, _ := def.Import()
		m.imports = append(m.imports, FuncInfo{Module: mod, Name: fn, Signature: signatureOf(def)})
	}
	exported := cm.ExportedFunctions()
	for _, name := range slices.Sorted(maps.Keys(exported)) {
		m.exports = append(m.exports, FuncInfo{Name: name, Signature: signatureOf(exported[name])})
	}
	m.linkErr = linkProblems(name, m.imports, e.lookup)
	if m.linkErr == nil {
		for _, mem := range cm.ImportedMemories() {
			mod, n, _ := mem.Import()
			m.linkErr = &Error{Kind: KindLink, Module: name,
				Err: fmt.Errorf("module imports memory %s.%s, which the host does not provide", mod, n)}
			break
		}
	}
	return m, nil
}

// Close implements Engine: it closes every instance and module, then the
// compilation cache.
func (e *wazeroEngine) Close(ctx context.Context) error {
	if e.closed.Swap(true) {
		return nil
	}
	err := e.rt.Close(ctx)
	if e.cache != nil {
		err = errors.Join(err, e.cache.Close(ctx))
	}
	if err != nil {
		return fmt.Errorf("runtime: closing the wazero engine: %w", err)
	}
	return nil
}

// wazeroModule implements Module. It tracks its live instances so that
// Close can close them before the compiled code goes away.
type wazeroModule struct {
	engine   *wazeroEngine
	name     string
	compiled wazero.CompiledModule
	imports  []FuncInfo
	exports  []FuncInfo
	linkErr  *Error // non-nil when an import is not provided

	mu        sync.Mutex
	closed    bool
	instances map[*wazeroInstance]struct{}
}

func (m *wazeroModule) Name() string        { return m.name }
func (m *wazeroModule) Imports() []FuncInfo { return slices.Clone(m.imports) }
func (m *wazeroModule) Exports() []FuncInfo { return slices.Clone(m.exports) }
func (m *wazeroModule) ExportedMemory(name string) bool {
	_, ok := m.compiled.ExportedMemories()[name]
	return ok
}

// Instantiate implements Module. The instance gets a unique wazero module
// name (name#N), no arguments, environment or files, wazero's deterministic
// clocks and random source, a discarded stdout and a bounded stderr. Its
// start section runs inside wazero's instantiation; _initialize, when
// exported, is then called like any export (under the call timeout).
func (m *wazeroModule) Instantiate(ctx context.Context) (Instance, error) {
	if m.linkErr != nil {
		err := *m.linkErr
		return nil, &err
	}
	m.mu.Lock()
	closed := m.closed
	m.mu.Unlock()
	if closed {
		return nil, fmt.Errorf("runtime: instantiating %q: module: %w", m.name, ErrClosed)
	}
	e := m.engine
	stderr := newStderrBuffer(e.cfg.StderrLimit())
	mc := wazero.NewModuleConfig().
		WithName(fmt.Sprintf("%s#%d", m.name, e.seq.Add(1))).
		WithStartFunctions().
		WithStdout(io.Discard).
		WithStderr(stderr)
	mod, err := e.rt.InstantiateModule(ctx, m.compiled, mc)
	if err != nil {
		if e.closed.Load() {
			return nil, fmt.Errorf("runtime: instantiating %q: engine: %w", m.name, ErrClosed)
		}
		return nil, &Error{Kind: KindLink, Module: m.name, Err: err, Stderr: stderr.String()}
	}
	inst := &wazeroInstance{module: m, mod: mod, stderr: stderr, timeout: e.cfg.CallTimeout()}
	if init := mod.ExportedFunction(initExport); init != nil {
		f := inst.newFunc(init, initExport)
		if err := f.Call(ctx, make([]uint64, f.need)); err != nil {
			_ = mod.Close(ctx)
			le := &Error{Kind: KindLink, Module: m.name, Export: initExport, Err: err, Stderr: stderr.String()}
			var ce *Error
			if errors.As(err, &ce) {
				le.Err, le.ExitCode = ce.Err, ce.ExitCode
			}
			return nil, le
		}
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		_ = mod.Close(ctx)
		return nil, fmt.Errorf("runtime: instantiating %q: module: %w", m.name, ErrClosed)
	}
	m.instances[inst] = struct{}{}
	return inst, nil
}

// Close implements Module: it closes the module's live instances, then
// releases its compiled code.
func (m *wazeroModule) Close(ctx context.Context) error {
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return nil
	}
	m.closed = true
	insts := slices.Collect(maps.Keys(m.instances))
	m.mu.Unlock()
	var errs []error
	for _, inst := range insts {
		errs = append(errs, inst.Close(ctx))
	}
	errs = append(errs, m.compiled.Close(ctx))
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("runtime: closing module %q: %w", m.name, err)
	}
	return nil
}

func (m *wazeroModule) forget(inst *wazeroInstance) {
	m.mu.Lock()
	delete(m.instances, inst)
	m.mu.Unlock()
}

// wazeroInstance implements Instance.
type wazeroInstance struct {
	module  *wazeroModule
	mod     api.Module
	stderr  *stderrBuffer
	timeout time.Duration
	closed  atomic.Bool // set by Close, which Module.Close may call from another goroutine
	failed  error       // the first error a call returned; the instance is not safe for concurrent use
}

// Func implements Instance.
func (i *wazeroInstance) Func(name string) (Func, bool) {
	fn := i.mod.ExportedFunction(name)
	if fn == nil {
		return nil, false
	}
	return i.newFunc(fn, name), true
}

func (i *wazeroInstance) newFunc(fn api.Function, name string) *wazeroFunc {
	info := FuncInfo{Name: name, Signature: signatureOf(fn.Definition())}
	return &wazeroFunc{inst: i, fn: fn, info: info, need: stackSize(info.Signature)}
}

// Memory implements Instance.
func (i *wazeroInstance) Memory() Memory { return wazeroMemory(i.mod) }

// Close implements Instance.
func (i *wazeroInstance) Close(ctx context.Context) error {
	if i.closed.Swap(true) {
		return nil
	}
	i.module.forget(i)
	if err := i.mod.Close(ctx); err != nil {
		return fmt.Errorf("runtime: closing an instance of %q: %w", i.module.name, err)
	}
	return nil
}

// wazeroFunc implements Func.
type wazeroFunc struct {
	inst *wazeroInstance
	fn   api.Function
	info FuncInfo
	need int // stack slots a call needs
}

func (f *wazeroFunc) Info() FuncInfo { return f.info }

// Call implements Func. Without a call timeout it allocates nothing; with
// one it allocates the deadline's context (and wazero a goroutine that
// watches it).
func (f *wazeroFunc) Call(ctx context.Context, stack []uint64) error {
	i := f.inst
	if len(stack) < f.need {
		return stackTooSmall(i.module.name, f.info, len(stack))
	}
	if i.failed != nil {
		return brokenError(i.module.name, f.info.Name, i.failed)
	}
	if i.closed.Load() {
		return closedError(i.module.name, f.info.Name)
	}
	i.stderr.reset()
	if i.timeout <= 0 {
		if err := f.fn.CallWithStack(ctx, stack); err != nil {
			return f.fail(ctx, err)
		}
		return nil
	}
	callCtx, cancel := context.WithTimeout(ctx, i.timeout)
	err := f.fn.CallWithStack(callCtx, stack)
	cancel()
	if err != nil {
		return f.fail(ctx, err)
	}
	return nil
}

// fail classifies a call's error, and marks the instance as failed.
func (f *wazeroFunc) fail(ctx context.Context, err error) error {
	i := f.inst
	if i.closed.Load() {
		// Closed under the call, by Module.Close or Engine.Close.
		i.failed = closedError(i.module.name, f.info.Name)
		return i.failed
	}
	e := &Error{Kind: KindTrap, Module: i.module.name, Export: f.info.Name, Err: err}
	var hp *hostPanic
	var exit *sys.ExitError
	switch {
	case errors.As(err, &hp):
		e.Kind, e.Err = KindHost, hp.cause()
	case errors.As(err, &exit):
		code := exit.ExitCode()
		if code == sys.ExitCodeDeadlineExceeded || code == sys.ExitCodeContextCanceled {
			e.Kind, e.Err = KindTimeout, timeoutCause(ctx, i.timeout)
		} else {
			e.Kind, e.ExitCode = KindExit, code
		}
	}
	e.Stderr = i.stderr.String()
	i.failed = e
	return e
}

// signatureOf converts a wazero function definition's type.
func signatureOf(def api.FunctionDefinition) Signature {
	return Signature{Params: fromAPITypes(def.ParamTypes()), Results: fromAPITypes(def.ResultTypes())}
}

func fromAPITypes(ts []api.ValueType) []ValueType {
	if len(ts) == 0 {
		return nil
	}
	out := make([]ValueType, len(ts))
	for i, t := range ts {
		switch t {
		case api.ValueTypeI32:
			out[i] = I32
		case api.ValueTypeI64:
			out[i] = I64
		case api.ValueTypeF32:
			out[i] = F32
		case api.ValueTypeF64:
			out[i] = F64
		default:
			// v128 and reference types, which the ABI does not use: kept
			// distinct from the four so that signatures never compare equal
			// by accident.
			out[i] = ValueType(t)
		}
	}
	return out
}

func toAPITypes(ts []ValueType) []api.ValueType {
	out := make([]api.ValueType, len(ts))
	for i, t := range ts {
		switch t {
		case I32:
			out[i] = api.ValueTypeI32
		case I64:
			out[i] = api.ValueTypeI64
		case F32:
			out[i] = api.ValueTypeF32
		case F64:
			out[i] = api.ValueTypeF64
		}
	}
	return out
}
