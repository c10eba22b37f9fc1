package exec

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sluicehq/sluice/abi"
	"github.com/sluicehq/sluice/connectors"
	"github.com/sluicehq/sluice/host/plugin"
	"github.com/sluicehq/sluice/host/txnop"
	"github.com/sluicehq/sluice/txn"
)

// chanSource is an unbounded, resumable source fed by the test: each
// slice sent on ch is one Read; positions are 1-based.
type chanSource struct {
	ch   chan []abi.Record
	next uint64

	mu    sync.Mutex
	acked uint64
}

func newChanSource() *chanSource { return &chanSource{ch: make(chan []abi.Record, 64)} }

func (s *chanSource) Name() string { return "chan" }
func (s *chanSource) Open(_ context.Context, after uint64) error {
	s.next = after
	return nil
}
func (s *chanSource) Read(ctx context.Context, buf []connectors.Message) (int, error) {
	select {
	case recs := <-s.ch:
		if len(recs) > len(buf) {
			panic("chanSource: chunk larger than the read buffer")
		}
		for i, r := range recs {
			s.next++
			buf[i] = connectors.Message{Record: r, Position: s.next}
		}
		return len(recs), nil
	case <-ctx.Done():
		return 0, ctx.Err()
	}
}
func (s *chanSource) Ack(_ context.Context, pos uint64) error {
	s.mu.Lock()
	s.acked = pos
	s.mu.Unlock()
	return nil
}
func (s *chanSource) ackedPos() uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.acked
}
func (s *chanSource) Resumable() bool { return true }
func (s *chanSource) Close() error    { return nil }

// liveRun is a job running in the background on a chanSource.
type liveRun struct {
	src    *chanSource
	sink   *memSink
	dead   *memSink
	job    *Job
	cancel context.CancelFunc
	done   chan error
	mu     sync.Mutex
	events []string // OnRollback calls
}

func startLive(t *testing.T, batch int, ops ...Operator) *liveRun {
	t.Helper()
	store := openStore(t, t.TempDir())
	t.Cleanup(func() { store.Close() })
	r := &liveRun{src: newChanSource(), sink: &memSink{}, dead: &memSink{}, done: make(chan error, 1)}
	job, err := New(context.Background(), Config{
		Name: "p", Sources: []Input{{Name: "in", Source: r.src}}, Operators: ops,
		Sinks: []Output{{Name: "out", Sink: r.sink}}, DeadLetter: r.dead, Store: store,
		BatchSize: batch, Linger: time.Millisecond,
		OnRollback: func(op, failed, restored string, reason error) {
			r.mu.Lock()
			r.events = append(r.events, fmt.Sprintf("%s %s->%s: %v", op, failed, restored, reason))
			r.mu.Unlock()
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	r.job = job
	ctx, cancel := context.WithCancel(context.Background())
	r.cancel = cancel
	go func() { r.done <- job.Run(ctx) }()
	t.Cleanup(func() { r.stop(t) })
	return r
}

// stop asks the job to stop and returns Run's error.
func (r *liveRun) stop(t *testing.T) error {
	t.Helper()
	if r.cancel == nil {
		return nil
	}
	r.cancel()
	r.cancel = nil
	select {
	case err := <-r.done:
		return err
	case <-time.After(30 * time.Second):
		t.Fatal("the job did not stop")
	}
	return nil
}

// feed sends values as one chunk and waits until the sink and the dead
// letters together hold want records.
func (r *liveRun) feed(t *testing.T, want int, values ...string) {
	t.Helper()
	recs := make([]abi.Record, len(values))
	for i, v := range values {
		recs[i] = abi.Record{Key: []byte(v), Value: []byte(v), Time: int64(i)}
	}
	before := r.job.Status().RecordsIn
	r.src.ch <- recs
	waitFor(t, func() bool { return len(r.sink.records())+len(r.dead.records()) >= want })
	// The sinks are written before the batch commits; the status counts
	// it once it has.
	waitFor(t, func() bool { return r.job.Status().RecordsIn >= before+uint64(len(recs)) })
}

// waitFor polls cond until it holds; a deadline fails the test (it is no
// assertion about speed).
func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not met within 30s")
		}
		time.Sleep(time.Millisecond)
	}
}

