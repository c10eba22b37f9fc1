package txnop_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/sluicehq/sluice/abi"
	"github.com/sluicehq/sluice/host/plugin"
	"github.com/sluicehq/sluice/host/txnop"
	"github.com/sluicehq/sluice/txn"
	"github.com/sluicehq/sluice/txn/apps/ledger"
)

func checkCredit(tb testing.TB, eff txn.Effect, err error) {
	tb.Helper()
	if err != nil || eff.Abort || eff.Keep || eff.Delete || balance(eff.Value) != 125 {
		tb.Fatalf("apply = %+v (balance %d), %v; want a write of 125", eff, balance(eff.Value), err)
	}
}

// opOf returns q's operation as txn hands it to Apply.
func opOf(q *abi.ApplyRequest) *txn.Op {
	o := &txn.Op{Write: txn.Key{Table: q.Table, Key: string(q.Key)}, Fn: q.Fn, Arg: q.Arg}
	for _, r := range q.Reads {
		o.Reads = append(o.Reads, txn.Key{Table: r.Table, Key: string(r.Key)})
	}
	return o
}

// TestApplyAllocatesNothing asserts the apply path's promise: after warm-up,
// an apply call (ApplyOp) allocates nothing on the host, with or without a
// call deadline (the copies of
// written values come from a slab, a chunk per thousands of calls).
func TestApplyAllocatesNothing(t *testing.T) {
	if raceEnabled {
		t.Skip("allocation counts are not meaningful under the race detector")
	}
	for _, tc := range []struct {
		name    string
		timeout time.Duration
	}{{"no timeout", -1}, {"timeout", 0}} {
		t.Run(tc.name, func(t *testing.T) {
			inst, q, a := applyFixture(t, tc.timeout)
			o := opOf(q)
			ctx := context.Background()
			for range 10 {
				eff, err := inst.ApplyOp(ctx, 7, 0, o, a)
				checkCredit(t, eff, err)
			}
			if n := testing.AllocsPerRun(1000, func() { _, _ = inst.ApplyOp(ctx, 7, 0, o, a) }); n != 0 {
				t.Errorf("%v allocations per ApplyOp, want 0", n)
			}
		})
	}
}

// BenchmarkWasmApply measures one sluice_apply call through
// plugin.Instance.ApplyOp (what wasmLogic calls: the request encoded from
// the operation and its Access straight into guest memory), with and
// without the call deadline: a request with one read, a write of 8 bytes.
func BenchmarkWasmApply(b *testing.B) {
	for _, tc := range []struct {
		name    string
		timeout time.Duration
	}{{"deadline", 0}, {"nodeadline", -1}} {
		b.Run(tc.name, func(b *testing.B) {
			inst, q, a := applyFixture(b, tc.timeout)
			o := opOf(q)
			ctx := context.Background()
			b.ReportAllocs()
			for b.Loop() {
				if eff, err := inst.ApplyOp(ctx, 7, 0, o, a); err != nil {
					b.Fatal(eff, err)
				}
			}
		})
	}
}

// ledgerEvents draws a Streaming Ledger batch of MorphStream's evaluation
// (115,200 keys, 25% deposits, Zipf 0.25) as event records, with the
// store it starts from.
func ledgerEvents(b *testing.B, n int) ([]abi.Record, txn.Store) {
	w, err := ledger.New(ledger.Config{Keys: 115200, DepositRatio: 0.25, Skew: 0.25, MaxAmount: 100, InitialBalance: 1000, Seed: 1})
	if err != nil {
		b.Fatal(err)
	}
	evs := w.Events(n)
	vals := make([][]byte, len(evs))
	for i, e := range evs {
		if e.Deposit {
			vals[i] = deposit(uint32(e.Account), uint32(e.Book), uint32(e.Amount))
		} else {
			vals[i] = transfer(uint32(e.Account), uint32(e.Book), uint32(e.DstAccount), uint32(e.DstBook), uint32(e.Amount))
		}
	}
	return records(vals...), w.Store()
}

