package control

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/sluicehq/sluice/host/api/schema"
)

// The healthiness of a worker or an operator, as the latency guarantor
// judges it.
const (
	StateGood     = "good"
	StateModerate = "moderate"
	StateSevere   = "severe"
)

// smoothing is the weight an estimate keeps of its past every
// smoothingTick (an exponentially weighted moving average): StreamSwitch's
// 0.875 at its 100ms rounds. Samples further apart keep less of the
// past (0.875^10, about 0.26, a second apart), so the estimates follow a
// change as fast whatever the period.
const (
	smoothing     = 0.875
	smoothingTick = 100 * time.Millisecond
)

// LatencyConfig is the latency guarantor's configuration.
type LatencyConfig struct {
	// Lreq bounds a worker's predicted (long-term) delay L.
	Lreq time.Duration
	// Low is the instantaneous delay under which a worker is good (with
	// L <= Lreq); High the one over which, with L > Lreq, it is severe.
	Low, High time.Duration
}

// DefaultLatencyConfig returns StreamSwitch's defaults: Lreq 1s, Low 50ms,
// High 100ms.
func DefaultLatencyConfig() LatencyConfig {
	return LatencyConfig{Lreq: time.Second, Low: 50 * time.Millisecond, High: 100 * time.Millisecond}
}

// State returns the healthiness of a worker whose instantaneous delay is
// delay and whose predicted delay is predicted (both in seconds;
// predicted is +Inf for a saturated worker): severe when predicted >
// Lreq and delay > High, good when predicted <= Lreq and delay <= Low,
// moderate otherwise.
func (c LatencyConfig) State(delay, predicted float64) string {
	lreq := c.Lreq.Seconds()
	switch {
	case predicted > lreq && delay > c.High.Seconds():
		return StateSevere
	case predicted <= lreq && delay <= c.Low.Seconds():
		return StateGood
	}
	return StateModerate
}

// ErrBadConfig is wrapped by every error about a policy's or the
// controller's configuration.
var ErrBadConfig = errors.New("control: bad configuration")

// Latency is the latency guarantor (StreamSwitch): it keeps every
// worker's delay under a bound by moving key groups off the worst worker
// and by changing an operator's worker count.
//
// Each round it estimates, per worker of each stateless or keyed
// operator (never a transactional one), the instantaneous delay l (the
// mean delay of the records the worker ran over the window, smoothed:
// 0.875 of the estimate is kept per 100ms since the last sample)
// and the predicted long-term delay L = 1/(μ-λ), λ the smoothed arrival
// rate of the worker's key groups and μ its smoothed service rate (L is
// infinite when μ <= λ). An operator is severe when one of its workers
// is, good when all are, moderate otherwise.
//
// A severe operator has key groups moved off its worst worker: to each
// other unsaturated worker in turn, the worst worker's groups are added
// one at a time, lowest arrival rate first, until the target's predicted
// delay would exceed the source's or the target would saturate; the move
// whose predicted delays, sorted from the highest, are the lowest is
// proposed when it brings every worker's predicted delay to at most
// Lreq and the operator's arrivals are at most saturatedBusy of its
// workers' summed service rates (past that, a move leaves every worker
// at the edge of saturation, and the operator grows when it can).
// Otherwise workers are added (the operator's groups spread again
// as the executor spreads them, or placed off the busiest workers when
// that spread would overload a slower one): as many as bring every
// predicted delay under Lreq, in one decision, or one when no count does
// (see scaleOut), sized on each group's smoothed arrival rate or its
// latest interval's when higher; none when one more would leave the
// busiest worker busier than it is (the best move instead, if any). While the arrival rate is rising (the latest interval's
// over the one before's by more than a tenth, perhaps straddling a step)
// and the worst delay is under Lreq, the scale-out waits one round, so
// that it is sized on a whole interval of the new rate. A good operator
// loses a worker when, its groups spread over one worker fewer, every
// worker's predicted delay stays at most Low, the operator's delay floor
// (its batches' collection and commit, see delayFloor) included. A
// moderate operator is left alone. Moves and scale-ins wait for steady
// evidence (see steady): a window that straddles a change holds the rates
// from before it. A severe operator whose groups' rates are not steady
// while their sum holds and fits its workers spread (see spreadFits) had
// its hot keys shift, which a move fixes: it waits for steady estimates
// while its delay is under Lreq, and past Lreq moves on the latest
// interval's rates when that fixes it, before any scale-out.
//
// When an operator cannot grow (its count is at the bound, or it is not
// resizable), the best move is proposed if it lowers the worst predicted
// delay, even when it does not bring it under Lreq.
//
// An action that was rolled back is not proposed again for a minute.
type Latency struct {
	cfg    LatencyConfig
	at     time.Time // the last sample smoothed
	keep   float64   // the weight of the past at the last sample
	ops    map[string]*opEstimate
	vetoed map[string]time.Time // rolled-back actions (Describe) -> until
	// overMax are the severe operators that run MaxWorkers already, at
	// the last Propose.
	overMax []string
}

// vetoFor is how long a policy leaves alone an action that was rolled
// back.
const vetoFor = time.Minute