func values(s *memSink) []string {
	var out []string
	for _, o := range s.records() {
		out = append(out, string(o.Record.Value))
	}
	return out
}

func TestSwapStatelessAtBatchBoundary(t *testing.T) {
	r := startLive(t, 64, Operator{Name: "case", Kind: plugin.KindMap, Plugin: load(t, "upper", plugin.KindMap, 0), Parallelism: 2, Version: "v1"})
	r.feed(t, 2, "ab", "cd")
	if _, ok := r.job.LastSwap("case"); ok {
		t.Error("LastSwap reports a swap before any")
	}
	times, err := r.job.SwapTimed(context.Background(), "case", Replacement{Plugin: load(t, "lower", plugin.KindMap, 0), Version: "v2"})
	if err != nil {
		t.Fatal(err)
	}
	r.feed(t, 4, "eF", "Gh")
	if got, want := values(r.sink), []string{"AB", "CD", "ef", "gh"}; !slices.Equal(got, want) {
		t.Errorf("outputs %q, want %q", got, want)
	}
	// The first batch on the new code has run: its outputs are out.
	last, ok := r.job.LastSwap("case")
	switch {
	case !ok:
		t.Error("LastSwap reports no swap after one")
	case times.Instances <= 0 || last.Instances != times.Instances || last.Boundary != times.Boundary || last.Install != times.Install:
		t.Errorf("LastSwap %+v, SwapTimed %+v: want the same steps, the instances timed", last, times)
	case last.FirstBatch <= 0 || last.Before <= 0:
		t.Errorf("LastSwap %+v: want the first batch on the new code and the last on the old one timed", last)
	}
	st := r.job.Status().Operators[0]
	if st.Version != "v2" || st.Swaps != 1 || st.Plugin != "lower.wasm" {
		t.Errorf("status version %q swaps %d plugin %q, want v2, 1, lower.wasm", st.Version, st.Swaps, st.Plugin)
	}
	if got := counterValue(t, r.job.m, "sluice_operator_swaps_total", "operator", "case"); got != 1 {
		t.Errorf("swaps metric %v, want 1", got)
	}
	if err := r.stop(t); err != nil {
		t.Fatal(err)
	}
}

func TestSwapKeyedKeepsState(t *testing.T) {
	r := startLive(t, 64, Operator{Name: "count", Kind: plugin.KindKeyed, Plugin: load(t, "wordcount", plugin.KindKeyed, 0), Parallelism: 2, Tables: []string{"counts"}})
	r.feed(t, 3, "a", "b", "a")
	// faulty counts keys in the same format as wordcount.
	if err := r.job.Swap(context.Background(), "count", Replacement{Plugin: load(t, "faulty", plugin.KindKeyed, 0), Version: "faulty"}); err != nil {
		t.Fatal(err)
	}
	r.feed(t, 5, "a", "b")
	if got, want := values(r.sink), []string{"1", "1", "2", "3", "2"}; !slices.Equal(got, want) {
		t.Errorf("counts %q, want %q: the new module must continue the old one's state", got, want)
	}
}

