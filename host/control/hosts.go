package control

import (
	"fmt"
	"slices"
	"time"

	"github.com/sluicehq/sluice/host/api/schema"
)

// The actions of the cluster-level scaling decision (Hosts).
const (
	// ActionActivateHost takes a pool host into service: the key groups
	// are rebalanced onto it.
	ActionActivateHost = "activate-host"
	// ActionRequestHost runs the configured request command: the pool is
	// empty, so a host is asked for.
	ActionRequestHost = "request-host"
	// ActionReleaseHost gives an active host back to the pool: its key
	// groups move to the others, then the release command runs.
	ActionReleaseHost = "release-host"
)

// HostsPolicy is the name of the cluster-level scaling decision in
// decisions.
const HostsPolicy = "hosts"

// HostsConfig configures Hosts (the pipeline file's control.hosts).
type HostsConfig struct {
	// Min and Max bound the number of active hosts (defaults 1 and 4).
	Min, Max int
	// Span is how long a condition must hold before a decision (default
	// 30s).
	Span time.Duration
	// Lock is how long after a decision no other is made, and the least
	// time between two runs of the request command (default 5s).
	Lock time.Duration
	// ScaleOutAbove: a host whose utilisation is at least this is
	// saturated (default 0.9).
	ScaleOutAbove float64
	// ScaleInBelow: the load fits on one host fewer when the mean
	// utilisation times n/(n-1) is under this (default 0.6).
	ScaleInBelow float64
	// Request is set when a request command is configured: a scale-out
	// that finds the pool empty runs it.
	Request bool
}

// HostFigures is one active host's load report, as the decision reads it.
type HostFigures struct {
	// Host is the host's id.
	Host string
	// Utilisation is the mean utilisation (λ/μ) of the host's workers:
	// under 1 they keep up, over 1 more arrives than they run.
	Utilisation float64
	// Saturated is set when the host's own controller wants more workers
	// than control.workers.max for an operator that runs that many.
	Saturated bool
	// Groups is the number of key groups the host owns.
	Groups int
	// InputRate is the records per second its sources delivered.
	InputRate float64
	// Behind is set when a source of the host's has a backlog that grows
	// (HostLoad.Behind).
	Behind bool
}

// ClusterFigures is what the coordinator reads for one round of the
// decision.
type ClusterFigures struct {
	// At is the round's time.
	At time.Time
	// Active are the live active hosts, each with a current load report.
	Active []HostFigures
	// Missing are live active hosts with no current report: the
	// decision waits for them.
	Missing []string
	// Pool are the live pool hosts, sorted.
	Pool []string
	// Migrating is set while key groups move between hosts.
	Migrating bool
	// Releasing names a host given back to the pool whose key groups
	// have not all moved off yet, or whose release command has not run.
	Releasing string
}

// Hosts is the cluster-level scaling decision, made by the coordinator
// (the live host with the lowest id) of a pipeline spread over hosts. It
// is a pure function of the figures it is shown, plus its memory of the
// time each condition started to hold and of its last decision:
//
//   - scale out when every active host is saturated (its utilisation at
//     least ScaleOutAbove, or its controller at workers.max and wanting
//     more) for Span, and fewer than Max hosts are active: take the pool
//     host with the lowest id into service, or, when the pool is empty,
//     run the request command (at most once per Lock);
//   - scale in when the load fits on one host fewer with headroom (the
//     mean utilisation times n/(n-1) under ScaleInBelow, no host's
//     controller wanting more workers, and no host behind: a source's
//     backlog growing, which idle workers can hide when the source's
//     reading is what falls behind) for Span, and more than Min hosts
//     are active: give the host with the fewest key groups back to the
//     pool (its groups move off, then the release command runs);
//   - keep the bounds: fewer than Min active hosts scale out, more than
//     Max scale in, whatever the load.
//
// An applied activate-host or release-host is checked once it has
// settled (Check), and undone when it made things worse.
//
// No decision is made while key groups migrate, while a host given back
// is still being released, while an active host's report is missing, or
// within Lock of the last decision; each of those starts the spans
// afresh, as a decision does, so a decision rests on Span of figures
// taken after the last change. With ScaleInBelow under ScaleOutAbove, a
// flat load never makes a decision and its undoing: a scale-out leaves
// the n+1 hosts at a mean of at least ScaleOutAbove·n/(n+1), which times
// (n+1)/n is at least ScaleOutAbove.
type Hosts struct {
	cfg HostsConfig

	outSince, inSince time.Time // when each condition began to hold; zero when it does not
	lockedUntil       time.Time
	// proposed is the last proposal's check, held until Done says it
	// was applied (then pending) or not; pending awaits Check.
	proposed, pending *hostsPending
}

