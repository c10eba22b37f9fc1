package clusterctl

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/sluicehq/sluice/host/api/schema"
	"github.com/sluicehq/sluice/host/cluster"
	"github.com/sluicehq/sluice/host/migrate"
)

// Activate takes pool host id into service, by compare-and-set of the
// assignment's pool record; by says who asks ("cli", "host h1"). The
// coordinator then rebalances the key groups onto it. Refused, with a
// *RefusedError naming the field "host": a host that has never joined,
// one that is not in the pool, one that holds no lease.
func (ad *Admin) Activate(ctx context.Context, id, by string) (*cluster.Assignment, error) {
	if err := ad.known(ctx, id); err != nil {
		return nil, err
	}
	a, err := migrate.Activate(ctx, ad.Cluster, cluster.PoolChange{Host: id, By: by, Reason: "asked for by " + by})
	if errors.Is(err, cluster.ErrPool) || errors.Is(err, migrate.ErrNotLive) {
		return nil, &RefusedError{Field: "host", Msg: err.Error()}
	}
	return a, err
}

// Release gives active host id back to the pool, by compare-and-set of
// the assignment's pool record; by says who asks. The coordinator then
// moves its key groups to the other active hosts and gives it none; the
// host keeps running. Refused, with a *RefusedError naming the field
// "host": a host that has never joined, the last live active host, one
// a move of the migration in progress brings groups to.
func (ad *Admin) Release(ctx context.Context, id, by string) (*cluster.Assignment, error) {
	if err := ad.known(ctx, id); err != nil {
		return nil, err
	}
	a, err := migrate.Release(ctx, ad.Cluster, cluster.PoolChange{Host: id, By: by, Reason: "asked for by " + by})
	if errors.Is(err, cluster.ErrPool) || errors.Is(err, migrate.ErrLastHost) {
		return nil, &RefusedError{Field: "host", Msg: err.Error()}
	}
	return a, err
}

// known refuses a host that has never joined the cluster.
func (ad *Admin) known(ctx context.Context, id string) error {
	known, err := ad.Cluster.Known(ctx)
	if err != nil {
		return err
	}
	if !slices.Contains(known, id) {
		return &RefusedError{Field: "host", Msg: fmt.Sprintf("host %q has never joined the cluster (hosts: %s)", id, orNone(strings.Join(known, ", ")))}
	}
	return nil
}

// pool fills in st the pool record of a and the hosts' load reports.
func (ad *Admin) pool(ctx context.Context, st *schema.ClusterStatus, a *cluster.Assignment) error {
	st.PoolEpoch = a.PoolEpoch()
	if a.Pool != nil && a.Pool.Last != nil {
		l := a.Pool.Last
		st.PoolLast = fmt.Sprintf("%s %s by %s at %s", l.Action, l.Host, l.By, l.At.Format("2006-01-02T15:04:05Z07:00"))
		if l.Reason != "" {
			st.PoolLast += " (" + l.Reason + ")"
		}
	}
	loads, err := ad.Cluster.Loads(ctx)
	if err != nil {
		return err
	}
	for i := range st.Hosts {
		if l, ok := loads[st.Hosts[i].ID]; ok {
			st.Hosts[i].Load = &schema.ClusterHostLoad{Utilisation: l.Utilisation, Saturated: l.Saturated, InputRate: l.InputRate, Behind: l.Behind, At: l.At}
		}
	}
	return nil
}
