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
//     mean utilisation times n/(n-1) under ScaleInBelow, and no host's
//     controller wanting more workers) for Span, and more than Min hosts
//     are active: give the host with the fewest key groups back to the
//     pool (its groups move off, then the release command runs);
//   - keep the bounds: fewer than Min active hosts scale out, more than
//     Max scale in, whatever the load.
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
	allSaturated, anyWants := true, false
	for _, a := range f.Active {
		sum += a.Utilisation
		sat := a.Saturated || a.Utilisation >= h.cfg.ScaleOutAbove
		allSaturated = allSaturated && sat
		anyWants = anyWants || a.Saturated
	}
	mean := sum / float64(n)
	fits := n > 1 && !anyWants && mean*float64(n)/float64(n-1) < h.cfg.ScaleInBelow
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
	}
	held := func(t time.Time) bool { return !t.IsZero() && now.Sub(t) >= h.cfg.Span }
	switch {
	case n < h.cfg.Min:
		return h.out(f, evidence, mean, fmt.Sprintf("%d active hosts, under hosts.min %d", n, h.cfg.Min))
	case n > h.cfg.Max:
		return h.in(f, evidence, mean, fmt.Sprintf("%d active hosts, over hosts.max %d", n, h.cfg.Max))
	case held(h.outSince) && n < h.cfg.Max:
		return h.out(f, evidence, mean, fmt.Sprintf("every active host saturated for %v (utilisation at least %g, or its controller at workers.max and wanting more)",
			now.Sub(h.outSince).Round(time.Second), h.cfg.ScaleOutAbove))
	case held(h.inSince) && n > h.cfg.Min:
		return h.in(f, evidence, mean, fmt.Sprintf("the load fits on %d hosts for %v: mean utilisation %.2f × %d/%d is under %g",
			n-1, now.Sub(h.inSince).Round(time.Second), mean, n, n-1, h.cfg.ScaleInBelow))
	}
	return nil
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

// Done tells the decision that its last proposal was applied at at, or
// failed: either way it locks further decisions for Lock and starts the
// spans afresh, so a request command, failing or not, runs at most once
// per Lock, and only after another Span of saturation.
func (h *Hosts) Done(at time.Time) {
	h.lockedUntil = at.Add(h.cfg.Lock)
	h.outSince, h.inSince = time.Time{}, time.Time{}
}