// opEstimate is the guarantor's smoothed view of one operator.
type opEstimate struct {
	sample OperatorSample // as of the last sample
	groups []float64      // smoothed arrival rate of each key group
	latest []float64      // each key group's arrival rate over the view's latest interval
	rising bool           // the latest interval's arrivals are over the one before's by more than a tenth
	// latestService is each worker's service rate over the view's
	// latest interval, for the workers that ran records in it.
	latestService map[int]float64
	waited        bool // a scale-out waited a round for a rising rate, not yet made
	workers       map[int]*workerEstimate
}

// workerEstimate is one worker's smoothed estimates.
type workerEstimate struct {
	arrival float64 // λ of an operator without key groups
	service float64 // μ, 0 until measured
	delay   float64 // l
	seen    bool
}

// workerLoad is one worker's load and delays as a round sees them.
type workerLoad struct {
	id      int
	host    string
	groups  []int
	arrival float64 // λ
	service float64 // μ (a peer's mean when not measured yet)
	delay   float64 // l
}

// predicted returns the worker's long-term delay.
func (w workerLoad) predicted() float64 { return predictDelay(w.arrival, w.service) }

// predictDelay returns 1/(μ-λ), or +Inf when μ <= λ.
func predictDelay(arrival, service float64) float64 {
	if service <= arrival {
		return math.Inf(1)
	}
	return 1 / (service - arrival)
}

// NewLatency returns a latency guarantor; zero fields of cfg take
// DefaultLatencyConfig's values.
func NewLatency(cfg LatencyConfig) (*Latency, error) {
	def := DefaultLatencyConfig()
	if cfg.Lreq == 0 {
		cfg.Lreq = def.Lreq
	}
	if cfg.Low == 0 {
		cfg.Low = def.Low
	}
	if cfg.High == 0 {
		cfg.High = def.High
	}
	switch {
	case cfg.Lreq < 0:
		return nil, fmt.Errorf("%w: latency lreq %v is not positive", ErrBadConfig, cfg.Lreq)
	case cfg.Low < 0:
		return nil, fmt.Errorf("%w: latency l_low %v is not positive", ErrBadConfig, cfg.Low)
	case cfg.High < 0:
		return nil, fmt.Errorf("%w: latency l_high %v is not positive", ErrBadConfig, cfg.High)
	case cfg.Low > cfg.High:
		return nil, fmt.Errorf("%w: latency l_low %v is over l_high %v", ErrBadConfig, cfg.Low, cfg.High)
	}
	return &Latency{cfg: cfg, ops: map[string]*opEstimate{}, vetoed: map[string]time.Time{}}, nil
}

// Name returns "latency".
func (l *Latency) Name() string { return "latency" }

// OverMax returns the operators the guarantor found severe at its last
// Propose that run MaxWorkers already: it can give them no more workers.
func (l *Latency) OverMax() []string { return slices.Clone(l.overMax) }

// Config returns the guarantor's configuration.
func (l *Latency) Config() LatencyConfig { return l.cfg }

// Outcome remembers an action that was rolled back, so that it is not
// proposed again for a minute.
func (l *Latency) Outcome(d schema.Decision) {
	if d.Outcome == OutcomeRolledBack {
		l.vetoed[Describe(d.Action)] = d.Time.Add(vetoFor)
	}
}

// allowed reports whether p may be proposed at the last sample (its
// action was not rolled back in the last minute).
func (l *Latency) allowed(p *Proposal) bool {
	for a, until := range l.vetoed {
		if !l.at.Before(until) {
			delete(l.vetoed, a)
		}
	}
	_, vetoed := l.vetoed[Describe(p.Action)]
	return !vetoed
}

// Propose smooths the estimates with the view's last sample and
// proposes a move of key groups or a change of worker count for the
// most severe operator, or fewer workers for a good one.
func (l *Latency) Propose(v *View) (*Proposal, []schema.Finding) {
	l.overMax = nil
	first, last, ok := v.Span(viewSpan(v))
	if !ok {
		return nil, nil
	}
	if !last.At.Equal(l.at) {
		l.update(first, last)
		if prev, _, ok := v.Latest(); ok {
			var before *Sample
			if n := len(v.Samples); n >= 3 {
				before = &v.Samples[n-3]
			}
			for name, e := range l.ops {
				e.latest, e.rising, e.latestService = nil, false, nil
				r, ok := Rates(prev, last, name)
				if !ok {
					continue
				}
				e.latest = r.GroupArrival
				e.latestService = map[int]float64{}
				for _, w := range r.Workers {
					if w.Records > 0 && w.Service > 0 {
						e.latestService[w.ID] = w.Service
					}
				}
				if before != nil {
					if b, ok := Rates(before, prev, name); ok {
						e.rising = arrivals(r) > 1.1*arrivals(b)
					}
				}
				e.waited = e.waited && e.rising // a wait is for one rise
			}
		}
	}
	// The most severe operator first: the one whose worst worker's
	// predicted delay is the highest.
	var severe, good []string
	worst := map[string]workerLoad{}
	for _, op := range last.Operators {
		if !eligible(&op) {
			continue
		}
		loads := l.loads(op.Name)
		if loads == nil {
			continue
		}
		switch l.opState(loads) {
		case StateSevere:
			severe = append(severe, op.Name)
			worst[op.Name] = l.worst(loads)
			if op.Resizable && len(op.Workers) >= v.MaxWorkers {
				l.overMax = append(l.overMax, op.Name)
			}
		case StateGood:
			good = append(good, op.Name)
		}
	}
	slices.SortStableFunc(severe, func(a, b string) int {
		wa, wb := worst[a], worst[b]
		if c := cmp.Compare(wb.predicted(), wa.predicted()); c != 0 {
			return c
		}
		return cmp.Compare(wb.delay, wa.delay)
	})
	for _, name := range severe {
		if p := l.treatSevere(v, name); p != nil && l.allowed(p) {
			return p, nil
		}
	}
	for _, name := range good {
		if p := l.scaleIn(v, name); p != nil && l.allowed(p) {
			return p, nil
		}
	}
	return nil, nil
}

