package txn_test

import (
	"context"
	"errors"
	"testing"

	"github.com/sluicehq/sluice/txn"
)

func k(t uint32, s string) txn.Key { return txn.Key{Table: t, Key: s} }

func w(key txn.Key, reads ...txn.Key) txn.Op { return txn.Op{Write: key, Reads: reads} }

func nd(table uint32) txn.Op { return txn.Op{NonDet: true, Table: table} }

func tx(ops ...txn.Op) txn.Txn { return txn.Txn{Ops: ops} }

func TestAnalyzeCounts(t *testing.T) {
	a, b, c, x, y, z := k(0, "a"), k(0, "b"), k(0, "c"), k(0, "x"), k(0, "y"), k(1, "z")
	tests := []struct {
		name  string
		batch []txn.Txn
		want  txn.Counts
	}{
		{"empty", nil, txn.Counts{}},
		{"acyclic", []txn.Txn{tx(w(a)), tx(w(a, b)), tx(w(b, a)), tx(w(a))},
			txn.Counts{Txns: 4, Ops: 4, Keys: 2, Chains: 2, MaxChain: 3, Temporal: 2, Parametric: 1}},
		{"cycle between two chains", []txn.Txn{tx(w(a, b)), tx(w(b, a)), tx(w(a, b))},
			txn.Counts{Txns: 3, Ops: 3, Keys: 2, Chains: 2, MaxChain: 2, Temporal: 1, Parametric: 2, Cycles: 1, CyclicChains: 2}},
		{"two cycles", []txn.Txn{tx(w(a, b)), tx(w(b, a)), tx(w(a, b)), tx(w(x, y)), tx(w(y, x)), tx(w(x, y))},
			txn.Counts{Txns: 6, Ops: 6, Keys: 4, Chains: 4, MaxChain: 2, Temporal: 2, Parametric: 4, Cycles: 2, CyclicChains: 4}},
		{"three-chain cycle", []txn.Txn{tx(w(a)), tx(w(b, a)), tx(w(c, b)), tx(w(a, c))},
			txn.Counts{Txns: 4, Ops: 4, Keys: 3, Chains: 3, MaxChain: 2, Temporal: 1, Parametric: 3, Cycles: 1, CyclicChains: 3}},
		{"read of a key written later is committed state", []txn.Txn{tx(w(a, b)), tx(w(b))},
			txn.Counts{Txns: 2, Ops: 2, Keys: 2, Chains: 2, MaxChain: 1}},
		{"logical", []txn.Txn{tx(w(a), w(b), w(c)), tx(w(x))},
			txn.Counts{Txns: 2, Ops: 4, Keys: 4, Chains: 4, MaxChain: 1, Logical: 2}},
		{"reading the own key is temporal only", []txn.Txn{tx(w(a)), tx(w(a, a))},
			txn.Counts{Txns: 2, Ops: 2, Keys: 1, Chains: 1, MaxChain: 2, Temporal: 1}},
		{"own transaction's earlier write", []txn.Txn{tx(w(a), w(b, a))},
			txn.Counts{Txns: 1, Ops: 2, Keys: 2, Chains: 2, MaxChain: 1, Parametric: 1, Logical: 1}},
		{"non-deterministic barrier scoped to its table",
			[]txn.Txn{tx(w(x)), tx(nd(0)), tx(w(y)), tx(w(z, x)), tx(w(z))},
			// nd after x; y and z's read of x after nd; z's second write only temporal.
			txn.Counts{Txns: 5, Ops: 5, Keys: 3, Chains: 3, MaxChain: 2, Temporal: 1, Parametric: 1, NonDet: 3}},
		{"two non-deterministic ops in a row", []txn.Txn{tx(nd(0)), tx(nd(0)), tx(w(a))},
			txn.Counts{Txns: 3, Ops: 3, Keys: 1, Chains: 1, MaxChain: 1, NonDet: 2}},
		{"non-deterministic op reads another table", []txn.Txn{tx(w(z)), tx(txn.Op{NonDet: true, Table: 0, Reads: []txn.Key{z}}), tx(w(z))},
			txn.Counts{Txns: 3, Ops: 3, Keys: 1, Chains: 1, MaxChain: 2, Temporal: 1, Parametric: 1}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := txn.Analyze(tc.batch)
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Errorf("counts\n got %+v\nwant %+v", got, tc.want)
			}
		})
	}
}

