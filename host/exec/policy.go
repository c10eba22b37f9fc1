package exec

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"

	"github.com/sluicehq/sluice/abi"
	"github.com/sluicehq/sluice/host/plugin"
	"github.com/sluicehq/sluice/state"
)

// errQuarantineStop is returned by process when the job is asked to stop
// while an operator is quarantined: the batch is not committed, and Run
// returns nil (the input is read again on the next run).
var errQuarantineStop = errors.New("exec: stopped while an operator was quarantined; the batch in hand is not committed")

// failure returns what shows the operator's code failed on a stage run:
// the run's error, or the first reject that is not the guest's own
// rejection of a record (a trap, timeout, error status or failed call).
// Records the guest rejects on purpose are its business, not a failure.
func failure(err error, rejects []plugin.Reject) error {
	if err != nil {
		return err
	}
	for _, r := range rejects {
		if !errors.Is(r.Err, plugin.ErrRejected) {
			return r.Err
		}
	}
	return nil
}

// runStage runs stage si on recs under the operator's lifecycle and
// failure policy:
//
//   - during a swapped-in module's trial (Operator.RollbackBatches), a run
//     that fails is undone (keyed state rolled back to before it), the
//     previous code is put back and the run made again;
//   - records that failed (not rejected on purpose) are retried alone up
//     to Operator.Retries times before the error policy applies;
//   - after Operator.QuarantineAfter consecutive batches with failures,
//     the run is undone and the operator quarantined: the executor calls
//     it no more and waits, holding the batch uncommitted, until a swap
//     brings new code, then runs the batch with it.
func (j *Job) runStage(ctx context.Context, si int, recs []abi.Record, idx []int32) ([]abi.Record, []int32, []plugin.Reject, error) {
	st := j.stages[si]
	m := &j.m.ops[si]
	for {
		if st.quarantined {
			if err := j.awaitSwap(st); err != nil {
				return nil, nil, nil, err
			}
		}
		sps := st.savepoints()
		in, out := st.in, st.out
		outRecs, outIdx, rejects, err := st.run(ctx, recs, idx, m)
		if err == nil && st.txn == nil && st.op.Retries > 0 && failure(nil, rejects) != nil {
			outRecs, outIdx, rejects = st.retry(ctx, recs, idx, outRecs, outIdx, rejects, m)
		}
		reason := failure(err, rejects)
		if reason == nil || ctx.Err() != nil {
			st.failStreak = 0
			if st.probation > 0 {
				if st.probation--; st.probation == 0 {
					j.retire(ctx, st)
					j.log.Info("new plugin passed its trial", slog.String("operator", st.op.Name), slog.String("version", st.version))
				}
				j.syncOperatorStatus(st)
			}
			return outRecs, outIdx, rejects, err
		}
		if st.prev != nil && st.probation > 0 {
			st.rollbackState(sps)
			st.in, st.out = in, out
			j.rollback(ctx, si, reason)
			continue
		}
		if err != nil {
			return nil, nil, nil, err
		}
		st.failStreak++
		if q := st.op.QuarantineAfter; q > 0 && st.failStreak >= q {
			st.rollbackState(sps)
			st.in, st.out = in, out
			j.quarantine(si, reason)
			continue
		}
		return outRecs, outIdx, rejects, nil
	}
}

// savepoints marks the undo log of each keyed worker's session.
func (st *stage) savepoints() []int {
	if !st.keyed {
		return nil
	}
	st.sps = st.sps[:0]
	for _, w := range st.workers {
		st.sps = append(st.sps, w.sess.Savepoint())
	}
	return st.sps
}

// rollbackState undoes the keyed workers' writes after sps.
func (st *stage) rollbackState(sps []int) {
	for i, sp := range sps {
		st.workers[i].sess.RollbackTo(sp)
	}
}

