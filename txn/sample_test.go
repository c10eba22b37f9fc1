package txn_test

import (
	"context"
	"slices"
	"testing"

	"github.com/sluicehq/sluice/txn"
)

// TestSample: a batch sampled on request has every operation with its
// unit and the order units first ran in, and every dependency; batches
// not asked for are not sampled, and the limit truncates.
func TestSample(t *testing.T) {
	a, b, c := k(0, "a"), k(0, "b"), k(0, "c")
	// Temporal: a's writers; parametric: txn 1 reads a; logical: txn 2's
	// two operations; nondet: the barrier on table 0 before c.
	batch := []txn.Txn{tx(w(a)), tx(w(b, a)), tx(w(a), w(c)), tx(nd(0)), tx(w(c))}
	s, err := txn.New(txn.Config{Workers: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for _, name := range []string{"ns-op-eager", "bfs-chain-lazy", "dfs-op-lazy", "tstream"} {
		st, _ := txn.ParseStrategy(name)
		before := s.Sampled()
		if _, err := s.Run(context.Background(), st, batch, txn.MapStore{}, testApply(3)); err != nil {
			t.Fatal(err)
		}
		if s.Sampled() != before {
			t.Fatalf("%s: a batch was sampled without a request", name)
		}
		s.SampleNext(100)
		res, err := s.Run(context.Background(), st, batch, txn.MapStore{}, testApply(3))
		if err != nil {
			t.Fatal(err)
		}
		sm := s.Sampled()
		if sm == nil || sm == before {
			t.Fatalf("%s: no sample after SampleNext", name)
		}
		if sm.Strategy != st.String() || sm.Txns != 5 || sm.TotalOps != 6 || len(sm.Ops) != 6 || sm.Truncated || sm.Units != res.Stats.Units {
			t.Fatalf("%s: sample %+v", name, sm)
		}
		kinds := map[txn.EdgeKind]int{}
		for _, e := range sm.Edges {
			kinds[e.Kind]++
			if e.From >= e.To {
				t.Errorf("%s: edge %+v goes backwards", name, e)
			}
		}
		if kinds[txn.Temporal] == 0 || kinds[txn.Parametric] == 0 || kinds[txn.Logical] != 1 || kinds[txn.NonDeterministic] == 0 {
			t.Errorf("%s: edges by kind %v, want each kind, one logical", name, kinds)
		}
		var orders []int32
		for i, o := range sm.Ops {
			if o.Order < 0 || int(o.Order) >= sm.Units || o.Worker < 0 || o.Worker > 1 {
				t.Errorf("%s: op %d: %+v", name, i, o)
			}
			if !slices.Contains(orders, o.Order) {
				orders = append(orders, o.Order)
			}
		}
		if len(orders) != sm.Units {
			t.Errorf("%s: %d units ran in %d places of the order, want each once", name, sm.Units, len(orders))
		}
		if sm.Ops[2].Txn != 2 || sm.Ops[2].Index != 0 || sm.Ops[3].Index != 1 || sm.Ops[2].Key != a || !sm.Ops[4].NonDet {
			t.Errorf("%s: ops %+v", name, sm.Ops)
		}
	}
	s.SampleNext(3)
	st, _ := txn.ParseStrategy("dfs-op-eager")
	if _, err := s.Run(context.Background(), st, batch, txn.MapStore{}, testApply(3)); err != nil {
		t.Fatal(err)
	}
	sm := s.Sampled()
	if !sm.Truncated || len(sm.Ops) != 3 || sm.TotalOps != 6 {
		t.Fatalf("truncated to 3: %+v", sm)
	}
	for _, e := range sm.Edges {
		if e.To >= 3 {
			t.Errorf("truncated to 3: edge %+v", e)
		}
	}
}
