package control

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/sluicehq/sluice/host/api/schema"
)

// ErrStragglerConfig is wrapped by NewStraggler's error for a setting out
// of range.
var ErrStragglerConfig = errors.New("bad straggler setting")

// StragglerConfig configures a Straggler; zero fields take their defaults.
type StragglerConfig struct {
	// Ratio: a worker whose service rate μ is under its peers' median μ
	// divided by Ratio is a straggler (default 1.5; must be over 1).
	Ratio float64
	// MinRecords is how many records a worker must have run in the
	// window to be judged (default 1000): fewer measure its μ too
	// roughly.
	MinRecords uint64
	// Window is the span over which rates are taken (default 2s).
	Window time.Duration
	// Rounds is how many rounds in a row a worker must be found slow
	// before it is called a straggler (default 3): one slow window on a
	// busy machine is noise.
	Rounds int
}

// The straggler detector's defaults, and how long it leaves a worker
// alone after a move off it was rolled back or failed.
const (
	defaultStragglerRatio      = 1.5
	defaultStragglerMinRecords = 1000
	defaultStragglerWindow     = 2 * time.Second
	defaultStragglerRounds     = 3
	stragglerHoldOff           = time.Minute
)

// Straggler is the straggler detector (StreamOps): a worker that runs
// its records slower than its peers run theirs is a straggler, and its
// key groups are moved to its peers.
//
// A worker is judged on its true service rate μ, records run per second
// of useful time (DS2), over the window: a slowed worker or a worker on a
// slow machine spends more time on each record. A worker that merely has
// more records than its peers (skew: a higher arrival rate λ) but runs
// them as fast is not a straggler; that is the latency guarantor's
// business. Among the workers of an operator that each ran at least
// MinRecords in the window (at least two of them), a worker whose μ is
// under the median μ of the others divided by Ratio is a straggler, so
// workers that are all equally slow make none.
//
// For each straggler it returns a finding (cause "straggler", subject
// the worker as "operator/id"; the summary names its host when it has
// one, and the host itself when every judged worker of the operator on
// that host is slow while others elsewhere are not). For the straggler
// of a keyed operator (Movable) that is slowest against its peers, it
// proposes a move-groups action: its key groups, lowest arrival rate
// first, each to the peer with the most spare capacity (μ - λ) left, no
// peer taking more than its spare capacity; peers that are stragglers
// themselves, or ran too few records to be judged, take none. A group
// that fits on no peer stays, and the proposal says so. After a move off
// a worker is rolled back or fails, no move off it is proposed for a
// minute.
type Straggler struct {
	cfg StragglerConfig
	// held maps "operator/worker" to the time until which no move off
	// that worker is proposed.
	held map[string]time.Time
	// streak counts, by "operator/worker", the rounds in a row the
	// worker was found slow.
	streak map[string]int
}

// NewStraggler returns a straggler detector; it refuses a Ratio of 1 or
// less, a negative Window or Rounds, with an error wrapping
// ErrStragglerConfig.
func NewStraggler(cfg StragglerConfig) (*Straggler, error) {
	if cfg.Ratio == 0 {
		cfg.Ratio = defaultStragglerRatio
	}
	if !(cfg.Ratio > 1) || math.IsInf(cfg.Ratio, 0) {
		return nil, fmt.Errorf("control: straggler: ratio %v: %w (it must be a number over 1)", cfg.Ratio, ErrStragglerConfig)
	}
	if cfg.MinRecords == 0 {
		cfg.MinRecords = defaultStragglerMinRecords
	}
	if cfg.Window < 0 {
		return nil, fmt.Errorf("control: straggler: window %v: %w (it must be positive)", cfg.Window, ErrStragglerConfig)
	}
	if cfg.Window == 0 {
		cfg.Window = defaultStragglerWindow
	}
	if cfg.Rounds < 0 {
		return nil, fmt.Errorf("control: straggler: rounds %d: %w (it must be at least 1)", cfg.Rounds, ErrStragglerConfig)
	}
	if cfg.Rounds == 0 {
		cfg.Rounds = defaultStragglerRounds
	}
	return &Straggler{cfg: cfg, held: make(map[string]time.Time), streak: make(map[string]int)}, nil
}

// Config returns the detector's configuration, defaults filled in.
func (s *Straggler) Config() StragglerConfig { return s.cfg }

// Name returns "straggler".
func (s *Straggler) Name() string { return "straggler" }

// Outcome remembers a move off a worker that was rolled back or failed,
// so that none is proposed off that worker for a minute.
func (s *Straggler) Outcome(d schema.Decision) {
	if d.Action.Kind != "move-groups" || len(d.Action.Moves) == 0 {
		return
	}
	if d.Outcome == "rolled back" || d.Outcome == "failed" {
		s.held[subjectOfWorker(d.Action.Operator, d.Action.Moves[0].FromWorker)] = d.Time.Add(stragglerHoldOff)
	}
}

