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
	"github.com/sluicehq/sluice/txn"
	"github.com/sluicehq/sluice/txn/apps/grepsum/event"
	"github.com/sluicehq/sluice/txn/apps/workload"
)

func TestMain(m *testing.M) { os.Exit(plugintest.TxnMain(m)) }

// native returns a maker of native Logics of the operator over tables.
func native(tables []string) func() txnop.Logic {
	return func() txnop.Logic { return hosttest.TxnLogic(grepsumop.New(), tables) }
}

// TestGrepSumStrategies runs small, contended GrepSum workloads with every
// strategy, natively and in WebAssembly, and requires the serial run's
// commits, change sets, outputs and final state from each; the serial run
// must match the benchmark's reference semantics run one event after the
// other over a map (model).
func TestGrepSumStrategies(t *testing.T) {
	for _, acyclic := range []bool{false, true} {
		t.Run(fmt.Sprintf("acyclic=%v", acyclic), func(t *testing.T) {
			k, err := workload.Defaults(workload.GrepSum)
			if err != nil {
				t.Fatal(err)
			}
			k.Keys, k.Skew, k.AbortRatio, k.TxnLength, k.Reads, k.MultiReadRatio = 16, 0.6, 0.2, 3, 2, 0.7
			k.Acyclic, k.BusyNanos, k.Seed = acyclic, 50, 5
			w := plugintest.NewTxnWorkload(t, workload.GrepSum, k, 300, 100)
			tr := plugintest.CheckStrategies(t, w, native(w.Tables))
			outs, final := model(t, &w)
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
			if aborted == 0 || aborted == w.Events() {
				t.Errorf("%d of %d events aborted: the workload tests too little", aborted, w.Events())
			}
		})
	}
}

// TestGrepSumMalformed: an event that does not decode is dead-lettered
// with the decoder's reason, with every strategy, natively and in
// WebAssembly.
func TestGrepSumMalformed(t *testing.T) {
	k, err := workload.Defaults(workload.GrepSum)
	if err != nil {
		t.Fatal(err)
	}
	k.Keys, k.TxnLength, k.AbortRatio = 8, 2, 0.2
	w := plugintest.NewTxnWorkload(t, workload.GrepSum, k, 40, 20)
	plugintest.CheckMalformed(t, w, native(w.Tables), 3, []byte{event.Tag, 0x02}, "flags")
}

// model runs w's events one after the other over a map, as
// txn/apps/grepsum/event specifies them, and returns the outputs (as
// plugintest.TxnTrace shows them) and the final state.
func model(t *testing.T, w *plugintest.TxnWorkload) ([][]string, txn.MapStore) {
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
					v := get(op.Key)
					for _, k := range op.Reads {
						v += get(k)
					}
					state[key(op.Key)] = event.AppendValue(nil, v+1)
					r.Writes = append(r.Writes, grepsumop.Write{Key: op.Key, Value: v + 1})
				}
			}
			bo = append(bo, fmt.Sprintf("%d %s %s", i, rec.Key, grepsumop.AppendResult(nil, &r)))
		}
		outs = append(outs, bo)
	}
	return outs, state
}

// BenchmarkGrepSum runs MorphStream's GrepSum workload (12,288 keys, one
// operation reading one key, uniform, acyclic) in batches of 10,240 events
// with 2 workers, natively and in WebAssembly; ns/event is the figure to
// compare.
func BenchmarkGrepSum(b *testing.B) {
	k, err := workload.Defaults(workload.GrepSum)
	if err != nil {
		b.Fatal(err)
	}
	w := plugintest.NewTxnWorkload(b, workload.GrepSum, k, 4*10240, 10240)
	b.Run("native", func(b *testing.B) {
		plugintest.BenchTxn(b, w, plugintest.BenchStrategy, 2, native(w.Tables)())
	})
	b.Run("wasm", func(b *testing.B) {
		plugintest.BenchTxn(b, w, plugintest.BenchStrategy, 2, plugintest.TxnWasm(b, 2))
	})
}
