package migrate

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sluicehq/sluice/host/checkpoint"
	"github.com/sluicehq/sluice/host/cluster"
	"github.com/sluicehq/sluice/host/exec"
)

// Owned returns the key groups host owns in a: those whose owner it is,
// less those it has released in the current step (their destination
// installs them next). A group moving to host is owned once installed,
// when the table names host its owner.
func Owned(a *cluster.Assignment, host string) []int {
	released := map[int]bool{}
	if m := a.Migration; m != nil {
		for _, mv := range m.Steps[m.Current].Moves {
			if mv.From == host && mv.State == cluster.StepReleased {
				released[mv.Group] = true
			}
		}
	}
	gs := []int{}
	for kg, o := range a.Owners {
		if o == host && !released[kg] {
			gs = append(gs, kg)
		}
	}
	return gs
}

// Start begins a migration of the pipeline's key groups to owners,
// planned with knobs (load weighs groups for cluster.OrderHottest), and
// returns the table with the migration in it. The hosts then run it with
// Host.Step. It fails, matching cluster.ErrMigration, while another
// migration is in progress or when no group changes owner, and, matching
// cluster.ErrSwapPending, while a live host does not yet run the modules
// the table's versions record names (a swap in progress: see
// notSwapping).
func Start(ctx context.Context, c *cluster.Cluster, id string, owners []string, knobs cluster.Knobs, load map[int]float64) (*cluster.Assignment, error) {
	return start(ctx, c, id, owners, knobs, load, func(*cluster.Assignment) {})
}

// StartPlacing is Start that also sets the table's Placed to placed in
// the same update: a host records a placement (owners then give that
// host every group), "" forgets one (a move or a rebalance a person asked
// for, which the next rebalance must not undo).
func StartPlacing(ctx context.Context, c *cluster.Cluster, id string, owners []string, knobs cluster.Knobs, load map[int]float64, placed string) (*cluster.Assignment, error) {
	return start(ctx, c, id, owners, knobs, load, func(a *cluster.Assignment) { a.Placed = placed })
}

func start(ctx context.Context, c *cluster.Cluster, id string, owners []string, knobs cluster.Knobs, load map[int]float64, edit func(*cluster.Assignment)) (*cluster.Assignment, error) {
	swapped, err := notSwapping(ctx, c)
	if err != nil {
		return nil, err
	}
	return c.Update(ctx, func(a *cluster.Assignment) error {
		if err := swapped(a); err != nil {
			return err
		}
		steps, err := cluster.Plan(a.Owners, owners, knobs, load)
		if err != nil {
			return err
		}
		edit(a)
		return a.Begin(id, steps)
	})
}

// notSwapping returns a check, for inside an Update, that fails matching
// cluster.ErrSwapPending while a live host does not run the modules of the
// table's versions record. The live hosts and their reports are read
// before the Update: a report only ever comes closer to the record, and
// a swap recorded after the read changes the table's revision, so the
// check sees the new record and, by the older reports, refuses.
func notSwapping(ctx context.Context, c *cluster.Cluster) (func(*cluster.Assignment) error, error) {
	members, err := c.Members(ctx)
	if err != nil {
		return nil, err
	}
	live := make([]string, len(members))
	for i, m := range members {
		live[i] = m.ID
	}
	reports, err := c.Reports(ctx)
	if err != nil {
		return nil, err
	}
	return func(a *cluster.Assignment) error { return cluster.SwapPending(a, reports, live) }, nil
}

// ErrNewerVersion is matched, with errors.Is, by the error of an install
// of a key group checkpointed by a host that ran a later plugin versions
// epoch than this host does: the host installs it once it has switched.
var ErrNewerVersion = errors.New("key group checkpointed by a newer plugin version")

// epoch returns the plugin versions epoch the host runs.
func (h *Host) epoch() uint64 {
	if h.Epoch == nil {
		return 0
	}
	return h.Epoch()
}

