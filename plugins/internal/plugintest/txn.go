package plugintest

import (
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

	"go.uber.org/goleak"

	"github.com/sluicehq/sluice/abi"
	"github.com/sluicehq/sluice/host/plugin"
	"github.com/sluicehq/sluice/host/plugin/hosttest"
	"github.com/sluicehq/sluice/host/txnop"
	"github.com/sluicehq/sluice/sdk/go/wasmbuild"
	"github.com/sluicehq/sluice/txn"
	"github.com/sluicehq/sluice/txn/apps/workload"
)

// TxnWorkload is a transactional workload ready to run: the operator's
// tables, their initial contents and the events, cut into batches as a
// punctuation would cut them.
type TxnWorkload struct {
	// Tables names the operator's tables, by handle.
	Tables []string
	// Initial is the committed state before the first batch.
	Initial txn.MapStore
	// Batches are the events: event i of the stream has Time i; its
	// Origin is its index in its batch.
	Batches [][]abi.Record
}

// Events returns the number of events of w.
func (w *TxnWorkload) Events() int {
	n := 0
	for _, b := range w.Batches {
		n += len(b)
	}
	return n
}

// NewTxnWorkload draws events [0, events) of the workload app (a
// workload.Apps name) with knobs k, in batches of batch events (the last
// one shorter), with the tables and initial state the workload defines.
func NewTxnWorkload(t testing.TB, app string, k workload.Knobs, events, batch int) TxnWorkload {
	t.Helper()
	a, err := workload.New(app, k)
	if err != nil {
		t.Fatal(err)
	}
	w := TxnWorkload{Tables: a.Tables(), Initial: txn.MapStore{}}
	err = a.Initial(func(table int, key, value []byte) error {
		w.Initial[txn.Key{Table: uint32(table), Key: string(key)}] = slices.Clone(value)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for first := 0; first < events; first += batch {
		b := make([]abi.Record, min(batch, events-first))
		for j := range b {
			key, value := a.Event(uint64(first+j), nil)
			b[j] = abi.Record{Origin: uint32(j), Key: key, Value: value, Time: int64(first + j)}
		}
		w.Batches = append(w.Batches, b)
	}
	return w
}

// TxnTrace is everything one run of a TxnWorkload observed, batch by
// batch, in forms that compare with reflect.DeepEqual and print readably.
type TxnTrace struct {
	// Committed[b][i] tells whether event i of batch b committed.
	Committed [][]bool
	// Changes[b] is batch b's change set in its order: "table/key=hex"
	// or "table/key deleted".
	Changes [][]string
	// Outputs[b] are batch b's output records: "origin key value".
	Outputs [][]string
	// Rejects[b] are batch b's dead-lettered events: "index reason".
	Rejects [][]string
	// Final is the state after the last batch.
	Final txn.MapStore
}

// Diff describes the first difference between tr and want ("" when they
// are equal): the batch and the entry, not two dumps of the whole run.
func (tr *TxnTrace) Diff(want *TxnTrace) string {
	if reflect.DeepEqual(tr, want) {
		return ""
	}
	var b strings.Builder
	diff := func(what string, got, want [][]string) { b.WriteString(DiffBatches(what, got, want)) }
	commits := func(c [][]bool) [][]string {
		out := make([][]string, len(c))
		for i, b := range c {
			for _, x := range b {
				out[i] = append(out[i], fmt.Sprint(x))
			}
		}
		return out
	}
	diff("committed", commits(tr.Committed), commits(want.Committed))
	diff("change", tr.Changes, want.Changes)
	diff("output", tr.Outputs, want.Outputs)
	diff("reject", tr.Rejects, want.Rejects)
	b.WriteString(DiffState(tr.Final, want.Final))
	if b.Len() == 0 {
		return "the traces differ in shape (batch counts)"
	}
	return b.String()
}

// DiffBatches describes the first difference between two runs' entries
// (outputs, say), batch by batch, as "batch 2 output 7: got ..., want
// ...\n", or returns "" when they are equal.
func DiffBatches(what string, got, want [][]string) string {
	for i := range max(len(got), len(want)) {
		var g, w []string
		if i < len(got) {
			g = got[i]
		}
		if i < len(want) {
			w = want[i]
		}
		for j := range max(len(g), len(w)) {
			gj, wj := "(none)", "(none)"
			if j < len(g) {
				gj = g[j]
			}
			if j < len(w) {
				wj = w[j]
			}
			if gj != wj {
				return fmt.Sprintf("batch %d %s %d: got %s, want %s\n", i, what, j, gj, wj)
			}
		}
	}
	return ""
}

// DiffState describes the first difference between two states, in key
// order, or returns "" when they are equal.
func DiffState(got, want txn.MapStore) string {
	if reflect.DeepEqual(got, want) {
		return ""
	}
	keys := slices.Collect(maps.Keys(want))
	for k := range got {
		if _, ok := want[k]; !ok {
			keys = append(keys, k)
		}
	}
	slices.SortFunc(keys, compareKeys)
	for _, k := range keys {
		g, gok := got[k]
		w, wok := want[k]
		if gok != wok || string(g) != string(w) {
			return fmt.Sprintf("state %v: got %x (present %v), want %x (present %v)\n", k, g, gok, w, wok)
		}
	}
	return ""
}

func compareKeys(a, b txn.Key) int {
	if a.Table != b.Table {
		return int(a.Table) - int(b.Table)
	}
	return strings.Compare(a.Key, b.Key)
}

// RunTxn runs w through logic under the strategy named strategy with
// workers scheduler workers, committing each batch's change set before the
// next, and returns what it observed. The Operator closes logic. A batch
// that fails fails t.
func RunTxn(t testing.TB, w TxnWorkload, strategy string, workers int, logic txnop.Logic) TxnTrace {
	t.Helper()
	st, err := txn.ParseStrategy(strategy)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	op, err := txnop.New(txnop.Config{Name: "plugin", Tables: w.Tables, Strategy: st, Workers: workers, Logic: logic})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := op.Close(ctx); err != nil {
			t.Error(err)
		}
	}()
	store := maps.Clone(w.Initial)
	var tr TxnTrace
	var out plugin.Output
	for b, events := range w.Batches {
		out.Reset()
		res, err := op.Process(ctx, events, store, &out)
		if err != nil {
			t.Fatalf("%s, %d workers, batch %d: %v", strategy, workers, b, err)
		}
		tr.Committed = append(tr.Committed, slices.Clone(res.Committed))
		var changes []string
		for _, c := range res.Changes {
			if c.Delete {
				delete(store, c.Key)
				changes = append(changes, c.Key.String()+" deleted")
				continue
			}
			store[c.Key] = slices.Clone(c.Value)
			changes = append(changes, fmt.Sprintf("%v=%x", c.Key, c.Value))
		}
		var outs, rejects []string
		for _, r := range out.Records {
			outs = append(outs, fmt.Sprintf("%d %s %s", r.Origin, r.Key, r.Value))
		}
		for _, r := range out.Rejects {
			// The reason, not the error, which names the plugin.
			var re *plugin.RecordError
			if !errors.As(r.Err, &re) {
				t.Fatalf("%s, batch %d: reject %d is %v, want a *plugin.RecordError", strategy, b, r.Index, r.Err)
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

// CheckStrategies runs w with every strategy of txn.StrategyNames, with 1
// and 2 workers, natively (native returns a fresh native Logic of the
// operator for each run, hosttest.TxnLogic over w.Tables) and, unless
// testing.Short, in the WebAssembly build of the plugin in the test's
// working directory (TxnWasm). It fails t where a run's commits, change
// sets, outputs, rejects or final state differ from the native serial
// run's, and returns that serial run, for the application's own checks.
func CheckStrategies(t *testing.T, w TxnWorkload, native func() txnop.Logic) TxnTrace {
	t.Helper()
	want := RunTxn(t, w, "serial", 1, native())
	for _, workers := range []int{1, 2} {
		for _, s := range txn.StrategyNames() {
			name := fmt.Sprintf("%s/%d", s, workers)
			if got := RunTxn(t, w, s, workers, native()); !reflect.DeepEqual(got, want) {
				t.Errorf("%s native differs from serial: %s", name, got.Diff(&want))
			}
			if testing.Short() {
				continue
			}
			if got := RunTxn(t, w, s, workers, TxnWasm(t, workers)); !reflect.DeepEqual(got, want) {
				t.Errorf("%s WebAssembly differs from native serial: %s", name, got.Diff(&want))
			}
		}
	}
	return want
}

// TxnWasm returns the transactional plugin in the test's working directory
// (the plugin's package directory), compiled to WebAssembly as `sluice
// plugin build` does, as a txnop.Logic of workers instances
// (hosttest.LoadTxnWasm). The plugin is built once per test binary and
// loaded once per worker count; the Logic serves any number of Operators
// in turn (their Close leaves it open) and is closed when Main returns. It
// skips the test in -short mode.
func TxnWasm(t testing.TB, workers int) txnop.Logic {
	t.Helper()
	if testing.Short() {
		t.Skip("builds the plugin to WebAssembly; skipped in -short mode")
	}
	wasm, err := pluginWasm()
	if err != nil {
		t.Fatalf("building the plugin: %v", err)
	}
	txnLoaded.mu.Lock()
	defer txnLoaded.mu.Unlock()
	if l, ok := txnLoaded.logics[workers]; ok {
		return keptOpen{l}
	}
	l, err := hosttest.LoadTxnWasm(context.Background(), "plugin", wasm, workers)
	if err != nil {
		t.Fatalf("loading the plugin for %d workers: %v", workers, err)
	}
	if txnLoaded.logics == nil {
		txnLoaded.logics = map[int]txnop.Logic{}
	}
	txnLoaded.logics[workers] = l
	return keptOpen{l}
}

// txnLoaded holds the test binary's loaded transactional plugins, by
// worker count.
var txnLoaded struct {
	mu     sync.Mutex
	logics map[int]txnop.Logic
}

// closeTxn closes the loaded transactional plugins.
func closeTxn() {
	txnLoaded.mu.Lock()
	defer txnLoaded.mu.Unlock()
	for w, l := range txnLoaded.logics {
		_ = l.Close(context.Background())
		delete(txnLoaded.logics, w)
	}
}

// keptOpen is a Logic whose Close does nothing, so that an Operator
// closing it leaves the loaded module for the next one.
type keptOpen struct{ txnop.Logic }

func (keptOpen) Close(context.Context) error { return nil }

// pluginWasm builds the plugin in the working directory once per test
// binary and returns the module.
var pluginWasm = sync.OnceValues(func() ([]byte, error) {
	dir, err := os.MkdirTemp("", "sluice-plugin-*")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	out := filepath.Join(dir, "plugin.wasm")
	if err := wasmbuild.Go(context.Background(), ".", out); err != nil {
		return nil, err
	}
	return os.ReadFile(out)
})

// BenchStrategy is the strategy the plugins' benchmarks use, so that their
// figures compare across applications.
const BenchStrategy = "ns-op-lazy"

// BenchTxn measures logic on w: each iteration runs the next batch of w
// (cycling) under the strategy with workers workers, over w's initial
// state (a batch's changes are not committed, so every pass sees the same
// state and the figure does not drift with the run's length), and reports
// ns/event and the fraction of events aborted. The Operator closes logic.
func BenchTxn(b *testing.B, w TxnWorkload, strategy string, workers int, logic txnop.Logic) {
	st, err := txn.ParseStrategy(strategy)
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	op, err := txnop.New(txnop.Config{Name: "plugin", Tables: w.Tables, Strategy: st, Workers: workers, Logic: logic})
	if err != nil {
		b.Fatal(err)
	}
	defer func() {
		if err := op.Close(ctx); err != nil {
			b.Error(err)
		}
	}()
	var out plugin.Output
	events, aborted := 0, 0
	for i := 0; b.Loop(); i++ {
		batch := w.Batches[i%len(w.Batches)]
		out.Reset()
		res, err := op.Process(ctx, batch, w.Initial, &out)
		if err != nil {
			b.Fatal(err)
		}
		events += len(batch)
		for _, c := range res.Committed {
			if !c {
				aborted++
			}
		}
	}
	elapsed := b.Elapsed()
	if events > 0 {
		b.ReportMetric(float64(elapsed.Nanoseconds())/float64(events), "ns/event")
		b.ReportMetric(float64(aborted)/float64(events), "aborted/event")
	}
}

// TxnMain runs the tests of a transactional plugin as Main does, then
// fails the binary if goroutines are left over (the scheduler's workers of
// an Operator that was not closed, say).
func TxnMain(m *testing.M) int {
	code := Main(m)
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintf(os.Stderr, "goleak: %v\n", err)
			return 1
		}
	}
	return code
}

// CheckMalformed sets the value of event index of w's first batch to
// value, which does not decode, runs w with CheckStrategies, and requires
// that event, and it alone, dead-lettered with a reason containing reason
// (the decoder's, naming the field at fault), and every other event of the
// batch to have its output.
func CheckMalformed(t *testing.T, w TxnWorkload, native func() txnop.Logic, index int, value []byte, reason string) {
	t.Helper()
	b0 := slices.Clone(w.Batches[0])
	b0[index].Value = value
	w.Batches = append([][]abi.Record{b0}, w.Batches[1:]...)
	tr := CheckStrategies(t, w, native)
	if r := tr.Rejects[0]; len(r) != 1 || !strings.HasPrefix(r[0], fmt.Sprint(index, " ")) || !strings.Contains(r[0], reason) {
		t.Errorf("rejects %q, want event %d's alone, with a reason containing %q", r, index, reason)
	}
	if n := len(tr.Outputs[0]); n != len(b0)-1 {
		t.Errorf("%d outputs for %d events, one of them rejected", n, len(b0))
	}
}
