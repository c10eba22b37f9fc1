package sluice

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/sluicehq/sluice/abi"
)

// nopHost is a host that does nothing, so that benchmarks measure the SDK's
// decode, dispatch and encode loop alone.
type nopHost struct{ value []byte }

func (nopHost) Emit([]byte)                    {}
func (nopHost) Reject(uint32, string)          {}
func (nopHost) TableID(string) int32           { return abi.StatusNotFound }
func (nopHost) StatePut(int32, []byte, []byte) {}
func (nopHost) StateDelete(int32, []byte)      {}
func (nopHost) Log(int32, string)              {}
func (h nopHost) StateGet(_ int32, _, buf []byte) int32 {
	copy(buf, h.value)
	return int32(len(h.value))
}

// benchHandlers are the handlers of the benchmarks, by the name of the
// function that registers them: each returns or forwards its input, or for
// Keyed reads and writes its state.
var benchHandlers = []string{"Map", "MapInPlace", "Filter", "FlatMap", "Keyed"}

// benchGuest returns a guest running the handler called name (one of
// benchHandlers) and a batch of n records of 64 bytes (encoded size), as in
// the per-record figures of BENCHMARKS.md.
func benchGuest(name string, n int) (*guest, []byte) {
	var h *handlers
	switch name {
	case "Map":
		h = &handlers{kind: kindMap, mapFn: func(r Record) (Record, error) { return r, nil }}
	case "MapInPlace":
		h = &handlers{kind: kindMap, mapInPlaceFn: func(*Record) error { return nil }}
	case "Filter":
		h = &handlers{kind: kindFilter, filterFn: func(r Record) (bool, error) { return r.Value[0] != 0, nil }}
	case "FlatMap":
		h = &handlers{kind: kindFlatMap, flatMapFn: func(r Record, out *Emitter) error { out.Emit(r); return nil }}
	case "Keyed":
		h = &handlers{kind: kindKeyed, keyedFn: func(r Record, st *State, out *Emitter) error {
			v, _ := st.Get()
			st.Put(v)
			out.Emit(Record{Key: r.Key, Value: v, Time: r.Time})
			return nil
		}}
	default:
		panic("no handler " + name)
	}
	recs := make([]abi.Record, n)
	for i := range recs {
		// 4 size + 28 fixed + 8 key + 24 value = 64 bytes.
		recs[i] = abi.Record{Key: []byte(fmt.Sprintf("key%05d", i)), Value: bytes.Repeat([]byte{'v'}, 24), Time: int64(i)}
	}
	batch := encode(recs...)
	if got := abi.EncodedSize(&recs[0]); got != 64 {
		panic(fmt.Sprintf("record size %d, want 64", got))
	}
	return newGuest(h, nopHost{value: []byte("12345")}), batch
}

// BenchmarkProcess measures the SDK's per-record cost (ns/record) for each
// handler over a batch of 1024 records of 64 bytes, natively. Map,
// MapInPlace and Filter forward their unchanged records; BenchmarkWasmMap
// measures the same loop in WebAssembly, where the differences between
// handlers show.
func BenchmarkProcess(b *testing.B) {
	const n = 1024
	for _, name := range benchHandlers {
		b.Run(name, func(b *testing.B) {
			g, batch := benchGuest(name, n)
			b.SetBytes(int64(len(batch)))
			b.ReportAllocs()
			for b.Loop() {
				run(g, batch)
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/record")
		})
	}
}
