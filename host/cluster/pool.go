package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
)

// ErrPool is matched, with errors.Is, by the error of a change of the
// host pool that does not fit the table: activating a host that is not in
// the pool, pooling a host a move is bringing groups to, or a change made
// from an out-of-date view of the pool (its epoch moved on meanwhile).
var ErrPool = errors.New("host pool change refused")

// Pool is the cluster's host pool: hosts that joined (sluice run --pool)
// and hold no key groups. The coordinator's rebalance leaves them out;
// taking one into service (Activate) or giving one back (AddToPool) is a
// change of this record, inside Update, so that it is ordered with
// migrations and swaps by one compare-and-set, and two controllers that
// decide at once cannot both act: each names the epoch it decided on
// (PoolChange.Expect), and the second finds it moved on.
type Pool struct {
	// Hosts are the pool hosts, sorted, each at most once.
	Hosts []string `json:"hosts"`
	// Epoch counts the changes of the pool.
	Epoch uint64 `json:"epoch"`
	// Last is the last change, for a person reading the table.
	Last *PoolChange `json:"last,omitempty"`
}

// PoolChange is a change of the pool: a host put into it or taken out of
// it, by whom and why.
type PoolChange struct {
	// Host is the host the change is about.
	Host string `json:"host"`
	// Action is "pool" (the host joined the pool or was given back) or
	// "activate" (it was taken into service).
	Action string `json:"action"`
	// By says who made it: "host <id>", "cli", "control <id>",
	// "failover".
	By string `json:"by"`
	// Reason says why, for the log.
	Reason string `json:"reason,omitempty"`
	// Expect, when set, makes the change apply only to a pool whose
	// epoch is Epoch: the pool the change was decided on.
	Expect bool `json:"-"`
	// Epoch is the pool epoch Expect names.
	Epoch uint64 `json:"-"`
	// At is when it was recorded.
	At time.Time `json:"at"`
}

// Pool actions.
const (
	PoolActionPool     = "pool"
	PoolActionActivate = "activate"
)

// Pooled reports whether host is a pool host in a.
func (a *Assignment) Pooled(host string) bool {
	return a.Pool != nil && slices.Contains(a.Pool.Hosts, host)
}

// PoolEpoch returns the pool's epoch (0 when the table has no pool).
func (a *Assignment) PoolEpoch() uint64 {
	if a.Pool == nil {
		return 0
	}
	return a.Pool.Epoch
}

// PoolHosts returns the pool hosts of a, sorted; nil when none.
func (a *Assignment) PoolHosts() []string {
	if a.Pool == nil {
		return nil
	}
	return slices.Clone(a.Pool.Hosts)
}

// Active returns the hosts of live that are not pool hosts in a: those
// the coordinator balances the key groups over.
func (a *Assignment) Active(live []string) []string {
	out := make([]string, 0, len(live))
	for _, h := range live {
		if !a.Pooled(h) {
			out = append(out, h)
		}
	}
	return out
}

// AddToPool puts ch.Host into the pool: the coordinator then moves its
// key groups, if it has any, to the active hosts and gives it none. A
// host in the pool already is left as it is (no new epoch). It fails,
// matching ErrPool, when the epoch check of ch fails or a move of the
// migration in progress brings a group to the host.
func (a *Assignment) AddToPool(ch PoolChange) error {
	if a.Pooled(ch.Host) {
		return nil
	}
	if err := a.checkPoolEpoch(ch); err != nil {
		return err
	}
	if m := a.Migration; m != nil {
		for _, s := range m.Steps {
			for _, mv := range s.Moves {
				if mv.To == ch.Host && mv.State != StepInstalled {
					return fmt.Errorf("cluster: host %s: %w: migration %q moves group %d to it", ch.Host, ErrPool, m.ID, mv.Group)
				}
			}
		}
	}
	if a.Pool == nil {
		a.Pool = &Pool{}
	}
	a.Pool.Hosts = append(a.Pool.Hosts, ch.Host)
	slices.Sort(a.Pool.Hosts)
	a.notePool(ch, PoolActionPool)
	return nil
}

// Activate takes ch.Host out of the pool: the coordinator's next
// rebalance gives it key groups. It fails, matching ErrPool, when the
// host is not in the pool (another change took it first) or the epoch
// check of ch fails.
func (a *Assignment) Activate(ch PoolChange) error {
	if !a.Pooled(ch.Host) {
		return fmt.Errorf("cluster: host %s: %w: it is not in the pool (pool: %s)", ch.Host, ErrPool, hostList(a.PoolHosts()))
	}
	if err := a.checkPoolEpoch(ch); err != nil {
		return err
	}
	a.Pool.Hosts = slices.DeleteFunc(a.Pool.Hosts, func(h string) bool { return h == ch.Host })
	a.notePool(ch, PoolActionActivate)
	return nil
}

