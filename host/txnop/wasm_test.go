package txnop_test

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/sluicehq/sluice/abi"
	"github.com/sluicehq/sluice/host/plugin"
	"github.com/sluicehq/sluice/host/txnop"
	"github.com/sluicehq/sluice/runtime"
	"github.com/sluicehq/sluice/txn"
)

// maxWorkers is the most scheduler workers the tests run.
const maxWorkers = 3

// newOperator makes an Operator over logic with workers workers, closed
// when tb ends.
func newOperator(tb testing.TB, logic txnop.Logic, workers int) *txnop.Operator {
	tb.Helper()
	op, err := txnop.New(txnop.Config{Name: "ledger", Tables: []string{"accounts", "books"}, Workers: workers, Logic: logic})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		if err := op.Close(context.Background()); err != nil {
			tb.Error(err)
		}
	})
	return op
}

// newWasmOperator makes an Operator over the test guest.
func newWasmOperator(tb testing.TB, p *plugin.Plugin, workers int) *txnop.Operator {
	tb.Helper()
	logic, err := txnop.NewWasm(context.Background(), p, workers, nil)
	if err != nil {
		tb.Fatal(err)
	}
	return newOperator(tb, logic, workers)
}

func strategy(tb testing.TB, name string) txn.Strategy {
	tb.Helper()
	st, err := txn.ParseStrategy(name)
	if err != nil {
		tb.Fatal(err)
	}
	return st
}

// outcome is what a batch produced, copied out of the Result and Output
// (valid only until the next Process) in comparable form.
type outcome struct {
	committed []bool
	changes   []string
	records   []string
	rejects   []string
	deletes   int
}

func snapshot(res *txn.Result, out *plugin.Output) outcome {
	o := outcome{committed: slices.Clone(res.Committed)}
	for _, c := range res.Changes {
		if c.Delete {
			o.changes = append(o.changes, fmt.Sprintf("%v deleted", c.Key))
			o.deletes++
		} else {
			o.changes = append(o.changes, fmt.Sprintf("%v=%d", c.Key, balance(c.Value)))
		}
	}
	for _, r := range out.Records {
		o.records = append(o.records, fmt.Sprintf("%d %s %d: %s", r.Origin, r.Key, r.Time, r.Value))
	}
	for _, r := range out.Rejects {
		reason := r.Err.Error()
		var re *plugin.RecordError
		if errors.As(r.Err, &re) {
			reason = re.Reason
		}
		o.rejects = append(o.rejects, fmt.Sprintf("%d %s", r.Index, reason))
	}
	return o
}

// diff says how got differs from want, or "".
func diff(want, got outcome) string {
	if !slices.Equal(want.committed, got.committed) {
		return fmt.Sprintf("committed %v, want %v", got.committed, want.committed)
	}
	for _, d := range []struct {
		what      string
		want, got []string
	}{{"changes", want.changes, got.changes}, {"records", want.records, got.records}, {"rejects", want.rejects, got.rejects}} {
		if slices.Equal(d.want, d.got) {
			continue
		}
		for i := range min(len(d.want), len(d.got)) {
			if d.want[i] != d.got[i] {
				return fmt.Sprintf("%s[%d] = %q, want %q", d.what, i, d.got[i], d.want[i])
			}
		}
		return fmt.Sprintf("%d %s, want %d: %q vs %q", len(d.got), d.what, len(d.want), d.got, d.want)
	}
	return ""
}

func process(ctx context.Context, op *txnop.Operator, st txn.Strategy, events []abi.Record, store txn.Store) (outcome, error) {
	op.SetStrategy(st)
	var out plugin.Output
	res, err := op.Process(ctx, events, store, &out)
	if err != nil {
		return outcome{}, err
	}
	return snapshot(res, &out), nil
}

// ledgerBatch is a random batch of ledger events over a random store.
type ledgerBatch struct {
	events []abi.Record
	store  txn.MapStore
}