// TestConfigAnalyze checks that a Scheduler configured with Analyze counts
// the cycles between chains under operation units too, as Analyze does,
// and one without it does not.
func TestConfigAnalyze(t *testing.T) {
	a, b, c := k(0, "a"), k(0, "b"), k(0, "c")
	batch := []txn.Txn{tx(w(a, b)), tx(w(b, a)), tx(w(a, b)), tx(w(c)), tx(w(c)), tx(w(c))}
	want, err := txn.Analyze(batch)
	if err != nil {
		t.Fatal(err)
	}
	if want.Cycles != 1 || want.MaxChain != 3 {
		t.Fatalf("Analyze: %d cycles, longest chain %d; want 1 and 3", want.Cycles, want.MaxChain)
	}
	for _, analyze := range []bool{false, true} {
		s, err := txn.New(txn.Config{Workers: 2, Analyze: analyze})
		if err != nil {
			t.Fatal(err)
		}
		for _, name := range []string{"ns-op-eager", "bfs-op-lazy", "dfs-chain-eager"} {
			st, _ := txn.ParseStrategy(name)
			res, err := s.Run(context.Background(), st, batch, txn.MapStore{}, testApply(3))
			if err != nil {
				t.Fatal(err)
			}
			wantCycles := want.Cycles
			if !analyze && st.Unit == txn.OpUnit {
				wantCycles = 0
			}
			if res.Stats.Cycles != wantCycles || res.Stats.CyclicChains != 2*wantCycles || res.Stats.MaxChain != 3 {
				t.Errorf("analyze %v, %s: %d cycles of %d chains, longest chain %d; want %d cycles of %d, longest 3",
					analyze, name, res.Stats.Cycles, res.Stats.CyclicChains, res.Stats.MaxChain, wantCycles, 2*wantCycles)
			}
		}
		s.Close()
	}
}

