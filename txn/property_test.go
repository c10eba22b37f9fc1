package txn_test

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"testing"

	"pgregory.net/rapid"

	"github.com/sluicehq/sluice/txn"
)

// Test functions, selected by Op.Fn&0xff; Op.Fn>>8 is a parameter.
const (
	fnAdd     = iota // own + reads + p
	fnCondSub        // abort if own+reads%7 < p/2, else subtract
	fnDelete         // delete when large, else add
	fnKeep           // keep or write depending on the values read
	fnNonDet         // Get a key chosen by the values read, Put another
	fnError          // fail with an error on some values read
	fnStray          // Get an undeclared key on some values read
)

func enc(v int64) []byte { return binary.LittleEndian.AppendUint64(nil, uint64(v)) }

func dec(b []byte) int64 {
	if len(b) < 8 {
		return 0
	}
	return int64(binary.LittleEndian.Uint64(b))
}

func mod(v, m int64) int64 { return ((v % m) + m) % m }

func tkey(table uint32, i int64) txn.Key { return txn.Key{Table: table, Key: fmt.Sprintf("k%d", i)} }

var errBoom = errors.New("boom")

// testApply is deterministic and depends on every value it reads.
// maxWorkers is the most workers the property tests run.
const maxWorkers = 4

func testApply(keySpace int64) txn.Apply {
	return func(t, m int, o *txn.Op, a txn.Access) (txn.Effect, error) {
		if w := a.Worker(); w < 0 || w >= maxWorkers {
			panic(fmt.Sprintf("Access.Worker() = %d, outside [0, %d)", w, maxWorkers))
		}
		p := int64(o.Fn >> 8)
		sum := int64(0)
		for i := range o.Reads {
			v, ok := a.Read(i)
			sum += dec(v)
			if !ok {
				sum += 3
			}
		}
		if o.Window > 0 {
			// Every version of the window counts, weighted by its age.
			wr := a.(txn.WindowReader)
			for i := range o.Reads {
				for _, v := range wr.Window(i) {
					sum += dec(v.Value.Bytes)*int64(v.Back%5+1) + 1
					if !v.Value.Found {
						sum += 7
					}
				}
			}
		}
		own, _ := a.Own()
		ov := dec(own)
		switch o.Fn & 0xff {
		case fnAdd:
			return txn.Effect{Value: enc(mod(ov+sum+p, 101))}, nil
		case fnCondSub:
			if mod(ov+sum, 7)*10 < p {
				return txn.Effect{Abort: true}, nil
			}
			return txn.Effect{Value: enc(mod(ov-p/3+sum, 101))}, nil
		case fnDelete:
			if ov > 70 {
				return txn.Effect{Delete: true}, nil
			}
			return txn.Effect{Value: enc(ov + p%13)}, nil
		case fnKeep:
			if mod(sum+ov+p, 2) == 0 {
				return txn.Effect{Keep: true}, nil
			}
			return txn.Effect{Value: enc(mod(sum+1, 101))}, nil
		case fnNonDet:
			base := sum + p
			k1 := tkey(o.Table, mod(base, keySpace+3))
			v, ok, err := a.Get(k1)
			if err != nil {
				return txn.Effect{}, err
			}
			if dec(v) > 95 {
				return txn.Effect{Abort: true}, nil
			}
			k2 := tkey(o.Table, mod(dec(v)+base, keySpace+3))
			if ok && mod(dec(v), 5) == 0 {
				if err := a.Delete(k2); err != nil {
					return txn.Effect{}, err
				}
			} else if err := a.Put(k2, enc(mod(dec(v)+p+1, 101))); err != nil {
				return txn.Effect{}, err
			}
			// Read back through the operation's own write buffer, and a third key.
			v2, _, err := a.Get(k2)
			if err != nil {
				return txn.Effect{}, err
			}
			k3 := tkey(o.Table, mod(dec(v2)+1, keySpace+3))
			v3, _, err := a.Get(k3)
			if err != nil {
				return txn.Effect{}, err
			}
			if err := a.Put(k3, enc(mod(dec(v3)+dec(v2), 101))); err != nil {
				return txn.Effect{}, err
			}
			return txn.Effect{}, nil
		case fnError:
			if mod(ov+sum, 17) == 3 {
				return txn.Effect{}, fmt.Errorf("value %d: %w", ov+sum, errBoom)
			}
			return txn.Effect{Value: enc(mod(ov+sum+1, 101))}, nil
		case fnStray:
			if mod(ov+sum, 19) == 5 {
				if _, _, err := a.Get(txn.Key{Table: 99, Key: "stray"}); err == nil {
					return txn.Effect{}, errors.New("stray Get was not refused")
				}
			}
			return txn.Effect{Value: enc(mod(ov+sum+2, 101))}, nil
		}
		return txn.Effect{}, fmt.Errorf("unknown fn %d", o.Fn)
	}
}

