package adapt_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/txn"
	"github.com/sluicehq/sluice/txn/adapt"
)

func key(i int) txn.Key { return txn.Key{Key: fmt.Sprintf("k%04d", i)} }

// write returns an operation writing key w and reading keys reads.
func write(w int, reads ...int) txn.Op {
	op := txn.Op{Write: key(w)}
	for _, r := range reads {
		op.Reads = append(op.Reads, key(r))
	}
	return op
}

// abortEvery returns an Apply that aborts transactions whose index is a
// multiple of n (never when n is 0) and otherwise writes "v".
func abortEvery(n int) txn.Apply {
	return func(t, _ int, _ *txn.Op, _ txn.Access) (txn.Effect, error) {
		if n > 0 && t%n == 0 {
			return txn.Effect{Abort: true}, nil
		}
		return txn.Effect{Value: []byte("v")}, nil
	}
}

// measure runs batch on an analysing 2-worker scheduler and collects its
// measurement, with a fixed processing time (timing is not under test).
func measure(t *testing.T, batch []txn.Txn, apply txn.Apply) adapt.Measurement {
	t.Helper()
	return measureWith(t, "ns-op-eager", batch, apply)
}

// measureWith is measure under the named strategy.
func measureWith(t *testing.T, strategy string, batch []txn.Txn, apply txn.Apply) adapt.Measurement {
	t.Helper()
	s, err := txn.New(txn.Config{Workers: 2, Analyze: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	st, _ := txn.ParseStrategy(strategy)
	res, err := s.Run(context.Background(), st, batch, txn.MapStore{}, apply)
	if err != nil {
		t.Fatal(err)
	}
	m := adapt.Collect(1, len(batch), 2, &res.Stats, 10*time.Millisecond)
	// The operations' cost is timed: a loaded machine (or the race
	// detector) can make a trivial one look costly. The rules under test
	// read the batch's structure; a test of cost sets it.
	m.OpCostNs = float64(time.Microsecond)
	return m
}

// Crafted batches of 1,000 single-operation transactions.
const n = 1000

// spread: every transaction writes its own key: no dependency at all.
func spread() []txn.Txn {
	b := make([]txn.Txn, n)
	for i := range b {
		b[i].Ops = []txn.Op{write(i)}
	}
	return b
}

// chains: 100 keys written 10 times each, round robin: long chains, no
// reads, no skew.
func chains() []txn.Txn {
	b := make([]txn.Txn, n)
	for i := range b {
		b[i].Ops = []txn.Op{write(i % 100)}
	}
	return b
}

// hot: like chains, but every hotEvery-th transaction writes key 999.
func hot(hotEvery int) []txn.Txn {
	b := chains()
	for i := 0; i < n; i += hotEvery {
		b[i].Ops = []txn.Op{write(999)}
	}
	return b
}

// reading: chains whose writers also read the chain below theirs (key
// i%100 reads key i%100-1): many parametric dependencies, no cycle.
func reading() []txn.Txn {
	b := chains()
	for i := range b {
		if c := i % 100; c > 0 {
			b[i].Ops = []txn.Op{write(c, c-1)}
		}
	}
	return b
}

// cyclic: chains, where chains 0-9 read each other in a ring: 10% of the
// chains in one cycle.
func cyclic() []txn.Txn {
	b := chains()
	for i := range b {
		if c := i % 100; c < 10 {
			b[i].Ops = []txn.Op{write(c, (c+1)%10)}
		}
	}
	return b
}

func TestCollect(t *testing.T) {
	ms := measure(t, hot(10), abortEvery(4))
	// 100 writes of key 999 (i = 0, 10, ...) and 900 of the 90 keys 0..99
	// other than 0, 10, ..., 90, whose writes all went to 999.
	if ms.Events != n || ms.Ops != n || ms.MaxChain != 100 || ms.Chains != 91 {
		t.Errorf("events %d, ops %d, longest chain %d, chains %d; want %d, %d, 100, 91", ms.Events, ms.Ops, ms.MaxChain, ms.Chains, n, n)
	}
	if ms.Temporal != n-91 || ms.Parametric != 0 || ms.Logical != 0 || ms.CyclicChains != 0 {
		t.Errorf("temporal %d, parametric %d, logical %d, cyclic %d; want %d, 0, 0, 0", ms.Temporal, ms.Parametric, ms.Logical, ms.CyclicChains, n-91)
	}
	if want := 100.0 * 2 / n; ms.Skew != want {
		t.Errorf("skew %v, want %v (longest chain over a worker's share)", ms.Skew, want)
	}
	if ms.Aborted != n/4 || ms.AbortRatio != 0.25 {
		t.Errorf("aborted %d (ratio %v), want %d (0.25)", ms.Aborted, ms.AbortRatio, n/4)
	}
	if ms.Seconds != 0.01 || ms.Rate != n/0.01 || ms.Strategy != "ns-op-eager" || ms.Batch != 1 {
		t.Errorf("seconds %v, rate %v, strategy %s, batch %d", ms.Seconds, ms.Rate, ms.Strategy, ms.Batch)
	}
	if c := measure(t, cyclic(), abortEvery(0)); c.CyclicChains != 10 || c.Parametric == 0 {
		t.Errorf("cyclic batch: %d chains in cycles, %d parametric edges; want 10 and some", c.CyclicChains, c.Parametric)
	}
	st := txn.Stats{Workers: 2, Counts: txn.Counts{Ops: 4}, Breakdown: txn.Breakdown{Useful: 4 * time.Microsecond}}
	if m := adapt.Collect(7, 2, 2, &st, time.Second); m.OpCostNs != 1000 || m.Rate != 2 {
		t.Errorf("op cost %v ns, rate %v; want 1000 ns (useful time per operation) and 2", m.OpCostNs, m.Rate)
	}
	if m := adapt.Collect(1, 0, 2, &txn.Stats{}, 0); m.Skew != 0 || m.Rate != 0 || m.AbortRatio != 0 || m.OpCostNs != 0 {
		t.Errorf("empty batch: %+v, want zero ratios", m)
	}
}

// morph returns thresholds under which each rule fires on the batch
// crafted for it: MorphStream's rules with the lazy rule on and a range of
// skew for depth first exploration (the defaults, calibrated on Sluice's
// benchmarks, choose ns-op-eager on most of these batches; see
// TestDefaults).
func morph() adapt.Thresholds {
	return adapt.Thresholds{
		StructuredDeps: 0.8, StructuredSkew: 0.5, DFSSkew: 0.1,
		ChainTemporal: 0.2, ChainParametric: 0.3, ChainCyclic: 0.05,
		EagerOpCost: 20 * time.Microsecond, EagerAborts: 0.02,
		SerialSkew: 0.5, SerialAborts: 0.5,
	}
}

// exact is the default configuration with morph's thresholds and without
// hysteresis (a band too narrow to matter), for tests of the rules at
// their thresholds.
func exact() adapt.Config {
	cfg := adapt.DefaultConfig()
	cfg.Band = 1e-9
	cfg.Thresholds = morph()
	return cfg
}

// firstBatch returns the decision a fresh model takes after ms, with
// Patience 1 so that the rules' choice is taken at once.
func firstBatch(t *testing.T, ms adapt.Measurement) adapt.Decision {
	t.Helper()
	cfg := exact()
	cfg.Patience = 1
	md, err := adapt.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return md.Observe(ms)
}

// TestRules checks that each rule fires on the batch crafted for it and
// not on the others: the rules' choice, and the rule named in each
// dimension's reason.
func TestRules(t *testing.T) {
	heavy := measure(t, spread(), abortEvery(0))
	heavy.OpCostNs = float64(50 * time.Microsecond)
	tests := []struct {
		name    string
		ms      adapt.Measurement
		want    string
		reasons [3]string // the start of each dimension's reason
	}{
		{"no dependencies", measure(t, spread(), abortEvery(0)), "ns-op-lazy",
			[3]string{"ns: 0.00 dependencies", "op: 0.00 temporal", "lazy:"}},
		{"long chains, no skew", measure(t, chains(), abortEvery(0)), "bfs-chain-lazy",
			[3]string{"bfs:", "chain:", "lazy:"}},
		{"a hot key: depth first", measure(t, hot(10), abortEvery(0)), "dfs-chain-lazy",
			[3]string{"dfs:", "chain:", "lazy:"}},
		{"a very hot key: non-structured", measure(t, hot(3), abortEvery(0)), "ns-chain-lazy",
			[3]string{"ns: skew", "chain:", "lazy:"}},
		{"many parametric dependencies", measure(t, reading(), abortEvery(0)), "bfs-op-lazy",
			[3]string{"bfs:", "op: 0.99 parametric", "lazy:"}},
		{"cycles between chains", measure(t, cyclic(), abortEvery(0)), "bfs-op-lazy",
			[3]string{"bfs:", "op: 0.1 of the chains in cycles", "lazy:"}},
		{"frequent aborts", measure(t, chains(), abortEvery(10)), "bfs-chain-eager",
			[3]string{"bfs:", "chain:", "eager: 0.1 of the transactions abort"}},
		{"rare aborts", measure(t, chains(), abortEvery(100)), "bfs-chain-lazy",
			[3]string{"bfs:", "chain:", "lazy:"}},
		{"costly operations", heavy, "ns-op-eager",
			[3]string{"ns:", "op:", "eager: an operation takes 50µs"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			d := firstBatch(t, tc.ms)
			if d.Rule != tc.want || d.Strategy != tc.want {
				t.Errorf("rule %s, strategy %s; want %s\nreasons: %q", d.Rule, d.Strategy, tc.want, d.Reasons())
			}
			reasons := d.Reasons()
			if len(reasons) != 3 {
				t.Fatalf("%d reasons, want 3: %q", len(reasons), reasons)
			}
			for i, want := range tc.reasons {
				if !strings.HasPrefix(reasons[i], want) {
					t.Errorf("reason %d: %q, want it to start %q", i, reasons[i], want)
				}
			}
		})
	}
}

// TestThresholdsConfigurable moves one threshold and checks the rule
// follows it.
func TestThresholdsConfigurable(t *testing.T) {
	ms := measure(t, chains(), abortEvery(0))
	cfg := exact()
	cfg.Patience = 1
	cfg.StructuredDeps = 0.95 // chains have 0.9 dependencies per operation
	cfg.ChainTemporal = 0.95
	cfg.EagerAborts = 0
	md, err := adapt.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if d := md.Observe(ms); d.Rule != "ns-op-eager" {
		t.Errorf("rule %s, want ns-op-eager under the raised thresholds; reasons %q", d.Rule, d.Reasons())
	}
	cfg.ChainCyclic = -1
	if _, err := adapt.New(cfg); err == nil || !strings.Contains(err.Error(), "chain_cyclic") {
		t.Errorf("a negative threshold: %v, want an error naming chain_cyclic", err)
	}
	cfg = adapt.DefaultConfig()
	cfg.Initial = &txn.Strategy{Kind: txn.Serial}
	if _, err := adapt.New(cfg); err == nil {
		t.Error("the serial strategy as the initial one was accepted")
	}
}

// rated returns ms with the given rate.
func rated(ms adapt.Measurement, rate float64) adapt.Measurement {
	ms.Rate = rate
	return ms
}

func TestHysteresis(t *testing.T) {
	cfg := exact()
	cfg.Patience = 2
	md, err := adapt.New(cfg) // initial ns-op-eager
	if err != nil {
		t.Fatal(err)
	}
	flat, chained := measure(t, spread(), abortEvery(10)), measure(t, chains(), abortEvery(0))
	// spread with aborts: the rules say ns-op-eager, the current strategy.
	if d := md.Observe(rated(flat, 100)); d.Strategy != "ns-op-eager" || d.Held {
		t.Fatalf("first batch: %+v", d)
	}
	// One batch that looks different: held.
	if d := md.Observe(rated(chained, 100)); d.Strategy != "ns-op-eager" || !d.Held || d.Rule != "bfs-chain-lazy" {
		t.Fatalf("one odd batch: strategy %s (held %v, rule %s), want ns-op-eager held", d.Strategy, d.Held, d.Rule)
	}
	// Back to the first kind: the streak is broken.
	if d := md.Observe(rated(flat, 100)); d.Strategy != "ns-op-eager" || d.Held {
		t.Fatalf("back to the first kind: %+v", d)
	}
	if d := md.Observe(rated(chained, 100)); !d.Held {
		t.Fatalf("first batch of a new kind: %+v, want held", d)
	}
	// The second batch in a row of the new kind: switch.
	if d := md.Observe(rated(chained, 100)); d.Strategy != "bfs-chain-lazy" || d.Held {
		t.Fatalf("second batch of a new kind: strategy %s held %v, want bfs-chain-lazy", d.Strategy, d.Held)
	}
	if got := md.Next().String(); got != "bfs-chain-lazy" {
		t.Errorf("Next() = %s after the switch", got)
	}
}

// TestLearnsFromMisprediction: the rules move to a strategy that turns out
// slower than the one they left; the model notices, goes back, and keeps
// the faster one while the measurements stand, then tries the rules'
// choice again once they are forgotten.
func TestLearnsFromMisprediction(t *testing.T) {
	cfg := exact()
	cfg.Patience, cfg.Memory = 1, 10
	initial, _ := txn.ParseStrategy("ns-op-lazy")
	cfg.Initial = &initial
	md, err := adapt.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ms := measure(t, chains(), abortEvery(0)) // the rules say bfs-chain-lazy
	d := md.Observe(rated(ms, 1000))          // ran ns-op-lazy at 1000/s
	if d.Strategy != "bfs-chain-lazy" || d.Learned || d.PredictedRate != 1000 {
		t.Fatalf("first decision: %+v, want the rules' bfs-chain-lazy predicted at 1000/s", d)
	}
	d = md.Observe(rated(ms, 600)) // bfs-chain-lazy ran at 600/s
	if !d.Mispredicted || !d.Learned || d.Strategy != "ns-op-lazy" || d.Rule != "bfs-chain-lazy" || d.PredictedRate != 1000 {
		t.Fatalf("after the slow batch: %+v, want a misprediction and ns-op-lazy learned", d)
	}
	for i := range 5 {
		d = md.Observe(rated(ms, 1000))
		if d.Strategy != "ns-op-lazy" || !d.Learned || d.Mispredicted {
			t.Fatalf("batch %d after: %+v, want ns-op-lazy kept", i, d)
		}
	}
	// A regime the table knows nothing of: the rules again.
	other := measure(t, chains(), abortEvery(10)) // bfs-chain-eager
	if d = md.Observe(rated(other, 900)); d.Strategy != "bfs-chain-eager" || d.Learned {
		t.Fatalf("new regime: %+v, want the rules' bfs-chain-eager", d)
	}
	md.Observe(rated(other, 900))
	// Back in the first regime long after: bfs-chain-lazy's slow batch
	// is forgotten, ns-op-lazy's recent enough... run until both expire.
	for range cfg.Memory + 2 {
		d = md.Observe(rated(other, 900))
	}
	if d = md.Observe(rated(ms, 1000)); d.Learned || d.Strategy != "bfs-chain-lazy" {
		t.Errorf("after Memory batches: %+v, want the rules' choice tried again", d)
	}
}

// TestLearnedSwitchNeedsNoPatience: when measurements already show the
// rules' choice slower than a strategy known in the regime, the model
// switches to the known one without waiting out Patience.
func TestLearnedSwitchNeedsNoPatience(t *testing.T) {
	cfg := exact()
	cfg.Patience = 5
	md, err := adapt.New(cfg) // ns-op-eager
	if err != nil {
		t.Fatal(err)
	}
	ms := measure(t, chains(), abortEvery(10)) // the rules say bfs-chain-eager
	for range 5 {
		md.Observe(rated(ms, 500))
	}
	if md.Next().String() != "bfs-chain-eager" {
		t.Fatalf("after Patience batches: %s, want bfs-chain-eager", md.Next())
	}
	d := md.Observe(rated(ms, 1000)) // the rules' choice is faster: stays
	if d.Strategy != "bfs-chain-eager" || d.Learned {
		t.Fatalf("%+v", d)
	}
	if got := len(md.History(0)); got != 6 {
		t.Errorf("history holds %d records, want 6", got)
	}
}

func TestHistoryBounded(t *testing.T) {
	cfg := adapt.DefaultConfig()
	cfg.History = 4
	md, err := adapt.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ms := measure(t, spread(), abortEvery(0))
	for i := range 10 {
		ms.Batch = uint64(i + 1)
		d := md.Observe(ms)
		if d.DecideNs <= 0 {
			t.Errorf("batch %d: decide time %d ns, want it measured", i+1, d.DecideNs)
		}
	}
	h := md.History(0)
	if len(h) != 4 || h[0].Batch != 7 || h[3].Batch != 10 {
		t.Fatalf("history: %d records from batch %d; want 4, batches 7 to 10", len(h), h[0].Batch)
	}
	if h2 := md.History(2); len(h2) != 2 || h2[0].Batch != 9 || h2[1].Batch != 10 {
		t.Errorf("History(2): %+v", h2)
	}
	if h[3].Decision.Rule != "ns-op-eager" {
		t.Errorf("the record keeps the decision: %+v", h[3].Decision)
	}
}

func TestEmptyBatchChangesNothing(t *testing.T) {
	md, err := adapt.New(adapt.DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if d := md.Observe(adapt.Measurement{}); d.Strategy != "ns-op-eager" || d.Held || d.Learned {
			t.Fatalf("empty batch: %+v", d)
		}
	}
}

// TestRecordJSON: a Record's JSON carries the measurement's fields at the
// top and the decision with its reasons, as the HTTP API shows it.
func TestRecordJSON(t *testing.T) {
	cfg := exact()
	cfg.Patience = 2
	md, err := adapt.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	md.Observe(measure(t, chains(), abortEvery(10)))
	b, err := json.Marshal(md.History(0)[0])
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		Batch    uint64  `json:"batch"`
		Temporal int     `json:"temporal"`
		Abort    float64 `json:"abort_ratio"`
		Decision struct {
			Strategy string   `json:"strategy"`
			Rule     string   `json:"rule"`
			Held     bool     `json:"held"`
			Reasons  []string `json:"reasons"`
		} `json:"decision"`
	}
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	d := got.Decision
	if got.Batch != 1 || got.Temporal != 900 || got.Abort != 0.1 || d.Rule != "bfs-chain-eager" || d.Strategy != "ns-op-eager" || !d.Held ||
		len(d.Reasons) != 3 || !strings.HasPrefix(d.Reasons[2], "eager: 0.1 of the transactions abort") {
		t.Errorf("JSON %s", b)
	}
}

// TestNeedsCycles: cycles are counted before the first batch and after a
// batch whose temporal and parametric dependencies leave the unit to the
// cycles rule, not after one they settle; never for chain units, which
// find them themselves; always for a serial batch, which counts its
// dependencies only when analysed.
func TestNeedsCycles(t *testing.T) {
	cfg := exact()
	cfg.Patience, cfg.ProbeEvery = 1000, -1 // stays on ns-op-eager: operation units
	md, err := adapt.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if !md.NeedsCycles() {
		t.Error("before the first batch: cycles not needed")
	}
	for _, tc := range []struct {
		name  string
		batch []txn.Txn
		want  bool
	}{
		{"no temporal dependencies", spread(), false},
		{"long chains", chains(), true},
		{"many parametric dependencies", reading(), false},
		{"cyclic", cyclic(), true},
	} {
		md.Observe(measure(t, tc.batch, abortEvery(0)))
		if got := md.NeedsCycles(); got != tc.want || md.Next().String() != "ns-op-eager" {
			t.Errorf("after %s: NeedsCycles %v (next %s), want %v", tc.name, got, md.Next(), tc.want)
		}
	}

	cfg.Patience = 1
	if md, err = adapt.New(cfg); err != nil {
		t.Fatal(err)
	}
	md.Observe(measure(t, chains(), abortEvery(0)))
	if md.Next().String() != "bfs-chain-lazy" || md.NeedsCycles() {
		t.Errorf("chain units next (%s): NeedsCycles %v, want false", md.Next(), md.NeedsCycles())
	}

	cfg.SerialSkew, cfg.SerialAborts = 0.1, 0.3
	if md, err = adapt.New(cfg); err != nil {
		t.Fatal(err)
	}
	md.Observe(measure(t, spread(), abortEvery(0)))
	if md.NeedsCycles() {
		t.Fatal("no dependencies: cycles needed")
	}
	md.Observe(measure(t, hot(3), abortEvery(2)))
	if md.Next().String() != "serial" || !md.NeedsCycles() {
		t.Errorf("serial next (%s): NeedsCycles %v, want true", md.Next(), md.NeedsCycles())
	}
	if st := md.Stats(); st.Batches != 2 || st.Analysed != 1 || st.Switches != 2 {
		t.Errorf("stats %+v: want 2 batches, 1 analysed (the first), 2 switches", st)
	}
}

// TestBand: a measurement must cross a threshold by Band, from the side
// the current strategy is on, to change the choice; back across, the same.
func TestBand(t *testing.T) {
	cfg := adapt.DefaultConfig() // band 0.2, patience 1
	cfg.Thresholds = morph()
	initial, _ := txn.ParseStrategy("ns-op-lazy")
	cfg.Initial = &initial
	md, err := adapt.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ms := measure(t, spread(), abortEvery(0))
	ratio := func(r float64) adapt.Measurement {
		m := ms
		m.AbortRatio = r
		return m
	}
	th := cfg.EagerAborts // 0.02
	for _, step := range []struct {
		aborts float64
		want   string
	}{
		{th * 1.1, "ns-op-lazy"},   // past the threshold, not past the band
		{th * 1.25, "ns-op-eager"}, // past the band: eager
		{th * 0.9, "ns-op-eager"},  // back under the threshold, within the band
		{th * 0.75, "ns-op-lazy"},  // past the band the other way
	} {
		if d := md.Observe(ratio(step.aborts)); d.Strategy != step.want {
			t.Errorf("abort ratio %.4f: %s (reasons %q), want %s", step.aborts, d.Strategy, d.Reasons(), step.want)
		}
	}
	cfg.Band = 1
	if _, err := adapt.New(cfg); err == nil {
		t.Error("a band of 1 was accepted")
	}
}

// TestSerialRule: a hot key with many aborts runs serially; the serial
// batch's own measurement (the scheduler counts its dependencies without a
// TPG) keeps it there, and the model leaves when the aborts stop.
func TestSerialRule(t *testing.T) {
	cfg := exact()
	cfg.SerialSkew, cfg.SerialAborts = 0.1, 0.3
	md, err := adapt.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	d := md.Observe(measure(t, hot(3), abortEvery(2)))
	if d.Strategy != "serial" || len(d.Reasons()) != 4 || !strings.HasPrefix(d.Reasons()[3], "serial: skew 0.668 >= 0.1 and 0.5 of the transactions abort >= 0.3") {
		t.Fatalf("hot key, half the transactions aborting: %s, reasons %q", d.Strategy, d.Reasons())
	}
	ms := measureWith(t, "serial", hot(3), abortEvery(2))
	if ms.Skew != 0.668 || ms.Temporal == 0 || ms.Strategy != "serial" {
		t.Fatalf("serial measurement: skew %v, temporal %d", ms.Skew, ms.Temporal)
	}
	if d = md.Observe(ms); d.Strategy != "serial" {
		t.Errorf("after a serial batch: %s, reasons %q", d.Strategy, d.Reasons())
	}
	if d = md.Observe(measureWith(t, "serial", hot(3), abortEvery(0))); d.Strategy == "serial" || len(d.Reasons()) != 3 {
		t.Errorf("no more aborts: %s, reasons %q", d.Strategy, d.Reasons())
	}
}
