//go:build !wasmtime

package runtime

import (
	"context"
	"errors"
	"fmt"
	goruntime "runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluicehq/sluice/runtime/internal/interrupt"
)

// Names of the instrumenter's, for the tests.
const (
	interruptStartExport = interrupt.StartExport
	interruptInterval    = interrupt.Interval
)

// engineName names the engine under test in benchmark and test output.
const engineName = "wazero"

// stopsOnCancel: wazero stops a running guest as soon as the caller's
// context is cancelled.
const stopsOnCancel = true

func newEngineErr(cfg Config) (Engine, error) { return NewWazero(context.Background(), cfg) }

// newEngine returns a wazero engine closed at the end of the test.
func newEngine(t testing.TB, cfg Config) Engine {
	t.Helper()
	e, err := newEngineErr(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = e.Close(context.Background()) })
	return e
}

// Calls allocate nothing, with the timeout off or on (instrumented), and
// whether or not the caller's context can be cancelled: not the engine, not
// the deadline, not the stack-based host function adapter.
func TestWazeroCallsDoNotAllocate(t *testing.T) {
	cancellable, cancel := context.WithCancel(context.Background())
	defer cancel()
	for _, cfg := range []struct {
		name string
		cfg  Config
		ctx  context.Context
	}{
		{"no timeout", testConfig().WithCallTimeout(0), context.Background()},
		{"timeout", testConfig(), context.Background()},
		{"timeout, cancellable context", testConfig(), cancellable},
	} {
		e := newEngine(t, cfg.cfg)
		raw := instantiate(t, compile(t, e, "raw", rawModule()))
		host := instantiate(t, compile(t, e, "hostnop", hostNopModule()))
		hc := instantiate(t, compile(t, e, "hostcall", guests["hostcall"]))
		stack := make([]uint64, 2)
		for _, tc := range []struct {
			name string
			f    Func
		}{
			{"empty export", fn(t, raw, "noop")},
			{"host round trip", fn(t, host, "call_nop")},
			{"go guest host round trip", fn(t, hc, "call_host")},
		} {
			allocs := testing.AllocsPerRun(1000, func() {
				if err := tc.f.Call(cfg.ctx, stack); err != nil {
					t.Fatal(err)
				}
			})
			if allocs != 0 {
				t.Errorf("%s, %s: %v allocations per call, want 0", cfg.name, tc.name, allocs)
			}
		}
	}
}

// wazeroModuleOf returns the engine's own type behind a Module.
func wazeroModuleOf(t testing.TB, m Module) *wazeroModule {
	t.Helper()
	wm, ok := m.(*wazeroModule)
	if !ok {
		t.Fatalf("module is a %T", m)
	}
	return wm
}

// With a call timeout, every test module is instrumented (the deadline is
// the flag); without, none is; a module the instrumenter refuses falls back
// to wazero's own mechanism, and its deadline still holds.
func TestWazeroInstrumentsUnderTimeout(t *testing.T) {
	timed := newEngine(t, testConfig())
	untimed := newEngine(t, testConfig().WithCallTimeout(0))
	for name, wasm := range map[string][]byte{
		"raw": rawModule(), "hostnop": hostNopModule(), "basic": guests["basic"], "hostcall": guests["hostcall"],
	} {
		if !wazeroModuleOf(t, compile(t, timed, name, wasm)).interrupt {
			t.Errorf("%s is not instrumented under a call timeout", name)
		}
		if wazeroModuleOf(t, compile(t, untimed, name, wasm)).interrupt {
			t.Errorf("%s is instrumented without a call timeout", name)
		}
	}

	e := newEngine(t, baseConfig().WithCallTimeout(50*time.Millisecond))
	m := compile(t, e, "reserved", reservedNameModule())
	if wazeroModuleOf(t, m).interrupt {
		t.Fatal("a module that exports the reserved name was instrumented")
	}
	if _, ok := instantiate(t, m).Func("sluice:interrupt"); !ok {
		t.Error("the module's own export sluice:interrupt is hidden")
	}
	ce := callErr(t, context.Background(), instantiate(t, m), "spin")
	checkError(t, ce, KindTimeout, "reserved", "spin", "ran past its timeout of 50ms")
}

