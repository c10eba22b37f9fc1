package runtime

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"
)

// The engine test suite. It is written once against the Engine interface;
// newEngine, engineName and stopsOnCancel come from engine_wazero_test.go or
// engine_wasmtime_test.go, chosen by the wasmtime build tag.

type ctxKey struct{}

// errPlain is what test.fail_plain panics with.
var errPlain = errors.New("plain failure")

// testHostModule is the "test" host module the hostcall guest imports.
func testHostModule() HostModule {
	return HostModule{Name: "test", Funcs: []HostFunc{
		{Name: "sum", Signature: Signature{Params: []ValueType{I32, I32}, Results: []ValueType{I64}},
			Fn: func(_ context.Context, mem Memory, stack []uint64) {
				ptr, n := uint32(stack[0]), uint32(stack[1])
				b, ok := mem.Read(ptr, n)
				if !ok {
					panic(&HostError{Func: "test.sum", Reason: fmt.Sprintf("range %d+%d is out of bounds of a memory of %d bytes", ptr, n, mem.Size())})
				}
				var s uint64
				for _, v := range b {
					s += uint64(v)
				}
				stack[0] = s
			}},
		{Name: "fill", Signature: Signature{Params: []ValueType{I32, I32, I32}},
			Fn: func(_ context.Context, mem Memory, stack []uint64) {
				ptr, n, v := uint32(stack[0]), uint32(stack[1]), byte(stack[2])
				data := make([]byte, n)
				for i := range data {
					data[i] = v
				}
				if !mem.Write(ptr, data) {
					panic(&HostError{Func: "test.fill", Reason: "out of bounds"})
				}
			}},
		{Name: "ctx_value", Signature: Signature{Results: []ValueType{I64}},
			Fn: func(ctx context.Context, _ Memory, stack []uint64) {
				v, ok := ctx.Value(ctxKey{}).(int64)
				if !ok {
					v = -1
				}
				stack[0] = uint64(v)
			}},
		{Name: "fail",
			Fn: func(context.Context, Memory, []uint64) {
				panic(&HostError{Func: "test.fail", Reason: "refused on purpose"})
			}},
		{Name: "fail_plain",
			Fn: func(context.Context, Memory, []uint64) { panic(errPlain) }},
		{Name: "nop",
			Fn: func(context.Context, Memory, []uint64) {}},
	}}
}

// testConfig is baseConfig plus the test host module.
func testConfig() Config { return baseConfig().WithHostModules(testHostModule()) }

func compile(t testing.TB, e Engine, name string, wasm []byte) Module {
	t.Helper()
	m, err := e.Compile(context.Background(), name, wasm)
	if err != nil {
		t.Fatalf("Compile(%s): %v", name, err)
	}
	return m
}

func instantiate(t testing.TB, m Module) Instance {
	t.Helper()
	inst, err := m.Instantiate(context.Background())
	if err != nil {
		t.Fatalf("Instantiate(%s): %v", m.Name(), err)
	}
	t.Cleanup(func() { _ = inst.Close(context.Background()) })
	return inst
}

func fn(t testing.TB, inst Instance, name string) Func {
	t.Helper()
	f, ok := inst.Func(name)
	if !ok {
		t.Fatalf("no export %q", name)
	}
	return f
}

// call calls export name with args and returns the first result.
func call(t testing.TB, inst Instance, name string, args ...uint64) uint64 {
	t.Helper()
	stack := make([]uint64, max(len(args), 2))
	copy(stack, args)
	if err := fn(t, inst, name).Call(context.Background(), stack); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return stack[0]
}

// callErr calls export name with args and returns its *Error, failing the
// test when the call succeeds or fails otherwise.
func callErr(t testing.TB, ctx context.Context, inst Instance, name string, args ...uint64) *Error {
	t.Helper()
	stack := make([]uint64, max(len(args), 2))
	copy(stack, args)
	err := fn(t, inst, name).Call(ctx, stack)
	return asError(t, err)
}

