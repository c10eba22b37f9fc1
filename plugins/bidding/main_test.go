package main

import (
	"fmt"
	"maps"
	"os"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/host/plugin/hosttest"
	"github.com/sluicehq/sluice/host/txnop"
	"github.com/sluicehq/sluice/plugins/bidding/biddingop"
	"github.com/sluicehq/sluice/plugins/internal/plugintest"
	"github.com/sluicehq/sluice/txn"
	"github.com/sluicehq/sluice/txn/apps/bidding/event"
	"github.com/sluicehq/sluice/txn/apps/workload"
)

func TestMain(m *testing.M) { os.Exit(plugintest.TxnMain(m)) }

// native returns a maker of native Logics of the operator over tables.
func native(tables []string) func() txnop.Logic {
	return func() txnop.Logic { return hosttest.TxnLogic(biddingop.New(), tables) }
}

// TestBiddingStrategies runs a small Online Bidding workload, whose buys
// exhaust the items (so that they abort for want of stock, besides those
// drawn to abort), with every strategy, natively and in WebAssembly, and
// requires the serial run's commits, change sets, outputs and final state
// from each; the serial run must match the events applied one after the
// other over a map (model), and no quantity ever goes negative.
func TestBiddingStrategies(t *testing.T) {
	k, err := workload.Defaults(workload.OnlineBidding)
	if err != nil {
		t.Fatal(err)
	}
	k.Keys, k.Skew, k.AbortRatio, k.TxnLength, k.BuyRatio, k.BusyNanos, k.Seed = 8, 0.5, 0.1, 3, 0.95, 50, 13
	w := plugintest.NewTxnWorkload(t, workload.OnlineBidding, k, 600, 150)
	tr := plugintest.CheckStrategies(t, w, native(w.Tables))
	outs, final, outOfStock := model(t, &w)
	if d := plugintest.DiffBatches("output", tr.Outputs, outs); d != "" {
		t.Errorf("outputs differ from the model's: %s", d)
	}
	if d := plugintest.DiffState(tr.Final, final); d != "" {
		t.Errorf("final state differs from the model's: %s", d)
	}
	for key, v := range tr.Final {
		g, err := event.DecodeGood(v)
		if err != nil {
			t.Fatal(err)
		}
		if g.Quantity < 0 {
			t.Errorf("item %s: quantity %d", key.Key, g.Quantity)
		}
	}
	bought := 0
	for _, b := range tr.Outputs {
		for _, line := range b {
			r, err := biddingop.ParseResult([]byte(strings.SplitN(line, " ", 3)[2]))
			if err != nil {
				t.Fatal(err)
			}
			if r.Kind == event.Buy && r.Committed {
				bought++
			}
		}
	}
	t.Logf("%d buys committed, %d aborted for want of stock", bought, outOfStock)
	if outOfStock == 0 || bought == 0 {
		t.Errorf("%d buys committed, %d aborted for want of stock: the workload tests too little", bought, outOfStock)
	}
}

// TestBiddingMalformed: an event that does not decode (here, of an unknown
// kind) is dead-lettered with the decoder's reason, with every strategy,
// natively and in WebAssembly.
func TestBiddingMalformed(t *testing.T) {
	k, err := workload.Defaults(workload.OnlineBidding)
	if err != nil {
		t.Fatal(err)
	}
	k.Keys, k.TxnLength, k.AbortRatio = 8, 2, 0.2
	w := plugintest.NewTxnWorkload(t, workload.OnlineBidding, k, 40, 20)
	bad := event.AppendEvent(nil, &event.Event{Kind: event.TopUp + 1, Items: []event.Item{{Key: 1}}})
	plugintest.CheckMalformed(t, w, native(w.Tables), 3, bad, "kind")
}

// model applies w's events one after the other over a map, as
// txn/apps/bidding/event specifies them, and returns the outputs (as
// plugintest.TxnTrace shows them), the final state and the number of buys
// that bid enough but found an item out of stock.
func model(t *testing.T, w *plugintest.TxnWorkload) ([][]string, txn.MapStore, int) {
	t.Helper()
	state := maps.Clone(w.Initial)
	var outs [][]string
	outOfStock := 0
	for _, batch := range w.Batches {
		var bo []string
		for i, rec := range batch {
			e, err := event.DecodeEvent(rec.Value)
			if err != nil {
				t.Fatal(err)
			}
			next := maps.Clone(state) // the event's writes, kept if it commits
			r := biddingop.Result{Kind: e.Kind, Committed: true}
			for _, it := range e.Items {
				k := txn.Key{Table: event.Goods, Key: string(event.AppendKey(nil, it.Key))}
				g, err := event.DecodeGood(next[k])
				if err != nil {
					t.Fatal(err)
				}
				switch e.Kind {
				case event.Buy:
					if g.Price > it.Price || g.Quantity < it.Quantity {
						if g.Price <= it.Price {
							outOfStock++
						}
						r = biddingop.Result{Kind: e.Kind}
					}
					r.Paid += g.Price * it.Quantity
					g.Quantity -= it.Quantity
				case event.Alert:
					g.Price = it.Price
				case event.TopUp:
					g.Quantity += it.Quantity
				}
				if !r.Committed {
					r.Paid = 0
					break
				}
				next[k] = event.AppendGood(nil, g)
			}
			if r.Committed {
				state = next
			}
			bo = append(bo, fmt.Sprintf("%d %s %s", i, rec.Key, biddingop.AppendResult(nil, &r)))
		}
		outs = append(outs, bo)
	}
	return outs, state, outOfStock
}

// BenchmarkBidding runs MorphStream's Online Bidding workload (100,000
// items, skew 0.2, 25% buys, 20 items per event) in batches of 10,240
// events with 2 workers, natively and in WebAssembly; ns/event is the
// figure to compare.
func BenchmarkBidding(b *testing.B) {
	k, err := workload.Defaults(workload.OnlineBidding)
	if err != nil {
		b.Fatal(err)
	}
	w := plugintest.NewTxnWorkload(b, workload.OnlineBidding, k, 4*10240, 10240)
	b.Run("native", func(b *testing.B) {
		plugintest.BenchTxn(b, w, plugintest.BenchStrategy, 2, native(w.Tables)())
	})
	b.Run("wasm", func(b *testing.B) {
		plugintest.BenchTxn(b, w, plugintest.BenchStrategy, 2, plugintest.TxnWasm(b, 2))
	})
}
