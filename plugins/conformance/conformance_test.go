package conformance

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/sluicehq/sluice/abi"
	"github.com/sluicehq/sluice/host/plugin"
	"github.com/sluicehq/sluice/host/plugin/hosttest"
	"github.com/sluicehq/sluice/host/txnop"
	"github.com/sluicehq/sluice/plugins/internal/plugintest"
	"github.com/sluicehq/sluice/runtime"
	"github.com/sluicehq/sluice/sdk/build"
	"github.com/sluicehq/sluice/sdk/go/sluice"
	"github.com/sluicehq/sluice/sdk/go/sluice/sluicetest"
	"github.com/sluicehq/sluice/txn"
	"github.com/sluicehq/sluice/txn/apps/ledger/event"
	"github.com/sluicehq/sluice/txn/apps/workload"
)

func TestMain(m *testing.M) {
	code := plugintest.TxnMain(m)
	if modules.dir != "" {
		_ = os.RemoveAll(modules.dir)
	}
	os.Exit(code)
}

// languages are the languages checked against Go, in report order.
var languages = []build.Language{build.Rust, build.C, build.AssemblyScript, build.WAT}

// ops are the conformance operators.
var ops = []string{"upper", "enrich", "wordcount", "ledger"}

// requireToolchains reports whether a missing toolchain fails the test
// rather than skipping it.
func requireToolchains() bool { return os.Getenv("SLUICE_REQUIRE_TOOLCHAINS") == "1" }

// opDir returns the source directory of op in lang: plugins/<op> for Go.
func opDir(lang build.Language, op string) string {
	if lang == build.Go {
		return filepath.Join("..", op)
	}
	return filepath.Join(string(lang), op)
}

// builtModule is one operator compiled once per test binary.
type builtModule struct {
	once sync.Once
	wasm []byte
	err  error
}

// modules holds the test binary's compiled operators, by "lang/op". Test
// support state, like plugintest's: building costs seconds per module.
var modules struct {
	mu  sync.Mutex
	dir string
	m   map[string]*builtModule
}

// buildModule compiles op in lang, once per test binary.
func buildModule(lang build.Language, op string) ([]byte, error) {
	modules.mu.Lock()
	if modules.m == nil {
		modules.m = map[string]*builtModule{}
	}
	if modules.dir == "" {
		d, err := os.MkdirTemp("", "sluice-conformance-")
		if err != nil {
			modules.mu.Unlock()
			return nil, err
		}
		modules.dir = d
	}
	key := string(lang) + "/" + op
	b := modules.m[key]
	if b == nil {
		b = &builtModule{}
		modules.m[key] = b
	}
	out := filepath.Join(modules.dir, string(lang)+"-"+op+".wasm")
	modules.mu.Unlock()
	b.once.Do(func() {
		_, b.err = build.Build(context.Background(), opDir(lang, op), build.Options{Output: out, Language: lang})
		if b.err == nil {
			b.wasm, b.err = os.ReadFile(out)
		}
	})
	return b.wasm, b.err
}

// prebuild compiles every present operator, two builds at a time, so that
// the tests that follow find them built.
func prebuild() {
	var wg sync.WaitGroup
	sem := make(chan struct{}, 2)
	for _, lang := range append([]build.Language{build.Go}, languages...) {
		for _, op := range ops {
			if _, err := os.Stat(opDir(lang, op)); err != nil {
				continue
			}
			wg.Go(func() {
				sem <- struct{}{}
				defer func() { <-sem }()
				_, _ = buildModule(lang, op)
			})
		}
	}
	wg.Wait()
}

// module returns op compiled in lang. It skips the test when the language
// has no conformance directory or its toolchain is missing (but fails it
// for a missing toolchain when SLUICE_REQUIRE_TOOLCHAINS=1), and fails it
// when a present language lacks the operator or the build fails.
func module(t testing.TB, lang build.Language, op string) []byte {
	t.Helper()
	if _, err := os.Stat(opDir(lang, op)); err != nil {
		if _, lerr := os.Stat(filepath.Dir(opDir(lang, op))); lerr != nil {
			t.Skipf("no %s conformance operators (%s)", lang, filepath.Dir(opDir(lang, op)))
		}
		t.Fatalf("%s has conformance operators but not %s: every language present implements %s", lang, op, strings.Join(ops, ", "))
	}
	wasm, err := buildModule(lang, op)
	switch {
	case errors.Is(err, build.ErrToolchainMissing) && !requireToolchains():
		t.Skipf("%v (SLUICE_REQUIRE_TOOLCHAINS=1 makes this a failure)", err)
	case err != nil:
		t.Fatalf("building %s: %v", opDir(lang, op), err)
	}
	return wasm
}

