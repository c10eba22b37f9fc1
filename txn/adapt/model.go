package adapt

import (
	"encoding/json"
	"fmt"
	"math"
	"time"

	"github.com/sluicehq/sluice/txn"
)

// Thresholds are the rules' thresholds. Dependencies are counted per
// operation of the batch, so that they do not depend on the punctuation.
type Thresholds struct {
	// StructuredDeps: structured exploration needs at least this many
	// dependencies (temporal and parametric edges) per operation...
	StructuredDeps float64 `json:"structured_deps" yaml:"structured_deps"`
	// StructuredSkew: ...and a skew below this.
	StructuredSkew float64 `json:"structured_skew" yaml:"structured_skew"`
	// DFSSkew: a structured batch with a skew at or above this is explored
	// depth first (no barrier per level), below it breadth first.
	DFSSkew float64 `json:"dfs_skew" yaml:"dfs_skew"`
	// ChainTemporal: chain units need at least this many temporal edges per
	// operation (chains long enough to be worth one unit)...
	ChainTemporal float64 `json:"chain_temporal" yaml:"chain_temporal"`
	// ChainParametric: ...at most this many parametric edges per operation
	// (a chain waits on the chains it reads)...
	ChainParametric float64 `json:"chain_parametric" yaml:"chain_parametric"`
	// ChainCyclic: ...and at most this share of the chains in cycles.
	ChainCyclic float64 `json:"chain_cyclic" yaml:"chain_cyclic"`
	// EagerOpCost: eager abort handling when an operation's function takes
	// at least this long on average...
	EagerOpCost time.Duration `json:"eager_op_cost" yaml:"eager_op_cost"`
	// EagerAborts: ...or when at least this share of the transactions
	// abort; lazy otherwise.
	EagerAborts float64 `json:"eager_aborts" yaml:"eager_aborts"`
	// SerialSkew and SerialAborts: a batch with a skew of at least
	// SerialSkew and at least SerialAborts of its transactions aborting
	// runs serially. A hot key then serialises much of the batch anyway,
	// and its aborts cascade down the key's chain, each cascade costing
	// the parallel strategies a pass, while one worker in timestamp order
	// runs every transaction once and builds no TPG.
	SerialSkew   float64 `json:"serial_skew" yaml:"serial_skew"`
	SerialAborts float64 `json:"serial_aborts" yaml:"serial_aborts"`
}

// DefaultThresholds returns the thresholds calibrated on Sluice's
// benchmark applications (BENCHMARKS.md, "Adaptive scheduling"). Depth
// first exploration never beat the best of breadth first and
// non-structured on them, so by default its range is empty (DFSSkew equals
// StructuredSkew); it stays reachable by configuration and by probes. The
// serial rule is kept for the extremes (a key that is half a worker's
// share, half the transactions aborting): in the hottest phase measured
// (skew 0.18, 47% aborts) serial ran at 0.92 of ns-op-eager in WebAssembly,
// where an operation costs enough for a second worker to pay, though it
// won natively.
func DefaultThresholds() Thresholds {
	return Thresholds{
		StructuredDeps:  0.8,
		StructuredSkew:  0.1,
		DFSSkew:         0.1,
		ChainTemporal:   0.2,
		ChainParametric: 0.3,
		ChainCyclic:     0.05,
		EagerOpCost:     20 * time.Microsecond,
		EagerAborts:     0.02,
		SerialSkew:      0.5,
		SerialAborts:    0.5,
	}
}

