package txn_test

import (
	"context"
	"errors"
	"testing"

	"pgregory.net/rapid"

	"github.com/sluicehq/sluice/txn"
)

var errUnreadable = errors.New("unreadable")

// failingStore is a MapStore whose Get fails on one key.
type failingStore struct {
	txn.MapStore
	bad txn.Key
}

func (s failingStore) Get(k txn.Key) ([]byte, bool, error) {
	if k == s.bad {
		return nil, false, errUnreadable
	}
	return s.MapStore.Get(k)
}

// checkStoreError checks that a batch failed with the Store's error on bad.
func checkStoreError(res *txn.Result, err error, bad txn.Key) string {
	var se *txn.StoreError
	switch {
	case err == nil:
		return "no error, the unreadable key taken for a value"
	case res != nil:
		return "a result with the error"
	case !errors.Is(err, errUnreadable) || !errors.As(err, &se):
		return "error " + err.Error() + ", want one wrapping the Store's"
	case se.Key != bad:
		return "error names key " + se.Key.String() + ", want " + bad.String()
	}
	return ""
}

// TestStoreErrorFailsBatch: a Store error on a key a batch reads fails the
// batch under every strategy, the serial executor included, whether a
// deterministic operation declared the key (its own key or a read) or a
// non-deterministic one reached it through Get or Put; it is never taken
// for an absent key.
func TestStoreErrorFailsBatch(t *testing.T) {
	a, b, bad := k(0, "a"), k(0, "b"), k(0, "bad")
	getBad := txn.Op{NonDet: true, Table: 0, Fn: 1}
	putBad := txn.Op{NonDet: true, Table: 0, Fn: 2}
	apply := func(_, _ int, o *txn.Op, acc txn.Access) (txn.Effect, error) {
		switch o.Fn {
		case 1:
			if _, _, err := acc.Get(bad); err != nil {
				return txn.Effect{}, err
			}
		case 2:
			// The error fails the operation even if Apply drops it.
			_ = acc.Put(bad, []byte("x"))
		}
		return txn.Effect{Value: []byte("v")}, nil
	}
	cases := []struct {
		name  string
		batch []txn.Txn
	}{
		{"own key", []txn.Txn{tx(w(a)), tx(w(bad)), tx(w(b))}},
		{"declared read", []txn.Txn{tx(w(a)), tx(w(b, a, bad))}},
		{"non-deterministic Get", []txn.Txn{tx(w(a)), tx(getBad), tx(w(b))}},
		{"non-deterministic Put", []txn.Txn{tx(w(a)), tx(putBad)}},
	}
	store := failingStore{MapStore: txn.MapStore{a: []byte("1"), bad: []byte("2")}, bad: bad}
	for _, tc := range cases {
		for _, s := range schedulers(t) {
			for _, name := range txn.StrategyNames() {
				if tc.name == "non-deterministic Put" && (name == "serial" || name == "sstore") {
					continue // they read no key a Put writes: the commit meets it
				}
				st, err := txn.ParseStrategy(name)
				if err != nil {
					t.Fatal(err)
				}
				res, err := s.Run(context.Background(), st, tc.batch, store, apply)
				if d := checkStoreError(res, err, bad); d != "" {
					t.Errorf("%s, %s, %d workers: %s", tc.name, name, s.Workers(), d)
				}
			}
		}
	}
}

// TestStoreErrorFailsRandomBatch: on random batches, a Store failing on the
// first key the serial executor reads fails the batch under every strategy
// with that error, and the scheduler then runs the batch over a Store that
// does not fail to the oracle's result.
func TestStoreErrorFailsRandomBatch(t *testing.T) {
	ss := schedulers(t)
	oracle, _ := txn.ParseStrategy("serial")
	ctx := context.Background()
	rapid.Check(t, func(rt *rapid.T) {
		w := genWorkload(rt, false, 0)
		if len(w.batch) == 0 {
			return
		}
		apply := testApply(w.keySpace)
		clean, err := ss[0].Run(ctx, oracle, w.batch, w.store, apply)
		if err != nil {
			rt.Fatalf("oracle: %v", err)
		}
		// Transaction 0's first operation always runs, before any write.
		op := &w.batch[0].Ops[0]
		var bad txn.Key
		switch obs := clean.Observed(0, 0); {
		case !op.NonDet:
			bad = op.Write
		case len(op.Reads) > 0:
			bad = op.Reads[0]
		default:
			bad = obs.Gets[0].Key
		}
		store := failingStore{MapStore: w.store, bad: bad}
		for _, name := range txn.StrategyNames() {
			st, err := txn.ParseStrategy(name)
			if err != nil {
				rt.Fatal(err)
			}
			s := ss[rapid.IntRange(0, len(ss)-1).Draw(rt, "workers")]
			res, err := s.Run(ctx, st, w.batch, store, apply)
			if d := checkStoreError(res, err, bad); d != "" {
				rt.Fatalf("%s, %d workers, key %v: %s", name, s.Workers(), bad, d)
			}
			// The failed batch leaves nothing behind for the next one.
			got, err := s.Run(ctx, st, w.batch, w.store, apply)
			if err != nil {
				rt.Fatalf("%s, %d workers, after a Store error: %v", name, s.Workers(), err)
			}
			if d := same(w, clean, got); d != "" {
				rt.Fatalf("%s, %d workers, after a Store error: %s", name, s.Workers(), d)
			}
		}
	})
}
