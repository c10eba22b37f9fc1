package runtime

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"reflect"
	goruntime "runtime"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	experimentalsys "github.com/tetratelabs/wazero/experimental/sys"
	"github.com/tetratelabs/wazero/experimental/sysfs"
	"github.com/tetratelabs/wazero/imports/wasi_snapshot_preview1"
	"github.com/tetratelabs/wazero/sys"

	"github.com/sluicehq/sluice/runtime/internal/grantfs"
	"github.com/sluicehq/sluice/runtime/internal/interrupt"
)

// NewWazero returns an Engine on wazero: a wazero.Runtime holding WASI and
// the host modules of cfg, compiling to machine code where wazero supports
// it (amd64, arm64) and interpreting elsewhere. A compilation cache is kept
// under cfg.CacheDir() when it is set. Close the engine to release
// everything it made.
//
// With a call timeout, modules are instrumented with an interrupt flag that
// a watchdog goroutine raises at the deadline (see the package
// documentation); a module the instrumenter refuses runs on a second
// runtime, made when first needed, that uses wazero's own, slower
// mechanism.
func NewWazero(ctx context.Context, cfg Config) (Engine, error) {
	return newWazero(ctx, cfg, wazeroCompiles())
}

// newWazero is NewWazero, with the choice of instrumenting modules under a
// call timeout (tests and benchmarks compare both mechanisms).
func newWazero(ctx context.Context, cfg Config, instrument bool) (*wazeroEngine, error) {
	if err := validateConfig(cfg); err != nil {
		return nil, err
	}
	e := &wazeroEngine{
		cfg:        cfg,
		provided:   make(map[string]map[string]Signature),
		instrument: cfg.CallTimeout() > 0 && instrument,
	}
	e.envNames, e.envValues = cfg.grants.envList()
	if err := e.mountDirs(cfg.grants.Dirs); err != nil {
		_ = e.Close(ctx)
		return nil, err
	}
	if dir := cfg.CacheDir(); dir != "" {
		c, err := wazero.NewCompilationCacheWithDir(dir)
		if err != nil {
			return nil, fmt.Errorf("runtime: %w in %s: %w", ErrCache, dir, err)
		}
		e.cache = c
		removeStale(dir)
	}
	// Without instrumentation, a call timeout is wazero's own mechanism.
	rt, err := e.newRuntime(ctx, cfg.CallTimeout() > 0 && !e.instrument)
	if err != nil {
		_ = e.Close(ctx)
		return nil, err
	}
	e.rt = rt
	if e.instrument {
		e.dog = newWatchdog(cfg.CallTimeout())
	}
	return e, nil
}

// mountDirs makes the file system of each granted directory: every path
// a guest names resolves beneath its directory (package grantfs), where
// wazero's own mount would follow links out of it.
func (e *wazeroEngine) mountDirs(dirs []Dir) error {
	if len(dirs) == 0 {
		return nil
	}
	cfg := wazero.NewFSConfig().(sysfs.FSConfig)
	var fsc wazero.FSConfig
	for _, d := range dirs {
		m, err := grantfs.Open(d.Host)
		if err != nil {
			return fmt.Errorf("runtime: granted directory %s (guest %s): %w", d.Host, d.Guest, err)
		}
		e.mounts = append(e.mounts, m)
		var mount experimentalsys.FS = m
		if !d.Writable {
			mount = &sysfs.ReadFS{FS: m}
		}
		fsc = cfg.WithSysFSMount(mount, d.Guest)
		cfg = fsc.(sysfs.FSConfig)
	}
	e.fs = fsc
	return nil
}

// wazeroCompiles reports whether wazero compiles to machine code here,
// rather than interpreting (wazero's own test, on the platforms that have
// its compiler; an amd64 without SSE4.1 is the rare exception, which still
// works). Instrumented guests read their interrupt flag from memory the
// watchdog writes: compiled code does so outside the Go memory model, the
// interpreter's Go code would be a data race.
func wazeroCompiles() bool {
	switch goruntime.GOOS {
	case "linux", "darwin", "freebsd", "netbsd", "windows":
		return goruntime.GOARCH == "amd64" || goruntime.GOARCH == "arm64"
	case "dragonfly", "solaris", "illumos":
		return goruntime.GOARCH == "amd64"
	}
	return false
}

