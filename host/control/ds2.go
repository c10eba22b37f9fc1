package control

import (
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/sluicehq/sluice/host/api/schema"
)

// DS2Config is the DS2 auto-scaler's configuration.
type DS2Config struct {
	// Interval is the least time between two of DS2's decisions.
	Interval time.Duration
	// WarmUp is how long after any change of an operator's worker count
	// (by any policy, or by hand) DS2 decides nothing: the rates then
	// mix the old and the new configuration.
	WarmUp time.Duration
	// Activation is how many consecutive rounds must compute the same
	// worker count for an operator before DS2 proposes it, counting
	// only rounds whose windows do not overlap (a round a window after
	// the last one counted): rounds a period apart share most of their
	// window, and one short dip in a measured rate (a pause of the
	// machine) would be seen by every one of them.
	Activation int
	// DeadBand: a computed count within DeadBand workers of the current
	// one is ignored.
	DeadBand int
	// ScalingFactor is headroom: the computed count is multiplied by
	// 1 + ScalingFactor (before it is rounded up).
	ScalingFactor float64
}

// DefaultDS2Config returns the defaults: interval 10s, warm-up 10s,
// activation 2, dead band 1, scaling factor 0.
func DefaultDS2Config() DS2Config {
	return DS2Config{Interval: 10 * time.Second, WarmUp: 10 * time.Second, Activation: 2, DeadBand: 1}
}

// DS2 is the DS2 auto-scaler: it sizes each stateless or keyed operator
// from true rates, measured over useful time rather than wall time.
//
// Each round, for each operator, the true processing rate per worker is
// the upper median of its workers' records run per useful (busy) second
// (robust to a minority of stragglers), and its selectivity the records
// they wrote per record run. The target
// input rate of each operator follows in topological order: a source's
// rate is what was read from it plus its backlog's growth (the rate at
// which records arrive, so a pipeline falling behind asks for more), over
// the view's span or over its latest interval when that is higher (a
// span that straddles a step up in the rate would size for its mean);
// an operator's target is the sum of its inputs' (an operator's output
// target is its input target times its selectivity). An operator needs
// ceil(target / rate per worker × (1 + ScalingFactor)) workers, within
// the view's bounds.
//
// A count that was rolled back is not proposed again for its operator
// until the computed count changes. No scale-in is proposed while a
// source's latest interval is more than fallBand under its span's rate
// (the span straddles a fall, and its mean is neither rate), nor while a
// source's backlog shrinks by more than backlogNoise of its read rate
// (the formula sizes for the arrival rate, and the records that waited
// need the capacity until they are worked off), nor while one grows by
// more than that: the job does not keep up, whatever the formula makes
// of the workers' true rates (a job whose workers are idle while records
// pile up is held back by something else, which fewer workers do not
// cure and may make worse). A scale-in goes no further than the
// fewest workers that leave the busiest at most maxScaleInUtilization
// busy at the target rate (a keyed operator's key groups spread over them
// as the executor spreads them, each worker at its own true rate: a
// straggler, or groups of unequal rates, count), and none is proposed
// when only the current count does: a count that runs its workers at
// capacity would be rolled back for its delays. Transactional operators are never
// resized. A count is proposed (one operator per round, the first in topological
// order) when it differs from the current one by more than DeadBand, the
// last Activation rounds over windows that do not overlap computed it
// (and every round between them), no worker count changed in the
// last WarmUp and DS2's last decision is at least Interval old.
type DS2 struct {
	cfg        DS2Config
	at         time.Time      // the last sample judged
	workers    map[string]int // worker counts at the last sample
	rescaledAt time.Time      // when a worker count last changed
	decidedAt  time.Time      // when DS2's last applied decision was proposed
	proposedAt time.Time      // when DS2 last proposed
	streaks    map[string]streak
	vetoed     map[string]int // operator -> a count rolled back
	// measured is each worker's last measured true rate, by operator
	// and worker id: a worker that runs nothing now (its key groups
	// moved off it) is as slow as it was.
	measured map[string]map[int]float64
	overMax  []string // operators at MaxWorkers whose computed count is over it (last Propose)
}

// streak is how many consecutive rounds, over windows that do not
// overlap, computed the same count; at is the sample time of the last
// round counted.
type streak struct {
	to, rounds int
	at         time.Time
}

