package runtime

import (
	"context"
	"testing"
)

// BenchmarkCall measures one Func.Call on the engine the build tags select
// (go test -bench Call ./runtime/ for wazero, add -tags wasmtime for
// wasmtime). The raw module's exports are empty WebAssembly functions, so
// they measure the engine alone; the Go guest's add the cost of entering Go's
// wasip1 runtime. Calls run with the timeout off, as a trusted module's
// would, except in with-timeout, which pays for the deadline's context.
func BenchmarkCall(b *testing.B) {
	e := newEngine(b, testConfig().WithCallTimeout(0))
	timed := newEngine(b, testConfig())
	raw := instantiate(b, compile(b, e, "raw", rawModule()))
	rawTimed := instantiate(b, compile(b, timed, "raw", rawModule()))
	host := instantiate(b, compile(b, e, "hostnop", hostNopModule()))
	goGuest := instantiate(b, compile(b, e, "hostcall", guests["hostcall"]))
	for _, bc := range []struct {
		name string
		f    Func
	}{
		{"empty", fn(b, raw, "noop")},
		{"empty-with-timeout", fn(b, rawTimed, "noop")},
		{"host-round-trip", fn(b, host, "call_nop")},
		{"go-empty", fn(b, goGuest, "noop")},
		{"go-host-round-trip", fn(b, goGuest, "call_host")},
	} {
		b.Run(engineName+"/"+bc.name, func(b *testing.B) {
			ctx := context.Background()
			stack := make([]uint64, 2)
			b.ReportAllocs()
			for b.Loop() {
				if err := bc.f.Call(ctx, stack); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkInstantiate measures making a fresh instance of a compiled Go
// guest (_initialize included), the cost of replacing a failed instance.
func BenchmarkInstantiate(b *testing.B) {
	e := newEngine(b, baseConfig())
	m := compile(b, e, "basic", guests["basic"])
	ctx := context.Background()
	b.Run(engineName, func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			inst, err := m.Instantiate(ctx)
			if err != nil {
				b.Fatal(err)
			}
			if err := inst.Close(ctx); err != nil {
				b.Fatal(err)
			}
		}
	})
}
