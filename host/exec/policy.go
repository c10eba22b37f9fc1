package exec

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"time"

	"github.com/sluicehq/sluice/abi"
	"github.com/sluicehq/sluice/host/plugin"
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

// runNode runs n's stage on recs under the operator's lifecycle and
// failure policy, and returns the outputs (Origin: index in recs, in
// input order) and the records that failed:
//
//   - during a swapped-in module's trial (Operator.RollbackBatches), a run
//     that fails is undone (the stage rolled back to its savepoint), the
//     previous code is put back and the run made again;
//   - records that failed (not rejected on purpose) are retried alone up
//     to Operator.Retries times before the error policy applies;
//   - after Operator.QuarantineAfter consecutive batches with failures,
//     the run is undone and the operator quarantined: the executor calls
//     it no more and waits, holding the batch uncommitted, until a swap
//     brings new code, then runs the batch with it.
func (j *Job) runNode(ctx context.Context, n *node, recs []abi.Record) ([]abi.Record, []plugin.Reject, error) {
	for {
		if n.quarantined {
			if err := j.awaitSwap(n); err != nil {
				return nil, nil, err
			}
		}
		sp := n.code.savepoint()
		out, rejects, err := n.code.run(ctx, recs)
		if err == nil && n.op.Retries > 0 && failure(nil, rejects) != nil {
			out, rejects = n.retry(ctx, recs, out, rejects)
		}
		reason := failure(err, rejects)
		if reason == nil || ctx.Err() != nil {
			n.failStreak = 0
			if n.probation > 0 {
				if n.probation--; n.probation == 0 {
					j.retire(ctx, n)
					j.log.Info("new plugin passed its trial", slog.String("operator", n.op.Name), slog.String("version", n.version))
				}
				j.syncStatus(n)
			}
			return out, rejects, err
		}
		if n.prev != nil && n.probation > 0 {
			n.code.rollback(sp)
			j.rollback(ctx, n, reason)
			continue
		}
		if err != nil {
			return nil, nil, err
		}
		n.failStreak++
		if q := n.op.QuarantineAfter; q > 0 && n.failStreak >= q {
			n.code.rollback(sp)
			j.quarantine(n, reason)
			continue
		}
		return out, rejects, nil
	}
}

// retry runs each record that failed (not one rejected on purpose) again,
// alone, up to Operator.Retries times, and returns the outputs with those
// of the records that then succeeded merged in input order, and the
// rejects that remain. A keyed record's retry runs after the rest of its
// batch, so it sees the state the batch left.
func (n *node) retry(ctx context.Context, recs []abi.Record, out []abi.Record, rejects []plugin.Reject) ([]abi.Record, []plugin.Reject) {
	var kept []plugin.Reject
	var extra []abi.Record
	for _, r := range rejects {
		if errors.Is(r.Err, plugin.ErrRejected) {
			kept = append(kept, r)
			continue
		}
		err, ok := r.Err, false
		for a := 0; a < n.op.Retries && !ok && !errors.Is(err, plugin.ErrRejected) && !errors.Is(err, errNoRetry); a++ {
			n.m.retries.Inc()
			n.retries++
			outs, rerr := n.code.retry(ctx, &recs[r.Index])
			if rerr != nil {
				err = rerr
				continue
			}
			ok = true
			for _, rec := range outs {
				rec.Origin = uint32(r.Index)
				extra = append(extra, copyRecord(rec))
			}
		}
		if !ok {
			kept = append(kept, plugin.Reject{Index: r.Index, Err: fmt.Errorf("after %d retries: %w", n.op.Retries, err)})
		}
	}
	if len(extra) == 0 {
		return out, kept
	}
	// Merge by batch input, the earlier outputs first on a tie.
	merged := make([]abi.Record, 0, len(out)+len(extra))
	a, b := 0, 0
	for a < len(out) || b < len(extra) {
		if b == len(extra) || (a < len(out) && out[a].Origin <= extra[b].Origin) {
			merged = append(merged, out[a])
			a++
			continue
		}
		merged = append(merged, extra[b])
		b++
	}
	return merged, kept
}

// copyRecord copies r's bytes, for a record that must outlive the buffer
// it points into.
func copyRecord(r abi.Record) abi.Record {
	c := abi.Record{Origin: r.Origin, Time: r.Time, Key: clone(r.Key), Value: clone(r.Value)}
	if len(r.Headers) > 0 {
		c.Headers = make([]abi.Header, len(r.Headers))
		for i, h := range r.Headers {
			c.Headers[i] = abi.Header{Name: clone(h.Name), Value: clone(h.Value)}
		}
	}
	return c
}

func clone(b []byte) []byte {
	if b == nil {
		return nil
	}
	return append([]byte(nil), b...)
}

// quarantine stops calling n's code until a swap replaces it.
func (j *Job) quarantine(n *node, reason error) {
	n.quarantined = true
	n.m.quarantined.Set(1)
	n.m.quarantines.Inc()
	j.log.Error("operator quarantined: its plugin kept failing; the batch waits uncommitted (its input unacknowledged) until a swap replaces the plugin",
		slog.String("operator", n.op.Name), slog.String("version", n.version),
		slog.Int("failed_batches", n.failStreak), slog.Any("err", reason))
	j.syncStatus(n)
}

// awaitSwap waits until a swap lifts n's quarantine, applying changes as
// they come, or the job is asked to stop (errQuarantineStop).
func (j *Job) awaitSwap(n *node) error {
	ctx := j.runCtx
	for n.quarantined {
		_ = j.applyChanges(context.WithoutCancel(ctx), true) // in hand: no error
		if !n.quarantined {
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

// timeBatch records how long n's run of a batch took (runNode: retries
// and a rollback's second run included): the last one, and the first on
// code just swapped in (Job.LastSwap).
func (j *Job) timeBatch(n *node, took time.Duration) {
	if n.firstPending {
		n.firstPending = false
		j.changeMu.Lock()
		n.lastSwap.FirstBatch = took
		j.changeMu.Unlock()
	}
	n.lastBatch = took
}
