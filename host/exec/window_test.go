package exec

import (
	"cmp"
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"pgregory.net/rapid"

	"github.com/sluicehq/sluice/abi"
	"github.com/sluicehq/sluice/connectors"
	"github.com/sluicehq/sluice/host/plugin"
	"github.com/sluicehq/sluice/host/window"
)

// windowed is a stream for a windowed count: records of a few keys whose
// times mostly grow, some behind by up to the watermark's bound and some
// by more (late).
type windowed struct {
	recs  []abi.Record
	size  time.Duration // tumbling window
	bound time.Duration // out-of-orderness the watermark allows
}

func genWindowed(t *rapid.T) windowed {
	size := time.Duration(rapid.IntRange(2, 20).Draw(t, "size")) * time.Second
	bound := time.Duration(rapid.IntRange(0, 5).Draw(t, "bound")) * time.Second
	n := rapid.IntRange(0, 120).Draw(t, "records")
	base := int64(1_700_000_000) * int64(time.Second)
	now := base
	recs := make([]abi.Record, n)
	for i := range recs {
		now += int64(rapid.IntRange(0, 3000).Draw(t, "step")) * int64(time.Millisecond)
		ts := now - int64(rapid.IntRange(0, 8000).Draw(t, "behind"))*int64(time.Millisecond)*int64(rapid.IntRange(0, 1).Draw(t, "out of order"))
		k := fmt.Sprintf("k%d", rapid.IntRange(0, 3).Draw(t, "key"))
		if k == "k3" {
			k = strings.Repeat("a key too long to stand in an id as it is ", 2) // hashed in ids
		}
		recs[i] = abi.Record{Key: []byte(k), Value: []byte(fmt.Sprint(i)), Time: ts}
	}
	return windowed{recs: recs, size: size, bound: bound}
}

// oracle returns the counts per key and window that a record-by-record
// run gives (each record judged against the watermark when it arrives,
// every window fired once at the end of input), as "key start end count"
// lines in order, and the indexes of the late records.
func (w windowed) oracle() ([]string, []int) {
	counts := map[string]int{}
	var late []int
	maxSeen, seen := int64(math.MinInt64), false
	size := int64(w.size)
	for i, r := range w.recs {
		wm := int64(math.MinInt64)
		if seen {
			wm = maxSeen - int64(w.bound) - 1
		}
		start := r.Time - ((r.Time%size)+size)%size
		if start+size-1 <= wm {
			late = append(late, i)
		} else {
			counts[fmt.Sprintf("%s %d %d", r.Key, start, start+size)]++
		}
		if !seen || r.Time > maxSeen {
			maxSeen, seen = r.Time, true
		}
	}
	var lines []string
	for k, n := range counts {
		lines = append(lines, fmt.Sprintf("%s %d", k, n))
	}
	slices.Sort(lines)
	return lines, late
}

// countLines reads the built-in count's outputs as oracle lines.
func countLines(t interface{ Fatalf(string, ...any) }, outs []connectors.Out) []string {
	var lines []string
	for _, o := range outs {
		var v struct {
			Key        string
			Start, End int64
			Count      int
		}
		if err := json.Unmarshal(o.Record.Value, &v); err != nil {
			t.Fatalf("output %q: %v", o.Record.Value, err)
		}
		if o.Record.Time != v.End-1 {
			t.Fatalf("output %q has time %d, want its window's end - 1", o.Record.Value, o.Record.Time)
		}
		lines = append(lines, fmt.Sprintf("%s %d %d %d", v.Key, v.Start, v.End, v.Count))
	}
	slices.Sort(lines)
	return lines
}