func genLedger(t *rapid.T) ledgerBatch {
	n := rapid.IntRange(2, 10).Draw(t, "accounts")
	events := rapid.IntRange(0, 40).Draw(t, "events")
	if rapid.IntRange(0, 7).Draw(t, "large") == 0 {
		events = rapid.IntRange(100, 250).Draw(t, "largeEvents")
	}
	ndPct := rapid.SampledFrom([]int{0, 10, 30}).Draw(t, "ndPct")
	skewed := rapid.Bool().Draw(t, "skewed")
	acct := func(label string) uint32 {
		i := rapid.IntRange(0, n-1).Draw(t, label)
		if skewed {
			i = min(i, rapid.IntRange(0, n-1).Draw(t, label+"2"))
		}
		return uint32(i)
	}
	b := ledgerBatch{store: txn.MapStore{}}
	vals := make([][]byte, events)
	for i := range vals {
		switch r := rapid.IntRange(0, 99).Draw(t, "kind"); {
		case r < ndPct:
			vals[i] = redirect(acct("ptr"), uint32(rapid.IntRange(0, 120).Draw(t, "amount")), uint32(n+2))
		case r < ndPct+8:
			vals[i] = closing(acct("acct"))
		case r < ndPct+38:
			vals[i] = deposit(acct("acct"), acct("book"), uint32(rapid.IntRange(0, 60).Draw(t, "amount")))
		default:
			vals[i] = transfer(acct("src"), acct("srcBook"), acct("dst"), acct("dstBook"), uint32(rapid.IntRange(1, 150).Draw(t, "amount")))
		}
	}
	b.events = records(vals...)
	for _, table := range []uint32{accounts, books} {
		for i := range n + 2 {
			if rapid.IntRange(0, 3).Draw(t, "present") > 0 {
				b.store[key(table, uint32(i))] = enc(int64(rapid.IntRange(0, 200).Draw(t, "balance")))
			}
		}
	}
	return b
}

// TestWasmMatchesSerialAndNative is the metamorphic test of the Wasm
// operator: for every strategy and 1 to 3 workers, on random batches of
// deposits, conditional transfers, closings and non-deterministic
// redirects, its change set, outcomes (as the guest describes them in its
// outputs) and rejects equal those of the native logic under the serial
// executor; so do the native logic's under the same strategy. The serial
// run must follow the transfer's rule (checkTransfers); source accounts and
// book entries are drawn independently and amounts exceed balances, so the
// book entry's condition alone decides some transfers.
func TestWasmMatchesSerialAndNative(t *testing.T) {
	ctx := context.Background()
	p := loadLedger(t, 0)
	var wasmOps, nativeOps [maxWorkers]*txnop.Operator
	for w := range maxWorkers {
		wasmOps[w] = newWasmOperator(t, p, w+1)
		nativeOps[w] = newOperator(t, &nativeLedger{}, w+1)
	}
	serial := strategy(t, "serial")
	var seen struct{ aborted, bookAlone, nonDetGets, rejects, deletes, events int }
	rapid.Check(t, func(rt *rapid.T) {
		b := genLedger(rt)
		want, err := process(ctx, nativeOps[0], serial, b.events, b.store)
		if err != nil {
			rt.Fatalf("native serial: %v", err)
		}
		seen.bookAlone += checkTransfers(rt, b.events, want)
		seen.events += len(b.events)
		seen.rejects += len(want.rejects)
		seen.deletes += want.deletes
		for i, c := range want.committed {
			if !c {
				seen.aborted++
			}
			if b.events[i].Value[0] == 'N' && c {
				seen.nonDetGets++
			}
		}
		for _, name := range txn.StrategyNames() {
			st := strategy(t, name)
			for w := range maxWorkers {
				for _, lo := range []struct {
					logic string
					op    *txnop.Operator
				}{{"wasm", wasmOps[w]}, {"native", nativeOps[w]}} {
					got, err := process(ctx, lo.op, st, b.events, b.store)
					if err != nil {
						rt.Fatalf("%s logic, %s, %d workers: %v", lo.logic, name, w+1, err)
					}
					if d := diff(want, got); d != "" {
						rt.Fatalf("%s logic, %s, %d workers: %s", lo.logic, name, w+1, d)
					}
				}
			}
		}
	})
	// The generator must reach the cases that matter.
	if seen.aborted == 0 || seen.bookAlone == 0 || seen.nonDetGets == 0 || seen.rejects == 0 || seen.deletes == 0 {
		t.Errorf("generator missed a case: %+v", seen)
	}
	t.Logf("%+v", seen)
}

// checkTransfers checks a serial run's transfers against the rule: one
// commits exactly when the source account (its first operation's read) and
// the source book entry (that operation's own key) both hold its amount;
// and that no balance the run writes is negative. It returns the number of
// transfers aborted by the book entry's condition alone.
func checkTransfers(rt *rapid.T, events []abi.Record, o outcome) (bookAlone int) {
	for _, r := range o.records {
		var origin, time int
		var key, kind, result, own, read string
		if _, err := fmt.Sscanf(r, "%d %s %d: %s %s op0:own=%s r=%s", &origin, &key, &time, &kind, &result, &own, &read); err != nil || kind != "T" {
			continue
		}
		amount := int64(field(events[origin].Value, 4))
		book, account := shown(rt, own), shown(rt, read)
		if (result == "committed") != (account >= amount && book >= amount) {
			rt.Fatalf("transfer of %d from an account holding %d and a book entry holding %d: %q", amount, account, book, r)
		}
		if result == "aborted" && account >= amount {
			bookAlone++
		}
	}
	for _, c := range o.changes {
		if i := strings.LastIndexByte(c, '='); i >= 0 && strings.HasPrefix(c[i+1:], "-") {
			rt.Fatalf("change %s: a negative balance", c)
		}
	}
	return bookAlone
}