// Config configures a Model. Zero fields take their defaults.
type Config struct {
	Thresholds
	// Initial is the strategy of the first batch (default ns-op-eager,
	// the general choice). It must be a TPG strategy.
	Initial txn.Strategy
	// Band is the hysteresis of every threshold, as a fraction: a rule
	// leaves the current strategy's side of a threshold only when the
	// measurement is past the threshold by this much (default 0.2), so a
	// workload that sits near a threshold does not make the model flap.
	Band float64
	// Patience is how many batches in a row the rules must make the same
	// new choice before the model switches to it without measurements
	// that favour it (default 1: at once; Band already keeps it from
	// flapping).
	Patience int
	// Margin is how much faster, as a fraction, a measured strategy must
	// be to override the rules or the current strategy (default 0.1).
	Margin float64
	// Tolerance is how much slower than predicted, as a fraction, the
	// batch after a switch may be before the switch counts as a
	// misprediction (default 0.10).
	Tolerance float64
	// Memory is how many batches a measurement stays in the learned table
	// (default 500).
	Memory int
	// History is how many Records the model keeps (default 256).
	History int
	// ProbeEvery: after this many batches in a row on one strategy in one
	// regime, the model runs one batch with a neighbour of it (one
	// dimension changed, in turn), to measure what the rules did not
	// choose; a neighbour faster by more than Margin takes over, otherwise
	// the next batch goes back (default 16; negative: never probe).
	ProbeEvery int
}

// Defaults of Config.
const (
	DefaultPatience  = 1
	DefaultBand      = 0.2
	DefaultMargin    = 0.1
	DefaultTolerance = 0.10
	DefaultMemory    = 500
	DefaultHistory   = 256
	DefaultProbe     = 16
)

// DefaultConfig returns the default configuration.
func DefaultConfig() Config {
	return Config{
		Thresholds: DefaultThresholds(),
		Initial:    txn.Strategy{Kind: txn.TPG, Explore: txn.NS, Unit: txn.OpUnit, Abort: txn.Eager},
		Band:       DefaultBand,
		Patience:   DefaultPatience,
		Margin:     DefaultMargin,
		Tolerance:  DefaultTolerance,
		Memory:     DefaultMemory,
		History:    DefaultHistory,
		ProbeEvery: DefaultProbe,
	}
}

// withDefaults fills zero fields with DefaultConfig's.
func (c Config) withDefaults() (Config, error) {
	d := DefaultConfig()
	zero := Thresholds{}
	if c.Thresholds == zero {
		c.Thresholds = d.Thresholds
	}
	if c.Initial == (txn.Strategy{}) {
		c.Initial = d.Initial
	}
	if c.Initial.Kind != txn.TPG {
		return c, fmt.Errorf("adapt: initial strategy %s is not a TPG strategy", c.Initial)
	}
	if c.Patience <= 0 {
		c.Patience = d.Patience
	}
	if c.Band == 0 {
		c.Band = d.Band
	}
	if c.Band < 0 || c.Band >= 1 {
		return c, fmt.Errorf("adapt: band %v: want a fraction in [0, 1) (0 takes the default)", c.Band)
	}
	if c.Margin <= 0 {
		c.Margin = d.Margin
	}
	if c.Tolerance <= 0 {
		c.Tolerance = d.Tolerance
	}
	if c.Memory <= 0 {
		c.Memory = d.Memory
	}
	if c.History <= 0 {
		c.History = d.History
	}
	if c.ProbeEvery == 0 {
		c.ProbeEvery = d.ProbeEvery
	}
	t := c.Thresholds
	for name, v := range map[string]float64{
		"structured_deps": t.StructuredDeps, "structured_skew": t.StructuredSkew, "dfs_skew": t.DFSSkew,
		"chain_temporal": t.ChainTemporal, "chain_parametric": t.ChainParametric, "chain_cyclic": t.ChainCyclic,
		"eager_aborts": t.EagerAborts, "eager_op_cost": float64(t.EagerOpCost),
		"serial_skew": t.SerialSkew, "serial_aborts": t.SerialAborts,
	} {
		if v < 0 || math.IsNaN(v) {
			return c, fmt.Errorf("adapt: threshold %s is %v, want a number at least 0", name, v)
		}
	}
	return c, nil
}

