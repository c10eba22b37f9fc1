package exec

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/sluicehq/sluice/connectors"
)

// Key groups owned by a job, for a pipeline that runs on several hosts.
//
// A job given Config.Groups owns only those key groups: it reads its
// input from connectors.Partitioned sources, each group after its own
// floor (the position of the last record of that group applied here),
// and hands groups to other hosts and takes them from them at batch
// boundaries with ReleaseGroups and AcquireGroups, without stopping the
// groups it keeps.
//
// What is committed, per partitioned source, with every batch's state:
//
//   - the source's position B: a position up to which every record of
//     every owned group has been applied (what the source's Delivered
//     said after a read whose records all went into committed batches);
//   - for an owned group whose floor is above B (one acquired with a
//     floor ahead of the source), the floor itself, under
//     "floor/<source>/<group>".
//
// A restart reads each owned group after max(B, its floor entry). Floors
// only grow over a group's life, whichever host owns it, and an
// acquisition writes the entries of every owned group above the new B,
// so a stale entry is never above a group's true floor.
//
// Reads go on while groups change, so records read under an older set of
// groups may still wait in the queue, in the same read as records of the
// new set. Each SetGroups starts a new epoch, and a partitioned source
// stamps each record with the epoch it was read in
// (connectors.Message.GroupSet). A group remembers the epoch it was last
// acquired in: a record of it read in an earlier epoch is of an earlier
// ownership (its records in between went to another host) and is dropped;
// the source reads it again from the group's floor. Delivered vouches for
// the owned groups only when no change came between the read and the
// executor's taking of it.

// GroupState is a key group handed from one job to another: its
// committed state, as state.Store.ExportKeyGroup writes it, and its floor
// in each partitioned source (by source name): the position of the last
// record of the group that the state includes. A nil Data is a group
// with no state (Job.EmptyGroup): its acquisition removes whatever the
// store holds of it.
type GroupState struct {
	Group  int
	Data   []byte
	Floors map[string]uint64
}

// ErrGroupsRefused is wrapped by the error of a ReleaseGroups or
// AcquireGroups the job cannot do: a job that does not own groups, a
// group out of range, released but not owned, or acquired but owned.
var ErrGroupsRefused = errors.New("exec: key group change refused")

// floorKey is the committed-position key of a group's floor in a source.
// Source names cannot contain "/".
func floorKey(source string, kg int) string {
	return "floor/" + source + "/" + strconv.Itoa(kg)
}

// partition is the executor's view of a partitioned source: how far each
// owned group has been read, and how far every owned group is complete.
// Fields are the executor goroutine's, but for epoch, which the source's
// reader reads.
type partition struct {
	src connectors.Partitioned
	// epoch counts the source's SetGroups; changing is held across one
	// (the call and the increment) and by the reader while it takes the
	// epoch and Delivered after a read.
	epoch    atomic.Uint64
	changing sync.Mutex
	// since[kg] is the epoch in which kg was last acquired: a record of
	// kg read in an earlier one is dropped.
	since []uint64
	// seen[kg] is the position of the last record of kg taken into a
	// batch (or the group's floor): a record at or below it is one read
	// again, and dropped.
	seen []uint64
	// base is the position B up to which every owned group is complete,
	// as of the batches handed to the committer.
	base uint64
	// floors holds the groups whose floor is above base, as committed.
	floors map[int]uint64
}

// owns reports whether the job owns key group kg.
func (j *Job) owns(kg int) bool { return kg >= 0 && kg < len(j.owned) && j.owned[kg] }

// openPartitioned opens a partitioned source for the owned groups, each
// after max(B, its committed floor), and sets up the executor's view.
func (j *Job) openPartitioned(ctx context.Context, si int, p connectors.Partitioned, committed map[string]uint64) error {
	name := j.cfg.Sources[si].Name
	if n := p.KeyGroups(); n != j.cfg.Store.KeyGroups() {
		return fmt.Errorf("exec: source %q is partitioned into %d key groups, the state store into %d: they must agree", name, n, j.cfg.Store.KeyGroups())
	}
	part := &partition{src: p, seen: make([]uint64, len(j.owned)), since: make([]uint64, len(j.owned)), base: committed[name], floors: map[int]uint64{}}
	floors := map[int]uint64{}
	for kg, own := range j.owned {
		if !own {
			continue
		}
		f := part.base
		if e := committed[floorKey(name, kg)]; e > f {
			f = e
			part.floors[kg] = e
		}
		floors[kg], part.seen[kg] = f, f
	}
	if err := p.OpenGroups(ctx, floors); err != nil {
		return fmt.Errorf("exec: open source %q: %w", name, err)
	}
	j.parts[si] = part
	return nil
}

