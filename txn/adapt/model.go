package adapt

import (
	"fmt"
	"math"
	"time"

	"github.com/sluicehq/sluice/txn"
)

// Config configures a Model. Zero fields take their defaults; the
// Thresholds take DefaultThresholds when all of them are zero.
type Config struct {
	Thresholds
	// Initial is the strategy of the first batch (default ns-op-eager,
	// the general choice). It must be a TPG strategy.
	Initial *txn.Strategy
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
	// Margin is how much faster, as a fraction, a measured strategy's
	// mean rate must be to override the rules or the current strategy
	// (default 0.1).
	Margin float64
	// Significance is how many standard errors the difference of two
	// strategies' mean rates must exceed, on top of Margin, for a measured
	// strategy to override the rules or the current strategy, and how far
	// below the prediction, in standard errors, a batch after a switch
	// must come out to be a misprediction (default 2). The standard error
	// comes from the dispersion of the batches' rates and how many
	// batches each mean rests on, so that one or two noisy batches do not
	// switch the strategy while a consistent difference does.
	Significance float64
	// Spread is the relative standard deviation of a batch's rate assumed
	// before it is measured (default 0.08, what one batch of 10,240
	// events varied by on the benchmark workloads): the prior a regime's
	// measured dispersion is pooled with, and the least assumed of a
	// strategy measured once.
	Spread float64
	// Tolerance is how much slower than predicted, as a fraction, the
	// batch after a switch may be before the switch counts as a
	// misprediction (default 0.10); it must also be slower by more than
	// Significance standard errors.
	Tolerance float64
	// Memory is how many batches a measurement stays in the learned table
	// (default 500).
	Memory int
	// History is how many Records the model keeps (default 256).
	History int
	// ProbeEvery: after this many batches in a row on one strategy in one
	// regime, the model runs one batch with a neighbour of it (one
	// dimension changed, in turn), to measure what the rules did not
	// choose; a neighbour that beats it (Margin and Significance) takes
	// over, otherwise the next batch goes back. Each probe that measures
	// its neighbour slower doubles the wait, up to 8 times ProbeEvery,
	// until the regime changes (default 16; negative: never probe).
	ProbeEvery int
}

// Defaults of Config.
const (
	DefaultPatience     = 1
	DefaultBand         = 0.2
	DefaultMargin       = 0.1
	DefaultSignificance = 2.0
	DefaultSpread       = 0.08
	DefaultTolerance    = 0.10
	DefaultMemory       = 500
	DefaultHistory      = 256
	DefaultProbe        = 16
)

// DefaultConfig returns the default configuration.
func DefaultConfig() Config {
	return Config{
		Thresholds:   DefaultThresholds(),
		Initial:      &txn.Strategy{Kind: txn.TPG, Explore: txn.NS, Unit: txn.OpUnit, Abort: txn.Eager},
		Band:         DefaultBand,
		Patience:     DefaultPatience,
		Margin:       DefaultMargin,
		Significance: DefaultSignificance,
		Spread:       DefaultSpread,
		Tolerance:    DefaultTolerance,
		Memory:       DefaultMemory,
		History:      DefaultHistory,
		ProbeEvery:   DefaultProbe,
	}
}

