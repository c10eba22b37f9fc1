//go:build !wasmtime

package runtime

import (
	"context"
	"testing"
	"time"
)

// BenchmarkDeadline compares the ways a wazero call can run: without a
// deadline (off), under the instrumented flag and its watchdog (flag, the
// default), and under wazero's own WithCloseOnContextDone (wazero, what a
// module the instrumenter refuses gets). empty measures what a call pays
// to arm and disarm its deadline; the loops what the checks cost in guest
// code: mix is a Go guest's loop, count a hand-written one, 1000
// iterations each.
//
//	go test -run XXX -bench Deadline ./runtime/
func BenchmarkDeadline(b *testing.B) {
	ctx := context.Background()
	engines := []struct {
		name string
		e    Engine
	}{
		{"off", newEngine(b, baseConfig().WithCallTimeout(0))},
		{"flag", newEngine(b, baseConfig())},
		{"wazero", newWazeroEngine(b, baseConfig(), false)},
	}
	for _, w := range []struct {
		name, module, export string
		arg                  uint64
	}{
		{"empty", "raw", "noop", 0},
		{"count-1000", "raw", "count", 1000},
		{"go-mix-1000", "basic", "mix", 1000},
	} {
		for _, eng := range engines {
			wasm := rawModule()
			if w.module == "basic" {
				wasm = guests["basic"]
			}
			f := fn(b, instantiate(b, compile(b, eng.e, w.module, wasm)), w.export)
			b.Run(w.name+"/"+eng.name, func(b *testing.B) {
				stack := make([]uint64, 1)
				b.ReportAllocs()
				for b.Loop() {
					stack[0] = w.arg
					if err := f.Call(ctx, stack); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

// newWazeroEngine is newEngine for wazero with the choice of instrumenting.
func newWazeroEngine(t testing.TB, cfg Config, instrument bool) Engine {
	t.Helper()
	e, err := newWazero(context.Background(), cfg, instrument)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = e.Close(context.Background()) })
	return e
}

// BenchmarkDeadlineArm compares ways to arm and disarm a per-call deadline,
// without a guest: the watchdog's watch (what the engine does), a timer per
// instance reset and stopped at each call, a timer per call, and
// context.AfterFunc on a cancellable context (what watching the caller's
// context would cost without the watchdog's polling).
func BenchmarkDeadlineArm(b *testing.B) {
	e := newEngine(b, baseConfig()).(*wazeroEngine)
	inst := instantiate(b, compile(b, e, "raw", rawModule())).(*wazeroInstance)
	b.Run("watchdog", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			inst.watch.arm(context.Background(), e.dog.deadline())
			inst.watch.disarm()
		}
	})
	b.Run("timer-reset-stop", func(b *testing.B) {
		t := time.AfterFunc(time.Hour, func() {})
		t.Stop()
		b.ReportAllocs()
		for b.Loop() {
			t.Reset(5 * time.Second)
			t.Stop()
		}
	})
	b.Run("timer-per-call", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			time.AfterFunc(5*time.Second, func() {}).Stop()
		}
	})
	b.Run("context-afterfunc", func(b *testing.B) {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		b.ReportAllocs()
		for b.Loop() {
			context.AfterFunc(ctx, func() {})()
		}
	})
}
