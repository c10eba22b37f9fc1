package txnop

import (
	"bytes"
	"context"
	"fmt"
	"testing"

	"pgregory.net/rapid"

	"github.com/sluicehq/sluice/abi"
	"github.com/sluicehq/sluice/txn"
)

// TestAppendOutcomeMatchesABI: appendOutcome encodes each transaction's
// outcome as abi.AppendEventOutcome does, on random batches with declared
// reads, aborts and non-deterministic gets.
func TestAppendOutcomeMatchesABI(t *testing.T) {
	s, err := txn.New(txn.Config{Workers: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	st, err := txn.ParseStrategy("serial")
	if err != nil {
		t.Fatal(err)
	}
	rapid.Check(t, func(rt *rapid.T) {
		keys := rapid.IntRange(1, 6).Draw(rt, "keys")
		key := func(label string) txn.Key {
			return txn.Key{Table: 0, Key: fmt.Sprint(rapid.IntRange(0, keys-1).Draw(rt, label))}
		}
		var txns []txn.Txn
		for range rapid.IntRange(1, 6).Draw(rt, "txns") {
			var tx txn.Txn
			for range rapid.IntRange(0, 4).Draw(rt, "ops") {
				op := txn.Op{Fn: uint32(rapid.IntRange(0, 2).Draw(rt, "fn")), Write: key("write")}
				if op.Fn == 2 {
					op.NonDet, op.Write = true, txn.Key{}
				}
				for range rapid.IntRange(0, 2).Draw(rt, "reads") {
					op.Reads = append(op.Reads, key("read"))
				}
				tx.Ops = append(tx.Ops, op)
			}
			txns = append(txns, tx)
		}
		store := txn.MapStore{{Table: 0, Key: "0"}: []byte("zero"), {Table: 0, Key: "1"}: nil}
		apply := func(_, _ int, o *txn.Op, a txn.Access) (txn.Effect, error) {
			switch o.Fn {
			case 0: // append a byte to the own value
				v, _ := a.Own()
				return txn.Effect{Value: append(bytes.Clone(v), 'x')}, nil
			case 1: // abort when the first read is missing
				if len(o.Reads) > 0 {
					if _, ok := a.Read(0); !ok {
						return txn.Effect{Abort: true}, nil
					}
				}
				return txn.Effect{Keep: true}, nil
			}
			// Non-deterministic: read two keys, write one.
			v, _, err := a.Get(txn.Key{Table: 0, Key: "0"})
			if err != nil {
				return txn.Effect{}, err
			}
			if _, _, err := a.Get(txn.Key{Table: 0, Key: "3"}); err != nil {
				return txn.Effect{}, err
			}
			return txn.Effect{}, a.Put(txn.Key{Table: 0, Key: "2"}, append(bytes.Clone(v), 'y'))
		}
		res, err := s.Run(context.Background(), st, txns, store, apply)
		if err != nil {
			rt.Fatal(err)
		}
		for ti := range txns {
			e := abi.EventOutcome{Committed: res.Committed[ti]}
			for m := range txns[ti].Ops {
				ob := res.Observed(ti, m)
				o := abi.OpOutcome{Executed: ob.Executed, Own: abi.Value{Found: ob.Own.Found, Bytes: ob.Own.Bytes}}
				for _, v := range ob.Reads {
					o.Reads = append(o.Reads, abi.Value{Found: v.Found, Bytes: v.Bytes})
				}
				for _, g := range ob.Gets {
					o.Gets = append(o.Gets, abi.KeyValue{TableKey: abi.TableKey{Table: g.Key.Table, Key: []byte(g.Key.Key)}, Value: abi.Value{Found: g.Value.Found, Bytes: g.Value.Bytes}})
				}
				e.Ops = append(e.Ops, o)
			}
			prefix := []byte("prefix")
			want := abi.AppendEventOutcome(bytes.Clone(prefix), &e)
			if got := appendOutcome(bytes.Clone(prefix), ti, len(txns[ti].Ops), res); !bytes.Equal(got, want) {
				rt.Fatalf("transaction %d: appendOutcome wrote %x, abi.AppendEventOutcome %x", ti, got, want)
			}
		}
	})
}

// BenchmarkAppendOutcome encodes the outcomes of a Streaming Ledger batch
// (1,024 events, a quarter deposits of two operations, the rest transfers
// of four, three of which read the source account) with appendOutcome,
// sluice_post's encoding.
func BenchmarkAppendOutcome(b *testing.B) {
	s, err := txn.New(txn.Config{Workers: 1})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	st, err := txn.ParseStrategy("serial")
	if err != nil {
		b.Fatal(err)
	}
	const n = 1024
	store := txn.MapStore{}
	key := func(i int) txn.Key { return txn.Key{Key: fmt.Sprintf("%08d", i%100)} }
	txns := make([]txn.Txn, n)
	for i := range txns {
		if i%4 == 0 {
			txns[i].Ops = []txn.Op{{Write: key(i)}, {Write: key(i + 1)}}
			continue
		}
		src := []txn.Key{key(i)}
		txns[i].Ops = []txn.Op{{Write: key(i + 2), Reads: src}, {Write: key(i + 3), Reads: src}, {Write: key(i + 4), Reads: src}, {Write: key(i)}}
	}
	for i := range 100 {
		store[key(i)] = []byte("12345678")
	}
	res, err := s.Run(context.Background(), st, txns, store, func(_, _ int, _ *txn.Op, a txn.Access) (txn.Effect, error) {
		v, _ := a.Own()
		return txn.Effect{Value: v}, nil
	})
	if err != nil {
		b.Fatal(err)
	}
	var buf []byte
	for b.Loop() {
		buf = abi.AppendOutcomesHeader(buf[:0], n)
		for t := range txns {
			buf = appendOutcome(buf, t, len(txns[t].Ops), res)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/event")
}

// ledgerDecls returns the declarations a Streaming Ledger guest makes for
// n events (a quarter deposits of two operations, the rest transfers of
// four, three of which read the source account), as txn_plan hands them
// to the Plan call's decl: keys of 8 digits, the amount as the argument.
func ledgerDecls(n int) []abi.OpDecl {
	key := func(i int) []byte { return fmt.Appendf(nil, "%08d", i%115200) }
	var ds []abi.OpDecl
	for e := range n {
		ev, arg := uint32(e), []byte{byte(e), 0, 0, 0}
		if e%4 == 0 {
			ds = append(ds, abi.OpDecl{Event: ev, Key: key(7 * e), Arg: arg}, abi.OpDecl{Event: ev, Table: 1, Key: key(11 * e), Arg: arg})
			continue
		}
		src := []abi.TableKey{{Key: key(3 * e)}}
		ds = append(ds,
			abi.OpDecl{Event: ev, Fn: 2, Table: 1, Key: key(5 * e), Reads: src, Arg: arg},
			abi.OpDecl{Event: ev, Fn: 1, Key: key(13 * e), Reads: src, Arg: arg},
			abi.OpDecl{Event: ev, Fn: 1, Table: 1, Key: key(17 * e), Reads: src, Arg: arg},
			abi.OpDecl{Event: ev, Fn: 2, Key: key(3 * e), Arg: arg})
	}
	return ds
}

// BenchmarkDeclare times the host side of a plan alone: the declarations
// of a Streaming Ledger batch of 10,240 events, decoded already, turned
// into the batch's transactions by a worker's declare, as txn_plan calls
// it, into a Plan reset for each batch as the operator resets it. The
// allocations are the batch's, not the declarations'.
func BenchmarkDeclare(b *testing.B) {
	const n = 10240
	ds := ledgerDecls(n)
	wk := &wasmWorker{}
	wk.decl = wk.declare
	var p Plan
	b.ReportAllocs()
	for b.Loop() {
		p.Reset()
		wk.plan, wk.nEv, wk.nDecl = &p, n, 0
		for i := range ds {
			if err := wk.decl(&ds[i]); err != nil {
				b.Fatal(err)
			}
		}
		wk.closeEvent()
	}
	if len(p.Txns) != n {
		b.Fatalf("%d transactions for %d events", len(p.Txns), n)
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/event")
}
