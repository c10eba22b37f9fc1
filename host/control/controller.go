package control

import (
	"context"
	"fmt"
	"log/slog"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/sluicehq/sluice/host/api/schema"
)

// Actuator applies the controller's decisions to a job.
type Actuator interface {
	// MoveGroups moves each key group of moves (key group -> worker) of
	// operator to its worker.
	MoveGroups(ctx context.Context, operator string, moves map[int]int) error
	// SetWorkers changes operator's worker count.
	SetWorkers(ctx context.Context, operator string, workers int) error
}

// Config configures a Controller. Zero durations and bounds take the
// defaults of the pipeline file's control: section.
type Config struct {
	// Period is the time between two rounds of Run (default 1s, at
	// least 100ms).
	Period time.Duration
	// Lock is how long after an applied decision no other is applied
	// (default 5s).
	Lock time.Duration
	// Settle is how long after a decision its effect is checked (default
	// 10s, at least Period).
	Settle time.Duration
	// Window is the time over which rates and delays are taken: a
	// policy is shown the samples of the last Window (default 2s).
	Window time.Duration
	// MinWorkers and MaxWorkers bound every operator's worker count
	// (defaults 1 and 8).
	MinWorkers, MaxWorkers int
	// Policies are the policies, highest priority first: the first
	// non-empty proposal of a round is the one applied.
	Policies []Policy
	// Sample takes a sample of the job's measurements.
	Sample func() Sample
	// Actuator applies decisions.
	Actuator Actuator
	// Logger logs each decision (nil: slog.Default()).
	Logger *slog.Logger
	// Now is the clock (nil: time.Now).
	Now func() time.Time
}

// Decision outcomes.
const (
	OutcomeApplied    = "applied"
	OutcomeKept       = "kept"
	OutcomeRolledBack = "rolled back"
	OutcomeFailed     = "failed"
)

// maxDecisions is how many decisions Status keeps.
const maxDecisions = 100

// Controller runs management rounds over a job: each round it takes a
// sample, asks every policy for a proposal and its findings, and applies
// at most one proposal, the highest-priority policy's. None is applied
// while the last applied decision's lock lasts, while a decision awaits
// its check, or while key groups migrate between hosts; a proposal for a
// transactional operator is never applied.
//
// Settle after a decision, its effect is checked (see Worse): a decision
// that made its operator's delays or the sources' backlogs clearly worse
// is undone (groups moved back to their workers, the worker count set
// back) and its outcome is "rolled back"; otherwise it is "kept". The
// policy that proposed it is told either way.
//
// A Controller is safe for use by several goroutines; rounds run one at a
// time.
type Controller struct {
	cfg     Config
	latency LatencyConfig

	round   sync.Mutex // held for a whole round
	history []Sample   // the recent samples, oldest first (round)
	nextID  uint64     // (round)
	pending *check     // the decision that awaits its check (round)

	mu          sync.Mutex // guards what Status reports
	rounds      uint64
	lastRound   time.Time
	lockedUntil time.Time
	workers     []schema.WorkerHealth
	decisions   []schema.Decision // newest first
	findings    []schema.Finding
	load        HostLoad // the last round's, for the cluster-level decision
}

// HostLoad is what a host reports for the cluster-level scaling decision
// (Hosts), as of the controller's last round.
type HostLoad struct {
	// Utilisation is the mean utilisation (λ/μ) of the workers of the
	// resizable operators: under 1 they keep up.
	Utilisation float64
	// Saturated is set when a policy wants more workers than MaxWorkers
	// for an operator that runs MaxWorkers already (DS2's count over it,
	// or the latency guarantor finding such an operator severe): a
	// scale-out the host cannot make.
	Saturated bool
	// InputRate is the records per second arriving at the sources (read
	// plus the backlogs' growth) over the window.
	InputRate float64
	// Behind is set when a source's backlog grows over the window by
	// more than backlogNoise of its read rate: the host does not keep up,
	// whatever its workers' utilisation says.
	Behind bool
}

// check is an applied decision that awaits its check.
type check struct {
	id      uint64
	policy  Policy
	at      time.Time
	before  Effect
	inverse schema.Action
}

