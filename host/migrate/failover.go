package migrate

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/sluicehq/sluice/host/checkpoint"
	"github.com/sluicehq/sluice/host/cluster"
	"github.com/sluicehq/sluice/host/exec"
)

// ErrFailover is wrapped by the error of a Failover that is refused: the
// host named dead holds a lease, a host named live does not, or no host is
// named live.
var ErrFailover = errors.New("migrate: failover refused")

// Checkpointed reports what one Checkpoint put.
type Checkpointed struct {
	Groups []int // the key groups put, in order
	Bytes  int   // the size of their exports
	// Sent is what crossed to the bucket: whole checkpoints, deltas
	// against the checkpoints in the bucket, and amended metadata.
	Sent   int64
	Deltas int // groups sent as a delta
}

// Checkpoint puts in the checkpoint bucket the key groups the host owns
// whose state changed since its last checkpoint (by the store's
// generations; the first checkpoint of a Host puts every owned group that
// ever changed), each with its floors as the metadata, and reports what it
// put. The groups are exported at a batch boundary (exec.Job.Checkpoint),
// where the job pauses for the copy only; they are put after it, while
// the job runs on, each as checkpoint.Bucket.Amend sends it: the metadata
// alone when the bucket holds its export, what changed as a delta when
// this host put the group's checkpoint, else whole.
//
// A group whose records did not change its state keeps its previous
// checkpoint and floors: a failover replays more of it, making the same
// outputs again. A failed put leaves the generations as they were, so the
// next Checkpoint puts the groups again.
//
// A Whole host puts a cut instead (checkpoint.Bucket.PutCut): every group,
// with its floors, exported at the one boundary, when it owns every group
// and one changed; nothing otherwise.
func (h *Host) Checkpoint(ctx context.Context) (Checkpointed, error) {
	return h.checkpoint(ctx, false)
}

// CheckpointAll is Checkpoint of every owned group that ever changed,
// whether or not it changed since the host's last checkpoint: a host
// that has swapped an operator's module calls it, so that the bucket
// holds every group at a position after the switch and no failover
// replays a record of theirs from before it.
func (h *Host) CheckpointAll(ctx context.Context) (Checkpointed, error) {
	return h.checkpoint(ctx, true)
}

// checkpoint is Checkpoint, of every group that ever changed when all.
func (h *Host) checkpoint(ctx context.Context, all bool) (Checkpointed, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if all {
		h.gens = nil
	}
	start := time.Now()
	var (
		groups []checkpoint.Group
		gens   []uint64
	)
	err := h.Job.Checkpoint(ctx, func(c exec.GroupCheckpoint) error {
		gens = c.Store.Generations()
		changed := c.Store.ChangedSince(h.gens)
		if h.Whole {
			// A cut of every group, when the host owns them all and one
			// has changed.
			if len(c.Groups) != c.Store.KeyGroups() || !slices.ContainsFunc(changed, func(kg int) bool {
				_, ok := slices.BinarySearch(c.Groups, kg)
				return ok
			}) {
				return nil
			}
			changed = c.Groups
		}
		for _, kg := range changed {
			if _, ok := slices.BinarySearch(c.Groups, kg); !ok {
				continue
			}
			data, err := c.Store.ExportKeyGroup(kg)
			if err != nil {
				return fmt.Errorf("key group %d: %w", kg, err)
			}
			meta, err := json.Marshal(c.Floors[kg])
			if err != nil {
				return fmt.Errorf("key group %d: encoding its floors: %w", kg, err)
			}
			groups = append(groups, checkpoint.Group{KeyGroup: kg, Generation: gens[kg], Epoch: h.epoch(), Meta: meta, Data: data})
		}
		return nil
	})
	if err != nil {
		return Checkpointed{}, fmt.Errorf("migrate: %s: checkpoint: %w", h.ID, err)
	}
	out := Checkpointed{Groups: []int{}}
	if h.Whole && len(groups) > 0 {
		am, err := h.Checkpoints.PutCut(ctx, h.epoch(), groups)
		if err != nil {
			return out, fmt.Errorf("migrate: %s: checkpoint: %w", h.ID, err)
		}
		out.Sent = am.Bytes
		if am.Delta {
			out.Deltas = len(groups)
		}
		for _, g := range groups {
			out.Groups = append(out.Groups, g.KeyGroup)
			out.Bytes += len(g.Data)
		}
		groups = nil
	}
	for _, g := range groups {
		// What changed since the group's checkpoint, when this host put
		// it (checkpoint's Deltas); else the group whole.
		am, err := h.Checkpoints.Amend(ctx, g)
		if err != nil {
			return out, fmt.Errorf("migrate: %s: checkpoint: %w", h.ID, err)
		}
		out.Groups = append(out.Groups, g.KeyGroup)
		out.Bytes += len(g.Data)
		out.Sent += am.Bytes
		if am.Delta {
			out.Deltas++
		}
	}
	h.gens = gens
	if len(out.Groups) > 0 {
		h.log().Info("key groups checkpointed", "groups", len(out.Groups), "bytes", out.Bytes, "sent", out.Sent, "deltas", out.Deltas, "took", time.Since(start))
	}
	return out, nil
}

