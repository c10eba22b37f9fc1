//go:build wasmtime

package runtime

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"maps"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/bytecodealliance/wasmtime-go/v39"

	"github.com/sluicehq/sluice/runtime/internal/interrupt"
)

// epochTick is how often the engine's epoch advances while a call timeout
// is configured; deadlines are counted in ticks.
const epochTick = time.Millisecond

// WASI errno values the overridden functions return.
const (
	errnoSuccess = 0
	errnoBadf    = 8
	errnoFault   = 21
	errnoInval   = 28
	errnoNotsup  = 58
)

// wasmtimeBuilt reports whether this build holds the wasmtime engine.
const wasmtimeBuilt = true

func newWasmtime(ctx context.Context, cfg Config) (Engine, error) { return NewWasmtime(ctx, cfg) }

// NewWasmtime returns an Engine on wasmtime-go (the "wasmtime" build tag):
// one wasmtime.Engine and one Linker holding WASI and the host modules of
// cfg. Each instance lives in its own Store, capped at cfg's memory limit by
// the store's limiter. With a call timeout, the engine uses epoch
// interruption and runs a goroutine that advances the epoch every
// millisecond until Close. A compilation cache of serialized modules, keyed
// by the SHA-256 of the Wasm, is kept under cfg.CacheDir() when it is set;
// wasmtime trusts what it deserializes, so that directory must be writable
// by the host alone.
//
// WASI comes from wasmtime with a WasiConfig holding the granted
// environment and directories only (no arguments), except functions the
// engine replaces to behave as on wazero: fd_write (stdout discarded,
// stderr captured for Error.Stderr; not replaced when directories are
// granted, so that the guest can write their files: stdout and stderr are
// then discarded and Error.Stderr stays empty), random_get, clock_time_get and
// clock_res_get (answering from the instance's CallEnv, or from the host
// where granted), and, without the wall clock grant, poll_oneoff (a sleep
// advances the monotonic clock rather than waiting).
func NewWasmtime(ctx context.Context, cfg Config) (Engine, error) {
	if err := validateConfig(cfg); err != nil {
		return nil, err
	}
	if dir := cfg.CacheDir(); dir != "" {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, fmt.Errorf("runtime: %w in %s: %w", ErrCache, dir, err)
		}
	}
	wc := wasmtime.NewConfig()
	wc.SetEpochInterruption(cfg.CallTimeout() > 0)
	engine := wasmtime.NewEngineWithConfig(wc)
	e := &wasmtimeEngine{
		cfg:     cfg,
		engine:  engine,
		linker:  wasmtime.NewLinker(engine),
		modules: make(map[*wasmtimeModule]struct{}),
	}
	if err := e.define(); err != nil {
		e.linker.Close()
		e.engine.Close()
		return nil, err
	}

	if cfg.CallTimeout() > 0 {
		e.stop, e.stopped = make(chan struct{}), make(chan struct{})
		go e.tick()
	}
	return e, nil
}

// wasmtimeEngine implements Engine.
type wasmtimeEngine struct {
	cfg            Config
	engine         *wasmtime.Engine
	linker         *wasmtime.Linker
	hostStackLen   int           // the largest stack a host function needs
	hostResultsLen int           // the most results a host function returns
	stop           chan struct{} // closed by Close to stop tick; nil without a timeout
	stopped        chan struct{} // closed by tick when it returns

	// life guards closed and, through it, the lifetime of engine and
	// linker: Compile holds it for reading while it uses them, Close for
	// writing to mark the engine closed.
	life   sync.RWMutex
	closed bool

	mu      sync.Mutex // guards modules
	modules map[*wasmtimeModule]struct{}
}

// tick advances the epoch, which the per-call deadlines are counted in.
func (e *wasmtimeEngine) tick() {
	defer close(e.stopped)
	t := time.NewTicker(epochTick)
	defer t.Stop()
	for {
		select {
		case <-e.stop:
			return
		case <-t.C:
			e.engine.IncrementEpoch()
		}
	}
}