// New returns a controller for cfg, or an error wrapping ErrBadConfig
// that names the setting at fault.
func New(cfg Config) (*Controller, error) {
	set := func(d *time.Duration, def time.Duration) {
		if *d == 0 {
			*d = def
		}
	}
	set(&cfg.Period, time.Second)
	set(&cfg.Lock, 5*time.Second)
	set(&cfg.Settle, 10*time.Second)
	set(&cfg.Window, 2*time.Second)
	if cfg.MinWorkers == 0 {
		cfg.MinWorkers = 1
	}
	if cfg.MaxWorkers == 0 {
		cfg.MaxWorkers = max(8, cfg.MinWorkers)
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	for _, d := range []struct {
		name string
		v    time.Duration
	}{{"period", cfg.Period}, {"lock", cfg.Lock}, {"settle", cfg.Settle}, {"window", cfg.Window}} {
		if d.v < 0 {
			return nil, fmt.Errorf("%w: %s %v is not positive", ErrBadConfig, d.name, d.v)
		}
	}
	switch {
	case cfg.Period < 100*time.Millisecond:
		return nil, fmt.Errorf("%w: period %v is under 100ms", ErrBadConfig, cfg.Period)
	case cfg.Settle < cfg.Period:
		return nil, fmt.Errorf("%w: settle %v is shorter than the period %v", ErrBadConfig, cfg.Settle, cfg.Period)
	case cfg.MinWorkers < 1:
		return nil, fmt.Errorf("%w: workers min %d is under 1", ErrBadConfig, cfg.MinWorkers)
	case cfg.MinWorkers > cfg.MaxWorkers:
		return nil, fmt.Errorf("%w: workers min %d is over max %d", ErrBadConfig, cfg.MinWorkers, cfg.MaxWorkers)
	case cfg.Sample == nil:
		return nil, fmt.Errorf("%w: no Sample function", ErrBadConfig)
	case cfg.Actuator == nil:
		return nil, fmt.Errorf("%w: no Actuator", ErrBadConfig)
	}
	c := &Controller{cfg: cfg, latency: DefaultLatencyConfig()}
	names := map[string]bool{}
	for i, p := range cfg.Policies {
		if p == nil {
			return nil, fmt.Errorf("%w: policy %d is nil", ErrBadConfig, i)
		}
		if names[p.Name()] {
			return nil, fmt.Errorf("%w: policy %q is listed twice", ErrBadConfig, p.Name())
		}
		names[p.Name()] = true
		if l, ok := p.(*Latency); ok {
			c.latency = l.Config()
		}
	}
	c.cfg.Policies = slices.Clone(cfg.Policies)
	return c, nil
}

// Run runs a round every Period until ctx ends, then returns nil. Each
// round's trigger is "period", or the condition that holds on its sample
// (see Condition).
func (c *Controller) Run(ctx context.Context) error {
	t := time.NewTicker(c.cfg.Period)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
		if _, err := c.run(ctx, ""); err != nil && ctx.Err() == nil {
			return err
		}
	}
}

// Round runs a round now, with trigger as its trigger ("request: ..."
// for a round asked for through the API; empty, Run's: "period" or the
// condition that holds), and returns the decision it applied (nil when
// none). A decision the actuator refused is returned with its outcome
// "failed"; the error is ctx's when it has ended.
func (c *Controller) Round(ctx context.Context, trigger string) (*schema.Decision, error) {
	return c.run(ctx, trigger)
}

// run runs a round; an empty trigger is "period" or the condition that
// holds.
func (c *Controller) run(ctx context.Context, trigger string) (*schema.Decision, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	c.round.Lock()
	defer c.round.Unlock()
	s := c.cfg.Sample()
	now := c.cfg.Now()
	if s.At.IsZero() {
		s.At = now
	}
	c.remember(s)
	v := &View{Samples: c.history, Window: c.cfg.Window, MinWorkers: c.cfg.MinWorkers, MaxWorkers: c.cfg.MaxWorkers}
	if trigger == "" {
		trigger = "period"
		if cond := Condition(v, c.latency.High); cond != "" {
			trigger = "condition: " + cond
		}
	}
	v.Trigger = trigger

	// Every policy, every round, so each keeps its memory and findings
	// current.
	proposals := make([]*Proposal, len(c.cfg.Policies))
	var found []schema.Finding
	for i, p := range c.cfg.Policies {
		prop, fs := p.Propose(v)
		if prop != nil && prop.Action.Kind != "" {
			if prop.Policy == "" {
				prop.Policy = p.Name()
			}
			proposals[i] = prop
		}
		found = append(found, fs...)
	}
	findings := c.mergeFindings(found, s.At)
	wantsMore := c.wantsMore(v, proposals)

	c.checkPending(ctx, v, now)

	c.mu.Lock()
	locked := now.Before(c.lockedUntil)
	c.mu.Unlock()
	var applied *schema.Decision
	if !locked && c.pending == nil && !s.Migrating {
		applied = c.apply(ctx, v, proposals, trigger, now)
	}

	health := c.health(v)
	in := Measure(v, "")
	first, last, ok := v.Span(viewSpan(v))
	behind := ok && backlogGrows(first, last)
	c.mu.Lock()
	c.rounds++
	c.lastRound = now
	c.workers = health
	c.findings = findings
	c.load = HostLoad{Utilisation: meanUtilisation(health), Saturated: wantsMore, InputRate: max(in.Arrival(), 0), Behind: behind}
	c.mu.Unlock()
	return applied, ctx.Err()
}