// straggler is a slow worker found in a round.
type straggler struct {
	op       *OperatorSample
	rates    *OperatorRates
	w        WorkerRates
	median   float64 // the peers' median μ
	hostSlow bool    // every judged worker of op on w.Host is slow
}

// slowdown is how many times the straggler's μ is under its peers'.
func (g straggler) slowdown() float64 { return g.median / g.w.Service }

// Propose finds the stragglers of the window and proposes moving the key
// groups off the slowest movable one.
func (s *Straggler) Propose(v *View) (*Proposal, []schema.Finding) {
	first, last, ok := v.Span(s.cfg.Window)
	if !ok {
		return nil, nil
	}
	for k, until := range s.held {
		if !last.At.Before(until) {
			delete(s.held, k)
		}
	}
	var (
		findings []schema.Finding
		best     *Proposal
		bestSlow float64
		seen     = map[string]bool{}
	)
	defer func() {
		for k := range s.streak {
			if !seen[k] {
				delete(s.streak, k)
			}
		}
	}()
	for i := range last.Operators {
		op := &last.Operators[i]
		r, ok := Rates(first, last, op.Name)
		if !ok {
			continue
		}
		slow, judged := s.stragglers(op, &r)
		slow = s.persistent(op.Name, slow, seen)
		for _, g := range slow {
			findings = append(findings, stragglerFinding(g, last.At))
			if !op.Movable || len(g.w.Groups) == 0 || g.slowdown() <= bestSlow {
				continue
			}
			if _, held := s.held[subjectOfWorker(op.Name, g.w.ID)]; held {
				continue
			}
			if p := stragglerMoves(g, slow, judged); p != nil {
				best, bestSlow = p, g.slowdown()
			}
		}
	}
	return best, findings
}

// persistent returns those of operator's slow workers found slow for
// Rounds rounds in a row, counting this one; it marks each in seen.
func (s *Straggler) persistent(operator string, slow []straggler, seen map[string]bool) []straggler {
	if s.streak == nil {
		s.streak = map[string]int{}
	}
	var out []straggler
	for _, g := range slow {
		k := subjectOfWorker(operator, g.w.ID)
		seen[k] = true
		s.streak[k]++
		if s.streak[k] >= s.cfg.Rounds {
			out = append(out, g)
		}
	}
	return out
}

// stragglers returns the slow workers of operator op, and the workers
// that ran enough records to be judged.
func (s *Straggler) stragglers(op *OperatorSample, r *OperatorRates) (slow []straggler, judged []WorkerRates) {
	for _, w := range r.Workers {
		if w.Records >= s.cfg.MinRecords && w.Service > 0 {
			judged = append(judged, w)
		}
	}
	if len(judged) < 2 {
		return nil, judged
	}
	peers := make([]float64, 0, len(judged)-1)
	for i, w := range judged {
		peers = peers[:0]
		for j, p := range judged {
			if j != i {
				peers = append(peers, p.Service)
			}
		}
		med := median(peers)
		if w.Service < med/s.cfg.Ratio {
			slow = append(slow, straggler{op: op, rates: r, w: w, median: med})
		}
	}
	// A host is slow when all the operator's judged workers on it are
	// and some judged worker elsewhere is not.
	for i := range slow {
		h := slow[i].w.Host
		if h == "" {
			continue
		}
		all, elsewhere := true, false
		for _, w := range judged {
			isSlow := slices.ContainsFunc(slow, func(g straggler) bool { return g.w.ID == w.ID })
			if w.Host == h && !isSlow {
				all = false
			}
			if w.Host != h && !isSlow {
				elsewhere = true
			}
		}
		slow[i].hostSlow = all && elsewhere
	}
	return slow, judged
}

