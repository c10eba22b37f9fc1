package exec

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"hash/maphash"
	"slices"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/sluicehq/sluice/abi"
	"github.com/sluicehq/sluice/host/api/schema"
	"github.com/sluicehq/sluice/host/plugin"
	"github.com/sluicehq/sluice/host/txnop"
	"github.com/sluicehq/sluice/state"
	"github.com/sluicehq/sluice/txn"
	"github.com/sluicehq/sluice/txn/adapt"
)

// Txn makes an Operator transactional: its events are transactions over
// the Operator's shared tables (txnop.Operator.Tables), scheduled by
// package txn.
type Txn struct {
	// Operator runs the batches. The Job owns it from New on, and closes
	// it with the job (or at once when New fails).
	Operator *txnop.Operator
	// Events is the most events one call of Operator.Process is given
	// (the punctuation's count, at least 1). The job's batches are cut at
	// Events records; when an earlier operator makes more records than
	// that, the batch is processed in runs of Events, in order, each
	// seeing the state the runs before it left.
	Events int
	// Interval cuts a batch that long after its first record; 0: no time
	// bound (a batch waits for Events records, the end of the sources or a
	// stop request).
	Interval time.Duration
}

// TxnStatus is a transactional operator's part of an OperatorStatus:
// totals since the job started.
type TxnStatus = schema.TxnStatus

// txnStage runs a transactional operator. It has no workers of its own:
// its txnop.Operator plans each batch through the guest, schedules the
// transactions on package txn's workers and hands the outcomes back for
// the guest to emit outputs. It holds a session over the operator's
// tables and the change sets of the batch in progress, applied to the
// tables when the batch commits.
type txnStage struct {
	exop   *Operator
	op     *txnop.Operator
	m      *txnMetrics
	events int
	// names are the operator's tables, fixed for the job (read by Swap
	// off the executor's goroutine, unlike op, which a swap replaces).
	names  []string
	sess   *state.Session
	tables []*state.Table
	view   tableView
	out    plugin.Output

	// res is the change set of the batch's last run, applied by apply.
	res *txn.Result
	// carried holds the change sets of the runs before the last one when
	// the batch needed several (copied: a Result lives until the next
	// Process); the view reads through it.
	carried map[txn.Key]carried
	arena   []byte
	// writes is apply's buffer of one table's changes.
	writes []state.Write
	// history keeps the versions of the operator's windowed reads
	// (txn.History), committed with its tables; nil without windowed
	// reads.
	history *state.Table
	store   *state.Store
	// savedNext is the History's next transaction as its table has it.
	savedNext uint64

	outRecs []abi.Record
	rejects []plugin.Reject

	status TxnStatus
	// A request for a sample of a batch's task precedence graph (tpg),
	// whether one was passed to the operator, and the last sample.
	wantSample  atomic.Bool
	sampleArmed bool
	sample      atomic.Pointer[txn.Sample]
	// model is the operator's adaptive decision model (nil under a static
	// strategy), kept apart from op, which Close clears, for Decisions.
	model atomic.Pointer[adapt.Model]
}

// carried is one change carried from an earlier run of the batch.
type carried struct {
	value []byte
	del   bool
}

func newTxnStage(op *Operator, store *state.Store, m *Metrics) (*txnStage, error) {
	t := op.Txn
	if t.Operator == nil {
		return nil, fmt.Errorf("exec: operator %q: transactional without a txnop.Operator", op.Name)
	}
	if t.Events < 1 {
		return nil, fmt.Errorf("exec: operator %q: punctuation of %d events, want at least 1", op.Name, t.Events)
	}
	if op.Retries > 0 {
		return nil, fmt.Errorf("exec: operator %q: a transactional operator does not retry records (its events run again only by the scheduler)", op.Name)
	}
	ts := &txnStage{exop: op, op: t.Operator, store: store, m: m.txnOperator(op.Name), events: t.Events, sess: store.NewSession(), names: t.Operator.Tables()}
	for _, name := range t.Operator.Tables() {
		ts.tables = append(ts.tables, store.Table(name))
	}
	ts.view = tableView{sess: ts.sess, tables: ts.tables, seed: maphash.MakeSeed()}
	if h := t.Operator.History(); h != nil {
		ts.history = store.Table(HistoryTable(op.Name))
		if err := restoreHistory(store, ts.history.Name(), h); err != nil {
			return nil, fmt.Errorf("exec: operator %q: %w", op.Name, err)
		}
		ts.savedNext = h.Next()
	} else if err := dropHistory(store, HistoryTable(op.Name)); err != nil {
		return nil, fmt.Errorf("exec: operator %q: %w", op.Name, err)
	}
	ts.status.Strategy = t.Operator.Strategy().String()
	ts.model.Store(t.Operator.Model())
	ts.status.Workers = t.Operator.Workers()
	return ts, nil
}