// wantsMore reports whether an operator that runs MaxWorkers already
// needs more: a Bounded policy says so, or a proposal asks for more
// workers than MaxWorkers.
func (c *Controller) wantsMore(v *View, proposals []*Proposal) bool {
	for _, p := range c.cfg.Policies {
		if b, ok := p.(Bounded); ok && len(b.OverMax()) > 0 {
			return true
		}
	}
	for _, p := range proposals {
		if p != nil && p.Action.Kind == "set-workers" && p.Action.To > c.cfg.MaxWorkers &&
			workerCount(v.Last(), p.Action.Operator, p.Action.From) >= c.cfg.MaxWorkers {
			return true
		}
	}
	return false
}

// meanUtilisation is the mean utilisation of hs; 0 when empty.
func meanUtilisation(hs []schema.WorkerHealth) float64 {
	if len(hs) == 0 {
		return 0
	}
	var sum float64
	for _, h := range hs {
		sum += h.Utilization
	}
	return sum / float64(len(hs))
}

// Load returns the host's figures for the cluster-level scaling decision,
// as of the last round.
func (c *Controller) Load() HostLoad {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.load
}

// Record records d, a decision made outside the controller's rounds (the
// cluster-level scaling decision's), with the controller's: it gets the
// next id and shows in Status and the log. The lock of the controller's
// own decisions is not touched. It returns d as recorded.
func (c *Controller) Record(d schema.Decision) schema.Decision {
	c.round.Lock()
	c.nextID++
	d.ID = c.nextID
	c.round.Unlock()
	if d.Time.IsZero() {
		d.Time = c.cfg.Now()
	}
	if d.Outcome == OutcomeFailed {
		c.cfg.Logger.Warn("control decision failed", "id", d.ID, "policy", d.Policy, "action", Describe(d.Action), "reason", d.Reason, "error", d.Error)
	} else {
		c.cfg.Logger.Info("control decision", "id", d.ID, "policy", d.Policy, "trigger", d.Trigger, "action", Describe(d.Action),
			"reason", d.Reason, "evidence", evidenceText(d.Evidence), "predicted", evidenceText(d.Predicted), "outcome", d.Outcome)
	}
	c.mu.Lock()
	c.decisions = slices.Insert(c.decisions, 0, d)
	if len(c.decisions) > maxDecisions {
		c.decisions = c.decisions[:maxDecisions]
	}
	c.mu.Unlock()
	return d
}

// keepSamples is how many samples the history keeps at least, however
// short the window: the doctor's trends look at the last few.
const keepSamples = 8

// remember appends s to the history and drops the samples older than
// the window needs, keeping at least keepSamples.
func (c *Controller) remember(s Sample) {
	c.history = append(c.history, s)
	i := 0
	for len(c.history)-i > keepSamples && s.At.Sub(c.history[i].At) > c.cfg.Window {
		i++
	}
	if i > 0 {
		c.history = slices.Delete(c.history, 0, i)
	}
}