// workerFor returns the worker a lone record is retried on: the owner of
// its key group for a keyed operator, the first worker otherwise.
func (st *stage) workerFor(r *abi.Record) *worker {
	if st.keyed {
		return st.workers[state.KeyGroup(r.Key, st.groups)%len(st.workers)]
	}
	return st.workers[0]
}

// retry runs each record that failed (not one rejected on purpose) again,
// alone, up to Operator.Retries times, and returns the outputs with those
// of the records that then succeeded merged in input order, and the
// rejects that remain. A keyed record's retry runs after the rest of its
// batch, so it sees the state the batch left.
func (st *stage) retry(ctx context.Context, recs []abi.Record, idx []int32, out []abi.Record, outIdx []int32, rejects []plugin.Reject, m *opMetrics) ([]abi.Record, []int32, []plugin.Reject) {
	var kept []plugin.Reject
	var extra []abi.Record
	var extraIdx []int32
	for _, r := range rejects {
		if errors.Is(r.Err, plugin.ErrRejected) {
			kept = append(kept, r)
			continue
		}
		w := st.workerFor(&recs[r.Index])
		err, ok := r.Err, false
		for a := 0; a < st.op.Retries && !ok && !errors.Is(err, plugin.ErrRejected); a++ {
			m.retries.Inc()
			var o plugin.Output
			if perr := w.inst.Process(ctx, recs[r.Index:r.Index+1], w.state, &o); perr != nil {
				err = perr
				continue
			}
			if len(o.Rejects) > 0 {
				err = o.Rejects[0].Err
				continue
			}
			ok = true
			for _, rec := range o.Records {
				rec.Origin = uint32(r.Index)
				extra = append(extra, rec)
				extraIdx = append(extraIdx, idx[r.Index])
			}
		}
		if !ok {
			kept = append(kept, plugin.Reject{Index: r.Index, Err: fmt.Errorf("after %d retries: %w", st.op.Retries, err)})
		}
	}
	if len(extra) == 0 {
		return out, outIdx, kept
	}
	st.out += uint64(len(extra))
	// Merge by batch input, the earlier outputs first on a tie.
	mr := make([]abi.Record, 0, len(out)+len(extra))
	mi := make([]int32, 0, len(out)+len(extra))
	a, b := 0, 0
	for a < len(out) || b < len(extra) {
		if b == len(extra) || (a < len(out) && outIdx[a] <= extraIdx[b]) {
			mr, mi = append(mr, out[a]), append(mi, outIdx[a])
			a++
			continue
		}
		mr, mi = append(mr, extra[b]), append(mi, extraIdx[b])
		b++
	}
	return mr, mi, kept
}

// quarantine stops calling stage si's code until a swap replaces it.
func (j *Job) quarantine(si int, reason error) {
	st := j.stages[si]
	st.quarantined = true
	j.m.ops[si].quarantined.Set(1)
	j.m.ops[si].quarantines.Inc()
	j.log.Error("operator quarantined: its plugin kept failing; the batch waits uncommitted (its input unacknowledged) until a swap replaces the plugin",
		slog.String("operator", st.op.Name), slog.String("version", st.version),
		slog.Int("failed_batches", st.failStreak), slog.Any("err", reason))
	j.syncOperatorStatus(st)
}

// awaitSwap waits until a swap lifts st's quarantine, installing swaps as
// they come, or the job is asked to stop (errQuarantineStop).
func (j *Job) awaitSwap(st *stage) error {
	ctx := j.runCtx
	for st.quarantined {
		j.installSwaps(context.WithoutCancel(ctx))
		if !st.quarantined {
			break
		}
		select {
		case <-j.wake:
		case <-ctx.Done():
			return errQuarantineStop
		}
	}
	return nil
}

// Quarantined lists the operators that are quarantined now.
func (j *Job) Quarantined() []string {
	j.mu.Lock()
	defer j.mu.Unlock()
	var out []string
	for _, os := range j.status.Operators {
		if os.Quarantined {
			out = append(out, os.Name)
		}
	}
	return slices.Clip(out)
}
