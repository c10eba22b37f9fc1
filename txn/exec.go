package txn

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
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

	pending   []atomic.Int32 // per unit: parents not yet done
	remaining atomic.Int64
	claim     atomic.Int64
	lvlIdx    []atomic.Int64
	q         readyQueue
	bar       barrier
	stop      atomic.Bool

	statusChanged atomic.Bool
	workers       []workerState
}

type workerState struct {
	acc    access
	execs  int
	useful time.Duration
	tick   uint32
	_      [64]byte // keep workers' counters on separate cache lines
}

// runTPG executes a batch under a TPG strategy (or TStream) on nw workers.
func (s *Scheduler) runTPG(ctx context.Context, st Strategy, batch []Txn, store Store, apply Apply) (*Result, error) {
	t0 := time.Now()
	if s.buf == nil {
		s.buf = &planBuf{}
	}
	p, err := buildPlan(batch, s.buf)
	if err != nil {
		return nil, err
	}
	defer p.release()
	s.loadCommitted(p.slab, store)
	us, err := p.buildUnits(st.Unit, st.Kind == TPG)
	if err != nil {
		return nil, err
	}
	x := &run{
		plan: p, store: store, apply: apply, strat: st, us: us,
		eager: st.Abort == Eager, nw: s.n,
		failCount: make([]atomic.Int32, len(batch)),
		hidden:    make([]bool, len(batch)),
		pending:   make([]atomic.Int32, len(us.nParents)),
		lvlIdx:    make([]atomic.Int64, len(us.levelStart)),
		workers:   make([]workerState, s.n),
	}
	for i := range x.workers {
		x.workers[i].acc.x, x.workers[i].acc.w = x, i
	}
	x.q.init()
	x.bar.init(s.n)
	stats := &Stats{Strategy: st.String(), Workers: s.n, Counts: p.counts}
	stats.Units, stats.SplitUnits, stats.Levels = len(us.nParents), us.split, len(us.levelStart)-1
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
	res, err := x.finish()
	if err != nil {
		return nil, err
	}
	stats.Executions = x.totalExecs()
	stats.ReExecutions = stats.Executions - len(x.ops)
	stats.Aborted = res.Stats.Aborted
	stats.Finish = time.Since(f0)
	stats.Wall = time.Since(t0)
	res.Stats = *stats
	return res, nil
}