// tableView is the committed state a batch's transactions read: the
// operator's tables (their in-memory values, which include every
// committed batch), through the changes of earlier runs of the batch.
// Get is called concurrently by the scheduler's workers; nothing writes
// the tables while a batch runs.
type tableView struct {
	sess    *state.Session
	tables  []*state.Table
	carried map[txn.Key]carried
	seed    maphash.Seed
}

var _ txn.BatchStore = (*tableView)(nil)

// Seed implements txn.BatchStore. The plan hashes keys with it to split
// them among the scheduler's workers; the tables find keys by a hash of
// their own (state's), so any seed serves.
func (v *tableView) Seed() maphash.Seed { return v.seed }

// viewRun is how many keys GetBatch hands state.Session.GetAll at once.
const viewRun = 64

// GetBatch implements txn.BatchStore: a plan's worker loads the keys of
// its partition at once, and state.Session.GetAll waits for their cache
// misses together, a run at a time. Like Get it may run on several
// workers at once.
func (v *tableView) GetBatch(keys []txn.Key, _ []uint64, out []txn.Value) (int, error) {
	if v.carried != nil {
		for i, k := range keys {
			b, ok, err := v.Get(k)
			if err != nil {
				return i, err
			}
			out[i] = txn.Value{Bytes: b, Found: ok}
		}
		return 0, nil
	}
	var ls [viewRun]state.Lookup
	for lo := 0; lo < len(keys); lo += viewRun {
		run := keys[lo:min(lo+viewRun, len(keys))]
		for i, k := range run {
			t, err := v.table(k)
			if err != nil {
				return lo + i, err
			}
			ls[i] = state.Lookup{Table: t, Key: keyBytes(k.Key)}
		}
		if i, err := v.sess.GetAll(ls[:len(run)]); err != nil {
			return lo + i, err
		}
		for i := range run {
			out[lo+i] = txn.Value{Bytes: ls[i].Value, Found: ls[i].Found}
		}
	}
	return 0, nil
}

// Get returns the value of k. The session's error (a key group it does not
// own: state.ErrNotOwned) is returned, never taken for an absent key.
func (v *tableView) Get(k txn.Key) ([]byte, bool, error) {
	if v.carried != nil {
		if c, ok := v.carried[k]; ok {
			return c.value, !c.del, nil
		}
	}
	t, err := v.table(k)
	if err != nil {
		return nil, false, err
	}
	return v.sess.Get(t, keyBytes(k.Key))
}

// table returns the table of k.
func (v *tableView) table(k txn.Key) (*state.Table, error) {
	if int(k.Table) >= len(v.tables) {
		// txnop refuses such handles before scheduling.
		return nil, fmt.Errorf("exec: key %v: table %d of an operator with %d tables", k, k.Table, len(v.tables))
	}
	return v.tables[k.Table], nil
}

// keyBytes views s as bytes without copying; the bytes must not be
// modified.
func keyBytes(s string) []byte { return unsafe.Slice(unsafe.StringData(s), len(s)) }