func asError(t testing.TB, err error) *Error {
	t.Helper()
	if err == nil {
		t.Fatal("got no error")
	}
	var e *Error
	if !errors.As(err, &e) {
		t.Fatalf("error %v (%T) is not an *Error", err, err)
	}
	return e
}

// checkError asserts an *Error's kind, module and export, that errors.Is
// matches the kind's sentinel, and that the message contains each of want.
func checkError(t testing.TB, e *Error, kind ErrorKind, module, export string, want ...string) {
	t.Helper()
	if e.Kind != kind {
		t.Errorf("kind = %v, want %v (error: %v)", e.Kind, kind, e)
	}
	if e.Module != module {
		t.Errorf("module = %q, want %q", e.Module, module)
	}
	if e.Export != export {
		t.Errorf("export = %q, want %q", e.Export, export)
	}
	sentinel := map[ErrorKind]error{KindTrap: ErrTrap, KindTimeout: ErrTimeout, KindExit: ErrExit,
		KindHost: ErrHost, KindLink: ErrLink, KindCompile: ErrCompile}[kind]
	if !errors.Is(e, sentinel) {
		t.Errorf("errors.Is(err, %v) = false", sentinel)
	}
	msg := e.Error()
	for _, w := range want {
		if !strings.Contains(msg, w) {
			t.Errorf("error message lacks %q:\n%s", w, msg)
		}
	}
}

func TestCompileGarbage(t *testing.T) {
	e := newEngine(t, baseConfig())
	_, err := e.Compile(context.Background(), "garbage.wasm", []byte("not wasm at all"))
	checkError(t, asError(t, err), KindCompile, "garbage.wasm", "", `plugin "garbage.wasm": compile error`)
}

func TestImportsAndExports(t *testing.T) {
	e := newEngine(t, testConfig())
	m := compile(t, e, "hostcall", guests["hostcall"])
	if m.Name() != "hostcall" {
		t.Errorf("Name() = %q", m.Name())
	}
	imports := map[string]string{}
	for _, f := range m.Imports() {
		imports[f.Module+"."+f.Name] = f.String()
	}
	for _, want := range []string{
		"test.sum (i32, i32) -> i64",
		"test.fill (i32, i32, i32)",
		"test.ctx_value () -> i64",
		"wasi_snapshot_preview1.fd_write (i32, i32, i32, i32) -> i32",
	} {
		name := want[:strings.IndexByte(want, ' ')]
		if got := imports[name]; got != want {
			t.Errorf("import %s = %q, want %q", name, got, want)
		}
	}
	exports := map[string]string{}
	for _, f := range m.Exports() {
		if f.Module != "" {
			t.Errorf("export %v has module %q", f, f.Module)
		}
		exports[f.Name] = f.String()
	}
	for _, want := range []string{"sum_buf (i32) -> i64", "sum_at (i32, i32) -> i64", "_initialize ()", "noop ()"} {
		name := want[:strings.IndexByte(want, ' ')]
		if got := exports[name]; got != want {
			t.Errorf("export %s = %q, want %q", name, got, want)
		}
	}
	if !m.ExportedMemory("memory") || m.ExportedMemory("nope") {
		t.Errorf("ExportedMemory(memory)=%v, ExportedMemory(nope)=%v", m.ExportedMemory("memory"), m.ExportedMemory("nope"))
	}
	nomem := compile(t, e, "nomem", hostNopModule())
	if nomem.ExportedMemory("memory") {
		t.Error("a module without memory reports one")
	}

	inst := instantiate(t, m)
	f := fn(t, inst, "sum_at")
	if got := f.Info().String(); got != "sum_at (i32, i32) -> i64" {
		t.Errorf("Func.Info() = %q", got)
	}
	if _, ok := inst.Func("nope"); ok {
		t.Error(`Func("nope") found an export`)
	}
}

