package window

import (
	"context"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/sluicehq/sluice/abi"
	"github.com/sluicehq/sluice/state"
)

// benchStream feeds batches of records over keys in event-time order: a
// record every step, keys in turn.
type benchStream struct {
	keys [][]byte
	step int64
	t    int64
	i    int
}

func newBenchStream(keys int, step time.Duration) *benchStream {
	s := &benchStream{step: int64(step), t: time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC).UnixNano()}
	for k := range keys {
		s.keys = append(s.keys, []byte("key-"+strconv.Itoa(k)))
	}
	return s
}

func (s *benchStream) fill(recs []abi.Record) {
	for j := range recs {
		recs[j] = abi.Record{Key: s.keys[s.i%len(s.keys)], Time: s.t, Value: []byte("1")}
		s.i++
		s.t += s.step
	}
}

// runBench adds b.N records in batches, firing and committing every
// batch with the watermark a second behind; with timeAdvance the firing
// is timed too.
func runBench(b *testing.B, spec Spec, fn Function, keys int, step time.Duration, timeAdvance bool) {
	const batch = 4096
	s, err := state.Open(filepath.Join(b.TempDir(), "state"), state.Options{KeyGroups: 16, Logger: quiet().Logger})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	op, err := New(spec, fn, s.Table("windows"))
	if err != nil {
		b.Fatal(err)
	}
	sess := s.NewSession()
	groups := make([]int, s.KeyGroups())
	for i := range groups {
		groups[i] = i
	}
	stream := newBenchStream(keys, step)
	recs := make([]abi.Record, batch)
	ctx := context.Background()
	results := 0
	emit := func(Result) { results++ }
	wm := int64(MinWatermark)
	b.ReportAllocs()
	b.ResetTimer()
	for done := 0; done < b.N; done += batch {
		n := min(batch, b.N-done)
		stream.fill(recs[:n])
		if _, err := op.Add(ctx, sess, recs[:n], wm, 0); err != nil {
			b.Fatal(err)
		}
		if !timeAdvance {
			b.StopTimer()
		}
		wm = stream.t - int64(time.Second)
		if err := op.Advance(ctx, sess, groups, wm, 0, emit); err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		if err := s.Commit(nil); err != nil {
			b.Fatal(err)
		}
		sess.Reset()
		b.StartTimer()
	}
	b.StopTimer()
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "records/s")
	b.ReportMetric(float64(results)/float64(b.N), "results/record")
}

func countFn(b *testing.B) Function {
	fn, err := Builtin("count", "")
	if err != nil {
		b.Fatal(err)
	}
	return fn
}

var benchSpecs = []struct {
	name string
	spec Spec
}{
	{"tumbling", Spec{Assigner: Tumbling, Size: time.Minute}},
	{"sliding60", Spec{Assigner: Sliding, Size: time.Minute, Slide: time.Second}},
	{"session", Spec{Assigner: Session, Gap: 30 * time.Second}},
}

// The two streams: sparse has 10,000 keys with a record a second each
// (every record of a sliding window opens a slice), dense 10,000 keys
// with 100 records a second each.
var benchStreams = []struct {
	name string
	keys int
	step time.Duration
}{
	{"sparse", 10_000, 100 * time.Microsecond},
	{"dense", 10_000, time.Microsecond},
}

// BenchmarkAdd measures Add per record (a built-in count, state in a
// Pebble-backed store): tumbling windows of a minute against sliding
// windows of a minute every second (size/slide = 60), and sessions.
func BenchmarkAdd(b *testing.B) {
	for _, st := range benchStreams {
		for _, c := range benchSpecs {
			b.Run(st.name+"/"+c.name, func(b *testing.B) { runBench(b, c.spec, countFn(b), st.keys, st.step, false) })
		}
	}
}

// BenchmarkAddAdvance measures Add and Advance per record, firings and
// purges included, on windows short enough to fire many times: 1,000
// keys with 100 records a second each, tumbling windows of 6 s against
// sliding windows of 6 s every 100 ms (size/slide = 60, which emit 60
// times as many results), and sessions with a gap of 3 s. Run it with
// -benchtime of a few million records: the first windows close after
// 600,000.
func BenchmarkAddAdvance(b *testing.B) {
	for _, c := range []struct {
		name string
		spec Spec
	}{
		{"tumbling", Spec{Assigner: Tumbling, Size: 6 * time.Second}},
		{"sliding60", Spec{Assigner: Sliding, Size: 6 * time.Second, Slide: 100 * time.Millisecond}},
		{"session", Spec{Assigner: Session, Gap: 3 * time.Second}},
	} {
		b.Run(c.name, func(b *testing.B) { runBench(b, c.spec, countFn(b), 1000, 10*time.Microsecond, true) })
	}
}
