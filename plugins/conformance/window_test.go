package conformance

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"github.com/sluicehq/sluice/abi"
	"github.com/sluicehq/sluice/host/plugin"
	"github.com/sluicehq/sluice/runtime"
	"github.com/sluicehq/sluice/sdk/build"
)

// Window functions (ABI.md section 13): wincount, an aggregate (a count
// and a sum per key and window, with merge), and winmedian, a window
// function (the median of a window's values), written in each language
// and run through the host's Instance methods (AggAdd, AggMerge, AggFire,
// WindowFire) against the same expected results, which the Go versions,
// plugins/wincount and plugins/winmedian, give too.

// windowOps are the window function operators, with their kinds.
var windowOps = map[string]plugin.Kind{"wincount": plugin.KindAggregate, "winmedian": plugin.KindWindow}

// windowInstance loads wasm as an operator of kind and returns an
// instance, having checked that the module declares that kind.
func windowInstance(t *testing.T, wasm []byte, kind plugin.Kind) *plugin.Instance {
	t.Helper()
	ctx := context.Background()
	eng, err := runtime.NewWazero(ctx, runtime.NewConfig().WithHostModules(plugin.HostModule()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = eng.Close(ctx) })
	if r, err := plugin.Check(ctx, eng, "op.wasm", wasm); err != nil || !r.OK() || !r.KindsDeclared || !slices.Equal(r.Kinds, []plugin.Kind{kind}) {
		t.Errorf("check: %v, declared %v, kinds %v, problems %q; want %s declared", err, r.KindsDeclared, r.Kinds, r.Problems, kind)
	}
	p, err := plugin.Load(ctx, eng, "op.wasm", wasm, kind)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close(ctx) })
	i, err := p.NewInstance(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = i.Close(ctx) })
	return i
}

func vals(key string, values ...string) []abi.Record {
	recs := make([]abi.Record, len(values))
	for k, v := range values {
		recs[k] = abi.Record{Key: []byte(key), Value: []byte(v), Time: int64(k)}
	}
	return recs
}

// outputs renders out's records and rejects as comparable text.
func outputs(out *plugin.Output) []string {
	var s []string
	for _, r := range out.Records {
		s = append(s, fmt.Sprintf("%d %q %q %d", r.Origin, r.Key, r.Value, r.Time))
	}
	for _, r := range out.Rejects {
		s = append(s, fmt.Sprintf("reject %d: %v", r.Index, r.Err))
	}
	return s
}

// accumulator returns the 16-byte accumulator of count and sum.
func accumulator(count, sum int64) []byte {
	b := abi.AppendWindowTime(nil, count) // 8 little-endian bytes
	return abi.AppendWindowTime(b, sum)
}

func TestConformanceWindows(t *testing.T) {
	if testing.Short() {
		t.Skip("builds every window operator in every language; skipped in -short mode")
	}
	for _, lang := range append([]build.Language{build.Go}, languages...) {
		t.Run(string(lang), func(t *testing.T) {
			t.Run("wincount", func(t *testing.T) { testWincount(t, module(t, lang, "wincount")) })
			t.Run("winmedian", func(t *testing.T) { testWinmedian(t, module(t, lang, "winmedian")) })
		})
	}
}

