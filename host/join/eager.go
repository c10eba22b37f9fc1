package join

import (
	"context"
	"slices"
)

// eagerState is one worker's join state in an eager kernel: SHJ's two hash
// tables or PMJ's runs.
type eagerState interface {
	// add takes one tuple routed to this worker and emits what it joins.
	add(side Side, t *Tuple, o *out)
	// finish emits what is left at the window's end and resets the state.
	finish(ctx context.Context, o *out)
	// reserve sizes the state for r and s tuples per window, so the first
	// window does not grow its memory step by step (later windows reuse
	// what the ones before grew).
	reserve(r, s int)
}

// batchAdder is an eagerState that takes a worker's tuples of one call
// at once, as add would one by one, in order, with the same matches in
// the same order.
type batchAdder interface {
	addAll(side Side, ts []Tuple, o *out)
}

// eager runs an eager algorithm over its workers with JM or JB
// distribution.
//
// JM (join-matrix) replicates every R tuple to every worker and gives each
// S tuple to one worker, in turn: content-insensitive, so skew cannot
// unbalance it. JB (join-biclique) puts the workers into groups of Group
// (the last group takes the remainder when Group does not divide the
// worker count); an R tuple goes to every member of group key % groups and
// an S tuple to one member of it, in turn. Every pair then meets at
// exactly one worker: the one its S tuple went to. Each worker reads the
// whole of each call's tuples and keeps its own (JB's routing is content
// sensitive and that scan is its dispatch cost); within a call, a worker
// handles its tuples in order.
type eager struct {
	name    string
	workers int
	groups  int // 0: JM
	group   int // members per group (the last has the remainder)
	states  []eagerState
	outs    []out
	sSeen   uint64 // S tuples routed so far, for the turns
	// mine holds, for a batchAdder, each worker's tuples of a call that
	// does not go to every worker whole.
	mine [][]Tuple
}

func newEager(name string, o Options, jb bool, mk func() eagerState) *eager {
	e := &eager{name: name, workers: o.Workers, outs: make([]out, o.Workers), mine: make([][]Tuple, o.Workers)}
	if jb {
		g := min(max(o.Group, 1), o.Workers)
		e.group = g
		e.groups = o.Workers / g
	}
	for range o.Workers {
		st := mk()
		if o.Expected > 0 {
			st.reserve(e.shares(o.Expected))
		}
		e.states = append(e.states, st)
	}
	return e
}

// shares returns a worker's expected R and S tuples of a window with n
// tuples per side: all of R under JM, its group's share under JB, and its
// share of S.
func (e *eager) shares(n int) (r, s int) {
	if e.groups == 0 {
		return n, n / e.workers
	}
	return n / e.groups, n / e.workers
}

func (e *eager) Name() string { return e.name }

// members returns the first worker and the size of group q.
func (e *eager) members(q int) (first, n int) {
	first = q * e.group
	n = e.group
	if q == e.groups-1 {
		n = e.workers - first
	}
	return first, n
}

func (e *eager) Add(ctx context.Context, side Side, ts []Tuple, emit Emit) error {
	if side != R && side != S {
		return ErrSide
	}
	if len(ts) == 0 {
		return ctx.Err()
	}
	w := e.workers
	base := e.sSeen
	if side == S {
		e.sSeen += uint64(len(ts))
	}
	parallel(w, func(id int) {
		o := &e.outs[id]
		o.reset(id, emit)
		st := e.states[id]
		if ba, ok := st.(batchAdder); ok {
			ba.addAll(side, e.route(id, side, ts, base), o)
			o.flush()
			return
		}
		switch {
		case e.groups == 0 && side == R:
			for i := range ts {
				if check(ctx, i) {
					return
				}
				st.add(R, &ts[i], o)
			}
		case e.groups == 0:
			// Worker id takes the S tuples whose turn is id.
			first := (id - int(base%uint64(w)) + w) % w
			for i := first; i < len(ts); i += w {
				st.add(S, &ts[i], o)
			}
		default:
			q := min(id/e.group, e.groups-1)
			fm, n := e.members(q)
			g := uint64(e.groups)
			if side == R {
				for i := range ts {
					if ts[i].Key%g == uint64(q) {
						st.add(R, &ts[i], o)
					}
				}
				break
			}
			for i := range ts {
				if ts[i].Key%g == uint64(q) && int((base+uint64(i))%uint64(n)) == id-fm {
					st.add(S, &ts[i], o)
				}
			}
		}
		o.flush()
	})
	return ctx.Err()
}

