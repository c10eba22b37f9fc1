package txn_test

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"maps"
	"testing"

	"pgregory.net/rapid"

	"github.com/sluicehq/sluice/txn"
)

// applyChanges commits a batch's change set to a MapStore.
func applyChanges(store txn.MapStore, res *txn.Result) {
	for _, c := range res.Changes {
		if c.Delete {
			delete(store, c.Key)
		} else {
			store[c.Key] = c.Value
		}
	}
}

// TestWindowsMatchSerial is the metamorphic test of windowed reads: runs
// of one or two batches, each committed to a History before the next, in
// which some operations read windows of random sizes (some reaching back
// into earlier batches) and compute from every version; every strategy, on
// 1 to 4 workers, gives the oracle's outcomes, values and windows read,
// change set and versions, with cascading aborts and non-deterministic
// writes in the windows.
func TestWindowsMatchSerial(t *testing.T) {
	ss := schedulers(t)
	oracle, _ := txn.ParseStrategy("serial")
	ctx := context.Background()
	var seen struct{ aborts, redo, history, nonEmpty int }
	rapid.Check(t, func(rt *rapid.T) {
		maxW := rapid.IntRange(1, 30).Draw(rt, "maxWindow")
		first := genWorkload(rt, false, maxW)
		store := maps.Clone(first.store)
		hist, err := txn.NewHistory(store, uint64(maxW))
		if err != nil {
			rt.Fatal(err)
		}
		nb := rapid.IntRange(1, 2).Draw(rt, "batches")
		for b := 0; b < nb; b++ {
			w := first
			if b > 0 {
				w = genWorkload(rt, false, maxW)
			}
			apply := testApply(w.keySpace)
			want, err := ss[0].Run(ctx, oracle, w.batch, hist, apply)
			if err != nil {
				rt.Fatalf("batch %d: oracle: %v", b, err)
			}
			for _, name := range txn.StrategyNames() {
				st, err := txn.ParseStrategy(name)
				if err != nil {
					rt.Fatal(err)
				}
				s := ss[rapid.IntRange(0, len(ss)-1).Draw(rt, "workers")]
				got, err := s.Run(ctx, st, w.batch, hist, apply)
				if err != nil {
					rt.Fatalf("batch %d, %s, %d workers: %v", b, name, s.Workers(), err)
				}
				if d := same(w, want, got); d != "" {
					rt.Fatalf("batch %d, %s, %d workers: %s", b, name, s.Workers(), d)
				}
				if d := sameWrites(want.Versions, got.Versions); d != "" {
					rt.Fatalf("batch %d, %s, %d workers: versions: %s", b, name, s.Workers(), d)
				}
				seen.aborts += min(got.Stats.Aborted, 1)
				seen.redo += min(got.Stats.ReExecutions, 1)
			}
			for i := range w.batch {
				for m := range w.batch[i].Ops {
					for _, win := range want.Observed(i, m).Windows {
						if len(win) > 0 {
							seen.nonEmpty++
						}
						if len(win) > 0 && win[0].Back > uint64(i) {
							seen.history++
						}
					}
				}
			}
			applyChanges(store, want)
			hist.Commit(want)
		}
	})
	if seen.aborts == 0 || seen.redo == 0 || seen.history == 0 || seen.nonEmpty == 0 {
		t.Errorf("generator missed a case: %+v", seen)
	}
	t.Logf("runs with aborts %d, re-executions %d; windows with versions %d, reaching an earlier batch %d",
		seen.aborts, seen.redo, seen.nonEmpty, seen.history)
}

func sameWrites(want, got []txn.Write) string {
	if len(want) != len(got) {
		return fmt.Sprintf("%d, oracle %d: %v vs %v", len(got), len(want), got, want)
	}
	for i := range want {
		if want[i].Txn != got[i].Txn || want[i].Key != got[i].Key || !want[i].Value.Equal(got[i].Value) {
			return fmt.Sprintf("%d: %+v, oracle %+v", i, got[i], want[i])
		}
	}
	return ""
}

