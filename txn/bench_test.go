package txn_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/sluicehq/sluice/txn"
	"github.com/sluicehq/sluice/txn/apps/grepsum"
	"github.com/sluicehq/sluice/txn/apps/ledger"
)

const (
	// benchBatch is MorphStream's punctuation: events per batch.
	benchBatch = 10240
	// benchBatches distinct batches are run in turn, so that each batch
	// finds in the caches no more of its keys and values than a stream of
	// fresh batches would leave there.
	benchBatches = 4
)

// benchCase is a workload: batches, the function of each, and the state.
type benchCase struct {
	batches [][]txn.Txn
	applies []txn.Apply
	store   txn.Store
}

// ledgerCase is Streaming Ledger as MorphStream measures it: 115,200 keys,
// 25% deposits, Zipf 0.25.
func ledgerCase(b *testing.B) benchCase {
	w, err := ledger.New(ledger.Config{Keys: 115200, DepositRatio: 0.25, Skew: 0.25, MaxAmount: 100, InitialBalance: 1000, Seed: 1})
	if err != nil {
		b.Fatal(err)
	}
	c := benchCase{store: w.Store()}
	for range benchBatches {
		events := w.Events(benchBatch)
		c.batches = append(c.batches, w.Plan(events, nil))
		c.applies = append(c.applies, ledger.Apply(events))
	}
	return c
}

// grepSumCase is acyclic GrepSum: 10,240 keys, 1 operation of 2 reads per
// transaction, Zipf 0.25, about 1µs of work per operation.
func grepSumCase(b *testing.B) benchCase {
	w, err := grepsum.New(grepsum.Config{Keys: 10240, Length: 1, Reads: 2, Skew: 0.25, Acyclic: true, Complexity: 1000, Seed: 1})
	if err != nil {
		b.Fatal(err)
	}
	c := benchCase{store: txn.MapStore{}}
	for range benchBatches {
		c.batches = append(c.batches, w.Batch(benchBatch))
		c.applies = append(c.applies, w.Apply)
	}
	return c
}

// BenchmarkLedger runs Streaming Ledger under every strategy on 1 and 2
// workers. Each iteration is one batch as a user of Run sees it: TPG
// construction, loading committed values, execution, abort handling and
// the result. Declaring the operations (the guest's plan step) is not timed.
func BenchmarkLedger(b *testing.B) { benchStrategies(b, ledgerCase(b)) }

// BenchmarkGrepSum runs acyclic GrepSum under every strategy on 1 and 2
// workers, one batch per iteration.
func BenchmarkGrepSum(b *testing.B) { benchStrategies(b, grepSumCase(b)) }

func benchStrategies(b *testing.B, c benchCase) {
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
				var sum txn.Breakdown
				var last *txn.Result
				n := 0
				for i := 0; b.Loop(); i++ {
					k := i % benchBatches
					res, err := s.Run(context.Background(), st, c.batches[k], c.store, c.applies[k])
					if err != nil {
						b.Fatal(err)
					}
					bd := res.Stats.Breakdown
					sum.Plan += bd.Plan
					sum.Explore += bd.Explore
					sum.Useful += bd.Useful
					sum.Abort += bd.Abort
					sum.Finish += bd.Finish
					n += len(c.batches[k])
					last = res
				}
				b.ReportMetric(float64(n)/b.Elapsed().Seconds(), "events/s")
				b.ReportMetric(float64(last.Stats.Aborted)/float64(len(last.Committed)), "abort-ratio")
				if st.Kind != txn.Serial && st.Kind != txn.SStore {
					per := func(d time.Duration) float64 { return d.Seconds() * 1e3 / float64(b.N) }
					b.ReportMetric(per(sum.Plan), "plan-ms")
					b.ReportMetric(per(sum.Explore), "explore-ms")
					b.ReportMetric(per(sum.Useful), "useful-ms")
					b.ReportMetric(per(sum.Abort), "abort-ms")
					b.ReportMetric(per(sum.Finish), "finish-ms")
					if last.Stats.Levels > 0 {
						b.ReportMetric(float64(last.Stats.Units)/float64(last.Stats.Levels), "units/level")
					}
				}
			})
		}
		s.Close()
	}
}

// BenchmarkScaling measures what a second worker buys: every iteration runs
// the same batch on a 1-worker and on a 2-worker Scheduler, one right after
// the other, so that a change in the machine's load hits both alike.
// speedup is the 1-worker time over the 2-worker time; events/s is the
// 2-worker throughput.
func BenchmarkScaling(b *testing.B) {
	cases := []struct {
		name       string
		c          func(*testing.B) benchCase
		strategies []string
	}{
		{"GrepSum", grepSumCase, []string{"ns-op-lazy", "ns-op-eager", "dfs-op-lazy", "bfs-op-lazy", "ns-chain-lazy", "tstream"}},
		{"Ledger", ledgerCase, []string{"ns-op-lazy", "dfs-op-eager", "bfs-op-lazy", "ns-chain-lazy"}},
	}
	for _, tc := range cases {
		c := tc.c(b)
		s1, err := txn.New(txn.Config{Workers: 1})
		if err != nil {
			b.Fatal(err)
		}
		s2, err := txn.New(txn.Config{Workers: 2})
		if err != nil {
			b.Fatal(err)
		}
		for _, name := range tc.strategies {
			st, err := txn.ParseStrategy(name)
			if err != nil {
				b.Fatal(err)
			}
			b.Run(tc.name+"/"+name, func(b *testing.B) {
				var d1, d2 time.Duration
				n := 0
				for i := 0; b.Loop(); i++ {
					k := i % benchBatches
					t0 := time.Now()
					if _, err := s1.Run(context.Background(), st, c.batches[k], c.store, c.applies[k]); err != nil {
						b.Fatal(err)
					}
					t1 := time.Now()
					if _, err := s2.Run(context.Background(), st, c.batches[k], c.store, c.applies[k]); err != nil {
						b.Fatal(err)
					}
					d1, d2 = d1+t1.Sub(t0), d2+time.Since(t1)
					n += len(c.batches[k])
				}
				b.ReportMetric(d1.Seconds()/d2.Seconds(), "speedup")
				b.ReportMetric(float64(n)/d2.Seconds(), "events/s")
			})
		}
		s1.Close()
		s2.Close()
	}
}