func testWincount(t *testing.T, wasm []byte) {
	ctx := context.Background()
	i := windowInstance(t, wasm, windowOps["wincount"])
	var out plugin.Output
	groups := []plugin.AddGroup{
		{Key: []byte("a"), Time: 2, Recs: vals("a", "3", "x", "-1", "+2", "")},
		{Key: []byte("b"), Time: 0, Acc: accumulator(2, -5), Recs: vals("b", "9223372036854775807", "9223372036854775808")},
		{Key: []byte("a"), Time: 0, Recs: vals("a", "-9223372036854775808", "007")},
	}
	if err := i.AggAdd(ctx, groups, &out); err != nil {
		t.Fatal(err)
	}
	const notInt = "value is not a decimal integer"
	want := []string{
		fmt.Sprintf("0 \"\" %q 0", accumulator(2, 2)),
		fmt.Sprintf("1 \"\" %q 0", accumulator(3, -5+9223372036854775807)),
		fmt.Sprintf("2 \"\" %q 0", accumulator(2, -9223372036854775808+7)),
	}
	for _, m := range []int{1, 3, 4, 6} {
		want = append(want, fmt.Sprintf(`reject %d: plugin "op.wasm": input record %d rejected by the operator: %s`, m, m, notInt))
	}
	if got := outputsNoTime(&out); !slices.Equal(got, want) {
		t.Errorf("add:\n got  %q\n want %q", got, want)
	}
	a, b := out.Records[0].Value, out.Records[2].Value
	pairs := []plugin.MergePair{{Key: []byte("a"), A: append([]byte(nil), a...), B: append([]byte(nil), b...)}, {Key: []byte("c"), A: accumulator(1, 1), B: accumulator(1, -1)}}
	out.Reset()
	if err := i.AggMerge(ctx, pairs, &out); err != nil {
		t.Fatal(err)
	}
	merged := append([]byte(nil), out.Records[0].Value...)
	if got, want := outputsNoTime(&out), []string{fmt.Sprintf("0 \"\" %q 0", accumulator(4, 2-9223372036854775808+7)), fmt.Sprintf("1 \"\" %q 0", accumulator(2, 0))}; !slices.Equal(got, want) {
		t.Errorf("merge:\n got  %q\n want %q", got, want)
	}
	out.Reset()
	fires := []plugin.Fire{
		{Key: []byte("a"), Window: plugin.Window{Start: 0, End: 100}, Acc: merged},
		{Key: []byte("b"), Window: plugin.Window{Start: 100, End: 200, Firing: plugin.FiringLate}, Acc: accumulator(3, -7)},
		{Key: []byte("long key \x00\xff"), Window: plugin.Window{Start: -10, End: 10, Firing: plugin.FiringEarly}, Acc: accumulator(1, -9223372036854775808)},
	}
	if err := i.AggFire(ctx, fires, &out); err != nil {
		t.Fatal(err)
	}
	want = []string{`0 "a" "4,-9223372036854775799" 99`, `1 "b" "3,-7" 199`, `2 "long key \x00\xff" "1,-9223372036854775808" 9`}
	if got := outputs(&out); !slices.Equal(got, want) {
		t.Errorf("fire:\n got  %q\n want %q", got, want)
	}
}

// outputsNoTime is outputs with every record's Time zeroed: an
// accumulator's time is not part of its meaning.
func outputsNoTime(out *plugin.Output) []string {
	for k := range out.Records {
		out.Records[k].Time = 0
	}
	return outputs(out)
}

func testWinmedian(t *testing.T, wasm []byte) {
	ctx := context.Background()
	i := windowInstance(t, wasm, windowOps["winmedian"])
	var out plugin.Output
	fires := []plugin.FireContents{
		{Key: []byte("a"), Window: plugin.Window{Start: 0, End: 10}, Recs: vals("a", "5", "-2", "9", "7")},
		{Key: []byte("b"), Window: plugin.Window{Start: 0, End: 10}, Recs: vals("b", "1", "x", "2")},
		{Key: []byte("c"), Window: plugin.Window{Start: 10, End: 20, Firing: plugin.FiringLate}, Recs: vals("c", "3", "-9223372036854775808", "3", "1", "0")},
		{Key: []byte("empty"), Window: plugin.Window{Start: 0, End: 10}},
	}
	if err := i.WindowFire(ctx, fires, &out); err != nil {
		t.Fatal(err)
	}
	want := []string{`0 "a" "7" 9`, `2 "c" "1" 19`}
	for m := 4; m < 7; m++ {
		want = append(want, fmt.Sprintf(`reject %d: plugin "op.wasm": input record %d rejected by the operator: record 1: value is not a decimal integer`, m, m))
	}
	if got := outputs(&out); !slices.Equal(got, want) {
		t.Errorf("fire:\n got  %q\n want %q", got, want)
	}
}
