package adapt_test

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/txn"
	"github.com/sluicehq/sluice/txn/adapt"
)

// phase returns the measurement of a batch of 10,000 operations with the
// given temporal and parametric dependencies per operation, skew, abort
// ratio and operation cost, at rate events per second: what one batch of a
// benchmark phase measured.
func phase(td, pd, skew, aborts float64, cost time.Duration, rate float64) adapt.Measurement {
	const ops = 10000
	return adapt.Measurement{
		Events: 3000, Ops: ops, Temporal: int(td * ops), Parametric: int(pd * ops),
		Skew: skew, AbortRatio: aborts, OpCostNs: float64(cost), Rate: rate,
	}
}

// slBase is a batch of Streaming Ledger's base phase (phase 1 of the
// dynamic benchmark) at the given rate.
func slBase(rate float64) adapt.Measurement {
	return phase(0.08, 0.05, 0.0003, 0, 1300*time.Nanosecond, rate)
}

// TestDefaults checks the calibrated default thresholds on what the
// phases of the dynamic benchmarks measured (medians of their batches,
// BENCHMARKS.md, and GrepSum with single-key operations for long chains):
// ns-op-eager wherever nothing beat it measurably, breadth first on
// GrepSum's dense, flat phases, serial only in the extremes, chain units
// nowhere, and no cycle counting (it costs 4% and decides nothing there).
func TestDefaults(t *testing.T) {
	us := time.Microsecond
	if md, err := adapt.New(adapt.DefaultConfig()); err != nil || md.NeedsCycles() {
		t.Errorf("before the first batch, chain units off: NeedsCycles true (%v)", err)
	}
	for _, tc := range []struct {
		name string
		ms   adapt.Measurement
		want string
	}{
		{"sl 1 base", phase(0.08, 0.05, 0.0003, 0, 1300*time.Nanosecond, 1), "ns-op-eager"},
		{"sl 2 skew 0.6", phase(0.18, 0.12, 0.0039, 0, 1300*time.Nanosecond, 1), "ns-op-eager"},
		{"sl 3 skew 0.9", phase(0.48, 0.31, 0.044, 0, 1300*time.Nanosecond, 1), "ns-op-eager"},
		{"sl 4 skew 1.2", phase(0.81, 0.53, 0.18, 0, 1300*time.Nanosecond, 1), "ns-op-eager"},
		{"sl 5 transfers", phase(0.09, 0.07, 0.0003, 0, 1300*time.Nanosecond, 1), "ns-op-eager"},
		{"sl 7 aborts 5%", phase(0.08, 0.05, 0.0003, 0.04, 1300*time.Nanosecond, 1), "ns-op-eager"},
		{"sl 9 aborts 50%", phase(0.08, 0.05, 0.0003, 0.37, 1300*time.Nanosecond, 1), "ns-op-eager"},
		{"sl 10 skew 0.9 aborts 20%", phase(0.48, 0.31, 0.044, 0.15, 1300*time.Nanosecond, 1), "ns-op-eager"},
		{"sl 11 skew 1.2 aborts 50%", phase(0.82, 0.60, 0.18, 0.48, 1300*time.Nanosecond, 1), "ns-op-eager"},
		{"sl 12 heavy", phase(0.08, 0.05, 0.0003, 0.04, 12*us, 1), "ns-op-eager"},
		{"gs 1 base", phase(0.32, 0.32, 0.0012, 0, 800*time.Nanosecond, 1), "ns-op-eager"},
		{"gs 2 skew 0.8", phase(0.56, 0.68, 0.11, 0, 800*time.Nanosecond, 1), "ns-op-eager"},
		{"gs 3 skew 1.2", phase(0.84, 0.48, 0.60, 0, 700*time.Nanosecond, 1), "ns-op-eager"},
		{"gs 4 reads 3", phase(0.32, 0.97, 0.0012, 0, 1300*time.Nanosecond, 1), "bfs-op-eager"},
		{"gs 6 txn length 4", phase(0.71, 0.71, 0.0006, 0, 700*time.Nanosecond, 1), "bfs-op-eager"},
		{"gs 9 skew 1.2 aborts 30%", phase(0.84, 0.48, 0.60, 0.30, 700*time.Nanosecond, 1), "ns-op-eager"},
		{"gs 10 heavy", phase(0.32, 0.32, 0.0012, 0.05, 11*us, 1), "ns-op-eager"},
		{"a hot key, most transactions aborting", phase(0.84, 0.48, 0.65, 0.6, 700*time.Nanosecond, 1), "serial"},
		{"sl zipf 1.6, transfers, 50% aborts", phase(0.96, 0.71, 0.356, 0.47, 1100*time.Nanosecond, 1), "ns-op-eager"},
		{"sl zipf 2.0, transfers, 64% aborts", phase(0.98, 0.73, 0.442, 0.63, 1100*time.Nanosecond, 1), "serial"},
		{"sl zipf 2.0, transfers, 82% aborts", phase(0.98, 0.72, 0.440, 0.82, 1100*time.Nanosecond, 1), "serial"},
		{"a hot key, few aborts", phase(0.98, 0.72, 0.440, 0.2, 1100*time.Nanosecond, 1), "ns-op-eager"},
		{"long chains reading nothing", phase(0.9, 0, 0.002, 0, 1300*time.Nanosecond, 1), "ns-op-eager"},
	} {
		md, err := adapt.New(adapt.DefaultConfig())
		if err != nil {
			t.Fatal(err)
		}
		d := md.Observe(tc.ms)
		if d.Rule != tc.want || d.Strategy != tc.want {
			t.Errorf("%s: rule %s, strategy %s; want %s\nreasons %q", tc.name, d.Rule, d.Strategy, tc.want, d.Reasons())
		}
		if tc.want == "ns-op-eager" && !strings.Contains(d.Reasons()[2], "lazy is off") && !strings.HasPrefix(d.Reasons()[2], "eager: an operation takes") {
			t.Errorf("%s: abort reason %q", tc.name, d.Reasons()[2])
		}
		if md.NeedsCycles() && tc.want != "serial" {
			t.Errorf("%s: cycles counted for the next batch", tc.name)
		}
	}
}