// checkPoolEpoch refuses ch when it names an epoch the pool has moved on
// from.
func (a *Assignment) checkPoolEpoch(ch PoolChange) error {
	if ch.Expect && a.PoolEpoch() != ch.Epoch {
		return fmt.Errorf("cluster: host %s: %w: decided on pool epoch %d, the pool is at %d", ch.Host, ErrPool, ch.Epoch, a.PoolEpoch())
	}
	return nil
}

// notePool counts a change of the pool and records it as the last.
func (a *Assignment) notePool(ch PoolChange, action string) {
	a.Pool.Epoch++
	ch.Action = action
	ch.Expect, ch.Epoch = false, 0
	if ch.At.IsZero() {
		ch.At = time.Now().UTC()
	}
	a.Pool.Last = &ch
}

// clone returns a deep copy of p (nil for nil).
func (p *Pool) clone() *Pool {
	if p == nil {
		return nil
	}
	c := *p
	c.Hosts = slices.Clone(p.Hosts)
	if p.Last != nil {
		l := *p.Last
		c.Last = &l
	}
	return &c
}

// validatePool checks the pool record of a: its hosts have joined, are
// sorted and named once, and no move that is not installed brings a
// group to one of them. A pool host may still own groups: those the
// coordinator moves off it once it was given back.
func (a *Assignment) validatePool(hosts []string) error {
	p := a.Pool
	if p == nil {
		return nil
	}
	for i, h := range p.Hosts {
		f := fmt.Sprintf("pool.hosts[%d]", i)
		if !slices.Contains(hosts, h) {
			return invalid(f, "host %q has never joined the cluster (hosts: %s)", h, hostList(hosts))
		}
		if i > 0 && p.Hosts[i-1] >= h {
			return invalid(f, "%q: the pool's hosts are sorted and each named once", h)
		}
	}
	if len(p.Hosts) > 0 && p.Epoch == 0 {
		return invalid("pool.epoch", "0, but the pool holds hosts: each change counts")
	}
	if m := a.Migration; m != nil {
		for i, s := range m.Steps {
			for j, mv := range s.Moves {
				if mv.State != StepInstalled && a.Pooled(mv.To) {
					return invalid(fmt.Sprintf("migration.steps[%d].moves[%d].to", i, j), "%q is a pool host: a pool host is given no key groups", mv.To)
				}
			}
		}
	}
	return nil
}

// keyLoadPrefix prefixes the keys of the hosts' load reports.
const keyLoadPrefix = "load."

// Load is a host's report of what the cluster-level scaling decision
// needs, in the cluster's bucket under load.<id>: how busy its workers
// are and whether its own controller wants more workers than it may run.
type Load struct {
	// Host is the host's id.
	Host string `json:"host"`
	// Utilisation is the mean, over the host's workers, of the share of
	// the last window each spent busy (0 to 1).
	Utilisation float64 `json:"utilisation"`
	// Saturated is set when the host's controller wants more workers for
	// an operator that runs control.workers.max already (a scale-out the
	// host cannot make).
	Saturated bool `json:"saturated"`
	// InputRate is the records per second the host's sources (its key
	// groups of the partition stream) delivered over the last window.
	InputRate float64 `json:"input_rate"`
	// Groups is the number of key groups the host owns.
	Groups int `json:"groups"`
	// Behind is set when one of the host's sources has a backlog that
	// grows over the last window: the host does not keep up.
	Behind bool `json:"behind,omitempty"`
	// At is when the host wrote the report.
	At time.Time `json:"at"`
}

// ReportLoad writes l as host l.Host's load report.
func (c *Cluster) ReportLoad(ctx context.Context, l Load) error {
	if !nameRE.MatchString(l.Host) {
		return fmt.Errorf("cluster: %w: host id %q: use letters, digits, - and _", ErrBadConfig, l.Host)
	}
	data, err := json.Marshal(l)
	if err != nil {
		return fmt.Errorf("cluster: encoding the load of host %s: %w", l.Host, err)
	}
	if _, err := c.kv.Put(ctx, keyLoadPrefix+l.Host, data); err != nil {
		return fmt.Errorf("cluster: writing bucket %s key %q: %w", BucketName(c.cfg.Pipeline), keyLoadPrefix+l.Host, err)
	}
	return nil
}

// Loads returns every host's last load report, by host id. A report that
// cannot be decoded (edited by hand) is an error naming its key.
func (c *Cluster) Loads(ctx context.Context) (map[string]Load, error) {
	es, err := entries(ctx, c.js, c.kv, keyLoadPrefix+">")
	if err != nil {
		return nil, fmt.Errorf("cluster: listing the hosts' loads in bucket %s: %w", BucketName(c.cfg.Pipeline), err)
	}
	out := make(map[string]Load, len(es))
	for _, e := range es {
		var l Load
		if err := json.Unmarshal(e.Value(), &l); err != nil {
			return nil, fmt.Errorf("cluster: bucket %s key %q (revision %d): not a load report this build reads: %w",
				BucketName(c.cfg.Pipeline), e.Key(), e.Revision(), err)
		}
		l.Host = strings.TrimPrefix(e.Key(), keyLoadPrefix)
		out[l.Host] = l
	}
	return out, nil
}
