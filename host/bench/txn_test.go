package bench

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"maps"
	"math"
	"reflect"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"
	"unsafe"

	"github.com/sluicehq/sluice/host/plugin/hosttest"
	"github.com/sluicehq/sluice/host/txnop"
	"github.com/sluicehq/sluice/plugins/ledger/ledgerop"
	"github.com/sluicehq/sluice/sdk/go/sluice"
	"github.com/sluicehq/sluice/txn"
	"github.com/sluicehq/sluice/txn/apps/workload"
	"github.com/sluicehq/sluice/txn/memstore"
)

// smallLedger returns native options for a small, contended Streaming
// Ledger workload with aborts: 64 keys, skew 0.8, a fifth of the transfers
// drawn to abort, 6 batches of 200 events.
func smallLedger(t testing.TB, strategies ...string) TxnOptions {
	t.Helper()
	o, err := QuickTxnOptions(workload.StreamingLedger)
	if err != nil {
		t.Fatal(err)
	}
	for name, v := range map[string]string{"keys": "64", "skew": "0.8", "abort-ratio": "0.2", "seed": "7"} {
		if err := o.Knobs.Set(name, v); err != nil {
			t.Fatal(err)
		}
	}
	o.Events, o.Punctuation = 1200, 200
	o.Native = nativeOf(ledgerop.New)
	o.Logics = []TxnLogic{TxnNative}
	o.Workers = []int{2, 1}
	o.Strategies = strategies
	return o
}

// TestRunTxnNative runs several strategies, serial among them, with 1 and 2
// workers natively, and checks the report: one run per strategy and worker
// count, serial first, figures complete and consistent, every run's
// outcome counts equal, speedups for each strategy, no Wasm ratios.
func TestRunTxnNative(t *testing.T) {
	opts := smallLedger(t, "ns-op-lazy", "serial", "bfs-chain-eager", "sstore")
	var progress bytes.Buffer
	opts.Progress = &progress
	rep, err := RunTxn(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(rep.Oracle, "serial strategy's run below") {
		t.Errorf("oracle %q, want the serial run", rep.Oracle)
	}
	wantOrder := []string{"serial", "ns-op-lazy", "bfs-chain-eager", "sstore"}
	if len(rep.Runs) != 2*len(wantOrder) {
		t.Fatalf("%d runs, want %d", len(rep.Runs), 2*len(wantOrder))
	}
	if rep.Committed+rep.Aborted != 1200 || rep.Aborted == 0 || rep.Committed == 0 {
		t.Errorf("reference: %d committed, %d aborted of 1200; want both", rep.Committed, rep.Aborted)
	}
	for i, r := range rep.Runs {
		if r.Strategy != wantOrder[i/2] || r.Workers != 1+i%2 || r.Logic != TxnNative {
			t.Errorf("run %d: %s, %d workers, %s; want %s, %d workers, native", i, r.Strategy, r.Workers, r.Logic, wantOrder[i/2], 1+i%2)
		}
		if r.Events != 1000 || r.Batches != 5 {
			t.Errorf("run %d: %d events in %d batches timed, want 1000 in 5 (the first is the warm-up)", i, r.Events, r.Batches)
		}
		if r.Committed != rep.Committed || r.Aborted != rep.Aborted {
			t.Errorf("run %d: %d committed, %d aborted; want %d, %d", i, r.Committed, r.Aborted, rep.Committed, rep.Aborted)
		}
		if r.Seconds <= 0 || r.Rate != float64(r.Events)/r.Seconds {
			t.Errorf("run %d: rate %v from %d events in %v s", i, r.Rate, r.Events, r.Seconds)
		}
		if r.LatencyMeanMs <= 0 || r.LatencyP99Ms <= 0 || r.LatencyP99Ms > r.LatencyMaxMs || r.LatencyMeanMs > r.LatencyMaxMs {
			t.Errorf("run %d: latency mean %v, p99 %v, max %v ms", i, r.LatencyMeanMs, r.LatencyP99Ms, r.LatencyMaxMs)
		}
		if r.Graph.Ops == 0 || r.Breakdown.Apply <= 0 {
			t.Errorf("run %d: graph %+v, breakdown %+v", i, r.Graph, r.Breakdown)
		}
	}
	if len(rep.Ratios) != 0 {
		t.Errorf("ratios %v without a Wasm run", rep.Ratios)
	}
	if len(rep.Speedups) != len(wantOrder) {
		t.Errorf("speedups %v, want one per strategy", rep.Speedups)
	}
	for _, s := range rep.Speedups {
		if s.From != 1 || s.To != 2 || s.Speedup <= 0 || s.Speedup != rep.rate(s.Strategy, 2, TxnNative, s.Keys)/rep.rate(s.Strategy, 1, TxnNative, s.Keys) {
			t.Errorf("speedup %+v", s)
		}
	}
	if rep.StateHash == "" || rep.OutputHash == "" || rep.Knobs["keys"] != "64" || rep.Knobs["deposit-ratio"] != "0.25" {
		t.Errorf("report: state %q, outputs %q, knobs %v", rep.StateHash, rep.OutputHash, rep.Knobs)
	}
	if _, ok := rep.Knobs["txn-length"]; ok {
		t.Errorf("knobs %v hold one Streaming Ledger does not read", rep.Knobs)
	}
	if !strings.Contains(progress.String(), "strategy sstore (4/4)") {
		t.Errorf("progress does not announce the last strategy:\n%s", progress.String())
	}

	var js bytes.Buffer
	if err := rep.WriteJSON(&js); err != nil {
		t.Fatal(err)
	}
	var back TxnReport
	if err := json.Unmarshal(js.Bytes(), &back); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(back.Runs, rep.Runs) || back.StateHash != rep.StateHash {
		t.Errorf("the JSON report does not read back as written")
	}
	var tb bytes.Buffer
	if err := rep.WriteTable(&tb); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"Streaming Ledger (sl)", "events/s", "latency p99", "bfs-chain-eager", "Speedup, 2 workers over 1", rep.StateHash} {
		if !strings.Contains(tb.String(), want) {
			t.Errorf("the table lacks %q:\n%s", want, tb.String())
		}
	}
}

