package exec

import (
	"context"
	"fmt"

	"github.com/sluicehq/sluice/abi"
	"github.com/sluicehq/sluice/host/plugin"
	"github.com/sluicehq/sluice/state"
)

// keyedStage runs a keyed operator: each record goes to the worker its key
// group is assigned to (assignment), so all records of a key go, in order,
// to one worker, which alone reads and writes that key's state. Ownership
// is enforced by each worker's state session: a guest touching a key of
// another worker's group fails the call.
type keyedStage struct {
	pool
	store  *state.Store
	names  []string
	tables []*state.Table
	groups int
	assign *assignment
	sps    savepoint
	// Measurements (executor goroutine): the groups' counts since they
	// were last published, and a sample of the keys.
	counts groupCounts
	hot    topKeys
}

func newKeyedStage(ctx context.Context, op *Operator, store *state.Store, m *workerMetrics) (*keyedStage, error) {
	st := &keyedStage{pool: pool{op: op, m: m, measure: true}, store: store, names: op.Tables, groups: store.KeyGroups()}
	st.counts = groupCounts{arrived: make([]uint64, st.groups), processed: make([]uint64, st.groups)}
	for _, name := range op.Tables {
		st.tables = append(st.tables, store.Table(name))
	}
	a, err := loadAssignment(store, op.Name, op.Parallelism)
	if err != nil {
		return nil, err
	}
	st.assign = a
	insts, err := newInstances(ctx, op, op.Plugin, 0, op.Parallelism)
	if err != nil {
		return nil, err
	}
	for i, inst := range insts {
		w := &worker{id: i, inst: inst}
		st.addWorker(w)
		st.workers = append(st.workers, w)
	}
	return st, nil
}

// addWorker gives w a state session that owns the key groups assigned to
// it, as the assignment stands when the session is used.
func (st *keyedStage) addWorker(w *worker) {
	w.sess = st.store.NewSession()
	id := w.id
	w.sess.SetOwned(func(kg int) bool { return st.assign.owner(kg) == id })
	w.state = newKeyedState(w.sess, st.names, st.tables)
}

func (st *keyedStage) run(ctx context.Context, recs []abi.Record) ([]abi.Record, []plugin.Reject, error) {
	for _, w := range st.workers {
		w.in, w.global, w.kgs = w.in[:0], w.global[:0], w.kgs[:0]
	}
	for i := range recs {
		kg := state.KeyGroup(recs[i].Key, st.groups)
		w := st.workers[st.assign.owner(kg)]
		w.in = append(w.in, recs[i])
		w.global = append(w.global, int32(i))
		if st.measure {
			w.kgs = append(w.kgs, int32(kg))
			st.counts.arrive(kg)
			st.hot.offer(recs[i].Key, kg)
		}
	}
	st.active = st.active[:0]
	for _, w := range st.workers {
		if len(w.in) > 0 {
			st.active = append(st.active, w)
		}
	}
	if len(st.active) == 0 {
		return nil, nil, nil
	}
	if err := st.work(ctx); err != nil {
		return nil, nil, err
	}
	if st.measure {
		for _, w := range st.active {
			for _, kg := range w.kgs {
				st.counts.processed[kg]++
			}
		}
	}
	out, rejects := st.gather()
	return out, rejects, nil
}

func (st *keyedStage) retry(ctx context.Context, rec *abi.Record) ([]abi.Record, error) {
	return st.retryOn(ctx, st.workers[st.assign.owner(state.KeyGroup(rec.Key, st.groups))], rec)
}

// savepoint marks the undo log of each worker's session.
func (st *keyedStage) savepoint() savepoint {
	st.sps = st.sps[:0]
	for _, w := range st.workers {
		st.sps = append(st.sps, w.sess.Savepoint())
	}
	return st.sps
}

// rollback undoes the workers' writes after sp.
func (st *keyedStage) rollback(sp savepoint) {
	for i, p := range sp {
		st.workers[i].sess.RollbackTo(p)
	}
}

func (st *keyedStage) apply() error { return nil }

func (st *keyedStage) committed() {
	for _, w := range st.workers {
		w.sess.Reset()
	}
}

func (st *keyedStage) parallelism() int { return len(st.workers) }

func (st *keyedStage) close(ctx context.Context) error {
	st.closeWorkers(ctx)
	return nil
}

// resize changes the number of workers at a batch boundary: the key groups
// are reassigned (those of removed workers, and shares for new ones; no
// other group moves), and the new assignment is committed with the next
// batch's state. State stays where it is: every worker's session reads
// the same tables, so a key group changes hands by changing its owner.
func (st *keyedStage) resize(ctx context.Context, r *resize) error {
	next := st.assign.rebalance(r.workers)
	for _, w := range st.workers {
		if w.sess.Len() > 0 {
			return fmt.Errorf("exec: operator %q: worker %d has uncommitted writes; workers change only between committed batches", st.op.Name, w.id)
		}
	}
	err := st.grow(ctx, r, st.addWorker)
	st.assign = next
	st.assign.save(st.store, st.op.Name)
	return err
}

func (st *keyedStage) report(os *OperatorStatus) {
	st.pool.report(os)
	for i := range os.Workers {
		os.Workers[i].KeyGroups = st.assign.count(os.Workers[i].ID)
	}
	os.Assignment = st.assign.version
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