func TestSwapRolledBackWhenTheNewModuleTraps(t *testing.T) {
	r := startLive(t, 64, Operator{Name: "count", Kind: plugin.KindKeyed, Plugin: load(t, "wordcount", plugin.KindKeyed, 0),
		Parallelism: 2, Tables: []string{"counts"}, Version: "v1", RollbackBatches: 3})
	r.feed(t, 2, "a", "boom")
	if err := r.job.Swap(context.Background(), "count", Replacement{Plugin: load(t, "faulty", plugin.KindKeyed, 0), Version: "v2"}); err != nil {
		t.Fatal(err)
	}
	// faulty writes a's count, then panics on "boom": the batch is undone
	// and wordcount processes it again.
	r.feed(t, 5, "a", "boom", "b")
	if got, want := values(r.sink), []string{"1", "1", "2", "2", "1"}; !slices.Equal(got, want) {
		t.Errorf("counts %q, want %q", got, want)
	}
	if n := len(r.dead.records()); n != 0 {
		t.Errorf("%d dead letters; the rolled-back batch must be processed by the old module", n)
	}
	st := r.job.Status().Operators[0]
	if st.Version != "v1" || st.Rollbacks != 1 || !strings.Contains(st.LastRollback, "boom") || st.TrialBatches != 0 {
		t.Errorf("status %+v, want version v1, 1 rollback naming the trap, no trial", st)
	}
	r.mu.Lock()
	events := slices.Clone(r.events)
	r.mu.Unlock()
	if len(events) != 1 || !strings.HasPrefix(events[0], "count v2->v1: ") {
		t.Errorf("OnRollback calls %q", events)
	}
	// The old module goes on, with the state as if v2 never ran.
	r.feed(t, 6, "a")
	if got := values(r.sink)[5]; got != "3" {
		t.Errorf("count of a after the rollback %q, want 3", got)
	}
}

func TestSwapPassesItsTrial(t *testing.T) {
	r := startLive(t, 64, Operator{Name: "count", Kind: plugin.KindKeyed, Plugin: load(t, "wordcount", plugin.KindKeyed, 0),
		Parallelism: 1, Tables: []string{"counts"}, Version: "v1", RollbackBatches: 2})
	if err := r.job.Swap(context.Background(), "count", Replacement{Plugin: load(t, "faulty", plugin.KindKeyed, 0), Version: "v2"}); err != nil {
		t.Fatal(err)
	}
	if got := r.job.Status().Operators[0].TrialBatches; got != 2 {
		t.Errorf("trial batches %d, want 2", got)
	}
	r.feed(t, 1, "a")
	r.feed(t, 2, "a")
	// The trial is over: a failure now is dead-lettered, not rolled back.
	r.feed(t, 3, "boom")
	st := r.job.Status().Operators[0]
	if st.Version != "v2" || st.Rollbacks != 0 || st.TrialBatches != 0 {
		t.Errorf("status %+v, want v2 without rollbacks", st)
	}
	d := r.dead.records()
	if len(d) != 1 || header(d[0].Record, HeaderVersion) != "v2" || header(d[0].Record, HeaderPlugin) != "faulty.wasm" {
		t.Fatalf("dead letters %+v, want boom with version v2", d)
	}
}

// TestSwapClosesThePluginsItOwns checks that a module handed over with
// ClosePlugin is closed once nothing runs it: after the next swap's trial,
// after a rollback away from it, when a swap fails, and when the job is
// closed; and that a module the caller kept (the first, without
// ClosePlugin) is left open.
func TestSwapClosesThePluginsItOwns(t *testing.T) {
	ctx := context.Background()
	open := func(p *plugin.Plugin) bool {
		inst, err := p.NewInstance(ctx, nil)
		if err != nil {
			return false
		}
		inst.Close(ctx)
		return true
	}
	first := load(t, "wordcount", plugin.KindKeyed, 0)
	r := startLive(t, 64, Operator{Name: "count", Kind: plugin.KindKeyed, Plugin: first,
		Parallelism: 1, Tables: []string{"counts"}, Version: "v1", RollbackBatches: 1})
	v2 := load(t, "wordcount", plugin.KindKeyed, 0)
	if err := r.job.Swap(ctx, "count", Replacement{Plugin: v2, Version: "v2", ClosePlugin: true}); err != nil {
		t.Fatal(err)
	}
	r.feed(t, 1, "a") // v2's trial passes: v1's instances go, the module stays (the caller's)
	if !open(first) || !open(v2) {
		t.Fatalf("after v2's trial: first open %v, v2 open %v; want both", open(first), open(v2))
	}
	faulty := load(t, "faulty", plugin.KindKeyed, 0)
	if err := r.job.Swap(ctx, "count", Replacement{Plugin: faulty, Version: "v3", ClosePlugin: true}); err != nil {
		t.Fatal(err)
	}
	r.feed(t, 3, "boom", "b") // fails in its trial: rolled back to v2
	if st := r.job.Status().Operators[0]; st.Version != "v2" || st.Rollbacks != 1 {
		t.Fatalf("status %+v, want v2 after a rollback", st)
	}
	if open(faulty) || !open(v2) {
		t.Errorf("after the rollback: faulty open %v, v2 open %v; want faulty closed, v2 open", open(faulty), open(v2))
	}
	v4 := load(t, "wordcount", plugin.KindKeyed, 0)
	if err := r.job.Swap(ctx, "count", Replacement{Plugin: v4, Version: "v4", ClosePlugin: true}); err != nil {
		t.Fatal(err)
	}
	r.feed(t, 4, "c") // v4's trial passes: v2 is closed
	if open(v2) || !open(v4) {
		t.Errorf("after v4's trial: v2 open %v, v4 open %v; want v2 closed, v4 open", open(v2), open(v4))
	}
	refused := load(t, "upper", plugin.KindMap, 0)
	if err := r.job.Swap(ctx, "count", Replacement{Plugin: refused, ClosePlugin: true}); !errors.Is(err, ErrSwapRefused) {
		t.Fatalf("swap to a map module: %v, want ErrSwapRefused", err)
	}
	if open(refused) {
		t.Error("a refused module handed over with ClosePlugin is still open")
	}
	if err := r.stop(t); err != nil {
		t.Fatal(err)
	}
	if err := r.job.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if open(v4) || !open(first) {
		t.Errorf("after Close: v4 open %v, first open %v; want v4 closed, first open", open(v4), open(first))
	}
}