// runTxn runs a batch through a transactional operator, in runs of at most
// events events. A failed run (Process error) fails the job under the stop
// policy, and otherwise rejects each of its events with the error, leaving
// the state as the runs before it made it.
func (ts *txnStage) run(ctx context.Context, recs []abi.Record) ([]abi.Record, []plugin.Reject, error) {
	st, m := ts, ts.m
	name := ts.exop.Name
	st.outRecs, st.rejects = st.outRecs[:0], st.rejects[:0]
	ts.sampling(true)
	if ts.sampleArmed {
		defer ts.sampling(false)
	}
	ts.res = nil
	clear(ts.carried)
	ts.view.carried = nil
	ts.arena = ts.arena[:0]
	for lo := 0; lo < len(recs); lo += ts.events {
		hi := min(lo+ts.events, len(recs))
		if lo > 0 {
			ts.carry()
		}
		ts.out.Reset()
		start := time.Now()
		res, err := ts.op.Process(ctx, recs[lo:hi], &ts.view, &ts.out)
		elapsed := time.Since(start)
		if err != nil {
			if ctx.Err() != nil {
				return nil, nil, fmt.Errorf("exec: operator %q: %w", name, err)
			}
			ts.status.FailedBatch++
			m.txnFailed.Inc()
			if ts.exop.StopOnError {
				return nil, nil, fmt.Errorf("exec: operator %q: a batch of %d events failed and its error policy is stop: %w", name, hi-lo, err)
			}
			for i := lo; i < hi; i++ {
				st.rejects = append(st.rejects, plugin.Reject{Index: i, Err: err})
			}
			continue
		}
		ts.res = res
		ts.account(res, elapsed, m)
		for _, r := range ts.out.Rejects {
			st.rejects = append(st.rejects, plugin.Reject{Index: lo + r.Index, Err: r.Err})
		}
		last := hi == len(recs)
		for i := range ts.out.Records {
			r := ts.out.Records[i]
			g := lo + int(r.Origin)
			if g >= hi {
				return nil, nil, fmt.Errorf("exec: operator %q: an output names event %d of a batch of %d", name, r.Origin, hi-lo)
			}
			if !last {
				r = ts.keep(r)
			}
			r.Origin = uint32(g)
			st.outRecs = append(st.outRecs, r)
		}
	}
	return st.outRecs, st.rejects, nil
}

func (ts *txnStage) retry(context.Context, *abi.Record) ([]abi.Record, error) { return nil, errNoRetry }

// A run's changes are applied only at commit, so there is nothing to undo.
func (ts *txnStage) savepoint() savepoint { return nil }
func (ts *txnStage) rollback(savepoint)   {}

func (ts *txnStage) committed() { ts.sess.Reset() }

func (ts *txnStage) parallelism() int { return ts.op.Workers() }

func (ts *txnStage) report(os *OperatorStatus) {
	os.Parallelism = ts.status.Workers
	t := ts.status
	os.Txn = &t
}

// prepare checks that r is a transactional operator over the same tables.
func (ts *txnStage) prepare(_ context.Context, op *Operator, r *Replacement, _ int) (*generation, error) {
	switch {
	case r.Txn == nil:
		return nil, fmt.Errorf("%w: operator %q is transactional: the replacement needs its txnop.Operator", ErrSwapRefused, op.Name)
	case r.Plugin != nil && r.Plugin.Kind() != op.Kind:
		return nil, fmt.Errorf("%w: operator %q is %s and the new module was loaded as %s", ErrSwapRefused, op.Name, op.Kind, r.Plugin.Kind())
	case !slices.Equal(r.Txn.Tables(), ts.names):
		return nil, fmt.Errorf("%w: operator %q: the replacement's tables %q differ from the operator's %q", ErrSwapRefused, op.Name, r.Txn.Tables(), ts.names)
	}
	gen := &generation{txn: r.Txn}
	r.Txn = nil // the generation owns it now
	return gen, nil
}

// install makes gen's operator the stage's; the adaptive model carries
// over: what it learned of the workload, and one history of decisions; so
// do the versions kept for windowed reads.
func (ts *txnStage) install(gen *generation) *generation {
	old := &generation{txn: ts.op}
	gen.txn.TakeModel(old.txn)
	if h, from := gen.txn.History(), old.txn.History(); h != nil && !gen.txn.TakeHistory(old.txn) {
		// Another read window: the new History starts from the old
		// one's versions (those it keeps), and journals for the table.
		h.Track()
		if from != nil {
			_ = h.Restore(from.Next(), from.Held()) // a new History, versions before Next
		}
	}
	if gen.txn.History() != nil && ts.history == nil {
		ts.history = ts.store.Table(HistoryTable(ts.exop.Name))
	}
	ts.op = gen.txn
	ts.model.Store(gen.txn.Model())
	ts.status.Strategy = gen.txn.Strategy().String()
	ts.status.Workers = gen.txn.Workers()
	gen.txn = nil
	return old
}