// runCount runs a windowed count of w in batches of batch records on
// workers workers and returns the outputs and late records.
func runCount(t interface {
	tb
	Fatalf(string, ...any)
}, dir string, w windowed, batch, workers int) (outs, late []connectors.Out) {
	store := openStore(t, dir)
	defer store.Close()
	fn := builtinCount(t)
	sink, dead, lateSink := &memSink{}, &memSink{}, &memSink{}
	job, err := New(context.Background(), Config{
		Name: "p", Sources: []Input{{Name: "in", Source: &sliceSource{recs: w.recs, chunk: batch},
			Watermark: &window.WatermarkStrategy{Kind: window.BoundedOutOfOrder, Bound: w.bound}}},
		Operators: []Operator{{Name: "count", Kind: plugin.KindAggregate, Parallelism: workers,
			Window: &Window{Spec: window.Spec{Assigner: window.Tumbling, Size: w.size}, Function: fn}}},
		Sinks: []Output{{Name: "out", Sink: sink}}, DeadLetter: dead, Late: lateSink, Store: store, BatchSize: batch,
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := job.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	if d := dead.records(); len(d) > 0 {
		t.Fatalf("dead letters: %v", header(d[0].Record, HeaderError))
	}
	// One output per firing; every window fired at the end of input.
	m := job.m
	if fired, open, late := testutil.ToFloat64(m.windowsFired.WithLabelValues("count")), testutil.ToFloat64(m.windowsOpen.WithLabelValues("count")),
		testutil.ToFloat64(m.opLate.WithLabelValues("count")); int(fired) != len(sink.records()) || open != 0 || int(late) != len(lateSink.records()) {
		t.Fatalf("metrics: %v firings, %v slices open, %v late; want %d, 0, %d", fired, open, late, len(sink.records()), len(lateSink.records()))
	}
	// The status says the same, and each source's watermark.
	st := job.Status()
	if ow := st.Operators[0].Window; ow == nil || ow.Firings != uint64(len(sink.records())) || ow.OpenSlices != 0 || ow.Late != uint64(len(lateSink.records())) {
		t.Fatalf("status: window %+v; want %d firings, 0 slices open, %d late", ow, len(sink.records()), len(lateSink.records()))
	}
	if len(st.Sources) != 1 || st.Sources[0].Name != "in" {
		t.Fatalf("status: sources %+v; want one, in", st.Sources)
	}
	if len(w.recs) > 0 {
		maxT := slices.MaxFunc(w.recs, func(a, b abi.Record) int { return cmp.Compare(a.Time, b.Time) }).Time
		want := time.Unix(0, maxT-int64(w.bound)-1)
		if got := st.Sources[0].Watermark; got == nil || !got.Equal(want) || st.Sources[0].LagSeconds <= 0 {
			t.Fatalf("status: source watermark %v (lag %vs); want %v", got, st.Sources[0].LagSeconds, want)
		}
		if got := st.Operators[0].Window.Watermark; got == nil || !got.Equal(want) {
			t.Fatalf("status: the operator's watermark %v; want %v", got, want)
		}
	}
	return sink.records(), lateSink.records()
}

// TestWindowCountMatchesOracle runs windowed counts of random out-of-order
// streams in batches of several sizes on several workers: the results, the
// late records and the outputs' ids are those of a record-by-record run,
// whatever the batches and workers.
func TestWindowCountMatchesOracle(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		w := genWindowed(rt)
		want, wantLate := w.oracle()
		var firstIDs []string
		for _, c := range []struct{ batch, workers int }{{1, 1}, {7, 2}, {1000, 3}} {
			outs, late := runCount(rt, t.TempDir(), w, c.batch, c.workers)
			if got := countLines(rt, outs); !slices.Equal(got, want) {
				rt.Fatalf("batch %d, %d workers:\n got %q\nwant %q", c.batch, c.workers, got, want)
			}
			var gotLate []int
			for _, l := range late {
				var i int
				fmt.Sscan(string(l.Record.Value), &i)
				gotLate = append(gotLate, i)
				if !strings.Contains(header(l.Record, HeaderLate), "late") {
					rt.Fatalf("late record without its reason: %q", header(l.Record, HeaderLate))
				}
			}
			if !slices.Equal(gotLate, wantLate) {
				rt.Fatalf("batch %d, %d workers: late records %v, want %v", c.batch, c.workers, gotLate, wantLate)
			}
			var ids []string
			for _, o := range outs {
				ids = append(ids, o.ID)
			}
			slices.Sort(ids)
			if firstIDs == nil {
				firstIDs = ids
			} else if !slices.Equal(ids, firstIDs) {
				rt.Fatalf("batch %d, %d workers: ids %q, want those of the first run %q", c.batch, c.workers, ids, firstIDs)
			}
		}
	})
}

