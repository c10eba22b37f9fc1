package exec

import (
	"context"

	"github.com/sluicehq/sluice/abi"
	"github.com/sluicehq/sluice/host/plugin"
)

// minChunk is the fewest records worth handing a stateless worker: below
// it, the goroutine hand-off costs more than the guest call saves.
const minChunk = 64

// statelessStage runs a map, filter or flatmap: a batch is split into
// contiguous runs, one per worker, and the outputs are concatenated in
// worker order, so record order is kept.
type statelessStage struct {
	pool
}

func newStatelessStage(ctx context.Context, op *Operator, m *workerMetrics) (*statelessStage, error) {
	st := &statelessStage{pool: pool{op: op, m: m, measure: true}}
	insts, err := newInstances(ctx, op, op.Plugin, 0, op.Parallelism)
	if err != nil {
		return nil, err
	}
	for i, inst := range insts {
		st.workers = append(st.workers, &worker{id: i, inst: inst})
	}
	return st, nil
}

func (st *statelessStage) run(ctx context.Context, recs []abi.Record) ([]abi.Record, []plugin.Reject, error) {
	st.active = st.active[:0]
	if len(recs) == 0 {
		return nil, nil, nil // a batch of dead letters only
	}
	n := min(len(st.workers), (len(recs)+minChunk-1)/minChunk)
	n = max(n, 1)
	per := (len(recs) + n - 1) / n
	for w := 0; w < n; w++ {
		lo, hi := w*per, min((w+1)*per, len(recs))
		if lo >= hi {
			break
		}
		wk := st.workers[w]
		wk.in, wk.lo, wk.global = recs[lo:hi], lo, nil
		st.active = append(st.active, wk)
	}
	if err := st.work(ctx); err != nil {
		return nil, nil, err
	}
	out, rejects := st.gather()
	return out, rejects, nil
}

func (st *statelessStage) retry(ctx context.Context, rec *abi.Record) ([]abi.Record, error) {
	return st.retryOn(ctx, st.workers[0], rec)
}

func (st *statelessStage) savepoint() savepoint { return nil }
func (st *statelessStage) rollback(savepoint)   {}
func (st *statelessStage) apply() error         { return nil }
func (st *statelessStage) committed()           {}
func (st *statelessStage) parallelism() int     { return len(st.workers) }
func (st *statelessStage) close(ctx context.Context) error {
	st.closeWorkers(ctx)
	return nil
}

func (st *statelessStage) resize(ctx context.Context, r *resize) error {
	return st.grow(ctx, r, func(*worker) {})
}