// TestRunTxnOracle runs without the serial strategy: an untimed native
// serial run is the reference, and it agrees with a later serial run.
func TestRunTxnOracle(t *testing.T) {
	opts := smallLedger(t, "dfs-op-eager")
	opts.Workers = []int{2}
	rep, err := RunTxn(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(rep.Oracle, "untimed native run") || len(rep.Runs) != 1 {
		t.Fatalf("oracle %q, %d runs", rep.Oracle, len(rep.Runs))
	}
	with, err := RunTxn(context.Background(), smallLedger(t, "serial"))
	if err != nil {
		t.Fatal(err)
	}
	if with.StateHash != rep.StateHash || with.OutputHash != rep.OutputHash {
		t.Errorf("oracle hashes %s %s, serial run's %s %s", rep.StateHash, rep.OutputHash, with.StateHash, with.OutputHash)
	}
}

// nativeOf returns TxnOptions.Native for the operator op makes, as `sluice
// bench txn` gives it.
func nativeOf(op func() sluice.Txn) func(tables []string) txnop.Logic {
	return func(tables []string) txnop.Logic { return hosttest.TxnLogicParts(op, tables) }
}

// counting is an operator that is not deterministic: each event writes
// its key with the number of calls the operator has seen, so a second
// run of the same events on the same operator writes other values.
func counting() sluice.Txn {
	var calls atomic.Int64
	return sluice.Txn{
		Plan: func(ev sluice.Record, p *sluice.Planner) error {
			p.Write(0, ev.Key, 0, nil)
			return nil
		},
		Funcs: []sluice.TxnFunc{func(*sluice.Call) sluice.Effect {
			return sluice.Write(binary.LittleEndian.AppendUint64(nil, uint64(calls.Add(1))))
		}},
	}
}

// TestRunTxnMismatch checks that a run whose final state differs from the
// serial strategy's fails the suite with ErrTxnMismatch naming the run.
func TestRunTxnMismatch(t *testing.T) {
	opts := smallLedger(t, "serial", "ns-op-eager")
	opts.Workers = []int{1}
	e, err := newTxnEnv(opts)
	if err != nil {
		t.Fatal(err)
	}
	e.opts.Native = nativeOf(counting)
	_, err = e.run(context.Background())
	if !errors.Is(err, ErrTxnMismatch) || !strings.Contains(err.Error(), "strategy ns-op-eager, 1 worker, native") ||
		!strings.Contains(err.Error(), "final state hash") {
		t.Fatalf("error %v, want ErrTxnMismatch naming ns-op-eager and the state", err)
	}
}

// TestRunTxnBadOptions checks that wrong options fail before any run,
// with errors that name what is wrong.
func TestRunTxnBadOptions(t *testing.T) {
	for _, c := range []struct {
		name   string
		change func(*TxnOptions)
		is     error
		text   string
	}{
		{"app", func(o *TxnOptions) { o.App = "nope" }, workload.ErrUnknownApp, `"nope"`},
		{"strategy", func(o *TxnOptions) { o.Strategies = []string{"serial", "fast"} }, txn.ErrUnknownStrategy, `"fast"`},
		{"knob", func(o *TxnOptions) { o.Knobs.Skew = -1 }, workload.ErrBadKnob, `"skew"`},
		{"workers", func(o *TxnOptions) { o.Workers = []int{0} }, nil, "0 workers"},
		{"events", func(o *TxnOptions) { o.Events = 0 }, nil, "0 events"},
		{"logic", func(o *TxnOptions) { o.Logics = []TxnLogic{"jit"} }, nil, `"jit"`},
		{"plugin", func(o *TxnOptions) { o.Logics = []TxnLogic{TxnWasm} }, nil, "plugins/ledger"},
		{"native", func(o *TxnOptions) { o.Native = nil }, nil, "TxnOptions.Native nil"},
		{"twice", func(o *TxnOptions) { o.Strategies = []string{"serial", "serial"} }, nil, "given twice"},
	} {
		t.Run(c.name, func(t *testing.T) {
			opts := smallLedger(t, "serial")
			c.change(&opts)
			_, err := RunTxn(context.Background(), opts)
			if err == nil || (c.is != nil && !errors.Is(err, c.is)) || !strings.Contains(err.Error(), c.text) {
				t.Fatalf("error %v, want one naming %s (errors.Is %v)", err, c.text, c.is)
			}
		})
	}
}

// TestLaneApply checks that applying a change set copies what the store
// keeps: values (the Result's versions are reused by the next batch), and
// the keys new to the store (they point into the plan's arena).
func TestLaneApply(t *testing.T) {
	k := func(s string) txn.Key { return txn.Key{Table: 1, Key: s} }
	l := &lane{store: memstore.New()}
	l.store.Put(k("a"), []byte("1"))
	l.store.Put(k("b"), []byte("2"))
	bv, _, _ := l.store.Get(k("b"))
	arena := []byte("ab9xnew")
	newKey := unsafe.String(&arena[3], 4) // "xnew", in the "plan arena"
	changes := []txn.Change{
		{Key: k("a"), Value: bv}, // a takes b's value, aliasing it
		{Key: k("b"), Value: arena[2:3]},
		{Key: txn.Key{Table: 1, Key: newKey}, Value: arena[:1]},
		{Key: k("c"), Delete: true},
	}
	l.apply(changes)
	for i := range arena {
		arena[i] = '-' // the next batch reuses the versions and the arena
	}
	want := map[string]string{"a": "2", "b": "9", "xnew": "a"}
	got := map[string]string{}
	for key, v := range l.store.All() {
		got[key.Key] = string(v)
		if key.Key == "xnew" && unsafe.StringData(key.Key) == &arena[3] {
			t.Errorf("the new key aliases the plan's arena")
		}
	}
	if !maps.Equal(got, want) {
		t.Fatalf("store %v, want %v", got, want)
	}
}

// TestLatencyPercentile checks the event-weighted mean and 99th
// percentile over batches of different sizes.
func TestLatencyPercentile(t *testing.T) {
	l := &lane{run: TxnRun{Events: 1000, Seconds: 1}}
	// 98 batches of 10 events at 1 ms, one of 10 at 50 ms, one of 10 at
	// 100 ms: the 990th event by latency is in the 50 ms batch.
	for range 98 {
		l.lat = append(l.lat, batchTime{d: time.Millisecond, n: 10})
	}
	l.lat = append(l.lat, batchTime{d: 100 * time.Millisecond, n: 10}, batchTime{d: 50 * time.Millisecond, n: 10})
	l.finish()
	r := l.run
	if r.LatencyP99Ms != 50 || r.LatencyMaxMs != 100 || r.Rate != 1000 {
		t.Errorf("p99 %v ms, max %v ms, rate %v; want 50, 100, 1000", r.LatencyP99Ms, r.LatencyMaxMs, r.Rate)
	}
	if want := (98*1.0 + 100 + 50) / 100; r.LatencyMeanMs < want-1e-9 || r.LatencyMeanMs > want+1e-9 {
		t.Errorf("mean %v ms, want %v", r.LatencyMeanMs, want)
	}
}

// TestTxnTargets checks which targets a report bears on and how each is
// judged.
func TestTxnTargets(t *testing.T) {
	def, _ := workload.Defaults(workload.StreamingLedger)
	sl := &TxnReport{App: "sl", Punctuation: DefaultTxnPunctuation, Knobs: knobText("sl", &def), Runs: []TxnRun{
		{Strategy: "ns-op-lazy", Workers: 2, Logic: TxnWasm, Rate: 450_000},
		{Strategy: "sstore", Workers: 2, Logic: TxnWasm, Rate: 100_000},
		{Strategy: "ns-op-lazy", Workers: 2, Logic: TxnNative, Rate: 600_000},
		{Strategy: "sstore", Workers: 2, Logic: TxnNative, Rate: 250_000},
	}}
	sl.Ratios = ratios(sl.Runs)
	ts := sl.checkTargets()
	if len(ts) != 3 || !ts[0].Met || !strings.Contains(ts[0].Got, "450,000 events/s (ns-op-lazy)") || !strings.Contains(ts[0].Name, "Wasm") {
		t.Fatalf("targets %+v, want the ledger rate in Wasm met by ns-op-lazy, natively and the ratio", ts)
	}
	if !ts[1].Met || !strings.Contains(ts[1].Got, "600,000 events/s (ns-op-lazy)") || !strings.Contains(ts[1].Name, "native") {
		t.Errorf("native ledger target %+v, want met by ns-op-lazy at 600,000", ts[1])
	}
	if ts[2].Met || !strings.Contains(ts[2].Got, "0.40 (sstore") {
		t.Errorf("ratio target %+v, want not met at sstore's 0.40", ts[2])
	}
	sl.Runs[2].Rate = 599_000
	if ts := sl.checkTargets(); ts[1].Met {
		t.Errorf("native ledger target %+v at 599,000 events/s, want not met", ts[1])
	}
	sl.Knobs["skew"] = "0"
	if ts := sl.checkTargets(); len(ts) != 1 {
		t.Errorf("targets %+v with another skew, want only the ratio", ts)
	}

	gs := &TxnReport{App: "gs", Knobs: map[string]string{"acyclic": "true"}, Runs: []TxnRun{
		{Strategy: "ns-op-lazy", Workers: 1, Logic: TxnNative, Rate: 100},
		{Strategy: "ns-op-lazy", Workers: 2, Logic: TxnNative, Rate: 170},
		{Strategy: "serial", Workers: 1, Logic: TxnNative, Rate: 120},
		{Strategy: "serial", Workers: 2, Logic: TxnNative, Rate: 120},
	}}
	ts = gs.checkTargets()
	if len(ts) != 1 || !ts[0].Met || !strings.Contains(ts[0].Got, "1.70x (ns-op-lazy)") || !strings.Contains(ts[0].Name, "native") {
		t.Errorf("targets %+v, want the speedup of ns-op-lazy, native, met", ts)
	}
	// Both logics ran: a speedup target each; Wasm's 1.69x falls short.
	gs.Runs = append(gs.Runs,
		TxnRun{Strategy: "ns-op-lazy", Workers: 1, Logic: TxnWasm, Rate: 100},
		TxnRun{Strategy: "ns-op-lazy", Workers: 2, Logic: TxnWasm, Rate: 169})
	ts = gs.checkTargets()
	if len(ts) != 2 || ts[0].Met || !strings.Contains(ts[0].Name, "wasm") || !strings.Contains(ts[0].Got, "1.69x") || !ts[1].Met || !strings.Contains(ts[1].Name, "native") {
		t.Errorf("targets %+v, want the Wasm speedup (1.69x) not met and the native one met", ts)
	}
	gs.Knobs["acyclic"] = "false"
	if ts := gs.checkTargets(); len(ts) != 0 {
		t.Errorf("targets %+v with cycles, want none", ts)
	}
}

// BenchmarkTxnNativeLedger measures the suite's per-batch loop (events
// drawn, Process, the change set applied, outcomes hashed) with the native
// Streaming Ledger under ns-op-lazy with 2 workers: one batch of 10,240
// events of MorphStream's workload per iteration, the next batch each
// time.
func BenchmarkTxnNativeLedger(b *testing.B) {
	opts, err := DefaultTxnOptions(workload.StreamingLedger)
	if err != nil {
		b.Fatal(err)
	}
	opts.Logics, opts.Workers, opts.Native = []TxnLogic{TxnNative}, []int{2}, nativeOf(ledgerop.New)
	e, err := newTxnEnv(opts)
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	ls, err := e.lanes(ctx)
	if err != nil {
		b.Fatal(err)
	}
	l := ls[0]
	defer l.op.Close(ctx)
	st, _ := txn.ParseStrategy("ns-op-lazy")
	l.op.SetStrategy(st)
	l.store = cloneStore(l.space.initial)
	b.ReportAllocs()
	n := 0
	for i := 0; b.Loop(); i++ {
		l.space.events(i*opts.Punctuation, opts.Punctuation)
		if err := e.runBatch(ctx, l, true); err != nil {
			b.Fatal(err)
		}
		n += opts.Punctuation
	}
	b.ReportMetric(float64(n)/b.Elapsed().Seconds(), "events/s")
}

// BenchmarkTxnApply measures applying a Streaming Ledger batch's change
// set (10,240 events: about 30,000 keys) to a store of 230,400 keys.
func BenchmarkTxnApply(b *testing.B) {
	opts, err := DefaultTxnOptions(workload.StreamingLedger)
	if err != nil {
		b.Fatal(err)
	}
	opts.Logics, opts.Native = []TxnLogic{TxnNative}, nativeOf(ledgerop.New)
	e, err := newTxnEnv(opts)
	if err != nil {
		b.Fatal(err)
	}
	var changes []txn.Change
	for k, v := range e.spaces[0].initial.All() {
		if len(changes) == 30_000 {
			break
		}
		changes = append(changes, txn.Change{Key: k, Value: v})
	}
	l := &lane{store: cloneStore(e.spaces[0].initial)}
	b.ReportAllocs()
	for b.Loop() {
		l.apply(changes)
	}
}

// TestRunTxnDynamic runs a three-phase workload with two static strategies
// and the adaptive one, natively, and checks the report: each lane checked
// against the oracle, one phase entry per phase with every strategy's rate
// and the best static one, the adaptive strategy's choices covering the
// timed batches and its decisions one per batch, and the adaptive targets.
func TestRunTxnDynamic(t *testing.T) {
	opts := smallLedger(t, "ns-op-eager", "bfs-chain-lazy", txn.AdaptiveName)
	opts.Workers = []int{2}
	phases, err := workload.ParsePhases("sl", "events=400;skew=0;abort-ratio=0.5,events=600", opts.Knobs, 0)
	if err != nil {
		t.Fatal(err)
	}
	opts.Phases = phases
	var progress bytes.Buffer
	opts.Progress = &progress
	rep, err := RunTxn(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	d := rep.Dynamic
	if d == nil || len(d.Phases) != 3 || rep.Events != 1400 || !strings.Contains(rep.Oracle, "untimed native run") {
		t.Fatalf("dynamic %+v, events %d, oracle %q", d, rep.Events, rep.Oracle)
	}
	if len(rep.Runs) != 3 {
		t.Fatalf("%d runs, want one per strategy", len(rep.Runs))
	}
	// Batches of 200: phase 1 has 2 (the first not timed), phase 2 two,
	// phase 3 three.
	for i, want := range []int{200, 400, 600} {
		p := d.Phases[i]
		if p.Events != want || len(p.Rates) != 3 || p.BestStatic == "" || p.BestStatic == txn.AdaptiveName || p.Adaptive <= 0 {
			t.Errorf("phase %d: %+v", i+1, p)
		}
		n := 0
		for _, c := range p.Choices {
			n += c
		}
		if n*200 != want {
			t.Errorf("phase %d: adaptive choices %v cover %d batches, want %d", i+1, p.Choices, n, want/200)
		}
		if p.AdaptiveOverBest != p.Adaptive/p.BestStaticRate {
			t.Errorf("phase %d: ratio %v", i+1, p.AdaptiveOverBest)
		}
		for _, r := range p.Rates {
			var sum float64
			for _, x := range r.BatchSeconds {
				sum += x
			}
			if len(r.BatchSeconds) != want/200 || math.Abs(float64(want)/sum-r.Rate) > 1e-6*r.Rate {
				t.Errorf("phase %d, %s: batch times %v against %v events/s", i+1, r.Strategy, r.BatchSeconds, r.Rate)
			}
		}
		// The paired ratio is the same figure, from the same batches,
		// with an interval around it.
		if r := p.AdaptiveVsBest; r == nil || math.Abs(r.Ratio-p.AdaptiveOverBest) > 1e-9*p.AdaptiveOverBest || r.Batches != want/200 || !(r.Low <= r.Ratio && r.Ratio <= r.High) {
			t.Errorf("phase %d: paired ratio %+v against %v over %d batches", i+1, r, p.AdaptiveOverBest, want/200)
		}
	}
	// Phase 1 has one timed batch: its interval cannot be computed, and
	// the JSON report says so instead of failing.
	var js bytes.Buffer
	if err := rep.WriteJSON(&js); err != nil {
		t.Fatalf("WriteJSON: %v", err)
	}
	var parsed struct {
		Dynamic struct {
			Phases []struct {
				Interval map[string]any `json:"adaptive_over_best_interval"`
			} `json:"phases"`
		} `json:"dynamic"`
		Unavailable []Unavailable `json:"unavailable"`
	}
	if err := json.Unmarshal(js.Bytes(), &parsed); err != nil {
		t.Fatalf("the JSON report does not parse: %v", err)
	}
	if iv := parsed.Dynamic.Phases[0].Interval; iv == nil || iv["low"] != nil || iv["high"] != nil || iv["no_interval"] != noInterval {
		t.Errorf("phase 1's interval in JSON: %v, want low and high null and the reason", iv)
	}
	if !slices.Contains(parsed.Unavailable, Unavailable{Figure: "dynamic.phases[0].adaptive_over_best_interval.low", Reason: "not a finite number (-Inf)"}) {
		t.Errorf("unavailable figures %+v lack phase 1's interval", parsed.Unavailable)
	}
	if d.Phases[2].Knobs["abort-ratio"] != "0.5" || d.Phases[1].Knobs["skew"] != "0" {
		t.Errorf("phase knobs %v, %v", d.Phases[1].Knobs, d.Phases[2].Knobs)
	}
	if len(d.Decisions) != 7 || d.Decisions[6].Batch != 7 || d.DecideShareMax <= 0 || d.DecideShare <= 0 {
		t.Errorf("%d decisions, decide shares %v %v", len(d.Decisions), d.DecideShareMax, d.DecideShare)
	}
	if d.Stats == nil || d.Stats.Batches != 7 {
		t.Errorf("adaptive stats %+v, want 7 batches", d.Stats)
	}
	if len(d.AdaptiveOver) != 2 {
		t.Errorf("adaptive compared with %+v, want the two static strategies", d.AdaptiveOver)
	}
	for _, o := range d.AdaptiveOver {
		want := rep.rate(txn.AdaptiveName, 2, TxnNative, rep.Runs[0].Keys) / rep.rate(o.Strategy, 2, TxnNative, rep.Runs[0].Keys)
		if o.Strategy == txn.AdaptiveName || o.Batches != 6 || math.Abs(o.Ratio-want) > 1e-9*want {
			t.Errorf("adaptive over %s: %+v, want %v over 6 batches", o.Strategy, o, want)
		}
	}
	if len(rep.Targets) != 3 || !strings.Contains(rep.Targets[0].Name, "every phase") || !strings.Contains(rep.Targets[1].Got, "paired 95% interval") {
		t.Errorf("targets %+v", rep.Targets)
	}
	var table strings.Builder
	if err := rep.WriteTable(&table); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"Phases (2 workers, native", "adaptive / best", "Events per second by phase", "deciding: at most", "adaptive: 7 batches", "Adaptive over each static strategy, whole run"} {
		if !strings.Contains(table.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, table.String())
		}
	}
	if !strings.Contains(progress.String(), "phase 3/3") {
		t.Errorf("progress lacks the phases:\n%s", progress.String())
	}

	opts.Workers = []int{1, 2}
	if _, err := RunTxn(context.Background(), opts); err == nil || !strings.Contains(err.Error(), "one worker count") {
		t.Errorf("a dynamic run with two worker counts: %v", err)
	}
}

