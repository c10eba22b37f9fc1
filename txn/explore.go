package txn

import (
	"runtime"
	"sync"
	"sync/atomic"
)

// The exploration loops share as little as they can: with a few workers on
// a few cores, a counter every worker updates for every unit moves its cache
// line between cores each time, and a lock with a condition variable puts
// workers to sleep and wakes them through the kernel. So units are claimed
// in chunks, a worker keeps the units it made ready on its own stack and
// hands some over only when another worker is idle, and completions are
// counted per worker and added up only when a worker runs out of work.

// paddedInt64 is an atomic counter on a cache line of its own.
type paddedInt64 struct {
	atomic.Int64
	_ [56]byte
}

// paddedInt32 is an atomic counter on a cache line of its own.
type paddedInt32 struct {
	atomic.Int32
	_ [60]byte
}

// maxChunk bounds how many units a worker claims at once.
const maxChunk = 32

// claim claims the next units of [0, n) from next and returns them as
// [lo, hi); lo >= n when none is left. Chunks shrink as the units run out
// (guided scheduling): large enough early on that claiming is cheap, small
// enough at the end that the workers finish together.
func claim(next *atomic.Int64, n int64, workers int) (lo, hi int64) {
	c := min(max((n-next.Load())/int64(4*workers), 1), maxChunk)
	lo = next.Add(c) - c
	return lo, min(lo+c, n)
}

// nsWork: non-structured exploration. A unit becomes ready when its last
// parent is done; the worker that finished that parent pushes it on its own
// stack and runs it next (depth first, no queue round trip). Units without
// parents are claimed in chunks, in timestamp order. When a worker finds
// nothing to run, it counts itself idle and waits on the shared queue; a busy
// worker that sees an idle one hands over the older half of its stack.
func (x *run) nsWork(wid int) {
	w := &x.workers[wid]
	us := x.us
	roots := x.roots
	nr := int64(len(roots))
	total := int64(us.count())
	local := w.local[:0]
	done := int64(0)
	for {
		if len(local) == 0 {
			if lo, hi := claim(&x.rootIdx.Int64, nr, x.nw); lo < nr {
				for i := hi - 1; i >= lo; i-- {
					local = append(local, roots[i])
				}
			} else {
				if done > 0 {
					if x.done.Add(done) == total {
						x.q.finish()
					}
					done = 0
				}
				u := x.q.pop(&x.idle.Int32)
				if u < 0 {
					break
				}
				local = append(local, u)
			}
		}
		if x.stop.Load() {
			x.q.finish()
			break
		}
		u := local[len(local)-1]
		local = local[:len(local)-1]
		x.execUnit(w, u)
		done++
		for _, c := range us.children[us.childStart[u]:us.childStart[u+1]] {
			if x.pending[c].Add(-1) == 0 {
				local = append(local, c)
			}
		}
		if len(local) > 1 && x.idle.Load() > 0 {
			h := len(local) / 2
			x.q.push(local[:h])
			local = local[:copy(local, local[h:])]
		}
	}
	w.local = local[:0]
}

// bfsWork: structured breadth-first exploration, a barrier between levels.
func (x *run) bfsWork(wid int) {
	w := &x.workers[wid]
	us := x.us
	for l := 0; l+1 < len(us.levelStart); l++ {
		level := us.order[us.levelStart[l]:us.levelStart[l+1]]
		n := int64(len(level))
		for !x.stop.Load() {
			lo, hi := claim(&x.lvlIdx[l].Int64, n, x.nw)
			if lo >= n {
				break
			}
			for _, u := range level[lo:hi] {
				x.execUnit(w, u)
			}
		}
		if x.nw > 1 {
			x.bar.wait()
		}
	}
}

