package exec

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"math"
	"slices"
	"time"

	"github.com/sluicehq/sluice/host/plugin"
	"github.com/sluicehq/sluice/host/txnop"
	"github.com/sluicehq/sluice/state"
)

// Replacement is the new code of an operator, for Job.Swap.
type Replacement struct {
	// Plugin is the new module, loaded for the operator's kind with the
	// operator's limits. A transactional operator's may be nil (native
	// Logic). The caller owns it unless ClosePlugin is set.
	Plugin *plugin.Plugin
	// ClosePlugin hands Plugin to the job, which closes it (freeing its
	// compiled code) once no code of the operator runs it any more: when
	// a later swap's trial is over, when it is rolled back, when the job
	// is closed, or at once when Swap fails. A host that deploys modules
	// for as long as it runs sets it, so that replaced modules do not
	// accumulate.
	ClosePlugin bool
	// Version names it in the status, logs and dead letters.
	Version string
	// Txn is the transactional operator that runs Plugin, for a
	// transactional operator only (built like the one it replaces, with
	// the same tables). Swap takes it over: the job closes it, also when
	// Swap fails.
	Txn *txnop.Operator
}

// Errors of Swap and SetWorkers.
var (
	// ErrSwapRefused is wrapped by the error of a swap refused before it
	// started: the replacement does not fit the operator.
	ErrSwapRefused = errors.New("exec: swap refused")
	// ErrSwapRaced is wrapped, with ErrSwapRefused, by the error of a swap
	// whose operator's worker count changed while its instances were
	// made (a change of workers, by hand or by the control plane, in
	// between): nothing changed, and the same swap asked again can go
	// through.
	ErrSwapRaced = errors.New("its worker count changed while the swap was prepared")
	// ErrNotRunning is wrapped by the error of a change asked of a job
	// that has stopped, or stops before the change could be made.
	ErrNotRunning = errors.New("exec: the job is not running")
	// ErrChangeRefused is wrapped by the error of a change of workers the
	// operator cannot take (its kind has no workers of its own, a trial
	// is in progress, its code changed while the change was prepared).
	ErrChangeRefused = errors.New("exec: change refused")
)

// change is a change to a running job, prepared off the executor's
// goroutine and applied by it at a batch boundary: a swap of an
// operator's code, a change of its worker count, and the changes to come
// (assignments, timers).
type change interface {
	// apply makes the change; it runs on the executor's goroutine between
	// batches, so no worker is running.
	apply(ctx context.Context, j *Job) error
	// abandon releases what a change that will not be applied holds.
	abandon(ctx context.Context)
	// describe names the change in errors.
	describe() string
}

// queued is a change waiting for the executor, with its answer.
type queued struct {
	c    change
	done chan error // receives nil once applied, or why it was not
}

// submit queues c for the next batch boundary and waits for its answer.
// When ctx ends first, the change is withdrawn (if it was not made) and
// ctx's error returned.
func (j *Job) submit(ctx context.Context, c change) error {
	q := &queued{c: c, done: make(chan error, 1)}
	j.changeMu.Lock()
	if j.ended {
		j.changeMu.Unlock()
		c.abandon(context.WithoutCancel(ctx))
		return fmt.Errorf("%w: cannot %s", ErrNotRunning, c.describe())
	}
	j.changes = append(j.changes, q)
	j.changeMu.Unlock()
	select {
	case j.wake <- struct{}{}:
	default:
	}
	select {
	case err := <-q.done:
		return err
	case <-ctx.Done():
	}
	j.changeMu.Lock()
	if i := slices.Index(j.changes, q); i >= 0 {
		j.changes = slices.Delete(j.changes, i, i+1)
		j.changeMu.Unlock()
		c.abandon(context.WithoutCancel(ctx))
		return fmt.Errorf("exec: %s withdrawn: %w", c.describe(), context.Cause(ctx))
	}
	j.changeMu.Unlock()
	return <-q.done // taken: the executor answers at once
}