// wazeroEngine implements Engine. It records the signature of every
// function the host provides, so that Compile can check a module's imports
// and report each one at fault by name.
type wazeroEngine struct {
	cfg      Config
	cache    wazero.CompilationCache
	provided map[string]map[string]Signature // import module -> function -> type; read-only after NewWazero
	// instrument is set when the call timeout is on and wazero compiles:
	// modules are instrumented, rt does not close modules when a call's
	// context is done, and dog enforces the timeout.
	instrument bool
	rt         wazero.Runtime
	dog        *watchdog
	seq        atomic.Uint64 // numbers instances, whose names wazero wants unique
	closed     atomic.Bool
	// fs and envNames/envValues are the granted directories (nil for
	// none) and environment, made once for every instance; mounts are the
	// directories' file systems, closed with the engine.
	fs                  wazero.FSConfig
	mounts              []*grantfs.FS
	envNames, envValues []string

	mu       sync.Mutex
	fallback wazero.Runtime // with instrument: a runtime for the modules the instrumenter refuses, made when first needed
}

// newRuntime makes a wazero runtime with WASI and the host modules. The
// first one made records the host's function signatures.
func (e *wazeroEngine) newRuntime(ctx context.Context, closeOnDone bool) (wazero.Runtime, error) {
	rc := e.runtimeConfig(closeOnDone)
	if e.cache != nil {
		rc = rc.WithCompilationCache(e.cache)
	}
	rt := wazero.NewRuntimeWithConfig(ctx, rc)
	if err := e.instantiateHostModules(ctx, rt, len(e.provided) == 0); err != nil {
		_ = rt.Close(ctx)
		return nil, err
	}
	return rt, nil
}

// grantConfig adds the granted environment and directories to mc.
func (e *wazeroEngine) grantConfig(mc wazero.ModuleConfig) wazero.ModuleConfig {
	for k, name := range e.envNames {
		mc = mc.WithEnv(name, e.envValues[k])
	}
	if e.fs != nil {
		mc = mc.WithFSConfig(e.fs)
	}
	return mc
}

