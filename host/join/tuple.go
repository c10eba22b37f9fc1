package join

import (
	"context"
	"fmt"
)

// Tuple is one record of a side of a join as the kernels see it: fixed
// size, like the study's tuples, so that kernels move and sort them
// cheaply.
type Tuple struct {
	// Key is the join key, or a 64-bit hash of a byte key: two tuples
	// match when their Keys are equal, and a caller that hashed byte keys
	// checks the bytes of each match itself.
	Key uint64
	// TS is the tuple's event time (any unit, the same on both sides). A
	// match carries the later of its two inputs' times.
	TS int64
	// Ref is the caller's index of the record the tuple stands for.
	Ref uint32
}

// Match is one result of a join: the Refs of the R and the S tuple that
// matched and the later of their times.
type Match struct {
	R, S uint32
	TS   int64
}

// Side names one of a join's two inputs.
type Side uint8

// The two sides of a join. R is the side whose tuples JM and JB distribution
// replicate.
const (
	R Side = iota
	S
)

// String returns "R" or "S".
func (s Side) String() string {
	switch s {
	case R:
		return "R"
	case S:
		return "S"
	}
	return fmt.Sprintf("Side(%d)", uint8(s))
}

// Emit receives a kernel's matches. Each of a kernel's workers calls it
// with its own worker id (0..workers-1), and different workers call it
// concurrently; ms is only valid during the call (the kernel reuses it).
type Emit func(worker int, ms []Match)

// Kernel joins the two sides of one window after another. Every algorithm
// implements it: a caller hands each side's tuples to Add as they arrive,
// in as many calls as it likes, and calls Close when the window ends. An
// eager kernel emits the matches of the tuples it has as it goes; a lazy
// one buffers and joins at Close. After Close the kernel is ready for the
// next window and reuses its buffers. A Kernel is driven by one goroutine
// at a time; it runs its own workers inside each call.
type Kernel interface {
	// Name is the algorithm's name in the registry (npj, shj-jm, ...).
	Name() string
	// Add gives the kernel tuples of one side, in event-time order within
	// the call; the kernel copies what it keeps.
	Add(ctx context.Context, side Side, ts []Tuple, emit Emit) error
	// Close ends the window: every match not yet emitted is emitted before
	// it returns, and the kernel is reset for the next window.
	Close(ctx context.Context, emit Emit) error
}

// Lazy is a kernel that joins a whole window at once: NPJ, PRJ, MWay and
// MPass. Join neither keeps nor changes r and s, and is independent of
// Add and Close (a window's buffered tuples are not part of it).
type Lazy interface {
	Kernel
	Join(ctx context.Context, r, s []Tuple, emit Emit) error
}

// outBatch is the number of matches a worker collects before it calls
// Emit.
const outBatch = 1024

// out collects one worker's matches and hands them to Emit in batches.
type out struct {
	buf    []Match
	worker int
	emit   Emit
	n      uint64 // matches emitted through this out, for the kernels' counts
}

func (o *out) reset(worker int, emit Emit) {
	if o.buf == nil {
		o.buf = make([]Match, 0, outBatch)
	}
	o.buf = o.buf[:0]
	o.worker, o.emit = worker, emit
}

func (o *out) add(r, s *Tuple) {
	ts := r.TS
	if s.TS > ts {
		ts = s.TS
	}
	o.buf = append(o.buf, Match{R: r.Ref, S: s.Ref, TS: ts})
	if len(o.buf) == cap(o.buf) {
		o.flush()
	}
}

func (o *out) flush() {
	if len(o.buf) > 0 {
		o.n += uint64(len(o.buf))
		o.emit(o.worker, o.buf)
		o.buf = o.buf[:0]
	}
}

// hash mixes a key for the hash tables and partitions: keys that are small
// integers (the generators' and many users') would otherwise fill the
// buckets of their low bits only. The high bits of the product are the
// well-mixed ones.
func hash(k uint64) uint64 {
	k ^= k >> 33
	k *= 0xff51afd7ed558ccd
	k ^= k >> 33
	return k
}

// ceilPow2 returns the least power of two >= n (1 for n <= 1).
func ceilPow2(n int) int {
	p := 1
	for p < n {
		p <<= 1
	}
	return p
}

// log2 returns log2 of the power of two p.
func log2(p int) uint {
	var b uint
	for p > 1 {
		p >>= 1
		b++
	}
	return b
}

// chunk returns the bounds of part i of n items split in parts nearly
// equal parts.
func chunk(n, parts, i int) (lo, hi int) {
	return n * i / parts, n * (i + 1) / parts
}
