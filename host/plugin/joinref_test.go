package plugin

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/abi"
)

// sdk/wat/reference/join.wat, the reference join function of ABI.md
// section 14, does what its comments say: one result per pair, the pair's
// key and "left,right", a side the pair lacks contributing nothing.
func TestReferenceJoin(t *testing.T) {
	wasm := referenceModule(t, "join")
	ctx := context.Background()
	eng := newEngine(t, engineConfig())
	// Its sluice_kinds declares a join, as sluice plugin build writes it.
	wasm, kinds, err := DeclareKinds(ctx, eng, "join.wasm", wasm)
	if err != nil || !slices.Equal(kinds, []Kind{KindJoin}) {
		t.Fatalf("declared kinds %v, %v; want [join]", kinds, err)
	}
	if le := loadError(t, eng, "join.wasm", wasm, KindWindow); !strings.Contains(le.Error(), "registers a join handler") {
		t.Errorf("loaded as a window function: %v", le)
	}
	p, err := Load(ctx, eng, "join.wasm", wasm, KindJoin)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close(ctx)
	i, err := p.NewInstance(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer i.Close(ctx)

	rec := func(key, v string, tm int64) *abi.Record {
		return &abi.Record{Key: []byte(key), Value: []byte(v), Time: tm, Headers: []abi.Header{{Name: []byte("h"), Value: []byte("x")}}}
	}
	results := func(o *Output) []string {
		var s []string
		for _, r := range o.Records {
			s = append(s, fmt.Sprintf("%d %q %q %d headers=%d", r.Origin, r.Key, r.Value, r.Time, len(r.Headers)))
		}
		for _, r := range o.Rejects {
			s = append(s, fmt.Sprintf("reject %d: %v", r.Index, r.Err))
		}
		return s
	}
	join := func(pairs ...JoinPair) []string {
		t.Helper()
		var o Output
		if err := i.Join(ctx, pairs, &o); err != nil {
			t.Fatal(err)
		}
		return results(&o)
	}
	w := &Window{Start: 0, End: 60}
	late := &Window{Start: -60, End: 0, Firing: FiringLate}

	cases := []struct {
		name string
		pair JoinPair
		want string
	}{
		{"a matched pair", JoinPair{Key: []byte("a"), Time: 59, Window: w, Left: rec("a", "x", 10), Right: rec("a", "y", 20)}, `0 "a" "x,y" 59 headers=0`},
		{"a lone left", JoinPair{Key: []byte("b"), Time: 59, Window: w, Left: rec("b", "only", 30)}, `0 "b" "only," 59 headers=0`},
		{"a lone right", JoinPair{Key: []byte("c"), Time: -1, Window: late, Right: rec("c", "r", -30)}, `0 "c" ",r" -1 headers=0`},
		{"an interval pair", JoinPair{Key: []byte("d"), Time: 70, Left: rec("d", "p", 50), Right: rec("d", "q", 70)}, `0 "d" "p,q" 70 headers=0`},
		{"empty values", JoinPair{Key: []byte("bin \x00\xff"), Time: 5, Left: rec("bin \x00\xff", "", 5), Right: rec("bin \x00\xff", "", 5)}, `0 "bin \x00\xff" "," 5 headers=0`},
	}
	var all []JoinPair
	var want []string
	for k, c := range cases {
		if got := join(c.pair); !slices.Equal(got, []string{c.want}) {
			t.Errorf("%s: %q, want %q", c.name, got, c.want)
		}
		all = append(all, c.pair)
		// In one call, each result's origin is its pair's index.
		want = append(want, fmt.Sprint(k)+c.want[1:])
	}
	if got := join(all...); !slices.Equal(got, want) {
		t.Errorf("several pairs:\n got  %q\n want %q", got, want)
	}

	// A call larger than the module's initial memory grows it, input and
	// results alike.
	var many []JoinPair
	want = want[:0]
	for k := range 3000 {
		l, r := strings.Repeat("l", k%200), fmt.Sprintf("r%d", k)
		key := fmt.Sprintf("k%d", k)
		many = append(many, JoinPair{Key: []byte(key), Time: int64(k), Left: rec(key, l, 0), Right: rec(key, r, int64(k))})
		want = append(want, fmt.Sprintf("%d %q %q %d headers=0", k, key, l+","+r, k))
	}
	if got := join(many...); !slices.Equal(got, want) {
		t.Errorf("%d pairs: got %d results, want %d; first difference at %d", len(many), len(got), len(want), firstDiff(got, want))
	}
}

// firstDiff returns the index of the first element in which a and b
// differ, or the shorter one's length.
func firstDiff(a, b []string) int {
	for k := range min(len(a), len(b)) {
		if a[k] != b[k] {
			return k
		}
	}
	return min(len(a), len(b))
}

// The reference join checks what it reads, as section 4 says a decoder
// must and section 14.1 says a pair is: a batch it cannot read fails the
// call with StatusError, the reason logged. The host never sends one, so
// the batches are encoded here and passed to sluice_join directly.
func TestReferenceJoinRefusesMalformedInput(t *testing.T) {
	wasm := referenceModule(t, "join")
	ctx := context.Background()
	// The reasons are checked below, not logged.
	p, err := Load(ctx, newEngine(t, engineConfig()), "join.wasm", wasm, KindJoin, WithLogger(slog.New(slog.DiscardHandler)))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close(ctx)
	i, err := p.NewInstance(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer i.Close(ctx)

	// call passes batch to sluice_join and returns the records emitted.
	call := func(batch []byte) ([]string, error) {
		t.Helper()
		if err := i.ensure(ctx); err != nil {
			t.Fatal(err)
		}
		var o Output
		cctx := i.beginWindow(ctx, abi.ExportJoin, domainJoin, &o, 1, 1)
		defer i.c.end(ctx)
		ptr, buf, err := i.reserveInput(cctx, len(batch))
		if err != nil {
			t.Fatal(err)
		}
		copy(buf, batch)
		err = i.callWindow(ctx, cctx, i.wf.join, abi.ExportJoin, ptr, buf[:len(batch)], len(batch))
		var s []string
		for _, r := range o.Records {
			s = append(s, fmt.Sprintf("%d %s %s", r.Origin, r.Key, r.Value))
		}
		return s, err
	}
	l := &abi.Record{Key: []byte("k"), Value: []byte("L")}
	r := &abi.Record{Key: []byte("k"), Value: []byte("R")}
	// pair encodes one pair: its head's value, then members.
	pair := func(value []byte, members ...*abi.Record) []byte {
		b := abi.AppendBatchHeader(nil, 1)
		b = appendHead(b, 0, []byte("k"), 9, value, &Window{End: 10})
		b = abi.AppendBatchHeader(b, uint32(len(members)))
		for k, m := range members {
			b = appendMember(b, m, uint32(k), false)
		}
		return b
	}
	good := pair([]byte{3}, l, r)
	if got, err := call(good); err != nil || !slices.Equal(got, []string{"0 k L,R"}) {
		t.Fatalf("a well-formed pair: %q, %v", got, err)
	}
	const (
		malformed = "sluice_join: malformed input"
		sides     = "sluice_join: a head's value is not one byte of sides"
		count     = "sluice_join: a pair's record count differs from its head's sides"
	)
	for _, c := range []struct {
		name  string
		batch []byte
		want  string
	}{
		{"no count", nil, malformed},
		{"a cut record", good[:len(good)-1], malformed},
		{"a byte after the last pair", append(slices.Clip(good), 0), malformed},
		{"a pair count too large", append(abi.AppendBatchHeader(nil, 2), good[4:]...), malformed},
		{"sides 0", pair([]byte{0}), sides},
		{"sides 4", pair([]byte{4}, l), sides},
		{"two bytes of sides", pair([]byte{1, 0}, l), sides},
		{"no value", pair(nil, l), sides},
		{"both sides, one record", pair([]byte{3}, l), count},
		{"the left side, two records", pair([]byte{1}, l, r), count},
		{"the right side, no record", pair([]byte{2}), count},
	} {
		got, err := call(c.batch)
		var se *StatusError
		if !errors.As(err, &se) || se.Status != abi.StatusError || se.Reason != c.want || got != nil {
			t.Errorf("%s: %q, %v; want StatusError %q and no results", c.name, got, err, c.want)
		}
	}
	// The instance goes on.
	if got, err := call(good); err != nil || !slices.Equal(got, []string{"0 k L,R"}) {
		t.Errorf("a well-formed pair after the failures: %q, %v", got, err)
	}
}