// define fills the linker: WASI, the deterministic overrides, the host
// modules.
func (e *wasmtimeEngine) define() error {
	if err := e.linker.DefineWasi(); err != nil {
		return fmt.Errorf("runtime: defining WASI: %w", err)
	}
	e.linker.AllowShadowing(true)
	defer e.linker.AllowShadowing(false)
	i32 := []ValueType{I32}
	type override struct {
		name string
		sig  Signature
		fn   func(*wasmtimeInstance, Memory, []wasmtime.Val) int32
	}
	overrides := []override{
		{"random_get", Signature{Params: []ValueType{I32, I32}, Results: i32}, wasiRandomGet},
		{"clock_time_get", Signature{Params: []ValueType{I32, I64, I32}, Results: i32}, wasiClockTimeGet},
		{"clock_res_get", Signature{Params: []ValueType{I32, I32}, Results: i32}, wasiClockResGet},
	}
	if len(e.cfg.grants.Dirs) == 0 {
		// wasmtime-go cannot hand a guest's writes to a Go function for
		// stdio and to its own WASI for files: with directories granted,
		// fd_write is wasmtime's and stderr is not captured.
		overrides = append(overrides, override{"fd_write", Signature{Params: []ValueType{I32, I32, I32, I32}, Results: i32}, wasiFdWrite})
	}
	if !e.cfg.grants.WallClock {
		overrides = append(overrides, override{"poll_oneoff", Signature{Params: []ValueType{I32, I32, I32, I32}, Results: i32}, wasiPollOneoff})
	}
	for _, o := range overrides {
		fn := o.fn
		cb := func(caller *wasmtime.Caller, args []wasmtime.Val) ([]wasmtime.Val, *wasmtime.Trap) {
			inst, ok := caller.Data().(*wasmtimeInstance)
			if !ok {
				return nil, wasmtime.NewTrap("runtime: WASI called outside a Sluice instance")
			}
			out := inst.hostResults[:1]
			out[0] = wasmtime.ValI32(fn(inst, inst.callerMemory(caller), args))
			return out, nil
		}
		if err := e.linker.FuncNew(wasiModule, o.name, funcType(o.sig), cb); err != nil {
			return fmt.Errorf("runtime: replacing WASI %s: %w", o.name, err)
		}
	}
	e.linker.AllowShadowing(false)
	for _, hm := range e.cfg.HostModules() {
		for _, f := range hm.Funcs {
			e.hostStackLen = max(e.hostStackLen, stackSize(f.Signature))
			e.hostResultsLen = max(e.hostResultsLen, len(f.Results))
			if err := e.linker.FuncNew(hm.Name, f.Name, funcType(f.Signature), wasmtimeHostFunc(hm.Name+"."+f.Name, f)); err != nil {
				return fmt.Errorf("runtime: host function %s.%s: %w", hm.Name, f.Name, err)
			}
		}
	}
	return nil
}

// wasmtimeHostFunc adapts a HostFunc to wasmtime's value-based callback: the
// values go through the calling instance's scratch stack, ctx is the ctx of
// the call in progress, and a panic is recovered, remembered on the
// instance (so the call's error becomes KindHost with the panic value), and
// returned as a trap.
func wasmtimeHostFunc(name string, f HostFunc) func(*wasmtime.Caller, []wasmtime.Val) ([]wasmtime.Val, *wasmtime.Trap) {
	n := stackSize(f.Signature)
	results := f.Results
	return func(caller *wasmtime.Caller, args []wasmtime.Val) (out []wasmtime.Val, trap *wasmtime.Trap) {
		inst, ok := caller.Data().(*wasmtimeInstance)
		if !ok {
			return nil, wasmtime.NewTrap("runtime: host function " + name + " called outside a Sluice instance")
		}
		defer func() {
			if r := recover(); r != nil {
				hp := &hostPanic{fn: name, value: r}
				inst.hostErr = hp
				out, trap = nil, wasmtime.NewTrap(hp.Error())
			}
		}()
		stack := inst.hostStack[:n]
		for i, a := range args {
			stack[i] = fromVal(a)
		}
		ctx := inst.callCtx
		if ctx == nil {
			ctx = context.Background() // called from a start function
		}
		f.Fn(ctx, inst.callerMemory(caller), stack)
		out = inst.hostResults[:len(results)]
		for i, t := range results {
			out[i] = toVal(t, stack[i])
		}
		return out, nil
	}
}