// mergeFindings deduplicates found by cause and subject, each keeping
// the time the same finding was first found (at, for a new one).
func (c *Controller) mergeFindings(found []schema.Finding, at time.Time) []schema.Finding {
	c.mu.Lock()
	since := map[[2]string]time.Time{}
	for _, f := range c.findings {
		since[[2]string{f.Cause, f.Subject}] = f.Since
	}
	c.mu.Unlock()
	seen := map[[2]string]bool{}
	out := []schema.Finding{}
	for _, f := range found {
		k := [2]string{f.Cause, f.Subject}
		if seen[k] {
			continue
		}
		seen[k] = true
		if t, ok := since[k]; ok {
			f.Since = t
		} else if f.Since.IsZero() {
			f.Since = at
		}
		out = append(out, f)
	}
	return out
}

// apply applies the first proposal in priority order that changes
// something, and records it.
func (c *Controller) apply(ctx context.Context, v *View, proposals []*Proposal, trigger string, now time.Time) *schema.Decision {
	chosen := -1
	for i, p := range proposals {
		if p == nil {
			continue
		}
		if op := findOperator(v.Last(), p.Action.Operator); op != nil && op.Kind == "transactional" {
			c.cfg.Logger.Warn("control proposal for a transactional operator ignored", "policy", p.Policy, "action", Describe(p.Action))
			proposals[i] = nil
			continue
		}
		if p.Action.Kind == "set-workers" {
			p.Action.From = workerCount(v.Last(), p.Action.Operator, p.Action.From)
			if to := min(max(p.Action.To, c.cfg.MinWorkers), c.cfg.MaxWorkers); to != p.Action.To {
				p.Action.To, p.Action.Moves = to, nil // a placement was for the count proposed
			}
			if p.Action.To == p.Action.From {
				proposals[i] = nil // clamped to nothing
				continue
			}
		}
		if p.Action.Kind == "move-groups" && len(p.Action.Moves) == 0 {
			proposals[i] = nil
			continue
		}
		if chosen < 0 {
			chosen = i
		}
	}
	if chosen < 0 {
		return nil
	}
	p := proposals[chosen]
	c.nextID++
	d := schema.Decision{
		ID: c.nextID, Time: now, Trigger: trigger, Policy: p.Policy, Action: p.Action,
		Reason: p.Reason, Evidence: p.Evidence, Predicted: p.Predicted, Outcome: OutcomeApplied,
	}
	for i, o := range proposals {
		if o != nil && i != chosen {
			d.Others = append(d.Others, fmt.Sprintf("%s: %s (%s)", o.Policy, Describe(o.Action), o.Reason))
		}
	}
	if err := c.act(ctx, p.Action); err != nil {
		d.Outcome, d.Error = OutcomeFailed, err.Error()
		c.cfg.Logger.Warn("control decision failed", "id", d.ID, "policy", d.Policy, "action", Describe(d.Action), "reason", d.Reason, "error", err)
	} else {
		c.cfg.Logger.Info("control decision", "id", d.ID, "policy", d.Policy, "trigger", trigger, "action", Describe(d.Action),
			"reason", d.Reason, "evidence", evidenceText(d.Evidence), "predicted", evidenceText(d.Predicted))
		c.pending = &check{id: d.ID, policy: c.cfg.Policies[chosen], at: now, before: Measure(v, p.Action.Operator), inverse: Inverse(p.Action)}
	}
	c.mu.Lock()
	if d.Outcome == OutcomeApplied {
		c.lockedUntil = now.Add(c.cfg.Lock)
	}
	c.decisions = slices.Insert(c.decisions, 0, d)
	if len(c.decisions) > maxDecisions {
		c.decisions = c.decisions[:maxDecisions]
	}
	c.mu.Unlock()
	c.cfg.Policies[chosen].Outcome(d)
	return &d
}

// act applies action through the actuator.
func (c *Controller) act(ctx context.Context, a schema.Action) error {
	moves := func() map[int]int {
		m := make(map[int]int, len(a.Moves))
		for _, g := range a.Moves {
			m[g.Group] = g.ToWorker
		}
		return m
	}
	switch a.Kind {
	case "set-workers":
		if err := c.cfg.Actuator.SetWorkers(ctx, a.Operator, a.To); err != nil || len(a.Moves) == 0 {
			return err
		}
		if err := c.cfg.Actuator.MoveGroups(ctx, a.Operator, moves()); err != nil {
			return fmt.Errorf("placing key groups after set-workers %s %d -> %d: %w", a.Operator, a.From, a.To, err)
		}
		return nil
	case "move-groups":
		return c.cfg.Actuator.MoveGroups(ctx, a.Operator, moves())
	}
	return fmt.Errorf("control: action %q is not one the controller applies", a.Kind)
}

