package runtime

import (
	"context"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/tetratelabs/wazero/api"
)

// Tick bounds of the watchdog: it wakes every timeout/watchdogDivisions,
// clamped to [minTick, maxTick], while instances exist.
const (
	watchdogDivisions = 16
	minTick           = time.Millisecond
	maxTick           = 50 * time.Millisecond
)

// watchdog enforces the call timeout of one engine's instrumented
// instances: one goroutine that ticks while any instance exists, and at
// each tick raises the interrupt flag of every call past its deadline or
// whose context is done. A call arms its instance's watch with a deadline
// counted in ticks and disarms it when it returns, an atomic store and an
// atomic swap and no allocation, where a timer per call would cost a timer
// heap insertion and removal each time.
//
// Time is counted in the ticks the goroutine has seen, not read from the
// clock: a watchdog starved of CPU drops ticks and stops calls late, never
// early. A call is stopped between its timeout and its timeout plus two
// ticks after it started, or within a tick of its context being done.
type watchdog struct {
	tick time.Duration
	span int64        // ticks a call may run: ceil(timeout/tick) + 1, as a call starts part-way through a tick
	now  atomic.Int64 // ticks seen so far

	mu      sync.Mutex
	watches map[*watch]struct{} // every live instrumented instance
	wake    chan struct{}       // the set of watches became non-empty
	quit    chan struct{}
	done    chan struct{}
	stopped bool
}

func newWatchdog(timeout time.Duration) *watchdog {
	tick := min(max(timeout/watchdogDivisions, minTick), maxTick)
	d := &watchdog{
		tick:    tick,
		span:    int64((timeout+tick-1)/tick) + 1,
		watches: make(map[*watch]struct{}),
		wake:    make(chan struct{}, 1),
		quit:    make(chan struct{}),
		done:    make(chan struct{}),
	}
	go d.run()
	return d
}

// run ticks while there are watches, and sleeps otherwise.
func (d *watchdog) run() {
	defer close(d.done)
	for {
		d.mu.Lock()
		idle := len(d.watches) == 0
		d.mu.Unlock()
		if idle {
			select {
			case <-d.wake:
				continue
			case <-d.quit:
				return
			}
		}
		t := time.NewTicker(d.tick)
		for !idle {
			select {
			case <-t.C:
				idle = !d.scan(d.now.Add(1))
			case <-d.quit:
				t.Stop()
				return
			}
		}
		t.Stop()
	}
}

// scan raises the flag of every call past its deadline at tick now, or
// whose context is done. It reports whether any watch is left.
func (d *watchdog) scan(now int64) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	for w := range d.watches {
		w.check(now)
	}
	return len(d.watches) > 0
}

// deadline is the tick at which a call starting now must stop.
func (d *watchdog) deadline() int64 { return d.now.Load() + d.span }

// add starts watching an instance. It reports false once the watchdog is
// stopped (the engine is closing).
func (d *watchdog) add(w *watch) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.stopped {
		return false
	}
	d.watches[w] = struct{}{}
	if len(d.watches) == 1 {
		select {
		case d.wake <- struct{}{}:
		default:
		}
	}
	return true
}

func (d *watchdog) remove(w *watch) {
	d.mu.Lock()
	delete(d.watches, w)
	d.mu.Unlock()
}

// stop ends the goroutine and stops every call in progress: the engine is
// closing, and its instances are about to be closed under them.
func (d *watchdog) stop() {
	d.mu.Lock()
	if d.stopped {
		d.mu.Unlock()
		return
	}
	d.stopped = true
	for w := range d.watches {
		w.close()
	}
	d.mu.Unlock()
	close(d.quit)
	<-d.done
}

// watch is the deadline state of one instrumented instance.
//
// The calling goroutine arms it with one atomic store and disarms it with
// one atomic swap, no lock: a call's state word holds its deadline, a call
// number and the raised bit, and is 0 between calls. The watchdog raises a
// call's flag by setting the raised bit with a compare-and-swap on the
// state it judged, so that a call that ended meanwhile is never stopped in
// its successor's place; its mutex orders every write of the flag: the
// watchdog's raise, Close's raise and the lowering after a call. The guest
// reads the flag without it; a plain 64-bit store is seen by the running
// machine code at its next check.
type watch struct {
	flag api.MutableGlobal // the instance's interrupt flag

	// state is the call in progress: deadline<<deadlineShift |
	// number<<1 | raised, or 0.
	state atomic.Uint64
	// ctx is the context of the call in progress (or of an earlier call,
	// between calls), stored when it changes.
	ctx atomic.Pointer[watchContext]

	// Of the calling goroutine only.
	calls   uint64          // calls armed, for their numbers
	lastCtx context.Context // the context ctx holds

	mu     sync.Mutex
	closed bool // the instance is closed: the flag stays up
}

// watchContext holds a call's context, for atomic.Pointer.
type watchContext struct{ ctx context.Context }

// The layout of watch.state: the raised bit, the call number's low bits,
// then the deadline in ticks (44 bits: centuries of ticks).
const (
	raisedBit     = 1
	callBits      = 19
	deadlineShift = 1 + callBits
)

// arm starts watching a call with the given deadline (at least 1).
func (w *watch) arm(ctx context.Context, deadline int64) {
	if w.lastCtx == nil || !sameContextWords(ctx, w.lastCtx) {
		w.lastCtx = ctx
		w.ctx.Store(&watchContext{ctx})
	}
	w.calls++
	// A flag still up from an earlier call that was not disarmed stays
	// reported (a swap costs what a store does).
	if w.state.Swap(uint64(deadline)<<deadlineShift|(w.calls&(1<<callBits-1))<<1)&raisedBit != 0 {
		w.state.Or(raisedBit)
	}
}

// sameContextWords reports whether a and b hold the same type and data
// pointer: the same context, cheaply (different words may still be equal
// contexts, which only costs arm a store).
func sameContextWords(a, b context.Context) bool {
	x, y := (*[2]unsafe.Pointer)(unsafe.Pointer(&a)), (*[2]unsafe.Pointer)(unsafe.Pointer(&b))
	return x[0] == y[0] && x[1] == y[1]
}

// disarm ends a call, and reports whether the flag was raised during it. A
// flag raised too late to stop the guest is lowered for the next call.
func (w *watch) disarm() (raised bool) {
	if w.state.Swap(0)&raisedBit == 0 {
		return false
	}
	w.mu.Lock()
	if !w.closed {
		w.flag.Set(0)
	}
	w.mu.Unlock()
	return true
}

// check raises the flag if the call in progress is past its deadline at
// tick now or its context is done. The watchdog holds its own lock.
func (w *watch) check(now int64) {
	s := w.state.Load()
	if s == 0 || s&raisedBit != 0 {
		return
	}
	if now < int64(s>>deadlineShift) {
		if c := w.ctx.Load(); c == nil || c.ctx.Err() == nil {
			return
		}
	}
	w.mu.Lock()
	if w.state.CompareAndSwap(s, s|raisedBit) {
		w.flag.Set(1)
	}
	w.mu.Unlock()
}

// close raises the flag for good: a call in progress stops at its next
// check, and the instance is never called again.
func (w *watch) close() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return
	}
	w.closed = true
	w.flag.Set(1)
	for {
		s := w.state.Load()
		if s == 0 || s&raisedBit != 0 || w.state.CompareAndSwap(s, s|raisedBit) {
			return
		}
	}
}