// route returns worker id's tuples of ts, a call's tuples of side whose
// first S tuple is the base-th of the window: all of them, or a copy of
// its share in e.mine[id] (JM's S turns, JB's groups), in order.
func (e *eager) route(id int, side Side, ts []Tuple, base uint64) []Tuple {
	w := e.workers
	if e.groups == 0 && (side == R || w == 1) {
		return ts
	}
	mine := e.mine[id][:0]
	if e.groups == 0 {
		for i := (id - int(base%uint64(w)) + w) % w; i < len(ts); i += w {
			mine = append(mine, ts[i])
		}
	} else {
		q := min(id/e.group, e.groups-1)
		fm, n := e.members(q)
		g := uint64(e.groups)
		for i := range ts {
			if ts[i].Key%g == uint64(q) && (side == R || int((base+uint64(i))%uint64(n)) == id-fm) {
				mine = append(mine, ts[i])
			}
		}
	}
	e.mine[id] = mine
	return mine
}

func (e *eager) Close(ctx context.Context, emit Emit) error {
	e.sSeen = 0
	parallel(e.workers, func(id int) {
		o := &e.outs[id]
		o.reset(id, emit)
		e.states[id].finish(ctx, o)
		o.flush()
	})
	return ctx.Err()
}

// hashTable is a growable bucket-chain table of tuples for SHJ. An entry
// holds its chain link in the tuple's padding (npjEntry's layout), so a
// probe reads one cache line per candidate.
type hashTable struct {
	entries []npjEntry
	head    []uint32 // 1 + the first entry of each bucket, 0 for none
	shift   uint
}

func (h *hashTable) insert(t *Tuple) {
	if len(h.entries) >= len(h.head) {
		h.grow()
	}
	b := hash(t.Key) >> h.shift
	h.entries = append(h.entries, npjEntry{key: t.Key, ts: t.TS, ref: t.Ref, next: h.head[b]})
	h.head[b] = uint32(len(h.entries))
}

// insertAll inserts ts, at most probeBlock of them, as insert does one
// by one: their buckets' heads are loaded first, together (into scratch),
// so that the inserts find them in cache.
func (h *hashTable) insertAll(ts []Tuple, scratch *[probeBlock]uint32) {
	if len(h.entries)+len(ts) > len(h.head) {
		for i := range ts {
			h.insert(&ts[i])
		}
		return
	}
	for i := range ts {
		scratch[i] = h.head[hash(ts[i].Key)>>h.shift]
	}
	for i := range ts {
		t := &ts[i]
		b := hash(t.Key) >> h.shift
		h.entries = append(h.entries, npjEntry{key: t.Key, ts: t.TS, ref: t.Ref, next: h.head[b]})
		h.head[b] = uint32(len(h.entries))
	}
}

func (h *hashTable) grow() {
	n := max(2*len(h.head), 1024)
	h.head = make([]uint32, n)
	h.shift = 64 - log2(n)
	for i := range h.entries {
		b := hash(h.entries[i].key) >> h.shift
		h.entries[i].next = h.head[b]
		h.head[b] = uint32(i + 1)
	}
}