// floorOf returns the floor of an owned group kg in source si: the
// position up to which the group's records are applied.
func (p *partition) floorOf(kg int) uint64 {
	return max(p.base, p.seen[kg], p.floors[kg])
}

// Groups returns the key groups the job owns, in order; nil for a job
// that owns them all (one given no Config.Groups).
func (j *Job) Groups() []int {
	j.changeMu.Lock()
	defer j.changeMu.Unlock()
	if j.owned == nil {
		return nil
	}
	gs := []int{} // owning none is not owning all
	for kg, own := range j.owned {
		if own {
			gs = append(gs, kg)
		}
	}
	return gs
}

// ReleaseGroups hands key groups over at the next batch boundary: the
// job waits for its batches in flight to commit, stops reading the
// groups, and returns their committed state with their floors, for
// AcquireGroups on the job that takes them. The other groups keep
// running.
//
// The groups' state stays in the store, unread, until DropGroups: a
// caller that must put it somewhere durable first (a checkpoint store)
// drops it once that is done, so a crash in between loses nothing. A
// restarted job not given the groups never reads it.
//
// It is refused (ErrGroupsRefused) for a job that does not own groups
// (no Config.Groups) or a group it does not own.
func (j *Job) ReleaseGroups(ctx context.Context, groups []int) ([]GroupState, error) {
	if err := j.checkGroups(groups, true); err != nil {
		return nil, err
	}
	c := &groupChange{groups: slices.Clone(groups)}
	if err := j.submit(ctx, c); err != nil {
		return nil, err
	}
	return c.out, nil
}

// DropGroups removes the state of key groups the job does not own (ones
// it released) from its store, committed at the next batch boundary.
// It is refused (ErrGroupsRefused) for a group the job owns.
func (j *Job) DropGroups(ctx context.Context, groups []int) error {
	if err := j.checkGroups(groups, false); err != nil {
		return err
	}
	return j.submit(ctx, &groupChange{groups: slices.Clone(groups), drop: true})
}

// AcquireGroups takes key groups over at the next batch boundary: the
// job waits for its batches in flight to commit, imports the groups'
// state, commits it with their floors, and reads each group's records
// after its floor. The other groups keep running.
//
// It is refused (ErrGroupsRefused) for a job that does not own groups, a
// group it owns already, or a state without a floor for one of the
// job's partitioned sources.
func (j *Job) AcquireGroups(ctx context.Context, states []GroupState) error {
	groups := make([]int, len(states))
	for i, st := range states {
		groups[i] = st.Group
		for si, p := range j.parts {
			if _, ok := st.Floors[j.cfg.Sources[si].Name]; p != nil && !ok {
				return fmt.Errorf("%w: key group %d has no floor for source %q", ErrGroupsRefused, st.Group, j.cfg.Sources[si].Name)
			}
		}
	}
	if err := j.checkGroups(groups, false); err != nil {
		return err
	}
	return j.submit(ctx, &groupChange{in: states, groups: groups})
}

// checkGroups refuses a change of groups the job cannot make: owned says
// whether the groups must be owned (a release) or not (an acquisition).
func (j *Job) checkGroups(groups []int, owned bool) error {
	if j.owned == nil {
		return fmt.Errorf("%w: the job owns every key group (it was given no groups)", ErrGroupsRefused)
	}
	seen := map[int]bool{}
	j.changeMu.Lock()
	defer j.changeMu.Unlock()
	for _, kg := range groups {
		switch {
		case kg < 0 || kg >= len(j.owned):
			return fmt.Errorf("%w: key group %d out of range 0..%d", ErrGroupsRefused, kg, len(j.owned)-1)
		case seen[kg]:
			return fmt.Errorf("%w: key group %d named twice", ErrGroupsRefused, kg)
		case owned && !j.owned[kg]:
			return fmt.Errorf("%w: key group %d is not owned here", ErrGroupsRefused, kg)
		case !owned && j.owned[kg]:
			return fmt.Errorf("%w: key group %d is owned here already", ErrGroupsRefused, kg)
		}
		seen[kg] = true
	}
	return nil
}