// Decision is what the model chose after a batch, for the next one.
type Decision struct {
	// Strategy is the strategy of the next batch; Previous the one that
	// ran the batch measured.
	Strategy string `json:"strategy"`
	Previous string `json:"previous"`
	// Rule is the rules' choice; Reasons says why, one line per dimension.
	Rule string `json:"rule"`
	// Learned: measurements overrode the rules' choice.
	Learned bool `json:"learned,omitempty"`
	// Held: hysteresis kept the previous strategy although the choice
	// differs (Patience not reached).
	Held bool `json:"held,omitempty"`
	// PredictedRate is the throughput the model expects of the next batch
	// (events per second): what it measured of that strategy in this
	// regime, or of the batch just run when it knows nothing better.
	PredictedRate float64 `json:"predicted_rate"`
	// Mispredicted: the batch measured ran right after a switch and came
	// out slower than predicted by more than Tolerance.
	Mispredicted bool `json:"mispredicted,omitempty"`
	// Probe: the next batch runs a neighbour of the current strategy to
	// measure it (ProbeEvery).
	Probe bool `json:"probe,omitempty"`
	// DecideNs is the time deciding took, in nanoseconds.
	DecideNs int64 `json:"decide_ns"`

	// why holds what Reasons formats: deciding formats nothing. The
	// fourth is set when the serial rule fired.
	why [4]reason
}

// Reasons returns why the rules chose Rule: one line per dimension
// (exploration, unit, abort handling), naming the rule that fired and the
// measurements and thresholds it compared. Nil for an empty batch.
func (d Decision) Reasons() []string {
	var out []string
	for _, r := range d.why {
		if r.kind != 0 {
			out = append(out, r.String())
		}
	}
	return out
}

// MarshalJSON writes the Decision with its reasons.
func (d Decision) MarshalJSON() ([]byte, error) {
	type plain Decision // without the method
	return json.Marshal(struct {
		plain
		Reasons []string `json:"reasons,omitempty"`
	}{plain(d), d.Reasons()})
}

// reasonKind is which rule fired in one dimension.
type reasonKind uint8

const (
	_ reasonKind = iota
	whyBFS
	whyDFS
	whyNSFewDeps
	whyNSSkew
	whyOpCycles
	whyOpTemporal
	whyOpParametric
	whyChain
	whyEagerCost
	whyEagerAborts
	whyLazy
	whySerial
)

// reason is one dimension's rule and the figures it compared.
type reason struct {
	kind          reasonKind
	a, b, c, d, e float64
}

// String formats the reason.
func (r reason) String() string {
	switch r.kind {
	case whyBFS:
		return fmt.Sprintf("bfs: %.2f dependencies per operation >= %.2f and skew %.3g < %.3g", r.a, r.b, r.c, r.d)
	case whyDFS:
		return fmt.Sprintf("dfs: %.2f dependencies per operation >= %.2f and skew %.3g >= %.3g", r.a, r.b, r.c, r.d)
	case whyNSFewDeps:
		return fmt.Sprintf("ns: %.2f dependencies per operation < %.2f", r.a, r.b)
	case whyNSSkew:
		return fmt.Sprintf("ns: skew %.3g >= %.3g", r.a, r.b)
	case whyOpCycles:
		return fmt.Sprintf("op: %.3g of the chains in cycles > %.3g", r.a, r.b)
	case whyOpTemporal:
		return fmt.Sprintf("op: %.2f temporal dependencies per operation < %.2f", r.a, r.b)
	case whyOpParametric:
		return fmt.Sprintf("op: %.2f parametric dependencies per operation > %.2f", r.a, r.b)
	case whyChain:
		return fmt.Sprintf("chain: %.2f temporal >= %.2f and %.2f parametric <= %.2f per operation, %.3g of the chains in cycles", r.a, r.b, r.c, r.d, r.e)
	case whyEagerCost:
		return fmt.Sprintf("eager: an operation takes %v >= %v", time.Duration(r.a), time.Duration(r.b))
	case whyEagerAborts:
		return fmt.Sprintf("eager: %.3g of the transactions abort >= %.3g", r.a, r.b)
	case whySerial:
		return fmt.Sprintf("serial: skew %.3g >= %.3g and %.3g of the transactions abort >= %.3g", r.a, r.b, r.c, r.d)
	case whyLazy:
		return fmt.Sprintf("lazy: an operation takes %v < %v and %.3g abort < %.3g", time.Duration(r.a), time.Duration(r.b), r.c, r.d)
	}
	return "?"
}