// boundaryChange is a change that needs a boundary with no batch in
// hand (a change of the key groups read): collect applies it before it
// takes a record, and a boundary inside a batch leaves it queued.
type boundaryChange interface {
	change
	boundary()
}

// applyChanges makes the queued changes. It runs on the executor's
// goroutine, between batches, so no worker is running; inHand says a
// batch has been read, which leaves boundary changes queued. A boundary
// change works on committed state: state that a commit interval left
// uncommitted is committed first, and if that fails, so does the job
// (the error is returned, and the changes are answered with it).
func (j *Job) applyChanges(ctx context.Context, inHand bool) error {
	j.changeMu.Lock()
	qs := j.changes
	j.changes = nil
	boundary := false
	for _, q := range qs {
		if _, ok := q.c.(boundaryChange); ok {
			boundary = true
			if inHand {
				j.changes = append(j.changes, q)
			}
		}
	}
	j.changeMu.Unlock()
	if boundary && !inHand {
		if err := j.commitTail(ctx); err != nil {
			for _, q := range qs {
				q.c.abandon(ctx)
				q.done <- fmt.Errorf("exec: %s: committing the batches before it: %w", q.c.describe(), err)
			}
			return err
		}
	}
	for _, q := range qs {
		if _, ok := q.c.(boundaryChange); ok && inHand {
			continue
		}
		q.done <- q.c.apply(ctx, j)
	}
	return nil
}

// failChanges answers the queued changes when the job ends.
func (j *Job) failChanges(ctx context.Context) {
	j.changeMu.Lock()
	j.ended = true
	qs := j.changes
	j.changes = nil
	j.changeMu.Unlock()
	for _, q := range qs {
		q.c.abandon(ctx)
		q.done <- fmt.Errorf("%w: could not %s", ErrNotRunning, q.c.describe())
	}
}

// Swap replaces the code of operator with r at the next batch boundary,
// on all its workers at once, and returns once the new code is in place.
// Keyed and transactional state stays where it is. The new instances are
// made (and configured with the operator's configuration) before Swap
// queues the change, so a module that fails to start is refused while the
// old one keeps running.
//
// For the operator's first RollbackBatches batches after the swap, a
// batch on which the new code fails (a trap, timeout, error status or
// failed call, not a record the guest rejects on purpose) is undone,
// the previous code is put back and runs the batch again; the job's
// OnRollback is told why.
//
// Swap is refused, with an error wrapping ErrSwapRefused, when no operator
// has that name or the replacement serves another kind; when ctx ends
// first, the swap is withdrawn (if it was not made) and ctx's error
// returned.
func (j *Job) Swap(ctx context.Context, operator string, r Replacement) error {
	_, err := j.SwapTimed(ctx, operator, r)
	return err
}

// SwapTimes are how long the steps of a swap took (SwapTimed).
type SwapTimes struct {
	// Instances is the making of the new code's instances, configured,
	// while batches go on (nothing for a transactional operator, whose
	// replacement comes made).
	Instances time.Duration
	// Boundary is the wait, once they are made, for the executor to take
	// the swap between two batches.
	Boundary time.Duration
	// Install is the executor putting the new code in place at the
	// boundary: the time the pipeline stands still for the swap.
	Install time.Duration
	// FirstBatch is how long the first batch on the new code took, cold
	// memory and all, and Before how long the last batch on the old code
	// took (Job.LastSwap only, once that batch has run; 0 before): the
	// operator's run of the batch, retries of its failed records included.
	FirstBatch, Before time.Duration
}

// LastSwap returns how long the steps of operator's last swap took,
// including its first batch once that has run; false when the operator
// has not been swapped since the job started.
func (j *Job) LastSwap(operator string) (SwapTimes, bool) {
	n, ok := j.byName[operator]
	if !ok {
		return SwapTimes{}, false
	}
	j.changeMu.Lock()
	defer j.changeMu.Unlock()
	return n.lastSwap, n.swaps > 0
}