// viewSpan is the span rates are taken over: the view's Window, or all
// the samples it holds when it names none.
func viewSpan(v *View) time.Duration {
	if v.Window > 0 {
		return v.Window
	}
	if len(v.Samples) < 2 {
		return 0
	}
	return v.Samples[len(v.Samples)-1].At.Sub(v.Samples[0].At)
}

// eligible reports whether the guarantor may act on op.
func eligible(op *OperatorSample) bool {
	return op.Kind != "transactional" && (op.Movable || op.Resizable) && len(op.Workers) > 0
}

// update smooths the estimates with the rates between first and last.
func (l *Latency) update(first, last *Sample) {
	l.keep = smoothing
	if !l.at.IsZero() && last.At.After(l.at) {
		l.keep = math.Pow(smoothing, float64(last.At.Sub(l.at))/float64(smoothingTick))
	}
	l.at = last.At
	seen := map[string]bool{}
	for _, op := range last.Operators {
		if !(op.Movable || op.Resizable) {
			continue
		}
		r, ok := Rates(first, last, op.Name)
		if !ok {
			continue
		}
		seen[op.Name] = true
		e := l.ops[op.Name]
		if e == nil {
			e = &opEstimate{workers: map[int]*workerEstimate{}}
			l.ops[op.Name] = e
		}
		e.sample = op
		if len(r.GroupArrival) != len(e.groups) {
			e.groups = slices.Clone(r.GroupArrival)
		} else {
			for kg, a := range r.GroupArrival {
				e.groups[kg] = smooth(l.keep, e.groups[kg], a)
			}
		}
		ids := map[int]bool{}
		for _, wr := range r.Workers {
			ids[wr.ID] = true
			w := e.workers[wr.ID]
			if w == nil {
				w = &workerEstimate{}
				e.workers[wr.ID] = w
			}
			if !w.seen {
				w.arrival, w.delay, w.seen = wr.Arrival, wr.Delay, true
			} else {
				w.arrival = smooth(l.keep, w.arrival, wr.Arrival)
				// A worker that ran nothing while records arrived
				// for it keeps its delay: it has not gone down.
				if wr.Records > 0 || wr.Arrival == 0 {
					w.delay = smooth(l.keep, w.delay, wr.Delay)
				}
			}
			if wr.Records > 0 && wr.Service > 0 {
				if w.service == 0 {
					w.service = wr.Service
				} else {
					w.service = smooth(l.keep, w.service, wr.Service)
				}
			}
		}
		for id := range e.workers {
			if !ids[id] {
				delete(e.workers, id)
			}
		}
	}
	for name := range l.ops {
		if !seen[name] {
			delete(l.ops, name)
		}
	}
}

// smooth returns the moving average of prev after x, prev weighing keep.
func smooth(keep, prev, x float64) float64 { return keep*prev + (1-keep)*x }

// loads returns the workers of operator name as the estimates stand,
// nil when no worker's service rate is known yet.
func (l *Latency) loads(name string) []workerLoad {
	e := l.ops[name]
	if e == nil {
		return nil
	}
	var sum float64
	var n int
	for _, w := range e.workers {
		if w.service > 0 {
			sum += w.service
			n++
		}
	}
	if n == 0 {
		return nil
	}
	mean := sum / float64(n)
	loads := make([]workerLoad, 0, len(e.sample.Workers))
	for _, ws := range e.sample.Workers {
		w := e.workers[ws.ID]
		if w == nil {
			continue
		}
		wl := workerLoad{id: ws.ID, host: ws.Host, groups: ws.Groups, service: w.service, delay: w.delay, arrival: w.arrival}
		if wl.service == 0 {
			wl.service = mean
		}
		if e.groups != nil {
			wl.arrival = 0
			for _, kg := range ws.Groups {
				if kg < len(e.groups) {
					wl.arrival += e.groups[kg]
				}
			}
		}
		loads = append(loads, wl)
	}
	return loads
}

// opState returns the healthiness of an operator whose workers are
// loads: severe when one is, good when all are.
func (l *Latency) opState(loads []workerLoad) string {
	state := StateGood
	for _, w := range loads {
		switch l.cfg.State(w.delay, w.predicted()) {
		case StateSevere:
			return StateSevere
		case StateModerate:
			state = StateModerate
		}
	}
	return state
}