// TestWindowRestart stops a windowed count part way and starts it again
// on the same state: the windows open at the stop are restored with the
// watermark, and together the two runs give the results of one run.
func TestWindowRestart(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		w := genWindowed(rt)
		want, _ := w.oracle()
		stop := rapid.IntRange(0, len(w.recs)).Draw(rt, "stop")
		dir := t.TempDir()
		fn := builtinCount(rt)
		var outs []connectors.Out
		for run, recs := range [][]abi.Record{w.recs[:stop], w.recs} {
			store := openStore(rt, dir)
			sink, dead, late := &memSink{}, &memSink{}, &memSink{}
			src := &sliceSource{recs: recs, chunk: 5, block: run == 0}
			job, err := New(context.Background(), Config{
				Name: "p", Sources: []Input{{Name: "in", Source: src,
					Watermark: &window.WatermarkStrategy{Kind: window.BoundedOutOfOrder, Bound: w.bound}}},
				Operators: []Operator{{Name: "count", Kind: plugin.KindAggregate, Parallelism: 2,
					Window: &Window{Spec: window.Spec{Assigner: window.Tumbling, Size: w.size}, Function: fn}}},
				Sinks: []Output{{Name: "out", Sink: sink}}, DeadLetter: dead, Late: late, Store: store, BatchSize: 5,
			})
			if err != nil {
				rt.Fatal(err)
			}
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan error, 1)
			go func() { done <- job.Run(ctx) }()
			if run == 0 {
				// Stop once everything read is committed, without the end of
				// input (which would fire every window).
				for store.Positions()["in"] < uint64(stop) {
					time.Sleep(time.Millisecond)
				}
				cancel()
			}
			if err := <-done; err != nil {
				rt.Fatal(err)
			}
			cancel()
			outs = append(outs, sink.records()...)
			store.Close()
		}
		if got := countLines(rt, outs); !slices.Equal(got, want) {
			rt.Fatalf("stopped after %d records:\n got %q\nwant %q", stop, got, want)
		}
		// The ids are those of one run: a replay after a restart makes the
		// same ones, so a sink drops its repeats.
		clean, _ := runCount(rt, t.TempDir(), w, 5, 2)
		var ids, cleanIDs []string
		for _, o := range outs {
			ids = append(ids, o.ID)
		}
		for _, o := range clean {
			cleanIDs = append(cleanIDs, o.ID)
		}
		slices.Sort(ids)
		slices.Sort(cleanIDs)
		if !slices.Equal(ids, cleanIDs) {
			rt.Fatalf("stopped after %d records: ids\n%q\nwant those of one run\n%q", stop, ids, cleanIDs)
		}
	})
}

// builtinCount makes the built-in count for each worker.
func builtinCount(t tb) func() window.Function {
	if _, err := window.Builtin("count", ""); err != nil {
		t.Fatal(err)
	}
	return func() window.Function {
		fn, _ := window.Builtin("count", "")
		return fn
	}
}

