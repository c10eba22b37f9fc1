package plugin

import (
	"bytes"
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/sluicehq/sluice/abi"
)

// lowerBatch returns n records with 64-byte lower-case values.
func lowerBatch(n int) []abi.Record {
	in := make([]abi.Record, n)
	for i := range in {
		v := bytes.Repeat([]byte("abcdefgh"), 8)
		v[0] = 'a' + byte(i%26)
		in[i] = abi.Record{Time: int64(i), Key: fmt.Appendf(nil, "key-%d", i), Value: v}
	}
	return in
}

func checkUpper(t testing.TB, in []abi.Record, out *Output) {
	t.Helper()
	if len(out.Records) != len(in) || len(out.Rejects) != 0 {
		t.Fatalf("%d records, %d rejects from %d inputs", len(out.Records), len(out.Rejects), len(in))
	}
	for i, r := range out.Records {
		if r.Origin != uint32(i) || !bytes.Equal(r.Value, bytes.ToUpper(in[i].Value)) || !bytes.Equal(r.Key, in[i].Key) {
			t.Fatalf("record %d = %q %q origin %d", i, r.Key, r.Value, r.Origin)
		}
	}
}

func TestUpperGuest(t *testing.T) {
	f := newFixture(t, fixtureConfig{guest: "upper"})
	in := lowerBatch(300)
	var out Output
	if err := f.inst.Process(context.Background(), in, nil, &out); err != nil {
		t.Fatal(err)
	}
	checkUpper(t, in, &out)
}

// TestProcessAllocationsDoNotGrowWithBatch asserts the hot path's promise:
// after warm-up, a batch costs a constant number of allocations, whatever its
// size. Without a call timeout the engine allocates nothing per call, so what
// is left is this package's own: the one context.WithValue of the call. With
// a timeout, the engine adds a deadline context and wazero's watcher per
// guest call (two calls per batch: sluice_alloc and sluice_process).
func TestProcessAllocationsDoNotGrowWithBatch(t *testing.T) {
	if raceEnabled {
		t.Skip("allocation counts are not meaningful under the race detector")
	}
	for _, tc := range []struct {
		name    string
		timeout time.Duration
		bound   float64
	}{
		{"no timeout", -1, 1},
		{"timeout", 0, 24},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, fixtureConfig{guest: "upper", timeout: tc.timeout})
			allocs := func(n int) float64 {
				in := lowerBatch(n)
				var out Output
				run := func() {
					out.Reset()
					if err := f.inst.Process(context.Background(), in, nil, &out); err != nil {
						t.Fatal(err)
					}
				}
				for range 3 {
					run() // grow the buffers of host and guest
				}
				checkUpper(t, in, &out)
				return testing.AllocsPerRun(20, run)
			}
			small, large := allocs(1), allocs(1024)
			t.Logf("allocations per Process: %.1f for 1 record, %.1f for 1024", small, large)
			if large > small+1 {
				t.Errorf("a batch of 1024 records allocates %.1f times, 1 record %.1f: allocation grows with the batch", large, small)
			}
			if large > tc.bound {
				t.Errorf("a batch allocates %.1f times, over the bound of %v", large, tc.bound)
			}
		})
	}
}

// TestInstancesInParallel runs one instance per goroutine from one Plugin,
// as workers do; run it with -race.
func TestInstancesInParallel(t *testing.T) {
	f := newFixture(t, fixtureConfig{guest: "upper"})
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx := context.Background()
			inst, err := f.p.NewInstance(ctx, nil)
			if err != nil {
				t.Error(err)
				return
			}
			defer func() { _ = inst.Close(ctx) }()
			var out Output
			for i := range 20 {
				in := lowerBatch(1 + (w*20+i)%50)
				out.Reset()
				if err := inst.Process(ctx, in, nil, &out); err != nil {
					t.Error(err)
					return
				}
				checkUpper(t, in, &out)
			}
		}()
	}
	wg.Wait()
}

// BenchmarkProcessMap measures a batched map (the upper-casing guest) over
// 64-byte values; ns/record is the figure to read against those in
// BENCHMARKS.md. timeout=on is the engine as deployed (a call timeout, which
// makes wazero check for cancellation in guest loops and calls);
// timeout=off shows what that checking costs.
func BenchmarkProcessMap(b *testing.B) {
	for _, timeout := range []struct {
		name string
		d    time.Duration
	}{{"on", 0}, {"off", -1}} {
		for _, n := range []int{1, 64, 256, 1024} {
			b.Run(fmt.Sprintf("timeout=%s/batch=%d", timeout.name, n), func(b *testing.B) {
				f := newFixture(b, fixtureConfig{guest: "upper", timeout: timeout.d})
				in := lowerBatch(n)
				var out Output
				ctx := context.Background()
				b.ReportAllocs()
				for b.Loop() {
					out.Reset()
					if err := f.inst.Process(ctx, in, nil, &out); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/record")
			})
		}
	}
}

// BenchmarkProcessKeyed measures a keyed counter over a batch of 256
// records: per record, state_get and state_put (two host calls) and an emit
// share. The State is a lean map that allocates nothing once its keys exist,
// so the figure is the plugin's, not the fake's.
func BenchmarkProcessKeyed(b *testing.B) {
	f := newFixture(b, fixtureConfig{kind: KindKeyed})
	vals := make([]string, 256)
	for i := range vals {
		vals[i] = "count"
	}
	in := records(vals...)
	st := benchState{}
	var out Output
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		out.Reset()
		if err := f.inst.Process(ctx, in, st, &out); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(in)), "ns/record")
}

// benchState is a single-table State without savepoints (rollback is never
// needed by the benchmark); values are updated in place.
type benchState map[string]*[]byte

func (s benchState) TableID(string) (int32, bool) { return 0, true }

func (s benchState) Get(_ int32, key []byte) ([]byte, bool, error) {
	if v, ok := s[string(key)]; ok {
		return *v, true, nil
	}
	return nil, false, nil
}

func (s benchState) Put(_ int32, key, value []byte) error {
	if v, ok := s[string(key)]; ok {
		*v = append((*v)[:0], value...)
		return nil
	}
	v := append([]byte(nil), value...)
	s[string(key)] = &v
	return nil
}

func (s benchState) Delete(_ int32, key []byte) error {
	delete(s, string(key))
	return nil
}

func (s benchState) Savepoint() int { return 0 }
func (s benchState) RollbackTo(int) {}