// Compile implements Engine.
func (e *wasmtimeEngine) Compile(ctx context.Context, name string, wasm []byte) (Module, error) {
	e.life.RLock()
	defer e.life.RUnlock()
	if e.closed {
		return nil, fmt.Errorf("runtime: compiling %q: engine: %w", name, ErrClosed)
	}
	wm, err := e.loadOrCompile(ctx, wasm)
	if errors.Is(err, ErrCache) {
		return nil, fmt.Errorf("runtime: compiling %q: %w", name, err)
	}
	if err != nil {
		return nil, &Error{Kind: KindCompile, Module: name, Err: err}
	}
	// The store limiter fails a table.grow past the table limit, and the
	// instantiation of a table declared larger; the latter is refused
	// here already, as on wazero, where the instrumenter can read the
	// module (Options{} changes nothing).
	if res, err := interrupt.InstrumentWith(wasm, interrupt.Options{}); err == nil {
		if err := checkTables(name, res.Tables, e.cfg.TableLimit()); err != nil {
			wm.Close()
			return nil, err
		}
	}
	m := &wasmtimeModule{engine: e, name: name, module: wm, memories: make(map[string]bool),
		instances: make(map[*wasmtimeInstance]struct{})}
	var other []string
	for _, it := range wm.Imports() {
		field := ""
		if it.Name() != nil {
			field = *it.Name()
		}
		ft := it.Type().FuncType()
		if ft == nil {
			other = append(other, fmt.Sprintf("module imports %s %s.%s, which the host does not provide", externKind(it.Type()), it.Module(), field))
			continue
		}
		m.imports = append(m.imports, FuncInfo{Module: it.Module(), Name: field, Signature: signatureOfType(ft)})
	}
	for _, ex := range wm.Exports() {
		if ft := ex.Type().FuncType(); ft != nil {
			m.exports = append(m.exports, FuncInfo{Name: ex.Name(), Signature: signatureOfType(ft)})
		} else if ex.Type().MemoryType() != nil {
			m.memories[ex.Name()] = true
		}
	}
	slices.SortFunc(m.exports, func(a, b FuncInfo) int { return cmp.Compare(a.Name, b.Name) })

	// What the linker provides is asked of a scratch store.
	scratch := wasmtime.NewStore(e.engine)
	m.linkErr = linkProblems(name, m.imports, func(module, field string) (Signature, bool) {
		ext := e.linker.Get(scratch, module, field)
		if ext == nil || ext.Func() == nil {
			return Signature{}, false
		}
		return signatureOfType(ext.Func().Type(scratch)), true
	})
	scratch.Close()
	if m.linkErr == nil && len(other) > 0 {
		m.linkErr = &Error{Kind: KindLink, Module: name, Err: errors.New(other[0])}
	}

	e.mu.Lock()
	e.modules[m] = struct{}{}
	e.mu.Unlock()
	return m, nil
}

func externKind(t *wasmtime.ExternType) string {
	switch {
	case t.MemoryType() != nil:
		return "memory"
	case t.TableType() != nil:
		return "table"
	case t.GlobalType() != nil:
		return "global"
	}
	return "item"
}

// loadOrCompile compiles wasm, through the cache when there is one. A
// cache entry that wasmtime refuses (another wasmtime version or
// configuration wrote it, or it is damaged) is replaced; failing to read
// or write one is an error wrapping ErrCache.
func (e *wasmtimeEngine) loadOrCompile(ctx context.Context, wasm []byte) (*wasmtime.Module, error) {
	dir := e.cfg.CacheDir()
	if dir == "" {
		return wasmtime.NewModule(e.engine, wasm)
	}
	variant := "plain"
	if e.cfg.CallTimeout() > 0 {
		variant = "epoch" // epoch checks are compiled into the code
	}
	path := filepath.Join(dir, fmt.Sprintf("wasmtime-v39-%s-%x.cwasm", variant, sha256.Sum256(wasm)))
	b, err := os.ReadFile(path)
	switch {
	case err == nil:
		m, err := wasmtime.NewModuleDeserialize(e.engine, b)
		if err == nil {
			return m, nil
		}
		slog.WarnContext(ctx, "runtime: replacing an unusable wasmtime cache entry", "path", path, "err", err)
	case !errors.Is(err, fs.ErrNotExist):
		return nil, fmt.Errorf("%w in %s: %w", ErrCache, dir, err)
	}
	m, err := wasmtime.NewModule(e.engine, wasm)
	if err != nil {
		return nil, err
	}
	if err := writeCacheEntry(path, m); err != nil {
		m.Close()
		return nil, fmt.Errorf("%w in %s: %w", ErrCache, dir, err)
	}
	return m, nil
}

// writeCacheEntry writes m serialized to path, atomically: a concurrent
// reader sees the old entry, none, or the whole new one.
func writeCacheEntry(path string, m *wasmtime.Module) error {
	b, err := m.Serialize()
	if err != nil {
		return err
	}
	f, err := os.CreateTemp(filepath.Dir(path), ".tmp-*")
	if err != nil {
		return err
	}
	_, werr := f.Write(b)
	cerr := f.Close()
	if err := errors.Join(werr, cerr); err != nil {
		_ = os.Remove(f.Name())
		return err
	}
	if err := os.Rename(f.Name(), path); err != nil {
		_ = os.Remove(f.Name())
		return err
	}
	return nil
}

