package exec

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/sluicehq/sluice/abi"
	"github.com/sluicehq/sluice/connectors"
	"github.com/sluicehq/sluice/host/join"
	"github.com/sluicehq/sluice/host/plugin"
	"github.com/sluicehq/sluice/host/window"
)

// genSide draws one side of a join: records of a few keys whose times stay
// within bound of the largest time before them, so that none is late.
func genSide(t *rapid.T, name string, bound time.Duration) []abi.Record {
	n := rapid.IntRange(0, 60).Draw(t, name+" records")
	base := int64(1_700_000_000) * int64(time.Second)
	now := base
	recs := make([]abi.Record, n)
	for i := range recs {
		now += int64(rapid.IntRange(0, 2000).Draw(t, name+" step")) * int64(time.Millisecond)
		ts := now - int64(rapid.Int64Range(0, int64(bound)).Draw(t, name+" behind"))
		k := fmt.Sprintf("k%d", rapid.IntRange(0, 3).Draw(t, name+" key"))
		recs[i] = abi.Record{Key: []byte(k), Value: []byte(fmt.Sprintf(`"%s%d"`, name, i)), Time: ts}
	}
	return recs
}

// joinOracle joins by nested loops over every window: "start left right"
// lines, with null for the missing side of an outer join's record.
func joinOracle(l, r []abi.Record, size, slide int64, typ JoinType) []string {
	var lines []string
	starts := map[int64]bool{}
	for _, recs := range [][]abi.Record{l, r} {
		for _, x := range recs {
			last := x.Time - ((x.Time%slide)+slide)%slide
			for s := last; s > x.Time-size; s -= slide {
				starts[s] = true
			}
		}
	}
	in := func(x abi.Record, s int64) bool { return x.Time >= s && x.Time < s+size }
	for s := range starts {
		hitR := map[int]bool{}
		for _, a := range l {
			if !in(a, s) {
				continue
			}
			hit := false
			for j, b := range r {
				if in(b, s) && string(a.Key) == string(b.Key) {
					lines = append(lines, fmt.Sprintf("%d %s %s", s, a.Value, b.Value))
					hit, hitR[j] = true, true
				}
			}
			if !hit && (typ == LeftJoin || typ == FullJoin) {
				lines = append(lines, fmt.Sprintf("%d %s null", s, a.Value))
			}
		}
		if typ == RightJoin || typ == FullJoin {
			for j, b := range r {
				if in(b, s) && !hitR[j] {
					lines = append(lines, fmt.Sprintf("%d null %s", s, b.Value))
				}
			}
		}
	}
	slices.Sort(lines)
	return lines
}

// TestJoinMatchesNestedLoop runs window joins of random streams, every
// kernel, every join type, tumbling and sliding windows, in batches of
// several sizes on several workers, against a nested-loop join of every
// window; each result's id is its own.
func TestJoinMatchesNestedLoop(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		bound := time.Duration(rapid.IntRange(0, 3).Draw(rt, "bound")) * time.Second
		l, r := genSide(rt, "l", bound), genSide(rt, "r", bound)
		size := int64(rapid.IntRange(2, 12).Draw(rt, "size")) * int64(time.Second)
		slide := size
		spec := window.Spec{Assigner: window.Tumbling, Size: time.Duration(size)}
		if rapid.Bool().Draw(rt, "sliding") {
			slide = size / int64(rapid.IntRange(1, 4).Draw(rt, "windows per record"))
			slide = max(slide-slide%int64(time.Second), int64(time.Second))
			spec = window.Spec{Assigner: window.Sliding, Size: time.Duration(size), Slide: time.Duration(slide)}
		}
		typ := JoinType(rapid.IntRange(0, 3).Draw(rt, "type"))
		algo := rapid.SampledFrom(join.Names()).Draw(rt, "algorithm")
		want := joinOracle(l, r, size, slide, typ)
		batch := rapid.SampledFrom([]int{1, 50}).Draw(rt, "batch")
		workers := rapid.IntRange(1, 2).Draw(rt, "workers")

		outs := runJoin(rt, t.TempDir(), l, r, bound, batch, Operator{Name: "j", Parallelism: workers,
			Join: &Join{Type: typ, Window: spec, Algorithm: algo}})
		var got []string
		ids := map[string]bool{}
		for _, o := range outs {
			got = append(got, joinLine(rt, o))
			if ids[o.ID] {
				rt.Fatalf("id %q twice", o.ID)
			}
			ids[o.ID] = true
		}
		slices.Sort(got)
		if !slices.Equal(got, want) {
			rt.Fatalf("%s join, %s:\n got %q\nwant %q", []string{"inner", "left", "right", "full"}[typ], algo, got, want)
		}
	})
}