// close closes the transactional operator.
func (ts *txnStage) close(ctx context.Context) error {
	if ts.op == nil {
		return nil
	}
	err := ts.op.Close(ctx)
	ts.op = nil
	if err != nil {
		return fmt.Errorf("exec: operator %q: close: %w", ts.exop.Name, err)
	}
	return nil
}

// carry copies the last run's changes into carried, so that the next run
// reads them and apply commits them.
func (ts *txnStage) carry() {
	if ts.res == nil {
		return
	}
	if ts.carried == nil {
		ts.carried = map[txn.Key]carried{}
	}
	for _, c := range ts.res.Changes {
		k := txn.Key{Table: c.Key.Table, Key: string(keyBytes(c.Key.Key))}
		ts.carried[k] = carried{value: append([]byte(nil), c.Value...), del: c.Delete}
	}
	ts.view.carried = ts.carried
	ts.res = nil
}

// keep copies an output record of a run that is not the batch's last, whose
// bytes would not outlive the next Process.
func (ts *txnStage) keep(r abi.Record) abi.Record { return copyRecord(r) }

// account adds a run's statistics to the status and the metrics.
func (ts *txnStage) account(res *txn.Result, elapsed time.Duration, m *txnMetrics) {
	s := &res.Stats
	committed := uint64(s.Txns - s.Aborted)
	guest := max(elapsed-s.Wall, 0)
	st := &ts.status
	st.Batches++
	st.Committed += committed
	st.Aborted += uint64(s.Aborted)
	st.ReExecutions += uint64(s.ReExecutions)
	st.PlanSeconds += s.Plan.Seconds()
	st.ExploreSeconds += s.Explore.Seconds()
	st.UsefulSeconds += s.Useful.Seconds()
	st.AbortSeconds += s.Abort.Seconds()
	st.FinishSeconds += s.Finish.Seconds()
	st.GuestSeconds += guest.Seconds()
	m.txnCommitted.Add(float64(committed))
	m.txnAborted.Add(float64(s.Aborted))
	m.txnReExec.Add(float64(s.ReExecutions))
	m.txnPlan.Add(s.Plan.Seconds())
	m.txnExplore.Add(s.Explore.Seconds())
	m.txnUseful.Add(s.Useful.Seconds())
	m.txnAbort.Add(s.Abort.Seconds())
	m.txnFinish.Add(s.Finish.Seconds())
	m.txnGuest.Add(guest.Seconds())
	m.txnBatch.Observe(elapsed.Seconds())

	// The batch's measurement: the adaptive strategy's record, or the
	// collector's alone under a static strategy.
	var rec adapt.Record
	if md := ts.model.Load(); md != nil {
		if h := md.History(1); len(h) == 1 {
			rec = h[0]
		}
		d := &rec.Decision
		if d.Strategy != d.Previous {
			st.Switches++
			m.txnSwitches.Inc()
		}
		if d.Mispredicted {
			st.Mispredictions++
			m.txnMispredict.Inc()
		}
		st.DecideSeconds += float64(d.DecideNs) / 1e9
		m.txnDecide.Add(float64(d.DecideNs) / 1e9)
	} else {
		rec.Measurement = adapt.Collect(st.Batches, s.Txns, st.Workers, s, elapsed)
	}
	st.Running, st.Last = s.Strategy, &rec
	ms := &rec.Measurement
	m.txnStrategy.WithLabelValues(s.Strategy).Inc()
	perOp := func(n int) float64 {
		if ms.Ops == 0 {
			return 0
		}
		return float64(n) / float64(ms.Ops)
	}
	m.txnTemporal.Set(perOp(ms.Temporal))
	m.txnParametric.Set(perOp(ms.Parametric))
	m.txnLogical.Set(perOp(ms.Logical))
	m.txnNonDet.Set(perOp(ms.NonDet))
	m.txnSkew.Set(ms.Skew)
	m.txnAbortRatio.Set(ms.AbortRatio)
	if ms.Chains > 0 {
		m.txnCyclic.Set(float64(ms.CyclicChains) / float64(ms.Chains))
	}
	m.txnOpCost.Set(ms.OpCostNs / 1e9)
	m.txnRate.Set(ms.Rate)
}

// tpgMaxOps bounds the operations a sampled task precedence graph keeps.
const tpgMaxOps = 2000

// tpg asks for a sample of the next batch's task precedence graph and
// returns the last one taken, nil before any.
func (ts *txnStage) tpg() *txn.Sample {
	ts.wantSample.Store(true)
	return ts.sample.Load()
}