// SwapTimed is Swap that also says how long each step took, as far as
// it got.
func (j *Job) SwapTimed(ctx context.Context, operator string, r Replacement) (t SwapTimes, err error) {
	defer func() {
		if err != nil && r.Txn != nil {
			_ = r.Txn.Close(context.WithoutCancel(ctx))
		}
		if err != nil && r.ClosePlugin && r.Plugin != nil {
			_ = r.Plugin.Close(context.WithoutCancel(ctx)) // closing twice is harmless
		}
	}()
	n, ok := j.byName[operator]
	if !ok {
		return t, fmt.Errorf("%w: %w %q", ErrSwapRefused, ErrUnknownOperator, operator)
	}
	// The worker count is read under the lock (the executor changes it);
	// the instances are made without it, while batches go on, and the swap
	// is refused at the boundary if the count changed meanwhile.
	j.changeMu.Lock()
	ended, workers := j.ended, n.code.parallelism()
	j.changeMu.Unlock()
	if ended {
		return t, fmt.Errorf("%w: cannot swap operator %q", ErrNotRunning, operator)
	}
	start := time.Now()
	gen, err := n.code.prepare(ctx, n.op, &r, workers)
	t.Instances = time.Since(start)
	if err != nil {
		return t, err
	}
	gen.plugin, gen.owned, gen.version = r.Plugin, r.ClosePlugin, r.Version
	r.ClosePlugin = false // the generation closes it now
	s := &swap{n: n, gen: gen}
	start = time.Now()
	err = j.submit(ctx, s)
	// apply, when it ran, set took before submit received its answer.
	t.Install = s.took
	t.Boundary = time.Since(start) - s.took
	if err == nil {
		j.changeMu.Lock()
		n.lastSwap.Instances, n.lastSwap.Boundary, n.lastSwap.Install = t.Instances, t.Boundary, t.Install
		j.changeMu.Unlock()
	}
	return t, err
}

// swap is a queued Swap.
type swap struct {
	n   *node
	gen *generation
	// took is how long apply took, set by apply on the executor's
	// goroutine and read by SwapTimed once submit returns.
	took time.Duration
}

func (s *swap) describe() string { return fmt.Sprintf("swap operator %q", s.n.op.Name) }

func (s *swap) abandon(ctx context.Context) { _ = s.gen.close(ctx) }

func (s *swap) apply(ctx context.Context, j *Job) error {
	start := time.Now()
	defer func() { s.took = time.Since(start) }()
	n := s.n
	if n.code.parallelism() != len(s.gen.insts) && s.gen.insts != nil {
		// The worker count changed after the instances were made.
		s.abandon(ctx)
		return fmt.Errorf("%w: operator %q: %w; swap again", ErrSwapRefused, n.op.Name, ErrSwapRaced)
	}
	from := n.version
	if n.prev != nil {
		// A swap during another's trial: the oldest code goes.
		if err := n.prev.close(ctx); err != nil {
			j.log.Warn("closing a replaced plugin failed", "operator", n.op.Name, "err", err)
		}
	}
	j.changeMu.Lock()
	n.prev = n.install(s.gen)
	n.lastSwap = SwapTimes{Before: n.lastBatch}
	j.changeMu.Unlock()
	n.firstPending = true
	n.probation = n.op.RollbackBatches
	n.quarantined, n.failStreak = false, 0
	n.swaps++
	n.m.swaps.Inc()
	n.m.quarantined.Set(0)
	if n.probation == 0 {
		j.retire(ctx, n)
	}
	j.log.Info("operator swapped", slog.String("operator", n.op.Name),
		slog.String("from", from), slog.String("to", n.version), slog.Int("trial_batches", n.probation))
	j.syncStatus(n)
	return nil
}