// joinLine reads a join result as an oracle line.
func joinLine(t *rapid.T, o connectors.Out) string {
	var v struct {
		Left, Right json.RawMessage
		WindowStart int64 `json:"window_start"`
	}
	if err := json.Unmarshal(o.Record.Value, &v); err != nil {
		t.Fatalf("result %q: %v", o.Record.Value, err)
	}
	return fmt.Sprintf("%d %s %s", v.WindowStart, v.Left, v.Right)
}

// TestIntervalJoinMatchesNestedLoop runs interval joins of random streams
// against a nested loop over every pair.
func TestIntervalJoinMatchesNestedLoop(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		bound := time.Duration(rapid.IntRange(0, 3).Draw(rt, "bound")) * time.Second
		l, r := genSide(rt, "l", bound), genSide(rt, "r", bound)
		lower := time.Duration(rapid.IntRange(-5, 3).Draw(rt, "lower")) * time.Second
		upper := lower + time.Duration(rapid.IntRange(0, 6).Draw(rt, "width"))*time.Second
		var want []string
		for _, a := range l {
			for _, b := range r {
				if string(a.Key) == string(b.Key) && a.Time+int64(lower) <= b.Time && b.Time <= a.Time+int64(upper) {
					want = append(want, fmt.Sprintf("%s %s %d", a.Value, b.Value, max(a.Time, b.Time)))
				}
			}
		}
		slices.Sort(want)
		batch := rapid.SampledFrom([]int{1, 50}).Draw(rt, "batch")

		outs := runJoin(rt, t.TempDir(), l, r, bound, batch, Operator{Name: "j", Parallelism: rapid.IntRange(1, 3).Draw(rt, "workers"),
			Interval: &Interval{Lower: lower, Upper: upper}})
		var got []string
		for _, o := range outs {
			var v struct{ Left, Right json.RawMessage }
			if err := json.Unmarshal(o.Record.Value, &v); err != nil {
				rt.Fatalf("result %q: %v", o.Record.Value, err)
			}
			got = append(got, fmt.Sprintf("%s %s %d", v.Left, v.Right, o.Record.Time))
		}
		slices.Sort(got)
		if !slices.Equal(got, want) {
			rt.Fatalf("interval [%v, %v]:\n got %q\nwant %q", lower, upper, got, want)
		}
	})
}

