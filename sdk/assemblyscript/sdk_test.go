package assemblyscript_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"go.uber.org/goleak"

	"github.com/sluicehq/sluice/abi"
	"github.com/sluicehq/sluice/host/plugin"
	"github.com/sluicehq/sluice/host/plugin/hosttest"
	"github.com/sluicehq/sluice/host/txnop"
	"github.com/sluicehq/sluice/runtime"
	"github.com/sluicehq/sluice/sdk/go/sluice"
	"github.com/sluicehq/sluice/sdk/go/sluice/sluicetest"
	"github.com/sluicehq/sluice/txn"
)

func TestMain(m *testing.M) {
	// The transactional harness logs guest messages to slog's default
	// logger; the failures the tests provoke are expected.
	slog.SetDefault(slog.New(slog.DiscardHandler))
	goleak.VerifyTestMain(m)
}

// asc returns the AssemblyScript compiler installed in this directory by
// `npm install`, or skips the test when there is none.
func asc(t testing.TB) string {
	t.Helper()
	p, err := filepath.Abs(filepath.Join("node_modules", ".bin", "asc"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(p); err != nil {
		t.Skip("AssemblyScript is not installed: run `npm install` in sdk/assemblyscript (see README.md)")
	}
	return p
}

var (
	modulesMu sync.Mutex
	modules   = map[string][]byte{}
)

// build compiles the operator in dir (its assembly/index.ts) with the
// SDK's build command, once per test binary, and returns the module.
func build(t testing.TB, dir string) []byte {
	t.Helper()
	compiler := asc(t)
	modulesMu.Lock()
	defer modulesMu.Unlock()
	if m, ok := modules[dir]; ok {
		return m
	}
	out := filepath.Join(t.TempDir(), "op.wasm")
	cmd := exec.Command(compiler, "assembly/index.ts", "-O3", "--runtime", "stub", "--noAssert", "--use", "abort=", "-o", out)
	cmd.Dir = dir
	if o, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("building %s: %v\n%s", dir, err, o)
	}
	m, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	modules[dir] = m
	return m
}

// load builds the operator in testdata/name and loads it as an operator
// of kind.
func load(t *testing.T, name string, kind plugin.Kind) *hosttest.WasmModule {
	t.Helper()
	m, err := hosttest.LoadWasm(context.Background(), name, build(t, filepath.Join("testdata", name)), kind)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = m.Close(context.Background()) })
	return m
}

func rec(key, value string, time int64, headers ...string) sluice.Record {
	r := sluice.Record{Key: []byte(key), Value: []byte(value), Time: time}
	for i := 0; i+1 < len(headers); i += 2 {
		r.Headers = append(r.Headers, sluice.Header{Name: []byte(headers[i]), Value: []byte(headers[i+1])})
	}
	return r
}

// show renders outputs as "origin key=value@time [name:value ...]".
func show(outs []sluicetest.Output) []string {
	var s []string
	for _, o := range outs {
		line := fmt.Sprintf("%d %s=%s@%d", o.Origin, o.Key, o.Value, o.Time)
		for _, h := range o.Headers {
			line += fmt.Sprintf(" %s:%s", h.Name, h.Value)
		}
		s = append(s, line)
	}
	return s
}

func showRejects(rs []sluicetest.Reject) []string {
	var s []string
	for _, r := range rs {
		msg := r.Message
		switch {
		case errors.Is(r.Err, sluicetest.ErrTrap):
			msg = "(trapped)"
		case r.Err != nil:
			msg = "(failed) " + msg
		}
		s = append(s, fmt.Sprintf("%d %s", r.Origin, msg))
	}
	return s
}

func check(t *testing.T, what string, got, want []string) {
	t.Helper()
	if !reflect.DeepEqual(got, want) {
		t.Errorf("%s:\n got  %q\n want %q", what, got, want)
	}
}

// TestModuleShape: every operator built as the README says imports only
// from module "sluice", exports what its kind needs, and the host accepts
// it for that kind and no other.
func TestModuleShape(t *testing.T) {
	ctx := context.Background()
	eng, err := runtime.NewWazero(ctx, runtime.NewConfig().WithHostModules(plugin.HostModule()))
	if err != nil {
		t.Fatal(err)
	}
	defer eng.Close(ctx)
	for name, kinds := range map[string][]plugin.Kind{
		"map":     {plugin.KindMap, plugin.KindFilter, plugin.KindFlatMap, plugin.KindKeyed},
		"keyed":   {plugin.KindMap, plugin.KindFilter, plugin.KindFlatMap, plugin.KindKeyed},
		"txn":     {plugin.KindTransactional},
		"join":    {plugin.KindJoin},
		"example": {plugin.KindMap, plugin.KindFilter, plugin.KindFlatMap, plugin.KindKeyed},
	} {
		dir := filepath.Join("testdata", name)
		if name == "example" {
			dir = "example"
		}
		r, err := plugin.Check(ctx, eng, name, build(t, dir))
		if err != nil {
			t.Fatal(err)
		}
		if !r.OK() {
			t.Errorf("%s: the host refuses it: %v", name, r.Problems)
		}
		if r.ABIVersion != abi.Version {
			t.Errorf("%s: ABI version %d", name, r.ABIVersion)
		}
		if !reflect.DeepEqual(r.Kinds, kinds) {
			t.Errorf("%s: serves %v, want %v", name, r.Kinds, kinds)
		}
		for _, imp := range r.Imports {
			if imp.Module != abi.HostModule {
				t.Errorf("%s imports %s.%s", name, imp.Module, imp.Name)
			}
		}
	}
}

