package window

import (
	"context"
	"fmt"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/sluicehq/sluice/abi"
	"github.com/sluicehq/sluice/state"
	"pgregory.net/rapid"
)

const testGroups = 4

var allGroups = []int{0, 1, 2, 3}

func quiet() state.Options {
	return state.Options{KeyGroups: testGroups, Logger: slog.New(slog.DiscardHandler)}
}

func drawSpec(rt *rapid.T) Spec {
	var s Spec
	s.Assigner = Assigner(rapid.IntRange(0, 3).Draw(rt, "assigner"))
	switch s.Assigner {
	case Tumbling:
		s.Size = time.Duration(rapid.IntRange(1, 12).Draw(rt, "size"))
		s.Offset = time.Duration(rapid.Int64Range(0, int64(s.Size)-1).Draw(rt, "offset"))
	case Sliding:
		s.Size = time.Duration(rapid.IntRange(1, 16).Draw(rt, "size"))
		s.Slide = time.Duration(rapid.Int64Range(1, int64(s.Size)).Draw(rt, "slide"))
		s.Offset = time.Duration(rapid.Int64Range(0, int64(s.Slide)-1).Draw(rt, "offset"))
	case Session:
		s.Gap = time.Duration(rapid.IntRange(1, 8).Draw(rt, "gap"))
	case Global:
		s.Trigger = Count
	}
	if s.Assigner != Global && rapid.IntRange(0, 5).Draw(rt, "processing") == 0 {
		s.Domain = ProcessingTime
	}
	if s.Assigner == Tumbling && rapid.IntRange(0, 4).Draw(rt, "count") == 0 {
		s.Trigger = Count
	}
	if s.Trigger == Count {
		s.Count = rapid.IntRange(1, 4).Draw(rt, "n")
	}
	if s.Domain == EventTime && s.Trigger == OnTime && s.Assigner != Sliding && rapid.IntRange(0, 4).Draw(rt, "ptrigger") == 0 {
		s.Trigger = ProcessingTimeTrigger
	}
	if (s.Assigner == Tumbling || s.Assigner == Global) && s.Trigger != Count && rapid.IntRange(0, 3).Draw(rt, "earlycount") == 0 {
		s.EarlyCount = rapid.IntRange(1, 4).Draw(rt, "early.count")
	}
	if rapid.IntRange(0, 3).Draw(rt, "earlyinterval") == 0 {
		s.EarlyInterval = time.Duration(rapid.IntRange(1, 10).Draw(rt, "early.interval"))
	}
	if s.Domain == EventTime && s.Assigner != Global && rapid.Bool().Draw(rt, "late") {
		s.Lateness = time.Duration(rapid.IntRange(1, 10).Draw(rt, "lateness"))
	}
	return s
}

// harness runs an operator over a store and compares it with the model.
type harness struct {
	dir   string
	store *state.Store
	sess  *state.Session
	op    *Operator
	table string // the run's table and namespace
	spec  Spec
	fn    func() Function
}

func (h *harness) open(rt *rapid.T) {
	if h.store == nil {
		s, err := state.Open(h.dir, quiet())
		if err != nil {
			rt.Fatal(err)
		}
		h.store = s
	}
	h.sess = h.store.NewSession()
	var err error
	if h.op, err = New(h.spec, h.fn(), h.store.Table(h.table), WithNamespace(h.table)); err != nil {
		rt.Fatal(err)
	}
}

func (h *harness) step(rt *rapid.T, recs []abi.Record, addWM, wm, now int64) ([]Late, []mresult) {
	ctx := context.Background()
	late, err := h.op.Add(ctx, h.sess, recs, addWM, now)
	if err != nil {
		rt.Fatal(err)
	}
	var out []mresult
	err = h.op.Advance(ctx, h.sess, allGroups, wm, now, func(r Result) {
		if r.Record.Time != r.Window.MaxTime() || string(r.Record.Key) != string(r.Key) {
			rt.Fatalf("result %+v: time or key not the window's", r)
		}
		out = append(out, mresult{string(r.Key), r.Window, r.Firing, r.Seq, string(r.Record.Value)})
	})
	if err != nil {
		rt.Fatal(err)
	}
	return late, out
}