func TestSwapRefused(t *testing.T) {
	r := startLive(t, 64, Operator{Name: "case", Kind: plugin.KindMap, Plugin: load(t, "upper", plugin.KindMap, 0), Parallelism: 1})
	ctx := context.Background()
	for name, tc := range map[string]struct {
		op string
		r  Replacement
	}{
		"unknown operator": {"nope", Replacement{Plugin: load(t, "lower", plugin.KindMap, 0)}},
		"no plugin":        {"case", Replacement{}},
		"other kind":       {"case", Replacement{Plugin: load(t, "wordcount", plugin.KindKeyed, 0)}},
	} {
		if err := r.job.Swap(ctx, tc.op, tc.r); !errors.Is(err, ErrSwapRefused) {
			t.Errorf("%s: Swap = %v, want ErrSwapRefused", name, err)
		}
	}
	// A configuration the new module refuses is refused before the swap.
	if err := r.stop(t); err != nil {
		t.Fatal(err)
	}
	if err := r.job.Swap(ctx, "case", Replacement{Plugin: load(t, "lower", plugin.KindMap, 0)}); !errors.Is(err, ErrNotRunning) {
		t.Errorf("Swap after the job stopped = %v, want ErrNotRunning", err)
	}
}

func TestRetriesThenDeadLetter(t *testing.T) {
	r := startLive(t, 64, Operator{Name: "count", Kind: plugin.KindKeyed, Plugin: load(t, "faulty", plugin.KindKeyed, 0),
		Parallelism: 2, Tables: []string{"counts"}, Version: "v7", Retries: 2})
	r.feed(t, 3, "a", "boom", "a")
	if got, want := values(r.sink), []string{"1", "2"}; !slices.Equal(got, want) {
		t.Errorf("outputs %q, want %q", got, want)
	}
	d := r.dead.records()
	if len(d) != 1 {
		t.Fatalf("%d dead letters, want 1", len(d))
	}
	if e := header(d[0].Record, HeaderError); !strings.Contains(e, "after 2 retries") || header(d[0].Record, HeaderVersion) != "v7" ||
		header(d[0].Record, HeaderPosition) != "2" {
		t.Errorf("dead letter headers %+v", d[0].Record.Headers)
	}
	if got := counterValue(t, r.job.m, "sluice_operator_retries_total", "operator", "count"); got != 2 {
		t.Errorf("retries %v, want 2", got)
	}
	if got := r.job.Status().Operators[0].Retries; got != 2 {
		t.Errorf("the status counts %d retries, want 2", got)
	}
}