// loadCommitted reads the committed value of every key of the batch, split
// over the workers when there are enough keys to pay for the hand-off.
func (s *Scheduler) loadCommitted(slab []keyState, store Store) {
	load := func(part []keyState) {
		for i := range part {
			part[i].committed, part[i].committedOK = store.Get(part[i].key)
		}
	}
	if s.n == 1 || len(slab) < 4096 {
		load(slab)
		return
	}
	s.dispatch(func(w int) {
		lo, hi := len(slab)*w/s.n, len(slab)*(w+1)/s.n
		load(slab[lo:hi])
	})
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
	x.remaining.Store(int64(len(us.nParents)))
	x.claim.Store(0)
	for i := range x.lvlIdx {
		x.lvlIdx[i].Store(0)
	}
	var work func(w int)
	switch x.strat.Explore {
	case NS:
		x.q.reset()
		for u, n := range us.nParents {
			if n == 0 {
				x.q.items = append(x.q.items, int32(u))
			}
		}
		if len(us.nParents) == 0 {
			x.q.done = true
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
	for _, id := range x.us.ops[x.us.opStart[u]:x.us.opStart[u+1]] {
		x.execOp(w, id)
	}
}

// unchanged reports whether an executed operation would read what it read.
func (x *run) unchanged(o *opState) bool {
	if o.ks != nil && !x.read(o.ks, o.prevWriter, o.ts, o.txn).Equal(o.obs.Own) {
		return false
	}
	for i, ks := range o.readKS {
		if !x.read(ks, o.readPos[i], o.ts, o.txn).Equal(o.obs.Reads[i]) {
			return false
		}
	}
	for _, g := range o.obs.Gets {
		ks := x.lookup(g.Key, false)
		var v Value
		if ks == nil {
			v.Bytes, v.Found = x.store.Get(g.Key)
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
	for i, ks := range o.readKS {
		o.obs.Reads[i] = x.read(ks, o.readPos[i], o.ts, o.txn)
	}
	o.obs.Gets = o.obs.Gets[:0]
	a := &w.acc
	a.o, a.buf, a.err = o, a.buf[:0], nil
	var eff Effect
	var err error
	w.tick++
	if w.tick&7 == 0 {
		t := time.Now()
		eff, err = x.apply(int(o.txn), int(o.idx), o.op, a)
		w.useful += 8 * time.Since(t)
	} else {
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

// finish assembles the result from the fixed point.
func (x *run) finish() (*Result, error) {
	n := len(x.batch)
	res := &Result{Committed: make([]bool, n), obs: make([]Observed, len(x.ops)), first: x.first}
	// The result owns its values read: the plan's memory is reused.
	rv := make([]Value, 0, len(x.buf.vals))
	var firstErr *OpError
	for t := 0; t < n; t++ {
		ops := x.ops[x.first[t]:x.first[t+1]]
		stopAt := len(ops)
		for m := range ops {
			if ops[m].failed {
				stopAt = m
				if ops[m].err != nil && firstErr == nil {
					firstErr = &OpError{Txn: t, Op: m, Err: ops[m].err}
				}
				break
			}
		}
		res.Committed[t] = stopAt == len(ops)
		if !res.Committed[t] {
			res.Stats.Aborted++
		}
		for m := range ops {
			if m <= stopAt {
				o := &res.obs[int(x.first[t])+m]
				*o = ops[m].obs
				o.Executed = true
				start := len(rv)
				rv = append(rv, o.Reads...)
				o.Reads = rv[start:len(rv):len(rv)]
			}
		}
	}
	if firstErr != nil {
		return nil, firstErr
	}
	committed := func(txn int32) bool { return res.Committed[txn] }
	add := func(ks *keyState) {
		have := false
		var best uint64
		var c Change
		for p := ks.last; p >= 0; p = x.ops[p].prevWriter {
			w := &x.ops[p]
			if w.written && committed(w.txn) {
				have, best, c = true, w.ts, Change{Key: ks.key, Value: w.value, Delete: w.del}
				break
			}
		}
		for i := len(ks.nd) - 1; i >= 0; i-- {
			nv := &ks.nd[i]
			if have && nv.ts < best {
				break
			}
			if committed(nv.txn) {
				have, c = true, Change{Key: ks.key, Value: nv.value, Delete: nv.del}
				break
			}
		}
		if have {
			if c.Delete {
				c.Value = nil
			}
			res.Changes = append(res.Changes, c)
		}
	}
	res.Changes = make([]Change, 0, len(x.slab))
	for i := range x.slab {
		add(&x.slab[i])
	}
	planned := len(res.Changes)
	for _, m := range x.dyn {
		for _, ks := range m {
			add(ks)
		}
	}
	sortChanges(res.Changes[planned:])
	return res, nil
}

func sortChanges(c []Change) {
	slices.SortFunc(c, func(a, b Change) int {
		if a.Key.Table != b.Key.Table {
			return cmp.Compare(a.Key.Table, b.Key.Table)
		}
		return strings.Compare(a.Key.Key, b.Key.Key)
	})
}

// readyQueue holds the units ready to run under non-structured exploration.
type readyQueue struct {
	mu    sync.Mutex
	cond  sync.Cond
	items []int32
	done  bool
}

func (q *readyQueue) init() { q.cond.L = &q.mu }

func (q *readyQueue) reset() {
	q.mu.Lock()
	q.items, q.done = q.items[:0], false
	q.mu.Unlock()
}

func (q *readyQueue) push(u []int32) {
	q.mu.Lock()
	q.items = append(q.items, u...)
	q.mu.Unlock()
	if len(u) == 1 {
		q.cond.Signal()
	} else {
		q.cond.Broadcast()
	}
}

// pop waits for a ready unit; -1 when the pass is over.
func (q *readyQueue) pop() int32 {
	q.mu.Lock()
	defer q.mu.Unlock()
	for len(q.items) == 0 && !q.done {
		q.cond.Wait()
	}
	if len(q.items) == 0 {
		return -1
	}
	u := q.items[len(q.items)-1]
	q.items = q.items[:len(q.items)-1]
	return u
}

func (q *readyQueue) finish() {
	q.mu.Lock()
	q.done = true
	q.mu.Unlock()
	q.cond.Broadcast()
}

// barrier is a reusable barrier for n workers.
type barrier struct {
	mu    sync.Mutex
	cond  sync.Cond
	n     int
	count int
	gen   uint64
}

func (b *barrier) init(n int) { b.n, b.cond.L = n, &b.mu }

func (b *barrier) wait() {
	b.mu.Lock()
	g := b.gen
	b.count++
	if b.count == b.n {
		b.count, b.gen = 0, b.gen+1
		b.mu.Unlock()
		b.cond.Broadcast()
		return
	}
	for g == b.gen {
		b.cond.Wait()
	}
	b.mu.Unlock()
}
