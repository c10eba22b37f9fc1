// Package clusterctl reads and changes a pipeline's cluster as an operator
// does: the status that `sluice cluster status` prints and GET
// /api/v1/cluster answers (the hosts, the key groups each owns, the
// migration in progress, the checkpoints, the plugin versions and worker
// counts), the migrations that `sluice cluster move` and `sluice cluster
// rebalance` and their API routes start, the worker counts that
// `sluice cluster scale` and its route record, and the changes of the
// host pool that `sluice cluster host activate|release` and their routes
// make. The CLI and the host's HTTP API share it, so that both
// plan the same migrations, refuse the same input and show the same
// document (schema.ClusterStatus).
//
// It only reads and writes the pipeline's buckets: the hosts run the
// migrations it starts (package migrate) and apply the worker counts it
// records (package runner).
package clusterctl

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/sluicehq/sluice/host/api/schema"
	"github.com/sluicehq/sluice/host/checkpoint"
	"github.com/sluicehq/sluice/host/cluster"
	"github.com/sluicehq/sluice/host/migrate"
	"github.com/sluicehq/sluice/host/pipeline"
)

// Admin is an open view of one pipeline's cluster.
type Admin struct {
	// Pipeline is the pipeline's name.
	Pipeline string
	// JS reaches the NATS cluster the pipeline's hosts share.
	JS jetstream.JetStream
	// Cluster is the pipeline's cluster bucket, opened on JS.
	Cluster *cluster.Cluster
	// Operators are the pipeline's operators, from its file: Scale
	// refuses an operator that is not among them, or whose workers cannot
	// change.
	Operators []pipeline.Operator
}

// RefusedError is the error of a move or rebalance that the cluster's
// state or its input does not allow: a host that is not live, a key group
// out of range, one no live host owns. A migration in progress is refused
// with an error that matches cluster.ErrMigration instead.
type RefusedError struct {
	// Field names the input at fault ("to", "groups"); "" when it is the
	// cluster's state.
	Field string
	// Msg says what is wrong.
	Msg string
}

func (e *RefusedError) Error() string { return e.Msg }

// Status reads everything `sluice cluster status` shows; now is the time
// lease ages are counted to.
func (ad *Admin) Status(ctx context.Context, now time.Time) (*schema.ClusterStatus, error) {
	c := ad.Cluster
	a, err := c.Assignment(ctx)
	if err != nil {
		return nil, err
	}
	known, err := c.Known(ctx)
	if err != nil {
		return nil, err
	}
	members, err := c.Members(ctx)
	if err != nil {
		return nil, err
	}
	leases, err := ad.JS.KeyValue(ctx, cluster.LeaseBucketName(ad.Pipeline))
	if err != nil {
		return nil, fmt.Errorf("bucket %s: %w", cluster.LeaseBucketName(ad.Pipeline), err)
	}
	st := &schema.ClusterStatus{Pipeline: ad.Pipeline, KeyGroups: a.KeyGroups, Revision: a.Revision,
		LeaseSeconds: c.Lease().Seconds(), Unassigned: []int{}, Whole: a.Whole, Placed: a.Placed, Checkpoints: []schema.ClusterCheckpoints{}}
	live := map[string]cluster.HostInfo{}
	for _, m := range members {
		live[m.ID] = m
	}
	ids := slices.Clone(known)
	for _, m := range members {
		if !slices.Contains(ids, m.ID) {
			ids = append(ids, m.ID) // a lease whose host record is not written yet
		}
	}
	slices.Sort(ids)
	owned := map[string][]int{}
	for g, h := range a.Owners {
		if h == "" {
			st.Unassigned = append(st.Unassigned, g)
			continue
		}
		owned[h] = append(owned[h], g)
	}
	st.UnassignedRanges = Ranges(st.Unassigned)
	for _, id := range ids {
		hs := schema.ClusterHost{ID: id, KeyGroups: owned[id], Groups: len(owned[id]), Ranges: Ranges(owned[id]), Pool: a.Pooled(id)}
		if hs.KeyGroups == nil {
			hs.KeyGroups = []int{}
		}
		if m, ok := live[id]; ok {
			e, err := leases.Get(ctx, id)
			switch {
			case err == nil:
				hs.Live, hs.Addr, hs.Started = true, m.Addr, m.Started
				age := max(now.Sub(e.Created()), 0).Seconds()
				hs.LeaseAgeSeconds = &age
			case errors.Is(err, jetstream.ErrKeyNotFound):
				// The lease expired or was deleted since Members read it.
			default:
				return nil, fmt.Errorf("reading the lease of host %s: %w", id, err)
			}
		}
		st.Hosts = append(st.Hosts, hs)
	}
	if st.Hosts == nil {
		st.Hosts = []schema.ClusterHost{}
	}
	if m := a.Migration; m != nil {
		cur := m.Steps[m.Current]
		ms := &schema.ClusterMigration{ID: m.ID, Step: m.Current + 1, Steps: len(m.Steps), State: string(cur.State), Moves: moves(cur.Moves)}
		for _, s := range m.Steps {
			for _, mv := range s.Moves {
				ms.GroupsTotal++
				if s.State == cluster.StepDone || mv.State == cluster.StepInstalled {
					ms.GroupsDone++
				}
			}
		}
		st.Migration = ms
	}
	st.Checkpoints, err = ad.checkpoints(ctx)
	if err != nil {
		return nil, err
	}
	if err := ad.versions(ctx, st, a, slices.Sorted(maps.Keys(live))); err != nil {
		return nil, err
	}
	if err := ad.pool(ctx, st, a); err != nil {
		return nil, err
	}
	return st, nil
}