type workload struct {
	batch    []txn.Txn
	store    txn.MapStore
	keySpace int64
}

// genWorkload draws a batch and a committed state; with maxWindow > 0,
// some operations are windowed reads of 1 to maxWindow transactions.
func genWorkload(t *rapid.T, withErrors bool, maxWindow int) workload {
	nTables := rapid.IntRange(1, 3).Draw(t, "tables")
	keySpace := rapid.IntRange(1, 16).Draw(t, "keys")
	skewed := rapid.Bool().Draw(t, "skewed")
	nTxns := rapid.IntRange(0, 40).Draw(t, "txns")
	if rapid.IntRange(0, 7).Draw(t, "large") == 0 {
		nTxns = rapid.IntRange(100, 300).Draw(t, "largeTxns") // deeper cascades, more concurrency
	}
	maxLen := rapid.IntRange(1, 6).Draw(t, "maxLen")
	maxReads := rapid.IntRange(0, 3).Draw(t, "maxReads")
	ndPct := rapid.SampledFrom([]int{0, 0, 5, 20, 50}).Draw(t, "ndPct")
	abortP := rapid.IntRange(0, 70).Draw(t, "abortParam")
	key := func(label string) txn.Key {
		tb := uint32(rapid.IntRange(0, nTables-1).Draw(t, label+"T"))
		i := rapid.IntRange(0, keySpace-1).Draw(t, label+"K")
		if skewed {
			i = min(i, rapid.IntRange(0, keySpace-1).Draw(t, label+"K2"))
		}
		return tkey(tb, int64(i))
	}
	maxFn := fnNonDet - 1
	if withErrors {
		maxFn = fnStray
	}
	w := workload{keySpace: int64(keySpace), store: txn.MapStore{}}
	for tb := 0; tb < nTables; tb++ {
		for i := 0; i < keySpace+3; i++ {
			if rapid.IntRange(0, 3).Draw(t, "present") > 0 {
				w.store[tkey(uint32(tb), int64(i))] = enc(int64(rapid.IntRange(0, 100).Draw(t, "init")))
			}
		}
	}
	w.batch = make([]txn.Txn, nTxns)
	for i := range w.batch {
		n := rapid.IntRange(1, maxLen).Draw(t, "len")
		ops := make([]txn.Op, n)
		for j := range ops {
			var op txn.Op
			nd := rapid.IntRange(0, 99).Draw(t, "nd") < ndPct
			fn := rapid.IntRange(0, maxFn).Draw(t, "fn")
			if nd {
				op.NonDet, op.Table, fn = true, uint32(rapid.IntRange(0, nTables-1).Draw(t, "ndT")), fnNonDet
			} else {
				op.Write = key("w")
				if fn >= fnNonDet {
					fn++ // fnNonDet is only for non-deterministic operations
				}
				fn = min(fn, fnStray)
			}
			nr := rapid.IntRange(0, maxReads).Draw(t, "reads")
			for r := 0; r < nr; r++ {
				op.Reads = append(op.Reads, key("r"))
			}
			param := abortP
			if fn != fnCondSub {
				param = rapid.IntRange(0, 60).Draw(t, "p")
			}
			op.Fn = uint32(fn) | uint32(param)<<8
			if maxWindow > 0 && rapid.IntRange(0, 2).Draw(t, "windowed") == 0 {
				op.Window = uint32(rapid.IntRange(1, maxWindow).Draw(t, "window"))
			}
			ops[j] = op
		}
		w.batch[i].Ops = ops
	}
	return w
}

// same reports how got differs from the oracle's result, or "".
func same(w workload, want, got *txn.Result) string {
	for i := range w.batch {
		if want.Committed[i] != got.Committed[i] {
			return fmt.Sprintf("txn %d: committed %v, oracle %v", i, got.Committed[i], want.Committed[i])
		}
		for m := range w.batch[i].Ops {
			a, b := want.Observed(i, m), got.Observed(i, m)
			if a.Executed != b.Executed || !a.Own.Equal(b.Own) || len(a.Reads) != len(b.Reads) || len(a.Gets) != len(b.Gets) {
				return fmt.Sprintf("txn %d op %d: observed %+v, oracle %+v", i, m, *b, *a)
			}
			for r := range a.Reads {
				if !a.Reads[r].Equal(b.Reads[r]) {
					return fmt.Sprintf("txn %d op %d read %d: %v, oracle %v", i, m, r, b.Reads[r], a.Reads[r])
				}
			}
			if len(a.Windows) != len(b.Windows) {
				return fmt.Sprintf("txn %d op %d: %d windows, oracle %d", i, m, len(b.Windows), len(a.Windows))
			}
			for r := range a.Windows {
				if d := sameWindow(a.Windows[r], b.Windows[r]); d != "" {
					return fmt.Sprintf("txn %d op %d window %d: %s", i, m, r, d)
				}
			}
			for r := range a.Gets {
				if a.Gets[r].Key != b.Gets[r].Key || !a.Gets[r].Value.Equal(b.Gets[r].Value) {
					return fmt.Sprintf("txn %d op %d get %d: %v, oracle %v", i, m, r, b.Gets[r], a.Gets[r])
				}
			}
		}
	}
	if len(want.Changes) != len(got.Changes) {
		return fmt.Sprintf("changes: %d, oracle %d: %v vs %v", len(got.Changes), len(want.Changes), got.Changes, want.Changes)
	}
	for i := range want.Changes {
		a, b := want.Changes[i], got.Changes[i]
		if a.Key != b.Key || a.Delete != b.Delete || string(a.Value) != string(b.Value) {
			return fmt.Sprintf("change %d: %+v, oracle %+v", i, b, a)
		}
	}
	return ""
}