// TestSessionJoinMatchesOracle runs session-window joins of random streams
// against sessions computed from every record of a key.
func TestSessionJoinMatchesOracle(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		bound := time.Duration(rapid.IntRange(0, 3).Draw(rt, "bound")) * time.Second
		l, r := genSide(rt, "l", bound), genSide(rt, "r", bound)
		gap := int64(rapid.IntRange(1, 6).Draw(rt, "gap")) * int64(time.Second)
		typ := JoinType(rapid.IntRange(0, 3).Draw(rt, "type"))
		type rec struct {
			abi.Record
			side int
		}
		byKey := map[string][]rec{}
		for s, recs := range [][]abi.Record{l, r} {
			for _, x := range recs {
				byKey[string(x.Key)] = append(byKey[string(x.Key)], rec{x, s})
			}
		}
		var want []string
		for _, recs := range byKey {
			slices.SortStableFunc(recs, func(a, b rec) int { return int(a.Time - b.Time) })
			for lo := 0; lo < len(recs); {
				hi := lo + 1
				for hi < len(recs) && recs[hi].Time <= recs[hi-1].Time+gap {
					hi++
				}
				start, end := recs[lo].Time, recs[hi-1].Time+gap
				var sides [2][]string
				for _, x := range recs[lo:hi] {
					sides[x.side] = append(sides[x.side], string(x.Value))
				}
				for _, a := range sides[0] {
					for _, b := range sides[1] {
						want = append(want, fmt.Sprintf("%d %d %s %s", start, end, a, b))
					}
				}
				if len(sides[1]) == 0 && (typ == LeftJoin || typ == FullJoin) {
					for _, a := range sides[0] {
						want = append(want, fmt.Sprintf("%d %d %s null", start, end, a))
					}
				}
				if len(sides[0]) == 0 && (typ == RightJoin || typ == FullJoin) {
					for _, b := range sides[1] {
						want = append(want, fmt.Sprintf("%d %d null %s", start, end, b))
					}
				}
				lo = hi
			}
		}
		slices.Sort(want)
		batch := rapid.SampledFrom([]int{1, 50}).Draw(rt, "batch")
		outs := runJoin(rt, t.TempDir(), l, r, bound, batch, Operator{Name: "j", Parallelism: rapid.IntRange(1, 3).Draw(rt, "workers"),
			Join: &Join{Type: typ, Window: window.Spec{Assigner: window.Session, Gap: time.Duration(gap)}}})
		var got []string
		for _, o := range outs {
			var v struct {
				Left, Right json.RawMessage
				Start       int64 `json:"window_start"`
				End         int64 `json:"window_end"`
			}
			if err := json.Unmarshal(o.Record.Value, &v); err != nil {
				rt.Fatalf("result %q: %v", o.Record.Value, err)
			}
			got = append(got, fmt.Sprintf("%d %d %s %s", v.Start, v.End, v.Left, v.Right))
		}
		slices.Sort(got)
		if !slices.Equal(got, want) {
			rt.Fatalf("%s session join, gap %v:\n got %q\nwant %q", []string{"inner", "left", "right", "full"}[typ], time.Duration(gap), got, want)
		}
	})
}

// runJoin runs op, a join of sources l and r (their watermarks bounded by
// bound), in batches of batch records, and returns its results; no record
// may come late or be dead-lettered.
func runJoin(rt *rapid.T, dir string, l, r []abi.Record, bound time.Duration, batch int, op Operator) []connectors.Out {
	outs, dead := runJoinDead(rt, dir, l, r, bound, batch, op)
	if len(dead) > 0 {
		rt.Fatalf("%d records dead", len(dead))
	}
	return outs
}

// runJoinDead is runJoin that returns the dead letters too.
func runJoinDead(rt *rapid.T, dir string, l, r []abi.Record, bound time.Duration, batch int, op Operator) (outs, deads []connectors.Out) {
	store := openStore(rt, dir)
	defer store.Close()
	sink, dead, late := &memSink{}, &memSink{}, &memSink{}
	wm := &window.WatermarkStrategy{Kind: window.BoundedOutOfOrder, Bound: bound}
	op.Kind, op.Inputs = KindJoin, []string{"l", "r"}
	job, err := New(context.Background(), Config{
		Name: "p",
		Sources: []Input{
			{Name: "l", Source: &sliceSource{recs: l, chunk: batch}, Watermark: wm},
			{Name: "r", Source: &sliceSource{recs: r, chunk: batch}, Watermark: wm},
		},
		Operators: []Operator{op},
		Sinks:     []Output{{Name: "out", Sink: sink}}, DeadLetter: dead, Late: late, Store: store, BatchSize: batch,
	})
	if err != nil {
		rt.Fatal(err)
	}
	if err := job.Run(context.Background()); err != nil {
		rt.Fatal(err)
	}
	if n := len(late.records()); n > 0 {
		rt.Fatalf("%d records late", n)
	}
	return sink.records(), dead.records()
}