func TestCallResults(t *testing.T) {
	e := newEngine(t, baseConfig())
	inst := instantiate(t, compile(t, e, "basic", guests["basic"]))
	if got := int32(call(t, inst, "add", 2, 3)); got != 5 {
		t.Errorf("add(2, 3) = %d", got)
	}
	minus7 := int32(-7)
	if got := int32(call(t, inst, "add", uint64(uint32(minus7)), 3)); got != -4 {
		t.Errorf("add(-7, 3) = %d", got)
	}
	if got := call(t, inst, "add64", 1<<40, 1<<41); got != 3<<40 {
		t.Errorf("add64 = %d", got)
	}
	raw := instantiate(t, compile(t, e, "raw", rawModule()))
	if got := int32(call(t, raw, "div", 42, 6)); got != 7 {
		t.Errorf("div(42, 6) = %d", got)
	}
}

func TestStackTooSmall(t *testing.T) {
	e := newEngine(t, baseConfig())
	inst := instantiate(t, compile(t, e, "raw", rawModule()))
	err := fn(t, inst, "div").Call(context.Background(), make([]uint64, 1))
	if err == nil || !strings.Contains(err.Error(), "needs a stack of 2 slots, got 1") {
		t.Fatalf("err = %v", err)
	}
	var re *Error
	if errors.As(err, &re) {
		t.Errorf("a host mistake is reported as a guest failure: %v", err)
	}
	// Not a guest failure: the instance stays usable.
	if got := call(t, inst, "div", 9, 3); got != 3 {
		t.Errorf("div after a refused call = %d", got)
	}
}

func TestHostFunctionMemory(t *testing.T) {
	e := newEngine(t, testConfig())
	inst := instantiate(t, compile(t, e, "hostcall", guests["hostcall"]))
	if got := call(t, inst, "sum_buf", 10); got != 55 {
		t.Errorf("sum_buf(10) = %d, want 55", got)
	}
	if got := call(t, inst, "fill_buf", 16, 7); got != 16*7 {
		t.Errorf("fill_buf(16, 7) = %d, want %d", got, 16*7)
	}
}

func TestHostFunctionContext(t *testing.T) {
	e := newEngine(t, testConfig())
	inst := instantiate(t, compile(t, e, "hostcall", guests["hostcall"]))
	stack := make([]uint64, 1)
	ctx := context.WithValue(context.Background(), ctxKey{}, int64(42))
	if err := fn(t, inst, "ctx_value").Call(ctx, stack); err != nil {
		t.Fatal(err)
	}
	if stack[0] != 42 {
		t.Errorf("host function saw ctx value %d, want 42", int64(stack[0]))
	}
}

func TestHostFunctionOutOfBounds(t *testing.T) {
	e := newEngine(t, testConfig())
	inst := instantiate(t, compile(t, e, "hostcall", guests["hostcall"]))
	ce := callErr(t, context.Background(), inst, "sum_at", 0xFFFFFF00, 1024)
	checkError(t, ce, KindHost, "hostcall", "sum_at", "host function test.sum: range 4294967040+1024 is out of bounds")
	var he *HostError
	if !errors.As(ce, &he) || he.Func != "test.sum" {
		t.Errorf("errors.As(*HostError) = %v", he)
	}

	// A guest without memory: the host function sees one of size zero.
	nomem := instantiate(t, compile(t, e, "nomem", hostNopModule()))
	ce = callErr(t, context.Background(), nomem, "sum_nomem")
	checkError(t, ce, KindHost, "nomem", "sum_nomem", "range 0+4 is out of bounds of a memory of 0 bytes")
	if nomem.Memory().Size() != 0 {
		t.Errorf("memory-less instance has %d bytes", nomem.Memory().Size())
	}
}