// versions fills in st the modules and worker counts each host reports
// it runs and the versions and workers records of a, with the live hosts
// that run them and those that do not yet.
func (ad *Admin) versions(ctx context.Context, st *schema.ClusterStatus, a *cluster.Assignment, live []string) error {
	reports, err := ad.Cluster.Reports(ctx)
	if err != nil {
		return err
	}
	workers(st, a, reports, live)
	for i := range st.Hosts {
		if r, ok := reports[st.Hosts[i].ID]; ok {
			st.Hosts[i].Operators, st.Hosts[i].Epoch = r.Operators, r.Epoch
		}
	}
	v := a.Versions
	if v == nil {
		return nil
	}
	cv := &schema.ClusterVersions{Epoch: v.Epoch, Operators: []schema.ClusterOperatorVersion{}, Switched: []string{},
		Pending: cluster.Pending(a, reports, live)}
	if cv.Pending == nil {
		cv.Pending = []string{}
	}
	for _, op := range slices.Sorted(maps.Keys(v.Operators)) {
		ov := v.Operators[op]
		cv.Operators = append(cv.Operators, schema.ClusterOperatorVersion{Operator: op, SHA256: ov.SHA256, Name: ov.Name,
			Epoch: ov.Epoch, Reason: ov.Reason, Host: ov.Host, At: ov.At})
	}
	for _, h := range live {
		if !slices.Contains(cv.Pending, h) {
			cv.Switched = append(cv.Switched, h)
		}
	}
	st.Versions = cv
	return nil
}

// moves converts a step's moves to the schema's.
func moves(ms []cluster.Move) []schema.ClusterMove {
	out := make([]schema.ClusterMove, len(ms))
	for i, mv := range ms {
		out[i] = schema.ClusterMove{Group: mv.Group, From: mv.From, To: mv.To, Replicated: mv.Replicated, State: string(mv.State)}
	}
	return out
}