// worst returns the severe worker with the highest predicted delay (the
// highest instantaneous delay among equals).
func (l *Latency) worst(loads []workerLoad) workerLoad {
	var w workerLoad
	found := false
	for _, x := range loads {
		if l.cfg.State(x.delay, x.predicted()) != StateSevere {
			continue
		}
		if !found || x.predicted() > w.predicted() || (x.predicted() == w.predicted() && x.delay > w.delay) {
			w, found = x, true
		}
	}
	return w
}

// Health returns the guarantor's view of every worker of each stateless
// or keyed operator at the last round.
func (l *Latency) Health() []schema.WorkerHealth {
	names := make([]string, 0, len(l.ops))
	for name := range l.ops {
		names = append(names, name)
	}
	slices.Sort(names)
	var hs []schema.WorkerHealth
	for _, name := range names {
		for _, w := range l.loads(name) {
			hs = append(hs, workerHealth(name, w, l.cfg))
		}
	}
	return hs
}

// workerHealth describes w, a worker of operator op, judged by cfg.
func workerHealth(op string, w workerLoad, cfg LatencyConfig) schema.WorkerHealth {
	h := schema.WorkerHealth{
		Operator: op, Worker: w.id, Host: w.host, KeyGroups: len(w.groups),
		ArrivalRate: w.arrival, ServiceRate: w.service, DelaySeconds: w.delay,
		State: cfg.State(w.delay, w.predicted()),
	}
	if w.service > 0 {
		h.Utilization = w.arrival / w.service
	}
	if p := w.predicted(); math.IsInf(p, 1) {
		h.Saturated = true
	} else {
		h.PredictedSeconds = p
	}
	return h
}

// treatSevere proposes a move of key groups off the worst worker of
// operator name, or more workers.
func (l *Latency) treatSevere(v *View, name string) *Proposal {
	e := l.ops[name]
	op := &e.sample
	loads := l.loads(name)
	src := l.worst(loads)
	subject := fmt.Sprintf("%s/%d", name, src.id)
	evidence := []schema.Evidence{
		{Name: "delay of " + subject, Value: src.delay, Unit: "s"},
		{Name: "arrival rate of " + subject, Value: src.arrival, Unit: "records/s"},
		{Name: "service rate of " + subject, Value: src.service, Unit: "records/s"},
		predictedEvidence("predicted delay of "+subject, src.arrival, src.service),
	}
	why := fmt.Sprintf("%s is severe (delay %s over l_high %v, predicted delay %s over lreq %v)",
		subject, seconds(src.delay), l.cfg.High, seconds(src.predicted()), l.cfg.Lreq)
	canGrow := op.Resizable && len(op.Workers) < v.MaxWorkers
	var (
		moves   []schema.GroupMove
		after   []float64
		movable bool
	)
	steadyService, steadyArrivals := steady(e, loads)
	if !steadyService {
		// A worker's service rate in the latest interval is far from
		// its estimate: the window straddles a change (a worker slowed
		// down or recovered), and a decision sized on it would be sized
		// on the rates before. Wait until the estimates hold it.
		return nil
	}
	move := func(fixed bool, more string) *Proposal {
		target := moves[0].ToWorker
		var predicted []schema.Evidence
		for i, w := range loads {
			if w.id == src.id || w.id == target {
				predicted = append(predicted, delayEvidence(fmt.Sprintf("predicted delay of %s/%d", name, w.id), after[i]))
			}
		}
		reason := fmt.Sprintf("%s: moving %s to %s/%d brings every worker's predicted delay under lreq", why, keyGroups(len(moves)), name, target)
		if !fixed {
			reason = fmt.Sprintf("%s: moving %s to %s/%d lowers the worst predicted delay to %s (%s)", why, keyGroups(len(moves)), name, target, seconds(slices.Max(after)), more)
		}
		return &Proposal{
			Policy:    l.Name(),
			Action:    schema.Action{Kind: "move-groups", Operator: name, Moves: moves},
			Reason:    reason,
			Evidence:  evidence,
			Predicted: predicted,
		}
	}
	switch {
	case op.Movable && e.groups != nil && steadyArrivals:
		// A move rests on each group's smoothed arrival rate: it waits
		// while they are moving (a step), as a scale-out, sized on the
		// latest interval, does not.
		moves, after, movable = l.balance(loads, src, e.groups)
	case op.Movable && e.groups != nil && !e.rising && spreadFits(e.latest, loads):
		// The groups' rates are moving while their sum holds and the
		// workers there are could serve it spread: the hot keys
		// shifted, which a move fixes and more workers do not need.
		// Under Lreq, wait for the estimates to hold the new spread
		// (two or three rounds); past it, move on the latest interval's
		// rates, which hold the new spread once the shift is a round
		// old, and scale out only when that move does not fix it.
		if src.delay < l.cfg.Lreq.Seconds() {
			return nil
		}
		latest := withArrivals(loads, e.latest)
		i := slices.IndexFunc(latest, func(w workerLoad) bool { return w.id == src.id })
		moves, after, movable = l.balance(latest, latest[i], e.latest)
		if movable && slices.Max(after) <= l.cfg.Lreq.Seconds() {
			loads = latest
			p := move(true, "")
			p.Reason += " (at the latest interval's rates: the hot keys shifted)"
			return p
		}
		moves, after, movable = nil, nil, false
	}
	fixed := movable && slices.Max(after) <= l.cfg.Lreq.Seconds()
	if movable && canGrow && !spreadFits(risen(e.groups, e.latest), loads) {
		// The workers there are could not serve the load even spread
		// as evenly as their service rates allow (over saturatedBusy of
		// their summed capacity): a move that brings each predicted
		// delay under Lreq leaves every worker a few records a second
		// from saturation, and the next rise of the rate undoes it.
		fixed = false
	}
	if movable && (fixed || !canGrow) {
		return move(fixed, "the operator cannot have more workers")
	}
	if !canGrow {
		return nil
	}
	if e.rising && !e.waited && src.delay < l.cfg.Lreq.Seconds() {
		// The arrival rate is rising: the latest interval may straddle
		// a step, and a count sized on it would fall short. The delay
		// is under Lreq still: size it a round later, on an interval
		// that holds only the new rate (a step in the middle of an
		// interval rises over two).
		e.waited = true
		return nil
	}
	e.waited = false
	n := len(op.Workers)
	to, grown, placed, fits := l.scaleOut(loads, risen(e.groups, e.latest), n, v.MaxWorkers, op.Movable && e.groups != nil)
	if !fits && worstUtilization(grown) > worstUtilization(loads) {
		// No count serves the load, and one worker more would leave
		// the busiest worker busier than it is (the executor's spread
		// gives a slower worker its share back, and a batch runs at
		// its slowest worker's pace): it would be taken and rolled
		// back. A move that lowers the predicted delays does what can
		// be done.
		if movable {
			return move(false, "more workers would leave the busiest worker busier")
		}
		return nil
	}
	var predicted []schema.Evidence
	for _, w := range grown {
		predicted = append(predicted, predictedEvidence(fmt.Sprintf("predicted delay of %s/%d", name, w.id), w.arrival, w.service))
	}
	more := "one worker more"
	if to > n+1 {
		more = fmt.Sprintf("%d workers more", to-n)
	}
	if fits {
		more += fmt.Sprintf(", the fewest that bring every worker's predicted delay under lreq %v", l.cfg.Lreq)
	}
	if len(placed) > 0 {
		more += fmt.Sprintf(", with %s then placed off the busiest workers (the executor's even spread would overload a slower worker)", keyGroups(len(placed)))
	}
	return &Proposal{
		Policy:    l.Name(),
		Action:    schema.Action{Kind: "set-workers", Operator: name, From: n, To: to, Moves: placed},
		Reason:    fmt.Sprintf("%s and moving key groups to other workers does not fix it: %s", why, more),
		Evidence:  evidence,
		Predicted: predicted,
	}
}

