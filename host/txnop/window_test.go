package txnop_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/abi"
	"github.com/sluicehq/sluice/host/plugin"
	"github.com/sluicehq/sluice/host/txnop"
	"github.com/sluicehq/sluice/txn"
	"github.com/sluicehq/sluice/txn/apps/grepsum"
)

// batchLogic is a native Logic that plans the batches it was given, one
// per Process, and applies them with Windowed GrepSum's function.
type batchLogic struct {
	w       *grepsum.Workload
	batches [][]txn.Txn
	next    int
}

func (l *batchLogic) Plan(_ context.Context, events []abi.Record, p *txnop.Plan) error {
	p.Txns = append(p.Txns, l.batches[l.next]...)
	l.next++
	return nil
}

func (l *batchLogic) Apply(_ context.Context, t, op int, o *txn.Op, a txn.Access) (txn.Effect, error) {
	return l.w.Apply(t, op, o, a)
}

func (l *batchLogic) Post(context.Context, []abi.Record, *txnop.Plan, *txn.Result, *plugin.Output) error {
	return nil
}

func (l *batchLogic) Close(context.Context) error { return nil }

// commit applies a batch's changes to store.
func commit(store txn.MapStore, res *txn.Result) {
	for _, c := range res.Changes {
		if c.Delete {
			delete(store, c.Key)
		} else {
			store[c.Key] = c.Value
		}
	}
}

// TestOperatorWindows: the windows an Operator with a read window hands its
// windowed reads, batch after batch, are the serial executor's over one
// History; a windowed read over more than the read window fails the batch
// with ErrReadWindow, naming the key.
func TestOperatorWindows(t *testing.T) {
	ctx := context.Background()
	const window, events, nBatches = 12, 30, 4
	w, err := grepsum.New(grepsum.Config{Keys: 16, Length: 2, Reads: 1, Skew: 0.6, Seed: 7, Window: window, Period: 3})
	if err != nil {
		t.Fatal(err)
	}
	logic := &batchLogic{w: w}
	for range nBatches {
		logic.batches = append(logic.batches, w.Batch(events))
	}
	op, err := txnop.New(txnop.Config{Name: "wgs", Tables: []string{"t"}, Strategy: strategy(t, "ns-op-lazy"), Workers: 2, Logic: logic, ReadWindow: window})
	if err != nil {
		t.Fatal(err)
	}
	defer op.Close(ctx)
	oracle, err := txn.New(txn.Config{Workers: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer oracle.Close()
	store, serialStore := txn.MapStore{}, txn.MapStore{}
	hist, err := txn.NewHistory(serialStore, window)
	if err != nil {
		t.Fatal(err)
	}
	recs := make([]abi.Record, events)
	seen := 0
	for b, batch := range logic.batches {
		var out plugin.Output
		res, err := op.Process(ctx, recs, store, &out)
		if err != nil {
			t.Fatalf("batch %d: %v", b, err)
		}
		want, err := oracle.Run(ctx, txn.Strategy{Kind: txn.Serial}, batch, hist, w.Apply)
		if err != nil {
			t.Fatalf("batch %d, serial: %v", b, err)
		}
		for i := range batch {
			for m := range batch[i].Ops {
				g, x := res.Observed(i, m).Windows, want.Observed(i, m).Windows
				if len(g) != len(x) {
					t.Fatalf("batch %d event %d op %d: %d windows, serial %d", b, i, m, len(g), len(x))
				}
				for r := range x {
					if !sameVersions(g[r], x[r]) {
						t.Fatalf("batch %d event %d op %d read %d: window %v, serial %v", b, i, m, r, g[r], x[r])
					}
					seen += len(x[r])
				}
			}
		}
		commit(store, res)
		commit(serialStore, want)
		hist.Commit(want)
	}
	if seen == 0 {
		t.Fatal("no windowed read saw a version: the test tests nothing")
	}
	if got := op.History().Len(); got != hist.Len() {
		t.Errorf("the operator's History holds %d versions, the serial one %d", got, hist.Len())
	}

	// A window larger than the operator's read window fails the batch.
	small, err := txnop.New(txnop.Config{Name: "wgs", Tables: []string{"t"}, Strategy: strategy(t, "ns-op-lazy"), Workers: 1,
		Logic: &batchLogic{w: w, batches: logic.batches}, ReadWindow: window - 1})
	if err != nil {
		t.Fatal(err)
	}
	defer small.Close(ctx)
	var out plugin.Output
	_, err = small.Process(ctx, recs, txn.MapStore{}, &out)
	if !errors.Is(err, txnop.ErrReadWindow) || !strings.Contains(err.Error(), "read_window is 11") {
		t.Fatalf("a window of %d under read_window %d: %v", window, window-1, err)
	}
}

func sameVersions(a, b []txn.Version) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].Back != b[i].Back || !a[i].Value.Equal(b[i].Value) {
			return false
		}
	}
	return true
}
