package conformance

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/abi"
	"github.com/sluicehq/sluice/host/plugin"
	"github.com/sluicehq/sluice/host/plugin/hosttest"
	"github.com/sluicehq/sluice/host/txnop"
	"github.com/sluicehq/sluice/plugins/internal/plugintest"
	"github.com/sluicehq/sluice/plugins/ledger/ledgerop"
	"github.com/sluicehq/sluice/plugins/upper/upperlib"
	"github.com/sluicehq/sluice/runtime"
	"github.com/sluicehq/sluice/sdk/build"
	"github.com/sluicehq/sluice/txn"
	"github.com/sluicehq/sluice/txn/apps/workload"
)

// benchLanguages are the languages benchmarked: Go, the reference, first.
var benchLanguages = append([]build.Language{build.Go}, languages...)

// opKinds are the kinds each operator is loaded as.
var opKinds = map[string]plugin.Kind{
	"upper":     plugin.KindMap,
	"enrich":    plugin.KindFlatMap,
	"wordcount": plugin.KindKeyed,
	"ledger":    plugin.KindTransactional,
}

// engine returns a wazero engine with the host's functions, the call
// deadline off (the benchmarks measure the guest, not the deadline), and
// wazero's compilation cache in cacheDir when it is not empty.
func engine(b *testing.B, cacheDir string) runtime.Engine {
	cfg := runtime.NewConfig().WithHostModules(plugin.HostModule()).WithCallTimeout(0)
	if cacheDir != "" {
		cfg = cfg.WithCacheDir(cacheDir)
	}
	eng, err := runtime.NewWazero(context.Background(), cfg)
	if err != nil {
		b.Fatal(err)
	}
	return eng
}

// startInstance compiles wasm in a fresh engine, loads it as kind and makes
// one configured instance, then releases everything: what a worker of a
// newly started pipeline pays before its first batch.
func startInstance(b *testing.B, cacheDir string, wasm []byte, kind plugin.Kind) {
	ctx := context.Background()
	eng := engine(b, cacheDir)
	defer eng.Close(ctx)
	p, err := plugin.Load(ctx, eng, "op", wasm, kind)
	if err != nil {
		b.Fatal(err)
	}
	defer p.Close(ctx)
	inst, err := p.NewInstance(ctx, nil)
	if err != nil {
		b.Fatal(err)
	}
	if err := inst.Close(ctx); err != nil {
		b.Fatal(err)
	}
}

// BenchmarkInstantiate measures, for each operator in each language, the
// time from a module's bytes to a ready instance: "compile" in a fresh
// engine without a compilation cache, "cached" in a fresh engine whose
// on-disk compilation cache (runtime.Config.WithCacheDir) already holds the
// module, and "instance" a new instance of a module already loaded (the
// cost of each further worker). module-bytes is the module's size.
func BenchmarkInstantiate(b *testing.B) {
	for _, lang := range benchLanguages {
		for _, op := range ops {
			b.Run(string(lang)+"/"+op, func(b *testing.B) {
				wasm := module(b, lang, op)
				kind := opKinds[op]
				size := float64(len(wasm))
				b.Run("compile", func(b *testing.B) {
					for b.Loop() {
						startInstance(b, "", wasm, kind)
					}
					b.ReportMetric(size, "module-bytes")
				})
				b.Run("cached", func(b *testing.B) {
					dir := b.TempDir()
					startInstance(b, dir, wasm, kind) // fills the cache
					for b.Loop() {
						startInstance(b, dir, wasm, kind)
					}
					b.ReportMetric(size, "module-bytes")
				})
				b.Run("instance", func(b *testing.B) {
					ctx := context.Background()
					eng := engine(b, "")
					defer eng.Close(ctx)
					p, err := plugin.Load(ctx, eng, "op", wasm, kind)
					if err != nil {
						b.Fatal(err)
					}
					defer p.Close(ctx)
					for b.Loop() {
						inst, err := p.NewInstance(ctx, nil)
						if err != nil {
							b.Fatal(err)
						}
						if err := inst.Close(ctx); err != nil {
							b.Fatal(err)
						}
					}
					b.ReportMetric(size, "module-bytes")
				})
			})
		}
	}
}