func TestHostFunctionPanics(t *testing.T) {
	e := newEngine(t, testConfig())
	m := compile(t, e, "hostcall", guests["hostcall"])

	ce := callErr(t, context.Background(), instantiate(t, m), "host_fail")
	checkError(t, ce, KindHost, "hostcall", "host_fail", "host function test.fail: refused on purpose")
	var he *HostError
	if !errors.As(ce, &he) || he.Func != "test.fail" || he.Reason != "refused on purpose" {
		t.Errorf("errors.As(*HostError) = %+v", he)
	}
	if he != nil && ce.Err != error(he) {
		t.Errorf("Err = %v, want the panic value itself", ce.Err)
	}

	ce = callErr(t, context.Background(), instantiate(t, m), "host_fail_plain")
	checkError(t, ce, KindHost, "hostcall", "host_fail_plain", "host function test.fail_plain: plain failure")
	if !errors.Is(ce, errPlain) {
		t.Error("errors.Is(err, errPlain) = false")
	}

	// The host is still up: the same module serves a fresh instance.
	if got := call(t, instantiate(t, m), "sum_buf", 3); got != 6 {
		t.Errorf("sum_buf(3) after a host failure = %d", got)
	}
}

// A Go guest's panic prints to stderr, then Go's wasip1 runtime aborts with
// an unreachable instruction (in a //go:wasmexport call it does not call
// proc_exit): a trap whose Stderr says what happened.
func TestGoPanic(t *testing.T) {
	e := newEngine(t, baseConfig())
	inst := instantiate(t, compile(t, e, "basic", guests["basic"]))
	ce := callErr(t, context.Background(), inst, "index_panic", 1000)
	checkError(t, ce, KindTrap, "basic", "index_panic",
		"unreachable", "panic: runtime error: index out of range [1000] with length 256")
	if !strings.HasPrefix(ce.Stderr, "panic: runtime error: index out of range [1000] with length 256") {
		t.Errorf("stderr = %q", ce.Stderr)
	}
}

func TestExitCode(t *testing.T) {
	e := newEngine(t, baseConfig())
	inst := instantiate(t, compile(t, e, "basic", guests["basic"]))
	ce := callErr(t, context.Background(), inst, "exit_with", 3)
	checkError(t, ce, KindExit, "basic", "exit_with")
	if ce.ExitCode != 3 {
		t.Errorf("exit code = %d, want 3", ce.ExitCode)
	}
}

func TestTraps(t *testing.T) {
	e := newEngine(t, baseConfig())
	m := compile(t, e, "raw", rawModule())
	for _, tc := range []struct {
		export string
		args   []uint64
		want   string
	}{
		{"unreachable", nil, "unreachable"},
		{"div", []uint64{1, 0}, "integer divide by zero"},
		{"load", []uint64{70000}, "out of bounds memory access"},
	} {
		t.Run(tc.export, func(t *testing.T) {
			ce := callErr(t, context.Background(), instantiate(t, m), tc.export, tc.args...)
			checkError(t, ce, KindTrap, "raw", tc.export, tc.want)
		})
	}
	t.Run("go guest out of bounds", func(t *testing.T) {
		inst := instantiate(t, compile(t, e, "basic", guests["basic"]))
		ce := callErr(t, context.Background(), inst, "oob_load")
		checkError(t, ce, KindTrap, "basic", "oob_load", "out of bounds memory access")
	})
}

func TestFailedInstanceRefusesCalls(t *testing.T) {
	e := newEngine(t, baseConfig())
	inst := instantiate(t, compile(t, e, "raw", rawModule()))
	first := callErr(t, context.Background(), inst, "unreachable")
	err := fn(t, inst, "noop").Call(context.Background(), nil)
	if err == nil || !strings.Contains(err.Error(), "must be replaced") {
		t.Fatalf("call after a failure: %v", err)
	}
	if again := asError(t, err); again != first {
		t.Errorf("the refusal wraps %v, want the first failure %v", again, first)
	}
}