func TestChainUnitsSplitCycles(t *testing.T) {
	a, b, c := k(0, "a"), k(0, "b"), k(0, "c")
	batch := []txn.Txn{tx(w(a, b)), tx(w(b, a)), tx(w(a, b)), tx(w(c)), tx(w(c))}
	s, err := txn.New(txn.Config{Workers: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	apply := testApply(3)
	for _, name := range []string{"ns-chain-eager", "bfs-chain-lazy", "dfs-chain-eager", "tstream"} {
		st, _ := txn.ParseStrategy(name)
		res, err := s.Run(context.Background(), st, batch, txn.MapStore{}, apply)
		if err != nil {
			t.Fatal(err)
		}
		// Chains a and b form a cycle and are split into 3 operation
		// units; chain c stays one unit.
		if res.Stats.SplitUnits != 2 || res.Stats.Units != 4 {
			t.Errorf("%s: split %d units into %d, want 2 into 4", name, res.Stats.SplitUnits, res.Stats.Units)
		}
	}
}

func TestNonDetSegmentsChains(t *testing.T) {
	a, b := k(0, "a"), k(0, "b")
	batch := []txn.Txn{tx(w(a)), tx(w(b)), tx(nd(0)), tx(w(a)), tx(w(b))}
	s, err := txn.New(txn.Config{Workers: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for name, want := range map[string]txn.Counts{
		// Chains cut at the barrier: a, b, nd, a', b' = 5 units, no cycle.
		"ns-chain-eager": {Units: 5},
		// TStream does not cut chains: a <-> nd <-> b are one cycle, split to ops.
		"tstream": {Units: 5, SplitUnits: 3},
	} {
		st, _ := txn.ParseStrategy(name)
		res, err := s.Run(context.Background(), st, batch, txn.MapStore{}, testApply(2))
		if err != nil {
			t.Fatal(err)
		}
		if res.Stats.Units != want.Units || res.Stats.SplitUnits != want.SplitUnits {
			t.Errorf("%s: %d units, %d split; want %d, %d", name, res.Stats.Units, res.Stats.SplitUnits, want.Units, want.SplitUnits)
		}
	}
}

func TestParseStrategy(t *testing.T) {
	names := txn.StrategyNames()
	if len(names) != 15 {
		t.Fatalf("%d strategies, want 12 TPG + 3 baselines", len(names))
	}
	for _, n := range names {
		st, err := txn.ParseStrategy(n)
		if err != nil {
			t.Fatal(err)
		}
		if st.String() != n {
			t.Errorf("ParseStrategy(%q).String() = %q", n, st.String())
		}
	}
	if st, err := txn.ParseStrategy(txn.AdaptiveName); err != nil || st.Kind != txn.Adaptive || st.String() != txn.AdaptiveName {
		t.Errorf("ParseStrategy(%q) = %v, %v", txn.AdaptiveName, st, err)
	}
	if got := len(txn.TPGStrategies()); got != 12 {
		t.Errorf("%d TPG strategies, want 12", got)
	}
	for i, st := range txn.TPGStrategies() {
		if st.String() != names[i] {
			t.Errorf("TPGStrategies()[%d] = %s, want %s", i, st, names[i])
		}
	}
	for _, bad := range []string{"", "bfs", "bfs-op", "xfs-op-eager", "bfs-op-eager-x", "SERIAL", "Adaptive"} {
		if _, err := txn.ParseStrategy(bad); !errors.Is(err, txn.ErrUnknownStrategy) {
			t.Errorf("ParseStrategy(%q): %v, want ErrUnknownStrategy", bad, err)
		}
	}
}

func TestSchedulerLifecycle(t *testing.T) {
	if _, err := txn.New(txn.Config{}); err == nil {
		t.Error("New with 0 workers succeeded")
	}
	s, err := txn.New(txn.Config{Workers: 3})
	if err != nil {
		t.Fatal(err)
	}
	st, _ := txn.ParseStrategy("ns-op-eager")
	batch := []txn.Txn{tx(w(k(0, "a")))}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	for _, name := range txn.StrategyNames() {
		st, _ := txn.ParseStrategy(name)
		if _, err := s.Run(ctx, st, batch, txn.MapStore{}, testApply(1)); !errors.Is(err, context.Canceled) {
			t.Errorf("%s: Run with a cancelled context: %v", name, err)
		}
	}
	if _, err := s.Run(context.Background(), txn.Strategy{Kind: txn.Adaptive}, batch, txn.MapStore{}, testApply(1)); !errors.Is(err, txn.ErrAdaptive) {
		t.Errorf("Run with the adaptive strategy: %v, want ErrAdaptive", err)
	}
	res, err := s.Run(context.Background(), st, nil, txn.MapStore{}, testApply(1))
	if err != nil || len(res.Committed) != 0 || len(res.Changes) != 0 {
		t.Errorf("empty batch: %v, %+v", err, res)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	if _, err := s.Run(context.Background(), st, batch, txn.MapStore{}, testApply(1)); !errors.Is(err, txn.ErrClosed) {
		t.Errorf("Run after Close: %v, want ErrClosed", err)
	}
}

// TestCascadingAbort: T0's abort hides its write, so T1 (which aborted
// reading it) commits, and T2 (which read T1's now visible value) changes.
func TestCascadingAbort(t *testing.T) {
	a, b, c := k(0, "a"), k(0, "b"), k(0, "c")
	const (
		set = iota
		failIfSet
		copyRead
	)
	apply := func(tn, m int, o *txn.Op, acc txn.Access) (txn.Effect, error) {
		switch o.Fn {
		case set: // T0: write a=1, then abort in its second operation
			if m == 1 {
				return txn.Effect{Abort: true}, nil
			}
			return txn.Effect{Value: []byte("1")}, nil
		case failIfSet:
			if v, _ := acc.Read(0); string(v) == "1" {
				return txn.Effect{Abort: true}, nil
			}
			return txn.Effect{Value: []byte("b-written")}, nil
		default:
			v, ok := acc.Read(0)
			if !ok {
				v = []byte("none")
			}
			return txn.Effect{Value: v}, nil
		}
	}
	batch := []txn.Txn{
		tx(txn.Op{Write: a, Fn: set}, txn.Op{Write: c, Fn: set}),
		tx(txn.Op{Write: b, Reads: []txn.Key{a}, Fn: failIfSet}),
		tx(txn.Op{Write: c, Reads: []txn.Key{b}, Fn: copyRead}),
	}
	s, err := txn.New(txn.Config{Workers: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for _, name := range txn.StrategyNames() {
		st, _ := txn.ParseStrategy(name)
		res, err := s.Run(context.Background(), st, batch, txn.MapStore{}, apply)
		if err != nil {
			t.Fatal(err)
		}
		if res.Committed[0] || !res.Committed[1] || !res.Committed[2] {
			t.Errorf("%s: committed %v, want [false true true]", name, res.Committed)
		}
		// c first: keys are in order of first appearance in the batch.
		want := []txn.Change{{Key: c, Value: []byte("b-written")}, {Key: b, Value: []byte("b-written")}}
		if len(res.Changes) != 2 || res.Changes[0].Key != c || string(res.Changes[0].Value) != "b-written" ||
			res.Changes[1].Key != b || string(res.Changes[1].Value) != "b-written" {
			t.Errorf("%s: changes %+v, want %+v", name, res.Changes, want)
		}
		if o := res.Observed(1, 0); o.Reads[0].Found {
			t.Errorf("%s: T1 read %q of aborted T0", name, o.Reads[0].Bytes)
		}
	}
}

// TestSerialAnalyze: under Config.Analyze the serial strategy, which
// builds no TPG, counts the chains and the temporal, parametric and
// logical edges as Analyze does on batches without non-deterministic
// operations (and no cycles): on one worker inline, on two while the batch
// runs, and batch after batch on one Scheduler (which keeps the counting's
// memory).
func TestSerialAnalyze(t *testing.T) {
	a, b, c := k(0, "a"), k(0, "b"), k(0, "c")
	batches := [][]txn.Txn{
		{tx(w(a)), tx(w(a, b)), tx(w(b, a)), tx(w(a))},
		{tx(w(a), w(b, a), w(c)), tx(w(c, c)), tx(w(b, c), w(a, b))},
		{tx(w(c, a)), tx(w(b))},
	}
	for _, workers := range []int{1, 2} {
		s, err := txn.New(txn.Config{Workers: workers, Analyze: true})
		if err != nil {
			t.Fatal(err)
		}
		for i, batch := range batches {
			want, err := txn.Analyze(batch)
			if err != nil {
				t.Fatal(err)
			}
			res, err := s.Run(context.Background(), txn.Strategy{Kind: txn.Serial}, batch, txn.MapStore{}, testApply(3))
			if err != nil {
				t.Fatal(err)
			}
			got := res.Stats.Counts
			got.Aborted, got.Passes, got.Executions, got.ReExecutions = 0, 0, 0, 0
			want.Cycles, want.CyclicChains = 0, 0 // not counted by serial
			if got != want {
				t.Errorf("%d workers, batch %d: serial counts\n got %+v\nwant %+v", workers, i, got, want)
			}
		}
		s.Close()
	}
}