// groupChange is a queued ReleaseGroups (in nil) or AcquireGroups.
type groupChange struct {
	groups []int
	drop   bool
	in     []GroupState
	out    []GroupState
}

func (c *groupChange) describe() string {
	if c.drop {
		return fmt.Sprintf("drop key groups %v", c.groups)
	}
	if c.in == nil {
		return fmt.Sprintf("release key groups %v", c.groups)
	}
	return fmt.Sprintf("acquire key groups %v", c.groups)
}

func (c *groupChange) abandon(context.Context) {}

// boundary marks the change as one that needs a boundary with no batch
// in hand: collect applies it before it takes any record.
func (c *groupChange) boundary() {}

func (c *groupChange) apply(ctx context.Context, j *Job) error {
	// Checked again: the ownership may have changed while it waited.
	if err := j.checkGroups(c.groups, c.in == nil && !c.drop); err != nil {
		return err
	}
	if j.commit != nil {
		if err := j.commit.wait(); err != nil {
			return fmt.Errorf("exec: %s: a batch in flight failed: %w", c.describe(), err)
		}
	}
	switch {
	case c.drop:
		return j.drop(c)
	case c.in == nil:
		return j.release(ctx, c)
	}
	return j.acquire(ctx, c)
}

// drop removes c's groups, which the job does not own, from the store.
func (j *Job) drop(c *groupChange) error {
	for _, kg := range c.groups {
		if err := j.cfg.Store.DropKeyGroup(kg); err != nil {
			return fmt.Errorf("exec: drop key group %d: %w", kg, err)
		}
	}
	if err := j.cfg.Store.Commit(nil); err != nil {
		return fmt.Errorf("exec: drop key groups %v: commit: %w", c.groups, err)
	}
	return nil
}

// release stops reading c's groups and exports them; every batch is
// committed.
func (j *Job) release(ctx context.Context, c *groupChange) error {
	store := j.cfg.Store
	for _, kg := range c.groups {
		data, err := store.ExportKeyGroup(kg)
		if err != nil {
			return fmt.Errorf("exec: release key group %d: %w", kg, err)
		}
		st := GroupState{Group: kg, Data: data, Floors: map[string]uint64{}}
		for si, p := range j.parts {
			if p != nil {
				st.Floors[j.cfg.Sources[si].Name] = p.floorOf(kg)
			}
		}
		c.out = append(c.out, st)
	}
	j.changeMu.Lock()
	for _, kg := range c.groups {
		j.owned[kg] = false
	}
	j.changeMu.Unlock()
	for si, p := range j.parts {
		if p == nil {
			continue
		}
		for _, kg := range c.groups {
			delete(p.floors, kg)
		}
		if _, err := j.setGroups(ctx, si, p); err != nil {
			return err
		}
	}
	j.log.Info("key groups released", slog.Any("groups", c.groups), slog.Int("owned", j.ownedCount()))
	return nil
}

