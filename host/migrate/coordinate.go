package migrate

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"strconv"
	"time"

	"github.com/sluicehq/sluice/host/cluster"
)

// Coordinate rebalances the key groups over the live active hosts (the
// live hosts that are not in the assignment's pool) whenever the set of
// them changes (a host joins, leaves, fails, is taken from the pool or
// given back to it), checking every
// period, while self is the live host with the lowest id and no migration
// is in progress; meanwhile it gives the moves of the migration in
// progress whose destination is gone to a live host. It returns when ctx
// is done. Every host of a cluster runs it: one coordinates at a time,
// and another takes over when that one's lease expires.
//
// A host that fails is found here: once its lease expires it is no
// longer live, and Failover gives its groups, and only those, to the live
// hosts all at once, in one step: they serve nothing until they are
// installed, so moving them in batches (which keeps a live source serving
// the groups not yet moved) would only make the last of them wait for
// the steps before it. The live hosts' Host.Step installs them from their
// last checkpoints; the rebalance that follows evens out the rest. A host
// handing its groups over before it leaves is still live: the set has not
// changed, so its groups are not given back to it.
//
// Pool hosts are given no groups; a host given back to the pool has its
// groups moved off by the rebalance. When no live host is active (every
// active host has failed or left) and a pool host is live, the pool host
// with the lowest id is taken into service (a recorded pool change, by
// "failover"), and the next round gives it the groups.
func Coordinate(ctx context.Context, c *cluster.Cluster, self string, period time.Duration, log *slog.Logger) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	t := time.NewTicker(period)
	defer t.Stop()
	var balanced []string // the live hosts the groups were last balanced over
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		live, err := Live(ctx, c)
		if err != nil {
			// NATS did not answer (a server lost, a leader being
			// elected): the hosts have not changed for that, and
			// forgetting what was balanced would undo, once NATS
			// answers, a move a person made since.
			continue
		}
		if len(live) == 0 || live[0] != self {
			balanced = nil // another host coordinates
			continue
		}
		a, err := c.Assignment(ctx)
		if err != nil {
			continue
		}
		active := a.Active(live)
		if a.Migration != nil {
			retarget(ctx, c, a, active, log)
			continue
		}
		if len(active) == 0 {
			// Every active host is gone: a pool host is taken into
			// service rather than leave the key groups unserved.
			takeFromPool(ctx, c, a, live, log)
			continue
		}
		if slices.Equal(active, balanced) {
			continue
		}
		if dead := deadOwner(a.Owners, live); dead != "" {
			if _, err := Failover(ctx, c, dead, active, cluster.AllAtOnce()); err != nil {
				if !errors.Is(err, cluster.ErrMigration) {
					log.Warn("cluster: could not give the key groups of a host that is not live to the others", "host", dead, "err", err)
				}
				continue
			}
			log.Info("cluster: giving the key groups of a host that is not live to the live hosts", "host", dead, "hosts", active)
			continue
		}
		target := a.Balanced(active)
		if slices.Equal(target, a.Owners) {
			balanced = active
			continue
		}
		id := "rebalance-" + strconv.FormatInt(time.Now().UnixMilli(), 10)
		knobs := cluster.Knobs{Order: cluster.OrderKeyGroup, Batch: 8}
		if a.Whole {
			knobs = cluster.AllAtOnce()
		}
		if _, err := Start(ctx, c, id, target, knobs, nil); err != nil {
			if !errors.Is(err, cluster.ErrMigration) && !errors.Is(err, cluster.ErrSwapPending) {
				log.Warn("cluster: could not start a rebalance", "err", err)
			}
			continue
		}
		balanced = active
		log.Info("cluster: rebalancing the key groups over the live active hosts", "migration", id, "hosts", active)
	}
}

// retarget gives the moves of the current step whose destination is not
// live, and which it has not installed, to the live host (other than the
// move's source) with the fewest groups (in a Whole table all to one
// such host). A move that no such host can take
// (its source is the only live host) is cancelled: the group stays with
// its source, which takes it back if it had released it.
func retarget(ctx context.Context, c *cluster.Cluster, a *cluster.Assignment, live []string, log *slog.Logger) {
	gone := func(id string) bool { return !slices.Contains(live, id) }
	m := a.Migration
	if !slices.ContainsFunc(m.Steps[m.Current].Moves, func(mv cluster.Move) bool { return mv.State != cluster.StepInstalled && gone(mv.To) }) {
		return
	}
	_, err := c.Update(ctx, func(a *cluster.Assignment) error {
		m := a.Migration
		if m == nil {
			return nil
		}
		load := map[string]int{}
		for _, o := range a.Owners {
			load[o]++
		}
		var cancel []int
		whole := "" // in a Whole table, the host every move goes to
		for i := range m.Steps[m.Current].Moves {
			mv := &m.Steps[m.Current].Moves[i]
			if mv.State == cluster.StepInstalled || !gone(mv.To) {
				continue
			}
			if whole != "" {
				mv.To = whole
				continue
			}
			best := ""
			for _, h := range live {
				if h != mv.From && (best == "" || load[h] < load[best]) {
					best = h
				}
			}
			if best == "" {
				cancel = append(cancel, mv.Group)
				continue
			}
			load[best]++
			mv.To = best
			if a.Whole {
				whole = best
			}
		}
		for _, kg := range cancel {
			if _, err := a.Cancel(kg); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		log.Warn("cluster: could not give the moves of a host that is gone to another", "err", err)
		return
	}
	log.Info("cluster: moves to a host that is gone were given to live hosts", "migration", m.ID)
}

// deadOwner returns the first host that owns a group in owners and is not
// in live (sorted), or "" when there is none.
func deadOwner(owners, live []string) string {
	for _, o := range owners {
		if _, ok := slices.BinarySearch(live, o); o != "" && !ok {
			return o
		}
	}
	return ""
}

// Live returns the ids of the hosts of c that hold a lease, sorted.
func Live(ctx context.Context, c *cluster.Cluster) ([]string, error) {
	ms, err := c.Members(ctx)
	if err != nil {
		return nil, err
	}
	ids := make([]string, len(ms))
	for i, m := range ms {
		ids[i] = m.ID
	}
	slices.Sort(ids)
	return ids, nil
}

// takeFromPool takes the live pool host with the lowest id into service,
// when there is one and no live host is active.
func takeFromPool(ctx context.Context, c *cluster.Cluster, a *cluster.Assignment, live []string, log *slog.Logger) {
	pool := a.PoolHosts()
	i := slices.IndexFunc(pool, func(h string) bool { return slices.Contains(live, h) })
	if i < 0 {
		return
	}
	ch := cluster.PoolChange{Host: pool[i], By: "failover", Reason: "no live host is active", Expect: true, Epoch: a.PoolEpoch()}
	if _, err := Activate(ctx, c, ch); err != nil {
		if !errors.Is(err, cluster.ErrPool) {
			log.Warn("cluster: could not take a pool host into service", "host", ch.Host, "err", err)
		}
		return
	}
	log.Warn("cluster: no live host was active: a pool host is taken into service", "host", ch.Host)
}
