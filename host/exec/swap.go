package exec

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"

	"github.com/sluicehq/sluice/host/plugin"
	"github.com/sluicehq/sluice/host/txnop"
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

// Errors of Swap.
var (
	// ErrSwapRefused is wrapped by the error of a swap refused before it
	// started: the replacement does not fit the operator.
	ErrSwapRefused = errors.New("exec: swap refused")
	// ErrNotRunning is wrapped by the error of a swap asked of a job that
	// has stopped, or stops before the swap could be made.
	ErrNotRunning = errors.New("exec: the job is not running")
)

// generation is one version of an operator's code with what runs it: the
// workers' instances, or the transactional operator.
type generation struct {
	plugin  *plugin.Plugin
	owned   bool // close plugin with the generation
	version string
	insts   []*plugin.Instance // one per worker, in worker order
	txn     *txnop.Operator
}

// close releases the generation's instances or transactional operator.
func (g *generation) close(ctx context.Context) error {
	var errs []error
	for _, in := range g.insts {
		if in != nil {
			errs = append(errs, in.Close(ctx))
		}
	}
	g.insts = nil
	if g.txn != nil {
		errs = append(errs, g.txn.Close(ctx))
		g.txn = nil
	}
	if g.owned && g.plugin != nil {
		errs = append(errs, g.plugin.Close(ctx))
		g.plugin = nil
	}
	return errors.Join(errs...)
}

