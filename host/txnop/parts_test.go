package txnop_test

import (
	"context"
	"testing"

	"github.com/sluicehq/sluice/host/txnop"
	"github.com/sluicehq/sluice/txn"
	"pgregory.net/rapid"
)

// TestPartsMatchOneCall: a PartLogic (a native one, and the Wasm logic) planned and posted in parts, one per
// worker, from parts of one event up, gives what one Plan and one Post
// give: outcomes, change set, outputs (in event order, with batch
// origins) and rejects (with batch indices), for every strategy.
func TestPartsMatchOneCall(t *testing.T) {
	ctx := context.Background()
	serial := newOperator(t, &nativeLedger{}, 1)
	plug := loadLedger(t, 0)
	// For each worker count, a native PartLogic and the Wasm logic.
	var parted [maxWorkers][2]*txnop.Operator
	for w := range maxWorkers {
		wl, err := txnop.NewWasm(ctx, plug, w+1, nil)
		if err != nil {
			t.Fatal(err)
		}
		for i, l := range []txnop.Logic{newPartLedger(w + 1), wl} {
			op, err := txnop.New(txnop.Config{Name: "ledger", Tables: []string{"accounts", "books"}, Workers: w + 1, Logic: l, MinPart: 1})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { op.Close(ctx) })
			parted[w][i] = op
		}
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
		for i, logic := range []string{"native", "wasm"} {
			got, err := process(ctx, parted[w][i], strategy(t, name), b.events, b.store)
			if err != nil {
				rt.Fatalf("%s logic, %s, %d workers in parts: %v", logic, name, w+1, err)
			}
			if d := diff(want, got); d != "" {
				rt.Fatalf("%s logic, %s, %d workers in parts: %s", logic, name, w+1, d)
			}
		}
	})
}
