package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/abi"
	"github.com/sluicehq/sluice/host/plugin"
	"github.com/sluicehq/sluice/plugins/internal/plugintest"
	"github.com/sluicehq/sluice/runtime"
	"github.com/sluicehq/sluice/sdk/go/sluice"
	"github.com/sluicehq/sluice/sdk/go/sluice/sluicetest"
	"github.com/sluicehq/sluice/sdk/go/wasmbuild"
)

func TestMain(m *testing.M) { os.Exit(plugintest.Main(m)) }

func TestUpper(t *testing.T) {
	h := sluicetest.New()
	in := sluicetest.KV("k", "hello, Wörld 42")
	in.Time = 7
	in.Headers = []sluice.Header{{Name: []byte("h"), Value: []byte("v")}}
	outs, rejects, err := h.Process(in, sluicetest.KV("", ""))
	if err != nil || len(rejects) != 0 {
		t.Fatal(err, rejects)
	}
	if len(outs) != 2 {
		t.Fatalf("outputs %+v", outs)
	}
	o := outs[0]
	if string(o.Value) != "HELLO, WöRLD 42" || string(o.Key) != "k" || o.Time != 7 || len(o.Headers) != 1 {
		t.Errorf("output %+v", o)
	}
	if outs[1].Origin != 1 || len(outs[1].Value) != 0 {
		t.Errorf("empty record: %+v", outs[1])
	}
}

func TestUpperSameInWasm(t *testing.T) {
	long := strings.Repeat("mixed Case ünïcode text ", 500)
	plugintest.SameInWasm(t, []plugintest.Case{
		{Name: "batches", Batches: [][]sluice.Record{
			{sluicetest.KV("a", "abc"), sluicetest.KV("b", long), {Key: []byte("c"), Time: -1}},
			{},
			{sluicetest.KV("d", "xyz")},
		}},
	})
}

// BenchmarkUpperRecord is the plugin's per-record logic natively, for
// comparison with the same plugin in WebAssembly (BenchmarkUpperWasm).
func BenchmarkUpperRecord(b *testing.B) {
	r := sluicetest.KV("key00001", strings.Repeat("value of 64 bytes. ", 4)[:64])
	for b.Loop() {
		_ = upper(&r)
	}
}

// BenchmarkUpperWasm measures the compiled plugin through the host's batch
// path, plugin.Instance.Process, on each engine of the build (wazero, and
// wasmtime with -tags wasmtime) with the call timeout off (the deadline is
// a separate cost, which host/bench measures), beside native Go doing the
// same work (upper-casing each record's value into an output arena, as the
// host copies a guest's output): batches of 1024 records with 64-byte
// values. ns/record is the figure to read against BenchmarkUpperRecord and
// the figures in BENCHMARKS.md; cpu-ns/record is the process's CPU time per
// record (user and system, every thread), which a machine busy with other
// processes inflates less than the elapsed time.
//
//	go test -tags wasmtime -run '^$' -bench UpperWasm ./plugins/upper/
func BenchmarkUpperWasm(b *testing.B) {
	ctx := context.Background()
	out := filepath.Join(b.TempDir(), "upper.wasm")
	if err := wasmbuild.Go(ctx, ".", out); err != nil {
		b.Fatal(err)
	}
	wasm, err := os.ReadFile(out)
	if err != nil {
		b.Fatal(err)
	}
	const n = 1024
	in := make([]abi.Record, n)
	for i := range in {
		in[i] = abi.Record{Time: int64(i), Value: []byte(strings.Repeat(fmt.Sprintf("record %d ", i), 8)[:64])}
	}
	report := func(b *testing.B, cpu0 time.Duration) {
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/record")
		if cpu := processCPU(); cpu > 0 {
			b.ReportMetric(float64((cpu-cpu0).Nanoseconds())/float64(b.N*n), "cpu-ns/record")
		}
	}
	b.Run("native", func(b *testing.B) {
		arena := make([]byte, 0, n*64)
		outs := make([]abi.Record, n)
		cpu0 := processCPU()
		for b.Loop() {
			arena = arena[:0]
			for i := range in {
				s := len(arena)
				arena = append(arena, in[i].Value...)
				v := arena[s:len(arena):len(arena)]
				_ = upper(&sluice.Record{Value: v})
				outs[i] = abi.Record{Time: in[i].Time, Value: v}
			}
		}
		report(b, cpu0)
		if !bytes.Equal(outs[n-1].Value, bytes.ToUpper(in[n-1].Value)) {
			b.Fatalf("the last output is %q", outs[n-1].Value)
		}
	})
	for _, engine := range runtime.Engines() {
		if runtime.CheckEngine(engine) != nil {
			continue
		}
		b.Run(engine, func(b *testing.B) {
			eng, err := runtime.New(ctx, engine, runtime.NewConfig().WithHostModules(plugin.HostModule()).WithCallTimeout(0))
			if err != nil {
				b.Fatal(err)
			}
			defer eng.Close(ctx)
			p, err := plugin.Load(ctx, eng, "upper", wasm, plugin.KindMap)
			if err != nil {
				b.Fatal(err)
			}
			inst, err := p.NewInstance(ctx, nil)
			if err != nil {
				b.Fatal(err)
			}
			defer inst.Close(ctx)
			var o plugin.Output
			b.ReportAllocs()
			cpu0 := processCPU()
			for b.Loop() {
				o.Reset()
				if err := inst.Process(ctx, in, nil, &o); err != nil {
					b.Fatal(err)
				}
			}
			report(b, cpu0)
			if len(o.Records) != n || !bytes.Equal(o.Records[n-1].Value, bytes.ToUpper(in[n-1].Value)) {
				b.Fatalf("%d outputs, the last %q", len(o.Records), o.Records[len(o.Records)-1].Value)
			}
		})
	}
}
