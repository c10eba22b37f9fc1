package exec

import (
	"context"
	"fmt"
	"time"

	"github.com/sluicehq/sluice/state"
)

// Commits deferred by a commit interval.
//
// By default every batch is committed: its state, the sources' positions
// after it and the sinks' offsets, in one atomic write (package state).
// With Config.CommitInterval a batch may leave its state uncommitted,
// marked dirty in the store, and the next commit writes the changes of
// every batch since the last, with the highest positions they reached:
// a key changed by many batches is written once. Outputs are still
// written and flushed with each batch, before any commit that covers
// them, so a crash replays the uncommitted batches from the committed
// positions and the sinks treat their outputs as they treat a crashed
// batch's (a rewindable sink takes them back, a JetStream sink skips
// them): exactly once holds as it does per batch, for more input.
//
// A batch is committed when the interval has passed since the last
// commit, and whenever a deferral would buy nothing or cost too much:
// a batch that is not full (the sources are caught up), a batch run for
// time's sake or the end of input, when nothing arrives before the
// interval ends (collect returns a commit-only batch), at the end of Run,
// and before a change that works on committed state (a change of key
// groups, a checkpoint: applyChanges). A failed Run commits nothing
// more, as a crash would.

// commitDue reports whether b's state is committed with it.
func (j *Job) commitDue(b *batch) bool {
	switch {
	case j.cfg.CommitInterval <= 0, b.tick, b.flush:
		return true
	case len(b.in)+len(b.dead) < j.batchSize:
		return true // not full: the sources are caught up
	}
	return time.Since(j.lastCommit) >= j.cfg.CommitInterval
}

// prepare captures the state of every batch since the last commit
// (state.Store.Prepare) and restarts the interval.
func (j *Job) prepare() (*state.PendingCommit, error) {
	pending, err := j.cfg.Store.Prepare()
	if err != nil {
		return nil, fmt.Errorf("exec: commit: %w", err)
	}
	j.tail, j.lastCommit = false, time.Now()
	return pending, nil
}

// commitTail commits what the batches since the last commit left
// uncommitted, if anything, and waits until it is written.
func (j *Job) commitTail(ctx context.Context) error {
	if !j.tail || j.commit == nil {
		return nil
	}
	pending, err := j.prepare()
	if err != nil {
		return err
	}
	h := &handoff{b: newBatch(j.cfg.Sources), start: time.Now(), pending: pending, commitOnly: true}
	if err := j.commit.submit(h); err != nil {
		return err
	}
	return j.commit.wait()
}

// commitTimer returns a timer that fires when the state left
// uncommitted is due, or nil when there is none.
func (j *Job) commitTimer() *time.Timer {
	if !j.tail {
		return nil
	}
	return time.NewTimer(max(time.Until(j.lastCommit.Add(j.cfg.CommitInterval)), 0))
}

// timerC is t's channel, or nil (never ready) for no timer.
func timerC(t *time.Timer) <-chan time.Time {
	if t == nil {
		return nil
	}
	return t.C
}

// uncommitted is what the batches finished since the last commit read: the
// highest position of each source (and partitioned floor) and which
// sources they touched, for the next commit and the acknowledgements
// after it. Positions only grow between commits, and a change of key
// groups, which sets them otherwise, comes after a commit.
type uncommitted struct {
	positions map[string]uint64
	touched   []bool
}

func newUncommitted(sources int) uncommitted {
	return uncommitted{positions: map[string]uint64{}, touched: make([]bool, sources)}
}

// add merges b's positions and returns the merged ones.
func (c *uncommitted) add(b *batch) map[string]uint64 {
	for k, v := range b.positions {
		if v > c.positions[k] {
			c.positions[k] = v
		}
	}
	for i, t := range b.touched {
		c.touched[i] = c.touched[i] || t
	}
	return c.positions
}

// reset forgets what a commit has written.
func (c *uncommitted) reset() {
	clear(c.positions)
	clear(c.touched)
}
