package runner

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/sluicehq/sluice/host/api"
	"github.com/sluicehq/sluice/host/cluster"
	"github.com/sluicehq/sluice/host/registry"
	wasm "github.com/sluicehq/sluice/runtime"
)

// A swap (or rollback) on a host of a pipeline spread over hosts is the
// cluster's, not the host's (docs/cluster.md, "Swapping a plugin on every
// host"):
//
//  1. the host that receives it checks the module and loads it for the
//     operator's kind, as a local swap does, and refuses it with the same
//     errors; nothing is written then;
//  2. it puts the module in the pipeline's module store (by SHA-256) and
//     records it in the assignment's versions record, by compare-and-set
//     (refused, as a conflict, while a migration is in progress);
//  3. it swaps the module in at its job's next batch boundary, checkpoints
//     every group it owns (so that no failover replays their records from
//     before the switch), and reports in the cluster's bucket the modules
//     it runs;
//  4. every other host follows the record (followVersions, every
//     clusterPeriod): it takes the module from its registry or the
//     module store, checks it, swaps it in, checkpoints and reports, as
//     in 3.
//
// A host that starts loads the record's modules instead of the file's.
// A migration does not begin while a live host's report differs from the
// record (package migrate), so a key group never moves between hosts that
// run different modules.

// clusterModule returns the bytes of the module ov records for operator
// op: from the host's registry, or else from the cluster's module store.
func (h *Host) clusterModule(ctx context.Context, op string, ov cluster.OperatorVersion) ([]byte, error) {
	if module, err := h.reg.Module(ov.SHA256); err == nil {
		return module, nil
	}
	module, err := h.cluster.mods.Get(ctx, ov.SHA256)
	if err != nil {
		return nil, fmt.Errorf("operator %q: the module the cluster records (%s, epoch %d): %w", op, ov.Name, ov.Epoch, err)
	}
	return module, nil
}

// recordedModule returns the registry entry and the bytes of the module
// ov records for operator op, at the host's start: a module new to the
// registry is checked with eng and added. It records the deployment in
// the registry's log.
func (h *Host) recordedModule(ctx context.Context, eng wasm.Engine, op string, ov cluster.OperatorVersion) (registry.Entry, []byte, error) {
	module, err := h.clusterModule(ctx, op, ov)
	if err != nil {
		return registry.Entry{}, nil, err
	}
	entry, err := h.reg.Add(ctx, eng, ov.Name, module)
	if err != nil {
		return registry.Entry{}, nil, fmt.Errorf("operator %q: the module the cluster records (%s, epoch %d): %w", op, ov.Name, ov.Epoch, err)
	}
	h.log.Info("loading the module the cluster records, not the pipeline file's", "operator", op, "module", entry.Label(),
		"sha256", entry.SHA256, "epoch", ov.Epoch, "recorded_by", ov.Host)
	if err := h.reg.Record(registry.Deployment{Operator: op, SHA256: entry.SHA256, Reason: reasonSwap,
		Detail: fmt.Sprintf("the cluster's record, epoch %d, swapped on host %s", ov.Epoch, ov.Host)}); err != nil {
		h.log.Warn("recording the deployment failed", "operator", op, "err", err)
	}
	return entry, module, nil
}

// record makes d's operator run entry (module) on every host: the module
// goes to the module store and the versions record names it. The caller
// holds ctlMu and has checked and loaded the module. A migration in
// progress refuses it (api.ErrConflict), and nothing is recorded.
func (h *Host) record(ctx context.Context, d *deployed, entry registry.Entry, module []byte, reason string) error {
	ch := h.cluster
	if _, err := ch.mods.Put(ctx, module); err != nil {
		return fmt.Errorf("operator %q: %w", d.op.Name, err)
	}
	ov := cluster.OperatorVersion{SHA256: entry.SHA256, Name: entry.Name, Reason: cluster.ReasonSwap, Host: ch.id, At: time.Now().UTC()}
	if reason == reasonRollback {
		ov.Reason = cluster.ReasonRollback
	}
	a, err := ch.c.Update(ctx, func(a *cluster.Assignment) error { return a.SetVersion(d.op.Name, ov) })
	if err != nil {
		if errors.Is(err, cluster.ErrMigration) {
			return fmt.Errorf("operator %q: %w: %w", d.op.Name, api.ErrConflict, err)
		}
		return fmt.Errorf("operator %q: recording the swap for every host: %w", d.op.Name, err)
	}
	ch.noteEpoch(a.Versions.Epoch)
	h.log.Info("plugin recorded for every host of the cluster", "operator", d.op.Name, "module", entry.Label(), "sha256", entry.SHA256,
		"reason", reason, "epoch", a.Versions.Epoch)
	return nil
}

// prepareFor loads entry (module) for d's operator as its prepared module,
// which the deploy that follows takes, refusing it as a swap does. The
// caller holds ctlMu.
func (h *Host) prepareFor(ctx context.Context, d *deployed, entry registry.Entry, module []byte) error {
	if err := checkABI(d, entry, h.current(d)); err != nil {
		return err
	}
	if p := d.prepared; p != nil && p.entry.SHA256 == entry.SHA256 {
		return nil
	}
	pl, err := h.load(ctx, d, entry, module)
	if err != nil {
		return err
	}
	if err := h.dropPrepared(ctx, d); err != nil {
		h.log.Warn("closing a prepared plugin failed", "operator", d.op.Name, "err", err)
	}
	d.prepared = &prepared{entry: entry, plugin: pl}
	return nil
}