// NewDS2 returns a DS2 auto-scaler; zero durations and a zero
// activation take DefaultDS2Config's values.
func NewDS2(cfg DS2Config) (*DS2, error) {
	def := DefaultDS2Config()
	if cfg.Interval == 0 {
		cfg.Interval = def.Interval
	}
	if cfg.WarmUp == 0 {
		cfg.WarmUp = def.WarmUp
	}
	if cfg.Activation == 0 {
		cfg.Activation = def.Activation
	}
	switch {
	case cfg.Interval < 0:
		return nil, fmt.Errorf("%w: ds2 interval %v is not positive", ErrBadConfig, cfg.Interval)
	case cfg.WarmUp < 0:
		return nil, fmt.Errorf("%w: ds2 warm_up %v is not positive", ErrBadConfig, cfg.WarmUp)
	case cfg.Activation < 1:
		return nil, fmt.Errorf("%w: ds2 activation %d is under 1", ErrBadConfig, cfg.Activation)
	case cfg.DeadBand < 0:
		return nil, fmt.Errorf("%w: ds2 dead_band %d is negative", ErrBadConfig, cfg.DeadBand)
	case cfg.ScalingFactor < 0 || math.IsNaN(cfg.ScalingFactor) || math.IsInf(cfg.ScalingFactor, 0):
		return nil, fmt.Errorf("%w: ds2 scaling_factor %v is negative or not a number", ErrBadConfig, cfg.ScalingFactor)
	}
	return &DS2{cfg: cfg, workers: map[string]int{}, streaks: map[string]streak{}, vetoed: map[string]int{}, measured: map[string]map[int]float64{}}, nil
}

// OverMax returns the operators that run MaxWorkers and whose count, as
// DS2 computed it at its last Propose without the bound, is over it.
func (d *DS2) OverMax() []string { return slices.Clone(d.overMax) }

// Name returns "ds2".
func (d *DS2) Name() string { return "ds2" }

// Outcome starts the interval when a decision of DS2's was applied, and
// remembers a count that was rolled back.
func (d *DS2) Outcome(dec schema.Decision) {
	switch dec.Outcome {
	case OutcomeApplied:
		d.decidedAt = d.proposedAt
		clear(d.streaks)
	case OutcomeRolledBack:
		d.vetoed[dec.Action.Operator] = dec.Action.To
	}
}

// ds2Operator is one operator's measurements and targets in a round.
type ds2Operator struct {
	sample      *OperatorSample
	rate        float64 // true processing rate per worker (0: unknown)
	outRate     float64 // true output rate per worker
	selectivity float64
	target      float64 // target input rate
	rates       *OperatorRates
	done        bool
}