// TestAlloc: sluice_alloc as ABI.md section 2.2 has it: regions handed out
// before a consuming call are distinct, size 0 gets a valid non-zero
// pointer, and a size the instance's memory cannot hold, or a negative
// one, gets 0 rather than a trap.
func TestAlloc(t *testing.T) {
	ctx := context.Background()
	emitted := 0
	rt, mod := benchModule(ctx, t, "identity", &emitted, 64) // 4 MiB
	defer rt.Close(ctx)
	alloc := mod.ExportedFunction(abi.ExportAlloc)
	call := func(size int32) uint32 {
		res, err := alloc.Call(ctx, uint64(uint32(size)))
		if err != nil {
			t.Fatalf("sluice_alloc(%d): %v", size, err)
		}
		return uint32(res[0])
	}
	a, b, z := call(100), call(100), call(0)
	if a == 0 || b == 0 || z == 0 || b < a+100 && a < b+100 {
		t.Errorf("regions %d, %d (100 bytes each) and %d (0 bytes)", a, b, z)
	}
	for _, size := range []int32{-1, 8 << 20, 1<<30 + 1} {
		if p := call(size); p != 0 {
			t.Errorf("sluice_alloc(%d) = %d, want 0", size, p)
		}
	}
	// The instance still works after refusing.
	if p := call(1 << 20); p == 0 {
		t.Error("sluice_alloc(1 MiB) = 0 after a refusal")
	}
}

func TestMap(t *testing.T) {
	h := load(t, "map", plugin.KindMap).New()
	defer h.Close()
	outs, rejects, err := h.Process(
		rec("upper", "abc XyZ é", 1, "a", "b"),
		rec("same", "same", 2),
		rec("value", "x", 3, "a", "b"),
		rec("key", "k", 4),
		rec("time", "t", 5),
		rec("hdr", "h1", 6),
		rec("hdr", "h2", 7, "h", "old", "h", "second"),
		rec("reject", "r\x00", 8),
		rec("hdrkeep", "kept", 9, "a", "1", "b", "2"),
		rec("same", "", 10),
	)
	if err != nil {
		t.Fatal(err)
	}
	check(t, "outputs", show(outs), []string{
		"0 upper=ABC XYZ é@1 a:b",
		"1 same=same@2",
		"2 value=v:x@3 a:b",
		"3 k2=k@4",
		"4 time=t@6",
		"5 hdr=h1@6 h:x",
		"6 hdr=h2@7 h:x h:second",
		"8 hdrkeep=kept@9 a:1 b:2",
		"9 same=@10",
	})
	check(t, "rejects", showRejects(rejects), []string{`7 rejected "r\x00"`})

	// A trap dead-letters its record alone: the host replaces the
	// instance and runs the batch again one record per call.
	outs, rejects, err = h.Process(rec("same", "a", 1), rec("trap", "b", 2), rec("upper", "c", 3))
	if err != nil {
		t.Fatal(err)
	}
	check(t, "outputs after a trap", show(outs), []string{"0 same=a@1", "2 upper=C@3"})
	check(t, "rejects after a trap", showRejects(rejects), []string{"1 (trapped)"})
}

// TestInputs: the SDK declares abi.FeatureInputs, so a handler reads the
// input each record arrived on; a forwarded record keeps it in its flags,
// which the host accepts from a module that declared it.
func TestInputs(t *testing.T) {
	h := load(t, "map", plugin.KindMap).New()
	defer h.Close()
	in := []sluice.Record{rec("input", "", 1), rec("input", "", 2), rec("same", "s", 3), rec("input", "", 4)}
	in[0].Input, in[2].Input, in[3].Input = 1, 1, 65535
	outs, rejects, err := h.Process(in...)
	if err != nil {
		t.Fatal(err)
	}
	check(t, "outputs", show(outs), []string{"0 input=1@1", "1 input=0@2", "2 same=s@3", "3 input=65535@4"})
	check(t, "rejects", showRejects(rejects), nil)
}

func TestFilter(t *testing.T) {
	h := load(t, "filter", plugin.KindFilter).New()
	defer h.Close()
	var in []sluice.Record
	for i, v := range []string{"keep", "drop", "", "reject", "k", "kk"} {
		in = append(in, rec("k"+strconv.Itoa(i), v, int64(i), "h", v))
	}
	outs, rejects, err := h.Process(in...)
	if err != nil {
		t.Fatal(err)
	}
	check(t, "outputs", show(outs), []string{"0 k0=keep@0 h:keep", "4 k4=k@4 h:k", "5 k5=kk@5 h:kk"})
	check(t, "rejects", showRejects(rejects), []string{"3 no r"})
}

func TestFlatMapConfigure(t *testing.T) {
	m := load(t, "flatmap", plugin.KindFlatMap)
	h := m.New()
	defer h.Close()
	outs, rejects, err := h.Process(rec("a", "x", 7, "n", "v"), rec("b", "reject", 8), rec("c", "y", 9))
	if err != nil {
		t.Fatal(err)
	}
	check(t, "outputs without config", show(outs), []string{"0 a=x/copy0@7 n:v", "0 a=x/copy1@7 n:v", "2 c=y/copy0@9", "2 c=y/copy1@9"})
	check(t, "rejects", showRejects(rejects), []string{"1 rejected after emitting"})

	h3 := m.New()
	defer h3.Close()
	if err := h3.Configure([]byte("3")); err != nil {
		t.Fatal(err)
	}
	outs, _, err = h3.Process(rec("a", "x", 1))
	if err != nil || len(outs) != 3 {
		t.Fatalf("config 3: %v, %q", err, show(outs))
	}

	bad := m.New()
	defer bad.Close()
	err = bad.Configure([]byte("x1"))
	if !errors.Is(err, sluicetest.ErrBadConfig) || !strings.Contains(err.Error(), "invalid configuration: config x1 is not a count") {
		t.Errorf("bad config: %v", err)
	}

	// Outputs past the flush size reach the host in several emits.
	outs, _, err = h.Process(rec("big", "big", 1), rec("c", "z", 2))
	if err != nil || len(outs) != 4 || len(outs[0].Value) != 3<<20 || len(outs[1].Value) != 3<<20 {
		t.Fatalf("big outputs: %v, %d outputs", err, len(outs))
	}
}

