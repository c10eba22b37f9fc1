package plugin

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/sluicehq/sluice/abi"
	"github.com/sluicehq/sluice/runtime"
)

// joinRecords renders out's records: origin, key, value, time and headers.
func joinRecords(out *Output) []string {
	var s []string
	for _, r := range out.Records {
		line := fmt.Sprintf("%d %s %x %d", r.Origin, r.Key, r.Value, r.Time)
		for _, h := range r.Headers {
			line += fmt.Sprintf(" %s=%x", h.Name, h.Value)
		}
		s = append(s, line)
	}
	return s
}

// What sluice_join receives: a group per pair, its head the key, the
// sides' byte and the window's headers, its members the records present,
// left first. The join module forwards each head and member with the
// pair's index; the host sets every result's time to its pair's.
func TestJoinEncoding(t *testing.T) {
	i := windowInstance(t, "join", KindJoin)
	w := &Window{Start: 0, End: 10}
	l := &abi.Record{Key: []byte("k"), Value: []byte("L"), Time: 3, Headers: []abi.Header{{Name: []byte("h"), Value: []byte("1")}}}
	r := &abi.Record{Key: []byte("k"), Value: []byte("R"), Time: 4}
	pairs := []JoinPair{
		{Key: []byte("k"), Time: 9, Window: w, Left: l, Right: r},
		{Key: []byte("k"), Time: 9, Window: w, Left: l},
		{Key: []byte("k"), Time: 4, Right: r},
	}
	var out Output
	if err := i.Join(context.Background(), pairs, &out); err != nil {
		t.Fatal(err)
	}
	win := fmt.Sprintf(" %s=%x %s=%x %s=%x", abi.HeaderWindowStart, abi.AppendWindowTime(nil, 0), abi.HeaderWindowEnd, abi.AppendWindowTime(nil, 10),
		abi.HeaderFiring, abi.FiringOnTime)
	want := []string{
		"0 k 03 9" + win, "0 k 4c 9 h=31", "0 k 52 9",
		"1 k 01 9" + win, "1 k 4c 9 h=31",
		"2 k 02 4", "2 k 52 4",
	}
	if got := joinRecords(&out); !slices.Equal(got, want) {
		t.Errorf("results:\n got  %q\n want %q", got, want)
	}
}

// A rejected pair's results are dropped, and the reject names the pair;
// the pairs of a call that traps are run again one per call, so that only
// the pair that traps on its own fails, and the instance goes on.
func TestJoinRejectsAndFailures(t *testing.T) {
	i := windowInstance(t, "join", KindJoin)
	ctx := context.Background()
	rec := func(key, v string) *abi.Record { return &abi.Record{Key: []byte(key), Value: []byte(v), Time: 1} }
	pairs := []JoinPair{
		{Key: []byte("a"), Time: 1, Left: rec("a", "x"), Right: rec("a", "y")},
		{Key: []byte("b"), Time: 1, Left: rec("b", "x"), Right: rec("b", "bad")},
		{Key: []byte("c"), Time: 1, Left: rec("c", "x")},
	}
	var out Output
	if err := i.Join(ctx, pairs, &out); err != nil {
		t.Fatal(err)
	}
	if got, want := joinRecords(&out), []string{"0 a 03 1", "0 a 78 1", "0 a 79 1", "2 c 01 1", "2 c 78 1"}; !slices.Equal(got, want) {
		t.Errorf("results:\n got  %q\n want %q", got, want)
	}
	if len(out.Rejects) != 1 || out.Rejects[0].Index != 1 || !errors.Is(out.Rejects[0].Err, ErrRejected) {
		t.Errorf("rejects %v, want pair 1 rejected", out.Rejects)
	}

	pairs[1] = JoinPair{Key: []byte("trap"), Time: 1, Left: rec("trap", "x")}
	out.Reset()
	if err := i.Join(ctx, pairs, &out); err != nil {
		t.Fatal(err)
	}
	if got, want := joinRecords(&out), []string{"0 a 03 1", "0 a 78 1", "0 a 79 1", "2 c 01 1", "2 c 78 1"}; !slices.Equal(got, want) {
		t.Errorf("results after a trap:\n got  %q\n want %q", got, want)
	}
	var re *RecordError
	var rte *runtime.Error
	if len(out.Rejects) != 1 || out.Rejects[0].Index != 1 || !errors.As(out.Rejects[0].Err, &re) || re.Index != 1 || re.Export != abi.ExportJoin ||
		!errors.As(out.Rejects[0].Err, &rte) {
		t.Errorf("rejects %v, want pair 1's trap", out.Rejects)
	}
	out.Reset()
	if err := i.Join(ctx, pairs[:1], &out); err != nil || len(out.Records) != 3 {
		t.Errorf("the next call: %v, %q", err, joinRecords(&out))
	}
}

// Join serves join plugins only, and a join plugin has no sluice_process.
func TestJoinKind(t *testing.T) {
	agg := windowInstance(t, "agg", KindAggregate)
	err := agg.Join(context.Background(), []JoinPair{{Key: []byte("k"), Left: &abi.Record{}}}, &Output{})
	if !errors.Is(err, ErrNotWindowed) {
		t.Errorf("Join of an aggregate: %v, want ErrNotWindowed", err)
	}
	j := windowInstance(t, "join", KindJoin)
	if err := j.Process(context.Background(), []abi.Record{{Key: []byte("k")}}, nil, &Output{}); err == nil {
		t.Error("Process of a join plugin: no error")
	}
	if _, err := Load(context.Background(), newEngine(t, engineConfig()), "agg.wasm", testdataModule(t, windowDir, "agg"), KindJoin); err == nil {
		t.Error("an aggregate module loaded as a join")
	}
}