// sampling passes a request for a sample to the operator before a batch
// and takes the sample after it; executor goroutine only.
func (ts *txnStage) sampling(before bool) {
	if before {
		if ts.wantSample.Load() {
			ts.wantSample.Store(false)
			ts.op.SampleNext(tpgMaxOps)
			ts.sampleArmed = true
		}
		return
	}
	if s := ts.op.Sampled(); s != nil && s != ts.sample.Load() {
		ts.sample.Store(s)
		ts.sampleArmed = false
	}
}

// decisions returns up to n of the adaptive strategy's latest records.
func (ts *txnStage) decisions(n int) ([]adapt.Record, error) {
	md := ts.model.Load()
	if md == nil {
		return nil, fmt.Errorf("%w: its strategy is %s", ErrNotAdaptive, ts.status.Strategy)
	}
	return md.History(n), nil
}

// apply writes the batch's change sets into the tables, for the commit
// that follows: the earlier runs' (carried) and then the last run's, which
// may change the same keys again. The last run's values are first copied:
// a change's value may alias the current value of another key of the
// batch (an operation that copies a value it read), which writing that
// key could overwrite in place.
//
// The stage writes its tables directly (state.Table.WriteAll), not
// through its session: its changes are final when applied (a failed run
// is never applied), so the session's undo log would only cost a copy of
// every old value. A value equal to the current one is left alone, so
// that only changed keys are committed.
func (ts *txnStage) apply() error {
	var changes []txn.Change
	if ts.res != nil {
		changes = ts.res.Changes
		ts.res = nil
	}
	ts.arena = ts.arena[:0]
	for _, c := range changes {
		if int(c.Key.Table) >= len(ts.tables) {
			return ts.badTable(c.Key)
		}
		ts.arena = append(ts.arena, c.Value...)
	}
	for k := range ts.carried {
		if int(k.Table) >= len(ts.tables) {
			return ts.badTable(k)
		}
	}
	// Table by table (state.Table.WriteAll waits for a run's cache misses
	// together), each table's changes in their order, split by key group
	// over the operator's workers, idle meanwhile; tables are apart, so
	// the order between them does not matter.
	for ti, t := range ts.tables {
		ws := ts.writes[:0]
		for k, c := range ts.carried {
			if int(k.Table) == ti {
				ws = append(ws, state.Write{Key: keyBytes(k.Key), Value: c.value, Delete: c.del})
			}
		}
		off := 0
		for _, c := range changes {
			n := len(c.Value)
			if int(c.Key.Table) == ti {
				ws = append(ws, state.Write{Key: keyBytes(c.Key.Key), Value: ts.arena[off : off+n : off+n], Delete: c.Delete})
			}
			off += n
		}
		t.WriteAllParallel(ws, ts.parallelism())
		clear(ws) // keep none of the batch's keys alive
		ts.writes = ws[:0]
	}
	clear(ts.carried)
	ts.view.carried = nil
	ts.saveHistory()
	return nil
}

// HistoryTable names the table of the state that keeps the versions of a
// transactional operator's windowed reads, so that its windows reach back
// across a restart: no table of a pipeline file has a name with a slash.
func HistoryTable(operator string) string { return "history/" + operator }

// The history table's keys: a version is historyVersion, its transaction
// (8 bytes, big-endian), its table (4) and its key; historyNext holds the
// sequence number of the next transaction (8 bytes). A version's value is
// 1 (found) or 0 (a deletion), then the bytes.
const (
	historyVersion = 'v'
	historyNext    = "n"
)

// saveHistory writes what the batch changed in the operator's History to
// its table: applied with the batch, it commits with the tables.
func (ts *txnStage) saveHistory() {
	h := ts.op.History()
	if ts.history == nil || h == nil {
		return
	}
	c := h.Changes()
	if len(c.Put) == 0 && len(c.Dropped) == 0 && c.Next == ts.savedNext {
		return
	}
	ts.savedNext = c.Next
	ws := ts.writes[:0]
	for _, v := range c.Put {
		val := []byte{0}
		if v.Value.Found {
			val = append([]byte{1}, v.Value.Bytes...)
		}
		ws = append(ws, state.Write{Key: historyKey(v.Seq, v.Key), Value: val})
	}
	for _, v := range c.Dropped {
		ws = append(ws, state.Write{Key: historyKey(v.Seq, v.Key), Delete: true})
	}
	ws = append(ws, state.Write{Key: []byte(historyNext), Value: binary.BigEndian.AppendUint64(nil, c.Next)})
	ts.history.WriteAll(ws)
	clear(ws)
	ts.writes = ws[:0]
}