// stragglerFinding describes straggler g.
func stragglerFinding(g straggler, at time.Time) schema.Finding {
	name := subjectOfWorker(g.op.Name, g.w.ID)
	where := ""
	if g.w.Host != "" {
		where = " on host " + g.w.Host
	}
	summary := fmt.Sprintf("Worker %s%s runs %s records per second of busy time, %.1fx fewer than its peers' median (%s) on records of the same operator.",
		name, where, doctorNumber(g.w.Service), g.slowdown(), doctorNumber(g.median))
	if g.hostSlow {
		summary += fmt.Sprintf(" Every worker of %s on host %s is this slow and workers elsewhere are not: host %s is slow.", g.op.Name, g.w.Host, g.w.Host)
	}
	var rec string
	switch {
	case g.op.Movable:
		rec = "The straggler policy moves its key groups to its peers; if the worker stays slow, look for what competes for its CPU"
	default:
		rec = fmt.Sprintf("Its records cannot be moved to other workers (%s has no key groups); look for what competes for its CPU", g.op.Name)
	}
	if g.w.Host != "" {
		rec += " on host " + g.w.Host + " (other processes, CPU throttling), or move the host's key groups to other hosts with `sluice cluster move`."
	} else {
		rec += " (other processes, CPU throttling)."
	}
	return schema.Finding{
		Cause:   "straggler",
		Subject: name,
		Summary: summary,
		Evidence: []schema.Evidence{
			{Name: "service rate of " + name, Value: g.w.Service, Unit: "records/s"},
			{Name: "median service rate of the peers of " + name, Value: g.median, Unit: "records/s"},
			{Name: "slowdown of " + name, Value: g.slowdown(), Unit: "ratio"},
		},
		Recommendation: rec,
		Since:          at,
	}
}

// stragglerMoves proposes moving straggler g's key groups to the judged
// workers that are not slow, lowest arrival first, each to the peer with
// the most spare capacity left; nil when no group fits on any peer.
func stragglerMoves(g straggler, slow []straggler, judged []WorkerRates) *Proposal {
	type peer struct {
		w     WorkerRates
		spare float64 // μ - λ, less what it was given
		took  float64 // arrival rate it was given
	}
	var peers []*peer
	for _, w := range judged {
		if !slices.ContainsFunc(slow, func(s straggler) bool { return s.w.ID == w.ID }) {
			peers = append(peers, &peer{w: w, spare: w.Service - w.Arrival})
		}
	}
	if len(peers) == 0 {
		return nil
	}
	arrival := func(kg int) float64 {
		if kg >= 0 && kg < len(g.rates.GroupArrival) {
			return g.rates.GroupArrival[kg]
		}
		return 0
	}
	groups := slices.Clone(g.w.Groups)
	slices.SortStableFunc(groups, func(a, b int) int {
		if c := cmp.Compare(arrival(a), arrival(b)); c != 0 {
			return c
		}
		return a - b
	})
	var moves []schema.GroupMove
	left := g.w.Arrival
	for _, kg := range groups {
		to := peers[0]
		for _, p := range peers[1:] {
			if p.spare > to.spare {
				to = p
			}
		}
		a := arrival(kg)
		if a > to.spare {
			break // groups are in ascending arrival: none after fits either
		}
		to.spare -= a
		to.took += a
		left -= a
		moves = append(moves, schema.GroupMove{Group: kg, FromWorker: g.w.ID, ToWorker: to.w.ID})
	}
	if len(moves) == 0 {
		return nil
	}
	name := subjectOfWorker(g.op.Name, g.w.ID)
	var tos []string
	predicted := []schema.Evidence{{Name: "arrival rate of " + name, Value: max(left, 0), Unit: "records/s"}}
	for _, p := range peers {
		if p.took > 0 {
			tos = append(tos, fmt.Sprint(p.w.ID))
			pn := subjectOfWorker(g.op.Name, p.w.ID)
			predicted = append(predicted,
				schema.Evidence{Name: "arrival rate of " + pn, Value: p.w.Arrival + p.took, Unit: "records/s"},
				schema.Evidence{Name: "utilization of " + pn, Value: (p.w.Arrival + p.took) / p.w.Service, Unit: "ratio"})
		}
	}
	where := ""
	if g.w.Host != "" {
		where = " on host " + g.w.Host
	}
	reason := fmt.Sprintf("worker %s%s is a straggler: it runs %s records per busy second, %.1fx fewer than its peers' median (%s); move %d of its %d key groups to workers %s",
		name, where, doctorNumber(g.w.Service), g.slowdown(), doctorNumber(g.median), len(moves), len(g.w.Groups), strings.Join(tos, ", "))
	if len(moves) < len(g.w.Groups) {
		reason += fmt.Sprintf(" (the peers have no spare capacity for the other %d)", len(g.w.Groups)-len(moves))
	}
	f := stragglerFinding(g, time.Time{})
	return &Proposal{
		Policy:    "straggler",
		Action:    schema.Action{Kind: "move-groups", Operator: g.op.Name, Moves: moves},
		Reason:    reason,
		Evidence:  append(f.Evidence, schema.Evidence{Name: "arrival rate of " + name, Value: g.w.Arrival, Unit: "records/s"}),
		Predicted: predicted,
	}
}

// workerName names worker id of operator op as "op/id".
func subjectOfWorker(op string, id int) string { return fmt.Sprintf("%s/%d", op, id) }