// swapReq is a swap waiting for the executor's next batch boundary.
type swapReq struct {
	st   *stage
	gen  *generation
	done chan error // receives nil once installed, or why it was not
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
func (j *Job) Swap(ctx context.Context, operator string, r Replacement) (err error) {
	defer func() {
		if err != nil && r.Txn != nil {
			_ = r.Txn.Close(context.WithoutCancel(ctx))
		}
		if err != nil && r.ClosePlugin && r.Plugin != nil {
			_ = r.Plugin.Close(context.WithoutCancel(ctx)) // closing twice is harmless
		}
	}()
	st, ok := j.byName[operator]
	switch {
	case !ok:
		return fmt.Errorf("%w: %w %q", ErrSwapRefused, ErrUnknownOperator, operator)
	case r.Plugin == nil && st.txn == nil:
		return fmt.Errorf("%w: operator %q: no plugin", ErrSwapRefused, operator)
	case r.Plugin != nil && r.Plugin.Kind() != st.op.Kind:
		return fmt.Errorf("%w: operator %q is %s and the new module was loaded as %s", ErrSwapRefused, operator, st.op.Kind, r.Plugin.Kind())
	case st.txn != nil && r.Txn == nil:
		return fmt.Errorf("%w: operator %q is transactional: the replacement needs its txnop.Operator", ErrSwapRefused, operator)
	case st.txn == nil && r.Txn != nil:
		return fmt.Errorf("%w: operator %q is not transactional", ErrSwapRefused, operator)
	case st.txn != nil && !slices.Equal(r.Txn.Tables(), st.txn.names):
		return fmt.Errorf("%w: operator %q: the replacement's tables %q differ from the operator's %q", ErrSwapRefused, operator, r.Txn.Tables(), st.txn.names)
	}
	gen := &generation{plugin: r.Plugin, owned: r.ClosePlugin, version: r.Version, txn: r.Txn}
	r.Txn = nil // the generation owns it now
	if st.txn == nil {
		for w := range st.workers {
			inst, err := r.Plugin.NewInstance(ctx, st.op.Config)
			if err != nil {
				_ = gen.close(context.WithoutCancel(ctx))
				return fmt.Errorf("%w: operator %q: worker %d: %w", ErrSwapRefused, operator, w, err)
			}
			gen.insts = append(gen.insts, inst)
		}
	}
	req := &swapReq{st: st, gen: gen, done: make(chan error, 1)}
	j.swapMu.Lock()
	if j.ended {
		j.swapMu.Unlock()
		_ = gen.close(context.WithoutCancel(ctx))
		return fmt.Errorf("%w: cannot swap operator %q", ErrNotRunning, operator)
	}
	j.swaps = append(j.swaps, req)
	j.swapMu.Unlock()
	select {
	case j.wake <- struct{}{}:
	default:
	}
	select {
	case err := <-req.done:
		return err
	case <-ctx.Done():
	}
	j.swapMu.Lock()
	if i := slices.Index(j.swaps, req); i >= 0 {
		j.swaps = slices.Delete(j.swaps, i, i+1)
		j.swapMu.Unlock()
		_ = gen.close(context.WithoutCancel(ctx))
		return fmt.Errorf("exec: swap of operator %q withdrawn: %w", operator, context.Cause(ctx))
	}
	j.swapMu.Unlock()
	return <-req.done // taken: the executor answers at once
}

// installSwaps puts the queued swaps in place. It runs on the executor's
// goroutine, between batches, so no worker is running.
func (j *Job) installSwaps(ctx context.Context) {
	j.swapMu.Lock()
	reqs := j.swaps
	j.swaps = nil
	j.swapMu.Unlock()
	for _, req := range reqs {
		st := req.st
		from := st.version
		if st.prev != nil {
			// A swap during another's trial: the oldest code goes.
			if err := st.prev.close(ctx); err != nil {
				j.log.Warn("closing a replaced plugin failed", "operator", st.op.Name, "err", err)
			}
		}
		st.prev = st.install(req.gen)
		st.probation = st.op.RollbackBatches
		st.quarantined, st.failStreak = false, 0
		st.swaps++
		om := &j.m.ops[slices.Index(j.stages, st)]
		om.swaps.Inc()
		om.quarantined.Set(0)
		if st.probation == 0 {
			j.retire(ctx, st)
		}
		j.log.Info("operator swapped", slog.String("operator", st.op.Name),
			slog.String("from", from), slog.String("to", st.version), slog.Int("trial_batches", st.probation))
		j.syncOperatorStatus(st)
		req.done <- nil
	}
}

// failSwaps answers the queued swaps when the job ends.
func (j *Job) failSwaps(ctx context.Context) {
	j.swapMu.Lock()
	j.ended = true
	reqs := j.swaps
	j.swaps = nil
	j.swapMu.Unlock()
	for _, req := range reqs {
		_ = req.gen.close(ctx)
		req.done <- fmt.Errorf("%w: operator %q was not swapped", ErrNotRunning, req.st.op.Name)
	}
}

// install makes gen the stage's code and returns the generation it
// replaces.
func (st *stage) install(gen *generation) *generation {
	old := &generation{plugin: st.op.Plugin, owned: st.ownsPlugin, version: st.version}
	if st.txn != nil {
		old.txn = st.txn.op
		// The adaptive model carries over: what it learned of the
		// workload, and one history of decisions.
		gen.txn.TakeModel(old.txn)
		st.txn.op = gen.txn
		st.txn.model.Store(gen.txn.Model())
		st.txn.status.Strategy = gen.txn.Strategy().String()
		st.txn.status.Workers = gen.txn.Workers()
		gen.txn = nil
	} else {
		for i, w := range st.workers {
			old.insts = append(old.insts, w.inst)
			w.inst = gen.insts[i]
		}
		gen.insts = nil
	}
	st.op.Plugin, st.ownsPlugin, st.version = gen.plugin, gen.owned, gen.version
	gen.plugin = nil
	return old
}

// retire ends the trial of the stage's code: the previous code is closed.
func (j *Job) retire(ctx context.Context, st *stage) {
	st.probation = 0
	if st.prev == nil {
		return
	}
	if err := st.prev.close(ctx); err != nil {
		j.log.Warn("closing a replaced plugin failed", "operator", st.op.Name, "err", err)
	}
	st.prev = nil
}

// rollback puts the previous code back after the new code failed in its
// trial, closing the new code.
func (j *Job) rollback(ctx context.Context, si int, reason error) {
	st := j.stages[si]
	failed := st.version
	bad := st.install(st.prev)
	st.prev = nil
	st.probation = 0
	st.rollbacks++
	st.lastRollback = reason.Error()
	j.m.ops[si].rollbacks.Inc()
	if err := bad.close(ctx); err != nil {
		j.log.Warn("closing a rolled-back plugin failed", "operator", st.op.Name, "err", err)
	}
	j.log.Error("new plugin failed during its trial; rolled back to the previous one and processing the batch again",
		slog.String("operator", st.op.Name), slog.String("failed", failed), slog.String("restored", st.version), slog.Any("err", reason))
	if j.cfg.OnRollback != nil {
		j.cfg.OnRollback(st.op.Name, failed, st.version, reason)
	}
	j.syncOperatorStatus(st)
}

// syncOperatorStatus copies the stage's code and lifecycle into the status.
func (j *Job) syncOperatorStatus(st *stage) {
	si := slices.Index(j.stages, st)
	if si < 0 {
		return
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	os := &j.status.Operators[si]
	os.Plugin, os.Version = st.op.pluginName(), st.version
	os.Swaps, os.Rollbacks, os.LastRollback = st.swaps, st.rollbacks, st.lastRollback
	os.TrialBatches, os.Quarantined = st.probation, st.quarantined
	if st.txn != nil && os.Txn != nil {
		os.Txn.Strategy, os.Txn.Workers = st.txn.status.Strategy, st.txn.status.Workers
		os.Parallelism = st.parallelism()
	}
}
