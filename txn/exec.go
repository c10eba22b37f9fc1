package txn

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"time"
)

// run is the state of one batch under a TPG strategy.
type run struct {
	*plan
	store   Store
	apply   Apply
	strat   Strategy
	us      *units
	eager   bool
	nw      int
	recheck bool // this pass re-executes only operations whose inputs changed

	failCount []atomic.Int32 // per transaction: its failed operations
	hidden    []bool         // lazy: transactions aborted as of the pass start

	pending []atomic.Int32 // per unit: parents not yet done
	roots   []int32        // ns: units without parents, in timestamp order
	rootIdx paddedInt64    // ns: next root to claim
	done    paddedInt64    // ns: units done, as flushed by idle workers
	idle    paddedInt32    // ns: workers waiting in q.pop
	claim   paddedInt64    // dfs: next unit to claim
	lvlIdx  []paddedInt64  // bfs: next unit to claim, per level
	q       readyQueue
	bar     barrier
	stop    atomic.Bool

	statusChanged atomic.Bool
	workers       []workerState

	// A sample's record of the units' first runs (sample.go); nil
	// unitOrder: the batch is not sampled.
	sampleMax  int
	unitOrder  []int32
	unitWorker []int32
	unitSeq    atomic.Int32
}

type workerState struct {
	acc    access
	win    []windowCand // scratch of windowed reads
	execs  int
	useful time.Duration
	tick   uint32
	local  []int32  // ns: units this worker made ready
	_      [64]byte // keep workers' counters on separate cache lines
}

// runTPG executes a batch under a TPG strategy (or TStream) on nw workers.
func (s *Scheduler) runTPG(ctx context.Context, st Strategy, batch []Txn, store Store, apply Apply) (*Result, error) {
	t0 := time.Now()
	if s.buf == nil {
		s.buf = newPlanBuf()
	}
	b := s.buf
	p, err := buildPlan(batch, b, store, s.n, s.dispatch)
	if err != nil {
		return nil, err
	}
	if (st.Unit == ChainUnit && p.nd) || (st.Unit == OpUnit && s.analyze) {
		// Otherwise chain units find the cycles between chains themselves;
		// operation units need them only for a decision model.
		p.countCycles()
	}
	us, err := p.buildUnits(st.Unit, st.Kind == TPG, st.Explore != NS)
	if err != nil {
		return nil, err
	}
	b.failCount = reuse(b.failCount, len(batch))
	b.hidden = reuse(b.hidden, len(batch))
	b.pending = grow(b.pending, us.count())
	x := &run{
		plan: p, store: store, apply: apply, strat: st, us: us,
		eager: st.Abort == Eager, nw: s.n,
		failCount: b.failCount,
		hidden:    b.hidden,
		pending:   b.pending,
		lvlIdx:    make([]paddedInt64, len(us.levelStart)),
		workers:   make([]workerState, s.n),
	}
	for i := range x.workers {
		x.workers[i].acc.x, x.workers[i].acc.w = x, i
	}
	x.q.init()
	x.bar.init(s.n)
	x.startSample(s)
	stats := &Stats{Strategy: st.String(), Workers: s.n, Counts: p.counts}
	stats.Units, stats.SplitUnits, stats.Levels = us.count(), us.split, us.levelCount()
	stats.Plan = time.Since(t0)

	stopWatch := context.AfterFunc(ctx, func() {
		x.stop.Store(true)
		x.q.finish()
	})
	defer stopWatch()

	maxPasses := len(batch) + 2
	for pass := 0; ; pass++ {
		if pass > maxPasses {
			return nil, fmt.Errorf("%w after %d passes (strategy %s)", ErrNoConvergence, pass, st)
		}
		x.recheck = x.eager && pass > 0
		x.statusChanged.Store(false)
		before := x.totalExecs()
		useful0 := x.totalUseful()
		ps := time.Now()
		x.pass(s)
		wall := time.Since(ps) * time.Duration(s.n)
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("txn: run cancelled: %w", err)
		}
		stats.Passes++
		execs := x.totalExecs() - before
		if pass == 0 {
			useful := x.totalUseful() - useful0
			stats.Useful = useful
			stats.Explore = max(wall-useful, 0)
		} else {
			stats.Abort += wall
		}
		if x.eager {
			// Fixed point: a pass that executed nothing, or a first pass in
			// which no transaction's status ever changed.
			if (pass == 0 && !x.statusChanged.Load()) || (pass > 0 && execs == 0) {
				break
			}
			continue
		}
		changed := false
		for t := range x.hidden {
			a := x.failCount[t].Load() > 0
			if a != x.hidden[t] {
				x.hidden[t], changed = a, true
			}
		}
		if !changed {
			break
		}
	}
	f0 := time.Now()
	res, err := x.finish(s)
	if err != nil {
		return nil, err
	}
	stats.Executions = x.totalExecs()
	stats.ReExecutions = stats.Executions - len(x.ops)
	stats.Aborted = res.Stats.Aborted
	stats.Finish = time.Since(f0)
	stats.Wall = time.Since(t0)
	res.Stats = *stats
	if x.unitOrder != nil {
		x.takeSample(s, res)
	}
	return res, nil
}