// Close implements Engine: once compilations in progress end, it closes
// every module (waiting for calls in progress, which the epoch ticker still
// interrupts), then stops the ticker and frees the linker and the engine.
func (e *wasmtimeEngine) Close(ctx context.Context) error {
	e.life.Lock()
	closed := e.closed
	e.closed = true
	e.life.Unlock()
	if closed {
		return nil
	}
	e.mu.Lock()
	mods := slices.Collect(maps.Keys(e.modules))
	e.mu.Unlock()
	var errs []error
	for _, m := range mods {
		errs = append(errs, m.Close(ctx))
	}
	if e.stop != nil {
		close(e.stop)
		<-e.stopped
	}
	e.linker.Close()
	e.engine.Close()
	return errors.Join(errs...)
}

// wasmtimeModule implements Module.
type wasmtimeModule struct {
	engine   *wasmtimeEngine
	name     string
	module   *wasmtime.Module
	imports  []FuncInfo
	exports  []FuncInfo
	memories map[string]bool // exported memories
	linkErr  *Error

	// life guards closed and, through it, the lifetime of module:
	// Instantiate holds it for reading, Close for writing to mark the
	// module closed.
	life   sync.RWMutex
	closed bool

	mu        sync.Mutex // guards instances
	instances map[*wasmtimeInstance]struct{}
}

func (m *wasmtimeModule) Name() string                    { return m.name }
func (m *wasmtimeModule) Imports() []FuncInfo             { return slices.Clone(m.imports) }
func (m *wasmtimeModule) Exports() []FuncInfo             { return slices.Clone(m.exports) }
func (m *wasmtimeModule) ExportedMemory(name string) bool { return m.memories[name] }

// Instantiate implements Module: a new Store with its limiter, WASI
// context and instance state, then _initialize when exported.
func (m *wasmtimeModule) Instantiate(ctx context.Context) (Instance, error) {
	if m.linkErr != nil {
		err := *m.linkErr
		return nil, &err
	}
	m.life.RLock()
	defer m.life.RUnlock()
	if m.closed {
		return nil, fmt.Errorf("runtime: instantiating %q: module: %w", m.name, ErrClosed)
	}
	e := m.engine
	inst := &wasmtimeInstance{
		module:    m,
		stderr:    newStderrBuffer(e.cfg.StderrLimit()),
		env:       newGuestEnv(&e.cfg.grants),
		hostStack: make([]uint64, e.hostStackLen),
		// wasmtime-go copies a callback's results before the guest runs
		// again, and host functions do not call the guest: one slice
		// serves every host call of the instance.
		hostResults: make([]wasmtime.Val, max(e.hostResultsLen, 1)),
		timeout:     e.cfg.CallTimeout(),
	}
	wc, err := e.wasiConfig()
	if err != nil {
		return nil, &Error{Kind: KindLink, Module: m.name, Err: err}
	}
	store := wasmtime.NewStoreWithData(e.engine, inst)
	inst.store = store
	store.Limiter(int64(e.cfg.MemoryLimitPages())*65536, int64(e.cfg.TableLimit()), -1, -1, -1)
	store.SetWasi(wc)
	if inst.timeout > 0 {
		store.SetEpochDeadline(inst.deadlineTicks(ctx))
	}
	wi, err := e.linker.Instantiate(store, m.module)
	if err != nil {
		stderr := inst.stderr.String()
		store.Close()
		return nil, &Error{Kind: KindLink, Module: m.name, Err: err, Stderr: stderr}
	}
	inst.instance = wi
	if ext := wi.GetExport(store, "memory"); ext != nil {
		inst.mem = ext.Memory()
	}
	inst.memKnown = true
	if init := wi.GetFunc(store, initExport); init != nil {
		f := inst.newFunc(init, initExport)
		if err := f.call(ctx, make([]uint64, f.need)); err != nil {
			store.Close()
			return nil, initFailed(m.name, initExport, err, inst.stderr.String())
		}
	}
	m.mu.Lock()
	m.instances[inst] = struct{}{}
	m.mu.Unlock()
	return inst, nil
}