// acquire imports c's groups and reads them from their floors; every
// batch is committed.
func (j *Job) acquire(ctx context.Context, c *groupChange) error {
	store := j.cfg.Store
	for _, st := range c.in {
		if st.Data == nil {
			if err := store.DropKeyGroup(st.Group); err != nil {
				return fmt.Errorf("exec: acquire key group %d empty: %w", st.Group, err)
			}
			continue
		}
		if err := store.ImportKeyGroup(st.Group, st.Data); err != nil {
			return fmt.Errorf("exec: acquire key group %d: %w", st.Group, err)
		}
	}
	// Every owned group's floor, the new ones' as handed over; B becomes
	// the lowest, and every floor above it is committed.
	positions := map[string]uint64{}
	for si, p := range j.parts {
		if p == nil {
			continue
		}
		name := j.cfg.Sources[si].Name
		floors := map[int]uint64{}
		for kg, own := range j.owned {
			if own {
				floors[kg] = p.floorOf(kg)
			}
		}
		for _, st := range c.in {
			floors[st.Group] = st.Floors[name]
		}
		base := p.base
		for _, f := range floors {
			base = min(base, f)
		}
		positions[name] = base
		for kg, f := range floors {
			if f > base {
				positions[floorKey(name, kg)] = f
			}
		}
	}
	if err := store.Commit(positions); err != nil {
		return fmt.Errorf("exec: acquire key groups %v: commit: %w", c.groups, err)
	}
	j.changeMu.Lock()
	for _, st := range c.in {
		j.owned[st.Group] = true
	}
	j.changeMu.Unlock()
	for si, p := range j.parts {
		if p == nil {
			continue
		}
		name := j.cfg.Sources[si].Name
		newFloors := map[int]uint64{}
		for kg, own := range j.owned {
			if own {
				newFloors[kg] = max(positions[name], positions[floorKey(name, kg)])
			}
		}
		p.base = positions[name]
		clear(p.floors)
		for kg, f := range newFloors {
			p.seen[kg] = f
			if f > p.base {
				p.floors[kg] = f
			}
		}
		epoch, err := j.setGroups(ctx, si, p)
		if err != nil {
			return err
		}
		for _, st := range c.in {
			p.since[st.Group] = epoch
		}
	}
	j.log.Info("key groups acquired", slog.Any("groups", c.groups), slog.Int("owned", j.ownedCount()))
	return nil
}

// setGroups tells partitioned source si the owned groups and their
// floors, and returns the new epoch it starts.
func (j *Job) setGroups(ctx context.Context, si int, p *partition) (uint64, error) {
	floors := map[int]uint64{}
	for kg, own := range j.owned {
		if own {
			floors[kg] = p.floorOf(kg)
		}
	}
	p.changing.Lock()
	defer p.changing.Unlock()
	if err := p.src.SetGroups(ctx, floors); err != nil {
		return 0, fmt.Errorf("exec: source %q: set key groups: %w", j.cfg.Sources[si].Name, err)
	}
	return p.epoch.Add(1), nil
}

// afterRead returns the epoch and the source's Delivered after a read,
// taken together (called by the reader).
func (p *partition) afterRead() (epoch, delivered uint64) {
	p.changing.Lock()
	defer p.changing.Unlock()
	return p.epoch.Load(), p.src.Delivered()
}

// ownedCount returns how many key groups the job owns.
func (j *Job) ownedCount() int {
	n := 0
	for _, own := range j.owned {
		if own {
			n++
		}
	}
	return n
}

// take decides whether a message of the partitioned source goes into the
// batch: a record of a group the job owns, read since it was acquired,
// above the group's last position taken. It records the position taken.
func (p *partition) take(j *Job, m *connectors.Message) bool {
	kg := m.Group
	if !j.owns(kg) || m.GroupSet < p.since[kg] || m.Position <= p.seen[kg] {
		return false
	}
	p.seen[kg] = m.Position
	return true
}

// complete records, for a batch, that partitioned source si is complete
// up to pos (a chunk's Delivered, read in the current epoch).
func (b *batch) complete(si int, name string, pos uint64) {
	b.touched[si] = true
	if pos > b.positions[name] {
		b.positions[name] = pos
	}
}

// advance raises the source's base to pos, a position up to which every
// owned group is complete, and forgets the floors it passes.
func (p *partition) advance(pos uint64) {
	if pos <= p.base {
		return
	}
	p.base = pos
	maps.DeleteFunc(p.floors, func(_ int, f uint64) bool { return f <= pos })
}

// ownGroups makes the job own groups, and checks that every source can
// be read by key group.
func (j *Job) ownGroups(groups []int) error {
	n := j.cfg.Store.KeyGroups()
	j.owned = make([]bool, n)
	for _, kg := range groups {
		if kg < 0 || kg >= n {
			return fmt.Errorf("exec: key group %d out of range 0..%d", kg, n-1)
		}
		j.owned[kg] = true
	}
	for _, in := range j.cfg.Sources {
		if _, ok := in.Source.(connectors.Partitioned); !ok {
			return fmt.Errorf("exec: source %q (%s) cannot be read by key group, and a job that owns some key groups reads only those", in.Name, in.Source.Name())
		}
	}
	return nil
}