// hostsPending is a decision to check once it has settled: what it did,
// when, and the active hosts' figures it was taken on.
type hostsPending struct {
	action schema.Action
	at     time.Time
	mean   float64 // mean utilisation of the active hosts
	rate   float64 // their input rate together, records/s
}

// NewHosts returns the decision for cfg, with zero fields set to their
// defaults, or an error wrapping ErrBadConfig naming the setting at
// fault.
func NewHosts(cfg HostsConfig) (*Hosts, error) {
	if cfg.Min == 0 {
		cfg.Min = 1
	}
	if cfg.Max == 0 {
		cfg.Max = max(4, cfg.Min)
	}
	if cfg.Span == 0 {
		cfg.Span = 30 * time.Second
	}
	if cfg.Lock == 0 {
		cfg.Lock = 5 * time.Second
	}
	if cfg.ScaleOutAbove == 0 {
		cfg.ScaleOutAbove = 0.9
	}
	if cfg.ScaleInBelow == 0 {
		cfg.ScaleInBelow = 0.6
	}
	switch {
	case cfg.Min < 1:
		return nil, fmt.Errorf("%w: hosts min %d is under 1", ErrBadConfig, cfg.Min)
	case cfg.Min > cfg.Max:
		return nil, fmt.Errorf("%w: hosts min %d is over max %d", ErrBadConfig, cfg.Min, cfg.Max)
	case cfg.Span < 0 || cfg.Lock < 0:
		return nil, fmt.Errorf("%w: hosts span %v and lock %v: want positive durations", ErrBadConfig, cfg.Span, cfg.Lock)
	case cfg.ScaleInBelow <= 0 || cfg.ScaleOutAbove > 1 || cfg.ScaleInBelow >= cfg.ScaleOutAbove:
		return nil, fmt.Errorf("%w: hosts scale_in_below %g and scale_out_above %g: want 0 < scale_in_below < scale_out_above <= 1", ErrBadConfig, cfg.ScaleInBelow, cfg.ScaleOutAbove)
	}
	return &Hosts{cfg: cfg}, nil
}

// Config returns the decision's configuration, defaults filled in.
func (h *Hosts) Config() HostsConfig { return h.cfg }

// Decide returns the round's decision for f (nil for none). The caller
// applies it and reports with Done.
func (h *Hosts) Decide(f ClusterFigures) *Proposal {
	now := f.At
	n := len(f.Active)
	if f.Migrating || f.Releasing != "" || len(f.Missing) > 0 || n == 0 {
		h.outSince, h.inSince = time.Time{}, time.Time{}
		return nil
	}
	var sum float64
	allSaturated, anyWants, anyBehind := true, false, false
	for _, a := range f.Active {
		sum += a.Utilisation
		sat := a.Saturated || a.Utilisation >= h.cfg.ScaleOutAbove
		allSaturated = allSaturated && sat
		anyWants = anyWants || a.Saturated
		anyBehind = anyBehind || a.Behind
	}
	mean := sum / float64(n)
	fits := n > 1 && !anyWants && !anyBehind && mean*float64(n)/float64(n-1) < h.cfg.ScaleInBelow
	h.outSince = since(h.outSince, allSaturated, now)
	h.inSince = since(h.inSince, fits, now)
	if now.Before(h.lockedUntil) {
		return nil
	}
	evidence := []schema.Evidence{
		{Name: "active hosts", Value: float64(n)},
		{Name: "pool hosts", Value: float64(len(f.Pool))},
		{Name: "mean utilisation of the active hosts", Value: mean},
	}
	for _, a := range f.Active {
		evidence = append(evidence, schema.Evidence{Name: "utilisation of host " + a.Host, Value: a.Utilisation})
		if a.Saturated {
			evidence = append(evidence, schema.Evidence{Name: "workers wanted over workers.max on host " + a.Host, Value: 1})
		}
		if a.Behind {
			evidence = append(evidence, schema.Evidence{Name: "a source's backlog growing on host " + a.Host, Value: 1})
		}
	}
	held := func(t time.Time) bool { return !t.IsZero() && now.Sub(t) >= h.cfg.Span }
	var p *Proposal
	switch {
	case n < h.cfg.Min:
		p = h.out(f, evidence, mean, fmt.Sprintf("%d active hosts, under hosts.min %d", n, h.cfg.Min))
	case n > h.cfg.Max:
		p = h.in(f, evidence, mean, fmt.Sprintf("%d active hosts, over hosts.max %d", n, h.cfg.Max))
	case held(h.outSince) && n < h.cfg.Max:
		p = h.out(f, evidence, mean, fmt.Sprintf("every active host saturated for %v (utilisation at least %g, or its controller at workers.max and wanting more)",
			now.Sub(h.outSince).Round(time.Second), h.cfg.ScaleOutAbove))
	case held(h.inSince) && n > h.cfg.Min:
		p = h.in(f, evidence, mean, fmt.Sprintf("the load fits on %d hosts for %v: mean utilisation %.2f × %d/%d is under %g",
			n-1, now.Sub(h.inSince).Round(time.Second), mean, n, n-1, h.cfg.ScaleInBelow))
	}
	h.proposed = nil
	if p != nil && p.Action.Kind != ActionRequestHost { // a request adds no host by itself: nothing to check
		h.proposed = &hostsPending{action: p.Action, at: now, mean: mean, rate: inputRate(f.Active)}
	}
	return p
}