// worstUtilization returns the highest arrival rate over service rate
// among loads (+Inf for a worker with arrivals and no service rate).
func worstUtilization(loads []workerLoad) float64 {
	worst := 0.0
	for _, w := range loads {
		switch {
		case w.service > 0:
			worst = max(worst, w.arrival/w.service)
		case w.arrival > 0:
			return math.Inf(1)
		}
	}
	return worst
}

// arrivals returns an operator's arrival rate: its key groups' sum, or
// its workers' without key groups.
func arrivals(r OperatorRates) float64 {
	var sum float64
	if r.GroupArrival != nil {
		for _, a := range r.GroupArrival {
			sum += a
		}
		return sum
	}
	for _, w := range r.Workers {
		sum += w.Arrival
	}
	return sum
}

// spreadFits reports whether the workers of loads could serve the sum
// of the key groups' rates latest, spread in proportion to their service
// rates, each under saturatedBusy of its capacity (a move cannot split
// the load finer than a key group).
func spreadFits(latest []float64, loads []workerLoad) bool {
	if latest == nil {
		return false
	}
	var total, service float64
	for _, a := range latest {
		total += a
	}
	for _, w := range loads {
		service += w.service
	}
	return total > 0 && total <= saturatedBusy*service
}

// withArrivals returns a copy of loads whose arrival rates are the sums
// of their key groups' rates in groups.
func withArrivals(loads []workerLoad, groups []float64) []workerLoad {
	out := slices.Clone(loads)
	for i := range out {
		out[i].arrival = 0
		for _, kg := range out[i].groups {
			if kg < len(groups) {
				out[i].arrival += groups[kg]
			}
		}
	}
	return out
}

// risen returns each key group's arrival rate to size a scale-out for:
// the smoothed rate, or the latest interval's when higher, so that a
// step up in the rate is met in one decision rather than as the
// smoothing catches up with it.
func risen(smoothed, latest []float64) []float64 {
	if smoothed == nil || len(latest) != len(smoothed) {
		return smoothed
	}
	out := slices.Clone(smoothed)
	for kg, a := range latest {
		out[kg] = max(out[kg], a)
	}
	return out
}