// Record is one batch: what it measured and what the model decided after it.
type Record struct {
	Measurement
	Decision Decision `json:"decision"`
}

// regime is a workload class the learned table is kept per: the rules'
// choice and coarse buckets of what the rules weigh most.
type regime struct {
	rule           txn.Strategy
	aborts, opCost int8
}

// learned is a strategy's measured throughput in one regime.
type learned struct {
	rate float64 // exponentially weighted mean of the batches' rates
	n    int
	at   uint64 // batch of the last measurement
}

// ewmaWeight is the weight of a new measurement in a learned rate.
const ewmaWeight = 0.5

// Model decides the strategy of each batch. It is not safe for concurrent
// use: one operator owns it and calls Next and Observe in turn; History
// may be read concurrently.
type Model struct {
	cfg     Config
	cur     txn.Strategy // the strategy for the next batch
	pending txn.Strategy // the rules' new choice waiting out Patience
	streak  int
	batches uint64
	table   map[regime]map[txn.Strategy]*learned

	// The last switch, to check its prediction.
	switched  bool
	predicted float64

	// Probing: batches in a row on one strategy in one regime, the
	// strategy a probe left (while it runs), the next neighbour to probe.
	stay      int
	lastReg   regime
	probing   bool
	returnTo  txn.Strategy
	nextProbe int

	hist history

	// cycles: the last batch left the unit to the cycles rule.
	cycles bool
}

// New returns a Model.
func New(cfg Config) (*Model, error) {
	c, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	m := &Model{cfg: c, cur: c.Initial, table: map[regime]map[txn.Strategy]*learned{}, cycles: true}
	m.hist.init(c.History)
	return m, nil
}

// Config returns the model's configuration, defaults filled.
func (md *Model) Config() Config { return md.cfg }

// Next returns the strategy to run the next batch with.
func (md *Model) Next() txn.Strategy { return md.cur }

// NeedsCycles reports whether the next batch's measurement should count
// the chains in cycles (txn.Config.Analyze): only when the last batch's
// temporal and parametric dependencies left the unit to the cycles rule
// (and before the first batch). Counting them costs a pass over the
// parametric edges and a search over the chains, a few percent of the
// scheduler's time on Streaming Ledger.
func (md *Model) NeedsCycles() bool { return md.cycles }

// History returns up to n of the latest Records, oldest first (all of
// those kept when n <= 0).
func (md *Model) History(n int) []Record { return md.hist.last(n) }

// Observe takes the Measurement of the batch just run with Next's
// strategy, learns from it, and decides the strategy of the next batch.
// An empty batch (no operation) changes nothing.
func (md *Model) Observe(ms Measurement) Decision {
	t0 := time.Now()
	ran := md.cur
	d := Decision{Previous: ran.String(), Strategy: ran.String()}
	if ms.Ops == 0 {
		d.Rule, d.PredictedRate = ran.String(), ms.Rate
		d.DecideNs = time.Since(t0).Nanoseconds()
		md.hist.add(Record{Measurement: ms, Decision: d})
		return d
	}
	md.batches++
	rule, why := md.rules(&ms, ran)
	d.Rule, d.why = rule.String(), why
	reg := md.regimeOf(rule, &ms)
	known := md.known(reg)
	probed := md.probing
	md.probing = false
	if md.switched && !probed && ms.Rate < md.predicted*(1-md.cfg.Tolerance) {
		d.Mispredicted = true
	}
	md.learn(reg, ran, ms.Rate)

	// The rules' choice, unless the measurements of this regime know a
	// faster strategy.
	// One batch's rate is noisy: a strategy overrides the rules on two
	// batches' evidence or more, or on one right after a misprediction
	// (the strategy that was running before the switch) or a probe.
	choice := rule
	if r, ok := known[rule]; ok {
		for s, l := range known {
			trusted := l.n >= 2 || d.Mispredicted || (probed && s == ran)
			if trusted && l.rate > r.rate*(1+md.cfg.Margin) && l.rate > known[choice].rate {
				choice, d.Learned = s, true
			}
		}
	}
	switch {
	case choice == ran:
		md.streak = 0
	case probed && !better(known, ran, md.returnTo, md.cfg.Margin):
		// The probe was not faster: back to where it came from.
		md.cur, md.streak = md.returnTo, 0
	case d.Learned && better(known, choice, ran, md.cfg.Margin):
		// Measured faster than the current strategy: switch at once.
		md.cur, md.streak = choice, 0
	default:
		if choice == md.pending {
			md.streak++
		} else {
			md.pending, md.streak = choice, 1
		}
		if md.streak >= md.cfg.Patience {
			md.cur, md.streak = choice, 0
		} else {
			d.Held = true
		}
	}
	if md.cur != ran || reg != md.lastReg {
		md.stay = 0
	}
	md.stay++
	md.lastReg = reg
	if md.cfg.ProbeEvery > 0 && md.cur == ran && ran.Kind == txn.TPG && !d.Held && md.stay > md.cfg.ProbeEvery {
		md.returnTo, md.cur = ran, md.neighbour(ran)
		md.probing, d.Probe, md.stay = true, true, 0
	}
	d.Strategy = md.cur.String()
	d.PredictedRate = ms.Rate
	if l, ok := known[md.cur]; ok {
		d.PredictedRate = l.rate
	}
	md.switched, md.predicted = md.cur != ran, d.PredictedRate
	d.DecideNs = time.Since(t0).Nanoseconds()
	md.hist.add(Record{Measurement: ms, Decision: d})
	return d
}