// closingRuntime returns the runtime that closes a module when a call's
// context is done, for modules that run uninstrumented under a timeout.
func (e *wazeroEngine) closingRuntime(ctx context.Context) (wazero.Runtime, error) {
	if !e.instrument {
		return e.rt, nil
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.fallback == nil {
		rt, err := e.newRuntime(ctx, true)
		if err != nil {
			return nil, err
		}
		e.fallback = rt
	}
	return e.fallback, nil
}

func (e *wazeroEngine) instantiateHostModules(ctx context.Context, rt wazero.Runtime, record bool) error {
	wasi, err := wasi_snapshot_preview1.NewBuilder(rt).Compile(ctx)
	if err != nil {
		return fmt.Errorf("runtime: compiling WASI: %w", err)
	}
	if _, err := rt.InstantiateModule(ctx, wasi, wazero.NewModuleConfig()); err != nil {
		return fmt.Errorf("runtime: instantiating WASI: %w", err)
	}
	if record {
		e.record(wasiModule, wasi)
	}
	for _, hm := range e.cfg.HostModules() {
		b := rt.NewHostModuleBuilder(hm.Name)
		for _, f := range hm.Funcs {
			b.NewFunctionBuilder().
				WithGoModuleFunction(wazeroHostFunc(hm.Name+"."+f.Name, f.Fn), toAPITypes(f.Params), toAPITypes(f.Results)).
				Export(f.Name)
		}
		compiled, err := b.Compile(ctx)
		if err != nil {
			return fmt.Errorf("runtime: host module %q: %w", hm.Name, err)
		}
		if _, err := rt.InstantiateModule(ctx, compiled, wazero.NewModuleConfig()); err != nil {
			return fmt.Errorf("runtime: host module %q: %w", hm.Name, err)
		}
		if record {
			e.record(hm.Name, compiled)
		}
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

// Compile implements Engine. With a call timeout it instruments the module
// first (see NewWazero); the compilation cache then holds the instrumented
// code, keyed by the instrumented bytes.
func (e *wazeroEngine) Compile(ctx context.Context, name string, wasm []byte) (Module, error) {
	if e.closed.Load() {
		return nil, fmt.Errorf("runtime: compiling %q: engine: %w", name, ErrClosed)
	}
	m := &wazeroModule{engine: e, name: name, instances: make(map[*wazeroInstance]struct{})}
	if err := e.compile(ctx, m, wasm); err != nil {
		return nil, err
	}
	cm := m.compiled
	for _, def := range cm.ImportedFunctions() {
		mod, fn, _ := def.Import()
		m.imports = append(m.imports, FuncInfo{Module: mod, Name: fn, Signature: signatureOf(def)})
	}
	exported := cm.ExportedFunctions()
	for _, name := range slices.Sorted(maps.Keys(exported)) {
		if m.hidden(name) {
			continue
		}
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

// compile sets m.compiled, m.runtime and m.interrupt, which say how the
// module runs. Every path bounds the module's tables at the table limit
// (interrupt.Options.TableLimit): table.grow is rewritten wherever the
// module has one, and a table declared larger than the limit is refused.
// Under a call timeout, a module the instrumenter refuses runs without
// the interrupt checks on the closing runtime; so does one whose
// instrumented copy wazero rejects while accepting the original, which
// would be an instrumenter bug (logged).
func (e *wazeroEngine) compile(ctx context.Context, m *wazeroModule, wasm []byte) error {
	limit := e.cfg.TableLimit()
	var refused, rejected error // the instrumenter's error; wazero's on the instrumented copy
	if e.instrument {
		res, err := interrupt.InstrumentWith(wasm, interrupt.Options{Deadline: true, TableLimit: limit, ThreadJumps: true})
		if err == nil {
			if err := checkTables(m.name, res.Tables, limit); err != nil {
				return err
			}
			cm, err := e.compileModule(ctx, e.rt, m.name, res.Wasm)
			if err == nil {
				m.compiled, m.runtime, m.interrupt, m.start = cm, e.rt, true, res.Start
				return nil
			}
			if errors.Is(err, ErrCache) {
				return err
			}
			rejected = err
		}
		refused = err
	}
	rt := e.rt
	if e.cfg.CallTimeout() > 0 {
		var err error
		if rt, err = e.closingRuntime(ctx); err != nil {
			return fmt.Errorf("runtime: compiling %q: %w", m.name, err)
		}
	}
	// The table limit alone, and the jumps threaded: the module is
	// unchanged unless it grows a table or has jumps to thread. Should
	// wazero reject a copy with threaded jumps of a module it accepts (an
	// instrumenter bug), the jumps stay as they are.
	var boundErr error
	for _, threads := range []bool{true, false} {
		var res interrupt.Result
		res, boundErr = interrupt.InstrumentWith(wasm, interrupt.Options{TableLimit: limit, ThreadJumps: threads})
		if boundErr != nil {
			break
		}
		if err := checkTables(m.name, res.Tables, limit); err != nil {
			return err
		}
		cm, err := e.compileModule(ctx, rt, m.name, res.Wasm)
		switch {
		case errors.Is(err, ErrCache):
			return err
		case err == nil:
			e.logFallback(m.name, refused, rejected)
			m.compiled, m.runtime = cm, rt
			return nil
		case res.TableGrows == 0 && res.ThreadedJumps == 0: // the module as it is: wazero's verdict
			return &Error{Kind: KindCompile, Module: m.name, Err: err}
		}
		boundErr = err // wazero rejects the rewritten copy: an instrumenter bug
		if res.ThreadedJumps == 0 {
			break // without threads the copy would be the same
		}
	}
	// The module cannot be bounded: say why wazero refuses it, if it
	// does, or else that its tables cannot be bounded.
	cm, err := e.compileModule(ctx, rt, m.name, wasm)
	switch {
	case errors.Is(err, ErrCache):
		return err
	case err != nil:
		return &Error{Kind: KindCompile, Module: m.name, Err: err}
	}
	_ = cm.Close(ctx)
	return &Error{Kind: KindCompile, Module: m.name,
		Err: fmt.Errorf("the table limit of %d entries cannot be enforced on the module: %w", limit, boundErr)}
}

// logFallback says why a module runs without the interrupt checks under a
// call timeout, if it does.
func (e *wazeroEngine) logFallback(module string, refused, rejected error) {
	switch {
	case rejected != nil:
		slog.Warn("runtime: wazero rejects the instrumented copy of a valid module, which runs with wazero's slower deadline instead",
			"module", module, "err", rejected)
	case refused != nil:
		slog.Info("runtime: the module runs with wazero's slower deadline, as the instrumenter refuses it",
			"module", module, "err", refused)
	}
}

// Close implements Engine: it stops the calls in progress, closes every
// instance and module, then the compilation cache.
func (e *wazeroEngine) Close(ctx context.Context) error {
	if e.closed.Swap(true) {
		return nil
	}
	if e.dog != nil {
		e.dog.stop()
	}
	var err error
	if e.rt != nil {
		err = e.rt.Close(ctx)
	}
	e.mu.Lock()
	if e.fallback != nil {
		err = errors.Join(err, e.fallback.Close(ctx))
	}
	e.mu.Unlock()
	if e.cache != nil {
		err = errors.Join(err, e.cache.Close(ctx))
	}
	for _, m := range e.mounts {
		err = errors.Join(err, m.Close())
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
	runtime  wazero.Runtime // the engine's runtime that compiled it
	// interrupt is set when the module is instrumented: each instance has
	// an interrupt flag, which the engine's watchdog raises. start is set
	// when its start function is to be called as interrupt.StartExport.
	interrupt, start bool
	imports          []FuncInfo
	exports          []FuncInfo
	linkErr          *Error // non-nil when an import is not provided

	mu        sync.Mutex
	closed    bool
	instances map[*wazeroInstance]struct{}
}

// hidden reports whether name is an export the instrumenter added, which
// the module does not show.
func (m *wazeroModule) hidden(name string) bool {
	return m.interrupt && name == interrupt.StartExport
}

func (m *wazeroModule) Name() string        { return m.name }
func (m *wazeroModule) Imports() []FuncInfo { return slices.Clone(m.imports) }
func (m *wazeroModule) Exports() []FuncInfo { return slices.Clone(m.exports) }
func (m *wazeroModule) ExportedMemory(name string) bool {
	_, ok := m.compiled.ExportedMemories()[name]
	return ok
}

// Instantiate implements Module. The instance gets a unique wazero module
// name (name#N), no arguments, the granted environment and directories
// only, clocks and a random source that answer from its CallEnv (or from
// the host, where granted), a discarded stdout and a bounded stderr. Its
// start section runs inside wazero's instantiation, or for an instrumented
// module right after it, under the call timeout; _initialize, when
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
	genv := newGuestEnv(&e.cfg.grants)
	mc := e.grantConfig(wazero.NewModuleConfig()).
		WithName(fmt.Sprintf("%s#%d", m.name, e.seq.Add(1))).
		WithStartFunctions().
		WithStdout(io.Discard).
		WithStderr(stderr).
		WithWalltime(genv.walltimeParts, clockResolution).
		WithNanotime(genv.nanotime, clockResolution).
		WithNanosleep(genv.sleep).
		WithRandSource(genv)
	mod, err := m.runtime.InstantiateModule(withGuestMemory(ctx), m.compiled, mc)
	if err != nil {
		if e.closed.Load() {
			return nil, fmt.Errorf("runtime: instantiating %q: engine: %w", m.name, ErrClosed)
		}
		return nil, &Error{Kind: KindLink, Module: m.name, Err: err, Stderr: stderr.String()}
	}
	inst := &wazeroInstance{module: m, mod: mod, stderr: stderr, env: genv, timeout: e.cfg.CallTimeout()}
	if m.interrupt {
		flag, ok := mod.ExportedGlobal(interrupt.FlagExport).(api.MutableGlobal)
		if !ok { // cannot happen: the instrumenter exports it
			_ = mod.Close(ctx)
			return nil, fmt.Errorf("runtime: instantiating %q: the instrumented module has no interrupt flag", m.name)
		}
		inst.watch = &watch{flag: flag}
		if !e.dog.add(inst.watch) {
			_ = mod.Close(ctx)
			return nil, fmt.Errorf("runtime: instantiating %q: engine: %w", m.name, ErrClosed)
		}
	}
	for _, export := range []string{interrupt.StartExport, initExport} {
		if export == interrupt.StartExport && !m.start {
			continue
		}
		init := mod.ExportedFunction(export)
		if init == nil {
			continue
		}
		f := inst.newFunc(init, export)
		if err := f.Call(ctx, make([]uint64, f.need)); err != nil {
			inst.release(ctx)
			name := export
			if export == interrupt.StartExport {
				name = "" // the start function has no export name of its own
			}
			return nil, initFailed(m.name, name, err, stderr.String())
		}
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		inst.release(ctx)
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
	env     *guestEnv // what the WASI clocks and random_get answer
	timeout time.Duration
	watch   *watch      // the interrupt flag's state, for an instrumented module
	closed  atomic.Bool // set by Close, which Module.Close may call from another goroutine
	failed  error       // the first error a call returned; the instance is not safe for concurrent use
}

// Func implements Instance.
func (i *wazeroInstance) Func(name string) (Func, bool) {
	if i.module.hidden(name) {
		return nil, false
	}
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

// SetCallEnv implements Instance.
func (i *wazeroInstance) SetCallEnv(env CallEnv) { i.env.set(env) }

// release closes an instance that failed to initialise.
func (i *wazeroInstance) release(ctx context.Context) {
	i.closed.Store(true)
	i.unwatch()
	_ = i.mod.Close(ctx)
}

// unwatch raises the interrupt flag of an instrumented instance for good (a
// call in progress stops at its next check), and has the watchdog forget
// it.
func (i *wazeroInstance) unwatch() {
	if i.watch != nil {
		i.watch.close()
		i.module.engine.dog.remove(i.watch)
	}
}

// Close implements Instance. A call in progress on an instrumented instance
// stops at its next check; on another, wazero stops it.
func (i *wazeroInstance) Close(ctx context.Context) error {
	if i.closed.Swap(true) {
		return nil
	}
	i.unwatch()
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

// Call implements Func. It allocates nothing, except on a module that the
// instrumenter refused, under a call timeout: there it allocates the
// deadline's context, and wazero a goroutine that watches it.
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
	switch {
	case i.timeout <= 0:
		if err := f.fn.CallWithStack(ctx, stack); err != nil {
			return f.fail(ctx, err, false)
		}
		return nil
	case i.watch != nil:
		return f.callWatched(ctx, stack)
	}
	callCtx, cancel := context.WithTimeout(ctx, i.timeout)
	err := f.fn.CallWithStack(callCtx, stack)
	cancel()
	if err != nil {
		return f.fail(ctx, err, false)
	}
	return nil
}

// callWatched calls an instrumented guest under the engine's watchdog. A
// context that is already done stops the call before it starts.
func (f *wazeroFunc) callWatched(ctx context.Context, stack []uint64) error {
	i := f.inst
	if done := ctx.Done(); done != nil {
		select {
		case <-done:
			i.failed = &Error{Kind: KindTimeout, Module: i.module.name, Export: f.info.Name, Err: timeoutCause(ctx, i.timeout)}
			return i.failed
		default:
		}
	}
	i.watch.arm(ctx, i.module.engine.dog.deadline())
	err := f.fn.CallWithStack(ctx, stack)
	raised := i.watch.disarm()
	if err != nil {
		return f.fail(ctx, err, raised)
	}
	return nil
}

// isUnreachable reports whether err is wazero's trap for the unreachable
// instruction, which an instrumented guest executes when its interrupt flag
// is up. wazero wraps its internal error type, whose message is
// "unreachable", in the error a call returns.
func isUnreachable(err error) bool {
	for e := errors.Unwrap(err); e != nil; e = errors.Unwrap(e) {
		if e.Error() == "unreachable" {
			return true
		}
	}
	return false
}

// fail classifies a call's error, and marks the instance as failed. raised
// reports whether the instance's interrupt flag went up during the call: an
// unreachable trap then is the deadline's (or the context's) doing.
func (f *wazeroFunc) fail(ctx context.Context, err error, raised bool) error {
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
	case raised && isUnreachable(err):
		e.Kind, e.Err = KindTimeout, timeoutCause(ctx, i.timeout)
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