// TestJoinKernelObjective checks that a join's auto kernels optimise the
// operator's objective: at a medium rate with unique keys the study's tree
// picks a lazy kernel for throughput and an eager one otherwise.
func TestJoinKernelObjective(t *testing.T) {
	for _, c := range []struct {
		obj  join.Objective
		want string
	}{{join.Throughput, "npj"}, {join.Latency, "shj-jm"}, {join.Progressiveness, "shj-jm"}} {
		st := &joinStage{op: &Operator{Parallelism: 2}, algo: join.Auto, objective: c.obj}
		k, err := st.kernel()
		if err != nil {
			t.Fatal(err)
		}
		ak, ok := k.(join.AutoKernel)
		if !ok {
			t.Fatalf("%v: kernel %T is not auto", c.obj, k)
		}
		ak.Hint(join.Features{R: 100, S: 100, RateR: 3000, RateS: 3000, Dupe: 1, Workers: 2})
		var r, s []join.Tuple
		for i := range 100 {
			r = append(r, join.Tuple{Key: uint64(i), TS: int64(i)})
			s = append(s, join.Tuple{Key: uint64(i), TS: int64(i)})
		}
		if err := ak.Join(context.Background(), r, s, func(int, []join.Match) {}); err != nil {
			t.Fatal(err)
		}
		if d := ak.Decisions(1); len(d) != 1 || d[0].Algorithm != c.want {
			t.Errorf("objective %v: decisions %+v, want %s", c.obj, d, c.want)
		}
	}
}

// TestJoinPluginMatchesDefault runs joins of random streams, of every
// shape (tumbling, sliding and session windows, intervals), type and
// kernel, once with their default results and once with a plugin that
// builds them (plugins/joiner: "L|R" and the window in a header): each
// default result is the plugin's, or two of them for a left value
// "twice"; a pair with a value "bad" is dead-lettered instead, as its
// default result, with the plugin's reason.
func TestJoinPluginMatchesDefault(t *testing.T) {
	joiner := load(t, "joiner", plugin.KindJoin, 0)
	rapid.Check(t, func(rt *rapid.T) {
		bound := time.Duration(rapid.IntRange(0, 3).Draw(rt, "bound")) * time.Second
		l, r := genSide(rt, "l", bound), genSide(rt, "r", bound)
		for _, recs := range [][]abi.Record{l, r} {
			for i := range recs {
				switch rapid.IntRange(0, 9).Draw(rt, "value") {
				case 0:
					recs[i].Value = []byte("bad")
				case 1:
					recs[i].Value = []byte("twice")
				}
			}
		}
		typ := JoinType(rapid.IntRange(0, 3).Draw(rt, "type"))
		op := Operator{Name: "j", Parallelism: rapid.IntRange(1, 2).Draw(rt, "workers")}
		size := time.Duration(rapid.IntRange(2, 8).Draw(rt, "size")) * time.Second
		switch shape := rapid.SampledFrom([]string{"tumbling", "sliding", "session", "interval"}).Draw(rt, "shape"); shape {
		case "tumbling":
			op.Join = &Join{Type: typ, Window: window.Spec{Assigner: window.Tumbling, Size: size}, Algorithm: rapid.SampledFrom(join.Names()).Draw(rt, "algorithm")}
		case "sliding":
			op.Join = &Join{Type: typ, Window: window.Spec{Assigner: window.Sliding, Size: size, Slide: time.Second}, Algorithm: rapid.SampledFrom(join.Names()).Draw(rt, "algorithm")}
		case "session":
			op.Join = &Join{Type: typ, Window: window.Spec{Assigner: window.Session, Gap: size}}
		default:
			op.Interval = &Interval{Lower: -size / 2, Upper: size}
		}
		batch := rapid.SampledFrom([]int{1, 50}).Draw(rt, "batch")

		defaults := runJoin(rt, t.TempDir(), l, r, bound, batch, op)
		op.Plugin = joiner
		outs, dead := runJoinDead(rt, t.TempDir(), l, r, bound, batch, op)

		var want, wantDead []string
		for _, o := range defaults {
			var v struct {
				Left, Right json.RawMessage
				Start       *int64 `json:"window_start"`
				End         *int64 `json:"window_end"`
			}
			if err := json.Unmarshal(o.Record.Value, &v); err != nil {
				rt.Fatalf("result %q: %v", o.Record.Value, err)
			}
			side := func(m json.RawMessage) string {
				switch s := string(m); s {
				case "null":
					return "-"
				case `"bad"`, `"twice"`:
					return s[1 : len(s)-1]
				default:
					return s
				}
			}
			lv, rv := side(v.Left), side(v.Right)
			if lv == "bad" || rv == "bad" {
				wantDead = append(wantDead, fmt.Sprintf("%s %d %s", o.Record.Value, o.Record.Time, "bad value in pair"))
				continue
			}
			line := fmt.Sprintf("%s %s|%s %d", o.Record.Key, lv, rv, o.Record.Time)
			if v.Start != nil {
				line += fmt.Sprintf(" [%d, %d)", *v.Start, *v.End)
			}
			want = append(want, line)
			if lv == "twice" {
				want = append(want, line)
			}
		}
		var got, gotDead []string
		ids := map[string]bool{}
		for _, o := range outs {
			line := fmt.Sprintf("%s %s %d", o.Record.Key, o.Record.Value, o.Record.Time)
			for _, h := range o.Record.Headers {
				if string(h.Name) == "window" && len(h.Value) == 16 {
					line += fmt.Sprintf(" [%d, %d)", int64(binary.LittleEndian.Uint64(h.Value)), int64(binary.LittleEndian.Uint64(h.Value[8:])))
				}
			}
			got = append(got, line)
			if ids[o.ID] {
				rt.Fatalf("id %q twice", o.ID)
			}
			ids[o.ID] = true
		}
		for _, o := range dead {
			var reason string
			for _, h := range o.Record.Headers {
				if string(h.Name) == HeaderError {
					reason = string(h.Value)
				}
			}
			if !strings.HasSuffix(reason, "bad value in pair") {
				rt.Fatalf("dead letter %q: reason %q", o.Record.Value, reason)
			}
			gotDead = append(gotDead, fmt.Sprintf("%s %d %s", o.Record.Value, o.Record.Time, "bad value in pair"))
		}
		for _, s := range [][]string{want, got, wantDead, gotDead} {
			slices.Sort(s)
		}
		if !slices.Equal(got, want) || !slices.Equal(gotDead, wantDead) {
			rt.Fatalf("results:\n got %q\nwant %q\ndead letters:\n got %q\nwant %q", got, want, gotDead, wantDead)
		}
	})
}