func (h *hashTable) reserve(n int) {
	if n <= cap(h.entries) {
		return
	}
	h.entries = append(make([]npjEntry, 0, n), h.entries...)
	if ceilPow2(n) > len(h.head) {
		h.head = make([]uint32, ceilPow2(n)/2)
		h.grow()
	}
}

func (h *hashTable) reset() {
	h.entries = h.entries[:0]
	clear(h.head)
}

// shj is the symmetric hash join's state: one table per side; a tuple is
// inserted into its side's table and probes the other's.
type shj struct {
	tabs [2]hashTable
}

func (j *shj) add(side Side, t *Tuple, o *out) { j.addAll(side, []Tuple{*t}, o) }

// probeBlock is how many tuples addAll looks up at once: their buckets'
// heads are loaded in one pass, with no dependency between the loads, so
// that the processor fetches their cache lines together rather than one
// miss after another, and likewise their first entries.
const probeBlock = 32

// addAll inserts ts into its side's table and then probes the other's
// with them: the inserts do not touch the table probed, so this is add
// for each tuple in turn, with the same matches in the same order.
func (j *shj) addAll(side Side, ts []Tuple, o *out) {
	own, other := &j.tabs[side], &j.tabs[1-side]
	var heads [probeBlock]uint32
	var keys [probeBlock]uint64
	for lo := 0; lo < len(ts); lo += probeBlock {
		blk := ts[lo:min(lo+probeBlock, len(ts))]
		own.insertAll(blk, &heads)
	}
	if len(other.head) == 0 {
		return
	}
	for lo := 0; lo < len(ts); lo += probeBlock {
		blk := ts[lo:min(lo+probeBlock, len(ts))]
		for i := range blk {
			heads[i] = other.head[hash(blk[i].Key)>>other.shift]
		}
		for i := range blk {
			if e := heads[i]; e != 0 {
				keys[i] = other.entries[e-1].key
			}
		}
		for i := range blk {
			t := &blk[i]
			for e, key := heads[i], keys[i]; e != 0; {
				c := &other.entries[e-1]
				if key == t.Key {
					m := Match{R: t.Ref, S: c.ref, TS: max(t.TS, c.ts)}
					if side == S {
						m.R, m.S = c.ref, t.Ref
					}
					o.buf = append(o.buf, m)
					if len(o.buf) == cap(o.buf) {
						o.flush()
					}
				}
				if e = c.next; e != 0 {
					key = other.entries[e-1].key
				}
			}
		}
	}
}

func (j *shj) reserve(r, s int) {
	j.tabs[R].reserve(r)
	j.tabs[S].reserve(s)
}

func (j *shj) finish(_ context.Context, _ *out) {
	j.tabs[0].reset()
	j.tabs[1].reset()
}

// pmj is the progressive merge join's state (Dittrich et al.): a worker
// collects its tuples of both sides until they make a run of runSize,
// sorts the run's R and S and merge-joins them at once; the runs are kept,
// and at the window's end all R runs and all S runs are merged and joined,
// emitting only the pairs of different runs (the others were emitted when
// their run formed). Kept tuples carry, in place of their Ref, their index
// into a side table of (Ref, run), so the sort and merge helpers work on
// plain Tuples.
type pmj struct {
	delta   float64 // a run's share of the tuples of a window
	runSize int     // delta of the last window's tuples (minRun at least)
	minRun  int
	seen    int // tuples of this window so far
	pend    [2][]Tuple
	tmp     []Tuple
	kept    [2][]Tuple   // every run, each sorted, one after another
	meta    [2][]pmjMeta // indexed by a kept tuple's Ref
	bounds  [2][]int     // the runs' ends in kept
	runs    int
	merged  [2][]Tuple
	segs    [][]Tuple
}

type pmjMeta struct {
	ref uint32
	run uint32
}

// pmjMinRun is the least size of a PMJ run, in tuples: a run is sorted and
// joined at once, and smaller runs cost more per tuple than they bring.
const pmjMinRun = 1024

