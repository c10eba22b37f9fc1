package main

import (
	"fmt"
	"maps"
	"os"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/host/plugin/hosttest"
	"github.com/sluicehq/sluice/host/txnop"
	"github.com/sluicehq/sluice/plugins/internal/plugintest"
	"github.com/sluicehq/sluice/plugins/toll/tollop"
	"github.com/sluicehq/sluice/txn"
	"github.com/sluicehq/sluice/txn/apps/toll/event"
	"github.com/sluicehq/sluice/txn/apps/workload"
)

func TestMain(m *testing.M) { os.Exit(plugintest.TxnMain(m)) }

// native returns a maker of native Logics of the operator over tables.
func native(tables []string) func() txnop.Logic {
	return func() txnop.Logic { return hosttest.TxnLogic(tollop.New(), tables) }
}

// TestTollStrategies runs a small, contended Toll Processing workload with
// invalid reports with every strategy, natively and in WebAssembly, and
// requires the serial run's commits, change sets, outputs and final state
// from each; the serial run must match the reports applied one after the
// other over maps (model), and its counts stay bounded: a segment's
// distinct vehicles never exceed the vehicle population nor its valid
// reports, which its statistics count exactly.
func TestTollStrategies(t *testing.T) {
	k, err := workload.Defaults(workload.TollProcessing)
	if err != nil {
		t.Fatal(err)
	}
	k.Keys, k.Skew, k.AbortRatio, k.BusyNanos, k.Seed = 8, 0.5, 0.2, 50, 11
	w := plugintest.NewTxnWorkload(t, workload.TollProcessing, k, 400, 100)
	tr := plugintest.CheckStrategies(t, w, native(w.Tables))
	outs, final, reports := model(t, &w)
	if d := plugintest.DiffBatches("output", tr.Outputs, outs); d != "" {
		t.Errorf("outputs differ from the model's: %s", d)
	}
	if d := plugintest.DiffState(tr.Final, final); d != "" {
		t.Errorf("final state differs from the model's: %s", d)
	}
	seen := map[string]int{} // valid reports so far, by segment
	aborted := 0
	for b, batch := range w.Batches {
		for i, line := range tr.Outputs[b] {
			r, err := tollop.ParseResult([]byte(strings.SplitN(line, " ", 3)[2]))
			if err != nil {
				t.Fatal(err)
			}
			if !r.Committed {
				aborted++
				continue
			}
			seg := string(batch[i].Key)
			seen[seg]++
			if r.Vehicles < 1 || r.Vehicles > min(event.Vehicles, seen[seg]) {
				t.Errorf("batch %d event %d: %d vehicles after %d valid reports: %q", b, i, r.Vehicles, seen[seg], line)
			}
			if r.Average < event.MinSpeed || r.Average > event.MaxSpeed {
				t.Errorf("batch %d event %d: average speed %v outside the speeds reported", b, i, r.Average)
			}
		}
	}
	for key, v := range tr.Final {
		if key.Table != event.Speeds {
			continue
		}
		s, err := event.DecodeSpeedStats(v)
		if err != nil {
			t.Fatal(err)
		}
		if s.Count != uint64(reports[key.Key]) {
			t.Errorf("segment %s counts %d reports, want %d", key.Key, s.Count, reports[key.Key])
		}
	}
	if aborted == 0 || aborted == w.Events() {
		t.Errorf("%d of %d reports aborted: the workload tests too little", aborted, w.Events())
	}
}

// TestTollMalformed: an event that does not decode (here, a vehicle
// outside the population) is dead-lettered with the decoder's reason, with
// every strategy, natively and in WebAssembly.
func TestTollMalformed(t *testing.T) {
	k, err := workload.Defaults(workload.TollProcessing)
	if err != nil {
		t.Fatal(err)
	}
	k.Keys, k.AbortRatio = 8, 0.2
	w := plugintest.NewTxnWorkload(t, workload.TollProcessing, k, 40, 20)
	bad := event.AppendEvent(nil, &event.Event{Segment: 1, Vehicle: event.Vehicles, Speed: 100})
	plugintest.CheckMalformed(t, w, native(w.Tables), 3, bad, "vehicle")
}

// model applies w's reports one after the other over maps, as
// txn/apps/toll/event specifies them, and returns the outputs (as
// plugintest.TxnTrace shows them), the final state and the number of
// valid reports by segment key.
func model(t *testing.T, w *plugintest.TxnWorkload) ([][]string, txn.MapStore, map[string]int) {
	t.Helper()
	state := maps.Clone(w.Initial)
	reports := map[string]int{}
	var outs [][]string
	for _, batch := range w.Batches {
		var bo []string
		for i, rec := range batch {
			e, err := event.DecodeEvent(rec.Value)
			if err != nil {
				t.Fatal(err)
			}
			r := tollop.Result{Committed: e.Valid()}
			if r.Committed {
				seg := string(event.AppendKey(nil, e.Segment))
				sk, vk := txn.Key{Table: event.Speeds, Key: seg}, txn.Key{Table: event.Counts, Key: seg}
				s, err := event.DecodeSpeedStats(state[sk])
				if err != nil {
					t.Fatal(err)
				}
				v, err := event.DecodeVehicleSet(state[vk])
				if err != nil {
					t.Fatal(err)
				}
				s.Add(e.Speed)
				v.Add(e.Vehicle)
				state[sk], state[vk] = event.AppendSpeedStats(nil, s), event.AppendVehicleSet(nil, &v)
				reports[seg]++
				r.Average, r.Vehicles = s.Average(), v.Count()
			}
			bo = append(bo, fmt.Sprintf("%d %s %s", i, rec.Key, tollop.AppendResult(nil, &r)))
		}
		outs = append(outs, bo)
	}
	return outs, state, reports
}

// BenchmarkToll runs MorphStream's Toll Processing workload (495,120
// segments, skew 0.2) in batches of 10,240 events with 2 workers, natively
// and in WebAssembly; ns/event is the figure to compare.
func BenchmarkToll(b *testing.B) {
	k, err := workload.Defaults(workload.TollProcessing)
	if err != nil {
		b.Fatal(err)
	}
	w := plugintest.NewTxnWorkload(b, workload.TollProcessing, k, 4*10240, 10240)
	b.Run("native", func(b *testing.B) {
		plugintest.BenchTxn(b, w, plugintest.BenchStrategy, 2, native(w.Tables)())
	})
	b.Run("wasm", func(b *testing.B) {
		plugintest.BenchTxn(b, w, plugintest.BenchStrategy, 2, plugintest.TxnWasm(b, 2))
	})
}
