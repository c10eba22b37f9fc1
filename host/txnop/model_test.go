package txnop_test

import (
	"testing"

	"github.com/sluicehq/sluice/host/txnop"
	"github.com/sluicehq/sluice/txn"
	"github.com/sluicehq/sluice/txn/adapt"
)

// TestTakeModel checks when an operator takes over another's decision
// model: both adaptive and configured alike; not from a static operator,
// nor across configurations.
func TestTakeModel(t *testing.T) {
	adaptive := txn.Strategy{Kind: txn.Adaptive}
	static, _ := txn.ParseStrategy("ns-op-eager")
	other := adapt.DefaultConfig()
	other.Margin = 0.3
	newOp := func(st txn.Strategy, cfg adapt.Config) *txnop.Operator {
		t.Helper()
		op, err := txnop.New(txnop.Config{Name: "o", Tables: []string{"accounts", "books"}, Strategy: st, Adaptive: cfg, Workers: 1, Logic: &nativeLedger{}})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { op.Close(t.Context()) })
		return op
	}
	a, b := newOp(adaptive, adapt.Config{}), newOp(adaptive, adapt.DefaultConfig())
	if !b.TakeModel(a) || b.Model() != a.Model() {
		t.Error("two adaptive operators configured alike (defaults given or not): the model is not taken over")
	}
	if c := newOp(adaptive, other); c.TakeModel(a) || c.Model() == a.Model() {
		t.Error("another margin: the model is taken over")
	}
	if s := newOp(static, adapt.Config{}); s.TakeModel(a) || s.Model() != nil {
		t.Error("a static operator took a model")
	}
	if d := newOp(adaptive, adapt.Config{}); d.TakeModel(newOp(static, adapt.Config{})) || d.Model() == nil {
		t.Error("an adaptive operator lost its model to a static one")
	}
}