// scaleOut returns the worker count, above n and at most bound, that a
// severe operator grows to, its workers' loads then, and the key groups
// to place once the count has changed (none when the executor's spread
// will do): the fewest workers whose loads bring every predicted delay
// to at most Lreq (fits), in one decision rather than one worker per
// lock period, which is what brings the delay back soon after a rate
// step. A count is tried with the key groups spread as the executor
// spreads them and, when movable and that does not fit, with the
// workers there are keeping their groups and the new ones taking groups
// off the busiest (see place): the executor's even spread gives a slower
// worker (a straggler) as many groups as the others. When no count up
// to bound fits (a key group that alone saturates a worker), one worker
// more, spread or placed, whichever leaves the busiest worker less busy:
// more would cost workers for little, and the job doctor names the hot
// key.
func (l *Latency) scaleOut(loads []workerLoad, groups []float64, n, bound int, movable bool) (to int, after []workerLoad, placed []schema.GroupMove, fits bool) {
	lreq := l.cfg.Lreq.Seconds()
	worst := func(ws []workerLoad) float64 {
		w := 0.0
		for _, x := range ws {
			w = max(w, x.predicted())
		}
		return w
	}
	for k := n + 1; k <= bound; k++ {
		ws := spread(loads, groups, k)
		if worst(ws) <= lreq {
			return k, ws, nil, true
		}
		if !movable {
			continue
		}
		if pw, moves := place(loads, groups, k); worst(pw) <= lreq {
			return k, pw, moves, true
		}
	}
	ws := spread(loads, groups, n+1)
	if movable {
		if pw, moves := place(loads, groups, n+1); worstUtilization(pw) < worstUtilization(ws) {
			return n + 1, pw, moves, false
		}
	}
	return n + 1, ws, nil, false
}

// place returns the loads of an operator's workers once its count is k
// (over the len(loads) it has) with the key groups placed rather than
// spread: the workers there are keep their groups, and groups then move,
// one at a time, off the busiest worker (the highest arrival over
// service rate): the largest group that another worker takes staying
// under the busiest's utilization, to the worker it leaves the least
// utilized, while one does. It returns the moves that take the
// executor's spread (rebalance) to that placement.
func place(loads []workerLoad, groups []float64, k int) ([]workerLoad, []schema.GroupMove) {
	var service float64
	for _, w := range loads {
		service += w.service
	}
	mean := service / float64(len(loads))
	out := make([]workerLoad, k)
	owners := make([]int, len(groups))
	for id := range out {
		out[id] = workerLoad{id: id, service: mean}
	}
	for _, w := range loads {
		if w.id < 0 || w.id >= k {
			return spread(loads, groups, k), nil
		}
		out[w.id].service, out[w.id].host = w.service, w.host
		for _, kg := range w.groups {
			if kg < len(groups) {
				owners[kg] = w.id
				out[w.id].arrival += groups[kg]
			}
		}
	}
	util := func(w workerLoad) float64 {
		if w.service <= 0 {
			return math.Inf(1)
		}
		return w.arrival / w.service
	}
	for range len(groups) {
		hi := 0
		for i := range out {
			if util(out[i]) > util(out[hi]) {
				hi = i
			}
		}
		// The largest of hi's groups that some other worker takes
		// staying under hi's utilization, to the worker it leaves the
		// least utilized.
		best, to := -1, -1
		for kg, o := range owners {
			a := groups[kg]
			if o != hi || a <= 0 || (best >= 0 && a <= groups[best]) {
				continue
			}
			tw, tu := -1, util(out[hi])
			for i := range out {
				if i == hi || out[i].service <= 0 {
					continue
				}
				if u := (out[i].arrival + a) / out[i].service; u < tu {
					tw, tu = i, u
				}
			}
			if tw >= 0 {
				best, to = kg, tw
			}
		}
		if best < 0 {
			break
		}
		owners[best] = to
		out[hi].arrival -= groups[best]
		out[to].arrival += groups[best]
	}
	current := make([]int, len(groups))
	for _, w := range loads {
		for _, kg := range w.groups {
			if kg < len(current) {
				current[kg] = w.id
			}
		}
	}
	var moves []schema.GroupMove
	for kg, o := range rebalance(current, k) {
		if owners[kg] != o {
			moves = append(moves, schema.GroupMove{Group: kg, FromWorker: o, ToWorker: owners[kg]})
		}
	}
	for id := range out {
		out[id].groups = nil
	}
	for kg, o := range owners {
		out[o].groups = append(out[o].groups, kg)
	}
	return out, moves
}

// scaleIn proposes one worker fewer for operator name when every worker
// would stay good (predicted delay at most Low and at most Lreq). None is
// proposed while a source's backlog grows: the workers' delays and
// arrival rates count from the read, and records that wait unread at
// the source are in neither, so every worker can look good while the
// job falls behind.
func (l *Latency) scaleIn(v *View, name string) *Proposal {
	e := l.ops[name]
	op := &e.sample
	n := len(op.Workers)
	if !op.Resizable || n <= max(v.MinWorkers, 1) {
		return nil
	}
	first, last, ok := v.Span(viewSpan(v))
	if !ok {
		return nil
	}
	if backlogGrows(first, last) {
		return nil
	}
	loads := l.loads(name)
	if steadyService, steadyArrivals := steady(e, loads); !steadyService || !steadyArrivals {
		// The window straddles a change of the rates: a scale-in sized
		// on it would be sized on the rates before.
		return nil
	}
	floor := delayFloor(loads)
	after := spread(loads, e.groups, n-1)
	bound := min(l.cfg.Low, l.cfg.Lreq).Seconds()
	var predicted, evidence []schema.Evidence
	for _, w := range after {
		if predictWithFloor(w.arrival, w.service, floor) > bound {
			return nil
		}
		predicted = append(predicted, delayEvidence(fmt.Sprintf("predicted delay of %s/%d", name, w.id), predictWithFloor(w.arrival, w.service, floor)))
	}
	worstDelay, worstPredicted := 0.0, 0.0
	for _, w := range loads {
		worstDelay = max(worstDelay, w.delay)
		worstPredicted = max(worstPredicted, w.predicted())
		evidence = append(evidence, schema.Evidence{Name: fmt.Sprintf("delay of %s/%d", name, w.id), Value: w.delay, Unit: "s"})
	}
	evidence = append(evidence, schema.Evidence{Name: "delay floor of " + name + " (batching and commits: what no worker count removes)", Value: floor, Unit: "s"})
	return &Proposal{
		Policy: l.Name(),
		Action: schema.Action{Kind: "set-workers", Operator: name, From: n, To: n - 1},
		Reason: fmt.Sprintf("every worker of %s is good (delays at most %s, predicted at most %s): with one worker fewer every predicted delay, its floor of %s included, stays under l_low %v",
			name, seconds(worstDelay), seconds(worstPredicted), seconds(floor), min(l.cfg.Low, l.cfg.Lreq)),
		Evidence:  evidence,
		Predicted: predicted,
	}
}