func TestStderrCaptured(t *testing.T) {
	e := newEngine(t, baseConfig())
	inst := instantiate(t, compile(t, e, "basic", guests["basic"]))
	call(t, inst, "say") // an earlier call's output is not this call's
	ce := callErr(t, context.Background(), inst, "index_panic", 300)
	if !strings.HasPrefix(ce.Stderr, "panic: runtime error: index out of range [300]") {
		t.Errorf("stderr = %q", ce.Stderr)
	}

	// A limit of zero drops stderr.
	quiet := newEngine(t, baseConfig().WithStderrLimit(0))
	ce = callErr(t, context.Background(), instantiate(t, compile(t, quiet, "basic", guests["basic"])), "index_panic", 300)
	if ce.Stderr != "" {
		t.Errorf("stderr with a zero limit = %q", ce.Stderr)
	}
}

func TestTimeout(t *testing.T) {
	e := newEngine(t, baseConfig().WithCallTimeout(100*time.Millisecond))
	for _, tc := range []struct{ name, module string }{{"go", "basic"}, {"raw", "raw"}} {
		t.Run(tc.name, func(t *testing.T) {
			wasm := guests["basic"]
			if tc.module == "raw" {
				wasm = rawModule()
			}
			m := compile(t, e, tc.module, wasm)
			inst := instantiate(t, m)
			ce := callErr(t, context.Background(), inst, "spin")
			checkError(t, ce, KindTimeout, tc.module, "spin", "ran past its timeout of 100ms")
			if !errors.Is(ce, context.DeadlineExceeded) {
				t.Error("errors.Is(err, context.DeadlineExceeded) = false")
			}
			// The stopped instance is refused, and closes cleanly; a fresh
			// one works.
			if err := fn(t, inst, "noop").Call(context.Background(), nil); err == nil {
				t.Error("a timed-out instance accepted another call")
			}
			if err := inst.Close(context.Background()); err != nil {
				t.Errorf("Close after a timeout: %v", err)
			}
			call(t, instantiate(t, m), "noop")
		})
	}
}

func TestCancel(t *testing.T) {
	timeout := time.Minute
	if !stopsOnCancel {
		timeout = 300 * time.Millisecond
	}
	e := newEngine(t, baseConfig().WithCallTimeout(timeout))
	m := compile(t, e, "basic", guests["basic"])

	t.Run("during the call", func(t *testing.T) {
		inst := instantiate(t, m)
		ctx, cancel := context.WithCancel(context.Background())
		errc := make(chan error, 1)
		go func() { errc <- fn(t, inst, "spin").Call(ctx, nil) }()
		time.Sleep(20 * time.Millisecond) // let it spin; a cancel before the call is also fine
		cancel()
		ce := asError(t, <-errc)
		checkError(t, ce, KindTimeout, "basic", "spin", "the caller's context is done")
		if !errors.Is(ce, context.Canceled) {
			t.Errorf("errors.Is(err, context.Canceled) = false: %v", ce)
		}
	})
	t.Run("before the call", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		ce := callErr(t, ctx, instantiate(t, m), "spin")
		checkError(t, ce, KindTimeout, "basic", "spin")
		if !errors.Is(ce, context.Canceled) {
			t.Errorf("errors.Is(err, context.Canceled) = false: %v", ce)
		}
	})
	t.Run("caller deadline", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
		defer cancel()
		ce := callErr(t, ctx, instantiate(t, m), "spin")
		checkError(t, ce, KindTimeout, "basic", "spin", "the caller's context is done")
		if !errors.Is(ce, context.DeadlineExceeded) {
			t.Errorf("errors.Is(err, context.DeadlineExceeded) = false: %v", ce)
		}
	})
	call(t, instantiate(t, m), "noop")
}