// Propose computes each operator's worker count and proposes one when
// the settings allow.
func (d *DS2) Propose(v *View) (*Proposal, []schema.Finding) {
	first, last, ok := v.Span(viewSpan(v))
	if !ok || last.At.Equal(d.at) {
		return nil, nil
	}
	d.at = last.At
	d.overMax = nil
	for _, op := range last.Operators {
		if n, ok := d.workers[op.Name]; ok && n != len(op.Workers) {
			d.rescaledAt = last.At
		}
		d.workers[op.Name] = len(op.Workers)
	}
	if !d.rescaledAt.IsZero() && last.At.Sub(d.rescaledAt) < d.cfg.WarmUp {
		clear(d.streaks)
		return nil, nil
	}
	span := last.At.Sub(first.At)
	secs := span.Seconds()
	sources := map[string]float64{}
	var evidence []schema.Evidence
	prev, _, recent := v.Latest()
	recent = recent && prev.At.After(first.At)
	falling := false  // a source's latest interval is well under its span's rate
	draining := false // a source's backlog shrinks: the job works off records that waited
	growing := false  // a source's backlog grows: the job does not keep up
	for _, s := range last.Sources {
		rate := sourceRate(first, s, secs)
		if t, ok := sourceTrend(first, s, secs); ok {
			draining = draining || t.drains()
			growing = growing || t.grows()
		}
		evidence = append(evidence, schema.Evidence{Name: "arrival rate of source " + s.Name + " (read and backlog growth)", Value: rate, Unit: "records/s"})
		if recent {
			// A span that straddles a rise in the rate under-sizes: the
			// latest interval, when higher, sizes for the new rate at
			// once. One that straddles a fall sizes for neither rate: no
			// scale-in is taken on it, and the fall is followed once the
			// span holds only the new rate.
			switch r := sourceRate(prev, s, last.At.Sub(prev.At).Seconds()); {
			case r > rate:
				rate = r
				evidence = append(evidence, schema.Evidence{Name: "arrival rate of source " + s.Name + " in the latest interval (higher: sized for)", Value: rate, Unit: "records/s"})
			case r < rate*(1-fallBand):
				falling = true
			}
		}
		sources[s.Name] = rate
	}
	ops := map[string]*ds2Operator{}
	var order []*ds2Operator
	for i := range last.Operators {
		op := &last.Operators[i]
		o := &ds2Operator{sample: op, selectivity: 1}
		if r, ok := Rates(first, last, op.Name); ok {
			d.remember(&r)
			o.rates = &r
			var recs, out float64
			var rates []float64
			for _, w := range r.Workers {
				recs += float64(w.Records)
				if w.Service > 0 {
					out += w.OutService * float64(w.Records) / w.Service
					rates = append(rates, w.Service)
				}
			}
			if recs > 0 {
				o.selectivity = out / recs
			}
			if len(rates) > 0 {
				// The upper median of the workers' true rates: DS2 sizes
				// for workers alike, and a minority of slow ones
				// (stragglers, the straggler detector's business) must
				// not make every worker count as slow.
				slices.Sort(rates)
				o.rate = rates[len(rates)/2]
				o.outRate = o.rate * o.selectivity
			}
		}
		ops[op.Name] = o
	}
	// Targets in topological order (inputs first).
	var visit func(o *ds2Operator, depth int) float64
	visit = func(o *ds2Operator, depth int) float64 {
		if o.done || depth > len(ops) {
			return o.target
		}
		for _, in := range o.sample.Inputs {
			if u, ok := ops[in]; ok {
				o.target += visit(u, depth+1) * u.selectivity
			} else {
				o.target += sources[in]
			}
		}
		o.done = true
		order = append(order, o)
		return o.target
	}
	for i := range last.Operators {
		visit(ops[last.Operators[i].Name], 0)
	}
	var chosen *Proposal
	for _, o := range order {
		op := o.sample
		if !op.Resizable || op.Kind == "transactional" || o.rate <= 0 {
			delete(d.streaks, op.Name)
			continue
		}
		p := len(op.Workers)
		want := DS2Workers(o.target, o.rate, d.cfg.ScalingFactor, v.MinWorkers, v.MaxWorkers)
		if p >= v.MaxWorkers && DS2Workers(o.target, o.rate, d.cfg.ScalingFactor, v.MinWorkers, 0) > v.MaxWorkers {
			d.overMax = append(d.overMax, op.Name)
		}
		if want < p && (falling || draining || growing) {
			delete(d.streaks, op.Name)
			continue
		}
		formula := want
		for want < p && busyAfterScaleIn(o, want, d.measured[op.Name]) > maxScaleInUtilization {
			want++ // no headroom left at that count: one more
		}
		if to, ok := d.vetoed[op.Name]; ok && to != want {
			delete(d.vetoed, op.Name)
		}
		if to, ok := d.vetoed[op.Name]; abs(want-p) <= d.cfg.DeadBand || (ok && to == want) {
			delete(d.streaks, op.Name)
			continue
		}
		s := d.streaks[op.Name]
		switch {
		case s.to != want:
			s = streak{to: want, rounds: 1, at: last.At}
		case last.At.Sub(s.at) >= span*9/10: // a window on (to within a tenth: rounds jitter)
			s.rounds++
			s.at = last.At
		}
		d.streaks[op.Name] = s
		if chosen != nil || s.rounds < d.cfg.Activation || (!d.decidedAt.IsZero() && last.At.Sub(d.decidedAt) < d.cfg.Interval) {
			continue
		}
		ev := append([]schema.Evidence{
			{Name: "target input rate of " + op.Name, Value: o.target, Unit: "records/s"},
			{Name: "true processing rate per worker of " + op.Name, Value: o.rate, Unit: "records/s"},
			{Name: "true output rate per worker of " + op.Name, Value: o.outRate, Unit: "records/s"},
			{Name: "selectivity of " + op.Name, Value: o.selectivity, Unit: "ratio"},
			{Name: "workers of " + op.Name, Value: float64(p), Unit: "count"},
		}, evidence...)
		reason := fmt.Sprintf("%s needs %d workers for a target input of %.0f records/s at a true rate of %.0f records/s per worker; it has %d",
			op.Name, want, o.target, o.rate, p)
		if formula != want {
			reason = fmt.Sprintf("%s needs %d workers for a target input of %.0f records/s at a true rate of %.0f records/s per worker (%d would leave a worker over %.0f%% busy); it has %d",
				op.Name, want, o.target, o.rate, formula, 100*maxScaleInUtilization, p)
		}
		chosen = &Proposal{
			Policy:   d.Name(),
			Action:   schema.Action{Kind: "set-workers", Operator: op.Name, From: p, To: want},
			Reason:   reason,
			Evidence: ev,
			Predicted: []schema.Evidence{
				{Name: "workers of " + op.Name, Value: float64(want), Unit: "count"},
				{Name: "utilization of " + op.Name, Value: o.target / (float64(want) * o.rate), Unit: "ratio"},
			},
		}
	}
	if chosen != nil {
		d.proposedAt = last.At
	}
	return chosen, nil
}

