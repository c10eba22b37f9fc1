package plugin

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/abi"
	"github.com/sluicehq/sluice/runtime"
)

//go:generate sh testdata/window/build.sh

// windowDir holds the modules of the window function tests (ABI.md
// section 13): agg, a count per key, and window, which forwards each
// window's head and records. Their comments say which keys and values
// make them misbehave.
const windowDir = "testdata/window"

// The committed .wasm files are what build.sh makes of the .wat files.
func TestWindowModulesUpToDate(t *testing.T) {
	if _, err := exec.LookPath("wat2wasm"); err != nil {
		t.Skip("wat2wasm (wabt) is not installed")
	}
	dir := t.TempDir()
	files, _ := filepath.Glob(filepath.Join(windowDir, "*"))
	for _, f := range files {
		if b, err := os.ReadFile(f); err == nil && !strings.HasSuffix(f, ".wasm") {
			if err := os.WriteFile(filepath.Join(dir, filepath.Base(f)), b, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	if b, err := exec.Command("sh", filepath.Join(dir, "build.sh")).CombinedOutput(); err != nil {
		t.Fatalf("build.sh: %v\n%s", err, b)
	}
	for _, name := range []string{"agg", "window", "join"} {
		got, _ := os.ReadFile(filepath.Join(dir, name+".wasm"))
		if !bytes.Equal(got, testdataModule(t, windowDir, name)) {
			t.Errorf("%s.wasm is stale: run go generate ./host/plugin/", name)
		}
	}
}

// windowInstance loads name of windowDir as kind and returns an instance.
func windowInstance(t *testing.T, name string, kind Kind) *Instance {
	t.Helper()
	ctx := context.Background()
	p, err := Load(ctx, newEngine(t, engineConfig()), name+".wasm", testdataModule(t, windowDir, name), kind)
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

func count(n uint64) []byte { return binary.LittleEndian.AppendUint64(nil, n) }

// vals returns records of values.
func vals(values ...string) []abi.Record {
	recs := make([]abi.Record, len(values))
	for k, v := range values {
		recs[k] = abi.Record{Key: []byte("k"), Value: []byte(v), Time: int64(k)}
	}
	return recs
}

// accs returns the counts in out's records.
func accs(t *testing.T, out *Output) []uint64 {
	t.Helper()
	var n []uint64
	for k, r := range out.Records {
		if int(r.Origin) != k || len(r.Value) != 8 {
			t.Fatalf("record %d: origin %d, value %x: want origin %d and an 8-byte count", k, r.Origin, r.Value, k)
		}
		n = append(n, binary.LittleEndian.Uint64(r.Value))
	}
	return n
}

func TestAggAdd(t *testing.T) {
	i := windowInstance(t, "agg", KindAggregate)
	var out Output
	groups := []AddGroup{
		{Key: []byte("a"), Time: 5, Recs: vals("x", "y")},
		{Key: []byte("b"), Acc: count(10), Recs: vals("x", "bad", "z")},
		{Key: []byte("c"), Acc: count(3), Recs: vals("x")},
	}
	if err := i.AggAdd(context.Background(), groups, &out); err != nil {
		t.Fatal(err)
	}
	if got := accs(t, &out); !slices.Equal(got, []uint64{2, 12, 4}) {
		t.Errorf("accumulators %v, want [2 12 4]", got)
	}
	// The rejected member is numbered across the call: a's two, then b's.
	if len(out.Rejects) != 1 || out.Rejects[0].Index != 3 || !errors.Is(out.Rejects[0].Err, ErrRejected) {
		t.Errorf("rejects %+v, want member 3 rejected", out.Rejects)
	}
}

// A call that fails is run again member by member: only the members whose
// own call fails are dead-lettered, the others are folded.
func TestAggAddIsolatesFailures(t *testing.T) {
	for _, bad := range []string{"trap", "error"} {
		t.Run(bad, func(t *testing.T) {
			i := windowInstance(t, "agg", KindAggregate)
			var out Output
			groups := []AddGroup{
				{Key: []byte("a"), Recs: vals("x", bad, "bad", "y")},
				{Key: []byte("b"), Acc: count(7), Recs: vals("x")},
			}
			if err := i.AggAdd(context.Background(), groups, &out); err != nil {
				t.Fatal(err)
			}
			if got := accs(t, &out); !slices.Equal(got, []uint64{2, 8}) {
				t.Errorf("accumulators %v, want [2 8]", got)
			}
			if len(out.Rejects) != 2 || out.Rejects[0].Index != 1 || out.Rejects[1].Index != 2 {
				t.Fatalf("rejects %+v, want members 1 and 2", out.Rejects)
			}
			var re *RecordError
			if !errors.As(out.Rejects[0].Err, &re) || re.Export != abi.ExportAggAdd || re.Index != 1 {
				t.Errorf("reject 0: %v, want a *RecordError of member 1 from %s", out.Rejects[0].Err, abi.ExportAggAdd)
			}
			var rte *runtime.Error
			var se *StatusError
			switch {
			case bad == "trap" && !errors.As(out.Rejects[0].Err, &rte):
				t.Errorf("reject 0: %v, want the trap", out.Rejects[0].Err)
			case bad == "error" && (!errors.As(out.Rejects[0].Err, &se) || se.Reason != "failed"):
				t.Errorf("reject 0: %v, want the StatusError with the guest's reason", out.Rejects[0].Err)
			}
			if !errors.Is(out.Rejects[1].Err, ErrRejected) {
				t.Errorf("reject 1: %v, want the guest's reject", out.Rejects[1].Err)
			}
			// The instance goes on, replaced after a trap.
			out.Reset()
			if err := i.AggAdd(context.Background(), groups[1:], &out); err != nil || !slices.Equal(accs(t, &out), []uint64{8}) {
				t.Errorf("next call: %v, %v", err, out.Records)
			}
		})
	}
}

// An accumulator missing, repeated or out of range fails the call, which is
// then run member by member, where each member's call fails the same way.
func TestAggAddAccumulatorCount(t *testing.T) {
	for key, want := range map[string]string{
		"dup":  "group 0 has two accumulators",
		"none": "group 0 has no accumulator",
		"oops": "output record 0 has Origin 1000, but the input batch has 1 records",
	} {
		t.Run(key, func(t *testing.T) {
			i := windowInstance(t, "agg", KindAggregate)
			var out Output
			if err := i.AggAdd(context.Background(), []AddGroup{{Key: []byte(key), Recs: vals("x")}}, &out); err != nil {
				t.Fatal(err)
			}
			// The group's one member was rejected: the group keeps the
			// accumulator it had, none.
			if len(out.Records) != 1 || len(out.Records[0].Value) != 0 {
				t.Errorf("records %+v, want one empty accumulator", out.Records)
			}
			if len(out.Rejects) != 1 || !strings.Contains(out.Rejects[0].Err.Error(), want) {
				t.Fatalf("rejects %v, want one saying %q", out.Rejects, want)
			}
			if key != "oops" && !errors.Is(out.Rejects[0].Err, ErrAccumulators) {
				t.Errorf("%v does not wrap ErrAccumulators", out.Rejects[0].Err)
			}
		})
	}
}

func TestAggMerge(t *testing.T) {
	i := windowInstance(t, "agg", KindAggregate)
	ctx := context.Background()
	var out Output
	pairs := []MergePair{{Key: []byte("a"), A: count(2), B: count(3)}, {Key: []byte("b"), A: count(1)}}
	if err := i.AggMerge(ctx, pairs, &out); err != nil {
		t.Fatal(err)
	}
	if got := accs(t, &out); !slices.Equal(got, []uint64{5, 1}) {
		t.Errorf("merged %v, want [5 1]", got)
	}
	for key, want := range map[string]string{"dup": "pair 1 has two accumulators", "none": "pair 1 has no accumulator"} {
		out.Reset()
		err := i.AggMerge(ctx, []MergePair{pairs[0], {Key: []byte(key)}}, &out)
		var we *WindowError
		if !errors.As(err, &we) || we.Export != abi.ExportAggMerge || !errors.Is(err, ErrAccumulators) || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: error %v, want a *WindowError saying %q", key, err, want)
		}
		if len(out.Records) != 0 {
			t.Errorf("%s: a failed call left %d records", key, len(out.Records))
		}
	}
	out.Reset()
	err := i.AggMerge(ctx, []MergePair{{Key: []byte("trap")}}, &out)
	var rte *runtime.Error
	if !errors.As(err, &rte) || !strings.Contains(err.Error(), `export "sluice_agg_merge"`) {
		t.Errorf("trap: error %v, want a *WindowError wrapping the trap", err)
	}
	if err := i.AggMerge(ctx, pairs, &out); err != nil || len(out.Records) != 2 {
		t.Errorf("after a trap: %v, %d records", err, len(out.Records))
	}
}

// header returns the value of r's header name.
func header(r *abi.Record, name string) string {
	for _, h := range r.Headers {
		if string(h.Name) == name {
			return string(h.Value)
		}
	}
	return ""
}

func TestAggFire(t *testing.T) {
	i := windowInstance(t, "agg", KindAggregate)
	ctx := context.Background()
	var out Output
	fires := []Fire{
		{Key: []byte("a"), Window: Window{Start: 100, End: 200}, Acc: count(4)},
		{Key: []byte("rej"), Window: Window{Start: 0, End: 10}, Acc: count(1)},
		{Key: []byte("b"), Window: Window{Start: -50, End: 50, Firing: FiringLate}, Acc: count(9)},
	}
	if err := i.AggFire(ctx, fires, &out); err != nil {
		t.Fatal(err)
	}
	if len(out.Records) != 2 {
		t.Fatalf("%d results, want 2", len(out.Records))
	}
	for k, want := range []struct {
		origin     uint32
		key        string
		start, end int64
		firing     string
	}{{0, "a", 100, 200, "on-time"}, {2, "b", -50, 50, "late"}} {
		r := &out.Records[k]
		start, _ := abi.WindowTime([]byte(header(r, abi.HeaderWindowStart)))
		end, _ := abi.WindowTime([]byte(header(r, abi.HeaderWindowEnd)))
		if r.Origin != want.origin || string(r.Key) != want.key || r.Time != want.end-1 || start != want.start || end != want.end ||
			header(r, abi.HeaderFiring) != want.firing || !bytes.Equal(r.Value, fires[r.Origin].Acc) {
			t.Errorf("result %d: %+v, want %+v with time %d", k, r, want, want.end-1)
		}
	}
	if len(out.Rejects) != 1 || out.Rejects[0].Index != 1 {
		t.Errorf("rejects %+v, want fire 1", out.Rejects)
	}
	out.Reset()
	err := i.AggFire(ctx, []Fire{fires[0], {Key: []byte("trap")}}, &out)
	var we *WindowError
	if !errors.As(err, &we) || we.Export != abi.ExportAggFire || len(out.Records) != 0 {
		t.Errorf("trap: %v and %d results, want a *WindowError and none", err, len(out.Records))
	}
}

func TestWindowFire(t *testing.T) {
	i := windowInstance(t, "window", KindWindow)
	ctx := context.Background()
	var out Output
	fires := []FireContents{
		{Key: []byte("a"), Window: Window{Start: 0, End: 10, Firing: FiringEarly}, Recs: vals("1", "2")},
		{Key: []byte("b"), Window: Window{Start: 10, End: 20}, Recs: vals("bad", "3")},
	}
	if err := i.WindowFire(ctx, fires, &out); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range out.Records {
		if r.Time != fires[r.Origin].Window.End-1 {
			t.Errorf("result %+v: time %d, want %d", r, r.Time, fires[r.Origin].Window.End-1)
		}
		got = append(got, string(r.Key)+":"+string(r.Value)+":"+header(&r, abi.HeaderFiring))
	}
	if want := []string{"a::early", "k:1:", "k:2:", "b::on-time", "k:3:"}; !slices.Equal(got, want) {
		t.Errorf("results %q, want %q", got, want)
	}
	if len(out.Rejects) != 1 || out.Rejects[0].Index != 2 {
		t.Errorf("rejects %+v, want record 2 (b's first)", out.Rejects)
	}
	out.Reset()
	err := i.WindowFire(ctx, []FireContents{{Key: []byte("trap")}}, &out)
	var we *WindowError
	if !errors.As(err, &we) || we.Export != abi.ExportWindowFire {
		t.Errorf("trap: %v, want a *WindowError", err)
	}
	if err := i.WindowFire(ctx, fires[:1], &out); err != nil || len(out.Records) != 3 {
		t.Errorf("after a trap: %v, %d results", err, len(out.Records))
	}
}

// The window exports serve their kinds only; the kinds' modules declare
// them and are refused as any other kind; an export of section 13 with the
// wrong signature is refused whatever the kind.
func TestWindowKinds(t *testing.T) {
	ctx := context.Background()
	eng := newEngine(t, engineConfig())
	agg, win := testdataModule(t, windowDir, "agg"), testdataModule(t, windowDir, "window")
	for _, tc := range []struct {
		wasm []byte
		want Kind
	}{{agg, KindAggregate}, {win, KindWindow}} {
		r := mustCheck(ctx, t, eng, "m.wasm", tc.wasm)
		if !r.OK() || !r.KindsDeclared || !slices.Equal(r.Kinds, []Kind{tc.want}) {
			t.Errorf("check: %v %v %q, want %s declared", r.KindsDeclared, r.Kinds, r.Problems, tc.want)
		}
		// Without the section, the kind is inferred from the exports.
		bare := tc.wasm[:len(tc.wasm)-len(abi.SectionKinds)-len(tc.want)-3]
		if r := mustCheck(ctx, t, eng, "m.wasm", bare); !r.OK() || r.KindsDeclared || !slices.Equal(r.Kinds, []Kind{tc.want}) {
			t.Errorf("check without the section: %v %v %q, want %s inferred", r.KindsDeclared, r.Kinds, r.Problems, tc.want)
		}
	}
	le := loadError(t, eng, "agg.wasm", agg, KindMap)
	if !strings.Contains(le.Error(), "registers an aggregate handler (custom section sluice.kinds); the pipeline runs it as map") {
		t.Errorf("as map: %v", le)
	}
	le = loadError(t, eng, "window.wasm", win, KindAggregate)
	if !strings.Contains(le.Error(), "the pipeline runs it as aggregate") {
		t.Errorf("window as aggregate: %v", le)
	}
	bad := wasmModule{memory: true, funcs: append(reactor(abi.Version), wasmFunc{export: abi.ExportAggFire, sig: sig(1, 1), ret: 0})}.bytes()
	le = loadError(t, eng, "bad.wasm", bad, KindMap)
	if !strings.Contains(le.Error(), "export sluice_agg_fire has signature (i32) -> i32, want (i32, i32) -> i32") {
		t.Errorf("bad signature: %v", le)
	}
	le = loadError(t, eng, "bad.wasm", wasmModule{memory: true, funcs: reactor(abi.Version)}.bytes(), KindWindow)
	if !strings.Contains(le.Error(), "missing export sluice_window_fire (i32, i32) -> i32, required by window operators") {
		t.Errorf("window without its export: %v", le)
	}
	// The methods check the kind.
	i := windowInstance(t, "window", KindWindow)
	var out Output
	if err := i.AggAdd(ctx, []AddGroup{{}}, &out); !errors.Is(err, ErrNotWindowed) {
		t.Errorf("AggAdd on a window function: %v", err)
	}
	if err := i.Process(ctx, vals("x"), nil, &out); err == nil {
		t.Error("Process on a window function succeeded")
	}
}

// State functions trap during the window exports: an aggregate has no
// keyed state.
func TestWindowCallsHaveNoState(t *testing.T) {
	c := &call{kind: KindAggregate}
	c.begin(abi.ExportAggAdd, nil, &Output{}, 1, 0)
	defer func() {
		var he *runtime.HostError
		if err, _ := recover().(error); !errors.As(err, &he) || !strings.Contains(he.Reason, "only keyed operators have state") {
			t.Errorf("state during %s: %v", abi.ExportAggAdd, err)
		}
	}()
	c.state(abi.FuncStateGet)
}

// referenceModule builds sdk/wat/reference/NAME.wat with wat2wasm, or
// skips the test when wabt is not installed.
func referenceModule(t *testing.T, name string) []byte {
	t.Helper()
	if _, err := exec.LookPath("wat2wasm"); err != nil {
		t.Skip("wat2wasm (wabt) is not installed")
	}
	out := filepath.Join(t.TempDir(), name+".wasm")
	if b, err := exec.Command("wat2wasm", "../../sdk/wat/reference/"+name+".wat", "-o", out).CombinedOutput(); err != nil {
		t.Fatalf("wat2wasm: %v\n%s", err, b)
	}
	wasm, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	return wasm
}

// sdk/wat/reference/aggregate.wat, the reference aggregate of ABI.md
// section 13, does what its comments say.
func TestReferenceAggregate(t *testing.T) {
	wasm := referenceModule(t, "aggregate")
	ctx := context.Background()
	p, err := Load(ctx, newEngine(t, engineConfig()), "aggregate.wasm", wasm, KindAggregate)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close(ctx)
	i, err := p.NewInstance(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer i.Close(ctx)
	var o Output
	if err := i.AggAdd(ctx, []AddGroup{{Key: []byte("a"), Recs: vals("x", "y")}, {Key: []byte("b"), Acc: count(3), Recs: vals("z")}}, &o); err != nil {
		t.Fatal(err)
	}
	if got := accs(t, &o); !slices.Equal(got, []uint64{2, 4}) {
		t.Errorf("add: %v, want [2 4]", got)
	}
	o.Reset()
	if err := i.AggMerge(ctx, []MergePair{{Key: []byte("a"), A: count(2), B: count(4)}}, &o); err != nil || !slices.Equal(accs(t, &o), []uint64{6}) {
		t.Errorf("merge: %v %v, want [6]", err, o.Records)
	}
	o.Reset()
	if err := i.AggFire(ctx, []Fire{{Key: []byte("a"), Window: Window{Start: 0, End: 60}, Acc: count(6)}}, &o); err != nil {
		t.Fatal(err)
	}
	if len(o.Records) != 1 || string(o.Records[0].Key) != "a" || string(o.Records[0].Value) != "6" || o.Records[0].Time != 59 {
		t.Errorf("fire: %+v, want a: 6 at 59", o.Records)
	}
}

// A call of the window exports allocates no more for many groups than for
// one: inputs are encoded straight into guest memory, outputs into the
// Output's arena, and the buffers are reused.
func TestWindowCallsDoNotAllocatePerGroup(t *testing.T) {
	if raceEnabled {
		t.Skip("allocation counts are not meaningful under the race detector")
	}
	ctx := context.Background()
	p, err := Load(ctx, newEngine(t, engineConfig().WithCallTimeout(0)), "agg.wasm", testdataModule(t, windowDir, "agg"), KindAggregate)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close(ctx)
	i, err := p.NewInstance(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer i.Close(ctx)
	allocs := func(n int) (add, merge, fire float64) {
		groups := make([]AddGroup, n)
		pairs := make([]MergePair, n)
		fires := make([]Fire, n)
		for g := range groups {
			groups[g] = AddGroup{Key: []byte("k"), Acc: count(1), Recs: vals("x", "y", "z")}
			pairs[g] = MergePair{Key: []byte("k"), A: count(1), B: count(2)}
			fires[g] = Fire{Key: []byte("k"), Window: Window{End: 10}, Acc: count(3)}
		}
		var out Output
		measure := func(call func() error) float64 {
			run := func() {
				out.Reset()
				if err := call(); err != nil {
					t.Fatal(err)
				}
			}
			for range 3 {
				run()
			}
			return testing.AllocsPerRun(20, run)
		}
		return measure(func() error { return i.AggAdd(ctx, groups, &out) }),
			measure(func() error { return i.AggMerge(ctx, pairs, &out) }),
			measure(func() error { return i.AggFire(ctx, fires, &out) })
	}
	a1, m1, f1 := allocs(1)
	a2, m2, f2 := allocs(512)
	t.Logf("allocations per call, 1 group and 512: add %.1f %.1f, merge %.1f %.1f, fire %.1f %.1f", a1, a2, m1, m2, f1, f2)
	if a2 > a1+1 || m2 > m1+1 || f2 > f1+1 {
		t.Errorf("allocations grow with the groups: add %.1f -> %.1f, merge %.1f -> %.1f, fire %.1f -> %.1f", a1, a2, m1, m2, f1, f2)
	}
}