// putCut puts states, the released groups of a Whole host (every key
// group, at one boundary), as the pipeline's cut, and reports what it
// sent.
func (h *Host) putCut(ctx context.Context, states []exec.GroupState) (checkpoint.Amended, error) {
	groups := make([]checkpoint.Group, len(states))
	for i, st := range states {
		meta, err := json.Marshal(st.Floors)
		if err != nil {
			return checkpoint.Amended{}, fmt.Errorf("key group %d: encoding its floors: %w", st.Group, err)
		}
		groups[i] = checkpoint.Group{KeyGroup: st.Group, Host: h.ID, Meta: meta, Data: st.Data}
	}
	return h.Checkpoints.PutCut(ctx, h.epoch(), groups)
}

// Failover starts a migration that gives the key groups of host dead,
// whose lease has expired, to the live hosts, planned with knobs, and
// returns the table with the migration in it. Only the dead host's groups
// move: each goes to the live host holding the fewest groups at that
// point (ties by host id), which balances the live hosts as far as moving
// no other group can; a later Rebalance evens out the rest.
//
// The live hosts run the migration with Host.Step, as any other: since the
// dead host cannot release its groups, each destination marks them
// released itself and installs them from their last checkpoint, then
// replays their input from the checkpoint's floors (from the start for a
// group never checkpointed).
//
// In a Whole table (the groups live on one host together) every group
// goes to one live host, in one step, whatever knobs says.
//
// Any live host may call Failover; of two calls at once, one starts the
// migration and the other fails, matching cluster.ErrMigration (another
// migration is in progress), as it does when dead owns no group. It is
// refused, matching ErrFailover, while dead holds a lease, when a host of
// live does not, or when live is empty or names dead.
//
// Unlike Start, Failover does not wait for a plugin swap in progress: the
// dead host's groups are served by nobody until it runs, and a live host
// that cannot load the recorded modules would hold them back for good. A
// destination that runs an older plugin versions epoch than a group's
// checkpoint waits to install that group until it has switched
// (ErrNewerVersion), which keeps every group on the logic that wrote it.
func Failover(ctx context.Context, c *cluster.Cluster, dead string, live []string, knobs cluster.Knobs) (*cluster.Assignment, error) {
	if len(live) == 0 {
		return nil, fmt.Errorf("%w: host %s: no live host to take its key groups", ErrFailover, dead)
	}
	if slices.Contains(live, dead) {
		return nil, fmt.Errorf("%w: host %s is named both dead and live", ErrFailover, dead)
	}
	members, err := c.Members(ctx)
	if err != nil {
		return nil, fmt.Errorf("migrate: failover of host %s: %w", dead, err)
	}
	leased := map[string]bool{}
	for _, m := range members {
		leased[m.ID] = true
	}
	if leased[dead] {
		return nil, fmt.Errorf("%w: host %s holds a lease: it is live", ErrFailover, dead)
	}
	for _, l := range live {
		if !leased[l] {
			return nil, fmt.Errorf("%w: host %s, named live, holds no lease", ErrFailover, l)
		}
	}
	id := "failover-" + dead + "-" + strconv.FormatInt(time.Now().UnixMilli(), 10)
	return c.Update(ctx, func(a *cluster.Assignment) error {
		target := survivors(a.Owners, dead, live)
		if a.Whole {
			// Every group goes to one host: the live host it would give the
			// dead host's first group to.
			target = a.Balanced([]string{target[slices.Index(a.Owners, dead)]})
			knobs = cluster.AllAtOnce()
		}
		steps, err := cluster.Plan(a.Owners, target, knobs, nil)
		if err != nil {
			return err
		}
		return a.Begin(id, steps)
	})
}

// survivors returns owners with dead's groups dealt to the live hosts,
// each to the one holding the fewest at that point (ties by id).
func survivors(owners []string, dead string, live []string) []string {
	hosts := slices.Sorted(slices.Values(live))
	hosts = slices.Compact(hosts)
	held := map[string]int{}
	for _, o := range owners {
		held[o]++
	}
	out := slices.Clone(owners)
	for g, o := range owners {
		if o != dead {
			continue
		}
		to := hosts[0]
		for _, h := range hosts[1:] {
			if held[h] < held[to] {
				to = h
			}
		}
		out[g] = to
		held[to]++
	}
	return out
}