// checkPending checks the decision that awaits its check once it has
// settled: it is rolled back when Worse says so, kept otherwise.
func (c *Controller) checkPending(ctx context.Context, v *View, now time.Time) {
	p := c.pending
	if p == nil || now.Sub(p.at) < c.cfg.Settle {
		return
	}
	c.pending = nil
	after := Measure(v, p.inverse.Operator)
	worse, why := Worse(p.before, after, c.latency.Low.Seconds())
	observed := []schema.Evidence{
		{Name: "worst delay of " + p.inverse.Operator + " before", Value: p.before.Delay, Unit: "s"},
		{Name: "worst delay of " + p.inverse.Operator + " after", Value: after.Delay, Unit: "s"},
		{Name: "busiest worker's utilization before", Value: p.before.Busy, Unit: "ratio"},
		{Name: "busiest worker's utilization after", Value: after.Busy, Unit: "ratio"},
		{Name: "backlog growth before", Value: p.before.BacklogGrowth, Unit: "records/s"},
		{Name: "backlog growth after", Value: after.BacklogGrowth, Unit: "records/s"},
		{Name: "arrival rate at the sources before", Value: p.before.Arrival(), Unit: "records/s"},
		{Name: "arrival rate at the sources after", Value: after.Arrival(), Unit: "records/s"},
	}
	outcome, errText := OutcomeKept, ""
	if worse {
		outcome = OutcomeRolledBack
		if err := c.act(ctx, p.inverse); err != nil {
			outcome, errText = OutcomeFailed, "rolling back: "+err.Error()
			c.cfg.Logger.Warn("control decision made things worse and could not be rolled back", "id", p.id, "why", why, "error", err)
		} else {
			c.cfg.Logger.Info("control decision rolled back", "id", p.id, "why", why, "undo", Describe(p.inverse), "observed", evidenceText(observed))
		}
	}
	d := c.Settle(p.id, outcome, observed, errText)
	if outcome == OutcomeRolledBack {
		c.mu.Lock()
		c.lockedUntil = now.Add(c.cfg.Lock)
		c.mu.Unlock()
	}
	if d.ID != 0 {
		p.policy.Outcome(d)
	}
}

// Settle records the outcome of decision id, once checked, with the
// figures observed after it (and errText when undoing it failed), and
// returns the decision; a zero Decision when it is no longer kept.
func (c *Controller) Settle(id uint64, outcome string, observed []schema.Evidence, errText string) schema.Decision {
	c.mu.Lock()
	defer c.mu.Unlock()
	for i := range c.decisions {
		if c.decisions[i].ID == id {
			c.decisions[i].Outcome, c.decisions[i].Observed, c.decisions[i].Error = outcome, observed, errText
			return c.decisions[i]
		}
	}
	return schema.Decision{}
}

// health returns the workers' health at this round: the latency
// guarantor's estimates when it runs, the window's rates otherwise.
func (c *Controller) health(v *View) []schema.WorkerHealth {
	for _, p := range c.cfg.Policies {
		if l, ok := p.(*Latency); ok {
			return l.Health()
		}
	}
	first, last, ok := v.Span(viewSpan(v))
	if !ok {
		return nil
	}
	var hs []schema.WorkerHealth
	for _, op := range last.Operators {
		if !(op.Resizable || op.Movable) {
			continue
		}
		r, ok := Rates(first, last, op.Name)
		if !ok {
			continue
		}
		for _, w := range r.Workers {
			wl := workerLoad{id: w.ID, host: w.Host, groups: w.Groups, arrival: w.Arrival, service: w.Service, delay: w.Delay}
			h := workerHealth(op.Name, wl, c.latency)
			if w.Arrival == 0 && w.Service == 0 {
				// Idle and never measured: nothing is predicted.
				h.Saturated, h.PredictedSeconds = false, 0
				h.State = c.latency.State(w.Delay, 0)
			}
			hs = append(hs, h)
		}
	}
	return hs
}