// seqBatch is a batch over one key k in which transaction i writes its
// global sequence number base+i to k (Arg), then, if windowed, reads the
// window of k, and writes k again; a last operation writes k once more. The
// reads see neither the writes of their own transaction nor later ones.
func seqBatch(n int, base uint64, window uint32) []txn.Txn {
	k := txn.Key{Key: "k"}
	batch := make([]txn.Txn, n)
	for i := range batch {
		seq := binary.LittleEndian.AppendUint64(nil, base+uint64(i))
		batch[i].Ops = []txn.Op{
			{Write: k, Arg: seq},
			{Write: txn.Key{Key: "sum"}, Reads: []txn.Key{k}, Window: window},
			{Write: k, Arg: seq},
		}
	}
	return batch
}

// seqApply writes Arg; a windowed read checks its window (each version's
// value is its writer's sequence number, so it must be the reader's minus
// its Back) and records the writers it saw.
func seqApply() txn.Apply {
	return func(tn, _ int, o *txn.Op, a txn.Access) (txn.Effect, error) {
		if o.Window == 0 {
			return txn.Effect{Value: o.Arg}, nil
		}
		win := a.(txn.WindowReader).Window(0)
		var out []byte
		for _, v := range win {
			out = binary.LittleEndian.AppendUint64(out, binary.LittleEndian.Uint64(v.Value.Bytes))
		}
		return txn.Effect{Value: out}, nil
	}
}

// TestWindowIsBounded checks both bounds of a window: a windowed read at
// transaction t of window W sees exactly the versions of t-W .. t-1, one
// per transaction (its last write), including those of earlier batches
// kept by the History, never t's own writes nor later ones, never older
// ones; for every strategy.
func TestWindowIsBounded(t *testing.T) {
	ctx := context.Background()
	s, err := txn.New(txn.Config{Workers: 3})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	const W, batchLen, batches = 7, 5, 4
	for _, name := range txn.StrategyNames() {
		st, err := txn.ParseStrategy(name)
		if err != nil {
			t.Fatal(err)
		}
		store := txn.MapStore{}
		hist, err := txn.NewHistory(store, W)
		if err != nil {
			t.Fatal(err)
		}
		for b := 0; b < batches; b++ {
			base := uint64(b * batchLen)
			res, err := s.Run(ctx, st, seqBatch(batchLen, base, W), hist, seqApply())
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			for i := 0; i < batchLen; i++ {
				seq := base + uint64(i)
				win := res.Observed(i, 1).Windows[0]
				var want []txn.Version
				for back := min(uint64(W), seq); back >= 1; back-- {
					want = append(want, txn.Version{Back: back, Value: txn.Value{
						Bytes: binary.LittleEndian.AppendUint64(nil, seq-back), Found: true}})
				}
				if d := sameWindow(want, win); d != "" {
					t.Fatalf("%s: transaction %d: window %s", name, seq, d)
				}
			}
			applyChanges(store, res)
			hist.Commit(res)
		}
	}
}

