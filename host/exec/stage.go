package exec

import (
	"context"
	"fmt"
	"slices"
	"sync"

	"github.com/sluicehq/sluice/abi"
	"github.com/sluicehq/sluice/host/plugin"
	"github.com/sluicehq/sluice/state"
)

// minChunk is the fewest records worth handing a stateless worker: below
// it, the goroutine hand-off costs more than the guest call saves.
const minChunk = 64

// stage runs one operator on its workers.
type stage struct {
	op      *Operator
	workers []*worker
	keyed   bool
	groups  int
	// txn is set for a transactional operator, which has no workers of
	// its own: its txnop.Operator schedules the batch.
	txn *txnStage

	// Counters, updated by the executor goroutine only.
	in, out, dead uint64

	// The code's lifecycle (swap.go, policy.go), executor goroutine only:
	// the running version; the previous code, kept during a swapped-in
	// module's trial of probation batches; swap and rollback counts; and
	// the failure streak that quarantines the operator.
	version          string
	ownsPlugin       bool // op.Plugin came with ClosePlugin: close it with the stage
	prev             *generation
	probation        int
	swaps, rollbacks uint64
	lastRollback     string
	failStreak       int
	quarantined      bool
	sps              []int

	// Scratch reused from batch to batch.
	outRecs []abi.Record
	outIdx  []int32
	rejects []plugin.Reject
}

// worker is one instance of an operator's plugin, with its own state
// session for keyed operators.
type worker struct {
	id    int
	inst  *plugin.Instance
	out   plugin.Output
	sess  *state.Session
	state plugin.State

	in     []abi.Record // this batch's input for the worker
	global []int32      // keyed: in[i] is stage input global[i]
	lo     int          // stateless: in[0] is stage input lo
	err    error
}

func newStage(ctx context.Context, op *Operator, store *state.Store) (*stage, error) {
	if op.Parallelism < 1 {
		op.Parallelism = 1
	}
	st := &stage{op: op, keyed: op.Kind == plugin.KindKeyed, groups: store.KeyGroups(), version: op.Version}
	if op.Txn != nil {
		ts, err := newTxnStage(op, store)
		if err != nil {
			return nil, err
		}
		st.txn = ts
		return st, nil
	}
	var tables []*state.Table
	if st.keyed {
		for _, name := range op.Tables {
			tables = append(tables, store.Table(name))
		}
	}
	for w := 0; w < op.Parallelism; w++ {
		inst, err := op.Plugin.NewInstance(ctx, op.Config)
		if err != nil {
			st.close(ctx)
			return nil, fmt.Errorf("exec: operator %q: worker %d: %w", op.Name, w, err)
		}
		wk := &worker{id: w, inst: inst}
		if st.keyed {
			wk.sess = store.NewSession()
			p := op.Parallelism
			wk.sess.SetOwned(func(kg int) bool { return kg%p == w })
			wk.state = newKeyedState(wk.sess, op.Tables, tables)
		}
		st.workers = append(st.workers, wk)
	}
	return st, nil
}

// run processes recs (whose batch inputs are idx) and returns the outputs,
// the batch input each output descends from, and the records that failed,
// indexed into recs.
func (st *stage) run(ctx context.Context, recs []abi.Record, idx []int32, m *opMetrics) ([]abi.Record, []int32, []plugin.Reject, error) {
	if st.txn != nil {
		return st.runTxn(ctx, recs, idx, m)
	}
	st.in += uint64(len(recs))
	active := st.partition(recs)
	if len(active) == 1 {
		st.work(ctx, active[0])
	} else {
		var wg sync.WaitGroup
		for _, w := range active {
			wg.Go(func() { st.work(ctx, w) })
		}
		wg.Wait()
	}
	st.outRecs, st.outIdx, st.rejects = st.outRecs[:0], st.outIdx[:0], st.rejects[:0]
	for _, w := range active {
		if w.err != nil {
			return nil, nil, nil, fmt.Errorf("exec: operator %q: worker %d: %w", st.op.Name, w.id, w.err)
		}
		for _, r := range w.out.Rejects {
			st.rejects = append(st.rejects, plugin.Reject{Index: st.globalIndex(w, r.Index), Err: r.Err})
		}
	}
	// Grown once to the batch's outputs: appending one by one would
	// allocate several times their size on the way (a guest may emit as
	// many records as its call's output limit holds).
	n := 0
	for _, w := range active {
		n += len(w.out.Records)
	}
	st.outRecs, st.outIdx = slices.Grow(st.outRecs, n), slices.Grow(st.outIdx, n)
	if st.keyed && len(active) > 1 {
		st.mergeByInput(active, idx)
		slices.SortFunc(st.rejects, func(a, b plugin.Reject) int { return a.Index - b.Index })
	} else {
		for _, w := range active {
			for i := range w.out.Records {
				g := st.globalIndex(w, int(w.out.Records[i].Origin))
				st.outRecs = append(st.outRecs, w.out.Records[i])
				st.outIdx = append(st.outIdx, idx[g])
			}
		}
	}
	st.out += uint64(len(st.outRecs))
	return st.outRecs, st.outIdx, st.rejects, nil
}