// forEachLanguage runs check for every language in a subtest named after
// the language, with op compiled in that language.
func forEachLanguage(t *testing.T, op string, check func(t *testing.T, wasm []byte)) {
	t.Helper()
	for _, lang := range languages {
		t.Run(string(lang), func(t *testing.T) {
			check(t, module(t, lang, op))
		})
	}
}

func TestConformance(t *testing.T) {
	if testing.Short() {
		t.Skip("builds every operator in every language; skipped in -short mode")
	}
	prebuild()
	t.Run("kinds", testKinds)
	t.Run("upper", testUpper)
	t.Run("enrich", testEnrich)
	t.Run("wordcount", testWordcount)
	t.Run("ledger", testLedger)
}

// ---- the kinds each module declares ----

// exampleKinds are the kinds of the SDKs' examples, sdk/<language>/example.
var exampleKinds = map[build.Language][]plugin.Kind{
	build.Rust:           {plugin.KindKeyed},
	build.C:              {plugin.KindFlatMap},
	build.AssemblyScript: {plugin.KindFlatMap},
}

// testKinds checks that every module, in every language, declares the
// kinds of the handler it registers in its sluice.kinds section, written
// by its SDK (Rust) or by the build from what its sluice_kinds export says
// (Go, C, AssemblyScript, WAT), as check reports them: the kind it is
// loaded as (opKinds), so that the host refuses it as any other.
func testKinds(t *testing.T) {
	ctx := context.Background()
	eng, err := runtime.NewWazero(ctx, runtime.NewConfig().WithHostModules(plugin.HostModule()))
	if err != nil {
		t.Fatal(err)
	}
	defer eng.Close(ctx)
	declares := func(t *testing.T, name string, wasm []byte, want []plugin.Kind) {
		t.Helper()
		r, err := plugin.Check(ctx, eng, name, wasm)
		if err != nil {
			t.Fatal(err)
		}
		if !r.OK() || !r.KindsDeclared || !slices.Equal(r.Kinds, want) {
			t.Errorf("%s: declared %v, kinds %v, problems %q; want %v declared", name, r.KindsDeclared, r.Kinds, r.Problems, want)
		}
	}
	for _, lang := range append([]build.Language{build.Go}, languages...) {
		t.Run(string(lang), func(t *testing.T) {
			for _, op := range ops {
				want := []plugin.Kind{opKinds[op]}
				if lang == build.Rust && op == "enrich" {
					// sluice::Operator serves any of the three.
					want = []plugin.Kind{plugin.KindMap, plugin.KindFilter, plugin.KindFlatMap}
				}
				declares(t, op, module(t, lang, op), want)
			}
			if want, ok := exampleKinds[lang]; ok {
				dir := filepath.Join("..", "..", "sdk", string(lang), "example")
				res, err := build.Build(ctx, dir, build.Options{Output: filepath.Join(t.TempDir(), "example.wasm")})
				if err != nil {
					t.Fatalf("building %s: %v", dir, err)
				}
				wasm, err := os.ReadFile(res.Output)
				if err != nil {
					t.Fatal(err)
				}
				declares(t, dir, wasm, want)
			}
		})
	}
}

// ---- the batch kinds: upper, enrich, wordcount ----

// batchCase is a harness set-up and the batches to run through it.
type batchCase struct {
	name    string
	config  []byte // nil: none
	tables  []string
	state   map[string]string // of the first table, before the first batch
	keys    []string          // whose final state to compare
	batches [][]sluice.Record
}

// batchResult is what one batch did, in comparable text.
type batchResult struct {
	Outputs []string // "origin key value time headers", %q-quoted
	Rejects []string // "origin message", or "origin (trapped)" / "origin (failed its call)"
	Err     string   // a configuration refused, or an operator that could not run
}