// retire ends the trial of n's code: the previous code is closed.
func (j *Job) retire(ctx context.Context, n *node) {
	n.probation = 0
	if n.prev == nil {
		return
	}
	if err := n.prev.close(ctx); err != nil {
		j.log.Warn("closing a replaced plugin failed", "operator", n.op.Name, "err", err)
	}
	n.prev = nil
}

// rollback puts the previous code back after the new code failed in its
// trial, closing the new code.
func (j *Job) rollback(ctx context.Context, n *node, reason error) {
	failed := n.version
	j.changeMu.Lock()
	bad := n.install(n.prev)
	j.changeMu.Unlock()
	n.prev = nil
	n.probation = 0
	n.rollbacks++
	n.lastRollback = reason.Error()
	n.m.rollbacks.Inc()
	if err := bad.close(ctx); err != nil {
		j.log.Warn("closing a rolled-back plugin failed", "operator", n.op.Name, "err", err)
	}
	j.log.Error("new plugin failed during its trial; rolled back to the previous one and processing the batch again",
		slog.String("operator", n.op.Name), slog.String("failed", failed), slog.String("restored", n.version), slog.Any("err", reason))
	if j.cfg.OnRollback != nil {
		j.cfg.OnRollback(n.op.Name, failed, n.version, reason)
	}
	j.syncStatus(n)
}

// SetWorkers changes the number of workers of a stateless or keyed
// operator at the next batch boundary, and returns once the change is
// made. The new workers' instances are made first, on the caller's
// goroutine, so a module that fails to start is refused while the job
// runs on. A keyed operator's key groups are reassigned: those of the
// workers that go away, and shares for the new ones (no other group
// moves); state stays in place, and the new assignment is committed with
// the next batch.
//
// It is refused (ErrChangeRefused) for a transactional operator, whose
// scheduler has its own workers, and during a swapped-in module's trial.
func (j *Job) SetWorkers(ctx context.Context, operator string, workers int) error {
	n, ok := j.byName[operator]
	if !ok {
		return fmt.Errorf("%w: %w %q", ErrChangeRefused, ErrUnknownOperator, operator)
	}
	rs, ok := n.code.(resizer)
	switch {
	case !ok:
		return fmt.Errorf("%w: operator %q has no workers of its own to change", ErrChangeRefused, operator)
	case workers < 1 || workers > state.MaxKeyGroups:
		return fmt.Errorf("%w: operator %q: %d workers, want 1 to %d", ErrChangeRefused, operator, workers, state.MaxKeyGroups)
	}
	j.changeMu.Lock()
	ended, code, from := j.ended, n.op.Plugin, n.code.parallelism()
	j.changeMu.Unlock()
	if ended {
		return fmt.Errorf("%w: cannot change operator %q", ErrNotRunning, operator)
	}
	r, err := rs.prepareResize(ctx, n.op, code, from, workers)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrChangeRefused, err)
	}
	return j.submit(ctx, &workerChange{n: n, rs: rs, r: r})
}

// workerChange is a queued SetWorkers.
type workerChange struct {
	n  *node
	rs resizer
	r  *resize
}

func (c *workerChange) describe() string {
	return fmt.Sprintf("change the workers of operator %q to %d", c.n.op.Name, c.r.workers)
}

func (c *workerChange) abandon(ctx context.Context) { c.r.close(ctx) }