// A window join's plugin is swapped like any other: the new module's
// instance takes the old one's place; a join without a plugin, or a module
// of another kind, is refused.
func TestJoinSwapPlugin(t *testing.T) {
	ctx := context.Background()
	store := openStore(t, t.TempDir())
	defer store.Close()
	joiner := load(t, "joiner", plugin.KindJoin, 0)
	spec := window.Spec{Assigner: window.Tumbling, Size: time.Second}
	op := &Operator{Name: "j", Kind: KindJoin, Inputs: []string{"l", "r"}, Parallelism: 1, Plugin: joiner, Join: &Join{Window: spec, Algorithm: "npj"}}
	st, err := newJoinStage(ctx, op, store)
	if err != nil {
		t.Fatal(err)
	}
	defer st.close(ctx)
	first := st.inst
	gen, err := st.prepare(ctx, op, &Replacement{Plugin: load(t, "joiner", plugin.KindJoin, 0)}, 1)
	if err != nil {
		t.Fatal(err)
	}
	old := st.install(gen)
	if st.inst == first || st.inst == nil || len(old.insts) != 1 || old.insts[0] != first {
		t.Errorf("after install: instance %p (was %p), old generation %v", st.inst, first, old.insts)
	}
	if err := old.close(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := st.prepare(ctx, op, &Replacement{Plugin: load(t, "upper", plugin.KindMap, 0)}, 1); !errors.Is(err, ErrSwapRefused) {
		t.Errorf("a map module: %v, want ErrSwapRefused", err)
	}
	bare := &Operator{Name: "k", Kind: KindJoin, Inputs: []string{"l", "r"}, Parallelism: 1, Join: &Join{Window: spec, Algorithm: "npj"}}
	nst, err := newJoinStage(ctx, bare, store)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := nst.prepare(ctx, bare, &Replacement{Plugin: joiner}, 1); !errors.Is(err, ErrSwapRefused) {
		t.Errorf("a join without a plugin: %v, want ErrSwapRefused", err)
	}
}
