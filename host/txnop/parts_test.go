package txnop_test

import (
	"context"
	"testing"

	"github.com/sluicehq/sluice/host/txnop"
	"github.com/sluicehq/sluice/txn"
	"pgregory.net/rapid"
)

// TestPartsMatchOneCall: a PartLogic planned and posted in parts, one per
// worker, from parts of one event up, gives what one Plan and one Post
// give: outcomes, change set, outputs (in event order, with batch
// origins) and rejects (with batch indices), for every strategy.
func TestPartsMatchOneCall(t *testing.T) {
	ctx := context.Background()
	serial := newOperator(t, &nativeLedger{}, 1)
	var parted [maxWorkers]*txnop.Operator
	for w := range maxWorkers {
		l := newPartLedger(w + 1)
		op, err := txnop.New(txnop.Config{Name: "ledger", Tables: []string{"accounts", "books"}, Workers: w + 1, Logic: l, MinPart: 1})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { op.Close(ctx) })
		parted[w] = op
	}
	names := txn.StrategyNames()
	rapid.Check(t, func(rt *rapid.T) {
		b := genLedger(rt)
		want, err := process(ctx, serial, strategy(t, "serial"), b.events, b.store)
		if err != nil {
			rt.Fatal(err)
		}
		name := rapid.SampledFrom(names).Draw(rt, "strategy")
		w := rapid.IntRange(0, maxWorkers-1).Draw(rt, "workers")
		got, err := process(ctx, parted[w], strategy(t, name), b.events, b.store)
		if err != nil {
			rt.Fatalf("%s, %d workers in parts: %v", name, w+1, err)
		}
		if d := diff(want, got); d != "" {
			rt.Fatalf("%s, %d workers in parts: %s", name, w+1, d)
		}
	})
}