// delayFloor returns the delay of an operator's workers that no worker
// count removes: the collection of a batch and its commit, which the
// M/M/1 prediction 1/(μ-λ), a few milliseconds at the rates of a
// batch's records, leaves out. Each worker's measured delay l is read
// as predictWithFloor's model, l = (floor + 1/μ) / (1 - ρ) with ρ = λ/μ
// (a batch collects the records that arrived while the last one ran, so
// its time, and its records' delay, grows as 1/(1-ρ)); the floor is the
// highest of the workers' (none under 0), so that a scale-in is
// predicted for the worker that shows the most of it.
func delayFloor(loads []workerLoad) float64 {
	floor := 0.0
	for _, w := range loads {
		if w.service <= 0 || w.arrival >= w.service || w.delay <= 0 {
			continue
		}
		floor = max(floor, w.delay*(1-w.arrival/w.service)-1/w.service)
	}
	return floor
}

// predictWithFloor returns the long-term delay of a worker with arrival
// and service rates and an operator's delay floor (see delayFloor):
// floor/(1-ρ) + 1/(μ-λ), the M/M/1 prediction when the floor is 0, +Inf
// when μ <= λ.
func predictWithFloor(arrival, service, floor float64) float64 {
	if service <= arrival {
		return math.Inf(1)
	}
	return floor/(1-arrival/service) + predictDelay(arrival, service)
}

// unsteady is how far, as a ratio, a worker's rate over the view's latest
// interval may be from its estimate before the guarantor takes the
// estimate for one that does not hold the rates now (the straggler
// detector's ratio).
const unsteady = 1.5

// steady reports whether the estimates of operator e, whose workers are
// loads, hold the rates of the view's latest interval: service, every
// worker that ran records in it ran them at its estimated service rate
// within a ratio of unsteady; arrivals, the records arriving for each
// worker's key groups did too (a worker's difference under a twentieth
// of the operator's arrivals does not count). A window that straddles a
// change (a worker slowed down, the hot keys shifted, a step in the
// rate) is not steady until the smoothing has caught up with it, a round
// or two later: a decision is taken on evidence that holds still, as
// DS2's activation asks of its.
func steady(e *opEstimate, loads []workerLoad) (service, arrivals bool) {
	far := func(a, b float64) bool { return max(a, b) > unsteady*min(a, b) }
	service, arrivals = true, true
	var total float64
	for _, a := range e.latest {
		total += a
	}
	for _, w := range loads {
		if mu, ok := e.latestService[w.id]; ok && w.service > 0 && far(mu, w.service) {
			service = false
		}
		if e.latest == nil || e.groups == nil || len(e.latest) != len(e.groups) {
			continue
		}
		var latest float64
		for _, kg := range w.groups {
			if kg < len(e.latest) {
				latest += e.latest[kg]
			}
		}
		if far(latest, w.arrival) && math.Abs(latest-w.arrival) > total/20 {
			arrivals = false
		}
	}
	return service, arrivals
}

// balance returns the best move of key groups off src (see Latency) and
// the predicted delay of each worker of loads after it; ok is false when
// no move lowers the predicted delays.
func (l *Latency) balance(loads []workerLoad, src workerLoad, groups []float64) (moves []schema.GroupMove, after []float64, ok bool) {
	// src's groups, lowest arrival first; a group with no arrivals
	// changes no delay and does not move.
	var candidates []int
	for _, kg := range src.groups {
		if kg < len(groups) && groups[kg] > 0 {
			candidates = append(candidates, kg)
		}
	}
	slices.SortStableFunc(candidates, func(a, b int) int { return cmp.Compare(groups[a], groups[b]) })
	current := make([]float64, len(loads))
	for i, w := range loads {
		current[i] = w.predicted()
	}
	best := current
	var bestMoves []schema.GroupMove
	for ti, tgt := range loads {
		if tgt.id == src.id || tgt.arrival >= tgt.service {
			continue
		}
		si := slices.IndexFunc(loads, func(w workerLoad) bool { return w.id == src.id })
		srcArrival, tgtArrival := src.arrival, tgt.arrival
		var taken []schema.GroupMove
		for _, kg := range candidates {
			srcArrival -= groups[kg]
			tgtArrival += groups[kg]
			srcL, tgtL := predictDelay(srcArrival, src.service), predictDelay(tgtArrival, tgt.service)
			if tgtArrival >= tgt.service || tgtL > srcL {
				break
			}
			taken = append(taken, schema.GroupMove{Group: kg, FromWorker: src.id, ToWorker: tgt.id})
			vec := slices.Clone(current)
			vec[si], vec[ti] = srcL, tgtL
			if lessVector(vec, best) {
				best, bestMoves = vec, slices.Clone(taken)
			}
		}
	}
	if bestMoves == nil {
		return nil, nil, false
	}
	return bestMoves, best, true
}