// shown parses a balance as describe shows it ("none" for a missing key,
// which holds 0).
func shown(rt *rapid.T, s string) int64 {
	if s == "none" {
		return 0
	}
	v, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		rt.Fatalf("balance %q: %v", s, err)
	}
	return v
}

// TestWasmFailures checks that each way a guest can fail fails the batch
// with an error that names what went wrong and where, under a parallel
// strategy and the serial one, and that the operator processes the next
// batch normally (a trapped instance is replaced).
func TestWasmFailures(t *testing.T) {
	ctx := context.Background()
	p := loadLedger(t, 0)
	op := newWasmOperator(t, p, 2)
	store := txn.MapStore{key(accounts, 1): enc(50)}
	good := records(deposit(1, 1, 5), transfer(1, 1, 2, 2, 10), redirect(1, 3, 4), closing(2))
	for _, tc := range []struct {
		name   string
		events [][]byte
		is     error
		want   []string // substrings of the error
	}{
		{"undeclared get", [][]byte{deposit(1, 1, 5), event('S', 1, 0), deposit(2, 2, 5)}, txn.ErrUndeclared,
			[]string{`export "sluice_apply": event 1 operation 0`, "txn_get refused", `"stray"`}},
		{"undeclared put", [][]byte{deposit(1, 1, 5), event('S', 1, 1)}, txn.ErrUndeclared,
			[]string{`export "sluice_apply": event 1 operation 0`, "txn_put refused", `"stray"`}},
		{"trap in apply", [][]byte{deposit(1, 1, 5), deposit(2, 2, 5), event('X', 1)}, runtime.ErrTrap,
			[]string{`plugin "ledger.wasm" export "sluice_apply": event 2 operation 0: trap`}},
		{"value outside memory", [][]byte{event('W', 3)}, plugin.ErrApplyResult,
			[]string{`event 0 operation 0`, "ApplyWrite value at pointer 0xffff0000 length 8 is outside memory"}},
		{"error status", [][]byte{deposit(1, 1, 5), event('E', 3)}, nil,
			[]string{`export "sluice_apply": event 1 operation 0: returned status -2 (error): status requested by event 1`}},
		{"malformed declaration", [][]byte{deposit(1, 1, 5), event('M')}, abi.ErrMalformedTxn,
			[]string{`export "sluice_plan"`, "host function txn_plan: malformed operation declarations", "truncated event"}},
		{"txn_get in plan", [][]byte{event('G')}, runtime.ErrHost,
			[]string{`export "sluice_plan"`, "host function txn_get: called during sluice_plan"}},
		{"event out of range", [][]byte{event('O', 1), deposit(1, 1, 5)}, nil,
			[]string{"is for event 1048576, but the batch has 2 events"}},
		{"event indices decrease", [][]byte{deposit(1, 1, 5), event('Q', 1)}, nil,
			[]string{"is for event 0, after declarations for event 1: event indices must not decrease"}},
		{"trap in post", [][]byte{deposit(1, 1, 5), event('P')}, runtime.ErrTrap,
			[]string{`export "sluice_post": trap`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, name := range []string{"ns-op-eager", "serial"} {
				_, err := process(ctx, op, strategy(t, name), records(tc.events...), store)
				if err == nil {
					t.Fatalf("%s: the batch succeeded", name)
				}
				if tc.is != nil && !errors.Is(err, tc.is) {
					t.Errorf("%s: error %v, want one wrapping %v", name, err, tc.is)
				}
				var te *plugin.TxnError
				if !errors.As(err, &te) {
					t.Errorf("%s: error %v is not a *plugin.TxnError", name, err)
				}
				for _, w := range tc.want {
					if !strings.Contains(err.Error(), w) {
						t.Errorf("%s: error %q lacks %q", name, err, w)
					}
				}
				if _, err := process(ctx, op, strategy(t, name), good, store); err != nil {
					t.Fatalf("%s: the next batch: %v", name, err)
				}
			}
		})
	}
}

// TestWasmApplyDeadline: an apply that runs past the engine's call timeout
// fails the batch with a timeout naming the event, and the next batch runs
// on a fresh instance.
func TestWasmApplyDeadline(t *testing.T) {
	ctx := context.Background()
	op := newWasmOperator(t, loadLedger(t, 300*time.Millisecond), 1)
	store := txn.MapStore{}
	_, err := process(ctx, op, strategy(t, "ns-op-lazy"), records(deposit(1, 1, 5), event('L', 2)), store)
	if !errors.Is(err, runtime.ErrTimeout) || !strings.Contains(err.Error(), `export "sluice_apply": event 1 operation 0: timeout`) {
		t.Fatalf("error %v, want a timeout of event 1's apply", err)
	}
	if _, err := process(ctx, op, strategy(t, "ns-op-lazy"), records(deposit(1, 1, 5)), store); err != nil {
		t.Fatalf("the next batch: %v", err)
	}
}