func (x *run) totalExecs() int {
	n := 0
	for i := range x.workers {
		n += x.workers[i].execs
	}
	return n
}

func (x *run) totalUseful() time.Duration {
	var d time.Duration
	for i := range x.workers {
		d += x.workers[i].useful
	}
	return d
}

// pass runs every unit once on all workers, in the order the strategy picks.
func (x *run) pass(s *Scheduler) {
	us := x.us
	for i := range x.pending {
		x.pending[i].Store(us.nParents[i])
	}
	x.claim.Store(0)
	for i := range x.lvlIdx {
		x.lvlIdx[i].Store(0)
	}
	var work func(w int)
	switch x.strat.Explore {
	case NS:
		if x.roots == nil {
			roots := x.buf.roots[:0]
			for u, n := range us.nParents {
				if n == 0 {
					roots = append(roots, int32(u))
				}
			}
			x.roots, x.buf.roots = roots, roots
		}
		x.rootIdx.Store(0)
		x.done.Store(0)
		x.q.reset()
		if us.count() == 0 {
			x.q.finish()
		}
		work = x.nsWork
	case BFS:
		work = x.bfsWork
	default:
		work = x.dfsWork
	}
	s.dispatch(work)
}

// execUnit executes a unit's operations in timestamp order.
func (x *run) execUnit(w *workerState, u int32) {
	if x.unitOrder != nil {
		x.noteUnit(w.acc.w, u)
	}
	if x.us.opStart == nil {
		x.execOp(w, u)
		return
	}
	for _, id := range x.us.ops[x.us.opStart[u]:x.us.opStart[u+1]] {
		x.execOp(w, id)
	}
}

// unchanged reports whether an executed operation would read what it read.
func (x *run) unchanged(o *opState) bool {
	if o.ks != nil && !x.read(o.ks, o.prevWriter, o.ts, o.txn).Equal(o.obs.Own) {
		return false
	}
	for i := range o.obs.Reads {
		r := o.r0 + int32(i)
		if !x.read(x.readKS[r], x.readPos[r], o.ts, o.txn).Equal(o.obs.Reads[i]) {
			return false
		}
	}
	if o.obs.Windows != nil && !x.sameWindows(o) {
		return false
	}
	for _, g := range o.obs.Gets {
		ks, _ := x.lookup(g.Key, false) // never fails: it creates nothing
		var v Value
		if ks == nil {
			var err error
			if v.Bytes, v.Found, err = x.store.Get(g.Key); err != nil {
				return false // re-executed, the operation meets the error
			}
		} else {
			v = x.read(ks, x.latestBefore(ks, o.ts), o.ts, o.txn)
		}
		if !v.Equal(g.Value) {
			return false
		}
	}
	return true
}

// execOp executes one operation: it reads its inputs as of its timestamp,
// calls Apply and publishes its version and its transaction's status.
func (x *run) execOp(w *workerState, id int32) {
	o := &x.ops[id]
	if x.recheck && o.executed && x.unchanged(o) {
		return
	}
	nondet := o.ks == nil
	if nondet {
		x.undoND(o)
	} else {
		o.obs.Own = x.read(o.ks, o.prevWriter, o.ts, o.txn)
	}
	reads := o.obs.Reads
	for i := range reads {
		r := o.r0 + int32(i)
		reads[i] = x.read(x.readKS[r], x.readPos[r], o.ts, o.txn)
	}
	o.obs.Gets = o.obs.Gets[:0]
	a := &w.acc
	a.o, a.buf, a.err = o, a.buf[:0], nil
	var eff Effect
	var err error
	if o.obs.Windows != nil {
		w.win, err = x.windows(o, w.win)
	}
	w.tick++
	switch {
	case err != nil:
		// A History error: the operation fails before its function runs.
	case w.tick&7 == 0:
		t := time.Now()
		eff, err = x.apply(int(o.txn), int(o.idx), o.op, a)
		w.useful += 8 * time.Since(t)
	default:
		eff, err = x.apply(int(o.txn), int(o.idx), o.op, a)
	}
	if err == nil {
		err = a.err
	}
	failed := err != nil || eff.Abort
	if nondet {
		if !failed {
			x.publishND(o, a.buf)
		}
	} else {
		o.value, o.del, o.written = eff.Value, eff.Delete, !failed && !eff.Keep
	}
	a.buf, a.o = a.buf[:0], nil
	if failed != o.failed {
		o.failed = failed
		if failed {
			x.failCount[o.txn].Add(1)
		} else {
			x.failCount[o.txn].Add(-1)
		}
		x.statusChanged.Store(true)
	}
	o.err = err
	o.executed = true
	w.execs++
}

