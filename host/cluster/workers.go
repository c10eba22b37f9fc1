package cluster

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/sluicehq/sluice/state"
)

// MaxWorkers is the most workers an operator may run on one host: the
// bound the executor enforces on a change of workers (exec.Job.SetWorkers).
const MaxWorkers = state.MaxKeyGroups

// ErrBadWorkers is matched, with errors.Is, by the error of a worker count
// that cannot be recorded: an operator without a name, a count below 1 or
// above MaxWorkers.
var ErrBadWorkers = errors.New("bad worker count")

// Workers is the number of workers each scaled operator runs on the
// hosts of the cluster (Trisk's change of parallelism, cluster-wide). It
// is part of the assignment's table, as Versions is, so that a scale is
// one compare-and-set and two racing scales are both recorded, in order.
//
// An operator the record does not name runs the workers of the pipeline
// file (operators[].parallelism) on every host, or whatever a change on
// that host (sluice workers, the control plane) gave it since.
type Workers struct {
	// Epoch counts the scales recorded; each one's OperatorWorkers
	// carries the epoch it was recorded at.
	Epoch uint64 `json:"epoch"`
	// Operators holds the count of each operator scaled at least once.
	Operators map[string]OperatorWorkers `json:"operators"`
}

// OperatorWorkers is the number of workers an operator runs on every
// host, with the hosts that run another number.
type OperatorWorkers struct {
	// Count is the number of workers every host runs, between 1 and
	// MaxWorkers; 0 when only Hosts name counts (a host not in Hosts then
	// keeps its own).
	Count int `json:"count"`
	// Hosts holds the hosts that run another count than Count, by host
	// id; each count is between 1 and MaxWorkers.
	Hosts map[string]int `json:"hosts,omitempty"`
	// Epoch is Workers.Epoch when this count was last changed.
	Epoch uint64 `json:"epoch"`
	// By says who recorded it: "host <id>" for a host's HTTP API, "cli"
	// for sluice cluster scale.
	By string `json:"by"`
	// At is when it was recorded.
	At time.Time `json:"at"`
}

// For returns the number of workers w records for operator op on host,
// and whether it records one; w may be nil.
func (w *Workers) For(op, host string) (int, bool) {
	if w == nil {
		return 0, false
	}
	ow, ok := w.Operators[op]
	if !ok {
		return 0, false
	}
	if n, ok := ow.Hosts[host]; ok {
		return n, true
	}
	return ow.Count, ow.Count > 0
}

// Operator returns the record of operator op, if any; w may be nil.
func (w *Workers) Operator(op string) (OperatorWorkers, bool) {
	if w == nil {
		return OperatorWorkers{}, false
	}
	ow, ok := w.Operators[op]
	return ow, ok
}

// clone returns a deep copy of w (nil for nil).
func (w *Workers) clone() *Workers {
	if w == nil {
		return nil
	}
	c := *w
	c.Operators = make(map[string]OperatorWorkers, len(w.Operators))
	for op, ow := range w.Operators {
		ow.Hosts = maps.Clone(ow.Hosts)
		c.Operators[op] = ow
	}
	return &c
}

// validate checks w's invariants with hosts as the hosts that have
// joined: every operator named, every count between 1 and MaxWorkers (a
// Count of 0 only beside hosts' counts), every host known, every epoch
// between 1 and w.Epoch.
func (w *Workers) validate(hosts []string) error {
	if w == nil {
		return nil
	}
	for _, op := range slices.Sorted(maps.Keys(w.Operators)) {
		ow := w.Operators[op]
		f := fmt.Sprintf("workers.operators[%q]", op)
		if op == "" {
			return invalid(f, "an operator has a name")
		}
		switch {
		case ow.Count == 0 && len(ow.Hosts) == 0:
			return invalid(f+".count", "0 and no host's count: an operator's record gives a count")
		case ow.Count < 0 || ow.Count > MaxWorkers:
			return invalid(f+".count", "%d is not between 1 and %d", ow.Count, MaxWorkers)
		}
		for _, h := range slices.Sorted(maps.Keys(ow.Hosts)) {
			if !slices.Contains(hosts, h) {
				return invalid(fmt.Sprintf("%s.hosts[%q]", f, h), "host %q has never joined the cluster (hosts: %s)", h, hostList(hosts))
			}
			if n := ow.Hosts[h]; n < 1 || n > MaxWorkers {
				return invalid(fmt.Sprintf("%s.hosts[%q]", f, h), "%d is not between 1 and %d", n, MaxWorkers)
			}
		}
		if ow.Epoch < 1 || ow.Epoch > w.Epoch {
			return invalid(f+".epoch", "%d is not between 1 and the record's epoch %d", ow.Epoch, w.Epoch)
		}
	}
	return nil
}

// SetWorkers records that operator op runs n workers: on every host when
// host is "" (the hosts' own counts of op are dropped), on host alone
// otherwise. It bumps the record's epoch and gives it to op's record; by
// and at say who recorded it and when. A name that is empty or a count
// outside 1 to MaxWorkers fails, matching ErrBadWorkers and naming the
// operator and the count, and nothing changes. That the operator exists
// and may change its workers, and that host has joined, is the caller's
// to check (the table does not know the pipeline; Update refuses a host
// that has never joined).
func (a *Assignment) SetWorkers(op, host string, n int, by string, at time.Time) error {
	if op == "" {
		return fmt.Errorf("cluster: %w: no operator named", ErrBadWorkers)
	}
	if n < 1 || n > MaxWorkers {
		return fmt.Errorf("cluster: %w: operator %q: %d workers: want 1 to %d", ErrBadWorkers, op, n, MaxWorkers)
	}
	if a.Workers == nil {
		a.Workers = &Workers{}
	}
	if a.Workers.Operators == nil {
		a.Workers.Operators = map[string]OperatorWorkers{}
	}
	ow := a.Workers.Operators[op]
	if host == "" {
		ow.Count, ow.Hosts = n, nil
	} else {
		ow.Hosts = maps.Clone(ow.Hosts)
		if ow.Hosts == nil {
			ow.Hosts = map[string]int{}
		}
		ow.Hosts[host] = n
	}
	a.Workers.Epoch++
	ow.Epoch, ow.By, ow.At = a.Workers.Epoch, by, at
	a.Workers.Operators[op] = ow
	return nil
}

// RunsWorkers reports whether r runs, for every operator w records, the
// count w gives r's host.
func (r Running) RunsWorkers(w *Workers) bool {
	if w == nil {
		return true
	}
	for op := range w.Operators {
		if n, ok := w.For(op, r.Host); ok && r.Workers[op] != n {
			return false
		}
	}
	return true
}

// WorkersPending returns the hosts of live that do not run the worker
// counts a's record gives them, by their reports (a live host with no
// report is pending), sorted. None is pending when a records no counts.
func WorkersPending(a *Assignment, reports map[string]Running, live []string) []string {
	if a.Workers == nil || len(a.Workers.Operators) == 0 {
		return nil
	}
	var out []string
	for _, h := range live {
		r, ok := reports[h]
		if !ok {
			out = append(out, h)
			continue
		}
		r.Host = h
		if !r.RunsWorkers(a.Workers) {
			out = append(out, h)
		}
	}
	slices.Sort(out)
	return out
}