// run runs c through a fresh harness of mod and returns one result per
// batch, the final state of c.keys, and the configuration error (nil
// results then).
func (c *batchCase) run(mod *hosttest.WasmModule) ([]batchResult, []string, error) {
	h := mod.New()
	defer h.Close()
	h.Declare(c.tables...)
	for k, v := range c.state {
		h.SetState("", k, []byte(v))
	}
	if c.config != nil {
		if err := h.Configure(c.config); err != nil {
			return nil, nil, err
		}
	}
	var res []batchResult
	for _, b := range c.batches {
		outs, rejects, err := h.Process(b...)
		var r batchResult
		for _, o := range outs {
			var hs []string
			for _, hd := range o.Headers {
				hs = append(hs, fmt.Sprintf("%q=%q", hd.Name, hd.Value))
			}
			r.Outputs = append(r.Outputs, fmt.Sprintf("%d %q %q %d [%s]", o.Origin, o.Key, o.Value, o.Time, strings.Join(hs, " ")))
		}
		for _, rj := range rejects {
			msg := rj.Message
			switch {
			case errors.Is(rj.Err, sluicetest.ErrTrap):
				msg = "(trapped)"
			case errors.Is(rj.Err, sluicetest.ErrBatchFailed):
				msg = "(failed its call)"
			case rj.Err != nil:
				msg = "(failed: " + rj.Err.Error() + ")"
			}
			r.Rejects = append(r.Rejects, fmt.Sprintf("%d %s", rj.Origin, msg))
		}
		if err != nil {
			r.Err = err.Error()
		}
		res = append(res, r)
	}
	var final []string
	for _, k := range c.keys {
		v, ok := h.State("", k)
		final = append(final, fmt.Sprintf("%q=%q %v", k, v, ok))
	}
	return res, final, nil
}

// caseResult is what one batchCase did.
type caseResult struct {
	batches []batchResult
	final   []string
	err     error // the configuration was refused
}

// runCases loads wasm as an operator of kind and runs every case through
// it.
func runCases(t *testing.T, kind plugin.Kind, wasm []byte, cases []batchCase) []caseResult {
	t.Helper()
	ctx := context.Background()
	mod, err := hosttest.LoadWasm(ctx, "op", wasm, kind)
	if err != nil {
		t.Fatalf("loading the operator: %v", err)
	}
	defer mod.Close(ctx)
	res := make([]caseResult, len(cases))
	for i := range cases {
		res[i].batches, res[i].final, res[i].err = cases[i].run(mod)
	}
	return res
}

// checkBatchOp runs cases through the Go operator op, loaded as kind, and
// then through op in every language, and fails where a language's results
// differ from Go's.
func checkBatchOp(t *testing.T, op string, kind plugin.Kind, cases []batchCase) {
	t.Helper()
	want := runCases(t, kind, module(t, build.Go, op), cases)
	forEachLanguage(t, op, func(t *testing.T, wasm []byte) {
		got := runCases(t, kind, wasm, cases)
		for i, c := range cases {
			t.Run(c.name, func(t *testing.T) { compareCase(t, &c, &got[i], &want[i]) })
		}
	})
}

// compareCase fails t where got differs from want.
func compareCase(t *testing.T, c *batchCase, got, want *caseResult) {
	if (got.err == nil) != (want.err == nil) {
		t.Fatalf("configuration %s: got error %v, want %v", c.config, got.err, want.err)
	}
	if got.err != nil && got.err.Error() != want.err.Error() {
		t.Logf("configuration %s refused, as by Go, but with another message:\ngot  %v\nwant %v", c.config, got.err, want.err)
	}
	for b := range max(len(got.batches), len(want.batches)) {
		var g, w batchResult
		if b < len(got.batches) {
			g = got.batches[b]
		}
		if b < len(want.batches) {
			w = want.batches[b]
		}
		if d := diffLines(fmt.Sprintf("batch %d output", b), g.Outputs, w.Outputs); d != "" {
			t.Error(d)
		}
		if d := diffLines(fmt.Sprintf("batch %d reject", b), g.Rejects, w.Rejects); d != "" {
			t.Error(d)
		}
		if g.Err != w.Err {
			t.Errorf("batch %d: error %q, want %q", b, g.Err, w.Err)
		}
	}
	if d := diffLines("final state", got.final, want.final); d != "" {
		t.Error(d)
	}
}

