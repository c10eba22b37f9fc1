package grepsum_test

import (
	"context"
	"reflect"
	"testing"

	"github.com/sluicehq/sluice/txn"
	"github.com/sluicehq/sluice/txn/apps/grepsum"
)

func TestAcyclicHasNoChainCycles(t *testing.T) {
	for _, acyclic := range []bool{true, false} {
		w, err := grepsum.New(grepsum.Config{Keys: 64, Length: 2, Reads: 2, Skew: 0.5, Acyclic: acyclic, Seed: 3})
		if err != nil {
			t.Fatal(err)
		}
		c, err := txn.Analyze(w.Batch(2000))
		if err != nil {
			t.Fatal(err)
		}
		if acyclic && c.Cycles != 0 {
			t.Errorf("acyclic workload has %d cycles", c.Cycles)
		}
		if !acyclic && c.Cycles == 0 {
			t.Errorf("random workload on 64 keys has no cycle: the check would be vacuous")
		}
	}
}

// TestWindowedMatchesSerial runs Windowed GrepSum over several batches,
// each committed to a History, under every strategy: the outcomes, the
// windows read and the change sets equal the serial executor's, and a
// window event comes every Period transactions, reaching into the earlier
// batches.
func TestWindowedMatchesSerial(t *testing.T) {
	ctx := context.Background()
	s, err := txn.New(txn.Config{Workers: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	const window, period, batchLen = 50, 7, 40
	w, err := grepsum.New(grepsum.Config{Keys: 16, Length: 2, Reads: 1, Skew: 0.8, Complexity: 10, Seed: 5,
		Window: window, Period: period, WindowRatio: 0.5})
	if err != nil {
		t.Fatal(err)
	}
	store := txn.MapStore{}
	hist, err := txn.NewHistory(store, window)
	if err != nil {
		t.Fatal(err)
	}
	serial, _ := txn.ParseStrategy("serial")
	windowed, reachBack := 0, 0
	for b := 0; b < 4; b++ {
		batch := w.Batch(batchLen)
		want, err := s.Run(ctx, serial, batch, hist, w.Apply)
		if err != nil {
			t.Fatal(err)
		}
		for i := range batch {
			event := b*batchLen + i + 1
			for m, op := range batch[i].Ops {
				if op.Window == 0 {
					continue
				}
				if event%period != 0 {
					t.Fatalf("event %d has a windowed read, period %d", event, period)
				}
				windowed++
				for _, win := range want.Observed(i, m).Windows {
					if len(win) > 0 && win[0].Back > uint64(i) {
						reachBack++
					}
				}
			}
		}
		for _, name := range txn.StrategyNames() {
			st, _ := txn.ParseStrategy(name)
			got, err := s.Run(ctx, st, batch, hist, w.Apply)
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			if !reflect.DeepEqual(got.Changes, want.Changes) || !reflect.DeepEqual(got.Committed, want.Committed) {
				t.Fatalf("batch %d, %s: changes or outcomes differ from serial", b, name)
			}
			for i := range batch {
				for m := range batch[i].Ops {
					if a, g := want.Observed(i, m).Windows, got.Observed(i, m).Windows; !reflect.DeepEqual(a, g) {
						t.Fatalf("batch %d, %s: txn %d op %d windows %v, serial %v", b, name, i, m, g, a)
					}
				}
			}
		}
		for _, c := range want.Changes {
			store[c.Key] = c.Value
		}
		hist.Commit(want)
	}
	if windowed == 0 || reachBack == 0 {
		t.Errorf("%d windowed reads, %d reaching an earlier batch: the test is vacuous", windowed, reachBack)
	}
}

func TestWindowedConfig(t *testing.T) {
	for _, cfg := range []grepsum.Config{
		{Keys: 4, Length: 1, Window: -1},
		{Keys: 4, Length: 1, Window: 4, WindowRatio: 1.5},
		{Keys: 4, Length: 1, Window: 4, Period: -2},
	} {
		if _, err := grepsum.New(cfg); err == nil {
			t.Errorf("New(%+v) succeeded", cfg)
		}
	}
}