// historyKey is the key of transaction seq's version of k.
func historyKey(seq uint64, k txn.Key) []byte {
	b := make([]byte, 0, 13+len(k.Key))
	b = append(b, historyVersion)
	b = binary.BigEndian.AppendUint64(b, seq)
	b = binary.BigEndian.AppendUint32(b, k.Table)
	return append(b, k.Key...)
}

// dropHistory empties the history table of an operator that reads no
// windows (any more): were it to read them again after a later restart,
// the versions of long ago would not be its last events'. The deletions
// commit with the first batch.
func dropHistory(store *state.Store, table string) error {
	if !slices.Contains(store.Tables(), table) {
		return nil
	}
	var ws []state.Write
	err := store.Scan(table, func(k, _ []byte) error {
		ws = append(ws, state.Write{Key: bytes.Clone(k), Delete: true})
		return nil
	})
	if err != nil {
		return err
	}
	store.Table(table).WriteAll(ws)
	return nil
}

// restoreHistory fills h from the history table of the store, which a
// previous run of the operator wrote, and has h journal its changes from
// then on.
func restoreHistory(store *state.Store, table string, h *txn.History) error {
	h.Track()
	var next uint64
	var vs []txn.HistoryVersion
	err := store.Scan(table, func(k, v []byte) error {
		switch {
		case string(k) == historyNext && len(v) == 8:
			next = binary.BigEndian.Uint64(v)
		case len(k) >= 13 && k[0] == historyVersion && len(v) >= 1:
			val := txn.Value{Found: v[0] == 1}
			if val.Found {
				val.Bytes = bytes.Clone(v[1:])
			}
			vs = append(vs, txn.HistoryVersion{Seq: binary.BigEndian.Uint64(k[1:]),
				Key: txn.Key{Table: binary.BigEndian.Uint32(k[9:]), Key: string(k[13:])}, Value: val})
		default:
			return fmt.Errorf("history table %s: a key %q it does not know", table, k)
		}
		return nil
	})
	if err != nil {
		return err
	}
	if err := h.Restore(next, vs); err != nil {
		return fmt.Errorf("history table %s: %w", table, err)
	}
	return nil
}

// badTable is the error of a change that names a table the operator does
// not have.
func (ts *txnStage) badTable(k txn.Key) error {
	return fmt.Errorf("exec: operator %q: a change names table handle %d of %d", ts.exop.Name, k.Table, len(ts.tables))
}

// punctuation returns the batching the job's transactional operators ask
// for, or ok false when there are none. They must agree.
func punctuation(ops []Operator) (events int, interval time.Duration, ok bool, err error) {
	first := ""
	for i := range ops {
		t := ops[i].Txn
		if t == nil {
			continue
		}
		if !ok {
			events, interval, ok, first = t.Events, t.Interval, true, ops[i].Name
			continue
		}
		if t.Events != events || t.Interval != interval {
			return 0, 0, false, fmt.Errorf("exec: operators %q and %q have different punctuations (%d events / %v and %d events / %v): the job's batches are cut by one",
				first, ops[i].Name, events, interval, t.Events, t.Interval)
		}
	}
	return events, interval, ok, nil
}

// checkTables refuses a transactional operator's table used by another
// operator: its changes are applied at commit time, so another writer of
// the table in the same batch would be overwritten, and a reader would see
// the state before the batch.
func checkTables(ops []Operator) error {
	users := map[string]int{}
	for i := range ops {
		var names []string
		if ops[i].Txn != nil && ops[i].Txn.Operator != nil {
			names = ops[i].Txn.Operator.Tables()
		} else {
			names = ops[i].Tables
		}
		for _, n := range names {
			if j, ok := users[n]; ok && j != i && (ops[i].Txn != nil || ops[j].Txn != nil) {
				return fmt.Errorf("exec: operators %q and %q both use table %q: a transactional operator's tables are its own", ops[j].Name, ops[i].Name, n)
			}
			users[n] = i
		}
	}
	return nil
}