// TestNoConfigureHandler: an operator without a configure handler takes
// an absent, null or empty configuration only, as the Go SDK's.
func TestNoConfigureHandler(t *testing.T) {
	m := load(t, "map", plugin.KindMap)
	for _, c := range []string{"", " ", "null", " {} ", "\u00a0null\u2028"} {
		h := m.New()
		if err := h.Configure([]byte(c)); err != nil {
			t.Errorf("config %q: %v", c, err)
		}
		h.Close()
	}
	h := m.New()
	defer h.Close()
	err := h.Configure([]byte(`{"a":1}`))
	if !errors.Is(err, sluicetest.ErrBadConfig) || !strings.Contains(err.Error(), "this operator takes no configuration") {
		t.Errorf("config with no handler: %v", err)
	}
}

func TestKeyed(t *testing.T) {
	h := load(t, "keyed", plugin.KindKeyed).New().Declare("counts", "other")
	defer h.Close()
	outs, rejects, err := h.Process(
		rec("a", "inc", 1), rec("b", "inc", 2), rec("a", "inc", 3), rec("a", "other", 4), rec("a", "other", 5),
		rec("b", "reject", 6), rec("c", "big", 7), rec("b", "del", 8),
	)
	if err != nil {
		t.Fatal(err)
	}
	check(t, "outputs", show(outs), []string{"0 a=1@1", "1 b=1@2", "2 a=2@3", "3 a=o@4", "4 a=oo@5", "6 c=1000@7", "7 b=deleted@8"})
	check(t, "rejects", showRejects(rejects), []string{"5 rejected"})
	for _, c := range []struct{ table, key, want string }{
		{"counts", "a", "2"}, {"other", "a", "oo"}, {"counts", "b", ""}, {"counts", "c", strings.Repeat("z", 1000)},
	} {
		if v, _ := h.State(c.table, c.key); string(v) != c.want {
			t.Errorf("state %s/%s = %q, want %q", c.table, c.key, v, c.want)
		}
	}
	// The rejected record's put was undone.
	if v, ok := h.State("counts", "b"); ok {
		t.Errorf("counts/b = %q after its delete and a rejected put", v)
	}
	// An undeclared table traps: that record alone is dead-lettered.
	outs, rejects, err = h.Process(rec("d", "inc", 1), rec("d", "undecl", 2))
	if err != nil {
		t.Fatal(err)
	}
	check(t, "outputs around a trap", show(outs), []string{"0 d=1@1"})
	check(t, "rejects around a trap", showRejects(rejects), []string{"1 (trapped)"})
}

// TestRegistrationMistakes: an operator that registers no handler fails
// its calls, and one that registers two fails its configuration, with a
// message saying so.
func TestRegistrationMistakes(t *testing.T) {
	h := load(t, "none", plugin.KindMap).New()
	_, rejects, err := h.Process(rec("a", "b", 1))
	h.Close()
	if err != nil || len(rejects) != 1 || !strings.Contains(rejects[0].Message, "no handler registered") {
		t.Errorf("no handler: %v, rejects %+v", err, rejects)
	}
	h = load(t, "twice", plugin.KindMap).New()
	_, _, err = h.Process(rec("a", "b", 1))
	h.Close()
	if !errors.Is(err, sluicetest.ErrBadConfig) || !strings.Contains(err.Error(), "flatMap called, but map already registered a handler") {
		t.Errorf("two handlers: %v", err)
	}
}

// TestMemoryStaysFlat: the SDK releases each call's allocations (records,
// outputs, strings, arrays) when the next call starts, so the heap top at
// the end of a batch is the same after thousands of batches as after the
// first few, whatever the batches allocated.
func TestMemoryStaysFlat(t *testing.T) {
	for _, c := range []struct {
		name string
		kind plugin.Kind
		in   func(i int) sluice.Record
	}{
		{"map", plugin.KindMap, func(i int) sluice.Record { return rec("value", strings.Repeat("v", i%300), int64(i), "h", "x") }},
		{"flatmap", plugin.KindFlatMap, func(i int) sluice.Record { return rec("k", strconv.Itoa(i), int64(i)) }},
	} {
		t.Run(c.name, func(t *testing.T) {
			h := load(t, c.name, c.kind).New()
			defer h.Close()
			heap := func(batch []sluice.Record) uint64 {
				if c.name == "map" {
					batch = append(batch, rec("heap", "", 0))
				} else {
					batch = append(batch, rec("k", "heap", 0))
				}
				outs, rejects, err := h.Process(batch...)
				if err != nil || len(rejects) > 0 {
					t.Fatal(err, rejects)
				}
				n, err := strconv.ParseUint(string(outs[len(outs)-1].Value), 10, 64)
				if err != nil {
					t.Fatal(err)
				}
				return n
			}
			batch := make([]sluice.Record, 500)
			for i := range batch {
				batch[i] = c.in(i)
			}
			first := heap(batch)
			for range 300 {
				heap(batch)
			}
			if last := heap(batch); last != first {
				t.Errorf("heap top %d after 300 batches, %d after the first", last, first)
			}
		})
	}
}