// fallBand is how far under its span's rate a source's latest interval
// may be for the span to be taken as holding one rate: more, and the span
// straddles a fall (a step down), and DS2 takes no scale-in on it.
const fallBand = 0.1

// maxScaleInUtilization is the busiest a worker may be left by one of
// DS2's scale-ins, at the target rate: a count sized to run its workers
// at capacity (DS2's formula with no scaling factor) leaves their
// records queueing behind their batches, a delay over the latency
// guarantor's l_low that the effect check rolls back, and a rate a little
// higher asks for the worker back (a dead band on the utilization, so
// that the count does not go back and forth around a rate). A scale-out
// is sized by the formula alone.
const maxScaleInUtilization = 0.85

// busyAfterScaleIn returns the utilization of operator o's busiest
// worker with want workers at its target rate: for a keyed operator its
// key groups spread over them as the executor spreads them (each
// group's arrival rate scaled to the target), each worker at its own
// true rate (the last one measured, known, for a worker that runs nothing
// now: a straggler whose groups were moved off is as slow as it was); for
// another the target over want workers at the per-worker rate. A
// scale-in past what a slower worker or a skewed spread can take would
// be taken and rolled back.
func busyAfterScaleIn(o *ds2Operator, want int, known map[int]float64) float64 {
	r := o.rates
	var sum float64
	if r != nil {
		for _, a := range r.GroupArrival {
			sum += a
		}
	}
	if r == nil || r.GroupArrival == nil || sum <= 0 {
		if o.rate <= 0 || want < 1 {
			return math.Inf(1)
		}
		return o.target / (float64(want) * o.rate)
	}
	groups := make([]float64, len(r.GroupArrival))
	for kg, a := range r.GroupArrival {
		groups[kg] = a * o.target / sum
	}
	loads := make([]workerLoad, 0, len(r.Workers))
	for _, w := range r.Workers {
		wl := workerLoad{id: w.ID, groups: w.Groups, service: w.Service}
		if wl.service <= 0 {
			wl.service = known[w.ID]
		}
		if wl.service <= 0 {
			wl.service = o.rate
		}
		for _, kg := range w.Groups {
			if kg < len(groups) {
				wl.arrival += groups[kg]
			}
		}
		loads = append(loads, wl)
	}
	if len(loads) == 0 {
		return 0
	}
	return worstUtilization(spread(loads, groups, want))
}

// remember keeps the true rate of each worker of r that ran records,
// and forgets the workers r no longer has.
func (d *DS2) remember(r *OperatorRates) {
	m := d.measured[r.Name]
	if m == nil {
		m = map[int]float64{}
		d.measured[r.Name] = m
	}
	ids := map[int]bool{}
	for _, w := range r.Workers {
		ids[w.ID] = true
		if w.Service > 0 && w.Records > 0 {
			m[w.ID] = w.Service
		}
	}
	for id := range m {
		if !ids[id] {
			delete(m, id)
		}
	}
}

// DS2Workers returns DS2's worker count for an operator whose target
// input rate is target and whose true processing rate per worker is
// rate: ceil(target / rate × (1 + factor)), within [lo, hi] (a bound
// under 1 is not applied).
func DS2Workers(target, rate, factor float64, lo, hi int) int {
	n := int(math.Ceil(target / rate * (1 + factor)))
	if lo >= 1 {
		n = max(n, lo)
	}
	if hi >= 1 {
		n = min(n, hi)
	}
	return max(n, 1)
}

// sourceRate returns source s's arrival rate over the secs seconds since
// first: its read rate plus its backlog's growth rate (a backlog that
// cannot be told counts as not growing), never negative.
func sourceRate(first *Sample, s SourceSample, secs float64) float64 {
	var before *SourceSample
	for i := range first.Sources {
		if first.Sources[i].Name == s.Name {
			before = &first.Sources[i]
		}
	}
	if before == nil || secs <= 0 {
		return 0
	}
	rate := float64(s.Read-min(before.Read, s.Read)) / secs
	if s.Backlog >= 0 && before.Backlog >= 0 {
		rate += float64(s.Backlog-before.Backlog) / secs
	}
	return max(rate, 0)
}

func abs(x int) int {
	if x < 0 {
		return -x
	}
	return x
}