// BenchmarkProcessLedger runs a Streaming Ledger batch of 10,240 events
// end to end through Operator.Process (plan, schedule, post) with the Wasm
// guest and with the native logic, on 1 and 2 workers. Both emit one
// "committed" or "aborted" record per event.
func BenchmarkProcessLedger(b *testing.B) {
	events, store := ledgerEvents(b, 10240)
	ctx := context.Background()
	p := loadLedger(b, 0)
	for _, workers := range []int{1, 2} {
		for _, name := range []string{"ns-op-lazy", "ns-chain-lazy"} {
			st := strategy(b, name)
			for _, kind := range []string{"wasm", "native"} {
				b.Run(fmt.Sprintf("%s/%s/w%d", kind, name, workers), func(b *testing.B) {
					var logic txnop.Logic = &nativeLedger{brief: true}
					if kind == "wasm" {
						l, err := txnop.NewWasm(ctx, p, workers, []byte(`{"brief":true}`))
						if err != nil {
							b.Fatal(err)
						}
						logic = l
					}
					op := newOperator(b, logic, workers)
					op.SetStrategy(st)
					var out plugin.Output
					for b.Loop() {
						out.Reset()
						if _, err := op.Process(ctx, events, store, &out); err != nil {
							b.Fatal(err)
						}
					}
					if len(out.Records) != len(events) {
						b.Fatalf("%d outputs for %d events", len(out.Records), len(events))
					}
					b.ReportMetric(float64(len(events))*float64(b.N)/b.Elapsed().Seconds(), "events/s")
				})
			}
		}
	}
}

// BenchmarkPlanPostLedger times the operator's plan and post steps alone
// (the "op plan+post" of `sluice bench txn`) on one worker's instance, for
// a Streaming Ledger batch of 10,240 events: sluice_plan with its
// declarations turned into the batch's transactions, and the outcomes'
// encoding with sluice_post. The Wasm lane is the guest and the host side
// of the plan protocol together; the native lane is the same logic in Go,
// with no protocol, for the difference.
func BenchmarkPlanPostLedger(b *testing.B) {
	events, store := ledgerEvents(b, 10240)
	ctx := context.Background()
	p := loadLedger(b, 0)
	wasm, err := txnop.NewWasm(ctx, p, 1, []byte(`{"brief":true}`))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = wasm.Close(ctx) })
	// The batch's Result, from one serial run of the native logic.
	var plan txnop.Plan
	native := &nativeLedger{brief: true}
	if err := native.Plan(ctx, events, &plan); err != nil {
		b.Fatal(err)
	}
	s, err := txn.New(txn.Config{Workers: 1})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	res, err := s.Run(ctx, strategy(b, "serial"), plan.Txns, store, func(t, op int, o *txn.Op, a txn.Access) (txn.Effect, error) {
		return native.Apply(ctx, t, op, o, a)
	})
	if err != nil {
		b.Fatal(err)
	}
	for _, tc := range []struct {
		name  string
		logic txnop.Logic
	}{{"wasm", wasm}, {"native", native}} {
		b.Run(tc.name+"/plan", func(b *testing.B) {
			var p txnop.Plan
			b.ReportAllocs()
			for b.Loop() {
				p.Reset()
				if err := tc.logic.Plan(ctx, events, &p); err != nil {
					b.Fatal(err)
				}
			}
			if len(p.Txns) != len(events) {
				b.Fatalf("%d transactions for %d events", len(p.Txns), len(events))
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(events)), "ns/event")
		})
		b.Run(tc.name+"/post", func(b *testing.B) {
			var out plugin.Output
			b.ReportAllocs()
			for b.Loop() {
				out.Reset()
				if err := tc.logic.Post(ctx, events, &plan, res, &out); err != nil {
					b.Fatal(err)
				}
			}
			if len(out.Records) != len(events) {
				b.Fatalf("%d outputs for %d events", len(out.Records), len(events))
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(events)), "ns/event")
		})
	}
}