// slidingOracle returns, for tumbling (slide = size) or sliding windows,
// "key end count,sum" lines of a record-by-record run: a record counts in
// each of its windows that had not fired when it came, and is late when
// every one had.
func (w windowed) slidingOracle(slide time.Duration) ([]string, int) {
	type acc struct{ n, sum int64 }
	accs := map[string]*acc{}
	late := 0
	maxSeen, seen := int64(math.MinInt64), false
	size, sl := int64(w.size), int64(slide)
	for i, r := range w.recs {
		wm := int64(math.MinInt64)
		if seen {
			wm = maxSeen - int64(w.bound) - 1
		}
		last := r.Time - ((r.Time%sl)+sl)%sl
		added := false
		for s := last; s > r.Time-size; s -= sl {
			if s+size-1 <= wm {
				continue
			}
			k := fmt.Sprintf("%s %d", r.Key, s+size)
			if accs[k] == nil {
				accs[k] = &acc{}
			}
			accs[k].n++
			accs[k].sum += int64(i)
			added = true
		}
		if !added {
			late++
		}
		if !seen || r.Time > maxSeen {
			maxSeen, seen = r.Time, true
		}
	}
	var lines []string
	for k, a := range accs {
		lines = append(lines, fmt.Sprintf("%s %d,%d", k, a.n, a.sum))
	}
	slices.Sort(lines)
	return lines, late
}

// TestWasmAggregateMatchesOracle runs a Wasm aggregate (plugins/wincount:
// count and sum per key and window, through sluice_agg_add, merge and
// fire) over tumbling and sliding windows of random out-of-order streams.
func TestWasmAggregateMatchesOracle(t *testing.T) {
	p := load(t, "wincount", plugin.KindAggregate, 0)
	rapid.Check(t, func(rt *rapid.T) {
		w := genWindowed(rt)
		slide := w.size
		spec := window.Spec{Assigner: window.Tumbling, Size: w.size}
		if rapid.Bool().Draw(rt, "sliding") {
			slide = time.Duration(rapid.IntRange(1, int(w.size/time.Second)).Draw(rt, "slide")) * time.Second
			spec = window.Spec{Assigner: window.Sliding, Size: w.size, Slide: slide}
		}
		want, wantLate := w.slidingOracle(slide)
		batch := rapid.SampledFrom([]int{1, 7, 1000}).Draw(rt, "batch")
		got, late := runAggregate(rt, t.TempDir(), p, w, spec, batch, rapid.IntRange(1, 3).Draw(rt, "workers"))
		if !slices.Equal(got, want) {
			rt.Fatalf("slide %v:\n got %q\nwant %q", slide, got, want)
		}
		if late != wantLate {
			rt.Fatalf("%d late records, want %d", late, wantLate)
		}
	})
}

