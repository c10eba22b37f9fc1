package clusterctl

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/sluicehq/sluice/host/api"
	"github.com/sluicehq/sluice/host/api/schema"
	"github.com/sluicehq/sluice/host/cluster"
	"github.com/sluicehq/sluice/host/pipeline"
)

// API serves the cluster routes of a host's HTTP API (it is an
// api.Cluster): the status of Admin's cluster with the id of the host that
// answers, the migrations Move, Place and Rebalance start and the worker counts
// Scale records, their refusals marked for the API's statuses.
type API struct {
	// Host is the id of the host that serves the API.
	Host string
	// Admin is the host's view of its pipeline's cluster.
	Admin *Admin
}

// Status returns the cluster's state, with p.Host.
func (p API) Status(ctx context.Context) (schema.ClusterStatus, error) {
	st, err := p.Admin.Status(ctx, time.Now())
	if err != nil {
		return schema.ClusterStatus{}, fmt.Errorf("cluster status: %w", err)
	}
	st.Host = p.Host
	return *st, nil
}

// Move starts a migration that gives req.Groups to req.To.
func (p API) Move(ctx context.Context, req schema.ClusterMoveRequest) (schema.ClusterStart, error) {
	kn, err := Knobs(req.Knobs)
	if err != nil {
		return schema.ClusterStart{}, apiError("cluster move", err)
	}
	a, err := p.Admin.Move(ctx, MigrationID("move", time.Now()), req.Groups, req.To, kn)
	return started(ctx, p.Admin, a, apiError("cluster move", err))
}

// Place starts a migration that gives every key group to req.To and
// keeps them there: the host's pipeline (a stage's, for a pipeline cut
// into stages) must run req.Operator; an operator of another stage is
// placed through a host of that stage.
func (p API) Place(ctx context.Context, req schema.ClusterPlaceRequest) (schema.ClusterStart, error) {
	if !slices.ContainsFunc(p.Admin.Operators, func(o pipeline.Operator) bool { return o.Name == req.Operator }) {
		return schema.ClusterStart{}, apiError("cluster place", &RefusedError{Field: "operator",
			Msg: fmt.Sprintf("pipeline %q does not run operator %q here (a stage's operator is placed through that stage's hosts)", p.Admin.Pipeline, req.Operator)})
	}
	kn, err := Knobs(req.Knobs)
	if err != nil {
		return schema.ClusterStart{}, apiError("cluster place", err)
	}
	a, err := p.Admin.Place(ctx, MigrationID("place", time.Now()), req.To, kn)
	return started(ctx, p.Admin, a, apiError("cluster place", err))
}

// Rebalance starts a migration that spreads the key groups evenly over
// the live hosts.
func (p API) Rebalance(ctx context.Context, req schema.ClusterRebalanceRequest) (schema.ClusterStart, error) {
	kn, err := Knobs(req.Knobs)
	if err != nil {
		return schema.ClusterStart{}, apiError("cluster rebalance", err)
	}
	a, err := p.Admin.Rebalance(ctx, MigrationID("rebalance", time.Now()), kn)
	return started(ctx, p.Admin, a, apiError("cluster rebalance", err))
}

// started is the answer of a move or rebalance that returned a and err:
// the migration it started, or none and the current revision.
func started(ctx context.Context, ad *Admin, a *cluster.Assignment, err error) (schema.ClusterStart, error) {
	if err != nil {
		return schema.ClusterStart{}, err
	}
	if a == nil {
		cur, err := ad.Cluster.Assignment(ctx)
		if err != nil {
			return schema.ClusterStart{}, err
		}
		return schema.ClusterStart{Revision: cur.Revision}, nil
	}
	return schema.ClusterStart{Migration: Plan(a), Revision: a.Revision}, nil
}

// apiError marks err for the API's status: a refusal, bad knobs or a bad
// worker count api.ErrRefused, a migration in progress or a plugin swap not yet run by
// every live host api.ErrConflict.
func apiError(name string, err error) error {
	var re *RefusedError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &re) && re.Field != "":
		return fmt.Errorf("%s: %w: %s: %w", name, api.ErrRefused, re.Field, err)
	case errors.As(err, &re), errors.Is(err, cluster.ErrBadPlan):
		return fmt.Errorf("%s: %w: %w", name, api.ErrRefused, err)
	case errors.Is(err, cluster.ErrBadWorkers):
		return fmt.Errorf("%s: %w: %w", name, api.ErrRefused, err)
	case errors.Is(err, cluster.ErrMigration), errors.Is(err, cluster.ErrSwapPending):
		return fmt.Errorf("%s: %w: %w", name, api.ErrConflict, err)
	}
	return fmt.Errorf("%s: %w", name, err)
}

// ChangeHost takes pool host id into service (activate) or gives active
// host id back to the pool, as asked through p.Host's API.
func (p API) ChangeHost(ctx context.Context, id string, activate bool) (schema.ClusterHostChange, error) {
	var (
		a   *cluster.Assignment
		err error
	)
	name := "cluster host release"
	if activate {
		name = "cluster host activate"
		a, err = p.Admin.Activate(ctx, id, "host "+p.Host)
	} else {
		a, err = p.Admin.Release(ctx, id, "host "+p.Host)
	}
	if err != nil {
		return schema.ClusterHostChange{}, apiError(name, err)
	}
	hs := a.PoolHosts()
	if hs == nil {
		hs = []string{}
	}
	return schema.ClusterHostChange{Host: id, Pool: a.Pooled(id), PoolEpoch: a.PoolEpoch(), PoolHosts: hs, Revision: a.Revision}, nil
}

// Scale records that operator runs workers workers on every host (host
// "") or on host alone, as asked through p.Host's API.
func (p API) Scale(ctx context.Context, operator string, workers int, host string) (schema.ClusterScale, error) {
	a, err := p.Admin.Scale(ctx, operator, host, workers, "host "+p.Host)
	if err != nil {
		return schema.ClusterScale{}, apiError("cluster scale", err)
	}
	return schema.ClusterScale{Operator: operator, Workers: workers, Host: host, Epoch: a.Workers.Epoch, Revision: a.Revision}, nil
}