// diffLines describes the first difference between got and want, each
// entry cut to a readable length, with the counts; "" when they are equal.
func diffLines(what string, got, want []string) string {
	if slices.Equal(got, want) {
		return ""
	}
	for i := range max(len(got), len(want)) {
		g, w := "(none)", "(none)"
		if i < len(got) {
			g = got[i]
		}
		if i < len(want) {
			w = want[i]
		}
		if g != w {
			return fmt.Sprintf("%s %d (of %d, want %d):\ngot  %s\nwant %s", what, i, len(got), len(want), cut(g), cut(w))
		}
	}
	return ""
}

func cut(s string) string {
	if len(s) > 300 {
		return s[:300] + fmt.Sprintf("... (%d bytes)", len(s))
	}
	return s
}

// rec returns a record with key, value, time and headers (name, value
// pairs).
func rec(key, value string, time int64, headers ...string) sluice.Record {
	r := sluice.Record{Key: []byte(key), Value: []byte(value), Time: time}
	for i := 0; i+1 < len(headers); i += 2 {
		r.Headers = append(r.Headers, sluice.Header{Name: []byte(headers[i]), Value: []byte(headers[i+1])})
	}
	return r
}

func testUpper(t *testing.T) {
	var all []byte
	for i := range 256 {
		all = append(all, byte(i))
	}
	edge := []sluice.Record{
		rec("k", "hello, World 42", 1_700_000_000_000_000_000, "trace", "t1"),
		rec("", "", 0),
		rec("", "only value", -1),
		rec("key only", "", 1<<62),
		rec("\x00\xff binary key", string(all), 5),
		rec("utf8", "Grüße, ÿ, ñandú, Ωmega, 日本語 abc", 6),
		rec("headers", "x", 7, "h", "1", "h", "2", "", "", "empty value", ""),
		rec("long", strings.Repeat("mixed Case text 0123456789 ", 4000), 8),
		rec("invalid utf8", "a\xc3(b\xe2\x82z", 9),
	}
	var many []sluice.Record
	for i := range 1000 {
		many = append(many, rec(fmt.Sprintf("k%d", i), strings.Repeat(fmt.Sprintf("rec %d abcXYZ ", i), i%7), int64(i)))
	}
	cases := []batchCase{
		{name: "edge cases", batches: [][]sluice.Record{edge}},
		{name: "batches", batches: [][]sluice.Record{many, edge[:1], many[:300]}},
		{name: "one record per batch", batches: [][]sluice.Record{{edge[0]}, {edge[1]}, {edge[4]}}},
	}
	checkBatchOp(t, "upper", plugin.KindMap, cases)
}

// enrichConfig is plugins/enrich's test configuration.
const enrichConfig = `{"require": ["user"], "min": {"amount": 10, "age": 18}, "set": {"source": "web", "v": [1, 2]}}`

