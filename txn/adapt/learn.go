package adapt

import (
	"math"

	"github.com/sluicehq/sluice/txn"
)

// regime is a workload class the learned table is kept per: the rules'
// choice and coarse classes of what decides between strategies.
type regime struct {
	rule                 txn.Strategy
	skew, aborts, opCost int8
}

// regimeOf classes a measurement for the learned table: the rules'
// choice, the skew by decade from 0.03 (below 0.03, to 0.3, to 3, above),
// whether any transaction aborted and how many (under 0.1%, 1%, 10%,
// more), and the operation cost by decade from 1 µs. The classes are coarse
// on purpose: a batch's sampled cost, skew and abort ratio wobble, and a
// regime split in two learns half as fast. The skew's boundaries sit
// between the skews the benchmark workloads produce (0.0003-0.005, 0.04,
// 0.1-0.2, 0.6), so that a phase does not straddle two classes.
func regimeOf(rule txn.Strategy, ms *Measurement) regime {
	return regime{
		rule:   rule,
		skew:   decade(ms.Skew, 0.03),
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

// learned is a strategy's measured throughput in one regime: a running
// mean and variance of its batches' rates (see ewmaWeight).
type learned struct {
	mean, vari float64
	n          int
	at         uint64 // batch of the last measurement
}

const (
	// ewmaWeight is the least weight of a new batch in a learned mean and
	// variance: equal weights over the first 8 batches, then exponential.
	// The mean then averages about (2-w)/w = 15 batches (maxSamples),
	// near the 20 of a benchmark phase, and forgets older ones, so that a
	// regime whose workload drifts is judged on what it does now.
	ewmaWeight = 0.125
	maxSamples = (2 - ewmaWeight) / ewmaWeight
	// priorWeight is the weight, in batches, of the prior relative spread
	// (Config.Spread) in a regime's pooled spread, and of the pooled
	// spread in a strategy's: with few batches the measured dispersion is
	// itself noisy, and two batches that happen to agree must not make a
	// small difference look significant.
	priorWeight = 2
	// staleAfter: a rate last measured more than this many batches ago
	// (the span of two means) is not evidence to switch on, nor to skip a
	// probe: a regime spans workloads that differ in what its classes do
	// not see (Streaming Ledger's deposit ratio, for one), and one old
	// batch of a strategy set against the current mean of another would
	// compare two workloads. It still predicts, and is forgotten after
	// Memory batches.
	staleAfter = 2 * maxSamples
	// maxBackoff bounds the back-off of probes: at most ProbeEvery << 3
	// batches between two probes.
	maxBackoff = 3
)

// add folds a batch's rate in.
func (l *learned) add(rate float64) {
	l.n++
	w := max(1/float64(l.n), ewmaWeight)
	d := rate - l.mean
	l.mean += w * d
	l.vari = (1 - w) * (l.vari + w*d*d)
}

// samples is how many batches the mean is worth.
func (l *learned) samples() float64 { return min(float64(l.n), maxSamples) }

// relVar is the strategy's measured relative variance (the variance of a
// batch's rate over the squared mean, corrected for the few batches it
// rests on) and the degrees of freedom behind it (0 for one batch).
func (l *learned) relVar() (v, dof float64) {
	k := l.samples()
	if k < 2 || l.mean <= 0 {
		return 0, 0
	}
	return l.vari * k / (k - 1) / (l.mean * l.mean), k - 1
}

// pooled returns the regime's relative variance of one batch's rate: the
// measured strategies' pooled with the prior spread, weighted by their
// degrees of freedom.
func pooled(rates map[txn.Strategy]*learned, spread float64) float64 {
	sum, dof := priorWeight*spread*spread, float64(priorWeight)
	for _, l := range rates {
		v, k := l.relVar()
		sum += k * v
		dof += k
	}
	return sum / dof
}

// batchVar returns the variance of one batch's rate of l: its own
// relative variance shrunk towards the regime's pooled one, times its
// squared mean. A strategy measured once has no dispersion of its own: it
// takes the pooled one or the prior spread, whichever is larger, so that
// a regime whose other strategies happened to vary little does not make
// one batch conclusive.
func (l *learned) batchVar(pool, spread float64) float64 {
	v, k := l.relVar()
	rel := max(pool, spread*spread)
	if k > 0 {
		rel = (k*v + priorWeight*pool) / (k + priorWeight)
	}
	return rel * l.mean * l.mean
}

// meanVar is the variance of l's mean.
func (l *learned) meanVar(pool, spread float64) float64 {
	return l.batchVar(pool, spread) / l.samples()
}

// zOf returns how many standard errors a's mean is above b's.
func zOf(a, b *learned, pool, spread float64) float64 {
	se := math.Sqrt(a.meanVar(pool, spread) + b.meanVar(pool, spread))
	if se == 0 {
		return math.Inf(1)
	}
	return (a.mean - b.mean) / se
}

// beats reports whether strategy a is measured faster than b in rates by
// more than Margin and significantly (by more than Significance standard
// errors of the difference); false when either is unmeasured or was last
// measured more than staleAfter batches ago. z is the difference in
// standard errors.
func (md *Model) beats(rates map[txn.Strategy]*learned, a, b txn.Strategy, pool float64) (ok bool, z float64) {
	la, lb := rates[a], rates[b]
	if la == nil || lb == nil || a == b || md.stale(la) || md.stale(lb) {
		return false, 0
	}
	if la.mean <= lb.mean*(1+md.cfg.Margin) {
		return false, 0
	}
	z = zOf(la, lb, pool, md.cfg.Spread)
	return z > md.cfg.Significance, z
}

// stale reports whether l was last measured more than staleAfter batches
// ago.
func (md *Model) stale(l *learned) bool { return float64(l.at)+staleAfter < float64(md.batches) }

// fastest returns the fastest strategy that beats base in rates, if any.
func (md *Model) fastest(rates map[txn.Strategy]*learned, base txn.Strategy, pool float64) (best txn.Strategy, z float64, ok bool) {
	for s, l := range rates {
		if ok && l.mean <= rates[best].mean {
			continue
		}
		if b, zs := md.beats(rates, s, base, pool); b {
			best, z, ok = s, zs, true
		}
	}
	return best, z, ok
}

// known returns the regime's learned rates, forgetting those measured
// more than Memory batches ago.
func (md *Model) known(reg regime) map[txn.Strategy]*learned {
	rates := md.table[reg]
	if rates == nil {
		rates = map[txn.Strategy]*learned{}
		md.table[reg] = rates
	}
	for s, l := range rates {
		if l.at+uint64(md.cfg.Memory) < md.batches {
			delete(rates, s)
		}
	}
	return rates
}

// learn folds a batch's rate into the entry for strategy s.
func (md *Model) learn(rates map[txn.Strategy]*learned, s txn.Strategy, rate float64) {
	if rate <= 0 || math.IsInf(rate, 0) || math.IsNaN(rate) {
		return
	}
	l := rates[s]
	if l == nil {
		l = &learned{}
		rates[s] = l
	}
	l.add(rate)
	l.at = md.batches
}

// neighbour returns the neighbour of s to probe next: s with one
// dimension changed, the dimensions in turn (exploration twice, as it has
// three choices), skipping those not worth a batch: the lazy neighbour
// when the batch just measured had aborts (lazy re-runs the batch for
// them: it lost wherever transactions aborted), and neighbours measured
// significantly slower than s in the regime lately (beats). A neighbour whose last probe
// came out faster but not significantly so is probed again first.
func (md *Model) neighbour(s txn.Strategy, rates map[txn.Strategy]*learned, pool float64, aborts bool) (txn.Strategy, bool) {
	ok := func(n txn.Strategy) bool {
		if aborts && n.Abort == txn.Lazy {
			return false
		}
		slower, _ := md.beats(rates, s, n, pool)
		return !slower
	}
	if md.retrying {
		md.retrying = false
		if r := md.retry; differ(r, s) == 1 && ok(r) {
			return r, true
		}
	}
	for range 4 {
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
		if ok(n) {
			return n, true
		}
	}
	return txn.Strategy{}, false
}

// differ counts the dimensions in which two TPG strategies differ.
func differ(a, b txn.Strategy) int {
	n := 0
	if a.Kind != b.Kind {
		return 4
	}
	if a.Explore != b.Explore {
		n++
	}
	if a.Unit != b.Unit {
		n++
	}
	if a.Abort != b.Abort {
		n++
	}
	return n
}
