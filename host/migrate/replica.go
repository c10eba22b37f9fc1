package migrate

import (
	"context"
	"fmt"
	"slices"
	"sync"

	"github.com/sluicehq/sluice/host/checkpoint"
	"github.com/sluicehq/sluice/host/cluster"
)

// replicate keeps the host's replica in step with m, the migration in
// progress (nil: none): it holds warm copies of the groups marked
// replicated that m moves onto the host and has not installed yet, in
// the current step and every later one. When m begins (or another
// migration replaces it) the replica is made and fetches those groups'
// checkpoints; as they are installed it lets them go; when m is over it
// is dropped. A failed fetch leaves the copy missing (the install fetches
// the group) and is only logged. Called with h.mu held.
func (h *Host) replicate(ctx context.Context, m *cluster.Migration) error {
	var want []int
	if m != nil && !h.Whole { // a Whole host installs from the cut
		for _, st := range m.Steps[m.Current:] {
			for _, mv := range st.Moves {
				if mv.To == h.ID && mv.Replicated && mv.State != cluster.StepInstalled {
					want = append(want, mv.Group)
				}
			}
		}
	}
	slices.Sort(want)
	switch {
	case len(want) == 0:
		h.replica, h.replicaOf = nil, ""
		return nil
	case h.replica != nil && h.replicaOf == m.ID:
		if !slices.Equal(h.replica.Groups(), want) {
			h.replica.SetGroups(want)
		}
		return nil
	}
	r := h.Checkpoints.NewReplica(want)
	h.replica, h.replicaOf = r, m.ID
	n, err := r.Refresh(ctx)
	if err != nil {
		if ctx.Err() != nil {
			return fmt.Errorf("migrate: %s: replicate key groups %v for %q: %w", h.ID, want, m.ID, err)
		}
		// The replica is an optimisation: a group whose copy is missing
		// or old is fetched at its install.
		h.log().Warn("key groups not all replicated ahead of their moves", "migration", m.ID, "groups", want, "err", err)
		return nil
	}
	h.log().Info("replicating key groups ahead of their moves", "migration", m.ID, "groups", want, "bytes", n)
	return nil
}

// watcher runs, for Run, the replica's watch of the checkpoint bucket
// (checkpoint.Replica.Run), which fetches a replicated group's checkpoint
// each time its source puts one.
type watcher struct {
	h       *Host
	running *checkpoint.Replica // the replica watched
	cancel  context.CancelFunc
	wg      sync.WaitGroup
}

// sync starts watching the host's current replica, if it is not the one
// watched, and stops watching the previous one.
func (w *watcher) sync(ctx context.Context) {
	w.h.mu.Lock()
	r := w.h.replica
	w.h.mu.Unlock()
	if r == w.running {
		return
	}
	w.stop()
	if r == nil {
		return
	}
	wctx, cancel := context.WithCancel(ctx)
	w.running, w.cancel = r, cancel
	w.wg.Add(1)
	go func() {
		defer w.wg.Done()
		if err := r.Run(wctx); err != nil && wctx.Err() == nil {
			// The copies go stale; Install fetches what is not current.
			w.h.log().Warn("the replica's watch of the checkpoint bucket ended", "err", err)
		}
	}()
}

// stop stops the watch, if any, and waits for it.
func (w *watcher) stop() {
	if w.cancel != nil {
		w.cancel()
		w.wg.Wait()
	}
	w.running, w.cancel = nil, nil
}