// Status returns the controller's state: its policies, its last view of
// the workers, its last decisions (newest first) and findings.
func (c *Controller) Status() schema.Control {
	c.mu.Lock()
	defer c.mu.Unlock()
	st := schema.Control{
		Enabled:     true,
		Rounds:      c.rounds,
		LastRound:   c.lastRound,
		LockedUntil: c.lockedUntil,
		Workers:     slices.Clone(c.workers),
		Decisions:   make([]schema.Decision, len(c.decisions)),
		Findings:    make([]schema.Finding, len(c.findings)),
	}
	for _, p := range c.cfg.Policies {
		st.Policies = append(st.Policies, p.Name())
	}
	for i, d := range c.decisions {
		d.Evidence, d.Predicted, d.Observed, d.Others = slices.Clone(d.Evidence), slices.Clone(d.Predicted), slices.Clone(d.Observed), slices.Clone(d.Others)
		d.Action.Moves = slices.Clone(d.Action.Moves)
		st.Decisions[i] = d
	}
	for i, f := range c.findings {
		f.Evidence = slices.Clone(f.Evidence)
		st.Findings[i] = f
	}
	return st
}

// Effect is what the controller compares before and after a decision:
// the worst mean delay of the operator's workers, the busiest worker's
// utilization and the growth of the sources' backlogs over a window, with
// the rate read from the sources.
type Effect struct {
	Delay         float64 // seconds
	Busy          float64 // the busiest worker's useful share of wall time
	BacklogGrowth float64 // records/s, summed over the sources
	ReadRate      float64 // records/s, summed over the sources
	// Version is the operator's plugin version at the window's end;
	// Swapped is set when it changed within the window.
	Version string
	Swapped bool
	// Service is each worker's true processing rate over the window
	// (records per second of useful time), by worker id, for the
	// workers that ran records.
	Service map[int]float64
}

// Arrival returns the rate records arrive at the sources: the rate read
// plus the backlogs' growth.
func (e Effect) Arrival() float64 { return e.ReadRate + e.BacklogGrowth }

// backlog returns the sources' backlog trend over e's window.
func (e Effect) backlog() backlogTrend {
	return backlogTrend{change: e.BacklogGrowth, read: e.ReadRate}
}

// Measure returns the Effect over the view's samples for operator.
func Measure(v *View, operator string) Effect {
	var e Effect
	first, last, ok := v.Span(viewSpan(v))
	if !ok {
		return e
	}
	if r, ok := Rates(first, last, operator); ok {
		e.Service = map[int]float64{}
		for _, w := range r.Workers {
			e.Delay = max(e.Delay, w.Delay)
			e.Busy = max(e.Busy, w.Busy)
			if w.Records > 0 && w.Service > 0 {
				e.Service[w.ID] = w.Service
			}
		}
	}
	for _, op := range last.Operators {
		if op.Name != operator {
			continue
		}
		e.Version = op.Version
		for _, b := range first.Operators {
			if b.Name == operator && b.Version != op.Version {
				e.Swapped = true
			}
		}
	}
	secs := last.At.Sub(first.At).Seconds()
	for _, s := range last.Sources {
		for _, b := range first.Sources {
			if b.Name != s.Name {
				continue
			}
			e.ReadRate += float64(s.Read-min(b.Read, s.Read)) / secs
			if s.Backlog >= 0 && b.Backlog >= 0 {
				e.BacklogGrowth += float64(s.Backlog-b.Backlog) / secs
			}
		}
	}
	return e
}

// worseRatio is how much worse than before a decision's effect must be
// for it to be rolled back; loadRise how much the load may rise before
// the comparison says nothing of the decision; saturatedBusy how busy the
// busiest worker must be for the job to be at capacity (a batch runs at
// its slowest worker's pace); readKept the share of the rate read before
// a decision that the job must read after it to count as reading as much.
const (
	worseRatio    = 1.5
	loadRise      = 1.2
	saturatedBusy = 0.9
	readKept      = 0.98
)