// Host is one host's part in the migrations of a pipeline: it releases
// the groups the current step moves off it and installs those it moves
// onto it, through the checkpoint bucket, and records each move's state
// in the assignment.
type Host struct {
	// ID is the host's id in the cluster.
	ID string
	// Job is the host's running job, which owns the host's key groups.
	Job *exec.Job
	// Cluster holds the assignment.
	Cluster *cluster.Cluster
	// Checkpoints holds the groups' state on their way between hosts.
	Checkpoints *checkpoint.Bucket
	// Logger receives a line per release, install and checkpoint; nil:
	// discarded.
	Logger *slog.Logger
	// CheckpointEvery is how often Run calls Checkpoint; 0: never.
	CheckpointEvery time.Duration
	// Epoch returns the plugin versions epoch the host runs
	// (cluster.Versions.Epoch); nil: 0. Every checkpoint the host puts
	// carries it, and the host refuses to install a group checkpointed at
	// a later epoch (ErrNewerVersion) until it runs that epoch itself.
	Epoch func() uint64
	// Whole says the pipeline's key groups live on one host together
	// (cluster.Assignment.Whole): its checkpoints, periodic and at a
	// release, are cuts of every group (checkpoint.Bucket.PutCut), and
	// its installs read the cut (see the package documentation).
	Whole bool

	// mu serializes Step and Checkpoint, so that a periodic checkpoint
	// put after a release never replaces the release's.
	mu sync.Mutex
	// gens are the store's generations at the last checkpoint; nil before
	// the first.
	gens []uint64
	// replica holds warm copies of the replicated groups that the
	// migration replicaOf moves onto the host; nil when there are none.
	replica   *checkpoint.Replica
	replicaOf string
	// moved counts the bytes of releases and installs.
	moved Moved
}

// Moved counts what a Host's releases and installs moved through the
// checkpoint bucket, for benchmarks and metrics.
type Moved struct {
	// Released is the number of groups released; Whole of them had their
	// state put whole, Deltas of them what changed since the checkpoint
	// in the bucket, the others only their floors (their state was in the
	// bucket already: see Host.Step).
	Released, Whole, Deltas int
	// PutBytes is what the releases sent: whole checkpoints and floors.
	PutBytes int64
	// Installed is the number of groups installed; ReplicaHits of them
	// came from the host's replica with nothing fetched.
	Installed, ReplicaHits int
	// FetchedBytes is what the installs fetched from the bucket.
	FetchedBytes int64
}

// Moved returns what the host's releases and installs have moved since it
// was made. Its replica's prefetches, ahead of the moves, are in
// Checkpoints.Stats (PrefetchBytes).
func (h *Host) Moved() Moved {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.moved
}

func (h *Host) log() *slog.Logger {
	if h.Logger == nil {
		return slog.New(slog.DiscardHandler)
	}
	return h.Logger
}