func TestMemoryLimit(t *testing.T) {
	const pages = 512 // 32 MiB
	e := newEngine(t, baseConfig().WithMemoryLimitPages(pages))
	m := compile(t, e, "basic", guests["basic"])

	small := instantiate(t, m)
	if got := call(t, small, "grow", 4); got != 4 {
		t.Errorf("grow(4) = %d", got)
	}

	// Go's runtime treats a failed memory.grow as fatal: it prints
	// "fatal error: out of memory" and aborts (a trap).
	inst := instantiate(t, m)
	ce := callErr(t, context.Background(), inst, "grow", 64)
	checkError(t, ce, KindTrap, "basic", "grow", "fatal error: out of memory")
	if size := inst.Memory().Size(); size > pages*65536 {
		t.Errorf("memory grew to %d bytes past the cap of %d", size, pages*65536)
	}
	// The host and the module are fine.
	call(t, instantiate(t, m), "noop")
}

func TestMemoryAdapter(t *testing.T) {
	e := newEngine(t, baseConfig())
	inst := instantiate(t, compile(t, e, "basic", guests["basic"]))
	mem := inst.Memory()
	size := mem.Size()
	if size == 0 || size%65536 != 0 {
		t.Fatalf("Size() = %d", size)
	}
	ptr := uint32(call(t, inst, "buf_ptr"))
	if !mem.Write(ptr, []byte{10, 20, 30}) {
		t.Fatal("Write in bounds failed")
	}
	if got := call(t, inst, "buf_sum", 3); got != 60 {
		t.Errorf("guest sees sum %d after host Write, want 60", got)
	}
	view, ok := mem.Read(ptr, 3)
	if !ok || string(view) != "\x0a\x14\x1e" {
		t.Errorf("Read = %v, %v", view, ok)
	}
	view[0] = 40 // a view aliases guest memory
	if got := call(t, inst, "buf_sum", 3); got != 90 {
		t.Errorf("guest sees sum %d after writing through a view, want 90", got)
	}

	for _, tc := range []struct {
		off, n uint32
		ok     bool
	}{
		{0, 0, true},
		{size, 0, true},
		{size - 4, 4, true},
		{size - 3, 4, false},
		{size, 1, false},
		{0xFFFFFFFF, 2, false},
	} {
		if _, ok := mem.Read(tc.off, tc.n); ok != tc.ok {
			t.Errorf("Read(%d, %d) ok = %v, want %v", tc.off, tc.n, ok, tc.ok)
		}
		if ok := mem.Write(tc.off, make([]byte, tc.n)); ok != tc.ok {
			t.Errorf("Write(%d, %d bytes) ok = %v, want %v", tc.off, tc.n, ok, tc.ok)
		}
	}
	if _, ok := mem.Read(2, 0xFFFFFFFF); ok {
		t.Error("Read(2, 4 GiB - 1) succeeded")
	}
	if b, ok := mem.Read(size-1, 1); !ok || len(b) != 1 {
		t.Errorf("last byte: %v, %v", b, ok)
	}
}

func TestLinkErrors(t *testing.T) {
	e := newEngine(t, testConfig())
	for _, tc := range []struct {
		name string
		wasm []byte
		want string
	}{
		{"unknown function", importModule("sluice", "bogus", []byte{wI32}, []byte{wI32}),
			"module imports sluice.bogus (i32) -> i32, which the host does not provide"},
		{"unknown wasi function", importModule("wasi_snapshot_preview1", "no_such_call", nil, nil),
			"module imports wasi_snapshot_preview1.no_such_call (), which the host does not provide"},
		{"wrong signature", importModule("test", "sum", nil, []byte{wI32}),
			"module imports test.sum () -> i32, but the host provides test.sum (i32, i32) -> i64"},
		{"start traps", startTrapModule(), "unreachable"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := compile(t, e, "linky", tc.wasm)
			_, err := m.Instantiate(context.Background())
			checkError(t, asError(t, err), KindLink, "linky", "", tc.want)
		})
	}
	t.Run("initialize traps", func(t *testing.T) {
		_, err := compile(t, e, "linky", initTrapModule()).Instantiate(context.Background())
		ce := asError(t, err)
		checkError(t, ce, KindLink, "linky", "_initialize", "unreachable")
	})
	t.Run("go guest without its host module", func(t *testing.T) {
		bare := newEngine(t, baseConfig())
		_, err := compile(t, bare, "hostcall", guests["hostcall"]).Instantiate(context.Background())
		checkError(t, asError(t, err), KindLink, "hostcall", "",
			"module imports test.sum (i32, i32) -> i64, which the host does not provide",
			"module imports test.nop (), which the host does not provide")
	})
}