// BenchmarkAnalyze measures TPG construction alone on a Streaming Ledger
// batch, on one thread.
func BenchmarkAnalyze(b *testing.B) {
	c := ledgerCase(b)
	n := 0
	for i := 0; b.Loop(); i++ {
		batch := c.batches[i%benchBatches]
		if _, err := txn.Analyze(batch); err != nil {
			b.Fatal(err)
		}
		n += len(batch)
	}
	b.ReportMetric(float64(n)/b.Elapsed().Seconds(), "events/s")
}

// BenchmarkAnalyzeCost measures what Config.Analyze (counting the cycles
// between chains in every batch, for the adaptive strategy) adds to a
// Streaming Ledger batch under an operation-unit strategy: every iteration
// runs the same batch on a Scheduler without and one with it, one right
// after the other. overhead is the second's time over the first's, minus 1.
func BenchmarkAnalyzeCost(b *testing.B) {
	c := ledgerCase(b)
	st, _ := txn.ParseStrategy("ns-op-eager")
	plain, err := txn.New(txn.Config{Workers: 2})
	if err != nil {
		b.Fatal(err)
	}
	defer plain.Close()
	analyzing, err := txn.New(txn.Config{Workers: 2, Analyze: true})
	if err != nil {
		b.Fatal(err)
	}
	defer analyzing.Close()
	var t0, t1 time.Duration
	for i := 0; b.Loop(); i++ {
		k := i % benchBatches
		for j, s := range []*txn.Scheduler{plain, analyzing} {
			start := time.Now()
			if _, err := s.Run(context.Background(), st, c.batches[k], c.store, c.applies[k]); err != nil {
				b.Fatal(err)
			}
			if j == 0 {
				t0 += time.Since(start)
			} else {
				t1 += time.Since(start)
			}
		}
	}
	b.ReportMetric(t1.Seconds()/t0.Seconds()-1, "overhead")
}

// BenchmarkWindowedGrepSum runs Windowed GrepSum (a window event every 1,024
// transactions, whose operation reads the window of the last 1,024
// transactions of its key and two others: MorphStream's defaults) side by
// side with the plain GrepSum it is drawn from, under every strategy on 2
// workers: each iteration runs one batch of each, one right after the
// other, so that a change in the machine's load hits both alike. The
// History holds the versions of the batch before, so that the windows reach
// back across the batch boundary. windowed/plain is the ratio of their
// rates.
func BenchmarkWindowedGrepSum(b *testing.B) {
	const window = 1024
	plain := grepSumCase(b)
	w, err := grepsum.New(grepsum.Config{Keys: 10240, Length: 1, Reads: 2, Skew: 0.25, Acyclic: true, Complexity: 1000, Seed: 1,
		Window: window, Period: window})
	if err != nil {
		b.Fatal(err)
	}
	hist, err := txn.NewHistory(txn.MapStore{}, window)
	if err != nil {
		b.Fatal(err)
	}
	s, err := txn.New(txn.Config{Workers: 2})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	serial, _ := txn.ParseStrategy("serial")
	res, err := s.Run(ctx, serial, w.Batch(benchBatch), hist, w.Apply)
	if err != nil {
		b.Fatal(err)
	}
	hist.Commit(res)
	windowed := benchCase{store: hist}
	for range benchBatches {
		windowed.batches = append(windowed.batches, w.Batch(benchBatch))
		windowed.applies = append(windowed.applies, w.Apply)
	}
	for _, name := range txn.StrategyNames() {
		st, _ := txn.ParseStrategy(name)
		b.Run(name+"/w2", func(b *testing.B) {
			var tp, tw time.Duration
			n := 0
			run := func(c benchCase, k int) time.Duration {
				t0 := time.Now()
				if _, err := s.Run(ctx, st, c.batches[k], c.store, c.applies[k]); err != nil {
					b.Fatal(err)
				}
				return time.Since(t0)
			}
			for i := 0; b.Loop(); i++ {
				k := i % benchBatches
				tp += run(plain, k)
				tw += run(windowed, k)
				n += benchBatch
			}
			b.ReportMetric(float64(n)/tp.Seconds(), "plain-events/s")
			b.ReportMetric(float64(n)/tw.Seconds(), "windowed-events/s")
			b.ReportMetric(tp.Seconds()/tw.Seconds(), "windowed/plain")
		})
	}
}