// neighbour returns the next of s's neighbours to probe: s with one
// dimension changed, the dimensions in turn (exploration twice, as it has
// three choices).
func (md *Model) neighbour(s txn.Strategy) txn.Strategy {
	n := s
	switch md.nextProbe % 4 {
	case 0:
		n.Explore = (s.Explore + 1) % 3
	case 1:
		n.Unit = 1 - s.Unit
	case 2:
		n.Explore = (s.Explore + 2) % 3
	default:
		n.Abort = 1 - s.Abort
	}
	md.nextProbe++
	return n
}

// better reports whether a is measured faster than b by more than margin
// (false when b was never measured: there is nothing to beat).
func better(known map[txn.Strategy]*learned, a, b txn.Strategy, margin float64) bool {
	la, oka := known[a]
	lb, okb := known[b]
	return oka && (!okb || la.rate > lb.rate*(1+margin))
}

// known returns the regime's learned rates that are recent enough,
// forgetting the others.
func (md *Model) known(reg regime) map[txn.Strategy]*learned {
	t := md.table[reg]
	if t == nil {
		t = map[txn.Strategy]*learned{}
		md.table[reg] = t
	}
	for s, l := range t {
		if l.at+uint64(md.cfg.Memory) < md.batches {
			delete(t, s)
		}
	}
	return t
}

// learn folds a batch's rate into the regime's entry for strategy s.
func (md *Model) learn(reg regime, s txn.Strategy, rate float64) {
	if rate <= 0 || math.IsInf(rate, 0) || math.IsNaN(rate) {
		return
	}
	t := md.table[reg]
	l := t[s]
	if l == nil {
		t[s] = &learned{rate: rate, n: 1, at: md.batches}
		return
	}
	l.rate += ewmaWeight * (rate - l.rate)
	l.n++
	l.at = md.batches
}