// An instrumented module's start function runs right after instantiation,
// under the call timeout, and is not an export of the module.
func TestWazeroStartFunction(t *testing.T) {
	e := newEngine(t, baseConfig().WithCallTimeout(50*time.Millisecond))
	m := compile(t, e, "start", startModule(false))
	if !wazeroModuleOf(t, m).start {
		t.Fatal("the start function was not moved")
	}
	for _, f := range m.Exports() {
		if f.Name != "get" {
			t.Errorf("unexpected export %v", f)
		}
	}
	inst := instantiate(t, m)
	if _, ok := inst.Func(interruptStartExport); ok {
		t.Errorf("Func(%q) found the moved start function", interruptStartExport)
	}
	if got := call(t, inst, "get"); got != 42 {
		t.Errorf("get = %d after the start function, want 42", got)
	}

	_, err := compile(t, e, "startspin", startModule(true)).Instantiate(context.Background())
	ce := asError(t, err)
	checkError(t, ce, KindLink, "startspin", "", "ran past its timeout of 50ms")
	if !errors.Is(ce, context.DeadlineExceeded) {
		t.Errorf("errors.Is(err, context.DeadlineExceeded) = false: %v", ce)
	}
}

// A raised flag stops the guest and the call reports a timeout; a flag
// raised too late to stop a call is lowered for the next one.
func TestWazeroFlag(t *testing.T) {
	e := newEngine(t, baseConfig())
	m := compile(t, e, "raw", rawModule())
	const n = 100 * interruptInterval // enough checks to reach the flag

	inst := instantiate(t, m).(*wazeroInstance)
	raise(inst.watch)
	ce := callErr(t, context.Background(), inst, "count", n)
	checkError(t, ce, KindTimeout, "raw", "count", "ran past its timeout")

	inst = instantiate(t, m).(*wazeroInstance)
	raise(inst.watch)
	if !inst.watch.disarm() {
		t.Fatal("disarm did not report the raised flag")
	}
	if v := inst.watch.flag.Get(); v != 0 {
		t.Fatalf("flag = %d after disarm, want 0", v)
	}
	if got := call(t, inst, "count", n); got != 0 {
		t.Errorf("count = %d", got)
	}
}

// raise raises w's flag as the watchdog does at a call's deadline.
func raise(w *watch) {
	w.arm(context.Background(), 1)
	w.check(1)
}

// The deadline holds while the garbage collector stops the world again and
// again: instrumented code yields to the Go scheduler, or the
// stop-the-world would wait for the guest, and the guest for the watchdog
// that the stop-the-world parked.
func TestWazeroTimeoutUnderGC(t *testing.T) {
	e := newEngine(t, baseConfig().WithCallTimeout(50*time.Millisecond))
	inst := instantiate(t, compile(t, e, "basic", guests["basic"]))
	errc := make(chan error, 1)
	go func() { errc <- fn(t, inst, "spin").Call(context.Background(), nil) }()
	for {
		select {
		case err := <-errc:
			checkError(t, asError(t, err), KindTimeout, "basic", "spin")
			return
		default:
			goruntime.GC()
		}
	}
}