// sameWindow reports how a window differs from the oracle's, or "".
func sameWindow(want, got []txn.Version) string {
	if len(want) != len(got) {
		return fmt.Sprintf("%v, oracle %v", got, want)
	}
	for i := range want {
		if want[i].Back != got[i].Back || !want[i].Value.Equal(got[i].Value) {
			return fmt.Sprintf("%v, oracle %v", got, want)
		}
	}
	return ""
}

func sameErr(want, got error) string {
	var a, b *txn.OpError
	if !errors.As(want, &a) || !errors.As(got, &b) {
		return fmt.Sprintf("error %v, oracle %v", got, want)
	}
	if a.Txn != b.Txn || a.Op != b.Op || errors.Is(a, txn.ErrUndeclared) != errors.Is(b, txn.ErrUndeclared) ||
		errors.Is(a, errBoom) != errors.Is(b, errBoom) {
		return fmt.Sprintf("error %v, oracle %v", got, want)
	}
	return ""
}

func schedulers(t *testing.T) []*txn.Scheduler {
	var ss []*txn.Scheduler
	for n := 1; n <= maxWorkers; n++ {
		s, err := txn.New(txn.Config{Workers: n, Partitions: 1 + n*3})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		ss = append(ss, s)
	}
	return ss
}

func checkAll(t *testing.T, withErrors bool) {
	ss := schedulers(t)
	oracle, _ := txn.ParseStrategy("serial")
	ctx := context.Background()
	var seen struct{ aborts, redo, cycles, split, nondet, passes3 int }
	rapid.Check(t, func(rt *rapid.T) {
		w := genWorkload(rt, withErrors, 0)
		apply := testApply(w.keySpace)
		want, wantErr := ss[0].Run(ctx, oracle, w.batch, w.store, apply)
		if !withErrors && wantErr != nil {
			rt.Fatalf("oracle: %v", wantErr)
		}
		for _, name := range txn.StrategyNames() {
			st, err := txn.ParseStrategy(name)
			if err != nil {
				rt.Fatal(err)
			}
			s := ss[rapid.IntRange(0, len(ss)-1).Draw(rt, "workers")]
			got, err := s.Run(ctx, st, w.batch, w.store, apply)
			switch {
			case wantErr != nil:
				if d := sameErr(wantErr, err); d != "" {
					rt.Fatalf("%s, %d workers: %s", name, s.Workers(), d)
				}
			case err != nil:
				rt.Fatalf("%s, %d workers: %v", name, s.Workers(), err)
			default:
				if d := same(w, want, got); d != "" {
					rt.Fatalf("%s, %d workers: %s", name, s.Workers(), d)
				}
				c := got.Stats.Counts
				seen.aborts += min(c.Aborted, 1)
				seen.redo += min(c.ReExecutions, 1)
				seen.cycles += min(c.Cycles, 1)
				seen.split += min(c.SplitUnits, 1)
				seen.nondet += min(c.NonDet, 1)
				if c.Passes >= 3 {
					seen.passes3++
				}
			}
		}
	})
	// The generator must reach the cases that matter.
	if !withErrors && (seen.aborts == 0 || seen.redo == 0 || seen.cycles == 0 || seen.split == 0 || seen.nondet == 0 || seen.passes3 == 0) {
		t.Errorf("generator missed a case: %+v", seen)
	}
	t.Logf("runs with aborts %d, re-executions %d, chain cycles %d, split units %d, non-det edges %d, >=3 passes %d",
		seen.aborts, seen.redo, seen.cycles, seen.split, seen.nondet, seen.passes3)
}

// TestStrategiesMatchSerial is the metamorphic test: every strategy and
// baseline, on 1 to 4 workers, gives the oracle's outcome, values read and
// change set, on random batches with skew, cycles, cascading aborts and
// non-deterministic accesses.
func TestStrategiesMatchSerial(t *testing.T) { checkAll(t, false) }

// TestStrategiesMatchSerialErrors adds functions that fail and accesses
// outside the declaration: every strategy reports the oracle's error.
func TestStrategiesMatchSerialErrors(t *testing.T) { checkAll(t, true) }