// Step does the host's part of the current step of the migration in
// progress, if any, and reports whether it changed anything:
//
//   - the groups the step moves off the host, still planned, are released
//     by the job at a batch boundary, put in the checkpoint bucket with
//     their floors (the floors alone when the bucket holds their state
//     already: checkpoint.Bucket.Amend), marked released, and then dropped
//     from the job's store;
//   - the groups it moves onto the host, released, are read from the
//     bucket (a replicated group from the host's replica when its copy is
//     current), acquired by the job at a batch boundary and marked
//     installed;
//   - once every move of the step is installed, the step is advanced.
//
// The host first brings its replica up to date with the migration: the
// groups marked replicated that the current and later steps move onto it
// (see the package documentation).
//
// Each effect comes before the mark that records it, so a host that
// crashes between the two does the step again when it restarts: a release
// not marked leaves the group with its source (which reads it again from
// its floors), and an install not marked is made again from the bucket
// (the replay from the floors makes the same outputs, which sinks drop by
// id). A move is never both undone and done.
//
// A move whose source is not live (its lease expired: see Failover) and
// still planned is marked released by the destination itself, since the
// source cannot release it, and installed from the group's last
// checkpoint in the bucket; a group with no checkpoint is installed empty
// with every floor 0, and replayed from the start of its input.
func (h *Host) Step(ctx context.Context) (bool, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	a, err := h.Cluster.Assignment(ctx)
	if err != nil {
		return false, err
	}
	m := a.Migration
	if err := h.replicate(ctx, m); err != nil {
		return false, err
	}
	if taken, err := h.takeBack(ctx, a); err != nil || taken {
		return taken, err
	}
	if m == nil {
		return false, nil
	}
	var out, in, orphans []int
	sources := map[int]string{} // of the moves onto the host
	installed := true
	for _, mv := range m.Steps[m.Current].Moves {
		switch {
		case mv.From == h.ID && mv.State == cluster.StepPlanned:
			out = append(out, mv.Group)
		case mv.To == h.ID && mv.State == cluster.StepReleased:
			in = append(in, mv.Group)
			sources[mv.Group] = mv.From
		case mv.To == h.ID && mv.State == cluster.StepPlanned:
			orphans = append(orphans, mv.Group) // if its source is dead
			sources[mv.Group] = mv.From
		}
		installed = installed && mv.State == cluster.StepInstalled
	}
	var dead map[string]bool // the sources of moves onto the host that are not live
	if len(sources) > 0 {
		if dead, err = h.deadSources(ctx, sources); err != nil {
			return false, err
		}
	}
	orphans = slices.DeleteFunc(orphans, func(kg int) bool { return !dead[sources[kg]] })
	if installed {
		_, err := h.Cluster.Update(ctx, func(a *cluster.Assignment) error {
			if a.Migration == nil || a.Migration.ID != m.ID || a.Migration.Current != m.Current {
				return nil // another host advanced it
			}
			_, err := a.Advance()
			return err
		})
		if err != nil {
			return false, fmt.Errorf("migrate: %s: advance step %d of %q: %w", h.ID, m.Current, m.ID, err)
		}
		return true, nil
	}
	if len(out) > 0 {
		if err := h.release(ctx, m.ID, out); err != nil {
			return false, err
		}
	}
	if len(orphans) > 0 {
		// The source is dead: the destination releases for it. The
		// group's last checkpoint is what the source left.
		if err := h.mark(ctx, m.ID, orphans, cluster.StepReleased); err != nil {
			return false, err
		}
		h.log().Warn("key groups of a host that is not live taken from their last checkpoints", "migration", m.ID, "groups", orphans)
		in = append(in, orphans...)
	}
	if len(in) > 0 {
		orphaned := map[int]bool{}
		for _, kg := range in {
			orphaned[kg] = dead[sources[kg]]
		}
		if err := h.install(ctx, m.ID, a.KeyGroups, in, orphaned); err != nil {
			return false, err
		}
	}
	return len(out) > 0 || len(in) > 0, nil
}

// deadSources returns which of sources (hosts by group) hold no lease.
func (h *Host) deadSources(ctx context.Context, sources map[int]string) (map[string]bool, error) {
	members, err := h.Cluster.Members(ctx)
	if err != nil {
		return nil, fmt.Errorf("migrate: %s: %w", h.ID, err)
	}
	live := map[string]bool{}
	for _, mb := range members {
		live[mb.ID] = true
	}
	dead := map[string]bool{}
	for _, src := range sources {
		if !live[src] {
			dead[src] = true
		}
	}
	return dead, nil
}