func TestInstancesAreIndependent(t *testing.T) {
	e := newEngine(t, baseConfig())
	m := compile(t, e, "basic", guests["basic"])
	const workers, rounds = 4, 50
	var wg sync.WaitGroup
	errs := make([]error, workers)
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			inst, err := m.Instantiate(context.Background()) // concurrently with the others
			if err != nil {
				errs[w] = err
				return
			}
			errs[w] = errors.Join(worker(inst, int64(w+1), rounds), inst.Close(context.Background()))
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
}

// worker drives one instance: its global and its memory must hold what it
// wrote, whatever the other instances do.
func worker(inst Instance, id int64, rounds int) error {
	ctx := context.Background()
	set, _ := inst.Func("set_state")
	get, _ := inst.Func("get_state")
	sum, _ := inst.Func("buf_sum")
	ptrf, _ := inst.Func("buf_ptr")
	stack := make([]uint64, 2)
	if err := ptrf.Call(ctx, stack); err != nil {
		return err
	}
	ptr := uint32(stack[0])
	for r := range rounds {
		v := id*1000 + int64(r)
		stack[0] = uint64(v)
		if err := set.Call(ctx, stack); err != nil {
			return err
		}
		if !inst.Memory().Write(ptr, []byte{byte(id), byte(r)}) {
			return fmt.Errorf("worker %d: Write failed", id)
		}
		if err := get.Call(ctx, stack); err != nil {
			return err
		}
		if int64(stack[0]) != v {
			return fmt.Errorf("worker %d round %d: state = %d, want %d", id, r, int64(stack[0]), v)
		}
		stack[0] = 2
		if err := sum.Call(ctx, stack); err != nil {
			return err
		}
		if want := uint64(byte(id)) + uint64(byte(r)); stack[0] != want {
			return fmt.Errorf("worker %d round %d: buffer sum = %d, want %d", id, r, stack[0], want)
		}
	}
	return nil
}

func TestDeterministicClockAndRandom(t *testing.T) {
	e := newEngine(t, baseConfig())
	m := compile(t, e, "basic", guests["basic"])
	a, b := instantiate(t, m), instantiate(t, m)
	ta, tb := call(t, a, "now_unix_milli"), call(t, b, "now_unix_milli")
	if ta != tb {
		t.Errorf("two fresh instances read different clocks: %d and %d", ta, tb)
	}
	if ta != 0 {
		t.Errorf("guest clock of a fresh instance reads %v, want the Unix epoch (the host's clock leaked?)", time.UnixMilli(int64(ta)).UTC())
	}
	ra, rb := call(t, a, "random_u64"), call(t, b, "random_u64")
	if ra != rb {
		t.Errorf("two fresh instances drew different random numbers: %x and %x", ra, rb)
	}
	if again := call(t, a, "random_u64"); again == ra {
		t.Errorf("random source repeats itself: %x", again)
	}
}

func TestCompilationCache(t *testing.T) {
	dir := t.TempDir()
	cfg := NewConfig().WithCacheDir(dir)
	first := newEngine(t, cfg)
	compile(t, first, "basic", guests["basic"])
	if err := first.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	entries, err := os.ReadDir(dir)
	if err != nil || len(entries) == 0 {
		t.Fatalf("cache directory is empty after a compile (err %v)", err)
	}
	second := newEngine(t, cfg)
	if got := int32(call(t, instantiate(t, compile(t, second, "basic", guests["basic"])), "add", 4, 5)); got != 9 {
		t.Errorf("add from the cached module = %d", got)
	}
}

