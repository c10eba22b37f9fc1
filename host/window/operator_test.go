package window

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/abi"
	"github.com/sluicehq/sluice/state"
	"pgregory.net/rapid"
)

func newTestOperator(t *testing.T, spec Spec, fn Function) (*state.Store, *state.Session, *Operator) {
	t.Helper()
	s, err := state.Open(filepath.Join(t.TempDir(), "state"), quiet())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	op, err := New(spec, fn, s.Table("windows"))
	if err != nil {
		t.Fatal(err)
	}
	return s, s.NewSession(), op
}

func advance(t *testing.T, op *Operator, sess *state.Session, wm, now int64) []Result {
	t.Helper()
	var out []Result
	if err := op.Advance(context.Background(), sess, allGroups, wm, now, func(r Result) { out = append(out, r) }); err != nil {
		t.Fatal(err)
	}
	return out
}

func rec(key string, t int64, value string) abi.Record {
	return abi.Record{Key: []byte(key), Time: t, Value: []byte(value)}
}

func TestBuiltinOverJSONField(t *testing.T) {
	fn, err := Builtin("mean", "order.price")
	if err != nil {
		t.Fatal(err)
	}
	_, sess, op := newTestOperator(t, Spec{Assigner: Tumbling, Size: 10}, fn)
	recs := []abi.Record{
		rec("k", 1, `{"order":{"price":2}}`),
		rec("k", 2, `{"order":{"price":"3"}}`),
		rec("k", 3, `{"order":{}}`),
		rec("k", 4, `{"order":7}`),
		rec("k", 5, `not json`),
		rec("k", 6, `{"order":{"price":4.5}}`),
	}
	late, err := op.Add(context.Background(), sess, recs, MinWatermark, 0)
	if err != nil {
		t.Fatal(err)
	}
	want := map[int]string{
		1: "mean: field order.price is a string, not a number",
		2: "mean: field order.price is missing",
		3: "mean: field order.price: order is not an object",
		4: "mean: field order.price: the value is not JSON",
	}
	if len(late) != len(want) {
		t.Fatalf("late = %+v, want %d rejections", late, len(want))
	}
	for _, l := range late {
		if !l.Rejected || !strings.HasPrefix(l.Reason, want[l.Index]) {
			t.Errorf("record %d: %+v, want rejected with %q", l.Index, l, want[l.Index])
		}
	}
	out := advance(t, op, sess, 9, 0)
	if len(out) != 1 {
		t.Fatalf("results %+v, want one", out)
	}
	r := out[0]
	if got, want := string(r.Record.Value), `{"key":"k","start":0,"end":10,"mean":3.25}`; got != want {
		t.Errorf("result %s, want %s", got, want)
	}
	if r.Record.Time != 9 || r.Firing != OnTimeFiring || r.Seq != 0 || string(r.Record.Key) != "k" {
		t.Errorf("result %+v", r)
	}
	if st := op.Stats(); st.Rejected != 4 || st.Fired != 1 || st.Opened != 1 || st.Purged != 1 {
		t.Errorf("stats %+v", st)
	}
}

func TestBuiltinOutputs(t *testing.T) {
	for _, c := range []struct{ name, want string }{
		{"count", `"count":3`}, {"sum", `"sum":6.5`}, {"min", `"min":-1`}, {"max", `"max":5`}, {"mean", `"mean":2.1666666666666665`},
	} {
		fn, err := Builtin(c.name, "")
		if err != nil {
			t.Fatal(err)
		}
		_, sess, op := newTestOperator(t, Spec{Assigner: Tumbling, Size: 10}, fn)
		recs := []abi.Record{rec("a\x00\"", 1, " 5 "), rec("a\x00\"", 2, "-1"), rec("a\x00\"", 3, "2.5")}
		if late, err := op.Add(context.Background(), sess, recs, MinWatermark, 0); err != nil || len(late) != 0 {
			t.Fatalf("Add: %v, late %+v", err, late)
		}
		out := advance(t, op, sess, 100, 0)
		want := `{"key":"a\u0000\"","start":0,"end":10,` + c.want + `}`
		if len(out) != 1 || string(out[0].Record.Value) != want {
			t.Errorf("%s: results %+v, want %s", c.name, out, want)
		}
	}
	if _, err := Builtin("median", ""); err == nil {
		t.Error("Builtin(median) succeeded")
	}
	if _, err := Builtin("count", "price"); err == nil {
		t.Error("Builtin(count, price) succeeded")
	}
	if _, err := Builtin("sum", "a..b"); err == nil {
		t.Error("Builtin(sum, a..b) succeeded")
	}
}