// release hands groups over: released by the job, put in the bucket,
// marked, dropped.
func (h *Host) release(ctx context.Context, id string, groups []int) error {
	start := time.Now()
	// A bucket that cannot be written now fails the hand-over before the
	// groups leave the job: they go on being run meanwhile, instead of
	// being released and taken back at every attempt.
	if err := h.Checkpoints.Check(ctx); err != nil {
		return fmt.Errorf("migrate: %s: release key groups %v for %q: %w", h.ID, groups, id, err)
	}
	states, err := h.Job.ReleaseGroups(ctx, groups)
	if err != nil {
		return fmt.Errorf("migrate: %s: release key groups %v for %q: %w", h.ID, groups, id, err)
	}
	var (
		bytes         int64
		whole, deltas int
	)
	if h.Whole {
		// The groups leave together, at one boundary: their states are
		// the pipeline's cut.
		am, err := h.putCut(ctx, states)
		if err != nil {
			return h.undoRelease(ctx, states, fmt.Errorf("migrate: %s: release key groups for %q: %w", h.ID, id, err))
		}
		bytes = am.Bytes
		if am.Delta {
			deltas = len(states)
		} else {
			whole = len(states)
		}
	} else {
		for _, st := range states {
			meta, err := json.Marshal(st.Floors)
			var am checkpoint.Amended
			if err == nil {
				am, err = h.Checkpoints.Amend(ctx, checkpoint.Group{KeyGroup: st.Group, Host: h.ID, Epoch: h.epoch(), Meta: meta, Data: st.Data})
			}
			if err != nil {
				return h.undoRelease(ctx, states, fmt.Errorf("migrate: %s: key group %d: %w", h.ID, st.Group, err))
			}
			bytes += am.Bytes
			switch {
			case am.Whole:
				whole++
			case am.Delta:
				deltas++
			}
		}
	}
	h.moved.Released += len(states)
	h.moved.Whole += whole
	h.moved.Deltas += deltas
	h.moved.PutBytes += bytes
	if err := h.mark(ctx, id, groups, cluster.StepReleased); err != nil {
		// The mark may have been written and its answer lost: the table
		// says which.
		if a, rerr := h.Cluster.Assignment(ctx); rerr != nil || !released(a, h.ID, groups) {
			return h.undoRelease(ctx, states, err)
		}
	}
	h.Checkpoints.Forget(groups...)
	if err := h.Job.DropGroups(ctx, groups); err != nil {
		// The groups are handed over; their copy here is only unread.
		h.log().Warn("released key groups could not be dropped from the store; they stay, unread", "groups", groups, "err", err)
	}
	h.log().Info("key groups released", "migration", id, "groups", groups, "whole", whole, "deltas", deltas, "bytes", bytes, "took", time.Since(start))
	return nil
}

// undoRelease gives released groups back to the job after the hand-over
// failed before its mark, so that the host reads them again from where it
// stopped, and returns err. The next Step releases them again.
func (h *Host) undoRelease(ctx context.Context, states []exec.GroupState, err error) error {
	if uerr := h.Job.AcquireGroups(ctx, states); uerr != nil {
		return errors.Join(err, fmt.Errorf("migrate: %s: taking back the groups whose hand-over failed: %w", h.ID, uerr))
	}
	return err
}

// released reports whether a records groups as released by host: each
// owned by another host now, or released (or installed) in the current
// step of the migration in progress.
func released(a *cluster.Assignment, host string, groups []int) bool {
	for _, kg := range groups {
		if a.Owners[kg] != host {
			continue
		}
		m := a.Migration
		if m == nil {
			return false
		}
		i := slices.IndexFunc(m.Steps[m.Current].Moves, func(mv cluster.Move) bool { return mv.Group == kg })
		if i < 0 || m.Steps[m.Current].Moves[i].State == cluster.StepPlanned {
			return false
		}
	}
	return true
}

// install takes groups over: read from the bucket, acquired by the job,
// marked. An orphaned group (its source is dead) with no checkpoint is
// taken over empty, from the start of its input.
func (h *Host) install(ctx context.Context, id string, keyGroups int, groups []int, orphaned map[int]bool) error {
	start := time.Now()
	// The Bucket counts what the gets below fetch; nothing else gets from
	// it meanwhile, since h.mu is held.
	before := h.Checkpoints.Stats()
	states, empty, err := h.fetch(ctx, keyGroups, groups, orphaned)
	if err != nil {
		return err
	}
	err = h.Job.AcquireGroups(ctx, states)
	if errors.Is(err, exec.ErrGroupsRefused) && h.owns(groups) {
		err = nil // acquired before a crash that came before the mark
	}
	if err != nil {
		return fmt.Errorf("migrate: %s: acquire key groups %v for %q: %w", h.ID, groups, id, err)
	}
	if err := h.mark(ctx, id, groups, cluster.StepInstalled); err != nil {
		return err
	}
	after := h.Checkpoints.Stats()
	bytes, hits := after.GetBytes-before.GetBytes, int(after.ReplicaHits-before.ReplicaHits)
	h.moved.Installed += len(groups)
	h.moved.ReplicaHits += hits
	h.moved.FetchedBytes += bytes
	h.log().Info("key groups installed", "migration", id, "groups", groups, "empty", empty, "replicated", hits, "bytes", bytes, "took", time.Since(start))
	return nil
}

