package memstore_test

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/sluicehq/sluice/txn"
	"github.com/sluicehq/sluice/txn/memstore"
)

// BenchmarkLookup measures loading a batch's keys (4,096 drawn uniformly,
// 8-digit keys and 8-byte values as Streaming Ledger's) from a table of
// 115,200 and of 11,520,000 keys: a txn.MapStore's Get, this store's Get,
// and its GetBatch with the hashes given, as the plan calls it. ns/op is
// per key.
func BenchmarkLookup(b *testing.B) {
	for _, n := range []int{115_200, 11_520_000} {
		ms, m := txn.MapStore{}, memstore.New()
		m.Reserve(0, n, 16)
		val := []byte("12345678")
		for i := range n {
			k := txn.Key{Key: fmt.Sprintf("%08d", i)}
			ms[k] = val
			m.Put(k, val)
		}
		r := rand.New(rand.NewPCG(1, 2))
		keys := make([]txn.Key, 4096)
		hashes := make([]uint64, len(keys))
		out := make([]txn.Value, len(keys))
		draw := func() {
			for i := range keys {
				keys[i] = txn.Key{Key: fmt.Sprintf("%08d", r.IntN(n))}
				hashes[i] = txn.KeyHash(m.Seed(), keys[i])
			}
		}
		run := func(b *testing.B, f func()) {
			for b.Loop() {
				b.StopTimer()
				draw()
				b.StartTimer()
				f()
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(keys)), "ns/key")
		}
		b.Run(fmt.Sprintf("keys=%d/store=map", n), func(b *testing.B) {
			run(b, func() {
				for i, k := range keys {
					v, ok, _ := ms.Get(k)
					out[i] = txn.Value{Bytes: v, Found: ok}
				}
			})
		})
		b.Run(fmt.Sprintf("keys=%d/store=memstore-get", n), func(b *testing.B) {
			run(b, func() {
				for i, k := range keys {
					v, ok, _ := m.Get(k)
					out[i] = txn.Value{Bytes: v, Found: ok}
				}
			})
		})
		b.Run(fmt.Sprintf("keys=%d/store=memstore-batch", n), func(b *testing.B) {
			run(b, func() { m.GetBatch(keys, hashes, out) })
		})
	}
}