// TestLazyRuleOff: by default the lazy rule is off, whatever the aborts;
// eager_aborts above 0 turns it on.
func TestLazyRuleOff(t *testing.T) {
	md, err := adapt.New(adapt.DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	d := md.Observe(slBase(1000))
	if d.Rule != "ns-op-eager" || d.Reasons()[2] != "eager: 0 of the transactions abort, an operation takes 1.3µs; lazy is off (eager_aborts 0)" {
		t.Errorf("rule %s, reasons %q", d.Rule, d.Reasons())
	}
	cfg := adapt.DefaultConfig()
	cfg.EagerAborts = 0.02
	if md, err = adapt.New(cfg); err != nil {
		t.Fatal(err)
	}
	if d = md.Observe(slBase(1000)); d.Rule != "ns-op-lazy" || !strings.HasPrefix(d.Reasons()[2], "lazy: an operation takes 1.3µs < 8µs") {
		t.Errorf("eager_aborts 0.02: rule %s, reasons %q", d.Rule, d.Reasons())
	}
	heavy := slBase(1000)
	heavy.OpCostNs = float64(15 * time.Microsecond)
	if d = md.Observe(heavy); d.Rule != "ns-op-eager" || !strings.HasPrefix(d.Reasons()[2], "eager: an operation takes 15µs >= 12µs") {
		t.Errorf("heavy operations: rule %s, reasons %q", d.Rule, d.Reasons())
	}
}

// noisy returns the default configuration probing every 4 batches.
func noisy(t *testing.T, significance float64) *adapt.Model {
	t.Helper()
	cfg := adapt.DefaultConfig()
	cfg.ProbeEvery = 4
	if significance > 0 {
		cfg.Significance = significance
	}
	md, err := adapt.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return md
}

// feed runs batches through md, each at the rate rate returns for the
// strategy that runs it (i counts the batches), and returns the decisions.
func feed(md *adapt.Model, batches int, rate func(i int, s string) float64) []adapt.Decision {
	out := make([]adapt.Decision, batches)
	for i := range out {
		out[i] = md.Observe(slBase(rate(i, md.Next().String())))
	}
	return out
}

// alternating is a rate of mean 100,000 that goes 8% up and down batch by
// batch: the noise of one batch on the benchmark machine.
func alternating(i int) float64 {
	if i%2 == 0 {
		return 108000
	}
	return 92000
}

// TestNoiseDoesNotSwitch: a probe that comes out 14% faster than the
// current strategy's mean, when one batch varies by 8%, is not evidence
// enough; probed again, it comes out level, and the model never leaves.
// With a gate of the margin alone, the same batches switch.
func TestNoiseDoesNotSwitch(t *testing.T) {
	probes := 0
	rate := func(i int, s string) float64 {
		if s == "ns-op-eager" {
			return alternating(i)
		}
		probes++
		if probes == 1 {
			return 114000
		}
		return 101000
	}
	md := noisy(t, 0)
	ds := feed(md, 60, rate)
	for i, d := range ds {
		if d.Learned || (d.Strategy != "ns-op-eager" && !d.Probe) {
			t.Fatalf("batch %d: %+v, want ns-op-eager kept", i+1, d)
		}
	}
	// The first probe (after batch 5) measured bfs-op-eager at +14%: not
	// significant, but promising, so it was probed again first.
	if !ds[4].Probe || ds[4].Strategy != "bfs-op-eager" || !ds[9].Probe || ds[9].Strategy != "bfs-op-eager" {
		t.Errorf("probes after batches 5 and 10: %s (%v), %s (%v); want bfs-op-eager twice", ds[4].Strategy, ds[4].Probe, ds[9].Strategy, ds[9].Probe)
	}
	if st := md.Stats(); st.Learned != 0 || st.ProbesWon != 0 || st.Probes < 4 {
		t.Errorf("stats %+v", st)
	}

	// Where the current strategy's batches vary little, one batch of
	// another is still not conclusive: it has no dispersion of its own
	// and takes at least the prior spread.
	md = noisy(t, 0)
	ds = feed(md, 7, func(_ int, s string) float64 {
		if s == "ns-op-eager" {
			return 100000
		}
		return 114000
	})
	if !ds[4].Probe || ds[5].Strategy != "ns-op-eager" || ds[5].Learned {
		t.Errorf("steady current strategy, one batch 14%% faster: %+v, want ns-op-eager kept", ds[5])
	}

	probes = 0
	md = noisy(t, 1e-6) // the margin alone
	ds = feed(md, 7, rate)
	if ds[5].Strategy != "bfs-op-eager" || !ds[5].Learned {
		t.Errorf("without the significance gate, after the probe: %+v, want bfs-op-eager learned", ds[5])
	}
}

// TestConsistentDifferenceSwitches: a neighbour 20% faster, measured so
// twice, takes over; the first probe alone is not enough. The learned
// choice then stands through its own noise and a bad batch.
func TestConsistentDifferenceSwitches(t *testing.T) {
	probes := 0
	rate := func(i int, s string) float64 {
		switch s {
		case "ns-op-eager":
			return alternating(i)
		case "bfs-op-eager":
			probes++
			if probes <= 2 {
				return []float64{118000, 121000}[probes-1]
			}
			if i == 30 {
				return 95000 // one bad batch
			}
			return 1.2 * alternating(i)
		}
		return 95000
	}
	md := noisy(t, 0)
	ds := feed(md, 11, rate)
	if !ds[4].Probe || ds[5].Strategy != "ns-op-eager" || ds[5].Learned {
		t.Fatalf("after the first probe: %+v, want back to ns-op-eager", ds[5])
	}
	if !ds[9].Probe || ds[9].Strategy != "bfs-op-eager" {
		t.Fatalf("second probe: %+v, want bfs-op-eager again", ds[9])
	}
	d := ds[10]
	if d.Strategy != "bfs-op-eager" || !d.Learned || d.Over != "ns-op-eager" || d.Z <= 2 || d.Samples != 2 {
		t.Fatalf("after the second probe: %+v, want bfs-op-eager learned over ns-op-eager, z > 2, on 2 batches", d)
	}
	for i, d := range feed(md, 40, func(i int, s string) float64 { return rate(i+11, s) }) {
		if d.Strategy != "bfs-op-eager" && !d.Probe {
			t.Fatalf("batch %d after the switch: %+v, want bfs-op-eager kept", i+12, d)
		}
	}
	if st := md.Stats(); st.ProbesWon != 1 {
		t.Errorf("stats %+v, want 1 probe won", st)
	}
}

// TestStaleEvidence: a probe measured bfs-op-eager at 109,000 events/s
// when ns-op-eager ran at 100,000; long after, ns-op-eager slows to 80,000
// in the same regime (a workload change its classes do not see). The old
// batch is no evidence that bfs-op-eager would now be faster: no switch.
func TestStaleEvidence(t *testing.T) {
	md := noisy(t, 0)
	ds := feed(md, 62, func(i int, s string) float64 {
		switch {
		case s == "bfs-op-eager":
			return 109000
		case s != "ns-op-eager":
			return 95000 // the later probes lose
		case i < 39:
			return alternating(i)
		}
		return 0.8 * alternating(i)
	})
	if !ds[4].Probe || ds[4].Strategy != "bfs-op-eager" {
		t.Fatalf("first probe: %+v", ds[4])
	}
	for i, d := range ds {
		if d.Learned || (d.Strategy != "ns-op-eager" && !d.Probe) {
			t.Fatalf("batch %d: %+v, want ns-op-eager kept", i+1, d)
		}
	}
}

// TestMispredictionWithinNoise: the rules switch (here from dfs-op-eager,
// the initial strategy, to ns-op-eager); a batch after the switch 12%
// slower than predicted is within a batch's noise and keeps the switch; one
// 40% slower is a misprediction and sends the model back at once, where it
// stays, and the return itself is not judged.
func TestMispredictionWithinNoise(t *testing.T) {
	start := func() *adapt.Model {
		cfg := adapt.DefaultConfig()
		initial, _ := txn.ParseStrategy("dfs-op-eager")
		cfg.Initial = &initial
		cfg.ProbeEvery = -1
		md, err := adapt.New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		if d := md.Observe(slBase(100000)); d.Strategy != "ns-op-eager" || d.PredictedRate != 100000 || d.Spread != 8000 {
			t.Fatalf("first decision: %+v, want the rules' ns-op-eager predicted at 100,000 ± 8,000", d)
		}
		return md
	}
	md := start()
	if d := md.Observe(slBase(88000)); d.Mispredicted || d.Strategy != "ns-op-eager" {
		t.Errorf("12%% slower: %+v, want no misprediction", d)
	}

	md = start()
	d := md.Observe(slBase(60000))
	if !d.Mispredicted || d.Strategy != "dfs-op-eager" || !d.Learned || d.Rule != "ns-op-eager" {
		t.Fatalf("40%% slower: %+v, want a misprediction and dfs-op-eager learned", d)
	}
	if d = md.Observe(slBase(70000)); d.Mispredicted || d.Strategy != "dfs-op-eager" {
		t.Errorf("a slow batch after the return: %+v, want no misprediction, dfs-op-eager kept", d)
	}
	for i := range 10 {
		if d = md.Observe(slBase(alternating(i))); d.Strategy != "dfs-op-eager" || !d.Learned {
			t.Fatalf("batch %d after: %+v, want dfs-op-eager kept", i, d)
		}
	}
	if st := md.Stats(); st.Mispredictions != 1 || st.Switches != 2 {
		t.Errorf("stats %+v, want 1 misprediction and 2 switches", st)
	}
}

// TestProbes: after ProbeEvery batches on one strategy the model measures
// a neighbour for one batch, the dimensions in turn; a neighbour measured
// slower doubles the wait, up to 8 times ProbeEvery; a new regime resets
// it; where transactions abort, the lazy neighbour is never probed; a
// clearly faster neighbour is kept; negative ProbeEvery never probes.
func TestProbes(t *testing.T) {
	md := noisy(t, 0)
	var at []int
	var probed []string
	for i := range 110 {
		rate := 1000.0
		if md.Next().String() != "ns-op-eager" {
			rate = 950 // slower, within the margin: never skipped, always lost
		}
		if d := md.Observe(slBase(rate)); d.Probe {
			at, probed = append(at, i+1), append(probed, d.Strategy)
		}
	}
	// Probes after batches 5 (stay 5 > 4), then 9, 17, 33 and 33 batches
	// later (8 times ProbeEvery, the cap).
	if want := []int{5, 14, 31, 64, 97}; !slices.Equal(at, want) {
		t.Errorf("probes after batches %v, want %v", at, want)
	}
	if want := []string{"bfs-op-eager", "ns-chain-eager", "dfs-op-eager", "ns-op-lazy", "bfs-op-eager"}; !slices.Equal(probed, want) {
		t.Errorf("probed %v, want %v (the dimensions in turn)", probed, want)
	}
	if st := md.Stats(); st.Probes != 5 || st.ProbesWon != 0 || st.Switches != 10 {
		t.Errorf("stats %+v, want 5 probes (and 10 switches: each probe and its return)", st)
	}

	// Aborts: a new regime, probes every 4 batches again, and the lazy
	// neighbour is skipped.
	aborting := phase(0.08, 0.05, 0.0003, 0.05, 1300*time.Nanosecond, 1000)
	at, probed = nil, nil
	for i := range 40 {
		ms := aborting
		if md.Next().String() != "ns-op-eager" {
			ms.Rate = 950
		}
		if d := md.Observe(ms); d.Probe {
			at, probed = append(at, i+1), append(probed, d.Strategy)
		}
	}
	if len(at) == 0 || at[0] != 5 {
		t.Errorf("with aborts, probes after batches %v, want the first after batch 5", at)
	}
	for _, s := range probed {
		if strings.HasSuffix(s, "lazy") {
			t.Errorf("probed %s where transactions abort", s)
		}
	}

	// A clearly faster neighbour is kept after one probe.
	md = noisy(t, 0)
	ds := feed(md, 7, func(_ int, s string) float64 {
		if s == "bfs-op-eager" {
			return 1500
		}
		return 1000
	})
	if !ds[4].Probe || ds[5].Strategy != "bfs-op-eager" || !ds[5].Learned || ds[6].Strategy != "bfs-op-eager" {
		t.Errorf("a neighbour 50%% faster: %+v then %+v, want it kept", ds[5], ds[6])
	}

	cfg := adapt.DefaultConfig()
	cfg.ProbeEvery = -1
	if md, err := adapt.New(cfg); err != nil {
		t.Fatal(err)
	} else {
		for i, d := range feed(md, 50, func(int, string) float64 { return 1000 }) {
			if d.Probe || d.Strategy != "ns-op-eager" {
				t.Fatalf("batch %d without probes: %+v", i+1, d)
			}
		}
	}
}

// TestSignificanceConfig: significance and spread must be above 0.
func TestSignificanceConfig(t *testing.T) {
	for _, mod := range []func(*adapt.Config){
		func(c *adapt.Config) { c.Significance = -1 },
		func(c *adapt.Config) { c.Spread = -0.1 },
	} {
		cfg := adapt.DefaultConfig()
		mod(&cfg)
		if _, err := adapt.New(cfg); err == nil {
			t.Errorf("config %+v accepted", cfg)
		}
	}
	cfg := adapt.DefaultConfig()
	cfg.Significance, cfg.Spread = 0, 0
	md, err := adapt.New(cfg)
	if err != nil || md.Config().Significance != adapt.DefaultSignificance || md.Config().Spread != adapt.DefaultSpread {
		t.Errorf("zero significance and spread: %v, %+v; want the defaults", err, md.Config())
	}
}

// BenchmarkObserve measures deciding after one batch, with a regime that
// knows several strategies and probes running: what the operator pays per
// batch (against batches of tens of milliseconds).
func BenchmarkObserve(b *testing.B) {
	cfg := adapt.DefaultConfig()
	cfg.ProbeEvery = 4
	md, err := adapt.New(cfg)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		md.Observe(slBase(alternating(i)))
		i++
	}
}

// TestInitialBreadthFirst checks that an initial strategy equal to
// txn.Strategy's zero value (bfs-op-eager) is honoured, not taken for
// "unset".
func TestInitialBreadthFirst(t *testing.T) {
	cfg := adapt.DefaultConfig()
	initial, err := txn.ParseStrategy("bfs-op-eager")
	if err != nil || initial != (txn.Strategy{}) {
		t.Fatalf("bfs-op-eager parses to %v (%v), the test expects the zero Strategy", initial, err)
	}
	cfg.Initial = &initial
	md, err := adapt.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if got := md.Next(); got != initial {
		t.Errorf("first batch runs %s, want bfs-op-eager", got)
	}
	cfg.Initial = nil
	if md, err = adapt.New(cfg); err != nil || md.Next().String() != "ns-op-eager" {
		t.Errorf("no initial strategy: %v, %v; want the default ns-op-eager", md.Next(), err)
	}
}
