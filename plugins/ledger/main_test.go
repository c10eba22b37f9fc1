package main

import (
	"context"
	"os"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/abi"
	"github.com/sluicehq/sluice/host/plugin"
	"github.com/sluicehq/sluice/host/plugin/hosttest"
	"github.com/sluicehq/sluice/host/txnop"
	"github.com/sluicehq/sluice/plugins/internal/plugintest"
	"github.com/sluicehq/sluice/plugins/ledger/ledgerop"
	"github.com/sluicehq/sluice/txn"
	"github.com/sluicehq/sluice/txn/apps/ledger/event"
	"github.com/sluicehq/sluice/txn/apps/workload"
)

func TestMain(m *testing.M) { os.Exit(plugintest.TxnMain(m)) }

// native returns a maker of native Logics of the operator over tables.
func native(tables []string) func() txnop.Logic {
	return func() txnop.Logic { return hosttest.TxnLogic(ledgerop.New(), tables) }
}

// ledgerWorkload draws a small, contended Streaming Ledger workload.
func ledgerWorkload(t testing.TB, abortRatio float64, events, batch int) plugintest.TxnWorkload {
	k, err := workload.Defaults(workload.StreamingLedger)
	if err != nil {
		t.Fatal(err)
	}
	k.Keys, k.Skew, k.AbortRatio, k.DepositRatio, k.BusyNanos, k.Seed = 16, 0.8, abortRatio, 0.3, 50, 3
	return plugintest.NewTxnWorkload(t, workload.StreamingLedger, k, events, batch)
}

// TestLedgerStrategies runs Streaming Ledger with every strategy, natively
// and in WebAssembly, and requires the serial run's commits, change sets,
// outputs and final state from each; then checks the serial run's
// outputs against the rules (a transfer commits exactly when its source
// account and its source book entry both cover it), money conservation and
// that no balance is negative. Transfers abort two ways: drawn to abort
// (the workload's abort amount), and on low balances, where whether a
// transfer commits depends on the events before it; accounts and book
// entries are drawn independently, so on low balances the book entry's
// condition alone decides some transfers.
func TestLedgerStrategies(t *testing.T) {
	for _, c := range []struct {
		name       string
		abortRatio float64
		initial    int64
	}{
		{"drawn aborts", 0.2, event.InitialBalance},
		{"low balances", 0, 250},
	} {
		t.Run(c.name, func(t *testing.T) {
			w := ledgerWorkload(t, c.abortRatio, 400, 100)
			for k := range w.Initial {
				w.Initial[k] = event.AppendBalance(nil, c.initial)
			}
			tr := plugintest.CheckStrategies(t, w, native(w.Tables))
			bookAlone := checkLedger(t, &w, &tr, c.initial)
			if c.initial < event.TransferAmount*4 && bookAlone == 0 {
				t.Error("no transfer was decided by its book entry alone: the workload tests too little")
			}
		})
	}
}

// TestLedgerBookEntryCondition runs the smallest case of the book entry's
// condition natively and in WebAssembly, with every strategy: every
// balance starts at 100; the first transfer empties book entry 2; the
// second, of 1 from account 4 (which holds 100) and book entry 2 (which
// holds nothing), aborts, and book entry 2 stays at 0.
func TestLedgerBookEntryCondition(t *testing.T) {
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
	tr := plugintest.CheckStrategies(t, w, native(w.Tables))
	want := []string{"0 k transfer committed 100 100 100 100", "1 k transfer aborted 100 0 - -"}
	if !reflect.DeepEqual(tr.Outputs[0], want) {
		t.Errorf("outputs %q, want %q", tr.Outputs[0], want)
	}
	if b, err := event.DecodeBalance(tr.Final[txn.Key{Table: event.BookEntries, Key: string(event.AppendKey(nil, 2))}]); err != nil || b != 0 {
		t.Errorf("book entry 2 holds %d (%v), want 0", b, err)
	}
}