// TestNewWasmNeedsWorkers: a logic without instances is refused.
func TestNewWasmNeedsWorkers(t *testing.T) {
	p := loadLedger(t, 0)
	if _, err := txnop.NewWasm(context.Background(), p, 0, nil); err == nil {
		t.Error("NewWasm with 0 workers succeeded")
	}
}

// TestEmptyBatch: a batch of no events plans, runs and posts nothing.
func TestEmptyBatch(t *testing.T) {
	op := newWasmOperator(t, loadLedger(t, 0), 1)
	got, err := process(context.Background(), op, strategy(t, "ns-op-lazy"), nil, txn.MapStore{})
	if err != nil || len(got.records) != 0 || len(got.changes) != 0 {
		t.Errorf("empty batch: %+v, %v", got, err)
	}
}

// fixedAccess is the Access of one deterministic operation whose own key
// and one declared read hold fixed values.
type fixedAccess struct{ own, read []byte }

func (a *fixedAccess) Worker() int                       { return 0 }
func (a *fixedAccess) Own() ([]byte, bool)               { return a.own, true }
func (a *fixedAccess) Read(int) ([]byte, bool)           { return a.read, true }
func (a *fixedAccess) Get(txn.Key) ([]byte, bool, error) { return nil, false, txn.ErrUndeclared }
func (a *fixedAccess) Put(txn.Key, []byte) error         { return txn.ErrUndeclared }
func (a *fixedAccess) Delete(txn.Key) error              { return txn.ErrUndeclared }

// applyFixture is one instance of the test guest and the request of a
// funded credit: it reads one value and writes 8 bytes.
func applyFixture(tb testing.TB, timeout time.Duration) (*plugin.Instance, *abi.ApplyRequest, *fixedAccess) {
	tb.Helper()
	ctx := context.Background()
	p := loadLedger(tb, timeout)
	inst, err := p.NewInstance(ctx, nil)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = inst.Close(ctx) })
	q := &abi.ApplyRequest{
		Fn: fnCreditIfFunded, Event: 7, Table: accounts, Key: []byte("00000001"),
		Own:   abi.Value{Found: true, Bytes: enc(100)},
		Reads: []abi.ReadValue{{TableKey: abi.TableKey{Table: accounts, Key: []byte("00000002")}, Value: abi.Value{Found: true, Bytes: enc(500)}}},
		Arg:   event('x', 25)[1:],
	}
	return inst, q, &fixedAccess{own: enc(100), read: enc(500)}
}

// TestWasmApplyEnvironment: an apply reads its own event's time from the
// guest's clock and draws from its event's random stream, whichever worker
// runs it, so every strategy and worker count gives the same state (the
// guest writes what time.Now and a crypto/rand-seeded generator give).
func TestWasmApplyEnvironment(t *testing.T) {
	ctx := context.Background()
	p := loadGuest(t, "stamp", env.stamp, 0)
	events := make([]abi.Record, 40)
	for i := range events {
		events[i] = abi.Record{Key: fmt.Appendf(nil, "k%02d", i), Value: []byte("v"), Time: int64(1_700_000_000_000_000_000 + i*1_000_003)}
	}
	var first map[string]string
	for _, run := range []struct {
		strategy string
		workers  int
	}{{"serial", 1}, {"ns-op-eager", 2}, {"bfs-chain-lazy", 3}} {
		op := newWasmOperator(t, p, run.workers)
		if err := op.SetStrategy(strategy(t, run.strategy)); err != nil {
			t.Fatal(err)
		}
		var out plugin.Output
		res, err := op.Process(ctx, events, txn.MapStore{}, &out)
		if err != nil {
			t.Fatal(err)
		}
		state := map[string]string{}
		for _, c := range res.Changes {
			state[c.Key.Key] = string(c.Value)
		}
		for i, e := range events {
			v := state[string(e.Key)]
			var at int64
			var rnd uint64
			if _, err := fmt.Sscanf(v, "%d %d", &at, &rnd); err != nil || at != e.Time {
				t.Fatalf("%s, %d workers: event %d wrote %q, want its time %d first", run.strategy, run.workers, i, v, e.Time)
			}
		}
		if first == nil {
			first = state
		} else if !maps.Equal(state, first) {
			t.Errorf("%s with %d workers: state differs from serial's", run.strategy, run.workers)
		}
	}
}