// TestRunTxnKeySweep runs two strategies over two key-space sizes, once
// with serial among the strategies and once against the oracle, and checks
// the report: a run per size, strategy and worker count, each with its
// size, and the sweep's ratios. Each size's runs differ from the other's
// in state and outputs, so a run checked against the wrong size's
// reference would fail RunTxn.
func TestRunTxnKeySweep(t *testing.T) {
	for _, strategies := range [][]string{{"serial", "ns-op-lazy"}, {"ns-op-lazy", "bfs-op-eager"}} {
		opts := smallLedger(t, strategies...)
		opts.KeySpaces = []int{64, 640}
		rep, err := RunTxn(context.Background(), opts)
		if err != nil {
			t.Fatal(err)
		}
		if len(rep.Runs) != 2*2*len(strategies) {
			t.Fatalf("%s: %d runs, want %d", strategies, len(rep.Runs), 2*2*len(strategies))
		}
		for i, r := range rep.Runs {
			if want := []int{64, 640}[i/2%2]; r.Keys != want {
				t.Errorf("%s: run %d (%s, %d workers): %d keys, want %d", strategies, i, r.Strategy, r.Workers, r.Keys, want)
			}
		}
		if len(rep.KeySweep) != 2*len(strategies) {
			t.Fatalf("%s: sweep %+v, want one ratio per strategy and worker count", strategies, rep.KeySweep)
		}
		for _, x := range rep.KeySweep {
			base, got := rep.rate(x.Strategy, x.Workers, x.Logic, 64), rep.rate(x.Strategy, x.Workers, x.Logic, 640)
			if x.FromKeys != 64 || x.Keys != 640 || x.Rate != got || x.Ratio != got/base {
				t.Errorf("%s: sweep entry %+v, want 640 keys over 64 at %v / %v", strategies, x, got, base)
			}
		}
		if len(rep.Speedups) != 2*len(strategies) {
			t.Errorf("%s: speedups %+v, want one per strategy and size", strategies, rep.Speedups)
		}
		var tab bytes.Buffer
		if err := rep.WriteTable(&tab); err != nil {
			t.Fatal(err)
		}
		for _, want := range []string{"key spaces: 64; 640 keys a table", "Key-space sweep", "memory: peak resident"} {
			if !strings.Contains(tab.String(), want) {
				t.Errorf("%s: the table lacks %q:\n%s", strategies, want, tab.String())
			}
		}
	}
	opts := smallLedger(t, "ns-op-lazy")
	opts.KeySpaces = []int{64, 64}
	if _, err := RunTxn(context.Background(), opts); err == nil {
		t.Error("a size given twice was accepted")
	}
}