// runAggregate runs Wasm aggregate p over w's records with windows of
// spec, in batches of batch records, on workers workers, and returns its
// results as "key end value" lines in order and the number of late records.
func runAggregate(t tb, dir string, p *plugin.Plugin, w windowed, spec window.Spec, batch, workers int) ([]string, int) {
	t.Helper()
	store := openStore(t, dir)
	defer store.Close()
	sink, dead, late := &memSink{}, &memSink{}, &memSink{}
	job, err := New(context.Background(), Config{
		Name: "p", Sources: []Input{{Name: "in", Source: &sliceSource{recs: w.recs, chunk: batch},
			Watermark: &window.WatermarkStrategy{Kind: window.BoundedOutOfOrder, Bound: w.bound}}},
		Operators: []Operator{{Name: "agg", Kind: plugin.KindAggregate, Plugin: p, Parallelism: workers, Window: &Window{Spec: spec}}},
		Sinks:     []Output{{Name: "out", Sink: sink}}, DeadLetter: dead, Late: late, Store: store, BatchSize: batch,
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := job.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, o := range sink.records() {
		got = append(got, fmt.Sprintf("%s %d %s", o.Record.Key, o.Record.Time+1, o.Record.Value))
	}
	slices.Sort(got)
	return got, len(late.records())
}

// TestWasmAggregateFiringRejected runs an aggregate whose firings of key
// k1 emit a result and then fail (testdata/firereject) over random
// out-of-order streams: every other key's windows give the oracle's
// counts, and each of k1's windows is dead-lettered once, as a record of
// its key, accumulator (the count) and window, with the guest's reason,
// and none of what its firing emitted is sent.
func TestWasmAggregateFiringRejected(t *testing.T) {
	p := load(t, "firereject", plugin.KindAggregate, 0)
	rapid.Check(t, func(rt *rapid.T) {
		w := genWindowed(rt)
		all, wantLate := w.oracle()
		var want, wantDead []string
		for _, l := range all {
			if strings.HasPrefix(l, "k1 ") {
				wantDead = append(wantDead, l)
			} else {
				want = append(want, l)
			}
		}
		batch := rapid.SampledFrom([]int{1, 7, 1000}).Draw(rt, "batch")
		workers := rapid.IntRange(1, 3).Draw(rt, "workers")
		store := openStore(rt, t.TempDir())
		defer store.Close()
		sink, dead, late := &memSink{}, &memSink{}, &memSink{}
		job, err := New(context.Background(), Config{
			Name: "p", Sources: []Input{{Name: "in", Source: &sliceSource{recs: w.recs, chunk: batch},
				Watermark: &window.WatermarkStrategy{Kind: window.BoundedOutOfOrder, Bound: w.bound}}},
			Operators: []Operator{{Name: "agg", Kind: plugin.KindAggregate, Plugin: p, Parallelism: workers,
				Window: &Window{Spec: window.Spec{Assigner: window.Tumbling, Size: w.size}}}},
			Sinks: []Output{{Name: "out", Sink: sink}}, DeadLetter: dead, Late: late, Store: store, BatchSize: batch,
		})
		if err != nil {
			rt.Fatal(err)
		}
		if err := job.Run(context.Background()); err != nil {
			rt.Fatal(err)
		}
		size := int64(w.size)
		var got []string
		for _, o := range sink.records() {
			end := o.Record.Time + 1
			got = append(got, fmt.Sprintf("%s %d %d %s", o.Record.Key, end-size, end, o.Record.Value))
		}
		slices.Sort(got)
		if !slices.Equal(got, want) {
			rt.Fatalf("results:\n got %q\nwant %q", got, want)
		}
		var gotDead []string
		ids := map[string]bool{}
		for _, d := range dead.records() {
			r := d.Record
			if ids[d.ID] {
				rt.Fatalf("dead letter id %q twice", d.ID)
			}
			ids[d.ID] = true
			if reason := header(r, HeaderError); !strings.Contains(reason, "k1's firings are refused") {
				rt.Fatalf("dead letter %q: reason %q, want the guest's", r.Key, reason)
			}
			if len(r.Value) != 8 {
				rt.Fatalf("dead letter value %x, want the 8-byte accumulator", r.Value)
			}
			start, end := header(r, abi.HeaderWindowStart), header(r, abi.HeaderWindowEnd)
			if len(start) != 8 || len(end) != 8 {
				rt.Fatalf("dead letter headers %v: want the window's start and end", r.Headers)
			}
			s, e := int64(binary.LittleEndian.Uint64([]byte(start))), int64(binary.LittleEndian.Uint64([]byte(end)))
			if r.Time != e-1 {
				rt.Fatalf("dead letter time %d, want its window's end - 1 (%d)", r.Time, e-1)
			}
			gotDead = append(gotDead, fmt.Sprintf("%s %d %d %d", r.Key, s, e, binary.LittleEndian.Uint64(r.Value)))
		}
		slices.Sort(gotDead)
		if !slices.Equal(gotDead, wantDead) {
			rt.Fatalf("dead letters:\n got %q\nwant %q", gotDead, wantDead)
		}
		if n := len(late.records()); n != len(wantLate) {
			rt.Fatalf("%d late records, want %d", n, len(wantLate))
		}
	})
}

// TestWasmAggregateOverManyGroups gives a Wasm aggregate batches whose
// (key, slice) groups outnumber what one guest call takes, so that Add
// is cut into several calls: every call's accumulators must still be the
// ones written to state.
func TestWasmAggregateOverManyGroups(t *testing.T) {
	p := load(t, "wincount", plugin.KindAggregate, 0)
	const keys, perKey = 3*guestChunk + 17, 3
	base := int64(1_700_000_000) * int64(time.Second)
	var recs []abi.Record
	for r := range perKey {
		for k := range keys {
			recs = append(recs, abi.Record{Key: fmt.Appendf(nil, "k%d", k), Value: fmt.Append(nil, r*keys+k),
				Time: base + int64(r*keys+k)*int64(time.Microsecond)})
		}
	}
	w := windowed{recs: recs, size: time.Minute}
	want, _ := w.slidingOracle(w.size)
	for _, workers := range []int{1, 2} {
		t.Run(fmt.Sprintf("workers=%d", workers), func(t *testing.T) {
			got, _ := runAggregate(t, t.TempDir(), p, w, window.Spec{Assigner: window.Tumbling, Size: w.size}, len(recs), workers)
			if len(got) != len(want) {
				t.Fatalf("%d results, want %d", len(got), len(want))
			}
			for i := range got {
				if got[i] != want[i] {
					t.Fatalf("result %d: got %q, want %q", i, got[i], want[i])
				}
			}
		})
	}
}

// TestTwoWindowedOperators runs two windowed counts of different sizes
// and an interval join in one job: each keeps its own windows and timers,
// and each count matches its oracle.
func TestTwoWindowedOperators(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		w := genWindowed(rt)
		w2 := w
		w2.size = w.size + time.Second
		store := openStore(rt, t.TempDir())
		defer store.Close()
		a, b, j, dead, late := &memSink{}, &memSink{}, &memSink{}, &memSink{}, &memSink{}
		wm := &window.WatermarkStrategy{Kind: window.BoundedOutOfOrder, Bound: w.bound}
		job, err := New(context.Background(), Config{
			Name: "p", Sources: []Input{{Name: "in", Source: &sliceSource{recs: w.recs, chunk: 7}, Watermark: wm},
				{Name: "in2", Source: &sliceSource{recs: w.recs, chunk: 5}, Watermark: wm}},
			Operators: []Operator{
				{Name: "a", Kind: plugin.KindAggregate, Inputs: []string{"in"}, Parallelism: 2,
					Window: &Window{Spec: window.Spec{Assigner: window.Tumbling, Size: w.size}, Function: builtinCount(rt)}},
				{Name: "b", Kind: plugin.KindAggregate, Inputs: []string{"in"}, Parallelism: 1,
					Window: &Window{Spec: window.Spec{Assigner: window.Tumbling, Size: w2.size}, Function: builtinCount(rt)}},
				{Name: "j", Kind: KindJoin, Inputs: []string{"in", "in2"}, Parallelism: 2, Interval: &Interval{Lower: -time.Second, Upper: time.Second}},
			},
			Sinks:      []Output{{Name: "a", Sink: a, Inputs: []string{"a"}}, {Name: "b", Sink: b, Inputs: []string{"b"}}, {Name: "j", Sink: j, Inputs: []string{"j"}}},
			DeadLetter: dead, Late: late, Store: store, BatchSize: 7,
		})
		if err != nil {
			rt.Fatal(err)
		}
		if err := job.Run(context.Background()); err != nil {
			rt.Fatal(err)
		}
		for _, c := range []struct {
			w    windowed
			sink *memSink
		}{{w, a}, {w2, b}} {
			want, _ := c.w.oracle()
			if got := countLines(rt, c.sink.records()); !slices.Equal(got, want) {
				rt.Fatalf("size %v:\n got %q\nwant %q", c.w.size, got, want)
			}
		}
	})
}