func TestQuarantineWaitsForASwap(t *testing.T) {
	r := startLive(t, 64, Operator{Name: "count", Kind: plugin.KindKeyed, Plugin: load(t, "faulty", plugin.KindKeyed, 0),
		Parallelism: 1, Tables: []string{"counts"}, Version: "bad", QuarantineAfter: 2, RollbackBatches: 1})
	r.feed(t, 2, "a", "boom") // first failing batch: dead-lettered
	r.src.ch <- []abi.Record{{Key: []byte("a"), Value: []byte("a")}, {Key: []byte("boom"), Value: []byte("boom")}}
	waitFor(t, func() bool { return len(r.job.Quarantined()) == 1 })
	if got := r.src.ackedPos(); got != 2 {
		t.Errorf("acknowledged up to %d while quarantined, want 2", got)
	}
	st := r.job.Status().Operators[0]
	if !st.Quarantined {
		t.Errorf("status %+v, want quarantined", st)
	}
	if n := len(r.sink.records()) + len(r.dead.records()); n != 2 {
		t.Errorf("%d records out while quarantined, want the first batch's 2", n)
	}
	if err := r.job.Swap(context.Background(), "count", Replacement{Plugin: load(t, "wordcount", plugin.KindKeyed, 0), Version: "good"}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() bool { return len(r.sink.records()) == 3 })
	if got, want := values(r.sink), []string{"1", "2", "1"}; !slices.Equal(got, want) {
		t.Errorf("counts %q, want %q (the held batch processed by the new module)", got, want)
	}
	if st := r.job.Status().Operators[0]; st.Quarantined || st.Version != "good" {
		t.Errorf("status %+v after the swap", st)
	}
	waitFor(t, func() bool { return r.src.ackedPos() == 4 })
}

func TestQuarantineStopCommitsNothing(t *testing.T) {
	r := startLive(t, 64, Operator{Name: "count", Kind: plugin.KindKeyed, Plugin: load(t, "faulty", plugin.KindKeyed, 0),
		Parallelism: 1, Tables: []string{"counts"}, QuarantineAfter: 1})
	r.src.ch <- []abi.Record{{Key: []byte("boom"), Value: []byte("boom")}}
	waitFor(t, func() bool { return len(r.job.Quarantined()) == 1 })
	if err := r.stop(t); err != nil {
		t.Errorf("Run = %v, want nil for a stop while quarantined", err)
	}
	if got := r.src.ackedPos(); got != 0 {
		t.Errorf("acknowledged %d, want nothing", got)
	}
}

// bankV2 is the bank with outputs marked "v2", and failing is one whose
// every operation fails: the replacements of the transactional tests.
type (
	bankV2  struct{ bank }
	failing struct{ bank }
)

func (bankV2) Post(ctx context.Context, events []abi.Record, p *txnop.Plan, res *txn.Result, out *plugin.Output) error {
	n := len(out.Records)
	if err := (bank{}).Post(ctx, events, p, res, out); err != nil {
		return err
	}
	for i := n; i < len(out.Records); i++ {
		out.Records[i].Value = append([]byte("v2 "), out.Records[i].Value...)
	}
	return nil
}

func (failing) Apply(context.Context, int, int, *txn.Op, txn.Access) (txn.Effect, error) {
	return txn.Effect{}, errors.New("failing on purpose")
}

func txnReplacement(t *testing.T, l txnop.Logic, version string) Replacement {
	t.Helper()
	st, err := txn.ParseStrategy("ns-op-eager")
	if err != nil {
		t.Fatal(err)
	}
	op, err := txnop.New(txnop.Config{Name: "bank", Tables: bankTables, Strategy: st, Workers: 2, Logic: l})
	if err != nil {
		t.Fatal(err)
	}
	return Replacement{Txn: op, Version: version}
}