// joinInstance builds testdata/join and returns an instance of it loaded
// as a join, on which the tests call (*plugin.Instance).Join as the host's
// join operator does: several pairs per call.
func joinInstance(t *testing.T) *plugin.Instance {
	t.Helper()
	ctx := context.Background()
	wasm := build(t, filepath.Join("testdata", "join"))
	eng, err := runtime.NewWazero(ctx, runtime.NewConfig().WithHostModules(plugin.HostModule()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = eng.Close(ctx) })
	p, err := plugin.Load(ctx, eng, "join.wasm", wasm, plugin.KindJoin)
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

// joinRec is a join's input record of key k and value v, at time tm, from
// input in, with headers (name, value, ...).
func joinRec(k, v string, tm int64, in uint16, headers ...string) *abi.Record {
	r := &abi.Record{Key: []byte(k), Value: []byte(v), Time: tm, Input: in}
	for i := 0; i+1 < len(headers); i += 2 {
		r.Headers = append(r.Headers, abi.Header{Name: []byte(headers[i]), Value: []byte(headers[i+1])})
	}
	return r
}

// joinResults renders a join call's outputs as "origin key=value@time
// [name:value ...]", key and value quoted (a value over 64 bytes as its
// length), and its rejects as "reject index reason", "(trapped)" for a
// pair whose own call trapped.
func joinResults(out *plugin.Output) []string {
	var s []string
	for _, r := range out.Records {
		v := fmt.Sprintf("%q", r.Value)
		if len(r.Value) > 64 {
			v = fmt.Sprintf("<%d bytes>", len(r.Value))
		}
		line := fmt.Sprintf("%d %q=%s@%d", r.Origin, r.Key, v, r.Time)
		for _, h := range r.Headers {
			line += fmt.Sprintf(" %s:%s", h.Name, h.Value)
		}
		s = append(s, line)
	}
	for _, r := range out.Rejects {
		var re *plugin.RecordError
		var rte *runtime.Error
		switch {
		case errors.Is(r.Err, plugin.ErrRejected) && errors.As(r.Err, &re):
			s = append(s, fmt.Sprintf("reject %d %s", r.Index, re.Reason))
		case errors.As(r.Err, &rte):
			s = append(s, fmt.Sprintf("reject %d (trapped)", r.Index))
		default:
			s = append(s, fmt.Sprintf("reject %d (failed) %v", r.Index, r.Err))
		}
	}
	return s
}

// TestJoin runs the join function of testdata/join through the host's
// Instance.Join: each pair's key, window (none for an interval join),
// left and right records (none for a side an outer join left empty) with
// their times, inputs and headers reach the handler; results take their
// pair's index and time; a reject drops only its pair's results, also
// after earlier pairs' outputs were flushed; the records handed to the
// handler are fresh for each pair whatever it did to them; a trap
// dead-letters only its pair.
func TestJoin(t *testing.T) {
	ctx := context.Background()
	i := joinInstance(t)
	w := &plugin.Window{Start: 0, End: 100}
	early := &plugin.Window{Start: -100, End: 0, Firing: plugin.FiringEarly}
	late := &plugin.Window{Start: 100, End: 200, Firing: plugin.FiringLate}
	pairs := []plugin.JoinPair{
		{Key: []byte("a"), Time: 99, Window: w, Left: joinRec("a", "x", 10, 0, "h", "1"), Right: joinRec("a", "y", 20, 1, "g", "2")},
		{Key: []byte("b"), Time: -1, Window: early, Left: joinRec("b", "mutate", 30, 0, "m", "1")},
		{Key: []byte("c"), Time: 70, Left: joinRec("c", "p", 50, 0), Right: joinRec("c", "q", 70, 1)},
		{Key: []byte("d"), Time: 199, Window: late, Right: joinRec("d", "r", 150, 1)},
		{Key: []byte("e"), Time: 5, Left: joinRec("e", "twice", 5, 0)},
		{Key: []byte("f"), Time: 99, Window: w, Left: joinRec("f", "none", 1, 0), Right: joinRec("f", "z", 2, 1)},
		{Key: []byte("g"), Time: 99, Window: w, Left: joinRec("g", "v", 1, 0), Right: joinRec("g", "reject", 2, 1)},
		{Key: []byte("h"), Time: 7, Left: joinRec("h", "big", 7, 0)},
		{Key: []byte("i"), Time: 8, Left: joinRec("i", "reject", 8, 0), Right: joinRec("i", "s", 8, 1)},
		{Key: []byte("k\x00\xff"), Time: 99, Window: w, Right: joinRec("k\x00\xff", "", 9, 1)},
	}
	var out plugin.Output
	if err := i.Join(ctx, pairs, &out); err != nil {
		t.Fatal(err)
	}
	check(t, "results", joinResults(&out), []string{
		`0 "a"="0..100/on-time x@10#0|y@20#1"@99 h:1 g:2`,
		`1 "b"="mutated"@-1 m:1`,
		`2 "c"="interval p@50#0|q@70#1"@70`,
		`3 "d"="100..200/late -|r@150#1"@199`,
		`4 "e"="interval twice@5#0|-"@5`,
		`4 "e"="interval twice@5#0|-"@5`,
		`7 "h"=<3145728 bytes>@7`,
		`9 "k\x00\xff"="0..100/on-time -|@9#1"@99`,
		"reject 6 rejected pair g",
		"reject 8 rejected pair i",
	})

	// A trap fails the call: the host runs its pairs again one per call,
	// and only the pair that traps is dead-lettered.
	out.Reset()
	pairs = []plugin.JoinPair{
		{Key: []byte("a"), Time: 1, Left: joinRec("a", "x", 1, 0), Right: joinRec("a", "y", 1, 1)},
		{Key: []byte("b"), Time: 2, Left: joinRec("b", "trap", 2, 0)},
		{Key: []byte("c"), Time: 99, Window: w, Right: joinRec("c", "z", 3, 1)},
	}
	if err := i.Join(ctx, pairs, &out); err != nil {
		t.Fatal(err)
	}
	check(t, "results around a trap", joinResults(&out), []string{
		`0 "a"="interval x@1#0|y@1#1"@1`,
		`2 "c"="0..100/on-time -|z@3#1"@99`,
		"reject 1 (trapped)",
	})

	// The SDK releases each call's allocations: the heap top after a call
	// is the same after hundreds of calls as after the first.
	pairs = pairs[:0]
	for k := range 100 {
		key := strconv.Itoa(k)
		pairs = append(pairs, plugin.JoinPair{Key: []byte(key), Time: 99, Window: w,
			Left: joinRec(key, strings.Repeat("v", k), 1, 0, "h", key), Right: joinRec(key, "w", 2, 1)})
	}
	pairs = append(pairs, plugin.JoinPair{Key: []byte("heap"), Time: 1, Left: joinRec("heap", "heap", 1, 0)})
	heap := func() string {
		out.Reset()
		if err := i.Join(ctx, pairs, &out); err != nil || len(out.Rejects) > 0 || len(out.Records) != 101 {
			t.Fatalf("%v, %d results, rejects %q", err, len(out.Records), joinResults(&out)[len(out.Records):])
		}
		return string(out.Records[100].Value)
	}
	first := heap()
	for range 300 {
		heap()
	}
	if last := heap(); last != first {
		t.Errorf("heap top %s after 300 calls, %s after the first", last, first)
	}
}

// TestJoinHarness runs testdata/join through hosttest's Harness.Join, as
// the README shows for an operator's own tests.
func TestJoinHarness(t *testing.T) {
	h := load(t, "join", plugin.KindJoin).New()
	defer h.Close()
	left := rec("k", "l", 10)
	outs, rejects, err := h.Join([]byte("k"), &sluice.Window{Start: 0, End: 60}, &left, nil)
	if err != nil {
		t.Fatal(err)
	}
	check(t, "outputs", show(outs), []string{"0 k=0..60/on-time l@10#0|-@59"})
	check(t, "rejects", showRejects(rejects), nil)
	right := rec("k", "reject", 20)
	right.Input = 1
	outs, rejects, err = h.Join([]byte("k"), nil, &left, &right)
	if err != nil {
		t.Fatal(err)
	}
	check(t, "outputs of a rejected pair", show(outs), nil)
	check(t, "rejects", showRejects(rejects), []string{"0 rejected pair k"})
}

// rawGuest is a module under wazero with host functions that record what
// it emits, rejects and logs, for calls with inputs the host never makes.
type rawGuest struct {
	mod     api.Module
	emits   int
	rejects []string
	logs    []string
}

// newRawGuest instantiates the operator in testdata/name, which may import
// emit, reject and log.
func newRawGuest(ctx context.Context, t *testing.T, name string) *rawGuest {
	t.Helper()
	g := &rawGuest{}
	rt := wazero.NewRuntime(ctx)
	t.Cleanup(func() { _ = rt.Close(ctx) })
	read := func(m api.Module, ptr, n uint64) string {
		b, _ := m.Memory().Read(uint32(ptr), uint32(n))
		return string(b)
	}
	i32 := api.ValueTypeI32
	hb := rt.NewHostModuleBuilder(abi.HostModule)
	hb.NewFunctionBuilder().WithGoModuleFunction(api.GoModuleFunc(func(_ context.Context, _ api.Module, s []uint64) {
		g.emits++
	}), []api.ValueType{i32, i32}, nil).Export(abi.FuncEmit)
	hb.NewFunctionBuilder().WithGoModuleFunction(api.GoModuleFunc(func(_ context.Context, m api.Module, s []uint64) {
		g.rejects = append(g.rejects, fmt.Sprintf("%d %s", uint32(s[0]), read(m, s[1], s[2])))
	}), []api.ValueType{i32, i32, i32}, nil).Export(abi.FuncReject)
	hb.NewFunctionBuilder().WithGoModuleFunction(api.GoModuleFunc(func(_ context.Context, m api.Module, s []uint64) {
		g.logs = append(g.logs, read(m, s[1], s[2]))
	}), []api.ValueType{i32, i32, i32}, nil).Export(abi.FuncLog)
	if _, err := hb.Instantiate(ctx); err != nil {
		t.Fatal(err)
	}
	mod, err := rt.InstantiateModule(ctx, mustCompile(ctx, t, rt, build(t, filepath.Join("testdata", name))), wazero.NewModuleConfig().WithName(name))
	if err != nil {
		t.Fatal(err)
	}
	g.mod = mod
	return g
}

// call writes input into a region from sluice_alloc and calls export with
// it, after forgetting what earlier calls emitted, rejected and logged.
func (g *rawGuest) call(ctx context.Context, t *testing.T, export string, input []byte) int32 {
	t.Helper()
	g.emits, g.rejects, g.logs = 0, nil, nil
	res, err := g.mod.ExportedFunction(abi.ExportAlloc).Call(ctx, uint64(len(input)))
	if err != nil || res[0] == 0 {
		t.Fatalf("sluice_alloc(%d): %v, %v", len(input), res, err)
	}
	ptr := uint32(res[0])
	if !g.mod.Memory().Write(ptr, input) {
		t.Fatal("writing the input out of memory")
	}
	res, err = g.mod.ExportedFunction(export).Call(ctx, uint64(ptr), uint64(len(input)))
	if err != nil {
		t.Fatalf("%s: %v", export, err)
	}
	return int32(res[0])
}

// TestJoinRefuses: sluice_join refuses, with a message and StatusError, a
// head whose value is not one byte of sides or whose headers are not a
// window's, a member count other than the head's sides, and a malformed
// group batch, without calling the handler; and sluice_kinds reports
// the join kind.
func TestJoinRefuses(t *testing.T) {
	ctx := context.Background()
	g := newRawGuest(ctx, t, "join")
	res, err := g.mod.ExportedFunction(abi.ExportKinds).Call(ctx)
	if err != nil || int32(res[0]) != abi.KindBitJoin {
		t.Errorf("sluice_kinds = %v, %v; want %d", res, err, abi.KindBitJoin)
	}
	win := func(firing string) []abi.Header {
		return []abi.Header{
			{Name: []byte(abi.HeaderWindowStart), Value: abi.AppendWindowTime(nil, 0)},
			{Name: []byte(abi.HeaderWindowEnd), Value: abi.AppendWindowTime(nil, 60)},
			{Name: []byte(abi.HeaderFiring), Value: []byte(firing)},
		}
	}
	member := func(v string) abi.Record { return abi.Record{Key: []byte("k"), Value: []byte(v)} }
	type group struct {
		head    abi.Record
		members []abi.Record
	}
	pair := func(sides string, hs []abi.Header, members ...string) group {
		gr := group{head: abi.Record{Key: []byte("k"), Time: 59, Value: []byte(sides), Headers: hs}}
		for _, m := range members {
			gr.members = append(gr.members, member(m))
		}
		return gr
	}
	groups := func(gs ...group) []byte {
		b := abi.AppendBatchHeader(nil, uint32(len(gs)))
		for k := range gs {
			b = abi.AppendGroup(b, &gs[k].head, gs[k].members)
		}
		return b
	}
	good := pair("\x03", win("on-time"), "l", "r")
	valid := groups(good, pair("\x01", nil, "l"), pair("\x02", win("late"), "r"))
	for _, c := range []struct {
		name  string
		input []byte
		log   string // "": accepted
	}{
		{"valid", valid, ""},
		{"no sides", groups(good, pair("\x00", nil)), "sluice_join: pair 1: the head's value is not one byte of sides"},
		{"unknown side", groups(pair("\x05", nil, "l", "r")), "sluice_join: pair 0: the head's value is not one byte of sides"},
		{"empty value", groups(pair("", nil, "l")), "sluice_join: pair 0: the head's value is not one byte of sides"},
		{"two bytes", groups(pair("\x01\x02", nil, "l", "r")), "sluice_join: pair 0: the head's value is not one byte of sides"},
		{"a member missing", groups(pair("\x03", nil, "l")), "sluice_join: pair 0 has 1 records, and its head says 2"},
		{"a member too many", groups(good, pair("\x02", win("early"), "l", "r")), "sluice_join: pair 1 has 2 records, and its head says 1"},
		{"headers not a window's", groups(pair("\x03", []abi.Header{{Name: []byte("h"), Value: []byte("v")}}, "l", "r")),
			"sluice_join: pair 0 has headers that are not a window's"},
		{"unknown firing", groups(pair("\x03", win("soon"), "l", "r")), "sluice_join: pair 0 has headers that are not a window's"},
		{"short", valid[:len(valid)-1], "sluice_join: malformed input"},
		{"trailing bytes", append(slices.Clone(valid), 0), "sluice_join: malformed input"},
		{"count too large", append(binary.LittleEndian.AppendUint32(nil, 4), valid[4:]...), "sluice_join: malformed input"},
		{"no count", []byte{1, 0}, "sluice_join: malformed input"},
	} {
		status := g.call(ctx, t, abi.ExportJoin, c.input)
		if c.log == "" {
			if status != abi.StatusOK || g.emits != 1 || len(g.logs) > 0 || len(g.rejects) > 0 {
				t.Errorf("%s: status %d, %d emits, logs %q, rejects %q; want 3 results in one emit", c.name, status, g.emits, g.logs, g.rejects)
			}
			continue
		}
		if status != abi.StatusError || g.emits != 0 || len(g.rejects) > 0 || !slices.Equal(g.logs, []string{c.log}) {
			t.Errorf("%s: status %d, %d emits, rejects %q, logs %q; want StatusError and %q", c.name, status, g.emits, g.rejects, g.logs, c.log)
		}
	}
}

// txnTwin is the logic of testdata/txn, written with the Go SDK: the two
// must leave the same trace under every strategy.
func txnTwin() sluice.Txn {
	num := func(v []byte) int64 {
		n, _ := strconv.ParseInt(string(v), 10, 64)
		return n
	}
	table := func(b []byte) sluice.Table {
		if string(b) == "1" {
			return 1
		}
		return 0
	}
	write := func(c *sluice.Call, n int64) sluice.Effect {
		s := strconv.AppendInt(nil, n, 10)
		b := c.Scratch(len(s))
		copy(b, s)
		return sluice.Write(b)
	}
	value := func(b []byte, v sluice.Value) []byte {
		if !v.Found {
			return append(b, "nil"...)
		}
		return fmt.Appendf(b, "%q", v.Bytes)
	}
	return sluice.Txn{
		Plan: func(ev sluice.Record, p *sluice.Planner) error {
			f := bytes.Fields(ev.Value)
			if len(f) == 0 {
				return nil
			}
			switch cmd := string(f[0]); {
			case cmd == "add" && len(f) == 4:
				p.Write(table(f[1]), f[2], 0, f[3])
			case cmd == "move" && len(f) == 4:
				p.Write(0, f[1], 1, f[3])
				p.Write(0, f[2], 2, f[3], sluice.Key{Table: 0, Key: f[1]})
			case cmd == "del" && len(f) == 3:
				p.Write(table(f[1]), f[2], 3, nil)
			case cmd == "keep" && len(f) == 3:
				p.Write(table(f[1]), f[2], 4, nil)
			case cmd == "nd" && len(f) == 3:
				p.NonDet(table(f[1]), 5, f[2], sluice.Key{Table: 1, Key: []byte("r")})
			case cmd == "fail" && len(f) == 2:
				p.Write(0, f[1], 6, nil)
			case cmd == "und":
				p.NonDet(0, 7, nil)
			case cmd == "bad":
				return errors.New("bad event")
			}
			return nil
		},
		Funcs: []sluice.TxnFunc{
			func(c *sluice.Call) sluice.Effect { v, _ := c.Own(); return write(c, num(v)+num(c.Arg())) },
			func(c *sluice.Call) sluice.Effect {
				v, _ := c.Own()
				if num(v) < num(c.Arg()) {
					return sluice.Abort()
				}
				return write(c, num(v)-num(c.Arg()))
			},
			func(c *sluice.Call) sluice.Effect {
				if r, _ := c.Read(0); num(r) < num(c.Arg()) {
					return sluice.Abort()
				}
				v, _ := c.Own()
				return write(c, num(v)+num(c.Arg()))
			},
			func(*sluice.Call) sluice.Effect { return sluice.Delete() },
			func(*sluice.Call) sluice.Effect { return sluice.Keep() },
			func(c *sluice.Call) sluice.Effect {
				k := c.Arg()
				c.Read(0)
				v, ok, err := c.Get(c.Table(), k)
				if err != nil {
					return sluice.Fail(err)
				}
				if ok {
					moved := bytes.Clone(v)
					if err := c.Put(c.Table(), append(bytes.Clone(k), 'x'), moved); err != nil {
						return sluice.Fail(errors.New("put refused"))
					}
					if err := c.Delete(c.Table(), k); err != nil {
						return sluice.Fail(errors.New("delete refused"))
					}
					if _, ok, _ := c.Get(c.Table(), k); ok {
						return sluice.Fail(errors.New("deleted key still there"))
					}
				} else if err := c.Put(c.Table(), k, []byte("1")); err != nil {
					return sluice.Fail(errors.New("put refused"))
				}
				return sluice.Keep()
			},
			func(c *sluice.Call) sluice.Effect { return sluice.Fail(fmt.Errorf("boom %s", c.Key())) },
			func(c *sluice.Call) sluice.Effect { _, _, _ = c.Get(1, []byte("zz")); return sluice.Keep() },
		},
		Post: func(ev sluice.Record, o *sluice.Outcome, out *sluice.Emitter) error {
			if len(o.Ops) == 0 && len(ev.Value) > 0 {
				return fmt.Errorf("unknown command %s", ev.Value)
			}
			b := []byte("aborted")
			if o.Committed {
				b = []byte("committed")
			}
			for m, op := range o.Ops {
				b = fmt.Appendf(b, " op%d:", m)
				if op.Executed {
					b = append(b, "ran own="...)
				} else {
					b = append(b, "skipped own="...)
				}
				b = value(b, op.Own)
				b = append(b, " reads="...)
				for i, r := range op.Reads {
					if i > 0 {
						b = append(b, ',')
					}
					b = value(b, r)
				}
				b = append(b, " gets="...)
				for i, g := range op.Gets {
					if i > 0 {
						b = append(b, ',')
					}
					b = fmt.Appendf(b, "%d/%s=", g.Table, g.Key)
					b = value(b, g.Value)
				}
			}
			out.Emit(sluice.Record{Key: ev.Key, Value: b, Time: ev.Time})
			return nil
		},
	}
}

// txnTrace is what one run of batches through a transactional Logic
// observed.
type txnTrace struct {
	Committed [][]bool
	Changes   [][]string
	Outputs   [][]string
	Rejects   [][]string
	Errs      []string
	Final     txn.MapStore
	// errText holds the failed batches' errors, whose wording differs
	// between the native and the WebAssembly path: not compared.
	errText []string
}

func runTxn(t *testing.T, strategy string, workers int, logic txnop.Logic, initial txn.MapStore, batches [][]abi.Record) txnTrace {
	t.Helper()
	st, err := txn.ParseStrategy(strategy)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	op, err := txnop.New(txnop.Config{Name: "op", Tables: []string{"t0", "t1"}, Strategy: st, Workers: workers, Logic: logic})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := op.Close(ctx); err != nil {
			t.Error(err)
		}
	}()
	store := maps.Clone(initial)
	var tr txnTrace
	var out plugin.Output
	for _, events := range batches {
		out.Reset()
		res, err := op.Process(ctx, events, store, &out)
		if err != nil {
			tr.Errs = append(tr.Errs, "batch failed")
			tr.errText = append(tr.errText, err.Error())
			continue
		}
		tr.Committed = append(tr.Committed, slices.Clone(res.Committed))
		var changes, outs, rejects []string
		for _, c := range res.Changes {
			if c.Delete {
				delete(store, c.Key)
				changes = append(changes, c.Key.String()+" deleted")
				continue
			}
			store[c.Key] = slices.Clone(c.Value)
			changes = append(changes, fmt.Sprintf("%v=%q", c.Key, c.Value))
		}
		for _, r := range out.Records {
			outs = append(outs, fmt.Sprintf("%d %s@%d %s", r.Origin, r.Key, r.Time, r.Value))
		}
		for _, r := range out.Rejects {
			var re *plugin.RecordError
			if !errors.As(r.Err, &re) {
				t.Fatalf("reject %d: %v", r.Index, r.Err)
			}
			rejects = append(rejects, fmt.Sprintf("%d %s", r.Index, re.Reason))
		}
		tr.Changes = append(tr.Changes, changes)
		tr.Outputs = append(tr.Outputs, outs)
		tr.Rejects = append(tr.Rejects, rejects)
	}
	tr.Final = store
	return tr
}