// Worse reports whether a decision made things clearly worse, and why:
// the operator's worst delay after it is over 1.5 times the delay before
// and over low (the latency guarantor's l_low: a delay under it is good
// whatever it was before), or the sources' backlogs grow after it faster
// than 1.5 times their growth before and faster than 5% of the rate read
// from them (a backlog growing that slowly is noise). A decision is not
// blamed when the load rose meanwhile: when records arrive at the
// sources (read plus backlog growth) over 1.2 times as fast as before,
// nothing is worse. Nor is a decision blamed for a delay that rose while
// a backlog that grew before it went on growing: the delay of a growing
// backlog rises whatever is done, until the growth stops, so a decision
// taken then is judged by the growth alone; nor for a delay that rose
// while the backlog shrinks after it (by over 5% of the read rate): the
// job works off records that waited, whose delays rise as it catches up;
// nor for a delay that rose as a backlog began to grow, or as records
// arrived faster (by over 2%), while the job, at capacity before the
// decision (its busiest worker over 90% busy), reads as much after it
// (98% or more): records arrive faster than a job that was full can
// take, or near it, where a delay rises steeply with the load, which the
// decision did not cause (a job under
// capacity before it that now reads no more than before while records
// pile up is blamed: the decision may have taken the capacity that would
// have taken them).
// The growth it is judged by
// is the part it answers for, at the load it was taken under: the growth
// before (none if it shrank) plus the drop of the rate read, counted from
// the arrival rate when the job was draining a backlog, so a backlog that
// grows faster because records arrive faster, while the job reads as
// much as before or more, is not the decision's doing, nor is a job that
// reads what arrives once its backlog is gone. A decision that cut the
// worst delay by a third or more is not blamed for a backlog that grows
// by under a tenth of the arrival rate. Nothing is blamed on a decision
// across a change it did not make: the operator's plugin swapped within
// or between the two windows, or one of its workers slowed alone (see
// slowedAlone).
func Worse(before, after Effect, low float64) (bool, string) {
	if after.Arrival() > loadRise*before.Arrival() {
		return false, ""
	}
	if before.Swapped || after.Swapped || before.Version != after.Version || slowedAlone(before.Service, after.Service) {
		return false, ""
	}
	growing := before.backlog().grows()
	draining := after.backlog().drains()
	rose := after.Arrival() > before.Arrival()/readKept
	full := before.Busy >= saturatedBusy && after.ReadRate >= readKept*before.ReadRate && (after.backlog().grows() || rose)
	if !growing && !draining && !full && after.Delay > worseRatio*before.Delay && after.Delay > low {
		return true, fmt.Sprintf("the worst delay rose from %s to %s", seconds(before.Delay), seconds(after.Delay))
	}
	// The growth the decision is answerable for: the growth before plus
	// what the job reads less than before (a drop under 2% is noise).
	// Records that arrive faster (by under loadRise) grow the backlog
	// whatever was decided; a job that reads as much as before or more
	// did not make it grow faster. A job that was draining a backlog
	// before read more than arrived, which it cannot go on doing once
	// the backlog is gone: what it reads less is counted from the
	// arrival rate then.
	read := min(before.ReadRate, before.Arrival())
	drop := max(read-after.ReadRate, 0)
	if after.ReadRate >= readKept*read {
		drop = 0
	}
	growth := max(before.BacklogGrowth, 0) + drop
	floor := backlogNoise * after.ReadRate
	if after.Delay*worseRatio < before.Delay {
		// The decision cut the worst delay by a third or more: a
		// backlog that grows by under a tenth of the arrival rate is
		// the noise of batches and commits, not capacity it took.
		floor = max(floor, 0.1*after.Arrival())
	}
	if min(after.BacklogGrowth, growth) > worseRatio*max(before.BacklogGrowth, 0) && after.BacklogGrowth > floor {
		return true, fmt.Sprintf("the backlog grows by %.0f records/s, %.0f before, and %.0f records/s are read, %.0f before",
			after.BacklogGrowth, before.BacklogGrowth, after.ReadRate, before.ReadRate)
	}
	return false, ""
}

// peersKept is the share of their true rates the other workers must
// keep for one worker's slowdown to be its own (see slowedAlone).
const peersKept = 0.8

// slowedAlone reports whether a worker measured before and after a
// decision ran at under 1/unsteady of its true rate before, while the
// other workers measured in both kept theirs (the median of their
// ratios at least peersKept): a worker that became a straggler. A move
// of key groups or a change of the worker count changes what a worker
// runs, not how fast it runs a record, unless the workers contend for
// the cores, which slows them all.
func slowedAlone(before, after map[int]float64) bool {
	ratios := map[int]float64{}
	for id, b := range before {
		if a, ok := after[id]; ok && b > 0 {
			ratios[id] = a / b
		}
	}
	for id, r := range ratios {
		if r >= 1/unsteady {
			continue
		}
		var peers []float64
		for other, q := range ratios {
			if other != id {
				peers = append(peers, q)
			}
		}
		if len(peers) == 0 {
			continue
		}
		slices.Sort(peers)
		if peers[len(peers)/2] >= peersKept {
			return true
		}
	}
	return false
}

