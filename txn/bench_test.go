package txn_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/sluicehq/sluice/txn"
	"github.com/sluicehq/sluice/txn/apps/grepsum"
	"github.com/sluicehq/sluice/txn/apps/ledger"
)

const benchBatch = 10240

// BenchmarkLedger runs Streaming Ledger (115,200 keys, 25% deposits, Zipf
// 0.25, batches of 10,240 events) under every strategy on 1 and 2 workers.
// Each iteration is one batch: TPG construction, execution, abort handling
// and the change set. Planning the operations (the guest's job) is not timed.
func BenchmarkLedger(b *testing.B) {
	w, err := ledger.New(ledger.Config{Keys: 115200, DepositRatio: 0.25, Skew: 0.25, MaxAmount: 100, InitialBalance: 1000, Seed: 1})
	if err != nil {
		b.Fatal(err)
	}
	store := w.Store()
	events := w.Events(benchBatch)
	batch := w.Plan(events, nil)
	apply := ledger.Apply(events)
	benchStrategies(b, batch, store, apply)
}

// BenchmarkGrepSum runs acyclic GrepSum (10,240 keys, 1 operation of 2
// reads per transaction, Zipf 0.25) with about 1µs of work per operation.
func BenchmarkGrepSum(b *testing.B) {
	w, err := grepsum.New(grepsum.Config{Keys: 10240, Length: 1, Reads: 2, Skew: 0.25, Acyclic: true, Complexity: 1000, Seed: 1})
	if err != nil {
		b.Fatal(err)
	}
	benchStrategies(b, w.Batch(benchBatch), txn.MapStore{}, w.Apply)
}

func benchStrategies(b *testing.B, batch []txn.Txn, store txn.Store, apply txn.Apply) {
	for _, workers := range []int{1, 2} {
		s, err := txn.New(txn.Config{Workers: workers})
		if err != nil {
			b.Fatal(err)
		}
		for _, name := range txn.StrategyNames() {
			st, _ := txn.ParseStrategy(name)
			if st.Kind == txn.Serial && workers > 1 {
				continue
			}
			b.Run(fmt.Sprintf("%s/w%d", name, workers), func(b *testing.B) {
				var last *txn.Result
				for b.Loop() {
					res, err := s.Run(context.Background(), st, batch, store, apply)
					if err != nil {
						b.Fatal(err)
					}
					last = res
				}
				b.ReportMetric(float64(len(batch)*b.N)/b.Elapsed().Seconds(), "events/s")
				b.ReportMetric(float64(last.Stats.Aborted)/float64(len(batch)), "abort-ratio")
				if b.N > 0 && st.Kind != txn.Serial && st.Kind != txn.SStore {
					bd := last.Stats.Breakdown
					b.ReportMetric(bd.Plan.Seconds()*1e3, "plan-ms")
					b.ReportMetric(bd.Explore.Seconds()*1e3, "explore-ms")
					b.ReportMetric(bd.Useful.Seconds()*1e3, "useful-ms")
					b.ReportMetric(bd.Abort.Seconds()*1e3, "abort-ms")
					b.ReportMetric(bd.Finish.Seconds()*1e3, "finish-ms")
					b.ReportMetric(float64(last.Stats.Units)/float64(max(last.Stats.Levels, 1)), "units/level")
				}
			})
		}
		s.Close()
	}
}

// BenchmarkAnalyze measures TPG construction alone on a Streaming Ledger batch.
func BenchmarkAnalyze(b *testing.B) {
	w, err := ledger.New(ledger.Config{Keys: 115200, DepositRatio: 0.25, Skew: 0.25, MaxAmount: 100, InitialBalance: 1000, Seed: 1})
	if err != nil {
		b.Fatal(err)
	}
	batch := w.Plan(w.Events(benchBatch), nil)
	for b.Loop() {
		if _, err := txn.Analyze(batch); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(len(batch)*b.N)/b.Elapsed().Seconds(), "events/s")
}