// Checking reports whether host, given back to the pool, awaits its
// decision's check: its release command waits for it, so that the
// decision can still be undone.
func (h *Hosts) Checking(host string) bool {
	return h.pending != nil && h.pending.action.Kind == ActionReleaseHost && h.pending.action.Host == host
}

// inputRate returns the hosts' input rate together.
func inputRate(hs []HostFigures) float64 {
	var r float64
	for _, a := range hs {
		r += a.InputRate
	}
	return r
}

// since returns when a condition that holds (cond) began: start, or now
// when it begins now; zero when it does not hold.
func since(start time.Time, cond bool, now time.Time) time.Time {
	switch {
	case !cond:
		return time.Time{}
	case start.IsZero():
		return now
	}
	return start
}

// out proposes a scale-out: the pool's first host, else a request.
func (h *Hosts) out(f ClusterFigures, evidence []schema.Evidence, mean float64, why string) *Proposal {
	n := float64(len(f.Active))
	predicted := []schema.Evidence{{Name: "mean utilisation of the active hosts", Value: mean * n / (n + 1)}}
	if len(f.Pool) > 0 {
		return &Proposal{Policy: HostsPolicy, Action: schema.Action{Kind: ActionActivateHost, Host: f.Pool[0]},
			Reason: why + ": take pool host " + f.Pool[0] + " into service", Evidence: evidence, Predicted: predicted}
	}
	if !h.cfg.Request {
		return nil
	}
	return &Proposal{Policy: HostsPolicy, Action: schema.Action{Kind: ActionRequestHost},
		Reason: why + ": the pool is empty, ask for a host", Evidence: evidence, Predicted: predicted}
}

// in proposes a scale-in: the active host with the fewest key groups
// (ties: the lowest utilisation, then the highest id, which keeps the
// coordinator, the lowest, in service).
func (h *Hosts) in(f ClusterFigures, evidence []schema.Evidence, mean float64, why string) *Proposal {
	hs := slices.Clone(f.Active)
	slices.SortFunc(hs, func(a, b HostFigures) int {
		switch {
		case a.Groups != b.Groups:
			return a.Groups - b.Groups
		case a.Utilisation < b.Utilisation:
			return -1
		case a.Utilisation > b.Utilisation:
			return 1
		case a.Host > b.Host:
			return -1
		case a.Host < b.Host:
			return 1
		}
		return 0
	})
	n := float64(len(f.Active))
	predicted := []schema.Evidence{{Name: "mean utilisation of the active hosts", Value: mean * n / (n - 1)}}
	return &Proposal{Policy: HostsPolicy, Action: schema.Action{Kind: ActionReleaseHost, Host: hs[0].Host},
		Reason: why + ": give host " + hs[0].Host + " back to the pool", Evidence: evidence, Predicted: predicted}
}

