package migrate

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/sluicehq/sluice/host/cluster"
)

// ErrNotLive is matched, with errors.Is, by the error of an activation
// of a pool host that holds no lease.
var ErrNotLive = errors.New("host holds no lease")

// ErrLastHost is matched, with errors.Is, by the error of a release that
// would leave no live active host to serve the key groups.
var ErrLastHost = errors.New("no other live active host")

// Activate takes pool host ch.Host into service: one compare-and-set of
// the assignment's pool record (cluster.Assignment.Activate). The
// coordinator's next round rebalances the key groups onto it
// (Coordinate). It fails, matching cluster.ErrPool, when the host is not
// in the pool, or when ch expects a pool epoch the pool has moved on from
// (another decision came first), and, matching ErrNotLive, when the host
// holds no lease.
func Activate(ctx context.Context, c *cluster.Cluster, ch cluster.PoolChange) (*cluster.Assignment, error) {
	live, err := Live(ctx, c)
	if err != nil {
		return nil, err
	}
	if !slices.Contains(live, ch.Host) {
		return nil, fmt.Errorf("migrate: activation of host %s: %w: only a live pool host is taken into service", ch.Host, ErrNotLive)
	}
	return c.Update(ctx, func(a *cluster.Assignment) error { return a.Activate(ch) })
}

// Release gives active host ch.Host back to the pool: one compare-and-set
// of the assignment's pool record (cluster.Assignment.AddToPool). The
// coordinator then moves the host's key groups to the other active hosts
// by a migration (Coordinate) and gives it none; the host stays live.
// It fails, matching ErrLastHost, when no other live host is active,
// and, matching cluster.ErrPool, when a move of the migration in
// progress brings a group to the host or ch expects a pool epoch the pool
// has moved on from.
func Release(ctx context.Context, c *cluster.Cluster, ch cluster.PoolChange) (*cluster.Assignment, error) {
	live, err := Live(ctx, c)
	if err != nil {
		return nil, err
	}
	return c.Update(ctx, func(a *cluster.Assignment) error {
		if a.Pooled(ch.Host) {
			return nil
		}
		others := slices.DeleteFunc(a.Active(live), func(h string) bool { return h == ch.Host })
		if len(others) == 0 {
			return fmt.Errorf("migrate: release of host %s: %w: its key groups would have nowhere to go", ch.Host, ErrLastHost)
		}
		return a.AddToPool(ch)
	})
}

// Drained reports whether host owns no key group in a and no move of the
// migration in progress involves it: a host given back to the pool is
// drained once the coordinator's migration has moved everything off it.
func Drained(a *cluster.Assignment, host string) bool {
	if slices.Contains(a.Owners, host) {
		return false
	}
	if m := a.Migration; m != nil {
		for _, s := range m.Steps {
			for _, mv := range s.Moves {
				if mv.From == host || mv.To == host {
					return false
				}
			}
		}
	}
	return true
}
