package grepsum_test

import (
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