func (c *workerChange) apply(ctx context.Context, j *Job) error {
	n := c.n
	switch {
	case n.prev != nil:
		c.abandon(ctx)
		return fmt.Errorf("%w: operator %q: a swapped-in plugin is on trial (%d batches left)", ErrChangeRefused, n.op.Name, n.probation)
	case n.op.Plugin != c.r.code:
		c.abandon(ctx)
		return fmt.Errorf("%w: operator %q: its plugin was swapped while the change was prepared; change again", ErrChangeRefused, n.op.Name)
	case n.code.parallelism() != c.r.from:
		c.abandon(ctx)
		return fmt.Errorf("%w: operator %q: its workers changed while the change was prepared; change again", ErrChangeRefused, n.op.Name)
	}
	from := n.code.parallelism()
	j.changeMu.Lock()
	err := c.rs.resize(ctx, c.r)
	j.changeMu.Unlock()
	if err != nil {
		return fmt.Errorf("exec: operator %q: %w", n.op.Name, err)
	}
	j.log.Info("operator's workers changed", slog.String("operator", n.op.Name), slog.Int("from", from), slog.Int("to", c.r.workers))
	j.syncStatus(n)
	return nil
}

// MoveGroups moves key groups of a keyed operator to other workers of
// the operator (moves maps a key group to the id of the worker that is to
// own it) at the next batch boundary, and returns once they are moved.
// State stays in place: every worker reads the same tables, so a group
// changes hands by changing its owner. The new assignment is a new
// version, committed with the next batch, so a restart finds the groups
// where they were moved. Moving a group to the worker that owns it does
// nothing.
//
// It is refused (ErrChangeRefused, naming what is at fault) for an
// operator that does not exist or is not keyed, a key group out of range,
// a worker that does not exist, and during a swapped-in module's trial;
// when ctx ends first, the move is withdrawn (if it was not made) and
// ctx's error returned.
func (j *Job) MoveGroups(ctx context.Context, operator string, moves map[int]int) error {
	n, ok := j.byName[operator]
	if !ok {
		return fmt.Errorf("%w: %w %q", ErrChangeRefused, ErrUnknownOperator, operator)
	}
	ks, ok := n.code.(*keyedStage)
	if !ok {
		return fmt.Errorf("%w: operator %q is %s, not keyed: it has no key groups to move between workers", ErrChangeRefused, operator, n.op.Kind)
	}
	j.changeMu.Lock()
	ended, workers := j.ended, ks.parallelism()
	j.changeMu.Unlock()
	if ended {
		return fmt.Errorf("%w: cannot move key groups of operator %q", ErrNotRunning, operator)
	}
	if err := checkMoves(operator, moves, ks.groups, workers); err != nil {
		return err
	}
	if len(moves) == 0 {
		return nil
	}
	return j.submit(ctx, &groupMove{n: n, ks: ks, moves: maps.Clone(moves)})
}

// checkMoves checks moves of an operator with groups key groups and
// workers workers, in key-group order so that the error is always the
// same.
func checkMoves(operator string, moves map[int]int, groups, workers int) error {
	for _, kg := range slices.Sorted(maps.Keys(moves)) {
		w := moves[kg]
		switch {
		case kg < 0 || kg >= groups:
			return fmt.Errorf("%w: operator %q: key group %d out of range: it has %d key groups (0 to %d)", ErrChangeRefused, operator, kg, groups, groups-1)
		case w < 0 || w >= workers:
			return fmt.Errorf("%w: operator %q: key group %d to worker %d: no such worker (it has %d, ids 0 to %d)", ErrChangeRefused, operator, kg, w, workers, workers-1)
		}
	}
	return nil
}

// groupMove is a queued MoveGroups.
type groupMove struct {
	n     *node
	ks    *keyedStage
	moves map[int]int
}

func (c *groupMove) describe() string {
	return fmt.Sprintf("move %d key groups of operator %q", len(c.moves), c.n.op.Name)
}

func (c *groupMove) abandon(context.Context) {}