func TestClose(t *testing.T) {
	ctx := context.Background()
	e := newEngine(t, baseConfig())
	m := compile(t, e, "raw", rawModule())
	inst := instantiate(t, m)
	noop := fn(t, inst, "noop")
	if err := m.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if err := noop.Call(ctx, nil); !errors.Is(err, ErrClosed) {
		t.Errorf("call on an instance of a closed module: %v", err)
	}
	if _, err := m.Instantiate(ctx); !errors.Is(err, ErrClosed) {
		t.Errorf("Instantiate on a closed module: %v", err)
	}
	if err := inst.Close(ctx); err != nil {
		t.Errorf("second Close: %v", err)
	}
	m2 := compile(t, e, "raw", rawModule())
	inst2, err := m2.Instantiate(ctx)
	if err != nil {
		t.Fatal(err)
	}
	noop2 := fn(t, inst2, "noop")
	if err := e.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if err := noop2.Call(ctx, nil); err == nil {
		t.Error("call on an instance of a closed engine succeeded")
	}
	if _, err := e.Compile(ctx, "raw", rawModule()); !errors.Is(err, ErrClosed) {
		t.Errorf("Compile on a closed engine: %v", err)
	}
	if err := e.Close(ctx); err != nil {
		t.Errorf("second engine Close: %v", err)
	}
}

func TestConfigValidation(t *testing.T) {
	nop := func(context.Context, Memory, []uint64) {}
	for _, tc := range []struct {
		name string
		cfg  Config
		want string
	}{
		{"zero config", Config{}, "memory limit of 0 pages"},
		{"too much memory", NewConfig().WithMemoryLimitPages(65537), "out of range"},
		{"negative timeout", NewConfig().WithCallTimeout(-time.Second), "negative call timeout"},
		{"wasi name", NewConfig().WithHostModules(HostModule{Name: "wasi_snapshot_preview1"}), "reserved for WASI"},
		{"duplicate module", NewConfig().WithHostModules(HostModule{Name: "a"}, HostModule{Name: "a"}), `"a" is defined twice`},
		{"duplicate func", NewConfig().WithHostModules(HostModule{Name: "a", Funcs: []HostFunc{{Name: "f", Fn: nop}, {Name: "f", Fn: nop}}}), "a.f is defined twice"},
		{"nil fn", NewConfig().WithHostModules(HostModule{Name: "a", Funcs: []HostFunc{{Name: "f"}}}), "a.f has no Fn"},
		{"bad type", NewConfig().WithHostModules(HostModule{Name: "a", Funcs: []HostFunc{{Name: "f", Fn: nop, Signature: Signature{Params: []ValueType{9}}}}}), "invalid value type"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := newEngineErr(tc.cfg)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err = %v, want one containing %q", err, tc.want)
			}
		})
	}
}

// Closing a module while one of its instances runs a guest is safe: wazero
// stops the guest (the call reports ErrClosed), wasmtime waits for the call,
// which the timeout ends.
func TestCloseDuringCall(t *testing.T) {
	ctx := context.Background()
	e := newEngine(t, baseConfig().WithCallTimeout(300*time.Millisecond))
	m := compile(t, e, "raw", rawModule())
	inst := instantiate(t, m)
	spin := fn(t, inst, "spin")
	errc := make(chan error, 1)
	go func() { errc <- spin.Call(ctx, nil) }()
	time.Sleep(20 * time.Millisecond) // let it spin; closing before the call is also fine
	if err := m.Close(ctx); err != nil {
		t.Fatal(err)
	}
	err := <-errc
	var ce *Error
	if !errors.Is(err, ErrClosed) && !(errors.As(err, &ce) && ce.Kind == KindTimeout) {
		t.Errorf("the interrupted call returned %v", err)
	}
	if err := spin.Call(ctx, nil); err == nil {
		t.Error("a closed instance accepted a call")
	}
}