// keptOpen lets one loaded Logic serve several Operators in turn.
type keptOpen struct{ txnop.Logic }

func (keptOpen) Close(context.Context) error { return nil }

func txnBatches(seed uint64, n, size int) [][]abi.Record {
	r := rand.New(rand.NewPCG(seed, 1))
	keys := []string{"a", "b", "c", "d", "ax", "r"}
	var batches [][]abi.Record
	for first := 0; first < n; first += size {
		var b []abi.Record
		for j := 0; j < size; j++ {
			k, k2, t := keys[r.IntN(len(keys))], keys[r.IntN(len(keys))], strconv.Itoa(r.IntN(2))
			var cmd string
			switch r.IntN(9) {
			case 0, 1:
				cmd = fmt.Sprintf("add %s %s %d", t, k, r.IntN(20))
			case 2, 3:
				cmd = fmt.Sprintf("move %s %s %d", k, k2, r.IntN(30))
			case 4:
				cmd = "del " + t + " " + k
			case 5:
				cmd = "keep " + t + " " + k
			case 6, 7:
				cmd = "nd " + t + " " + k
			default:
				cmd = "what " + k
			}
			b = append(b, abi.Record{Origin: uint32(j), Key: []byte(fmt.Sprint("e", first+j)), Value: []byte(cmd), Time: int64(first + j)})
		}
		batches = append(batches, b)
	}
	return batches
}

