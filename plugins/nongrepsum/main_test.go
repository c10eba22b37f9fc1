package main

import (
	"fmt"
	"maps"
	"os"
	"testing"

	"github.com/sluicehq/sluice/host/plugin/hosttest"
	"github.com/sluicehq/sluice/host/txnop"
	"github.com/sluicehq/sluice/plugins/grepsum/grepsumop"
	"github.com/sluicehq/sluice/plugins/internal/plugintest"
	"github.com/sluicehq/sluice/plugins/nongrepsum/nongrepsumop"
	"github.com/sluicehq/sluice/txn"
	"github.com/sluicehq/sluice/txn/apps/nongrepsum/event"
	"github.com/sluicehq/sluice/txn/apps/workload"
)

func TestMain(m *testing.M) { os.Exit(plugintest.TxnMain(m)) }

// native returns a maker of native Logics of the operator over tables.
func native(tables []string) func() txnop.Logic {
	return func() txnop.Logic { return hosttest.TxnLogic(nongrepsumop.New(), tables) }
}

// TestNonGrepSumStrategies runs small, contended NonGrepSum workloads with
// many non-deterministic operations and aborts, with every strategy,
// natively and in WebAssembly, and requires the serial run's commits,
// change sets, outputs and final state from each; the serial run must
// match the benchmark's reference semantics run one event after the other
// over a map (model).
func TestNonGrepSumStrategies(t *testing.T) {
	for _, c := range []struct {
		name          string
		length, reads int
		nonDet        float64
	}{
		{"short", 1, 2, 0.5},
		{"long", 3, 2, 0.3},
	} {
		t.Run(c.name, func(t *testing.T) {
			k, err := workload.Defaults(workload.NonGrepSum)
			if err != nil {
				t.Fatal(err)
			}
			k.Keys, k.Skew, k.AbortRatio, k.TxnLength, k.Reads, k.MultiReadRatio = 16, 0.6, 0.2, c.length, c.reads, 0.7
			k.NonDetRatio, k.BusyNanos, k.Seed = c.nonDet, 50, 9
			w := plugintest.NewTxnWorkload(t, workload.NonGrepSum, k, 300, 100)
			tr := plugintest.CheckStrategies(t, w, native(w.Tables))
			outs, final, nonDet := model(t, &w)
			if d := plugintest.DiffBatches("output", tr.Outputs, outs); d != "" {
				t.Errorf("outputs differ from the model's: %s", d)
			}
			if d := plugintest.DiffState(tr.Final, final); d != "" {
				t.Errorf("final state differs from the model's: %s", d)
			}
			aborted := 0
			for _, b := range tr.Committed {
				for _, c := range b {
					if !c {
						aborted++
					}
				}
			}
			if aborted == 0 || aborted == w.Events() || nonDet == 0 {
				t.Errorf("%d of %d events aborted, %d non-deterministic writes committed: the workload tests too little", aborted, w.Events(), nonDet)
			}
		})
	}
}

// TestNonGrepSumMalformed: an event that does not decode (here, an
// operation's key outside its key space) is dead-lettered with the
// decoder's reason, with every strategy, natively and in WebAssembly.
func TestNonGrepSumMalformed(t *testing.T) {
	k, err := workload.Defaults(workload.NonGrepSum)
	if err != nil {
		t.Fatal(err)
	}
	k.Keys, k.NonDetRatio, k.AbortRatio = 8, 0.5, 0.2
	w := plugintest.NewTxnWorkload(t, workload.NonGrepSum, k, 40, 20)
	bad := event.AppendEvent(nil, &event.Event{Keys: 8, Ops: []event.Op{{Key: 9, NonDet: true}}})
	plugintest.CheckMalformed(t, w, native(w.Tables), 3, bad, "op key")
}

// model runs w's events one after the other over a map, as
// txn/apps/nongrepsum/event specifies them, and returns the outputs (as
// plugintest.TxnTrace shows them), the final state and the number of
// non-deterministic operations committed whose target differs from their
// pointer key.
func model(t *testing.T, w *plugintest.TxnWorkload) ([][]string, txn.MapStore, int) {
	t.Helper()
	state := maps.Clone(w.Initial)
	key := func(k uint32) txn.Key { return txn.Key{Table: event.Table, Key: string(event.AppendKey(nil, k))} }
	get := func(k uint32) int64 {
		v, err := event.DecodeValue(state[key(k)])
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	var outs [][]string
	nonDet := 0
	for _, batch := range w.Batches {
		var bo []string
		for i, rec := range batch {
			e, err := event.DecodeEvent(rec.Value)
			if err != nil {
				t.Fatal(err)
			}
			r := grepsumop.Result{Committed: !e.Abort}
			if r.Committed {
				for _, op := range e.Ops {
					target := op.Key
					if op.NonDet {
						target = event.Target(get(op.Key), e.Keys)
						if target != op.Key {
							nonDet++
						}
					}
					v := get(target) + 1
					for _, k := range op.Reads {
						v += get(k)
					}
					state[key(target)] = event.AppendValue(nil, v)
					r.Writes = append(r.Writes, grepsumop.Write{Key: target, Value: v})
				}
			}
			bo = append(bo, fmt.Sprintf("%d %s %s", i, rec.Key, grepsumop.AppendResult(nil, &r)))
		}
		outs = append(outs, bo)
	}
	return outs, state, nonDet
}

// BenchmarkNonGrepSum runs MorphStream's NonGrepSum workload (122,880 keys,
// one operation reading four keys, uniform, 0.95% non-deterministic) in
// batches of 10,240 events with 2 workers, natively and in WebAssembly;
// ns/event is the figure to compare.
func BenchmarkNonGrepSum(b *testing.B) {
	k, err := workload.Defaults(workload.NonGrepSum)
	if err != nil {
		b.Fatal(err)
	}
	w := plugintest.NewTxnWorkload(b, workload.NonGrepSum, k, 4*10240, 10240)
	b.Run("native", func(b *testing.B) {
		plugintest.BenchTxn(b, w, plugintest.BenchStrategy, 2, native(w.Tables)())
	})
	b.Run("wasm", func(b *testing.B) {
		plugintest.BenchTxn(b, w, plugintest.BenchStrategy, 2, plugintest.TxnWasm(b, 2))
	})
}
