package join

import (
	"context"
	"sync/atomic"
)

// npj is the no-partitioning hash join: all workers build one shared
// bucket-chain table from R (lock-free: a bucket's head is swapped
// atomically, each entry written by the worker that owns its slot), then,
// after a barrier, each probes it with its slice of S.
type npj struct {
	workers int
	heads   []atomic.Uint32 // 1 + the entry at the head of each bucket's chain
	entries []npjEntry      // entry i is r[i], with its chain link
	outs    []out
	buf     lazyBuf
}

// npjEntry holds what a probe needs of an R tuple, so that a probe touches
// one cache line per candidate: the key, the time, the Ref and the next
// entry of the bucket (1+index, 0 ends the chain).
type npjEntry struct {
	key  uint64
	ts   int64
	ref  uint32
	next uint32
}

func newNPJ(o Options) *npj { return &npj{workers: o.Workers, outs: make([]out, o.Workers)} }

func (j *npj) Name() string { return "npj" }

func (j *npj) Add(_ context.Context, side Side, ts []Tuple, _ Emit) error { return j.buf.add(side, ts) }

func (j *npj) Close(ctx context.Context, emit Emit) error { return j.buf.closeWith(ctx, j.Join, emit) }

func (j *npj) Join(ctx context.Context, r, s []Tuple, emit Emit) error {
	if len(r) == 0 || len(s) == 0 {
		return ctx.Err()
	}
	n := ceilPow2(len(r))
	shift := 64 - log2(n) // a shift by 64 gives 0: one bucket
	mask := uint64(n - 1)
	if cap(j.heads) < n {
		j.heads = make([]atomic.Uint32, n)
	}
	heads := j.heads[:n]
	if cap(j.entries) < len(r) {
		j.entries = make([]npjEntry, len(r))
	}
	entries := j.entries[:len(r)]
	w := j.workers
	parallel(w, func(id int) {
		lo, hi := chunk(n, w, id)
		clear(heads[lo:hi])
	})
	parallel(w, func(id int) {
		lo, hi := chunk(len(r), w, id)
		for i := lo; i < hi; i++ {
			if check(ctx, i) {
				return
			}
			t := &r[i]
			b := (hash(t.Key) >> shift) & mask
			e := &entries[i]
			e.key, e.ts, e.ref = t.Key, t.TS, t.Ref
			e.next = heads[b].Swap(uint32(i + 1))
		}
	})
	if err := ctx.Err(); err != nil {
		return err
	}
	parallel(w, func(id int) {
		o := &j.outs[id]
		o.reset(id, emit)
		lo, hi := chunk(len(s), w, id)
		for i := lo; i < hi; i++ {
			if check(ctx, i) {
				return
			}
			t := &s[i]
			for e := heads[(hash(t.Key)>>shift)&mask].Load(); e != 0; {
				en := &entries[e-1]
				if en.key == t.Key {
					ts := en.ts
					if t.TS > ts {
						ts = t.TS
					}
					o.buf = append(o.buf, Match{R: en.ref, S: t.Ref, TS: ts})
					if len(o.buf) == cap(o.buf) {
						o.flush()
					}
				}
				e = en.next
			}
		}
		o.flush()
	})
	return ctx.Err()
}