func (c *groupMove) apply(_ context.Context, j *Job) error {
	n, ks := c.n, c.ks
	if n.prev != nil {
		return fmt.Errorf("%w: operator %q: a swapped-in plugin is on trial (%d batches left)", ErrChangeRefused, n.op.Name, n.probation)
	}
	// The workers may have changed since MoveGroups checked.
	if err := checkMoves(n.op.Name, c.moves, ks.groups, ks.parallelism()); err != nil {
		return err
	}
	for _, w := range ks.workers {
		if w.sess.Len() > 0 {
			return fmt.Errorf("exec: operator %q: worker %d has uncommitted writes; key groups move only between committed batches", n.op.Name, w.id)
		}
	}
	next := ks.assign.move(c.moves)
	if next == ks.assign {
		return nil
	}
	j.changeMu.Lock()
	ks.assign = next
	next.save(ks.store, n.op.Name)
	j.changeMu.Unlock()
	j.log.Info("operator's key groups moved", slog.String("operator", n.op.Name), slog.Int("groups", len(c.moves)),
		slog.Uint64("assignment", next.version))
	j.syncStatus(n)
	return nil
}

// SetWorkerCap makes worker of a stateless or keyed operator run at most
// rate records per second, by sleeping after its share of each batch
// until the share has taken its records at that rate; 0 removes the cap.
// Worker -1 sets the operator's cap: every worker's, the workers added
// later included, replacing the caps set one by one. The sleep counts as
// the worker's busy time: a capped worker is slower, not idle.
//
// It is a benchmark setting, not a production one: it makes a worker's
// capacity small and known, so that the control plane's decisions can be
// seen on a small machine, and it slows one worker to make a straggler.
// A cap set for one worker stays with its id across MoveGroups and
// SetWorkers, as long as the worker exists. It is refused
// (ErrChangeRefused) for an operator that does not exist or runs no pool
// of workers, a worker it does not have, and a rate that is negative or
// not finite.
func (j *Job) SetWorkerCap(operator string, worker int, rate float64) error {
	n, ok := j.byName[operator]
	if !ok {
		return fmt.Errorf("%w: %w %q", ErrChangeRefused, ErrUnknownOperator, operator)
	}
	p := poolOf(n.code)
	switch {
	case p == nil:
		return fmt.Errorf("%w: operator %q is %s: only stateless and keyed operators' workers are capped", ErrChangeRefused, operator, n.op.Kind)
	case rate < 0 || math.IsNaN(rate) || math.IsInf(rate, 0):
		return fmt.Errorf("%w: operator %q: cap %v records/s, want a finite rate >= 0 (0: none)", ErrChangeRefused, operator, rate)
	}
	// The workers change under changeMu (at a batch boundary).
	j.changeMu.Lock()
	defer j.changeMu.Unlock()
	if worker != -1 && (worker < 0 || worker >= len(p.workers)) {
		return fmt.Errorf("%w: operator %q: no worker %d (it has %d, ids 0 to %d)", ErrChangeRefused, operator, worker, len(p.workers), len(p.workers)-1)
	}
	p.capMu.Lock()
	defer p.capMu.Unlock()
	switch {
	case worker == -1:
		p.capAll = rate
		clear(p.caps)
	case rate == 0:
		delete(p.caps, worker)
	default:
		if p.caps == nil {
			p.caps = map[int]float64{}
		}
		p.caps[worker] = rate
	}
	return nil
}

// SetCommitDelay makes every commit take d longer (0: none), as a slow
// disk would: the delay is part of the commit's measured time. It is a
// benchmark setting, not a production one, like SetWorkerCap: it makes
// commits slow on purpose, for the job doctor to find. It is refused
// (ErrChangeRefused) for a negative d.
func (j *Job) SetCommitDelay(d time.Duration) error {
	if d < 0 {
		return fmt.Errorf("%w: commit delay %v, want 0 or more", ErrChangeRefused, d)
	}
	j.commitDelay.Store(int64(d))
	return nil
}

// syncStatus copies n's code and lifecycle into the status.
func (j *Job) syncStatus(n *node) {
	i := slices.Index(j.nodes, n)
	if i < 0 {
		return
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	n.status(&j.status.Operators[i])
	n.synced++
	n.publish()
}
