package runner

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/sluicehq/sluice/host/cluster"
	"github.com/sluicehq/sluice/host/clusterctl"
	"github.com/sluicehq/sluice/host/pipeline"
)

// A scale on a pipeline spread over hosts (sluice cluster scale, or POST
// /api/v1/cluster/operators/{name}/workers on any host) is recorded in
// the assignment's workers record by compare-and-set (package
// clusterctl), and every host follows it (docs/cluster.md, "Changing an
// operator's workers on every host"):
//
//   - a host that starts runs the count the record gives it for each
//     operator instead of the pipeline file's parallelism (loadOperators);
//   - a running host, every clusterPeriod (followOnce), changes the
//     workers of each operator whose record has an epoch it has not
//     applied yet, through the executor's change of workers (the path of
//     sluice workers: at a batch boundary, state in place), and reports
//     the counts it runs under running.<id>.
//
// A host applies a record's count once per epoch: a later local change
// (sluice workers, the control plane) stands until the next scale. A
// record that names an operator the pipeline lacks, or one whose workers
// cannot change, is refused with a warning and nothing applied.

// scaleLimit bounds how long a host waits for its executor to take a
// recorded count; past it the change is withdrawn and tried again in the
// next round.
const scaleLimit = 30 * time.Second

// recordedWorkers returns the number of workers operator o starts with
// on this host by the cluster's workers record w, and whether w gives
// one. A count the pipeline cannot take is refused with a warning.
func (h *Host) recordedWorkers(w *cluster.Workers, o *pipeline.Operator) (int, bool) {
	if h.cluster == nil {
		return 0, false
	}
	n, ok := w.For(o.Name, h.cluster.id)
	if !ok {
		return 0, false
	}
	ow, _ := w.Operator(o.Name)
	if err := clusterctl.Scalable(h.p.Operators, o.Name, n); err != nil {
		h.log.Warn("cluster: the workers record's count is refused; starting with the pipeline file's", "operator", o.Name, "epoch", ow.Epoch, "err", err)
		return 0, false
	}
	h.log.Info("starting with the worker count the cluster records, not the pipeline file's", "operator", o.Name, "workers", n,
		"file", o.Parallelism, "epoch", ow.Epoch, "recorded_by", ow.By)
	h.cluster.noteScaled(o.Name, ow.Epoch)
	return n, true
}

// followWorkers changes the workers of each operator whose count in w
// has an epoch the host has not applied. The caller holds ctlMu.
func (h *Host) followWorkers(ctx context.Context, w *cluster.Workers) error {
	if w == nil {
		return nil
	}
	ch := h.cluster
	running := h.workerCounts()
	var errs []error
	for _, op := range slices.Sorted(maps.Keys(w.Operators)) {
		ow := w.Operators[op]
		if ch.scaled[op] >= ow.Epoch {
			continue
		}
		n, ok := w.For(op, ch.id)
		if !ok {
			ch.noteScaled(op, ow.Epoch) // a count for other hosts only
			continue
		}
		if err := clusterctl.Scalable(h.p.Operators, op, n); err != nil {
			// Refused once per epoch: the record stays as it is until a
			// person scales again.
			ch.noteScaled(op, ow.Epoch)
			errs = append(errs, fmt.Errorf("the cluster's workers record (epoch %d) is refused, nothing applied: %w", ow.Epoch, err))
			continue
		}
		if running[op] == n {
			ch.noteScaled(op, ow.Epoch)
			continue
		}
		sctx, cancel := context.WithTimeout(ctx, scaleLimit)
		res, err := h.SetWorkers(sctx, op, n)
		cancel()
		if err != nil {
			errs = append(errs, fmt.Errorf("operator %q: the cluster's count of %d workers (epoch %d), tried again in the next round: %w", op, n, ow.Epoch, err))
			continue
		}
		ch.noteScaled(op, ow.Epoch)
		h.log.Info("cluster: changed the operator's workers to the count the cluster records", "operator", op, "from", res.From, "to", n,
			"epoch", ow.Epoch, "recorded_by", ow.By)
	}
	return errors.Join(errs...)
}

// workerCounts returns the number of workers each stateless or keyed
// operator runs on the host.
func (h *Host) workerCounts() map[string]int {
	out := map[string]int{}
	if h.job == nil {
		return out
	}
	for _, os := range h.job.Status().Operators {
		if clusterctl.Scalable(h.p.Operators, os.Name, max(os.Parallelism, 1)) == nil {
			out[os.Name] = os.Parallelism
		}
	}
	return out
}

// noteScaled records that the host applied (or refused) operator op's
// count of the workers record's epoch. The caller holds Host.ctlMu, or
// is the host's start.
func (ch *clusterHost) noteScaled(op string, epoch uint64) {
	if ch.scaled == nil {
		ch.scaled = map[string]uint64{}
	}
	ch.scaled[op] = max(ch.scaled[op], epoch)
}