// wasiConfig is the WASI configuration of a new instance: the granted
// environment, in the order of the names, and the granted directories.
func (e *wasmtimeEngine) wasiConfig() (*wasmtime.WasiConfig, error) {
	wc := wasmtime.NewWasiConfig()
	g := &e.cfg.grants
	if len(g.Env) > 0 {
		wc.SetEnv(g.envList())
	}
	for _, d := range g.Dirs {
		dirPerms, filePerms := wasmtime.DIR_READ, wasmtime.FILE_READ
		if d.Writable {
			dirPerms, filePerms = dirPerms|wasmtime.DIR_WRITE, filePerms|wasmtime.FILE_WRITE
		}
		if err := wc.PreopenDir(d.Host, d.Guest, dirPerms, filePerms); err != nil {
			wc.Close()
			return nil, fmt.Errorf("granting directory %s as %s: %w", d.Host, d.Guest, err)
		}
	}
	return wc, nil
}

// Close implements Module: once instantiations in progress end, it closes
// the live instances (waiting for their calls) and frees the compiled
// module.
func (m *wasmtimeModule) Close(ctx context.Context) error {
	m.life.Lock()
	closed := m.closed
	m.closed = true
	m.life.Unlock()
	if closed {
		return nil
	}
	m.mu.Lock()
	insts := slices.Collect(maps.Keys(m.instances))
	m.mu.Unlock()
	var errs []error
	for _, inst := range insts {
		errs = append(errs, inst.Close(ctx))
	}
	m.module.Close()
	e := m.engine
	e.mu.Lock()
	delete(e.modules, m)
	e.mu.Unlock()
	return errors.Join(errs...)
}

func (m *wasmtimeModule) forget(inst *wasmtimeInstance) {
	m.mu.Lock()
	delete(m.instances, inst)
	m.mu.Unlock()
}

// wasmtimeInstance implements Instance. Its Store's data points back to it,
// so host functions and the WASI overrides find the call's ctx, the stderr
// buffer, the random source and the clocks.
type wasmtimeInstance struct {
	module    *wasmtimeModule
	store     *wasmtime.Store
	instance  *wasmtime.Instance
	mem       *wasmtime.Memory // the exported "memory", or nil
	stderr    *stderrBuffer
	env       *guestEnv // what the WASI clocks and random_get answer
	hostStack []uint64  // scratch stack of host function calls
	// hostResults holds the results a host function returns to wasmtime.
	hostResults []wasmtime.Val
	// callerMem is the memory host functions see, made once: the
	// exported "memory" read through the calling Caller (nil until the
	// first host call after the instance has its memory).
	callerMem *wasmtimeMemory
	memKnown  bool // Instantiate has looked mem up
	timeout   time.Duration

	callCtx context.Context // the ctx of the call in progress, for host functions
	hostErr *hostPanic      // set by a host function that panicked during the call

	// mu serialises calls with Close, which may come from Module.Close on
	// another goroutine: a store must not be freed under a running call.
	mu     sync.Mutex
	closed bool
	failed error // the first error a call returned
}

// deadlineTicks is the epoch deadline of a call: the call timeout, or the
// caller's deadline when that is sooner, in ticks rounded so the guest runs
// at least that long.
func (i *wasmtimeInstance) deadlineTicks(ctx context.Context) uint64 {
	d := i.timeout
	if dl, ok := ctx.Deadline(); ok {
		d = min(d, time.Until(dl))
	}
	return uint64(max(d, 0)/epochTick) + 2
}

// Func implements Instance.
func (i *wasmtimeInstance) Func(name string) (Func, bool) {
	i.mu.Lock()
	defer i.mu.Unlock()
	if i.closed {
		return nil, false
	}
	f := i.instance.GetFunc(i.store, name)
	if f == nil {
		return nil, false
	}
	return i.newFunc(f, name), true
}

func (i *wasmtimeInstance) newFunc(f *wasmtime.Func, name string) *wasmtimeFunc {
	info := FuncInfo{Name: name, Signature: signatureOfType(f.Type(i.store))}
	return &wasmtimeFunc{inst: i, fn: f, info: info, need: stackSize(info.Signature), args: make([]any, len(info.Params))}
}

// Memory implements Instance.
func (i *wasmtimeInstance) Memory() Memory {
	if i.mem == nil {
		return noMemory{}
	}
	return wasmtimeMemory{mem: i.mem, store: i.store}
}

// SetCallEnv implements Instance.
func (i *wasmtimeInstance) SetCallEnv(env CallEnv) { i.env.set(env) }

// Close implements Instance. It waits for a call in progress.
func (i *wasmtimeInstance) Close(context.Context) error {
	i.mu.Lock()
	defer i.mu.Unlock()
	if i.closed {
		return nil
	}
	i.closed = true
	i.module.forget(i)
	i.store.Close()
	return nil
}