// checkLedger checks a run's outputs against its events and final state:
// one output per event, telling its outcome as the run's commits do; a
// transfer committed exactly when the source account and source book entry
// it read both covered its amount; each table's sum is the initial sum plus
// the committed deposits; no balance is negative. It returns the number of
// transfers that the book entry's condition alone aborted.
func checkLedger(t *testing.T, w *plugintest.TxnWorkload, tr *plugintest.TxnTrace, initial int64) (bookAlone int) {
	t.Helper()
	deposits, transfers, aborted := 0, 0, 0
	for b, batch := range w.Batches {
		if len(tr.Outputs[b]) != len(batch) {
			t.Fatalf("batch %d: %d outputs for %d events", b, len(tr.Outputs[b]), len(batch))
		}
		for i, line := range tr.Outputs[b] {
			r := parseOutput(t, line, i)
			e, err := event.DecodeEvent(batch[i].Value)
			if err != nil {
				t.Fatal(err)
			}
			if r.Committed != tr.Committed[b][i] || r.Deposit != e.Deposit {
				t.Fatalf("batch %d event %d: output %q for a %+v that committed: %v", b, i, line, e, tr.Committed[b][i])
			}
			switch {
			case e.Deposit:
				if !r.Committed {
					t.Errorf("batch %d event %d: deposit aborted: %q", b, i, line)
				}
				deposits++
			case !r.Balances[0].Read || !r.Balances[1].Read:
				t.Errorf("batch %d event %d: transfer without its source balances: %q", b, i, line)
			case r.Committed != (r.Balances[0].Value >= e.Amount && r.Balances[1].Value >= e.Amount):
				t.Errorf("batch %d event %d: transfer of %d from balances of %d and %d: %q", b, i, e.Amount, r.Balances[0].Value, r.Balances[1].Value, line)
			case r.Committed:
				transfers++
			default:
				aborted++
				if r.Balances[0].Value >= e.Amount {
					bookAlone++
				}
			}
		}
	}
	if transfers == 0 || aborted == 0 {
		t.Errorf("%d transfers committed and %d aborted: the workload tests too little", transfers, aborted)
	}
	keys := len(w.Initial) / 2
	want := int64(keys)*initial + int64(deposits)*event.DepositAmount
	for table := range w.Tables {
		sum := int64(0)
		for k, v := range tr.Final {
			if k.Table != uint32(table) {
				continue
			}
			b, err := event.DecodeBalance(v)
			if err != nil {
				t.Fatal(err)
			}
			if b < 0 {
				t.Errorf("%s %q holds %d", w.Tables[table], k.Key, b)
			}
			sum += b
		}
		if sum != want {
			t.Errorf("%s sum to %d, want %d (initial %d plus %d committed deposits)", w.Tables[table], sum, want, int64(keys)*initial, deposits)
		}
	}
	return bookAlone
}

// parseOutput parses a trace's output line "origin key value" of event i.
func parseOutput(t *testing.T, line string, i int) ledgerop.Result {
	t.Helper()
	f := strings.SplitN(line, " ", 3)
	if len(f) != 3 || f[0] != strconv.Itoa(i) {
		t.Fatalf("output %q, want one of event %d", line, i)
	}
	r, err := ledgerop.ParseResult([]byte(f[2]))
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// TestLedgerMalformed: an event that does not decode is dead-lettered with
// the decoder's reason, leaves state alone and does not disturb the others,
// with every strategy, natively and in WebAssembly.
func TestLedgerMalformed(t *testing.T) {
	w := ledgerWorkload(t, 0.2, 40, 20)
	plugintest.CheckMalformed(t, w, native(w.Tables), 5, []byte{event.Tag, 0x80}, "flags")
}

// TestLedgerTableMissing: a pipeline that declares accounts only fails the
// batch with an error naming the book entries' handle.
func TestLedgerTableMissing(t *testing.T) {
	w := ledgerWorkload(t, 0, 10, 10)
	for _, c := range []struct {
		name  string
		logic func() txnop.Logic
	}{
		{"native", native([]string{event.AccountsTable})},
		{"wasm", func() txnop.Logic { return plugintest.TxnWasm(t, 1) }},
	} {
		op, err := txnop.New(txnop.Config{Name: "ledger", Tables: []string{event.AccountsTable}, Strategy: txn.Strategy{Kind: txn.Serial}, Workers: 1, Logic: c.logic()})
		if err != nil {
			t.Fatal(err)
		}
		var out plugin.Output
		_, err = op.Process(context.Background(), w.Batches[0], txn.MapStore{}, &out)
		if want := "table handle " + strconv.Itoa(event.BookEntries); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: error %v, want one naming %q", c.name, err, want)
		}
		if err := op.Close(context.Background()); err != nil {
			t.Error(err)
		}
	}
}

// BenchmarkLedger runs MorphStream's Streaming Ledger workload (115,200
// keys, skew 0.25, 25% deposits) in batches of 10,240 events with 2
// workers, natively and in WebAssembly; ns/event is the figure to compare.
func BenchmarkLedger(b *testing.B) {
	k, err := workload.Defaults(workload.StreamingLedger)
	if err != nil {
		b.Fatal(err)
	}
	w := plugintest.NewTxnWorkload(b, workload.StreamingLedger, k, 4*10240, 10240)
	b.Run("native", func(b *testing.B) {
		plugintest.BenchTxn(b, w, plugintest.BenchStrategy, 2, native(w.Tables)())
	})
	b.Run("wasm", func(b *testing.B) {
		plugintest.BenchTxn(b, w, plugintest.BenchStrategy, 2, plugintest.TxnWasm(b, 2))
	})
}
