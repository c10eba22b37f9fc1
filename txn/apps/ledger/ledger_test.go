package ledger_test

import (
	"context"
	"testing"

	"go.uber.org/goleak"

	"github.com/sluicehq/sluice/txn"
	"github.com/sluicehq/sluice/txn/apps/ledger"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// TestMoneyConserved: for every strategy, the sum of balances after a batch
// equals the initial sum plus the committed deposits (transfers move money,
// aborted ones move none), no balance is negative, and the result equals
// the serial executor's. Accounts and book entries are drawn independently
// and amounts exceed balances, so the book entry's condition alone decides
// some transfers.
func TestMoneyConserved(t *testing.T) {
	w, err := ledger.New(ledger.Config{Keys: 40, DepositRatio: 0.25, Skew: 0.9, MaxAmount: 60, InitialBalance: 50, Seed: 7})
	if err != nil {
		t.Fatal(err)
	}
	events := w.Events(600)
	batch := w.Plan(events, nil)
	store := w.Store()
	apply := ledger.Apply(events)
	var initial [2]int64
	for k, v := range store {
		initial[k.Table] += ledger.Decode(v)
	}
	s, err := txn.New(txn.Config{Workers: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	oracle, _ := txn.ParseStrategy("serial")
	want, err := s.Run(context.Background(), oracle, batch, store, apply)
	if err != nil {
		t.Fatal(err)
	}
	if want.Stats.Aborted == 0 || want.Stats.Aborted == len(batch) {
		t.Fatalf("workload aborts %d of %d: want some", want.Stats.Aborted, len(batch))
	}
	for _, name := range txn.StrategyNames() {
		st, _ := txn.ParseStrategy(name)
		res, err := s.Run(context.Background(), st, batch, store, apply)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		final := map[txn.Key]int64{}
		for k, v := range store {
			final[k] = ledger.Decode(v)
		}
		for _, c := range res.Changes {
			final[c.Key] = ledger.Decode(c.Value)
		}
		var sum [2]int64
		for k, v := range final {
			if v < 0 {
				t.Errorf("%s: %v has negative balance %d", name, k, v)
			}
			sum[k.Table] += v
		}
		var deposits [2]int64
		for i, e := range events {
			if e.Deposit && res.Committed[i] {
				deposits[ledger.Accounts] += e.Amount
				deposits[ledger.BookEntries] += e.Amount
			}
		}
		for tb := range sum {
			if sum[tb] != initial[tb]+deposits[tb] {
				t.Errorf("%s: table %d sums to %d, want %d + %d deposited", name, tb, sum[tb], initial[tb], deposits[tb])
			}
		}
		for i := range res.Committed {
			if res.Committed[i] != want.Committed[i] {
				t.Fatalf("%s: txn %d committed %v, oracle %v", name, i, res.Committed[i], want.Committed[i])
			}
		}
		if len(res.Changes) != len(want.Changes) {
			t.Fatalf("%s: %d changes, oracle %d", name, len(res.Changes), len(want.Changes))
		}
	}
}

// TestBookEntryCondition: a transfer whose source account holds the amount
// but whose source book entry does not aborts, with every strategy. Every
// balance starts at 100; the first transfer empties book entry 2, so the
// second, from account 4 (which holds 100) and book entry 2, aborts and
// book entry 2 stays at 0.
func TestBookEntryCondition(t *testing.T) {
	w, err := ledger.New(ledger.Config{Keys: 6, MaxAmount: 100, InitialBalance: 100})
	if err != nil {
		t.Fatal(err)
	}
	events := []ledger.Event{
		{Account: 0, Book: 2, DstAccount: 1, DstBook: 3, Amount: 100},
		{Account: 4, Book: 2, DstAccount: 5, DstBook: 3, Amount: 1},
	}
	batch := w.Plan(events, nil)
	store := w.Store()
	s, err := txn.New(txn.Config{Workers: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	want := map[txn.Key]int64{
		w.Key(ledger.Accounts, 0): 0, w.Key(ledger.Accounts, 1): 200,
		w.Key(ledger.BookEntries, 2): 0, w.Key(ledger.BookEntries, 3): 200,
	}
	for _, name := range txn.StrategyNames() {
		st, _ := txn.ParseStrategy(name)
		res, err := s.Run(context.Background(), st, batch, store, ledger.Apply(events))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if !res.Committed[0] || res.Committed[1] {
			t.Errorf("%s: committed %v, want [true false]", name, res.Committed)
		}
		got := map[txn.Key]int64{}
		for _, c := range res.Changes {
			got[c.Key] = ledger.Decode(c.Value)
		}
		if len(got) != len(want) {
			t.Errorf("%s: changes %v, want %v", name, got, want)
		}
		for k, v := range want {
			if got[k] != v {
				t.Errorf("%s: %v = %d, want %d", name, k, got[k], v)
			}
		}
	}
}