func testEnrich(t *testing.T) {
	values := []string{
		// Kept, enriched.
		`{"user":"ann","amount":12,"age":30}`,
		` { "user" : "bo" , "age":18, "amount": 1e3, "source": "app" } `,
		`{"user":"a\u0062","x":{"nested":[1, 2]},"amount":10,"age":99}`,
		`{"user":"ü","amount":10.5,"age":18.0,"tags":["a","b"],"v":null}`,
		`{"user":"c","amount":1E+2,"age":0.5e2,"z":true,"y":false}`,
		`{"user":"d","amount":12,"age":1e400}`,
		"{\"user\":\"tabs\"\t,\n\"amount\"\r:\n20,\"age\":20}",
		`{"user":"e","amount":12,"age":30,"user":"last"}`,
		`{"user":"esc \" \\ \/ \b \f \n \r \t \u00e9 \ud83d\ude00","amount":99,"age":99}`,
		// Dropped.
		`{"amount":12,"age":30}`,
		`{"user":"c","amount":9.99,"age":30}`,
		`{"user":"c","age":30}`,
		`{"user":"c","amount":-5e400,"age":30}`,
		`{"user":"c","amount":11,"amount":2,"age":30}`,
		`{"user":"c","amount":-0,"age":30}`,
		`{}`,
		// Dead-lettered: not numbers.
		`{"user":"c","amount":"12","age":30}`,
		`{"user":"c","amount":null,"age":30}`,
		`{"user":"c","amount":true,"age":30}`,
		`{"user":"c","amount":[1],"age":30}`,
		`{"user":"c","amount":{"a":1},"age":30}`,
		`{"user":"c","amount":false,"age":30}`,
		// Dead-lettered: not JSON objects.
		`[1,2]`, `"text"`, `42`, `null`, `true`,
		`{"user":`, `{"user":1} {}`, ``, `   `, `not json`,
		`{"a":tru}`, `{"a" 1}`, `{'a':1}`, `{"a":1,}`, `{"a":1`, `{"a":01}`,
		`{"a":"unterminated}`, "{\"a\":\"ctl\x01\"}", `{"a":1}}`, `{"a":-}`, `{"a":1.}`, `{"a":.5}`,
		`{"a":"\x"}`, `{"a":"\u12"}`, `{,}`, `{"a":[1,2}`, `{"a":1 "b":2}`,
	}
	var batch []sluice.Record
	for i, v := range values {
		batch = append(batch, rec(fmt.Sprint("k", i), v, int64(i), "trace", fmt.Sprint(i)))
	}
	var many []sluice.Record
	for i := range 500 {
		many = append(many, rec(fmt.Sprint(i), fmt.Sprintf(`{"user":"u%d","amount":%d,"age":%d,"tags":["a","b"]}`, i, i%40, 10+i%20), int64(i)))
	}
	cases := []batchCase{
		{name: "rules", config: []byte(enrichConfig), batches: [][]sluice.Record{batch, many}},
		{name: "no config", batches: [][]sluice.Record{batch}},
		{name: "null config", config: []byte(`null`), batches: [][]sluice.Record{batch}},
		{name: "empty rules", config: []byte(`{}`), batches: [][]sluice.Record{batch}},
		{name: "set only", config: []byte(`{"set": {"a": 1, "user": {"nested": [1, {"b": null}]}, "s": "x\"y", "e": "\u00e9"}}`), batches: [][]sluice.Record{batch}},
		{name: "set null", config: []byte(`{"set": null, "require": null, "min": null}`), batches: [][]sluice.Record{batch}},
		{name: "negative minimum", config: []byte(`{"min": {"amount": -1.5e3}}`), batches: [][]sluice.Record{batch}},
		{name: "require two", config: []byte(`{"require": ["user", "age"]}`), batches: [][]sluice.Record{batch}},
	}
	for _, bad := range []string{
		`{"requires": ["x"]}`, `{"require": "x"}`, `{"require": [""]}`, `{"require": [1]}`,
		`{"min": {"a": "1"}}`, `{"min": [1]}`, `{"set": [1]}`, `{"set": "x"}`,
		`{"set": {"a": 1, "a": 2}}`, `[`, `{"bogus":1}`, `"text"`, `[]`, `{"min": {"a": 1}} x`,
	} {
		cases = append(cases, batchCase{name: "bad config " + bad, config: []byte(bad), batches: [][]sluice.Record{batch[:1]}})
	}
	checkBatchOp(t, "enrich", plugin.KindFlatMap, cases)
}