// wasmtimeFunc implements Func.
type wasmtimeFunc struct {
	inst *wasmtimeInstance
	fn   *wasmtime.Func
	info FuncInfo
	need int
	args []any // scratch arguments
}

func (f *wasmtimeFunc) Info() FuncInfo { return f.info }

// Call implements Func.
func (f *wasmtimeFunc) Call(ctx context.Context, stack []uint64) error {
	i := f.inst
	if len(stack) < f.need {
		return stackTooSmall(i.module.name, f.info, len(stack))
	}
	i.mu.Lock()
	defer i.mu.Unlock()
	if i.failed != nil {
		return brokenError(i.module.name, f.info.Name, i.failed)
	}
	if i.closed {
		return closedError(i.module.name, f.info.Name)
	}
	return f.call(ctx, stack)
}

// call runs the function; the caller holds i.mu or owns i alone.
func (f *wasmtimeFunc) call(ctx context.Context, stack []uint64) error {
	i := f.inst
	i.stderr.reset()
	i.hostErr = nil
	callerBound := false
	if i.timeout > 0 {
		if err := ctx.Err(); err != nil {
			return f.fail(&Error{Kind: KindTimeout, Err: fmt.Errorf("the caller's context is done: %w", err)})
		}
		dl, ok := ctx.Deadline()
		callerBound = ok && time.Until(dl) < i.timeout
		i.store.SetEpochDeadline(i.deadlineTicks(ctx))
	}
	for k, t := range f.info.Params {
		f.args[k] = toGo(t, stack[k])
	}
	i.callCtx = ctx
	res, err := f.fn.Call(i.store, f.args...)
	i.callCtx = nil
	if err != nil {
		return f.fail(f.classify(ctx, err, callerBound))
	}
	switch r := res.(type) {
	case nil:
	case []wasmtime.Val:
		for k, v := range r {
			stack[k] = fromVal(v)
		}
	default:
		stack[0] = fromGo(r)
	}
	return nil
}

// classify maps wasmtime's error of a call to an *Error.
func (f *wasmtimeFunc) classify(ctx context.Context, err error, callerBound bool) *Error {
	i := f.inst
	if i.hostErr != nil {
		return &Error{Kind: KindHost, Err: i.hostErr.cause()}
	}
	var we *wasmtime.Error
	if errors.As(err, &we) {
		if code, ok := we.ExitStatus(); ok {
			return &Error{Kind: KindExit, ExitCode: uint32(code), Err: fmt.Errorf("guest exited with code %d", code)}
		}
	}
	var trap *wasmtime.Trap
	if errors.As(err, &trap) {
		if code := trap.Code(); code != nil && *code == wasmtime.Interrupt {
			var cause error
			switch {
			case ctx.Err() != nil:
				cause = fmt.Errorf("the caller's context is done: %w", ctx.Err())
			case callerBound:
				cause = fmt.Errorf("the caller's context is done: %w", context.DeadlineExceeded)
			default:
				cause = fmt.Errorf("the call ran past its timeout of %v: %w", i.timeout, context.DeadlineExceeded)
			}
			return &Error{Kind: KindTimeout, Err: cause}
		}
	}
	return &Error{Kind: KindTrap, Err: err}
}

// fail completes e with the names and stderr, and marks the instance failed.
func (f *wasmtimeFunc) fail(e *Error) error {
	i := f.inst
	e.Module, e.Export, e.Stderr = i.module.name, f.info.Name, i.stderr.String()
	i.failed = e
	return e
}

// wasmtimeMemory adapts a wasmtime memory; store is the instance's Store,
// or the Caller during a host function call.
type wasmtimeMemory struct {
	mem   *wasmtime.Memory
	store wasmtime.Storelike
}

func (m wasmtimeMemory) Read(offset, length uint32) ([]byte, bool) {
	data := m.mem.UnsafeData(m.store)
	end := uint64(offset) + uint64(length)
	if end > uint64(len(data)) {
		return nil, false
	}
	return data[offset:end:end], true
}

func (m wasmtimeMemory) Write(offset uint32, b []byte) bool {
	data := m.mem.UnsafeData(m.store)
	end := uint64(offset) + uint64(len(b))
	if end > uint64(len(data)) {
		return false
	}
	copy(data[offset:end], b)
	return true
}

func (m wasmtimeMemory) Size() uint32 {
	return uint32(min(uint64(m.mem.DataSize(m.store)), math.MaxUint32))
}