// Inverse returns the action that undoes a: the groups moved back to
// their workers, or the worker count set back (the groups a set-workers
// placed go where the executor spreads them).
func Inverse(a schema.Action) schema.Action {
	inv := schema.Action{Kind: a.Kind, Operator: a.Operator, From: a.To, To: a.From}
	if a.Kind == "set-workers" {
		return inv
	}
	for _, m := range a.Moves {
		inv.Moves = append(inv.Moves, schema.GroupMove{Group: m.Group, FromWorker: m.ToWorker, ToWorker: m.FromWorker, FromHost: m.ToHost, ToHost: m.FromHost})
	}
	return inv
}

// Condition returns the condition that holds on the view's window and
// calls for a round, "" when none: a source's backlog grew over it
// ("backlog growing on source X"), or a worker's mean delay over it is
// over high ("delay over bound on op/w").
func Condition(v *View, high time.Duration) string {
	first, last, ok := v.Span(viewSpan(v))
	if !ok {
		return ""
	}
	for _, s := range last.Sources {
		for _, b := range first.Sources {
			if b.Name == s.Name && s.Backlog >= 0 && b.Backlog >= 0 && s.Backlog > b.Backlog {
				return "backlog growing on source " + s.Name
			}
		}
	}
	for _, op := range last.Operators {
		r, ok := Rates(first, last, op.Name)
		if !ok {
			continue
		}
		for _, w := range r.Workers {
			if w.Delay > high.Seconds() {
				return fmt.Sprintf("delay over bound on %s/%d", op.Name, w.ID)
			}
		}
	}
	return ""
}

// Describe returns an action in a few words: "set-workers count 2 -> 3",
// "move-groups count: 7 from worker 0 to 1".
func Describe(a schema.Action) string {
	switch a.Kind {
	case ActionActivateHost:
		return "activate pool host " + a.Host
	case ActionReleaseHost:
		return "release host " + a.Host + " to the pool"
	case ActionRequestHost:
		return "request a host"
	case "set-workers":
		if len(a.Moves) > 0 {
			return fmt.Sprintf("set-workers %s %d -> %d, %s placed", a.Operator, a.From, a.To, keyGroups(len(a.Moves)))
		}
		return fmt.Sprintf("set-workers %s %d -> %d", a.Operator, a.From, a.To)
	case "move-groups":
		// By pair of workers, in the order the moves first name them;
		// the groups listed while they are few.
		type pair struct{ from, to int }
		var order []pair
		groups := map[pair][]int{}
		for _, m := range a.Moves {
			p := pair{m.FromWorker, m.ToWorker}
			if _, ok := groups[p]; !ok {
				order = append(order, p)
			}
			groups[p] = append(groups[p], m.Group)
		}
		parts := make([]string, len(order))
		for i, p := range order {
			gs := groups[p]
			if len(gs) <= 4 {
				ids := make([]string, len(gs))
				for j, g := range gs {
					ids[j] = strconv.Itoa(g)
				}
				parts[i] = fmt.Sprintf("key groups %s from worker %d to %d", strings.Join(ids, ", "), p.from, p.to)
			} else {
				parts[i] = fmt.Sprintf("%d key groups from worker %d to %d", len(gs), p.from, p.to)
			}
		}
		return fmt.Sprintf("move-groups %s: %s", a.Operator, strings.Join(parts, "; "))
	}
	return a.Kind + " " + a.Operator
}

// workerCount returns operator's worker count in s, def when s lacks it.
func workerCount(s *Sample, operator string, def int) int {
	if s == nil {
		return def
	}
	if op := findOperator(s, operator); op != nil {
		return len(op.Workers)
	}
	return def
}

// evidenceText formats evidence for a log line.
func evidenceText(ev []schema.Evidence) string {
	parts := make([]string, len(ev))
	for i, e := range ev {
		v := fmt.Sprintf("%.4g", e.Value)
		if math.IsInf(e.Value, 0) || math.IsNaN(e.Value) {
			v = fmt.Sprint(e.Value)
		}
		parts[i] = e.Name + "=" + v + e.Unit
	}
	return strings.Join(parts, "; ")
}