// TestLateFiringIsMarked fires a window on time, then again for a record
// within the allowed lateness: the repeat says it is late; a record later
// than that goes to the late destination.
func TestLateFiringIsMarked(t *testing.T) {
	s := int64(time.Second)
	base := int64(1_700_000_000) * s
	recs := []abi.Record{
		{Key: []byte("k"), Value: []byte("a"), Time: base + s},       // window [base, base+2s)
		{Key: []byte("k"), Value: []byte("b"), Time: base + 5*s},     // the watermark passes it: on time, count 1
		{Key: []byte("k"), Value: []byte("c"), Time: base + s/2},     // within lateness: late firing, count 2
		{Key: []byte("k"), Value: []byte("d"), Time: base + 20*s},    // the lateness ends
		{Key: []byte("k"), Value: []byte("e"), Time: base + s + s/2}, // too late: to the late destination
	}
	store := openStore(t, t.TempDir())
	defer store.Close()
	sink, dead, late := &memSink{}, &memSink{}, &memSink{}
	job, err := New(context.Background(), Config{
		Name: "p", Sources: []Input{{Name: "in", Source: &sliceSource{recs: recs, chunk: 1}}},
		Operators: []Operator{{Name: "count", Kind: plugin.KindAggregate, Parallelism: 1,
			Window: &Window{Spec: window.Spec{Assigner: window.Tumbling, Size: 2 * time.Second, Lateness: 10 * time.Second}, Function: builtinCount(t)}}},
		Sinks: []Output{{Name: "out", Sink: sink}}, DeadLetter: dead, Late: late, Store: store, BatchSize: 1,
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := job.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, o := range sink.records() {
		if !strings.Contains(string(o.Record.Value), fmt.Sprintf(`"start":%d`, base)) {
			continue
		}
		got = append(got, fmt.Sprintf("%s %q", o.Record.Value, header(o.Record, HeaderFiring)))
	}
	want := []string{
		fmt.Sprintf(`{"key":"k","start":%d,"end":%d,"count":1} ""`, base, base+2*s),
		fmt.Sprintf(`{"key":"k","start":%d,"end":%d,"count":2} "late"`, base, base+2*s),
	}
	if !slices.Equal(got, want) {
		t.Errorf("firings of the first window:\n got %q\nwant %q", got, want)
	}
	if l := late.records(); len(l) != 1 || string(l[0].Record.Value) != "e" {
		t.Errorf("late records %v, want e", l)
	}
}

// TestNoEventTimeIsDeadLettered sends a record with no event time to the
// dead letters, with the reason, from a window and from a join.
func TestNoEventTimeIsDeadLettered(t *testing.T) {
	base := int64(1_700_000_000) * int64(time.Second)
	recs := []abi.Record{{Key: []byte("k"), Value: []byte("a"), Time: base}, {Key: []byte("k"), Value: []byte("none")}, {Key: []byte("k"), Value: []byte("b"), Time: base + 1}}
	for _, op := range []Operator{
		{Name: "w", Kind: plugin.KindAggregate, Inputs: []string{"l"}, Parallelism: 2,
			Window: &Window{Spec: window.Spec{Assigner: window.Tumbling, Size: time.Second}, Function: builtinCount(t)}},
		{Name: "j", Kind: KindJoin, Inputs: []string{"l", "r"}, Parallelism: 2, Join: &Join{Window: window.Spec{Assigner: window.Tumbling, Size: time.Second}, Algorithm: "npj"}},
		{Name: "i", Kind: KindJoin, Inputs: []string{"l", "r"}, Parallelism: 2, Interval: &Interval{Upper: time.Second}},
	} {
		store := openStore(t, t.TempDir())
		sink, dead, late := &memSink{}, &memSink{}, &memSink{}
		sources := []Input{{Name: "l", Source: &sliceSource{recs: recs}}}
		if op.Kind == KindJoin {
			sources = append(sources, Input{Name: "r", Source: &sliceSource{recs: recs[:1]}})
		}
		job, err := New(context.Background(), Config{Name: "p", Sources: sources, Operators: []Operator{op},
			Sinks: []Output{{Name: "out", Sink: sink}}, DeadLetter: dead, Late: late, Store: store})
		if err != nil {
			t.Fatal(err)
		}
		if err := job.Run(context.Background()); err != nil {
			t.Fatal(err)
		}
		d := dead.records()
		if len(d) != 1 || string(d[0].Record.Value) != "none" || !strings.Contains(header(d[0].Record, HeaderError), "no event time") {
			t.Errorf("%s: dead letters %v, want the record without a time, with the reason", op.Name, d)
		}
		if len(sink.records()) == 0 {
			t.Errorf("%s: no results", op.Name)
		}
		store.Close()
	}
}

// TestIdleSourceLetsTimeGoOn runs a windowed count over two sources, one
// of which never delivers a record: without an idle timeout it would hold
// the watermark back forever; with one, the windows of the other fire
// while both sources stay open.
func TestIdleSourceLetsTimeGoOn(t *testing.T) {
	base := int64(1_700_000_000) * int64(time.Second)
	var recs []abi.Record
	for i := range 10 {
		recs = append(recs, abi.Record{Key: []byte("k"), Value: []byte("v"), Time: base + int64(i)*int64(time.Second)})
	}
	store := openStore(t, t.TempDir())
	defer store.Close()
	sink, dead, late := &memSink{}, &memSink{}, &memSink{}
	wm := &window.WatermarkStrategy{Kind: window.Monotonous, Idle: 50 * time.Millisecond}
	job, err := New(context.Background(), Config{
		Name: "p", Sources: []Input{
			{Name: "busy", Source: &sliceSource{recs: recs, block: true}, Watermark: wm},
			{Name: "quiet", Source: &sliceSource{block: true}, Watermark: wm},
		},
		Operators: []Operator{{Name: "count", Kind: plugin.KindAggregate, Inputs: []string{"busy", "quiet"}, Parallelism: 1,
			Window: &Window{Spec: window.Spec{Assigner: window.Tumbling, Size: 2 * time.Second}, Function: builtinCount(t)}}},
		Sinks: []Output{{Name: "out", Sink: sink}}, DeadLetter: dead, Late: late, Store: store,
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- job.Run(ctx) }()
	// The windows before the busy source's last record fire: 4 of them.
	waitFor(t, func() bool { return len(sink.records()) >= 4 })
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if n := len(sink.records()); n != 4 {
		t.Errorf("%d windows fired, want 4 (the fifth holds the last record, at the watermark)", n)
	}
}

// TestProcessingTimeWindowsFireWithoutInput counts records in windows of
// the host's clock: they fire while the source stays open and quiet.
func TestProcessingTimeWindowsFireWithoutInput(t *testing.T) {
	store := openStore(t, t.TempDir())
	defer store.Close()
	sink, dead, late := &memSink{}, &memSink{}, &memSink{}
	job, err := New(context.Background(), Config{
		Name: "p", Sources: []Input{{Name: "in", Source: &sliceSource{recs: records("a", "b", "a"), block: true}}},
		Operators: []Operator{{Name: "count", Kind: plugin.KindAggregate, Parallelism: 2,
			Window: &Window{Spec: window.Spec{Assigner: window.Tumbling, Size: 50 * time.Millisecond, Domain: window.ProcessingTime}, Function: builtinCount(t)}}},
		Sinks: []Output{{Name: "out", Sink: sink}}, DeadLetter: dead, Late: late, Store: store,
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- job.Run(ctx) }()
	total := func() int {
		n := 0
		for _, o := range sink.records() {
			var v struct{ Count int }
			if err := json.Unmarshal(o.Record.Value, &v); err == nil {
				n += v.Count
			}
		}
		return n
	}
	waitFor(t, func() bool { return total() == 3 })
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if n := total(); n != 3 {
		t.Errorf("the windows counted %d records, want 3", n)
	}
}