// TestTxnKeyTargets checks the key-space targets: judged on the sizes 10
// and 100 times the first, worst combination, Streaming Ledger only.
func TestTxnKeyTargets(t *testing.T) {
	runs := []TxnRun{
		{Strategy: "a", Workers: 2, Logic: TxnNative, Keys: 100, Rate: 1000},
		{Strategy: "a", Workers: 2, Logic: TxnNative, Keys: 1000, Rate: 950},
		{Strategy: "a", Workers: 2, Logic: TxnNative, Keys: 10000, Rate: 700},
		{Strategy: "b", Workers: 2, Logic: TxnNative, Keys: 100, Rate: 1000},
		{Strategy: "b", Workers: 2, Logic: TxnNative, Keys: 1000, Rate: 850},
		{Strategy: "b", Workers: 2, Logic: TxnNative, Keys: 10000, Rate: 900},
	}
	r := &TxnReport{App: "sl", Runs: runs, KeySweep: keySweep(runs)}
	ts := r.keyTargets()
	if len(ts) != 2 {
		t.Fatalf("targets %+v, want 10x and 100x", ts)
	}
	if ts[0].Met || !strings.Contains(ts[0].Got, "0.85 (b") || !strings.Contains(ts[0].Name, "10x the keys (1,000)") {
		t.Errorf("10x target %+v, want not met at b's 0.85", ts[0])
	}
	if ts[1].Met || !strings.Contains(ts[1].Got, "0.70 (a") {
		t.Errorf("100x target %+v, want not met at a's 0.70", ts[1])
	}
	r.Runs[2].Rate, r.Runs[4].Rate = 800, 900
	r.KeySweep = keySweep(r.Runs)
	if ts := r.keyTargets(); !ts[0].Met || !ts[1].Met {
		t.Errorf("targets %+v, want both met", ts)
	}
	r.App = "gs"
	if ts := r.checkTargets(); len(ts) != 0 {
		t.Errorf("targets %+v for GrepSum, want none", ts)
	}
}