// newTemplate returns an empty store's directory, to copy: creating a
// store syncs more than copying one.
func newTemplate(t *testing.T) string {
	dir := filepath.Join(t.TempDir(), "template")
	s, err := state.Open(dir, quiet())
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestMatchesReference runs random specs over random out-of-order
// streams with random watermarks and processing times, against the
// reference of model_test.go, with the session rolled back and retried
// between batches in some runs and the store committed and reopened in
// others.
func TestMatchesReference(t *testing.T) {
	template := newTemplate(t)
	shared, err := state.Open(filepath.Join(t.TempDir(), "shared"), quiet())
	if err != nil {
		t.Fatal(err)
	}
	defer shared.Close()
	run := 0
	rapid.Check(t, func(rt *rapid.T) {
		spec := drawSpec(rt)
		if err := spec.Validate(); err != nil {
			rt.Fatalf("drawn spec %+v: %v", spec, err)
		}
		kind := rapid.SampledFrom([]string{"sum", "count", "list"}).Draw(rt, "function")
		h := &harness{spec: spec}
		var value func(string, Window, []mrec) string
		rejects := func(string) bool { return false }
		badValues := false
		switch kind {
		case "sum":
			h.fn = func() Function { f, _ := Builtin("sum", ""); return f }
			value = sumValue
			badValues = spec.Assigner != Session
			rejects = func(v string) bool { _, err := strconv.ParseFloat(v, 64); return err != nil }
		case "count":
			h.fn = func() Function { f, _ := Builtin("count", ""); return f }
			value = countValue
		default:
			h.fn = func() Function { return lister{} }
			value = listValue
		}
		m := newModel(spec, value, rejects)
		restarts := rapid.SampledFrom([]string{"none", "rollback", "reopen"}).Draw(rt, "restarts")
		run++
		h.table = fmt.Sprintf("w%d", run)
		if restarts == "reopen" { // a store of its own
			base, err := os.MkdirTemp("", "sluice-window-")
			if err != nil {
				rt.Fatal(err)
			}
			defer os.RemoveAll(base)
			h.dir = filepath.Join(base, "state")
			if err := os.CopyFS(h.dir, os.DirFS(template)); err != nil {
				rt.Fatal(err)
			}
			defer func() { _ = h.store.Close() }()
		} else {
			h.store = shared
		}
		h.open(rt)

		keys := []string{"a", "b", "c"}
		var cursor, wm, now int64 = 0, MinWatermark, 0
		batches := rapid.IntRange(1, 10).Draw(rt, "batches")
		for b := 0; b <= batches; b++ {
			var recs []abi.Record
			if b < batches {
				n := rapid.IntRange(0, 6).Draw(rt, "records")
				for range n {
					cursor += int64(rapid.IntRange(0, 3).Draw(rt, "advance"))
					v := strconv.Itoa(rapid.IntRange(0, 9).Draw(rt, "value"))
					if badValues && rapid.IntRange(0, 9).Draw(rt, "bad") == 0 {
						v = "x"
					}
					recs = append(recs, abi.Record{
						Key:   []byte(rapid.SampledFrom(keys).Draw(rt, "key")),
						Time:  cursor - int64(rapid.IntRange(0, 12).Draw(rt, "delay")),
						Value: []byte(v),
					})
				}
			}
			addWM := wm
			if b < batches {
				wm = max(wm, cursor-int64(rapid.IntRange(0, 10).Draw(rt, "lag")))
				// Processing time moves on between an Advance and the next
				// Add (see Add).
				now += int64(rapid.IntRange(1, 6).Draw(rt, "tick"))
			} else { // the end: everything fires
				wm, now = math.MaxInt64-1, 1<<40
			}
			if restarts == "rollback" && rapid.Bool().Draw(rt, "retry") {
				sp := h.sess.Savepoint()
				h.step(rt, recs, addWM, wm, now)
				h.sess.RollbackTo(sp)
			}
			late, got := h.step(rt, recs, addWM, wm, now)
			wantLate, wantRejected := m.add(recs, addWM, now)
			want := m.advance(wm, now)
			var gotLate, gotRejected []int
			for _, l := range late {
				if l.Rejected {
					gotRejected = append(gotRejected, l.Index)
				} else {
					gotLate = append(gotLate, l.Index)
				}
				if l.Reason == "" {
					rt.Fatalf("late record %d without a reason", l.Index)
				}
			}
			slices.Sort(gotLate)
			slices.Sort(gotRejected)
			if !slices.Equal(gotLate, wantLate) || !slices.Equal(gotRejected, wantRejected) {
				rt.Fatalf("batch %d (wm %d, now %d): late %v rejected %v, want late %v rejected %v", b, addWM, now, gotLate, gotRejected, wantLate, wantRejected)
			}
			slices.SortFunc(got, mresult.compare)
			slices.SortFunc(want, mresult.compare)
			if !slices.Equal(got, want) {
				rt.Fatalf("batch %d (wm %d, now %d): results\n%s\nwant\n%s", b, wm, now, fmtResults(got), fmtResults(want))
			}
			if restarts == "reopen" && rapid.Bool().Draw(rt, "reopen") {
				if err := h.store.Commit(nil); err != nil {
					rt.Fatal(err)
				}
				if err := h.store.Close(); err != nil {
					rt.Fatal(err)
				}
				h.store = nil
				h.open(rt)
			} else if rapid.Bool().Draw(rt, "commit") {
				if err := h.store.Commit(nil); err != nil {
					rt.Fatal(err)
				}
				h.sess.Reset()
			}
		}
		// Once everything fired, nothing is left but a global window's
		// partial count and the early timers that find nothing.
		_, got := h.step(rt, nil, wm, wm, now+1<<41)
		want := m.advance(wm, now+1<<41)
		slices.SortFunc(got, mresult.compare)
		slices.SortFunc(want, mresult.compare)
		if !slices.Equal(got, want) || (spec.Assigner != Global && len(got) > 0) {
			rt.Fatalf("after the end: results\n%s\nwant\n%s", fmtResults(got), fmtResults(want))
		}
		if spec.Assigner != Global {
			if n := h.store.Table(h.table).Len(); n != 0 {
				var lines []string
				_ = h.store.Commit(nil)
				_ = h.store.ScanKeys(h.table, func(k state.Key, v []byte) error {
					line, _ := Describe(h.table, k, v)
					lines = append(lines, line)
					return nil
				})
				rt.Fatalf("%d entries left after every window fired: %q", n, lines)
			}
			for _, kg := range allGroups {
				for _, d := range []state.TimeDomain{state.EventTime, state.ProcessingTime} {
					_ = h.sess.Timers(kg, d, math.MaxInt64, func(tm state.Timer) bool {
						if line, ok := DescribeTimer(h.table, tm); ok {
							rt.Fatalf("timer left: %s", line)
						}
						return true
					})
				}
			}
		}
	})
}

func fmtResults(rs []mresult) string {
	var b []byte
	for _, r := range rs {
		b = fmt.Appendf(b, "  %s %v %s seq %d: %s\n", r.key, r.w, r.firing, r.seq, r.value)
	}
	return string(b)
}