func TestSwapTransactional(t *testing.T) {
	op := bankOperator(t, "bank", "ns-op-eager", 2, 4, false)
	op.RollbackBatches = 2
	op.Txn.Interval = time.Millisecond
	r := startLive(t, 64, op)
	r.feed(t, 2, "dep a 5", "dep b 1")
	if err := r.job.Swap(context.Background(), "bank", txnReplacement(t, failing{}, "broken")); err != nil {
		t.Fatal(err)
	}
	r.feed(t, 3, "dep a 1") // fails under "broken": rolled back and run by v1
	if err := r.job.Swap(context.Background(), "bank", txnReplacement(t, bankV2{}, "v2")); err != nil {
		t.Fatal(err)
	}
	r.feed(t, 4, "dep a 1")
	if got, want := values(r.sink), []string{"ok 0", "ok 0", "ok 5", "v2 ok 6"}; !slices.Equal(got, want) {
		t.Errorf("outputs %q, want %q", got, want)
	}
	st := r.job.Status().Operators[0]
	if st.Version != "v2" || st.Swaps != 2 || st.Rollbacks != 1 {
		t.Errorf("status %+v", st)
	}
	if err := r.stop(t); err != nil {
		t.Fatal(err)
	}
	if got := committedState(t, r.job.cfg.Store); !maps.Equal(got, map[string]string{"accounts/a": "7", "accounts/b": "1", "stats/deposits": "4"}) {
		t.Errorf("state %v", got)
	}
}

// TestSwapTransactionalKeepsTheAdaptiveModel checks that a swap of an
// adaptive transactional operator carries the decision model over: the
// decisions are one history across the swap, and a rollback keeps it too.
func TestSwapTransactionalKeepsTheAdaptiveModel(t *testing.T) {
	op := bankOperator(t, "bank", "adaptive", 2, 4, false)
	op.RollbackBatches = 1
	op.Txn.Interval = time.Millisecond
	r := startLive(t, 64, op)
	r.feed(t, 2, "dep a 5", "dep b 1")
	adaptiveReplacement := func(l txnop.Logic, version string) Replacement {
		o, err := txnop.New(txnop.Config{Name: "bank", Tables: bankTables, Strategy: txn.Strategy{Kind: txn.Adaptive}, Workers: 2, Logic: l})
		if err != nil {
			t.Fatal(err)
		}
		return Replacement{Txn: o, Version: version}
	}
	batches := func() int {
		recs, err := r.job.Decisions("bank", 0)
		if err != nil {
			t.Fatal(err)
		}
		return len(recs)
	}
	before := batches()
	if before == 0 {
		t.Fatal("no decision recorded before the swap")
	}
	if err := r.job.Swap(context.Background(), "bank", adaptiveReplacement(bankV2{}, "v2")); err != nil {
		t.Fatal(err)
	}
	if got := batches(); got != before {
		t.Errorf("%d decisions right after the swap, want the %d from before it", got, before)
	}
	r.feed(t, 3, "dep a 1")
	if got := batches(); got != before+1 {
		t.Errorf("%d decisions after one more batch, want %d", got, before+1)
	}
	if err := r.job.Swap(context.Background(), "bank", adaptiveReplacement(failing{}, "broken")); err != nil {
		t.Fatal(err)
	}
	r.feed(t, 4, "dep a 1") // fails under "broken": rolled back and run by v2
	if st := r.job.Status().Operators[0]; st.Version != "v2" || st.Rollbacks != 1 {
		t.Fatalf("status %+v, want v2 after a rollback", st)
	}
	if got := batches(); got < before+2 {
		t.Errorf("%d decisions after the rollback, want at least %d: the history goes on", got, before+2)
	}
}