// mergeByInput gathers the keyed workers' outputs in the order of the
// inputs they came from, as a serial run would emit them. Each worker's
// outputs are already in its inputs' order, so this is a k-way merge. The
// order matters beyond looks: output ids count the outputs of each input
// in this order, and must not depend on how many workers there are.
func (st *stage) mergeByInput(active []*worker, idx []int32) {
	next := make([]int, len(active))
	for {
		best, bestG := -1, 0
		for k, w := range active {
			if next[k] == len(w.out.Records) {
				continue
			}
			g := st.globalIndex(w, int(w.out.Records[next[k]].Origin))
			if best < 0 || g < bestG {
				best, bestG = k, g
			}
		}
		if best < 0 {
			return
		}
		st.outRecs = append(st.outRecs, active[best].out.Records[next[best]])
		st.outIdx = append(st.outIdx, idx[bestG])
		next[best]++
	}
}

func (st *stage) globalIndex(w *worker, local int) int {
	if st.keyed {
		return int(w.global[local])
	}
	return w.lo + local
}

// partition gives each worker its share of recs and returns the workers
// that have any.
func (st *stage) partition(recs []abi.Record) []*worker {
	var active []*worker
	if st.keyed {
		p := len(st.workers)
		for _, w := range st.workers {
			w.in, w.global = w.in[:0], w.global[:0]
		}
		for i := range recs {
			w := st.workers[state.KeyGroup(recs[i].Key, st.groups)%p]
			w.in = append(w.in, recs[i])
			w.global = append(w.global, int32(i))
		}
		for _, w := range st.workers {
			if len(w.in) > 0 {
				active = append(active, w)
			}
		}
		return active
	}
	n := len(st.workers)
	if most := (len(recs) + minChunk - 1) / minChunk; most < n {
		n = most
	}
	if n < 1 {
		n = 1
	}
	per := (len(recs) + n - 1) / n
	for w := 0; w < n; w++ {
		lo, hi := w*per, min((w+1)*per, len(recs))
		if lo >= hi {
			break
		}
		wk := st.workers[w]
		wk.in, wk.lo = recs[lo:hi], lo
		active = append(active, wk)
	}
	return active
}

func (st *stage) work(ctx context.Context, w *worker) {
	w.out.Reset()
	w.err = w.inst.Process(ctx, w.in, w.state, &w.out)
}

// apply writes what the stage keeps until the batch commits into the
// tables: a transactional operator's change sets.
func (st *stage) apply() error {
	if st.txn == nil {
		return nil
	}
	return st.txn.apply()
}

// committed forgets the undo logs once the batch's state is committed.
func (st *stage) committed() {
	if st.txn != nil {
		st.txn.sess.Reset()
	}
	for _, w := range st.workers {
		if w.sess != nil {
			w.sess.Reset()
		}
	}
}

// parallelism is the number of workers the stage runs a batch on.
func (st *stage) parallelism() int {
	if st.txn != nil {
		return st.txn.op.Workers()
	}
	return len(st.workers)
}

// close releases the stage's plugin instances, or its transactional
// operator (which owns its own), and reports what failed to close.
func (st *stage) close(ctx context.Context) error {
	var err error
	if st.txn != nil && st.txn.op != nil {
		if cerr := st.txn.op.Close(ctx); cerr != nil {
			err = fmt.Errorf("exec: operator %q: close: %w", st.op.Name, cerr)
		}
		st.txn.op = nil
	}
	for _, w := range st.workers {
		if w.inst != nil {
			w.inst.Close(ctx)
		}
	}
	if st.prev != nil {
		if cerr := st.prev.close(ctx); cerr != nil && err == nil {
			err = fmt.Errorf("exec: operator %q: close the replaced plugin: %w", st.op.Name, cerr)
		}
		st.prev = nil
	}
	if st.ownsPlugin && st.op.Plugin != nil {
		if cerr := st.op.Plugin.Close(ctx); cerr != nil && err == nil {
			err = fmt.Errorf("exec: operator %q: close: %w", st.op.Name, cerr)
		}
		st.ownsPlugin = false
	}
	return err
}

// keyedState adapts a state session to the plugin's State interface.
type keyedState struct {
	sess   *state.Session
	names  []string
	tables []*state.Table
}

func newKeyedState(sess *state.Session, names []string, tables []*state.Table) *keyedState {
	return &keyedState{sess: sess, names: names, tables: tables}
}

func (k *keyedState) table(t int32) (*state.Table, error) {
	if t < 0 || int(t) >= len(k.tables) {
		return nil, fmt.Errorf("table handle %d is not one of the operator's %d tables", t, len(k.tables))
	}
	return k.tables[t], nil
}

// TableID resolves a declared table name.
func (k *keyedState) TableID(name string) (int32, bool) {
	for i, n := range k.names {
		if n == name {
			return int32(i), true
		}
	}
	return 0, false
}

// Get reads key from table t.
func (k *keyedState) Get(t int32, key []byte) ([]byte, bool, error) {
	tb, err := k.table(t)
	if err != nil {
		return nil, false, err
	}
	return k.sess.Get(tb, key)
}

// Put writes key in table t.
func (k *keyedState) Put(t int32, key, value []byte) error {
	tb, err := k.table(t)
	if err != nil {
		return err
	}
	return k.sess.Put(tb, key, value)
}

// Delete removes key from table t.
func (k *keyedState) Delete(t int32, key []byte) error {
	tb, err := k.table(t)
	if err != nil {
		return err
	}
	return k.sess.Delete(tb, key)
}

// Savepoint marks the undo log.
func (k *keyedState) Savepoint() int { return k.sess.Savepoint() }

// RollbackTo undoes the writes after sp.
func (k *keyedState) RollbackTo(sp int) { k.sess.RollbackTo(sp) }