// finish assembles the result from the fixed point: transactions by
// range, then keys by range, on all workers when the batch is large enough
// to pay for the hand-off.
func (x *run) finish(s *Scheduler) (*Result, error) {
	n := len(x.batch)
	res := &Result{Committed: make([]bool, n), obs: x.obs, first: x.first}
	changes := make([]Change, len(x.keyOrder))
	type part struct {
		err     *OpError
		aborted int
		changes int
	}
	nw := 1
	if s.n > 1 && len(x.ops) >= parallelPlanMin {
		nw = s.n
	}
	parts := make([]part, nw)
	work := func(w int) {
		pt := &parts[w]
		for t := n * w / nw; t < n*(w+1)/nw; t++ {
			ops := x.ops[x.first[t]:x.first[t+1]]
			stopAt := len(ops)
			for m := range ops {
				if ops[m].failed {
					stopAt = m
					if ops[m].err != nil && pt.err == nil {
						pt.err = &OpError{Txn: t, Op: m, Err: ops[m].err}
					}
					break
				}
			}
			res.Committed[t] = stopAt == len(ops)
			if !res.Committed[t] {
				pt.aborted++
			}
			for m := range ops {
				if m <= stopAt {
					ops[m].obs.Executed = true
				} else {
					// Never run by the serial executor: nothing read.
					*ops[m].obs = Observed{}
				}
			}
		}
		if nw > 1 {
			x.bar.wait() // every transaction's outcome is known
		}
		keys := x.keyOrder
		lo, k := len(keys)*w/nw, len(keys)*w/nw
		for _, ks := range keys[lo : len(keys)*(w+1)/nw] {
			if c, ok := x.change(ks, res.Committed); ok {
				changes[k] = c
				k++
			}
		}
		pt.changes = k - lo
	}
	if nw > 1 {
		s.dispatch(work)
	} else {
		work(0)
	}
	k := 0
	for w := range parts {
		if err := parts[w].err; err != nil {
			return nil, err
		}
		res.Stats.Aborted += parts[w].aborted
		lo := len(x.keyOrder) * w / nw
		k += copy(changes[k:], changes[lo:lo+parts[w].changes])
	}
	res.Changes = changes[:k]
	for _, m := range x.dyn {
		for _, ks := range m {
			if c, ok := x.change(ks, res.Committed); ok {
				res.Changes = append(res.Changes, c)
			}
		}
	}
	sortChanges(res.Changes[k:])
	if _, ok := x.store.(WindowStore); ok {
		res.Versions = x.versions(res.Committed)
	}
	return res, nil
}

// versions lists the versions the committed transactions wrote, as
// Result.Versions documents.
func (x *run) versions(committed []bool) []Write {
	var vs []Write
	for t := range x.batch {
		if !committed[t] {
			continue
		}
		start := len(vs)
		for i := x.first[t]; i < x.first[t+1]; i++ {
			o := &x.ops[i]
			if o.ks != nil {
				if o.written {
					vs = addWrite(vs, start, t, o.ks.key, versionValue(o.value, o.del))
				}
				continue
			}
			for _, ks := range o.ndWrites {
				for j := range ks.nd {
					if nv := &ks.nd[j]; nv.ts == o.ts {
						vs = addWrite(vs, start, t, ks.key, versionValue(nv.value, nv.del))
						break
					}
				}
			}
		}
	}
	return vs
}

// change returns the final value of a key as of the fixed point, if a
// committed transaction wrote it.
func (x *run) change(ks *keyState, committed []bool) (Change, bool) {
	have := false
	var best uint64
	var c Change
	for p := ks.last; p >= 0; p = x.ops[p].prevWriter {
		w := &x.ops[p]
		if w.written && committed[w.txn] {
			have, best, c = true, w.ts, Change{Key: ks.key, Value: w.value, Delete: w.del}
			break
		}
	}
	for i := len(ks.nd) - 1; i >= 0; i-- {
		nv := &ks.nd[i]
		if have && nv.ts < best {
			break
		}
		if committed[nv.txn] {
			have, c = true, Change{Key: ks.key, Value: nv.value, Delete: nv.del}
			break
		}
	}
	if have && c.Delete {
		c.Value = nil
	}
	return c, have
}

func sortChanges(c []Change) {
	slices.SortFunc(c, func(a, b Change) int {
		if a.Key.Table != b.Key.Table {
			return cmp.Compare(a.Key.Table, b.Key.Table)
		}
		return strings.Compare(a.Key.Key, b.Key.Key)
	})
}