func TestBuiltinRejectsNonNumbers(t *testing.T) {
	fn, _ := Builtin("sum", "")
	_, sess, op := newTestOperator(t, Spec{Assigner: Tumbling, Size: 10}, fn)
	late, err := op.Add(context.Background(), sess, []abi.Record{rec("k", 1, "NaN"), rec("k", 1, "1e999"), rec("k", 1, "")}, MinWatermark, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(late) != 3 {
		t.Fatalf("late %+v, want three rejections", late)
	}
	// Nothing was accepted: no window, no state.
	if out := advance(t, op, sess, 100, 0); len(out) != 0 {
		t.Fatalf("results %+v", out)
	}
	if st := op.Stats(); st.Opened != 0 {
		t.Fatalf("stats %+v: a slice of rejected records was opened", st)
	}
}

func TestLateRecords(t *testing.T) {
	fn, _ := Builtin("count", "")
	_, sess, op := newTestOperator(t, Spec{Assigner: Tumbling, Size: 10, Lateness: 5}, fn)
	ctx := context.Background()
	if _, err := op.Add(ctx, sess, []abi.Record{rec("k", 3, "")}, MinWatermark, 0); err != nil {
		t.Fatal(err)
	}
	out := advance(t, op, sess, 9, 0) // [0,10) fires on time
	if len(out) != 1 || out[0].Firing != OnTimeFiring || out[0].Seq != 0 {
		t.Fatalf("on time: %+v", out)
	}
	// Within the lateness: added, and the window fires again.
	late, err := op.Add(ctx, sess, []abi.Record{rec("k", 4, "")}, 9, 0)
	if err != nil || len(late) != 0 {
		t.Fatalf("Add: %v, late %+v", err, late)
	}
	out = advance(t, op, sess, 13, 0)
	if len(out) != 1 || out[0].Firing != LateFiring || out[0].Seq != 1 || !strings.Contains(string(out[0].Record.Value), `"count":2`) {
		t.Fatalf("late firing: %+v", out)
	}
	// The watermark reaches the end plus the lateness: the window is gone
	// and its records are late.
	if out := advance(t, op, sess, 14, 0); len(out) != 0 {
		t.Fatalf("purge fired: %+v", out)
	}
	late, err = op.Add(ctx, sess, []abi.Record{rec("k", 5, ""), rec("k", 15, "")}, 14, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(late) != 1 || late[0].Index != 0 || late[0].Rejected || !strings.Contains(late[0].Reason, "window [0,10) closed") {
		t.Fatalf("late = %+v, want record 0 late for [0,10)", late)
	}
}

func TestDescribe(t *testing.T) {
	fn, _ := Builtin("count", "")
	s, sess, op := newTestOperator(t, Spec{Assigner: Tumbling, Size: 10, Lateness: 5}, fn)
	if _, err := op.Add(context.Background(), sess, []abi.Record{rec("k", 3, ""), rec("k", 4, "")}, MinWatermark, 0); err != nil {
		t.Fatal(err)
	}
	advance(t, op, sess, 9, 0)
	if err := s.Commit(nil); err != nil {
		t.Fatal(err)
	}
	var lines []string
	err := s.ScanKeys("windows", func(k state.Key, v []byte) error {
		line, ok := op.Describe(k, v)
		if !ok {
			t.Errorf("Describe(%v) = false", k)
		}
		lines = append(lines, line)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		`window key "k" window [0,10): fired 1 times, on time: true`,
		`window key "k" slice [0,10): 2 records, 16 bytes of state`,
	}
	if strings.Join(lines, "\n") != strings.Join(want, "\n") {
		t.Errorf("Describe lines:\n%s\nwant\n%s", strings.Join(lines, "\n"), strings.Join(want, "\n"))
	}
	var timers []string
	for _, kg := range allGroups {
		_ = sess.Timers(kg, state.EventTime, 1<<62, func(tm state.Timer) bool {
			line, ok := DescribeTimer(DefaultNamespace, tm)
			if ok {
				timers = append(timers, line)
			}
			return true
		})
	}
	if len(timers) != 1 || timers[0] != `window key "k": purge [0,10) at event time 14` {
		t.Errorf("timers %q", timers)
	}
	if _, ok := Describe("other", state.Key{Route: []byte("k"), Namespace: []byte("window/s"), User: make([]byte, 16)}, nil); ok {
		t.Error("Describe claimed another namespace's key")
	}
}

// TestAdvanceOrder checks that one Advance fires windows in order of
// time, then key, whatever the order of the records and key groups: for
// sliding windows too, whose later windows of a key fire with its first.
func TestAdvanceOrder(t *testing.T) {
	for _, c := range []struct {
		name string
		spec Spec
		ends []int64 // the times of the results
	}{
		{"tumbling", Spec{Assigner: Tumbling, Size: 10}, []int64{9, 19, 29}},
		{"sliding", Spec{Assigner: Sliding, Size: 10, Slide: 5}, []int64{9, 14, 19, 24, 29, 34}},
	} {
		t.Run(c.name, func(t *testing.T) {
			fn, _ := Builtin("count", "")
			_, sess, op := newTestOperator(t, c.spec, fn)
			var recs []abi.Record
			for _, k := range []string{"d", "b", "a", "c", "e"} {
				for _, at := range []int64{25, 5, 15} {
					recs = append(recs, rec(k, at, ""))
				}
			}
			if _, err := op.Add(context.Background(), sess, recs, MinWatermark, 0); err != nil {
				t.Fatal(err)
			}
			var got []string
			err := op.Advance(context.Background(), sess, []int{3, 1, 0, 2}, 100, 0, func(r Result) {
				got = append(got, fmt.Sprintf("%d/%s", r.Record.Time, r.Key))
			})
			if err != nil {
				t.Fatal(err)
			}
			var want []string
			for _, at := range c.ends {
				for _, k := range []string{"a", "b", "c", "d", "e"} {
					want = append(want, fmt.Sprintf("%d/%s", at, k))
				}
			}
			if strings.Join(got, " ") != strings.Join(want, " ") {
				t.Errorf("order\n%v\nwant\n%v", got, want)
			}
		})
	}
}

// TestStrayProcessingTimers restarts a window that ran on processing time
// as an event-time window (which sets no processing-time timers): the
// timers the first left behind still fire, once each, when processing
// time passes them, and none is left.
func TestStrayProcessingTimers(t *testing.T) {
	fn, _ := Builtin("count", "")
	s, sess, op := newTestOperator(t, Spec{Assigner: Tumbling, Size: 10, Domain: ProcessingTime}, fn)
	ctx := context.Background()
	// Two windows of processing time: [0,10) and [20,30).
	if _, err := op.Add(ctx, sess, []abi.Record{rec("a", 0, ""), rec("b", 0, "")}, MinWatermark, 5); err != nil {
		t.Fatal(err)
	}
	if _, err := op.Add(ctx, sess, []abi.Record{rec("a", 0, "")}, MinWatermark, 25); err != nil {
		t.Fatal(err)
	}
	// Restarted as an event-time window over the same state.
	op, err := New(Spec{Assigner: Tumbling, Size: 10}, fn, s.Table("windows"))
	if err != nil {
		t.Fatal(err)
	}
	counts := func(out []Result) []string {
		var got []string
		for _, r := range out {
			got = append(got, fmt.Sprintf("%s %s", r.Record.Key, r.Record.Value))
		}
		return got
	}
	if out := advance(t, op, sess, MinWatermark, 8); len(out) != 0 {
		t.Fatalf("fired before processing time passed a window: %v", counts(out))
	}
	out := advance(t, op, sess, MinWatermark, 9) // the window's last instant
	if len(out) != 2 {
		t.Fatalf("processing time 9: %v, want [0,10) of a and b", counts(out))
	}
	out = append(out, advance(t, op, sess, MinWatermark, 40)...)
	if len(out) != 3 || !strings.Contains(counts(out)[2], `"count":1`) || string(out[2].Record.Key) != "a" {
		t.Fatalf("processing time 40: %v, want [20,30) of a too", counts(out))
	}
	if out := advance(t, op, sess, MinWatermark, 100); len(out) != 0 {
		t.Fatalf("fired again: %v", counts(out))
	}
	for _, kg := range allGroups {
		err := sess.Timers(kg, state.ProcessingTime, math.MaxInt64, func(tm state.Timer) bool {
			t.Errorf("key group %d: processing-time timer left: %+v", kg, tm)
			return true
		})
		if err != nil {
			t.Fatal(err)
		}
	}
}

// TestAppendJSONString checks appendJSONString against encoding/json on
// random keys: printable ASCII, the characters JSON or HTML escapes,
// control bytes, UTF-8 and invalid UTF-8.
func TestAppendJSONString(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		s := rapid.SliceOf(rapid.SampledFrom([]byte("aZ09 ~-_\"\\<>&\x00\x1f\x7f\xc3\xa9\xff"))).Draw(t, "key")
		want, err := json.Marshal(string(s))
		if err != nil {
			t.Fatal(err)
		}
		if got := appendJSONString([]byte("x"), s); string(got) != "x"+string(want) {
			t.Fatalf("%q: %s, encoding/json %s", s, got[1:], want)
		}
	})
}