// upperBatch is the map benchmark's input: 256 records with 64-byte
// values and 8-byte keys.
func upperBatch() []abi.Record {
	in := make([]abi.Record, 256)
	for i := range in {
		in[i] = abi.Record{
			Time:  int64(i),
			Key:   fmt.Appendf(nil, "key%05d", i),
			Value: []byte(strings.Repeat(fmt.Sprintf("record %d mixed Case ", i), 8)[:64]),
		}
	}
	return in
}

// BenchmarkUpper measures the batched map of upper in each language
// through the host's batch path (plugin.Instance.Process): batches of 256
// records of 64 bytes; ns/record is the figure to read against native,
// the same function in Go without WebAssembly, and the figures in
// BENCHMARKS.md.
func BenchmarkUpper(b *testing.B) {
	const n = 256
	b.Run("native", func(b *testing.B) {
		in := upperBatch()
		for b.Loop() {
			for i := range in {
				upperlib.UpperInPlace(in[i].Value)
			}
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/record")
	})
	for _, lang := range benchLanguages {
		b.Run(string(lang), func(b *testing.B) {
			ctx := context.Background()
			wasm := module(b, lang, "upper")
			eng := engine(b, "")
			defer eng.Close(ctx)
			p, err := plugin.Load(ctx, eng, "upper", wasm, plugin.KindMap)
			if err != nil {
				b.Fatal(err)
			}
			defer p.Close(ctx)
			inst, err := p.NewInstance(ctx, nil)
			if err != nil {
				b.Fatal(err)
			}
			defer inst.Close(ctx)
			in := upperBatch()
			var out plugin.Output
			b.ReportAllocs()
			for b.Loop() {
				out.Reset()
				if err := inst.Process(ctx, in, nil, &out); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/record")
			if len(out.Records) != n || !bytes.Equal(out.Records[n-1].Value, bytes.ToUpper(in[n-1].Value)) {
				b.Fatalf("%d outputs, the last %q", len(out.Records), out.Records[len(out.Records)-1].Value)
			}
		})
	}
}

// BenchmarkLedger measures Streaming Ledger in each language on
// MorphStream's workload (the workload package's defaults: 115,200 keys,
// skew 0.25, 25% deposits), in batches of 10,240 events, with 2 workers
// and strategy ns-op-lazy, over the same initial state every batch;
// events/s is the figure to compare, native the Go operator without
// WebAssembly.
func BenchmarkLedger(b *testing.B) {
	k, err := workload.Defaults(workload.StreamingLedger)
	if err != nil {
		b.Fatal(err)
	}
	w := plugintest.NewTxnWorkload(b, workload.StreamingLedger, k, 4*10240, 10240)
	const workers = 2
	b.Run("native", func(b *testing.B) {
		benchLedger(b, w, hosttest.TxnLogic(ledgerop.New(), w.Tables))
	})
	for _, lang := range benchLanguages {
		b.Run(string(lang), func(b *testing.B) {
			l, err := hosttest.LoadTxnWasm(context.Background(), "ledger", module(b, lang, "ledger"), workers, w.Tables...)
			if err != nil {
				b.Fatal(err)
			}
			benchLedger(b, w, l)
		})
	}
}

// benchLedger runs w's batches in turn through logic, which it closes,
// and reports events/s and ns/event.
func benchLedger(b *testing.B, w plugintest.TxnWorkload, logic txnop.Logic) {
	st, err := txn.ParseStrategy(plugintest.BenchStrategy)
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	op, err := txnop.New(txnop.Config{Name: "ledger", Tables: w.Tables, Strategy: st, Workers: 2, Logic: logic})
	if err != nil {
		b.Fatal(err)
	}
	defer func() {
		if err := op.Close(ctx); err != nil {
			b.Error(err)
		}
	}()
	var out plugin.Output
	events := 0
	for i := 0; b.Loop(); i++ {
		batch := w.Batches[i%len(w.Batches)]
		out.Reset()
		if _, err := op.Process(ctx, batch, w.Initial, &out); err != nil {
			b.Fatal(err)
		}
		events += len(batch)
	}
	if events > 0 {
		secs := b.Elapsed().Seconds()
		b.ReportMetric(float64(events)/secs, "events/s")
		b.ReportMetric(secs*1e9/float64(events), "ns/event")
	}
}