// callerMemory is the exported "memory" of the instance, for a host
// function called through caller. Each instance has a Store of its own, so
// the calling instance is i and its memory the one Instantiate looked up:
// looking it up again through the Caller on every host call cost a cgo
// round trip and two finalizers, an eighth of a host call's time. Until
// Instantiate has the memory (host functions called by the start
// function), it is looked up through the Caller.
func (i *wasmtimeInstance) callerMemory(caller *wasmtime.Caller) Memory {
	if !i.memKnown {
		ext := caller.GetExport("memory")
		if ext == nil || ext.Memory() == nil {
			return noMemory{}
		}
		return wasmtimeMemory{mem: ext.Memory(), store: caller}
	}
	if i.mem == nil {
		return noMemory{}
	}
	if i.callerMem == nil {
		i.callerMem = &wasmtimeMemory{mem: i.mem}
	}
	i.callerMem.store = caller
	return i.callerMem
}

// WASI overrides. Each returns an errno.

// wasiFdWrite: fd_write(fd, iovs, iovs_len, nwritten_ptr). Stdout is
// discarded and stderr kept; other descriptors do not exist (the engine
// does not replace fd_write when directories are granted).
func wasiFdWrite(inst *wasmtimeInstance, mem Memory, args []wasmtime.Val) int32 {
	var w io.Writer
	switch args[0].I32() {
	case 1:
		w = io.Discard
	case 2:
		w = inst.stderr
	default:
		return errnoBadf
	}
	iovs, n, out := uint32(args[1].I32()), uint32(args[2].I32()), uint32(args[3].I32())
	if uint64(iovs)+uint64(n)*8 > math.MaxUint32 {
		return errnoFault
	}
	var total uint32
	for k := range n {
		iov, ok := mem.Read(iovs+k*8, 8)
		if !ok {
			return errnoFault
		}
		data, ok := mem.Read(binary.LittleEndian.Uint32(iov), binary.LittleEndian.Uint32(iov[4:]))
		if !ok {
			return errnoFault
		}
		_, _ = w.Write(data)
		total += uint32(len(data))
	}
	var b [4]byte
	binary.LittleEndian.PutUint32(b[:], total)
	if !mem.Write(out, b[:]) {
		return errnoFault
	}
	return errnoSuccess
}

// wasiRandomGet: random_get(buf, len), from the instance's environment.
func wasiRandomGet(inst *wasmtimeInstance, mem Memory, args []wasmtime.Val) int32 {
	buf, ok := mem.Read(uint32(args[0].I32()), uint32(args[1].I32()))
	if !ok {
		return errnoFault
	}
	_, _ = inst.env.Read(buf)
	return errnoSuccess
}

// wasiClockTimeGet: clock_time_get(id, precision, time_ptr).
func wasiClockTimeGet(inst *wasmtimeInstance, mem Memory, args []wasmtime.Val) int32 {
	var now int64
	switch args[0].I32() {
	case 0: // realtime
		now = inst.env.walltime()
	case 1: // monotonic
		now = inst.env.nanotime()
	default:
		return errnoInval
	}
	var b [8]byte
	binary.LittleEndian.PutUint64(b[:], uint64(now))
	if !mem.Write(uint32(args[2].I32()), b[:]) {
		return errnoFault
	}
	return errnoSuccess
}

// wasiClockResGet: clock_res_get(id, res_ptr).
func wasiClockResGet(_ *wasmtimeInstance, mem Memory, args []wasmtime.Val) int32 {
	if id := args[0].I32(); id != 0 && id != 1 {
		return errnoInval
	}
	var b [8]byte
	binary.LittleEndian.PutUint64(b[:], clockResolution)
	if !mem.Write(uint32(args[1].I32()), b[:]) {
		return errnoFault
	}
	return errnoSuccess
}

// WASI preview 1 layout of poll_oneoff's subscriptions and events.
const (
	subscriptionSize = 48 // userdata u64, tag u8 at 8, clock id u32 at 16, timeout u64 at 24, precision u64 at 32, flags u16 at 40
	eventSize        = 32 // userdata u64, errno u16 at 8, type u8 at 10, fd_readwrite at 16
	eventClock       = 0
	eventFdRead      = 1
	eventFdWrite     = 2
)