// Done tells the decision that its last proposal was applied at at
// (applied), or failed: either way it locks further decisions for Lock
// and starts the spans afresh, so a request command, failing or not, runs
// at most once per Lock, and only after another Span of saturation. An
// applied proposal awaits Check.
func (h *Hosts) Done(at time.Time, applied bool) {
	h.lockedUntil = at.Add(h.cfg.Lock)
	h.outSince, h.inSince = time.Time{}, time.Time{}
	if applied && h.proposed != nil {
		h.pending = h.proposed
		h.pending.at = at
	}
	h.proposed = nil
}

// HostsCheck is the check of an applied decision once it has settled.
type HostsCheck struct {
	// Action is the decision checked.
	Action schema.Action
	// Worse is set when the decision made things worse; Why says how.
	Worse bool
	Why   string
	// Observed are the figures before and after it.
	Observed []schema.Evidence
	// Undo undoes the decision when it was worse and can be undone (the
	// host given back is still in the pool, the host taken is still
	// active and more than Min are); nil otherwise.
	Undo *Proposal
}

// Check checks the decision applied last (Done) once it has settled:
// Span after it, with no migration in progress and every active host's
// report current (a host given back that has not been released yet, as
// its release waits for the check, does not hold it up). It returns nil until then, and once per
// decision. The decision is worse when, with records arriving at most
// loadRise times as fast as before:
//
//   - a host given back to the pool left every active host saturated
//     (the scale-out condition): undone by taking it into service again;
//   - a host taken into service left the active hosts' mean utilisation
//     over worseRatio times what it was before, and at least
//     ScaleInBelow: undone by giving it back.
//
// A rise of the load is not the decision's doing: it is kept.
func (h *Hosts) Check(f ClusterFigures) *HostsCheck {
	p := h.pending
	if p == nil || f.At.Sub(p.at) < h.cfg.Span || f.Migrating || len(f.Missing) > 0 || len(f.Active) == 0 {
		return nil
	}
	h.pending = nil
	n := len(f.Active)
	var sum float64
	allSaturated := true
	for _, a := range f.Active {
		sum += a.Utilisation
		allSaturated = allSaturated && (a.Saturated || a.Utilisation >= h.cfg.ScaleOutAbove)
	}
	mean, rate := sum/float64(n), inputRate(f.Active)
	c := &HostsCheck{Action: p.action, Observed: []schema.Evidence{
		{Name: "mean utilisation of the active hosts before", Value: p.mean},
		{Name: "mean utilisation of the active hosts after", Value: mean},
		{Name: "input rate of the active hosts before", Value: p.rate, Unit: "records/s"},
		{Name: "input rate of the active hosts after", Value: rate, Unit: "records/s"},
		{Name: "active hosts after", Value: float64(n)},
	}}
	if rate > loadRise*p.rate {
		return c
	}
	host := p.action.Host
	switch p.action.Kind {
	case ActionReleaseHost:
		if !allSaturated {
			return c
		}
		c.Worse, c.Why = true, fmt.Sprintf("every active host is saturated after host %s went back to the pool, at the same load (mean utilisation %.2f, %.2f before)", host, mean, p.mean)
		if slices.Contains(f.Pool, host) && n < h.cfg.Max {
			c.Undo = &Proposal{Policy: HostsPolicy, Action: schema.Action{Kind: ActionActivateHost, Host: host},
				Reason: "undo: " + c.Why + ": take host " + host + " into service again", Evidence: c.Observed}
		}
	case ActionActivateHost:
		if mean <= worseRatio*p.mean || mean < h.cfg.ScaleInBelow {
			return c
		}
		c.Worse, c.Why = true, fmt.Sprintf("the active hosts' mean utilisation rose from %.2f to %.2f after host %s was taken into service, at the same load", p.mean, mean, host)
		active := slices.ContainsFunc(f.Active, func(a HostFigures) bool { return a.Host == host })
		if active && n > h.cfg.Min {
			c.Undo = &Proposal{Policy: HostsPolicy, Action: schema.Action{Kind: ActionReleaseHost, Host: host},
				Reason: "undo: " + c.Why + ": give host " + host + " back to the pool", Evidence: c.Observed}
		}
	}
	return c
}