// lessVector reports whether a, sorted from its highest value, is
// lexicographically below b sorted likewise.
func lessVector(a, b []float64) bool {
	x, y := slices.Clone(a), slices.Clone(b)
	slices.SortFunc(x, func(p, q float64) int { return cmp.Compare(q, p) })
	slices.SortFunc(y, func(p, q float64) int { return cmp.Compare(q, p) })
	return slices.Compare(x, y) < 0
}

// spread returns the loads of an operator's workers once its worker
// count is n: its key groups spread as the executor spreads them (see
// rebalance), or, without key groups, its arrivals spread evenly. A new
// worker's service rate is the mean of the others'.
func spread(loads []workerLoad, groups []float64, n int) []workerLoad {
	var total, service float64
	for _, w := range loads {
		total += w.arrival
		service += w.service
	}
	mean := service / float64(len(loads))
	out := make([]workerLoad, n)
	for id := range out {
		out[id] = workerLoad{id: id, service: mean}
		for _, w := range loads {
			if w.id == id {
				out[id].service, out[id].host = w.service, w.host
			}
		}
	}
	if groups == nil {
		for id := range out {
			out[id].arrival = total / float64(n)
		}
		return out
	}
	owners := make([]int, len(groups))
	for _, w := range loads {
		for _, kg := range w.groups {
			if kg < len(owners) {
				owners[kg] = w.id
			}
		}
	}
	for kg, o := range rebalance(owners, n) {
		out[o].groups = append(out[o].groups, kg)
		out[o].arrival += groups[kg]
	}
	return out
}

// rebalance returns the owners of key groups spread over n workers as
// the executor spreads them when an operator's worker count changes:
// the fewest groups move while every worker ends within one group of the
// others; the groups of workers that go away and those overloaded
// workers give up go to the least loaded workers, in key-group order.
func rebalance(owners []int, n int) []int {
	b := slices.Clone(owners)
	load := make([]int, n)
	var free []int
	for kg, o := range b {
		if o >= n || o < 0 {
			free = append(free, kg)
			continue
		}
		load[o]++
	}
	most := (len(b) + n - 1) / n
	for kg := len(b) - 1; kg >= 0; kg-- {
		if o := b[kg]; o >= 0 && o < n && load[o] > most {
			load[o]--
			free = append(free, kg)
			b[kg] = n
		}
	}
	least := func() int {
		w := 0
		for i := range load {
			if load[i] < load[w] {
				w = i
			}
		}
		return w
	}
	slices.Sort(free)
	for _, kg := range free {
		w := least()
		b[kg] = w
		load[w]++
	}
	for {
		hi, lo := 0, least()
		for i := range load {
			if load[i] > load[hi] {
				hi = i
			}
		}
		if load[hi]-load[lo] <= 1 {
			return b
		}
		for kg := len(b) - 1; kg >= 0; kg-- {
			if b[kg] == hi {
				b[kg] = lo
				load[hi]--
				load[lo]++
				break
			}
		}
	}
}

// predictedEvidence is the predicted delay of a worker with arrival and
// service rates, or its utilization when it would saturate (an infinite
// delay has no JSON form).
func predictedEvidence(name string, arrival, service float64) schema.Evidence {
	if p := predictDelay(arrival, service); !math.IsInf(p, 1) {
		return schema.Evidence{Name: name, Value: p, Unit: "s"}
	}
	u := math.Inf(1)
	if service > 0 {
		u = arrival / service
	}
	if math.IsInf(u, 1) {
		return schema.Evidence{Name: name + " (saturated: nothing measured it can run)", Unit: "ratio"}
	}
	return schema.Evidence{Name: name + " (saturated: utilization)", Value: u, Unit: "ratio"}
}

// delayEvidence is a predicted delay, or a saturation when it is
// infinite.
func delayEvidence(name string, delay float64) schema.Evidence {
	if math.IsInf(delay, 1) {
		return schema.Evidence{Name: name + " (saturated)", Unit: "s"}
	}
	return schema.Evidence{Name: name, Value: delay, Unit: "s"}
}

// seconds formats a delay in seconds for a reason.
func seconds(s float64) string {
	if math.IsInf(s, 1) {
		return "infinite"
	}
	return time.Duration(s * float64(time.Second)).Round(time.Microsecond).String()
}

// keyGroups says how many key groups n is: "1 key group", "3 key groups".
func keyGroups(n int) string {
	if n == 1 {
		return "1 key group"
	}
	return fmt.Sprintf("%d key groups", n)
}
