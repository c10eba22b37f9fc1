package memstore_test

import (
	"context"
	"errors"
	"hash/maphash"
	"reflect"
	"strconv"
	"testing"

	"pgregory.net/rapid"

	"github.com/sluicehq/sluice/txn"
	"github.com/sluicehq/sluice/txn/memstore"
)

// transfers draws a batch of transfers between nKeys accounts of two
// tables (each operation credits one key and reads another, as Streaming
// Ledger's do), and returns it with its function: a transfer of 1 that
// aborts when the source holds less than 3, so that aborts depend on the
// committed values the plan loaded.
func transfers(rt *rapid.T, nKeys int) ([]txn.Txn, txn.Apply) {
	key := func(label string) txn.Key {
		return txn.Key{Table: uint32(rapid.IntRange(0, 1).Draw(rt, label+"T")), Key: strconv.Itoa(rapid.IntRange(0, nKeys).Draw(rt, label))}
	}
	batch := make([]txn.Txn, rapid.IntRange(1, 300).Draw(rt, "txns"))
	for i := range batch {
		src, dst := key("src"), key("dst")
		batch[i].Ops = []txn.Op{{Write: dst, Reads: []txn.Key{src}, Fn: 1}, {Write: src}}
	}
	apply := func(_, _ int, o *txn.Op, a txn.Access) (txn.Effect, error) {
		own, _ := a.Own()
		bal, _ := strconv.Atoi(string(own))
		src := bal
		if o.Fn == 1 {
			v, _ := a.Read(0)
			src, _ = strconv.Atoi(string(v))
		}
		if src < 3 {
			return txn.Effect{Abort: true}, nil
		}
		if o.Fn == 1 {
			return txn.Effect{Value: []byte(strconv.Itoa(bal + 1))}, nil
		}
		return txn.Effect{Value: []byte(strconv.Itoa(bal - 1))}, nil
	}
	return batch, apply
}

// TestSchedulerOverStores runs random batches over a txn.MapStore and over
// a Store holding the same keys (loaded through GetBatch) with every
// strategy on 1 and 3 workers, batches large enough to plan in parallel
// among them, and requires the same commits, change sets and values read.
func TestSchedulerOverStores(t *testing.T) {
	ctx := context.Background()
	var ss []*txn.Scheduler
	for _, w := range []int{1, 3} {
		s, err := txn.New(txn.Config{Workers: w})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		ss = append(ss, s)
	}
	rapid.Check(t, func(rt *rapid.T) {
		nKeys := rapid.IntRange(1, 2000).Draw(rt, "keys")
		batch, apply := transfers(rt, nKeys)
		ms, m := txn.MapStore{}, memstore.New()
		for tb := range uint32(2) {
			for i := range nKeys {
				if rapid.IntRange(0, 5).Draw(rt, "present") > 0 {
					k, v := txn.Key{Table: tb, Key: strconv.Itoa(i)}, []byte(strconv.Itoa(rapid.IntRange(0, 6).Draw(rt, "bal")))
					ms[k] = v
					m.Put(k, v)
				}
			}
		}
		for _, name := range txn.StrategyNames() {
			st, _ := txn.ParseStrategy(name)
			s := ss[rapid.IntRange(0, 1).Draw(rt, "scheduler")]
			want, err := s.Run(ctx, st, batch, ms, apply)
			if err != nil {
				rt.Fatal(err)
			}
			got, err := s.Run(ctx, st, batch, m, apply)
			if err != nil {
				rt.Fatal(err)
			}
			if !reflect.DeepEqual(want.Committed, got.Committed) || !reflect.DeepEqual(want.Changes, got.Changes) {
				rt.Fatalf("%s, %d workers: commits or changes differ:\n%v %v\n%v %v", name, s.Workers(), want.Committed, want.Changes, got.Committed, got.Changes)
			}
			for i := range batch {
				for j := range batch[i].Ops {
					if w, g := want.Observed(i, j), got.Observed(i, j); !reflect.DeepEqual(w, g) {
						rt.Fatalf("%s: transaction %d op %d read %+v, want %+v", name, i, j, g, w)
					}
				}
			}
		}
	})
}

// failing is a BatchStore whose GetBatch fails on one key.
type failing struct {
	*memstore.Store
	bad txn.Key
}

var errDisk = errors.New("disk on fire")

func (f failing) GetBatch(keys []txn.Key, hashes []uint64, out []txn.Value) (int, error) {
	for i, k := range keys {
		if k == f.bad {
			return i, errDisk
		}
	}
	return f.Store.GetBatch(keys, hashes, out)
}

func (f failing) Seed() maphash.Seed { return f.Store.Seed() }

// TestGetBatchError checks that a BatchStore's error fails the batch with
// a *txn.StoreError naming the key that failed, on 1 and 2 workers, with
// batches small and large enough to plan in parallel.
func TestGetBatchError(t *testing.T) {
	ctx := context.Background()
	for _, workers := range []int{1, 2} {
		s, err := txn.New(txn.Config{Workers: workers})
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		for _, n := range []int{10, 5000} {
			batch := make([]txn.Txn, n)
			for i := range batch {
				batch[i].Ops = []txn.Op{{Write: txn.Key{Key: strconv.Itoa(i)}}}
			}
			bad := txn.Key{Key: strconv.Itoa(n / 2)}
			st, _ := txn.ParseStrategy("ns-op-eager")
			_, err := s.Run(ctx, st, batch, failing{memstore.New(), bad}, func(int, int, *txn.Op, txn.Access) (txn.Effect, error) {
				return txn.Effect{}, nil
			})
			var se *txn.StoreError
			if !errors.As(err, &se) || se.Key != bad || !errors.Is(err, errDisk) {
				t.Errorf("%d workers, %d transactions: error %v, want a StoreError for %v", workers, n, err, bad)
			}
		}
	}
}