// fetchers bounds the downloads of one install that run at once. A
// download is mostly round trips to the NATS server (the object's info,
// then its chunks through a consumer of its own), so a failover's groups,
// read one at a time, took their count times a round trip; a few at once
// overlap those without flooding the server.
const fetchers = 8

// fetch reads groups' states from the bucket (from the warm copies of the
// replicated ones), up to fetchers at once, and returns them in the order
// of groups with the groups taken over empty (an orphaned group without a
// checkpoint). A Whole host reads them from the cut (fetchCut); keyGroups
// is the pipeline's count. Of several groups that cannot be read, it returns the
// error of the first in groups; a group that cannot be read is reported
// before one the host must wait to install (ErrNewerVersion), which Run
// waits on quietly.
func (h *Host) fetch(ctx context.Context, keyGroups int, groups []int, orphaned map[int]bool) (states []exec.GroupState, empty []int, err error) {
	if h.Whole {
		return h.fetchCut(ctx, keyGroups, groups, orphaned)
	}
	var replicated []int
	if h.replica != nil {
		replicated = h.replica.Groups()
	}
	got := make([]*checkpoint.Group, len(groups))
	errs := make([]error, len(groups))
	// A failure stops the downloads not yet begun, not those in flight:
	// a download's context cancelled at the wrong moment can leave the
	// NATS client's delivery goroutine blocked on a pipe nobody reads.
	var failed atomic.Bool
	next := make(chan int)
	var wg sync.WaitGroup
	for range min(fetchers, len(groups)) {
		wg.Go(func() {
			for i := range next {
				kg := groups[i]
				if _, ok := slices.BinarySearch(replicated, kg); ok {
					got[i], _, errs[i] = h.replica.Get(ctx, kg)
				} else {
					got[i], errs[i] = h.Checkpoints.Get(ctx, kg)
				}
				if errs[i] != nil && !(errors.Is(errs[i], checkpoint.ErrNotFound) && orphaned[kg]) {
					failed.Store(true)
				}
			}
		})
	}
	for i := range groups {
		if failed.Load() {
			break
		}
		next <- i
	}
	close(next)
	wg.Wait()
	for i, err := range errs {
		if err != nil && !(errors.Is(err, checkpoint.ErrNotFound) && orphaned[groups[i]]) {
			return nil, nil, fmt.Errorf("migrate: %s: key group %d: %w", h.ID, groups[i], err)
		}
	}
	return h.states(groups, got)
}

// states turns got, the checkpoints of groups (nil: none, taken over
// empty), into the states the job acquires, and returns the groups taken
// over empty too.
func (h *Host) states(groups []int, got []*checkpoint.Group) (states []exec.GroupState, empty []int, err error) {
	states = make([]exec.GroupState, 0, len(groups))
	for i, kg := range groups {
		g := got[i]
		if g == nil { // orphaned, and never checkpointed
			states = append(states, h.Job.EmptyGroup(kg))
			empty = append(empty, kg)
			continue
		}
		if own := h.epoch(); g.Epoch > own {
			return nil, nil, fmt.Errorf("migrate: %s: key group %d: %w: it was checkpointed at plugin versions epoch %d, this host runs epoch %d; it installs it once it has switched",
				h.ID, kg, ErrNewerVersion, g.Epoch, own)
		}
		var floors map[string]uint64
		if err := json.Unmarshal(g.Meta, &floors); err != nil {
			return nil, nil, fmt.Errorf("migrate: %s: key group %d: the checkpoint's floors: %w", h.ID, kg, err)
		}
		states = append(states, exec.GroupState{Group: kg, Data: g.Data, Floors: floors})
	}
	return states, empty, nil
}

