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
// aborted ones move none), and the result equals the serial executor's.
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
			if v < 0 && k.Table == ledger.Accounts { // book entries follow the account's condition
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