// wasiPollOneoff: poll_oneoff(in, out, nsubscriptions, nevents_ptr),
// without the wall clock grant. As wazero's: every subscription is
// reported as an event (descriptors are always ready), and the guest
// sleeps for the shortest relative clock timeout, which advances its
// monotonic clock at once; absolute timeouts are not supported.
func wasiPollOneoff(inst *wasmtimeInstance, mem Memory, args []wasmtime.Val) int32 {
	in, out, n := uint32(args[0].I32()), uint32(args[1].I32()), uint64(uint32(args[2].I32()))
	if n == 0 {
		return errnoInval
	}
	if n*subscriptionSize > math.MaxUint32 {
		return errnoFault
	}
	subs, ok := mem.Read(in, uint32(n*subscriptionSize))
	if !ok {
		return errnoFault
	}
	events, ok := mem.Read(out, uint32(n*eventSize))
	if !ok {
		return errnoFault
	}
	var count [4]byte
	binary.LittleEndian.PutUint32(count[:], uint32(n))
	if !mem.Write(uint32(args[3].I32()), count[:]) {
		return errnoFault
	}
	clear(events)
	le := binary.LittleEndian
	sleep := int64(-1)
	for k := range n {
		sub, ev := subs[k*subscriptionSize:], events[k*eventSize:]
		copy(ev, sub[:8])
		ev[10] = sub[8]
		switch sub[8] {
		case eventClock:
			switch le.Uint16(sub[40:]) {
			case 0: // relative
			case 1: // subscription_clock_abstime
				return errnoNotsup
			default:
				return errnoInval
			}
			t := int64(min(le.Uint64(sub[24:]), math.MaxInt64))
			if sleep < 0 || t < sleep {
				sleep = t
			}
		case eventFdRead, eventFdWrite:
		default:
			return errnoInval
		}
	}
	if sleep > 0 {
		inst.env.sleep(sleep)
	}
	return errnoSuccess
}

// Value conversions between the stack's uint64 slots and wasmtime.

func funcType(sig Signature) *wasmtime.FuncType {
	return wasmtime.NewFuncType(valTypes(sig.Params), valTypes(sig.Results))
}

func valTypes(ts []ValueType) []*wasmtime.ValType {
	out := make([]*wasmtime.ValType, len(ts))
	for i, t := range ts {
		switch t {
		case I32:
			out[i] = wasmtime.NewValType(wasmtime.KindI32)
		case I64:
			out[i] = wasmtime.NewValType(wasmtime.KindI64)
		case F32:
			out[i] = wasmtime.NewValType(wasmtime.KindF32)
		case F64:
			out[i] = wasmtime.NewValType(wasmtime.KindF64)
		}
	}
	return out
}

func signatureOfType(ft *wasmtime.FuncType) Signature {
	return Signature{Params: fromValTypes(ft.Params()), Results: fromValTypes(ft.Results())}
}

func fromValTypes(ts []*wasmtime.ValType) []ValueType {
	if len(ts) == 0 {
		return nil
	}
	out := make([]ValueType, len(ts))
	for i, t := range ts {
		switch t.Kind() {
		case wasmtime.KindI32:
			out[i] = I32
		case wasmtime.KindI64:
			out[i] = I64
		case wasmtime.KindF32:
			out[i] = F32
		case wasmtime.KindF64:
			out[i] = F64
		default:
			// v128 and reference types: distinct from the four.
			out[i] = ValueType(0x80 | byte(t.Kind()))
		}
	}
	return out
}

func toVal(t ValueType, v uint64) wasmtime.Val {
	switch t {
	case I64:
		return wasmtime.ValI64(int64(v))
	case F32:
		return wasmtime.ValF32(math.Float32frombits(uint32(v)))
	case F64:
		return wasmtime.ValF64(math.Float64frombits(v))
	}
	return wasmtime.ValI32(int32(uint32(v)))
}

func fromVal(v wasmtime.Val) uint64 {
	switch v.Kind() {
	case wasmtime.KindI32:
		return uint64(uint32(v.I32()))
	case wasmtime.KindI64:
		return uint64(v.I64())
	case wasmtime.KindF32:
		return uint64(math.Float32bits(v.F32()))
	case wasmtime.KindF64:
		return math.Float64bits(v.F64())
	}
	return 0
}

func toGo(t ValueType, v uint64) any {
	switch t {
	case I64:
		return int64(v)
	case F32:
		return math.Float32frombits(uint32(v))
	case F64:
		return math.Float64frombits(v)
	}
	return int32(uint32(v))
}

func fromGo(v any) uint64 {
	switch r := v.(type) {
	case int32:
		return uint64(uint32(r))
	case int64:
		return uint64(r)
	case float32:
		return uint64(math.Float32bits(r))
	case float64:
		return math.Float64bits(r)
	}
	return 0
}