// switched is what a cluster host does once it runs another module: it
// checkpoints every group it owns, at a batch boundary after the switch,
// and reports the modules it runs. A failure is logged; followVersions
// tries the report again.
func (h *Host) switched(ctx context.Context) {
	ch := h.cluster
	if ch.mig != nil {
		if c, err := ch.mig.CheckpointAll(ctx); err != nil {
			h.log.Warn("cluster: checkpointing the key groups after a plugin swap failed; the periodic checkpoint puts them later", "err", err)
		} else {
			h.log.Info("cluster: key groups checkpointed at the plugin swap", "groups", len(c.Groups), "bytes", c.Bytes)
		}
	}
	if err := h.report(ctx); err != nil {
		h.log.Warn("cluster: reporting the modules this host runs failed", "err", err)
	}
}

// report writes the host's report of the modules it runs and its
// operators' worker counts when it differs from the last one written. The
// caller holds ctlMu.
func (h *Host) report(ctx context.Context) error {
	ch := h.cluster
	a, err := ch.c.Assignment(ctx)
	if err != nil {
		return err
	}
	r := cluster.Running{Host: ch.id, Operators: map[string]string{}}
	for name, d := range h.deployed {
		r.Operators[name] = h.current(d).SHA256
	}
	if a.Versions != nil && r.Runs(a.Versions) {
		r.Epoch = a.Versions.Epoch
	}
	r.Workers = h.workerCounts()
	if old := ch.reported; old != nil && old.Epoch == r.Epoch && maps.Equal(old.Operators, r.Operators) && maps.Equal(old.Workers, r.Workers) {
		return nil
	}
	r.At = time.Now().UTC()
	if err := ch.c.Report(ctx, r); err != nil {
		return err
	}
	ch.reported = &r
	return nil
}

// followVersions runs, every clusterPeriod until ctx is done, the modules
// the cluster's versions record names and the worker counts its workers
// record gives (clusterscale.go), and reports what the host runs.
func (h *Host) followVersions(ctx context.Context) error {
	t := time.NewTicker(clusterPeriod)
	defer t.Stop()
	for {
		if err := h.followOnce(ctx); err != nil && ctx.Err() == nil {
			h.log.Warn("cluster: following the cluster's plugin versions", "err", err)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

// followOnce swaps in each module the versions record names that the
// host does not run, changes the workers of each operator whose recorded
// count it has not applied, then reports.
func (h *Host) followOnce(ctx context.Context) error {
	h.ctlMu.Lock()
	defer h.ctlMu.Unlock()
	if h.closing {
		return nil
	}
	a, err := h.cluster.c.Assignment(ctx)
	if err != nil {
		return err
	}
	changed := false
	var errs []error
	if v := a.Versions; v != nil {
		h.cluster.noteEpoch(v.Epoch)
		for _, op := range slices.Sorted(maps.Keys(v.Operators)) {
			d, ok := h.deployed[op]
			if !ok {
				errs = append(errs, fmt.Errorf("the cluster's versions record names operator %q, which the pipeline does not have", op))
				continue
			}
			ov := v.Operators[op]
			if h.current(d).SHA256 == ov.SHA256 {
				continue
			}
			if err := h.follow(ctx, d, ov); err != nil {
				errs = append(errs, err)
				continue
			}
			changed = true
		}
	}
	if err := h.followWorkers(ctx, a.Workers); err != nil {
		errs = append(errs, err)
	}
	if changed {
		h.switched(ctx)
		return errors.Join(errs...)
	}
	return errors.Join(append(errs, h.report(ctx))...)
}

// follow swaps ov's module into d's operator, checking it first when it
// is new to the registry: a rollback when it is the module the operator
// ran before the current one, a swap otherwise.
func (h *Host) follow(ctx context.Context, d *deployed, ov cluster.OperatorVersion) error {
	module, err := h.clusterModule(ctx, d.op.Name, ov)
	if err != nil {
		return err
	}
	entry, _, _, err := h.register(ctx, d, ov.Name, module)
	if err != nil {
		return fmt.Errorf("the module the cluster records (%s, epoch %d): %w", ov.Name, ov.Epoch, err)
	}
	reason := reasonSwap
	h.dataMu.Lock()
	if n := len(d.history); n > 0 && d.history[n-1].SHA256 == entry.SHA256 {
		reason = reasonRollback
	}
	h.dataMu.Unlock()
	if _, err := h.deploy(ctx, d, entry, module, reason); err != nil {
		return fmt.Errorf("operator %q: the cluster's module %s (epoch %d): %w", d.op.Name, ov.Name, ov.Epoch, err)
	}
	h.log.Info("cluster: switched to the module the cluster records", "operator", d.op.Name, "module", entry.Label(),
		"epoch", ov.Epoch, "recorded_by", ov.Host, "reason", reason)
	return nil
}

// noteEpoch makes epoch the plugin versions epoch the host runs, unless it
// runs a later one.
func (ch *clusterHost) noteEpoch(epoch uint64) {
	for {
		cur := ch.epoch.Load()
		if epoch <= cur || ch.epoch.CompareAndSwap(cur, epoch) {
			return
		}
	}
}