func testWordcount(t *testing.T) {
	var words []sluice.Record
	for i := range 2000 {
		w := fmt.Sprint("w", (i*7)%97)
		words = append(words, rec(w, w, int64(i)))
	}
	keys := []string{"the", "cat", "", "\x00\xffbin", "ключ", "zero", "lead", "max-1", "max", "bad", "empty", "neg", "space", "over", "w0", "w1", "w96"}
	state := map[string]string{
		"zero": "0", "lead": "007", "max-1": "18446744073709551614", "max": "18446744073709551615",
	}
	bad := map[string]string{"bad": "many", "empty": "", "neg": "-1", "space": "1 ", "over": "18446744073709551616"}
	mixed := []sluice.Record{
		rec("the", "the", 1, "h", "v"), rec("cat", "cat", 2), rec("the", "the", 3), rec("", "", 4),
		rec("\x00\xffbin", "x", 5), rec("ключ", "x", 6), rec("zero", "x", 7), rec("lead", "x", 8),
		rec("max-1", "x", 9), rec("max-1", "x", 10),
	}
	var badBatch []sluice.Record
	for _, k := range []string{"the", "bad", "cat", "empty", "neg", "space", "over", "the"} {
		badBatch = append(badBatch, rec(k, k, 11))
	}
	allState := map[string]string{}
	for k, v := range state {
		allState[k] = v
	}
	for k, v := range bad {
		allState[k] = v
	}
	cases := []batchCase{
		// "max-1" counts to 2^64-1 and then wraps to 0, as the Go
		// operator's uint64 does.
		{name: "counts", tables: []string{"counts"}, keys: keys, batches: [][]sluice.Record{mixed, words, mixed}},
		{name: "stored counts", tables: []string{"counts"}, state: state, keys: keys, batches: [][]sluice.Record{mixed, mixed}},
		{name: "bad stored counts", tables: []string{"counts"}, state: allState, keys: keys, batches: [][]sluice.Record{badBatch, mixed}},
		{name: "two tables", tables: []string{"counts", "other"}, keys: keys, batches: [][]sluice.Record{mixed}},
	}
	checkBatchOp(t, "wordcount", plugin.KindKeyed, cases)
}

// ---- the transactional kind: ledger ----

// ledgerStrategies are the strategies the ledger runs under: the
// benchmarks' and a structured one.
var ledgerStrategies = []string{"ns-op-lazy", "bfs-chain-eager"}

// ledgerWorkload draws a contended Streaming Ledger workload of a few
// thousand events, with low balances on some keys (so that transfers abort
// on funds as well as by the workload's draw) and events that do not
// decode.
func ledgerWorkload(t testing.TB) plugintest.TxnWorkload {
	k, err := workload.Defaults(workload.StreamingLedger)
	if err != nil {
		t.Fatal(err)
	}
	k.Keys, k.Skew, k.AbortRatio, k.DepositRatio, k.BusyNanos, k.Seed = 64, 0.8, 0.1, 0.3, 0, 11
	w := plugintest.NewTxnWorkload(t, workload.StreamingLedger, k, 3000, 500)
	keys := slices.SortedFunc(maps.Keys(w.Initial), func(a, b txn.Key) int {
		return cmp.Or(cmp.Compare(a.Table, b.Table), strings.Compare(a.Key, b.Key))
	})
	for i, key := range keys {
		if i%3 == 0 {
			w.Initial[key] = event.AppendBalance(nil, int64(150+i))
		}
	}
	valid := w.Batches[0][0].Value
	malformed := [][]byte{
		{}, {'X'}, {event.Tag}, {event.Tag, 0x80}, {event.Tag, 0x02}, valid[:len(valid)-1],
		append(slices.Clone(valid), 0), {event.Tag, 1, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff},
		{event.Tag, 0, 1, 2, 3, 4, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01, 0},
	}
	for j, v := range malformed {
		b := w.Batches[1+j%(len(w.Batches)-1)]
		b[(j*37)%len(b)].Value = v
	}
	return w
}

// bookEntryWorkload is the smallest case of the transfer's condition on
// the source book entry: every balance starts at 100; the first transfer
// empties book entry 2; the second, of 1 from account 4 (which holds 100)
// and book entry 2 (which holds nothing), must abort.
func bookEntryWorkload() plugintest.TxnWorkload {
	w := plugintest.TxnWorkload{Tables: []string{event.AccountsTable, event.BookEntriesTable}, Initial: txn.MapStore{}}
	for table := range uint32(2) {
		for k := range uint32(6) {
			w.Initial[txn.Key{Table: table, Key: string(event.AppendKey(nil, k))}] = event.AppendBalance(nil, 100)
		}
	}
	var batch []abi.Record
	for i, e := range []event.Event{
		{Account: 0, Book: 2, DstAccount: 1, DstBook: 3, Amount: 100},
		{Account: 4, Book: 2, DstAccount: 5, DstBook: 3, Amount: 1},
	} {
		batch = append(batch, abi.Record{Origin: uint32(i), Key: []byte("k"), Value: event.AppendEvent(nil, &e), Time: int64(i)})
	}
	w.Batches = [][]abi.Record{batch}
	return w
}