// dfsWork: structured depth-ordered exploration without barriers. Units are
// claimed in level order, in chunks run in order; a worker waits for the
// parents of the unit it is at. The earliest unfinished unit has its parents
// done (they come before it in the order) and its worker is at it (a worker
// runs its chunk in order and claims another only when done with it), so the
// wait ends.
func (x *run) dfsWork(wid int) {
	w := &x.workers[wid]
	us := x.us
	n := int64(len(us.order))
	for !x.stop.Load() {
		lo, hi := claim(&x.claim.Int64, n, x.nw)
		if lo >= n {
			return
		}
		for _, u := range us.order[lo:hi] {
			for x.pending[u].Load() > 0 {
				if x.stop.Load() {
					return
				}
				runtime.Gosched()
			}
			x.execUnit(w, u)
			for _, c := range us.children[us.childStart[u]:us.childStart[u+1]] {
				x.pending[c].Add(-1)
			}
		}
	}
}

// readyQueue holds the units one worker hands over to idle ones under
// non-structured exploration.
type readyQueue struct {
	mu     sync.Mutex
	cond   sync.Cond
	items  []int32
	done   bool
	size   atomic.Int32 // len(items), read without the lock by spinning workers
	closed atomic.Bool  // done, read without the lock
}

func (q *readyQueue) init() { q.cond.L = &q.mu }

func (q *readyQueue) reset() {
	q.mu.Lock()
	q.items, q.done = q.items[:0], false
	q.size.Store(0)
	q.closed.Store(false)
	q.mu.Unlock()
}

func (q *readyQueue) push(u []int32) {
	q.mu.Lock()
	q.items = append(q.items, u...)
	q.size.Store(int32(len(q.items)))
	q.mu.Unlock()
	if len(u) == 1 {
		q.cond.Signal()
	} else {
		q.cond.Broadcast()
	}
}

// spinPops is how many times pop yields, watching the queue without the
// lock, before it sleeps: a hand-over usually follows within microseconds,
// sooner than the kernel wakes a sleeping thread.
const spinPops = 50

// pop waits for a unit; -1 when the pass is over. idle counts the workers
// waiting in pop, so busy ones know to hand work over.
func (q *readyQueue) pop(idle *atomic.Int32) int32 {
	idle.Add(1)
	for i := 0; i < spinPops && q.size.Load() == 0 && !q.closed.Load(); i++ {
		runtime.Gosched()
	}
	q.mu.Lock()
	for len(q.items) == 0 && !q.done {
		q.cond.Wait()
	}
	u := int32(-1)
	if n := len(q.items); n > 0 {
		u = q.items[n-1]
		q.items = q.items[:n-1]
		q.size.Store(int32(n - 1))
	}
	q.mu.Unlock()
	idle.Add(-1)
	return u
}

func (q *readyQueue) finish() {
	q.mu.Lock()
	q.done = true
	q.closed.Store(true)
	q.mu.Unlock()
	q.cond.Broadcast()
}

// barrier is a reusable barrier for n workers. Workers usually arrive
// within microseconds of each other (they share a level's units), so a
// waiter first spins on the generation, then sleeps.
type barrier struct {
	n     int32
	count paddedInt32
	gen   atomic.Uint32
	mu    sync.Mutex
	cond  sync.Cond
}

func (b *barrier) init(n int) { b.n, b.cond.L = int32(n), &b.mu }

// spinBarrier is how many times a waiter yields before it sleeps.
const spinBarrier = 100

func (b *barrier) wait() {
	g := b.gen.Load()
	if b.count.Add(1) == b.n {
		// Every other worker waits for the generation to change, so none
		// counts itself in the next round before the reset.
		b.count.Store(0)
		b.mu.Lock()
		b.gen.Add(1)
		b.mu.Unlock()
		b.cond.Broadcast()
		return
	}
	for i := 0; i < spinBarrier; i++ {
		if b.gen.Load() != g {
			return
		}
		runtime.Gosched()
	}
	b.mu.Lock()
	for b.gen.Load() == g {
		b.cond.Wait()
	}
	b.mu.Unlock()
}