// checkpoints sums the pipeline's checkpoints by writing host, and adds
// its cut, if any, last. A pipeline with no checkpoint bucket yet has
// none; the bucket is not created.
func (ad *Admin) checkpoints(ctx context.Context) ([]schema.ClusterCheckpoints, error) {
	out := []schema.ClusterCheckpoints{}
	name := checkpoint.BucketName(ad.Pipeline)
	if _, err := ad.JS.ObjectStore(ctx, name); errors.Is(err, jetstream.ErrBucketNotFound) {
		return out, nil
	} else if err != nil {
		return nil, fmt.Errorf("checkpoint bucket %s: %w", name, err)
	}
	b, err := checkpoint.Open(ctx, ad.JS, ad.Pipeline, checkpoint.Options{Host: "sluice-cluster-status", Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		return nil, err
	}
	infos, err := b.List(ctx)
	if err != nil {
		return nil, err
	}
	by := map[string]*schema.ClusterCheckpoints{}
	for _, in := range infos {
		s, ok := by[in.Host]
		if !ok {
			s = &schema.ClusterCheckpoints{Host: in.Host}
			by[in.Host] = s
		}
		s.Count++
		s.Bytes += in.Size
		if in.Time.After(s.Newest) {
			s.Newest = in.Time
		}
	}
	for _, s := range by {
		out = append(out, *s)
	}
	slices.SortFunc(out, func(a, b schema.ClusterCheckpoints) int { return strings.Compare(a.Host, b.Host) })
	cut, ok, err := b.CutInfo(ctx)
	if err != nil {
		return nil, err
	}
	if ok {
		out = append(out, schema.ClusterCheckpoints{Host: cut.Host, Count: cut.KeyGroups, Bytes: cut.Size, Newest: cut.Time, Cut: true})
	}
	return out, nil
}

// Ranges writes sorted key groups as ranges: "0-5, 8-9, 12".
func Ranges(groups []int) string {
	var parts []string
	for i := 0; i < len(groups); {
		j := i
		for j+1 < len(groups) && groups[j+1] == groups[j]+1 {
			j++
		}
		if i == j {
			parts = append(parts, strconv.Itoa(groups[i]))
		} else {
			parts = append(parts, fmt.Sprintf("%d-%d", groups[i], groups[j]))
		}
		i = j + 1
	}
	return strings.Join(parts, ", ")
}

// MigrationID returns a new migration's id: kind, the time and a random
// suffix, e.g. "move-20261202-101500-3f9a".
func MigrationID(kind string, now time.Time) string {
	var b [2]byte
	_, _ = rand.Read(b[:])
	return kind + "-" + now.UTC().Format("20060102-150405") + "-" + hex.EncodeToString(b[:])
}

// Knobs returns the planner's knobs of k, refusing bad values by name
// (the error matches cluster.ErrBadPlan).
func Knobs(k schema.ClusterKnobs) (cluster.Knobs, error) {
	kn := cluster.Knobs{Order: cluster.Order(k.Order), Batch: k.Batch, Global: k.Global, Replicate: k.Replicate, Seed: k.Seed}
	if kn.Order == "" {
		kn.Order = cluster.OrderKeyGroup
	}
	return kn, kn.Validate()
}

// Plan returns the migration of a as the API shows one planned; nil when
// a has none.
func Plan(a *cluster.Assignment) *schema.ClusterPlan {
	if a == nil || a.Migration == nil {
		return nil
	}
	p := &schema.ClusterPlan{ID: a.Migration.ID, Steps: make([][]schema.ClusterMove, len(a.Migration.Steps))}
	for i, s := range a.Migration.Steps {
		p.Steps[i] = moves(s.Moves)
	}
	return p
}

// Move starts migration id that gives groups to the live host to, planned
// by kn, and returns the assignment that holds it; nil, and no error,
// when to owns every group already. Groups to owns already stay.
//
// Refused, with a *RefusedError: a host that is not live or is a pool
// host, a group out of range, a group no live host owns, fewer than every
// group of a pipeline that keeps them on one host together
// (cluster.Assignment.Whole, whose groups move in one step whatever kn
// says); and, matching cluster.ErrMigration, while another migration is
// in progress.
func (ad *Admin) Move(ctx context.Context, id string, groups []int, to string, kn cluster.Knobs) (*cluster.Assignment, error) {
	if to == "" {
		return nil, &RefusedError{Field: "to", Msg: "no host to move the key groups to"}
	}
	if len(groups) == 0 {
		return nil, &RefusedError{Field: "groups", Msg: "no key groups to move"}
	}
	return ad.start(ctx, id, kn, "", func(a *cluster.Assignment, live []string) ([]string, error) {
		for _, g := range groups {
			if g < 0 || g >= a.KeyGroups {
				return nil, &RefusedError{Field: "groups", Msg: fmt.Sprintf("key group %d is out of range: the pipeline has key groups 0 to %d", g, a.KeyGroups-1)}
			}
		}
		if err := canTake(a, live, to); err != nil {
			return nil, err
		}
		if a.Whole && len(slices.Compact(slices.Sorted(slices.Values(groups)))) != a.KeyGroups {
			return nil, &RefusedError{Field: "groups", Msg: fmt.Sprintf("pipeline %q keeps its key groups on one host together (its transactional operator's scheduler is one host's): move all %d of them (0-%d)",
				ad.Pipeline, a.KeyGroups, a.KeyGroups-1)}
		}
		next := slices.Clone(a.Owners)
		for _, g := range groups {
			next[g] = to
		}
		return next, nil
	})
}

// canTake refuses, with a *RefusedError, a host to that may not be given
// key groups: one that is not live, or a pool host.
func canTake(a *cluster.Assignment, live []string, to string) error {
	if !slices.Contains(live, to) {
		return &RefusedError{Field: "to", Msg: fmt.Sprintf("host %s is not live (live hosts: %s)", to, orNone(strings.Join(live, ", ")))}
	}
	if a.Pooled(to) {
		return &RefusedError{Field: "to", Msg: fmt.Sprintf("host %s is a pool host, given no key groups: take it into service first (sluice cluster host activate)", to)}
	}
	return nil
}

// Rebalance starts migration id that leaves every live active host (not
// in the pool) within one key group of the others, moving the fewest
// groups (cluster.Assignment.Balanced), planned by kn; it returns the assignment
// that holds it, or nil, and no error, when the groups are balanced
// already. It forgets a placement (cluster.Assignment.Placed), as Move
// does, and is refused as Move is.
func (ad *Admin) Rebalance(ctx context.Context, id string, kn cluster.Knobs) (*cluster.Assignment, error) {
	return ad.start(ctx, id, kn, "", func(a *cluster.Assignment, live []string) ([]string, error) {
		active := a.Active(live)
		if len(active) == 0 {
			return nil, &RefusedError{Msg: fmt.Sprintf("no active host of pipeline %q is live", ad.Pipeline)}
		}
		spread := *a
		spread.Placed = ""
		return spread.Balanced(active), nil
	})
}

// Place starts migration id that gives every key group to the live host
// to, planned by kn, and records to as the table's placement
// (cluster.Assignment.Placed), so that the rebalances the coordinator
// makes when hosts join or leave keep the groups there while to is live:
// the pipeline's operators (a stage's, for a pipeline cut into stages)
// run on to. It returns the assignment that holds the migration; when to
// owns every group already it records the placement alone and returns
// nil. It is refused as Move is.
func (ad *Admin) Place(ctx context.Context, id string, to string, kn cluster.Knobs) (*cluster.Assignment, error) {
	if to == "" {
		return nil, &RefusedError{Field: "to", Msg: "no host to place the operators on"}
	}
	a, err := ad.start(ctx, id, kn, to, func(a *cluster.Assignment, live []string) ([]string, error) {
		if err := canTake(a, live, to); err != nil {
			return nil, err
		}
		return cluster.Spread(a.KeyGroups, []string{to}), nil
	})
	if err != nil || a != nil {
		return a, err
	}
	// Every group is on to already: record the placement alone.
	_, err = ad.Cluster.Update(ctx, func(a *cluster.Assignment) error {
		if err := idle(a); err != nil {
			return err
		}
		if slices.ContainsFunc(a.Owners, func(o string) bool { return o != to }) {
			return fmt.Errorf("%w: the key groups changed owner meanwhile; place them again", cluster.ErrMigration)
		}
		a.Placed = to
		return nil
	})
	return nil, err
}

// start begins migration id to the table plan computes from the current
// one and the live hosts, setting the table's placement to placed.
func (ad *Admin) start(ctx context.Context, id string, kn cluster.Knobs, placed string, plan func(a *cluster.Assignment, live []string) ([]string, error)) (*cluster.Assignment, error) {
	members, err := ad.Cluster.Members(ctx)
	if err != nil {
		return nil, err
	}
	live := make([]string, len(members))
	for i, m := range members {
		live[i] = m.ID
	}
	slices.Sort(live)
	a, err := ad.Cluster.Assignment(ctx)
	if err != nil {
		return nil, err
	}
	if err := idle(a); err != nil {
		return nil, err
	}
	next, err := plan(a, live)
	if err != nil {
		return nil, err
	}
	if err := sourcesLive(a.Owners, next, live); err != nil {
		return nil, err
	}
	if slices.Equal(next, a.Owners) {
		return nil, nil
	}
	if a.Whole {
		kn = cluster.AllAtOnce() // the groups move together
	}
	got, err := migrate.StartPlacing(ctx, ad.Cluster, id, next, kn, nil, placed)
	if err != nil {
		if a2, rerr := ad.Cluster.Assignment(ctx); rerr == nil && a2.Migration != nil && a2.Migration.ID != id {
			return nil, idle(a2) // another migration began meanwhile
		}
		return nil, err
	}
	return got, nil
}

// idle fails, matching cluster.ErrMigration, while a migration is in
// progress, naming it and its step.
func idle(a *cluster.Assignment) error {
	if m := a.Migration; m != nil {
		return fmt.Errorf("%w: migration %s is in progress, at step %d of %d (%s); wait for it to finish (sluice cluster status shows it)",
			cluster.ErrMigration, m.ID, m.Current+1, len(m.Steps), m.Steps[m.Current].State)
	}
	return nil
}

// sourcesLive fails unless every group that changes owner from owners to
// next is owned now by a live host: only a live host releases its groups,
// so a move from an unassigned group or a host that is gone would wait for
// ever.
func sourcesLive(owners, next, live []string) error {
	var unassigned []int
	gone := map[string][]int{}
	for g := range owners {
		if owners[g] == next[g] {
			continue
		}
		switch {
		case owners[g] == "":
			unassigned = append(unassigned, g)
		case !slices.Contains(live, owners[g]):
			gone[owners[g]] = append(gone[owners[g]], g)
		}
	}
	if len(unassigned) > 0 {
		return &RefusedError{Msg: fmt.Sprintf("key groups %s are unassigned: a migration moves groups from a live host that releases them, and no host holds these", Ranges(unassigned))}
	}
	if len(gone) > 0 {
		h := slices.Sorted(maps.Keys(gone))[0]
		return &RefusedError{Msg: fmt.Sprintf("key groups %s are owned by host %s, which is not live: only a live host can release its groups", Ranges(gone[h]), h)}
	}
	return nil
}

// orNone is s, or "none" when s is "".
func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}