func newPMJ(delta float64, expect, minRun int) *pmj {
	if minRun == 0 {
		minRun = pmjMinRun
	}
	j := &pmj{delta: delta, runSize: minRun, minRun: minRun}
	if expect > 0 {
		j.runSize = max(minRun, int(delta*float64(expect)))
	}
	return j
}

func (j *pmj) reserve(r, s int) {
	for side, n := range [2]int{r, s} {
		j.kept[side] = slices.Grow(j.kept[side], n)
		j.meta[side] = slices.Grow(j.meta[side], n)
		j.pend[side] = slices.Grow(j.pend[side], min(n, j.runSize))
	}
}

func (j *pmj) add(side Side, t *Tuple, o *out) {
	j.seen++
	j.pend[side] = append(j.pend[side], *t)
	if len(j.pend[0])+len(j.pend[1]) >= j.runSize {
		j.formRun(o)
	}
}

// formRun sorts the pending tuples into a run, joins its two sides and
// keeps them.
func (j *pmj) formRun(o *out) {
	for side := range 2 {
		p := j.pend[side]
		j.tmp = resizeTuples(j.tmp, len(p))
		sortTuples(p, j.tmp)
	}
	mergeJoin(context.Background(), j.pend[0], j.pend[1], o)
	for side := range 2 {
		for _, t := range j.pend[side] {
			j.meta[side] = append(j.meta[side], pmjMeta{ref: t.Ref, run: uint32(j.runs)})
			t.Ref = uint32(len(j.kept[side]))
			j.kept[side] = append(j.kept[side], t)
		}
		j.bounds[side] = append(j.bounds[side], len(j.kept[side]))
		j.pend[side] = j.pend[side][:0]
	}
	j.runs++
}

func (j *pmj) finish(ctx context.Context, o *out) {
	if len(j.pend[0])+len(j.pend[1]) > 0 {
		j.formRun(o)
	}
	if j.runs > 1 {
		for side := range 2 {
			j.segs = j.segs[:0]
			start := 0
			for _, end := range j.bounds[side] {
				j.segs = append(j.segs, j.kept[side][start:end])
				start = end
			}
			j.merged[side] = resizeTuples(j.merged[side], len(j.kept[side]))
			mergeMulti(j.merged[side], j.segs)
		}
		j.joinAcross(ctx, o)
	}
	for side := range 2 {
		j.kept[side], j.meta[side], j.bounds[side] = j.kept[side][:0], j.meta[side][:0], j.bounds[side][:0]
	}
	j.runs = 0
	if j.seen > 0 {
		j.runSize = max(j.minRun, int(j.delta*float64(j.seen)))
	}
	j.seen = 0
}

// joinAcross merge-joins the merged runs, emitting the pairs whose tuples
// came from different runs.
func (j *pmj) joinAcross(ctx context.Context, o *out) {
	a, b := j.merged[0], j.merged[1]
	ma, mb := j.meta[0], j.meta[1]
	i, k := 0, 0
	for n := 0; i < len(a) && k < len(b); n++ {
		if check(ctx, n) {
			return
		}
		ka, kb := a[i].Key, b[k].Key
		switch {
		case ka < kb:
			i++
		case ka > kb:
			k++
		default:
			i2 := i + 1
			for i2 < len(a) && a[i2].Key == ka {
				i2++
			}
			k2 := k + 1
			for k2 < len(b) && b[k2].Key == ka {
				k2++
			}
			for x := i; x < i2; x++ {
				rm := ma[a[x].Ref]
				for y := k; y < k2; y++ {
					sm := mb[b[y].Ref]
					if rm.run != sm.run {
						r := Tuple{TS: a[x].TS, Ref: rm.ref}
						s := Tuple{TS: b[y].TS, Ref: sm.ref}
						o.add(&r, &s)
					}
				}
			}
			i, k = i2, k2
		}
	}
}