// TestSwapUnderLoad swaps a map operator back and forth while records
// stream through it, and checks at the sink, by sequence number, that
// every record came out exactly once. It logs how long each Swap took to
// put the new module in place and the longest gap between two sink writes
// against the median one (the pause a swap adds): measurements, not
// assertions.
func TestSwapUnderLoad(t *testing.T) {
	total, chunk := 60000, 500
	if raceEnabled {
		total = 10000 // the race detector slows the guest tenfold
	}
	r := startLive(t, 1024, Operator{Name: "case", Kind: plugin.KindMap, Plugin: load(t, "upper", plugin.KindMap, 0), Parallelism: 2, Version: "upper"})
	mods := []*plugin.Plugin{load(t, "upper", plugin.KindMap, 0), load(t, "lower", plugin.KindMap, 0)}
	fed := make(chan struct{})
	began := time.Now()
	go func() {
		defer close(fed)
		for lo := 0; lo < total; lo += chunk {
			recs := make([]abi.Record, chunk)
			for i := range recs {
				v := "s" + strconv.Itoa(lo+i)
				recs[i] = abi.Record{Key: []byte(v), Value: []byte(v)}
			}
			r.src.ch <- recs
		}
	}()
	swaps := 0
	var pauses []time.Duration
	var windows [][2]time.Time // each swap's call, start to return
	for len(r.sink.records()) < total/2 || swaps < 2 {
		start := time.Now()
		if err := r.job.Swap(context.Background(), "case", Replacement{Plugin: mods[swaps%2], Version: []string{"upper2", "lower"}[swaps%2]}); err != nil {
			t.Fatal(err)
		}
		pauses = append(pauses, time.Since(start))
		windows = append(windows, [2]time.Time{start, time.Now()})
		swaps++
		if swaps >= 20 {
			break
		}
	}
	<-fed
	waitFor(t, func() bool { return len(r.sink.records()) >= total })
	out := r.sink.records()
	if len(out) != total {
		t.Fatalf("%d outputs, want %d", len(out), total)
	}
	seen := make([]bool, total)
	for _, o := range out {
		v := strings.ToLower(string(o.Record.Value))
		n, err := strconv.Atoi(strings.TrimPrefix(v, "s"))
		if err != nil || n < 0 || n >= total {
			t.Fatalf("output %q is not a sequence number", o.Record.Value)
		}
		if seen[n] {
			t.Fatalf("sequence %d twice", n)
		}
		seen[n] = true
	}
	elapsed := time.Since(began)
	// Gaps between sink writes that end during a swap call, against the
	// others (steady state).
	var steady, during []time.Duration
	for _, g := range r.sink.gaps() {
		in := false
		for _, w := range windows {
			in = in || (!g.at.Before(w[0]) && !g.at.After(w[1].Add(g.d)))
		}
		if in {
			during = append(during, g.d)
		} else {
			steady = append(steady, g.d)
		}
	}
	slices.Sort(steady)
	slices.Sort(during)
	slices.Sort(pauses)
	pct := func(d []time.Duration, p int) time.Duration {
		if len(d) == 0 {
			return 0
		}
		return d[min(len(d)-1, len(d)*p/100)]
	}
	t.Logf("%d records in %v (%.0f/s), %d swaps; Swap call: median %v, max %v; gap between sink writes: steady p50 %v p99 %v, during swaps p50 %v max %v",
		total, elapsed.Round(time.Millisecond), float64(total)/elapsed.Seconds(), swaps, pauses[len(pauses)/2], pauses[len(pauses)-1],
		pct(steady, 50), pct(steady, 99), pct(during, 50), pct(during, 100))
}

// BenchmarkSwap measures one swap of an idle stateless operator with two
// workers: making and configuring the new instances, and installing them
// at the executor's next boundary.
func BenchmarkSwap(b *testing.B) {
	store := openStore(b, b.TempDir())
	defer store.Close()
	mods := []*plugin.Plugin{load(b, "upper", plugin.KindMap, 0), load(b, "lower", plugin.KindMap, 0)}
	src := newChanSource()
	job, err := New(context.Background(), Config{
		Name: "p", Sources: []Input{{Name: "in", Source: src}},
		Operators: []Operator{{Name: "case", Kind: plugin.KindMap, Plugin: mods[0], Parallelism: 2}},
		Sinks:     []Output{{Name: "out", Sink: &memSink{}}}, DeadLetter: &memSink{}, Store: store,
	})
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- job.Run(ctx) }()
	i := 0
	for b.Loop() {
		i++
		if err := job.Swap(context.Background(), "case", Replacement{Plugin: mods[i%2]}); err != nil {
			b.Fatal(err)
		}
	}
	cancel()
	if err := <-done; err != nil {
		b.Fatal(err)
	}
}