// withDefaults fills zero fields with DefaultConfig's.
func (c Config) withDefaults() (Config, error) {
	d := DefaultConfig()
	zero := Thresholds{}
	if c.Thresholds == zero {
		c.Thresholds = d.Thresholds
	}
	if c.Initial == nil {
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
	if c.Significance == 0 {
		c.Significance = d.Significance
	}
	if c.Spread == 0 {
		c.Spread = d.Spread
	}
	for name, v := range map[string]float64{"significance": c.Significance, "spread": c.Spread} {
		if !(v > 0) || math.IsInf(v, 0) {
			return c, fmt.Errorf("adapt: %s %v: want a number above 0 (0 takes the default)", name, v)
		}
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

// Model decides the strategy of each batch. It is not safe for concurrent
// use: one operator owns it and calls Next, NeedsCycles and Observe in
// turn; History and Stats may be read concurrently.
type Model struct {
	cfg     Config
	cur     txn.Strategy // the strategy for the next batch
	pending txn.Strategy // the rules' new choice waiting out Patience
	streak  int
	batches uint64
	table   map[regime]map[txn.Strategy]*learned

	// The last switch, to check its prediction: the strategy it left, the
	// regime it was decided in, the rate predicted and the variance of
	// that prediction.
	switched  bool
	before    txn.Strategy
	switchReg regime
	predicted float64
	predVar   float64

	// A learned choice (one that overrode the rules) stands in its regime
	// until a measured strategy beats it.
	over    bool
	overReg regime

	// Probing: batches in a row on one strategy in one regime, the
	// back-off (probes wait ProbeEvery << backoff batches; each probe that
	// measures its neighbour slower adds one, a new regime resets it), the
	// strategy a probe left (while it runs), the next neighbour to probe
	// and one to probe again first.
	stay      int
	backoff   uint8
	lastReg   regime
	probing   bool
	returnTo  txn.Strategy
	nextProbe int
	retry     txn.Strategy
	retrying  bool

	stats Stats
	hist  history

	// cycles: the last batch left the unit to the cycles rule.
	cycles bool
}

// New returns a Model.
func New(cfg Config) (*Model, error) {
	c, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	// Before the first batch the cycles are counted if the chain rule can
	// fire at all from operation units (chain units find them anyway): a
	// batch has fewer than one temporal dependency per operation.
	m := &Model{cfg: c, cur: *c.Initial, table: map[regime]map[txn.Strategy]*learned{}, cycles: c.ChainTemporal*(1+c.Band) < 1}
	m.hist.init(c.History)
	return m, nil
}

// Config returns the model's configuration, defaults filled.
func (md *Model) Config() Config { return md.cfg }

// Next returns the strategy to run the next batch with.
func (md *Model) Next() txn.Strategy { return md.cur }

// NeedsCycles reports whether the next batch should be analysed
// (txn.Config.Analyze). A batch under operation units counts the chains in
// cycles only then, which the rules need only where the last batch's
// temporal and parametric dependencies left the unit to the cycles rule
// (and before the first batch, unless ChainTemporal turns chain units
// off): counting them costs a pass over the parametric edges and a search
// over the chains, about 4% of the scheduler's time on Streaming Ledger.
// Chain units find the cycles themselves. A serial batch counts its
// dependencies only when analysed, and the rules need them to leave
// serial, so a serial batch always is.
func (md *Model) NeedsCycles() bool {
	switch {
	case md.cur.Kind == txn.Serial:
		return true
	case md.cur.Unit == txn.ChainUnit:
		return false
	}
	return md.cycles
}

// History returns up to n of the latest Records, oldest first (all of
// those kept when n <= 0).
func (md *Model) History(n int) []Record { return md.hist.last(n) }

// Stats returns what the model did so far.
func (md *Model) Stats() Stats { return md.hist.statsNow() }

// Observe takes the Measurement of the batch just run with Next's
// strategy, learns from it, and decides the strategy of the next batch.
// An empty batch (no operation) changes nothing.
//
// The rules choose from the measurement; the learned table of the
// workload's regime may override them, but only with a significant
// difference (Margin and Significance); a learned choice then stands until
// a measured strategy beats it; a batch right after a switch that comes
// out much slower than predicted sends the model back at once; and every
// ProbeEvery batches on one strategy (more when probes keep losing) a
// neighbour is measured.
func (md *Model) Observe(ms Measurement) Decision {
	t0 := time.Now()
	ran := md.cur
	d := Decision{Previous: ran.String(), Strategy: ran.String()}
	if ms.Ops == 0 {
		d.Rule, d.PredictedRate = ran.String(), ms.Rate
		d.DecideNs = time.Since(t0).Nanoseconds()
		md.hist.add(Record{Measurement: ms, Decision: d}, md.stats)
		return d
	}
	md.batches++
	md.stats.Batches++
	if md.NeedsCycles() {
		md.stats.Analysed++
	}
	probed := md.probing
	md.probing = false
	// home is the strategy the model stands on: the one a probe left.
	home := ran
	if probed {
		home = md.returnTo
	}
	rule, why := md.rules(&ms, home)
	d.Rule, d.why = rule.String(), why
	reg := regimeOf(rule, &ms)
	rates := md.known(reg)
	md.learn(rates, ran, ms.Rate)
	pool := pooled(rates, md.cfg.Spread)

	// A switch that turned out badly: the batch after it is slower than
	// predicted by more than Tolerance and than its dispersion explains.
	// One batch is evidence enough then, as the drop is large.
	if md.switched && !probed && reg == md.switchReg && ms.Rate > 0 {
		drop := md.predicted - ms.Rate
		se := math.Sqrt(md.predVar + pool*md.predicted*md.predicted)
		if drop > md.predicted*md.cfg.Tolerance && drop > md.cfg.Significance*se {
			d.Mispredicted = true
			md.stats.Mispredictions++
		}
	}

	// The target: the rules' choice, unless measurements beat it.
	target, over, z, compared := rule, rule, 0.0, false
	switch {
	case d.Mispredicted && rates[md.before] != nil:
		target = md.before
	case md.over && md.overReg == reg && home != rule && rates[home] != nil:
		// A learned choice stands until a measured strategy beats it,
		// so that noise does not send the model back and forth.
		target = home
		if s, zs, ok := md.fastest(rates, home, pool); ok {
			target, over, z, compared = s, home, zs, true
		}
	default:
		if s, zs, ok := md.fastest(rates, rule, pool); ok {
			target, z, compared = s, zs, true
		}
	}
	learned := target != rule

	switch {
	case target == home:
		md.cur, md.streak = home, 0
	case d.Mispredicted, md.supported(rates, target, home, pool):
		// Measured faster than where the model stands: switch at once.
		md.cur, md.streak = target, 0
	default:
		if target == md.pending {
			md.streak++
		} else {
			md.pending, md.streak = target, 1
		}
		if md.streak >= md.cfg.Patience {
			md.cur, md.streak = target, 0
		} else {
			md.cur, d.Held = home, true
		}
	}
	switch {
	case md.cur == rule:
		md.over = false
	case md.cur == target && learned:
		md.over, md.overReg = true, reg
	}
	if learned && md.cur == target {
		d.Learned = true
		md.stats.Learned++
		if !compared && rates[rule] != nil && rates[target] != nil {
			z, compared = zOf(rates[target], rates[rule], pool, md.cfg.Spread), true
		}
		if compared {
			d.Over, d.Z = over.String(), z
		}
	}

	if probed {
		md.probeDone(rates, ran, home)
	}
	md.maybeProbe(&d, &ms, rates, reg, ran, pool)

	// The prediction for the next batch: the mean measured of its
	// strategy in this regime, else of the one just run.
	d.PredictedRate, d.Spread = ms.Rate, math.Sqrt(pool)*ms.Rate
	predVar := pool * ms.Rate * ms.Rate
	for _, s := range []txn.Strategy{md.cur, home} {
		if l := rates[s]; l != nil {
			d.PredictedRate, d.Spread = l.mean, math.Sqrt(l.batchVar(pool, md.cfg.Spread))
			predVar = l.meanVar(pool, md.cfg.Spread)
			if s == md.cur {
				d.Samples = l.n
			}
			break
		}
	}
	// A switch is checked on the batch after it, unless it is a return:
	// from a probe, or from a misprediction (judging the return too would
	// make a machine that slows down for a while send the model back and
	// forth).
	md.switched = md.cur != ran && !d.Probe && md.cur != home && !d.Mispredicted
	if md.switched {
		md.before, md.switchReg, md.predicted, md.predVar = home, reg, d.PredictedRate, predVar
	}
	if md.cur != ran {
		md.stats.Switches++
	}
	d.Strategy = md.cur.String()
	d.DecideNs = time.Since(t0).Nanoseconds()
	md.hist.add(Record{Measurement: ms, Decision: d}, md.stats)
	return d
}

// supported reports whether target is measured and beats home, or home is
// not measured in the regime (there is nothing to beat).
func (md *Model) supported(rates map[txn.Strategy]*learned, target, home txn.Strategy, pool float64) bool {
	if rates[target] == nil {
		return false
	}
	if rates[home] == nil {
		return true
	}
	ok, _ := md.beats(rates, target, home, pool)
	return ok
}

// probeDone judges the probe of p from home that just ran: kept (it won),
// promising (faster by more than Margin but not yet significantly: probed
// again first next time, without back-off) or lost (the regime's probes
// back off).
func (md *Model) probeDone(rates map[txn.Strategy]*learned, p, home txn.Strategy) {
	switch lp, lh := rates[p], rates[home]; {
	case md.cur == p:
		md.stats.ProbesWon++
		md.backoff = 0
	case lp != nil && lh != nil && lp.mean > lh.mean*(1+md.cfg.Margin):
		md.retry, md.retrying = p, true
	default:
		md.backoff = min(md.backoff+1, maxBackoff)
	}
}

// maybeProbe counts the batches in a row on one strategy in one regime and
// starts a probe when there have been enough.
func (md *Model) maybeProbe(d *Decision, ms *Measurement, rates map[txn.Strategy]*learned, reg regime, ran txn.Strategy, pool float64) {
	if reg != md.lastReg {
		md.backoff = 0
	}
	if md.cur != ran || reg != md.lastReg {
		md.stay = 0
	}
	md.stay++
	md.lastReg = reg
	every := md.cfg.ProbeEvery << md.backoff
	if md.cfg.ProbeEvery <= 0 || md.cur != ran || ran.Kind != txn.TPG || d.Held || md.stay <= every {
		return
	}
	md.stay = 0
	n, ok := md.neighbour(ran, rates, pool, ms.AbortRatio > 0)
	if !ok {
		return
	}
	md.returnTo, md.cur = ran, n
	md.probing, d.Probe = true, true
	md.stats.Probes++
}
