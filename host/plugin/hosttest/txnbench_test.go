package hosttest_test

import (
	"context"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"github.com/sluicehq/sluice/abi"
	"github.com/sluicehq/sluice/host/plugin"
	"github.com/sluicehq/sluice/host/plugin/hosttest"
	"github.com/sluicehq/sluice/host/plugin/hosttest/internal/ledgerop"
	"github.com/sluicehq/sluice/host/txnop"
	"github.com/sluicehq/sluice/sdk/go/wasmbuild"
	"github.com/sluicehq/sluice/txn"
)

// fakeAccess is a txn.Access that serves an operation's own value and one
// declared read, for measuring Apply alone.
type fakeAccess struct{ own, read []byte }

func (fakeAccess) Worker() int                       { return 0 }
func (a fakeAccess) Own() ([]byte, bool)             { return a.own, true }
func (a fakeAccess) Read(int) ([]byte, bool)         { return a.read, true }
func (fakeAccess) Get(txn.Key) ([]byte, bool, error) { return nil, false, nil }
func (fakeAccess) Put(txn.Key, []byte) error         { return nil }
func (fakeAccess) Delete(txn.Key) error              { return nil }

// TestTxnLogicApplyAllocations: the native adapter allocates, per call,
// only the copy of the value written.
func TestTxnLogicApplyAllocations(t *testing.T) {
	le := binary.LittleEndian
	a := &fakeAccess{own: le.AppendUint64(nil, 100), read: le.AppendUint64(nil, 50)}
	op := &txn.Op{Write: txn.Key{Table: 0, Key: "a0001"}, Reads: []txn.Key{{Table: 0, Key: "a0002"}}, Fn: 1, Arg: le.AppendUint64(nil, 7)}
	l := hosttest.TxnLogic(ledgerop.Op(), ledgerop.Tables())
	ctx := context.Background()
	if n := testing.AllocsPerRun(100, func() {
		if e, err := l.Apply(ctx, 1, 1, op, a); err != nil || ledgerop.Decode(e.Value) != 107 {
			t.Fatalf("effect %+v, %v", e, err)
		}
	}); n != 1 {
		t.Errorf("%v allocations per Apply, want 1 (the value)", n)
	}
}

// BenchmarkTxnLogicApply measures one Apply of the native adapter
// (TxnLogic) against a txn.Apply written directly over txn.Access, on
// ledgerop's credit-if-funded function (own balance, one declared read, an
// amount): the difference is what the SDK's native path costs per call. The
// same function in WebAssembly is sluice's BenchmarkWasmApply.
func BenchmarkTxnLogicApply(b *testing.B) {
	le := binary.LittleEndian
	a := &fakeAccess{own: le.AppendUint64(nil, 100), read: le.AppendUint64(nil, 50)}
	op := &txn.Op{Write: txn.Key{Table: 0, Key: "a0001"}, Reads: []txn.Key{{Table: 0, Key: "a0002"}}, Fn: 1, Arg: le.AppendUint64(nil, 7)}
	ctx := context.Background()
	b.Run("sdk", func(b *testing.B) {
		l := hosttest.TxnLogic(ledgerop.Op(), ledgerop.Tables())
		b.ReportAllocs()
		for b.Loop() {
			if e, err := l.Apply(ctx, 1, 1, op, a); err != nil || ledgerop.Decode(e.Value) != 107 {
				b.Fatalf("effect %+v, %v", e, err)
			}
		}
	})
	b.Run("direct", func(b *testing.B) {
		apply := func(_, _ int, o *txn.Op, a txn.Access) (txn.Effect, error) {
			own, _ := a.Own()
			src, _ := a.Read(0)
			amt := int64(le.Uint64(o.Arg))
			if ledgerop.Decode(src) < amt {
				return txn.Effect{Abort: true}, nil
			}
			return txn.Effect{Value: ledgerop.Encode(ledgerop.Decode(own) + amt)}, nil
		}
		b.ReportAllocs()
		for b.Loop() {
			if e, err := apply(1, 1, op, a); err != nil || ledgerop.Decode(e.Value) != 107 {
				b.Fatalf("effect %+v, %v", e, err)
			}
		}
	})
}

// ledgerEvents draws n ledgerop events over keys accounts: a quarter
// deposits, the rest transfers, uniform keys, amounts that rarely overdraw.
func ledgerEvents(n, keys int, seed uint64) []abi.Record {
	r := rand.New(rand.NewPCG(seed, 1))
	evs := make([]abi.Record, n)
	for i := range evs {
		var e = ledgerop.Deposit(i, r.IntN(keys), r.IntN(keys), 1+r.Int64N(10))
		if r.IntN(4) != 0 {
			src, dst := r.IntN(keys), r.IntN(keys-1)
			if dst >= src {
				dst++
			}
			e = ledgerop.Transfer(i, src, r.IntN(keys), dst, r.IntN(keys), 1+r.Int64N(10))
		}
		evs[i] = abi.Record{Origin: uint32(i), Key: e.Key, Value: e.Value, Time: e.Time}
	}
	return evs
}

// BenchmarkTxnLedger runs batches of 10,240 ledgerop events (BenchOp: a
// quarter deposits, the rest transfers, over 115,200 uniform accounts, as
// MorphStream's Streaming Ledger but without skew) through a
// transactional operator, natively (TxnLogic) and in WebAssembly
// (LoadTxnWasm over testdata/txnbenchguest, the same source), with 1 and 2
// workers: the events/s figure of one against the other is the cost of the
// WebAssembly guest, all of it (plan, apply, post through the ABI).
func BenchmarkTxnLedger(b *testing.B) {
	const keys, batch = 115200, 10240
	events := ledgerEvents(batch, keys, 1)
	l := ledger{accounts: keys, initial: 1 << 40}
	store := l.store()
	tables := ledgerop.Tables()
	wasm := benchGuest(b)
	ctx := context.Background()
	for _, logic := range []string{"native", "wasm"} {
		for _, workers := range []int{1, 2} {
			for _, strategy := range []string{"serial", "ns-op-lazy", "ns-chain-lazy"} {
				if strategy == "serial" && workers > 1 {
					continue
				}
				b.Run(fmt.Sprintf("%s/%s/workers=%d", logic, strategy, workers), func(b *testing.B) {
					var lg txnop.Logic
					if logic == "native" {
						lg = hosttest.TxnLogic(ledgerop.BenchOp(), tables)
					} else {
						var err error
						if lg, err = hosttest.LoadTxnWasm(ctx, "txnbenchguest", wasm, workers); err != nil {
							b.Fatal(err)
						}
					}
					op, err := txnop.New(txnop.Config{Name: "ledger", Tables: tables, Strategy: mustStrategy(b, strategy), Workers: workers, Logic: lg})
					if err != nil {
						b.Fatal(err)
					}
					defer op.Close(ctx)
					var out plugin.Output
					for b.Loop() {
						out.Reset()
						if _, err := op.Process(ctx, events, store, &out); err != nil {
							b.Fatal(err)
						}
					}
					b.ReportMetric(float64(b.N*batch)/b.Elapsed().Seconds(), "events/s")
				})
			}
		}
	}
}

// benchGuest builds testdata/txnbenchguest.
func benchGuest(b *testing.B) []byte {
	dir := b.TempDir()
	out := filepath.Join(dir, "txnbenchguest.wasm")
	if err := wasmbuild.Go(context.Background(), filepath.Join("testdata", "txnbenchguest"), out); err != nil {
		b.Fatal(err)
	}
	wasm, err := os.ReadFile(out)
	if err != nil {
		b.Fatal(err)
	}
	return wasm
}