func testLedger(t *testing.T) {
	w := ledgerWorkload(t)
	ctx := context.Background()
	goWasm := module(t, build.Go, "ledger")
	goLogic, err := hosttest.LoadTxnWasm(ctx, "go", goWasm, 2, w.Tables...)
	if err != nil {
		t.Fatal(err)
	}
	defer goLogic.Close(ctx)
	want := map[string]plugintest.TxnTrace{}
	for _, s := range ledgerStrategies {
		want[s] = plugintest.RunTxn(t, w, s, 2, keptOpen{goLogic})
	}
	if !reflect.DeepEqual(want[ledgerStrategies[0]], want[ledgerStrategies[1]]) {
		t.Fatalf("the Go operator differs between strategies: %s", func() string {
			b := want[ledgerStrategies[1]]
			a := want[ledgerStrategies[0]]
			return a.Diff(&b)
		}())
	}
	if n := rejected(want[ledgerStrategies[0]]); n == 0 {
		t.Fatal("no event was dead-lettered: the workload tests too little")
	}
	book := bookEntryWorkload()
	wantBook := plugintest.RunTxn(t, book, ledgerStrategies[0], 2, keptOpen{goLogic})
	if w := []string{"0 k transfer committed 100 100 100 100", "1 k transfer aborted 100 0 - -"}; !reflect.DeepEqual(wantBook.Outputs[0], w) {
		t.Fatalf("the Go operator on the book entry's condition: outputs %q, want %q", wantBook.Outputs[0], w)
	}
	for _, lang := range languages {
		t.Run(string(lang), func(t *testing.T) {
			wasm := module(t, lang, "ledger")
			l, err := hosttest.LoadTxnWasm(ctx, "op", wasm, 2, w.Tables...)
			if err != nil {
				t.Fatal(err)
			}
			defer l.Close(ctx)
			for _, s := range ledgerStrategies {
				wt := want[s]
				if got := plugintest.RunTxn(t, w, s, 2, keptOpen{l}); !reflect.DeepEqual(got, wt) {
					t.Errorf("%s: %s", s, got.Diff(&wt))
				}
				if got := plugintest.RunTxn(t, book, s, 2, keptOpen{l}); !reflect.DeepEqual(got, wantBook) {
					t.Errorf("%s, the book entry's condition: %s", s, got.Diff(&wantBook))
				}
			}
			// A stored balance that does not decode fails the batch in
			// both.
			st := txn.MapStore{}
			for k, v := range w.Initial {
				st[k] = v
			}
			for k := range st {
				st[k] = []byte{1, 2, 3}
			}
			gotErr, wantErr := failBatch(t, w, l, st), failBatch(t, w, goLogic, st)
			if (gotErr == nil) != (wantErr == nil) {
				t.Errorf("a corrupt balance: error %v, want %v", gotErr, wantErr)
			}
		})
	}
}

// rejected counts the dead letters of a trace.
func rejected(tr plugintest.TxnTrace) int {
	n := 0
	for _, r := range tr.Rejects {
		n += len(r)
	}
	return n
}

// failBatch runs w's first batch over store, serially, and returns the
// error of Process.
func failBatch(t *testing.T, w plugintest.TxnWorkload, l txnop.Logic, store txn.MapStore) error {
	t.Helper()
	op, err := txnop.New(txnop.Config{Name: "ledger", Tables: w.Tables, Strategy: txn.Strategy{Kind: txn.Serial}, Workers: 2, Logic: keptOpen{l}})
	if err != nil {
		t.Fatal(err)
	}
	defer op.Close(context.Background())
	var out plugin.Output
	_, err = op.Process(context.Background(), w.Batches[0], store, &out)
	return err
}

// keptOpen is a Logic whose Close does nothing, so that an Operator
// closing it leaves the loaded module for the next run.
type keptOpen struct{ txnop.Logic }

func (keptOpen) Close(context.Context) error { return nil }
