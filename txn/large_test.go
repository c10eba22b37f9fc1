package txn_test

import (
	"context"
	"math/rand/v2"
	"testing"

	"github.com/sluicehq/sluice/txn"
)

// largeWorkload draws a batch big enough that the plan is built on the
// workers (the property tests' batches are planned on one thread), with
// skew, reads across tables, non-deterministic operations and aborts.
func largeWorkload(seed uint64, nTxns int, ndPct int) workload {
	r := rand.New(rand.NewPCG(seed, 1))
	const keySpace = 400
	w := workload{keySpace: keySpace, store: txn.MapStore{}}
	for tb := uint32(0); tb < 3; tb++ {
		for i := int64(0); i < keySpace+3; i++ {
			if r.IntN(4) > 0 {
				w.store[tkey(tb, i)] = enc(r.Int64N(101))
			}
		}
	}
	key := func() txn.Key {
		// Skewed: the minimum of two draws.
		return tkey(uint32(r.IntN(3)), min(r.Int64N(keySpace), r.Int64N(keySpace)))
	}
	w.batch = make([]txn.Txn, nTxns)
	for i := range w.batch {
		ops := make([]txn.Op, 1+r.IntN(4))
		for j := range ops {
			var op txn.Op
			if r.IntN(100) < ndPct {
				op.NonDet, op.Table, op.Fn = true, uint32(r.IntN(3)), fnNonDet|uint32(r.IntN(61))<<8
			} else {
				fn := []uint32{fnAdd, fnCondSub, fnDelete, fnKeep}[r.IntN(4)]
				op.Write, op.Fn = key(), fn|uint32(r.IntN(61))<<8
			}
			for n := r.IntN(4); n > 0; n-- {
				op.Reads = append(op.Reads, key())
			}
			ops[j] = op
		}
		w.batch[i].Ops = ops
	}
	return w
}

// TestLargeBatchesMatchSerial runs batches planned in parallel under every
// strategy on 2 to 4 workers against the serial executor.
func TestLargeBatchesMatchSerial(t *testing.T) {
	ctx := context.Background()
	oracle, _ := txn.ParseStrategy("serial")
	for _, ndPct := range []int{0, 1} {
		w := largeWorkload(uint64(7+ndPct), 1500, ndPct)
		if c, _ := txn.Analyze(w.batch); c.Ops < 2048 || (ndPct > 0) != (c.NonDet > 0) {
			t.Fatalf("workload: %+v", c)
		}
		apply := testApply(w.keySpace)
		ss := schedulers(t)
		want, err := ss[0].Run(ctx, oracle, w.batch, w.store, apply)
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range ss[1:] {
			for _, name := range txn.StrategyNames() {
				st, _ := txn.ParseStrategy(name)
				got, err := s.Run(ctx, st, w.batch, w.store, apply)
				if err != nil {
					t.Fatalf("%s, %d workers, %d%% non-deterministic: %v", name, s.Workers(), ndPct, err)
				}
				if d := same(w, want, got); d != "" {
					t.Fatalf("%s, %d workers, %d%% non-deterministic: %s", name, s.Workers(), ndPct, d)
				}
			}
		}
	}
}
