package conformance

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"github.com/sluicehq/sluice/abi"
	"github.com/sluicehq/sluice/host/plugin"
	"github.com/sluicehq/sluice/sdk/build"
)

// Join functions (ABI.md section 14): joiner, which joins each pair's
// values as "L|R" and marks window joins with a header, written in each
// language and run through the host's Instance.Join against the same
// expected results, which the Go version, plugins/joiner, gives too.

func TestConformanceJoin(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the join operator in every language; skipped in -short mode")
	}
	for _, lang := range append([]build.Language{build.Go}, languages...) {
		t.Run(string(lang), func(t *testing.T) { testJoiner(t, module(t, lang, "joiner")) })
	}
}

func testJoiner(t *testing.T, wasm []byte) {
	ctx := context.Background()
	i := windowInstance(t, wasm, plugin.KindJoin)
	rec := func(key, v string, tm int64, hs ...string) *abi.Record {
		r := &abi.Record{Key: []byte(key), Value: []byte(v), Time: tm}
		for k := 0; k+1 < len(hs); k += 2 {
			r.Headers = append(r.Headers, abi.Header{Name: []byte(hs[k]), Value: []byte(hs[k+1])})
		}
		return r
	}
	w := &plugin.Window{Start: 0, End: 100}
	late := &plugin.Window{Start: -100, End: 0, Firing: plugin.FiringLate}
	pairs := []plugin.JoinPair{
		{Key: []byte("a"), Time: 99, Window: w, Left: rec("a", "x", 10, "h", "1"), Right: rec("a", "y", 20)},
		{Key: []byte("b"), Time: 99, Window: w, Left: rec("b", "only", 30)},
		{Key: []byte("c"), Time: -1, Window: late, Right: rec("c", "", -50)},
		{Key: []byte("d"), Time: 70, Left: rec("d", "p", 50), Right: rec("d", "q", 70)},
		{Key: []byte("e"), Time: 99, Window: w, Left: rec("e", "twice", 1), Right: rec("e", "z", 2)},
		{Key: []byte("f"), Time: 99, Window: w, Left: rec("f", "none", 1), Right: rec("f", "z", 2)},
		{Key: []byte("g"), Time: 99, Window: w, Left: rec("g", "v", 1), Right: rec("g", "bad", 2)},
		{Key: []byte("bin \x00\xff"), Time: 5, Left: rec("bin \x00\xff", "bad", 5)},
		{Key: []byte("h"), Time: 8, Right: rec("h", "{\"j\":1}", 8)},
	}
	var out plugin.Output
	if err := i.Join(ctx, pairs, &out); err != nil {
		t.Fatal(err)
	}
	win := func(start, end int64) string {
		return fmt.Sprintf(" window=%q", abi.AppendWindowTime(abi.AppendWindowTime(nil, start), end))
	}
	const bad = `plugin "op.wasm": input record %d rejected by the operator: bad value in pair`
	want := []string{
		`0 "a" "x|y" 99` + win(0, 100),
		`1 "b" "only|-" 99` + win(0, 100),
		`2 "c" "-|" -1` + win(-100, 0),
		`3 "d" "p|q" 70`,
		`4 "e" "twice|z" 99` + win(0, 100),
		`4 "e" "twice|z" 99` + win(0, 100),
		`8 "h" "-|{\"j\":1}" 8`,
		"reject 6: " + fmt.Sprintf(bad, 6),
		"reject 7: " + fmt.Sprintf(bad, 7),
	}
	if got := joinOutputs(&out); !slices.Equal(got, want) {
		t.Errorf("join:\n got  %q\n want %q", got, want)
	}
}

// joinOutputs is outputs with each record's headers.
func joinOutputs(out *plugin.Output) []string {
	s := outputs(out)
	for k, r := range out.Records {
		for _, h := range r.Headers {
			s[k] += fmt.Sprintf(" %s=%q", h.Name, h.Value)
		}
	}
	return s
}