// TestWindowExcludesAborted: a transaction that aborts after writing
// leaves no version in later windows, under every strategy, even when the
// abort comes from an operation that runs after the window was read.
func TestWindowExcludesAborted(t *testing.T) {
	ctx := context.Background()
	s, err := txn.New(txn.Config{Workers: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	k, other := txn.Key{Key: "k"}, txn.Key{Key: "other"}
	batch := []txn.Txn{
		{Ops: []txn.Op{{Write: k, Arg: []byte("a")}}},
		{Ops: []txn.Op{{Write: k, Arg: []byte("b")}, {Write: other, Arg: []byte("abort")}}},
		{Ops: []txn.Op{{Write: txn.Key{Key: "sum"}, Reads: []txn.Key{k}, Window: 5}}},
	}
	apply := func(_, _ int, o *txn.Op, a txn.Access) (txn.Effect, error) {
		if o.Window == 0 {
			return txn.Effect{Value: o.Arg, Abort: string(o.Arg) == "abort"}, nil
		}
		var out []byte
		for _, v := range a.(txn.WindowReader).Window(0) {
			out = append(out, v.Value.Bytes...)
		}
		return txn.Effect{Value: out}, nil
	}
	for _, name := range txn.StrategyNames() {
		st, _ := txn.ParseStrategy(name)
		res, err := s.Run(ctx, st, batch, txn.MapStore{}, apply)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		win := res.Observed(2, 0).Windows[0]
		if len(win) != 1 || string(win[0].Value.Bytes) != "a" || win[0].Back != 2 {
			t.Errorf("%s: window %v, want only transaction 0's version", name, win)
		}
	}
}

// TestWindowErrors: a window wider than the History keeps fails the batch
// with ErrWindow naming the read; a Window call of an operation that is not
// a windowed read fails with ErrUndeclared.
func TestWindowErrors(t *testing.T) {
	ctx := context.Background()
	s, err := txn.New(txn.Config{Workers: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	hist, err := txn.NewHistory(txn.MapStore{}, 4)
	if err != nil {
		t.Fatal(err)
	}
	k := txn.Key{Key: "k"}
	wide := []txn.Txn{{Ops: []txn.Op{{Write: k, Reads: []txn.Key{k}, Window: 5}}}}
	plain := []txn.Txn{{Ops: []txn.Op{{Write: k, Reads: []txn.Key{k}}}}}
	apply := func(_, _ int, o *txn.Op, a txn.Access) (txn.Effect, error) {
		a.(txn.WindowReader).Window(0)
		return txn.Effect{}, nil
	}
	for _, name := range txn.StrategyNames() {
		st, _ := txn.ParseStrategy(name)
		_, err := s.Run(ctx, st, wide, hist, apply)
		var oe *txn.OpError
		if !errors.Is(err, txn.ErrWindow) || !errors.As(err, &oe) || oe.Txn != 0 || oe.Op != 0 {
			t.Errorf("%s: window 5 over a history of 4: %v, want an OpError wrapping ErrWindow", name, err)
		}
		if _, err := s.Run(ctx, st, plain, hist, apply); !errors.Is(err, txn.ErrUndeclared) {
			t.Errorf("%s: Window of a plain read: %v, want ErrUndeclared", name, err)
		}
	}
	if _, err := txn.NewHistory(txn.MapStore{}, 0); err == nil {
		t.Error("NewHistory with window 0 succeeded")
	}
}

// TestHistoryIsBounded: over a long stream, the History holds at most the
// versions of its last Window transactions (one key written per
// transaction here), and reading its full window still works.
func TestHistoryIsBounded(t *testing.T) {
	ctx := context.Background()
	s, err := txn.New(txn.Config{Workers: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	st, _ := txn.ParseStrategy("ns-op-eager")
	const W = 16
	store := txn.MapStore{}
	hist, err := txn.NewHistory(store, W)
	if err != nil {
		t.Fatal(err)
	}
	apply := func(_, _ int, o *txn.Op, a txn.Access) (txn.Effect, error) {
		if o.Window > 0 {
			n := len(a.(txn.WindowReader).Window(0))
			return txn.Effect{Value: binary.LittleEndian.AppendUint64(nil, uint64(n))}, nil
		}
		return txn.Effect{Value: o.Arg}, nil
	}
	most := 0
	for b := 0; b < 200; b++ {
		batch := make([]txn.Txn, 10)
		for i := range batch {
			// Keys come and go: each is written a few times, then never again.
			k := txn.Key{Key: fmt.Sprintf("k%d", (b*10+i)/3)}
			batch[i].Ops = []txn.Op{
				{Write: k, Arg: []byte("v")},
				{Write: txn.Key{Table: 1, Key: "n"}, Reads: []txn.Key{k}, Window: W},
			}
		}
		res, err := s.Run(ctx, st, batch, hist, apply)
		if err != nil {
			t.Fatal(err)
		}
		applyChanges(store, res)
		hist.Commit(res)
		most = max(most, hist.Len())
	}
	// Each transaction writes two keys: its own and "n".
	if most > 2*W {
		t.Errorf("the history held %d versions, want at most %d", most, 2*W)
	}
	if most < W {
		t.Errorf("the history held at most %d versions: nothing was kept", most)
	}
}