// fetchCut is fetch for a Whole host: groups' states from the bucket's
// cut. Without a cut, groups that are all orphaned are taken over empty.
func (h *Host) fetchCut(ctx context.Context, keyGroups int, groups []int, orphaned map[int]bool) ([]exec.GroupState, []int, error) {
	cut, err := h.Checkpoints.GetCut(ctx, keyGroups)
	got := make([]*checkpoint.Group, len(groups))
	switch {
	case errors.Is(err, checkpoint.ErrNotFound) && !slices.ContainsFunc(groups, func(kg int) bool { return !orphaned[kg] }):
	case err != nil:
		return nil, nil, fmt.Errorf("migrate: %s: key groups %v: %w", h.ID, groups, err)
	default:
		for i, kg := range groups {
			got[i] = cut[kg]
		}
	}
	return h.states(groups, got)
}

// takeBack acquires the groups a names the host the owner of, outside any
// move away from it, that its job does not hold: groups it released for a
// move that was then cancelled (cluster.Assignment.Cancel: its destination
// was gone and no other host could take it). They are read from the
// bucket, where the release put them. It reports whether it took any.
func (h *Host) takeBack(ctx context.Context, a *cluster.Assignment) (bool, error) {
	held := make([]bool, a.KeyGroups)
	for _, kg := range h.Job.Groups() {
		if kg < len(held) {
			held[kg] = true
		}
	}
	var missing []int
	for _, kg := range Owned(a, h.ID) {
		if !held[kg] {
			missing = append(missing, kg)
		}
	}
	if len(missing) == 0 {
		return false, nil
	}
	states, _, err := h.fetch(ctx, a.KeyGroups, missing, nil)
	if err != nil {
		return false, err
	}
	if err := h.Job.AcquireGroups(ctx, states); err != nil {
		return false, fmt.Errorf("migrate: %s: take back key groups %v: %w", h.ID, missing, err)
	}
	h.log().Warn("key groups taken back: their move was cancelled after the host had released them", "groups", missing)
	return true, nil
}

// owns reports whether the job owns every group of groups.
func (h *Host) owns(groups []int) bool {
	have := h.Job.Groups()
	for _, kg := range groups {
		if !slices.Contains(have, kg) {
			return false
		}
	}
	return true
}

// mark records groups' moves in migration id as state.
func (h *Host) mark(ctx context.Context, id string, groups []int, state cluster.StepState) error {
	_, err := h.Cluster.Update(ctx, func(a *cluster.Assignment) error {
		if a.Migration == nil || a.Migration.ID != id {
			return fmt.Errorf("%w: migration %q is no longer in progress", cluster.ErrMigration, id)
		}
		for _, kg := range groups {
			if err := a.Mark(kg, state); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("migrate: %s: mark key groups %v %s: %w", h.ID, groups, state, err)
	}
	return nil
}

// Run calls Step every period, and Checkpoint every CheckpointEvery,
// until ctx is done, and returns ctx's error or Step's or Checkpoint's
// first error, except ErrNewerVersion, on which it waits for the next
// period (the host installs the group once it has switched). While a migration moves replicated groups onto the host,
// Run also watches the checkpoint bucket and refreshes the host's warm
// copies of them as their sources checkpoint them.
func (h *Host) Run(ctx context.Context, period time.Duration) error {
	t := time.NewTicker(period)
	defer t.Stop()
	w := &watcher{h: h}
	defer w.stop()
	var ckpt <-chan time.Time
	if h.CheckpointEvery > 0 {
		ct := time.NewTicker(h.CheckpointEvery)
		defer ct.Stop()
		ckpt = ct.C
	}
	for {
		for {
			did, err := h.Step(ctx)
			if errors.Is(err, ErrNewerVersion) {
				// A failover gave the host a group checkpointed after a
				// swap it has not applied yet: it installs the group at
				// a later period, once it has switched.
				h.log().Info("waiting for this host to switch plugin versions before installing a key group", "err", err)
				break
			}
			if err != nil {
				return err
			}
			if !did {
				break
			}
		}
		w.sync(ctx)
		select {
		case <-t.C:
		case <-ckpt:
			if _, err := h.Checkpoint(ctx); err != nil {
				return err
			}
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}