// rules applies the thresholds to a measurement: the rules' strategy and
// one reason per dimension. Each threshold is moved by Band towards the
// side the current strategy cur is on, so that a measurement must cross it
// clearly to change the choice. Logical dependencies are left out of the
// structure rule: Sluice's TPG does not order the operations of a
// transaction (abort atomicity is a per-transaction status), so they add no
// level.
func (md *Model) rules(ms *Measurement, cur txn.Strategy) (txn.Strategy, [4]reason) {
	th := &md.cfg.Thresholds
	band := md.cfg.Band
	// at returns the threshold t as seen from the current strategy: lower
	// when the current strategy is on the side of x >= t, higher when not.
	at := func(t float64, onHighSide bool) float64 {
		if onHighSide {
			return t * (1 - band)
		}
		return t * (1 + band)
	}
	st := txn.Strategy{Kind: txn.TPG}
	var why [4]reason

	deps := ms.perOp(ms.Temporal + ms.Parametric)
	tDeps := at(th.StructuredDeps, cur.Explore != txn.NS)
	tSkew := at(th.StructuredSkew, cur.Explore == txn.NS)
	tDFS := at(th.DFSSkew, cur.Explore == txn.DFS)
	switch {
	case deps < tDeps:
		st.Explore = txn.NS
		why[0] = reason{kind: whyNSFewDeps, a: deps, b: tDeps}
	case ms.Skew >= tSkew:
		st.Explore = txn.NS
		why[0] = reason{kind: whyNSSkew, a: ms.Skew, b: tSkew}
	case ms.Skew >= tDFS:
		st.Explore = txn.DFS
		why[0] = reason{kind: whyDFS, a: deps, b: tDeps, c: ms.Skew, d: tDFS}
	default:
		st.Explore = txn.BFS
		why[0] = reason{kind: whyBFS, a: deps, b: tDeps, c: ms.Skew, d: tDFS}
	}

	td, pd, cyc := ms.perOp(ms.Temporal), ms.perOp(ms.Parametric), ms.cyclicShare()
	tCyc := at(th.ChainCyclic, cur.Unit == txn.OpUnit)
	tTD := at(th.ChainTemporal, cur.Unit == txn.ChainUnit)
	tPD := at(th.ChainParametric, cur.Unit == txn.OpUnit)
	md.cycles = td >= tTD && pd <= tPD
	switch {
	case cyc > tCyc:
		st.Unit = txn.OpUnit
		why[1] = reason{kind: whyOpCycles, a: cyc, b: tCyc}
	case td < tTD:
		st.Unit = txn.OpUnit
		why[1] = reason{kind: whyOpTemporal, a: td, b: tTD}
	case pd > tPD:
		st.Unit = txn.OpUnit
		why[1] = reason{kind: whyOpParametric, a: pd, b: tPD}
	default:
		st.Unit = txn.ChainUnit
		why[1] = reason{kind: whyChain, a: td, b: tTD, c: pd, d: tPD, e: cyc}
	}

	cost := ms.OpCostNs
	tCost := at(float64(th.EagerOpCost), cur.Abort == txn.Eager)
	tAborts := at(th.EagerAborts, cur.Abort == txn.Eager)
	switch {
	case cost >= tCost:
		st.Abort = txn.Eager
		why[2] = reason{kind: whyEagerCost, a: cost, b: tCost}
	case ms.AbortRatio >= tAborts:
		st.Abort = txn.Eager
		why[2] = reason{kind: whyEagerAborts, a: ms.AbortRatio, b: tAborts}
	default:
		st.Abort = txn.Lazy
		why[2] = reason{kind: whyLazy, a: cost, b: tCost, c: ms.AbortRatio, d: tAborts}
	}

	tSS := at(th.SerialSkew, cur.Kind == txn.Serial)
	tSA := at(th.SerialAborts, cur.Kind == txn.Serial)
	if ms.Skew >= tSS && ms.AbortRatio >= tSA {
		why[3] = reason{kind: whySerial, a: ms.Skew, b: tSS, c: ms.AbortRatio, d: tSA}
		return txn.Strategy{Kind: txn.Serial}, why
	}
	return st, why
}

// regimeOf classes a measurement for the learned table: the rules'
// choice, whether any transaction aborted and how many (under 1%, 10%,
// more), and the operation cost by decade from 1 us. The classes are
// coarse on purpose: a batch's sampled cost and abort ratio wobble, and a
// regime split in two learns half as fast.
func (md *Model) regimeOf(rule txn.Strategy, ms *Measurement) regime {
	return regime{
		rule:   rule,
		aborts: decade(ms.AbortRatio, 0.001),
		opCost: decade(ms.OpCostNs, 1000),
	}
}

// decade classes x by powers of 10 from unit: 0 below unit, then 1, 2, ...
// (at most 9).
func decade(x, unit float64) int8 {
	if !(x >= unit) {
		return 0
	}
	return int8(min(1+int(math.Log10(x/unit)), 9))
}
