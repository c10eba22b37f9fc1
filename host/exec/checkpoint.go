package exec

import (
	"context"
	"fmt"

	"github.com/sluicehq/sluice/state"
)

// GroupCheckpoint is what a checkpoint of a job's key groups needs, as of
// a batch boundary at which every batch read has been committed.
type GroupCheckpoint struct {
	// Store is the job's store, its state committed: ExportKeyGroup of an
	// owned group returns the group's state as of Floors.
	Store *state.Store
	// Groups are the key groups the job owns, in order.
	Groups []int
	// Floors holds each owned group's floor by source name: the position
	// of the last record of the group that the committed state includes,
	// the floors ReleaseGroups would hand over.
	Floors map[int]map[string]uint64
}

// Checkpoint calls fn at the next batch boundary with no batch in hand,
// once the batches in flight have committed, with what a checkpoint of
// the owned groups needs: the store, whose state fn may export, and each
// group's floors. It returns fn's error.
//
// The job takes no record while fn runs, so fn must only copy what it
// needs (state.Store.ExportKeyGroup) and return: network I/O, such as
// putting the exports in a checkpoint store, belongs after Checkpoint
// returns. fn must not call the job's methods.
//
// It is refused (ErrGroupsRefused) for a job that does not own groups (no
// Config.Groups); when ctx ends first, fn is not called and ctx's error
// is returned.
func (j *Job) Checkpoint(ctx context.Context, fn func(c GroupCheckpoint) error) error {
	if j.owned == nil {
		return fmt.Errorf("%w: the job owns every key group (it was given no groups): nothing to checkpoint by group", ErrGroupsRefused)
	}
	return j.submit(ctx, &checkpointChange{fn: fn})
}

// EmptyGroup returns the state of key group kg as it was before any
// record: no state, and a floor of 0 in every source, so a job that
// acquires it reads the group's records from the start of each source.
// It is what a host takes over for a group of which no checkpoint exists.
func (j *Job) EmptyGroup(kg int) GroupState {
	st := GroupState{Group: kg, Floors: map[string]uint64{}}
	for _, in := range j.cfg.Sources {
		st.Floors[in.Name] = 0
	}
	return st
}

// checkpointChange is a queued Checkpoint.
type checkpointChange struct {
	fn func(GroupCheckpoint) error
}

func (c *checkpointChange) describe() string { return "checkpoint key groups" }

func (c *checkpointChange) abandon(context.Context) {}

// boundary marks the change as one that needs a boundary with no batch
// in hand: the floors must be those of the committed state.
func (c *checkpointChange) boundary() {}

func (c *checkpointChange) apply(_ context.Context, j *Job) error {
	if j.commit != nil {
		if err := j.commit.wait(); err != nil {
			return fmt.Errorf("exec: %s: a batch in flight failed: %w", c.describe(), err)
		}
	}
	gc := GroupCheckpoint{Store: j.cfg.Store, Floors: map[int]map[string]uint64{}}
	for kg, own := range j.owned {
		if !own {
			continue
		}
		gc.Groups = append(gc.Groups, kg)
		floors := map[string]uint64{}
		for si, p := range j.parts {
			if p != nil {
				floors[j.cfg.Sources[si].Name] = p.floorOf(kg)
			}
		}
		gc.Floors[kg] = floors
	}
	if gc.Groups == nil {
		gc.Groups = []int{}
	}
	return c.fn(gc)
}