// TestTxnMatchesGoSDK runs the same transactional logic written with this
// SDK (testdata/txn, in WebAssembly) and with the Go SDK (natively) under
// every strategy with one and two workers, and requires the same commits,
// change sets, outputs (which spell out every outcome the guest decoded),
// rejects, failures and final state.
func TestTxnMatchesGoSDK(t *testing.T) {
	ctx := context.Background()
	wasm := build(t, filepath.Join("testdata", "txn"))
	initial := txn.MapStore{{Table: 0, Key: "a"}: []byte("50"), {Table: 1, Key: "r"}: []byte("7")}
	batches := txnBatches(1, 1200, 150)
	// Failing batches: a failed function, a refused access, a failed plan.
	for _, cmd := range []string{"fail a", "und", "bad"} {
		b := slices.Clone(txnBatches(2, 20, 20)[0])
		b[7].Value = []byte(cmd)
		batches = append(batches, b)
	}
	want := runTxn(t, "serial", 1, hosttest.TxnLogic(txnTwin(), []string{"t0", "t1"}), initial, batches)
	if len(want.Errs) != 3 || len(want.Outputs) != len(batches)-3 {
		t.Fatalf("the Go run failed %d batches: %q", len(want.Errs), want.Errs)
	}
	for _, workers := range []int{1, 2} {
		l, err := hosttest.LoadTxnWasm(ctx, "txn", wasm, workers, "t0", "t1")
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range txn.StrategyNames() {
			got := runTxn(t, s, workers, keptOpen{l}, initial, batches)
			for i, reason := range []string{"boom a", `get 1/"zz"`, "plan: event 7: bad event"} {
				if i >= len(got.errText) || !strings.Contains(got.errText[i], reason) {
					t.Errorf("%s with %d workers: failed batch %d: %q, want the reason %q", s, workers, i, got.errText, reason)
				}
			}
			got.errText = want.errText
			if !reflect.DeepEqual(got, want) {
				t.Errorf("%s with %d workers: the AssemblyScript run differs from the Go SDK's:\n%s", s, workers, traceDiff(got, want))
			}
		}
		if err := l.Close(ctx); err != nil {
			t.Fatal(err)
		}
	}
}

func traceDiff(got, want txnTrace) string {
	for _, f := range []struct {
		name      string
		got, want any
	}{
		{"errors", got.Errs, want.Errs}, {"commits", got.Committed, want.Committed}, {"outputs", got.Outputs, want.Outputs},
		{"rejects", got.Rejects, want.Rejects}, {"changes", got.Changes, want.Changes}, {"final state", got.Final, want.Final},
	} {
		if !reflect.DeepEqual(f.got, f.want) {
			return fmt.Sprintf("%s:\n got  %v\n want %v", f.name, f.got, f.want)
		}
	}
	return ""
}
