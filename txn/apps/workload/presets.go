package workload

import (
	"fmt"
	"sort"
	"strings"
)

// presets are the named dynamic workloads, per application: phases as
// ParsePhases reads them, from the caller's base knobs, each as long as the
// caller's default phase length.
var presets = map[string]map[string]string{
	StreamingLedger: {
		// After MorphStream's dynamic Streaming Ledger (13 phases): phases
		// that raise skew, parametric dependencies (transfers read two
		// accounts) and aborts in turn; then a hot key (Zipf 2.0: the
		// hottest account's chain holds a fifth of a batch) with half then
		// most transactions aborting, the one regime measured where serial
		// execution beats the parallel strategies; then heavy operations
		// with a few aborts (where re-running a whole batch costs most);
		// then back.
		"morphstream": "name=1 base;" +
			"name=2 skew 0.6,skew=0.6;" +
			"name=3 skew 0.9,skew=0.9;" +
			"name=4 skew 1.2,skew=1.2;" +
			"name=5 transfers 95%,skew=0.25,deposit-ratio=0.05;" +
			"name=6 transfers only,deposit-ratio=0;" +
			"name=7 aborts 5%,deposit-ratio=0.25,abort-ratio=0.05;" +
			"name=8 aborts 20%,abort-ratio=0.2;" +
			"name=9 aborts 50%,abort-ratio=0.5;" +
			"name=10 skew 0.9 aborts 20%,skew=0.9,abort-ratio=0.2;" +
			"name=11 skew 1.2 transfers aborts 50%,skew=1.2,deposit-ratio=0.05,abort-ratio=0.5;" +
			"name=12 hot key transfers aborts 50%,skew=2.0;" +
			"name=13 hot key transfers aborts 80%,abort-ratio=0.8;" +
			"name=14 heavy 10us aborts 5%,skew=0.25,deposit-ratio=0.25,abort-ratio=0.05,busy-ns=10000;" +
			"name=15 base,abort-ratio=0,busy-ns=0",
	},
	GrepSum: {
		// The same progression for GrepSum: skew, then multi-key reads
		// (parametric dependencies, cycles), longer transactions, aborts,
		// heavy operations.
		"morphstream": "name=1 base;" +
			"name=2 skew 0.8,skew=0.8;" +
			"name=3 skew 1.2,skew=1.2;" +
			"name=4 reads 3,skew=0,reads=3;" +
			"name=5 reads 3 cyclic,acyclic=false;" +
			"name=6 txn length 4,reads=1,acyclic=true,txn-length=4;" +
			"name=7 aborts 5%,txn-length=1,abort-ratio=0.05;" +
			"name=8 aborts 30%,abort-ratio=0.3;" +
			"name=9 skew 1.2 aborts 30%,skew=1.2;" +
			"name=10 heavy 10us aborts 5%,skew=0,abort-ratio=0.05,busy-ns=10000;" +
			"name=11 base,abort-ratio=0,busy-ns=0",
	},
}

// Presets returns the names of application app's preset dynamic
// workloads.
func Presets(app string) []string {
	var names []string
	for n := range presets[app] {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// preset returns the phases of application app's preset name, each
// phaseEvents long.
func preset(app, name string, base Knobs, phaseEvents int) ([]Phase, error) {
	spec, ok := presets[app][name]
	if !ok {
		avail := "none"
		if p := Presets(app); len(p) > 0 {
			avail = strings.Join(p, ", ")
		}
		return nil, fmt.Errorf("workload: %w: %q is not a preset of %s (presets: %s) nor a list of phases (knob=value,...;...)", ErrBadPhases, name, app, avail)
	}
	return ParsePhases(app, spec, base, phaseEvents)
}