// Many instances call concurrently under a short deadline, each call
// running about as long as the deadline: every call returns its result or
// a timeout, never anything else, and a timed-out instance is replaced.
// Run with -race: the flag's writes must be ordered.
func TestWazeroDeadlineRaces(t *testing.T) {
	e := newEngine(t, baseConfig().WithCallTimeout(2*time.Millisecond))
	m := compile(t, e, "raw", rawModule())
	var wg sync.WaitGroup
	var ok, timedOut atomic.Int64
	errs := make(chan error, 4)
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx := context.Background()
			inst, err := m.Instantiate(ctx)
			if err != nil {
				errs <- err
				return
			}
			defer func() { _ = inst.Close(ctx) }()
			stack := make([]uint64, 1)
			for i := range 200 {
				f, _ := inst.Func("count")
				stack[0] = uint64(1 + i*20000)
				err := f.Call(ctx, stack)
				var ce *Error
				switch {
				case err == nil:
					ok.Add(1)
					if stack[0] != 0 {
						errs <- fmt.Errorf("count = %d", stack[0])
						return
					}
				case errors.As(err, &ce) && ce.Kind == KindTimeout:
					timedOut.Add(1)
					_ = inst.Close(ctx)
					if inst, err = m.Instantiate(ctx); err != nil {
						errs <- err
						return
					}
				default:
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	t.Logf("%d calls returned, %d timed out", ok.Load(), timedOut.Load())
}

// Closing the engine stops a call in progress on an instrumented instance.
func TestWazeroEngineCloseDuringCall(t *testing.T) {
	e := newEngine(t, baseConfig().WithCallTimeout(time.Minute))
	inst := instantiate(t, compile(t, e, "raw", rawModule()))
	errc := make(chan error, 1)
	go func() { errc <- fn(t, inst, "spin").Call(context.Background(), nil) }()
	time.Sleep(20 * time.Millisecond) // let it spin; closing before the call is also fine
	if err := e.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := <-errc; err == nil {
		t.Error("the call survived the engine's Close")
	}
}

func TestWatchdogSpan(t *testing.T) {
	for _, timeout := range []time.Duration{time.Nanosecond, time.Millisecond, 7 * time.Millisecond, 100 * time.Millisecond, 5 * time.Second, time.Hour} {
		d := newWatchdog(timeout)
		d.stop()
		if d.tick < minTick || d.tick > maxTick {
			t.Errorf("timeout %v: tick %v out of [%v, %v]", timeout, d.tick, minTick, maxTick)
		}
		// A call starts up to a tick after the count it reads, so the
		// deadline must be at least timeout + tick away.
		if got := time.Duration(d.span) * d.tick; got < timeout+d.tick || got > timeout+2*d.tick {
			t.Errorf("timeout %v: span %d ticks of %v = %v, want within [timeout+tick, timeout+2 ticks]", timeout, d.span, d.tick, got)
		}
	}
}

// reservedNameModule spins like rawModule's spin, and exports a function
// under the name the instrumenter reserves for its flag: the instrumenter
// refuses it, and the engine runs it with wazero's own deadline.
func reservedNameModule() []byte {
	return wasmModule{start: -1, funcs: []wasmFunc{
		{export: "spin", body: []byte{opLoop, blockEmpty, opBr, 0, opEnd}},
		{export: "sluice:interrupt"},
	}}.encode()
}

// startModule's start function stores 42 at address 0, which its export
// get reads. With spin set, the start function loops forever instead.
func startModule(spin bool) []byte {
	start := []byte{opI32Const, 0, opI32Const, 42, opI32Store, 2, 0}
	if spin {
		start = []byte{opLoop, blockEmpty, opBr, 0, opEnd}
	}
	return wasmModule{start: 0, memory: 1, funcs: []wasmFunc{
		{body: start},
		{export: "get", results: []byte{wI32}, body: []byte{opI32Const, 0, opI32Load, 2, 0}},
	}}.encode()
}

// An instrumented Go guest computes what the plain one does: the same
// results from the same calls, in order, on two fresh instances.
func TestWazeroInstrumentedGuestsBehaveAlike(t *testing.T) {
	plain := instantiate(t, compile(t, newEngine(t, baseConfig().WithCallTimeout(0)), "basic", guests["basic"]))
	inst := instantiate(t, compile(t, newEngine(t, baseConfig()), "basic", guests["basic"]))
	for _, c := range []struct {
		export string
		args   []uint64
	}{
		{"add", []uint64{40, 2}},
		{"add64", []uint64{1 << 40, 7}},
		{"mix", []uint64{100000}},
		{"set_state", []uint64{12345}},
		{"get_state", nil},
		{"grow", []uint64{3}},
		{"buf_sum", []uint64{256}},
		{"now_unix_milli", nil},
		{"random_u64", nil},
		{"random_u64", nil},
	} {
		want, got := call(t, plain, c.export, c.args...), call(t, inst, c.export, c.args...)
		if got != want {
			t.Errorf("%s%v = %d instrumented, %d plain", c.export, c.args, got, want)
		}
	}
}
