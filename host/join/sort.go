package join

import (
	"context"
	"slices"
)

// sortTuples sorts a by Key, stably, with tmp (len(tmp) >= len(a)) as
// scratch: a least-significant-digit radix sort on bytes that skips the
// bytes every key shares, so the small keys of most workloads take two or
// three passes. Small inputs take an insertion-free comparison sort.
func sortTuples(a, tmp []Tuple) {
	if len(a) < 256 {
		slices.SortStableFunc(a, func(x, y Tuple) int {
			switch {
			case x.Key < y.Key:
				return -1
			case x.Key > y.Key:
				return 1
			}
			return 0
		})
		return
	}
	var hist [8][256]int
	for i := range a {
		k := a[i].Key
		for d := range 8 {
			hist[d][byte(k>>(8*d))]++
		}
	}
	src, dst := a, tmp[:len(a)]
	for d := range 8 {
		h := &hist[d]
		if h[byte(a[0].Key>>(8*d))] == len(a) {
			continue // every key has the same byte here
		}
		off := 0
		for b := range 256 {
			c := h[b]
			h[b] = off
			off += c
		}
		sh := uint(8 * d)
		for i := range src {
			b := byte(src[i].Key >> sh)
			dst[h[b]] = src[i]
			h[b]++
		}
		src, dst = dst, src
	}
	if &src[0] != &a[0] {
		copy(a, src)
	}
}

// mergeJoin emits every pair of equal keys of the sorted a (R) and b (S).
func mergeJoin(ctx context.Context, a, b []Tuple, o *out) {
	i, j := 0, 0
	for n := 0; i < len(a) && j < len(b); n++ {
		if check(ctx, n) {
			return
		}
		ka, kb := a[i].Key, b[j].Key
		switch {
		case ka < kb:
			i++
		case ka > kb:
			j++
		default:
			i2 := i + 1
			for i2 < len(a) && a[i2].Key == ka {
				i2++
			}
			j2 := j + 1
			for j2 < len(b) && b[j2].Key == ka {
				j2++
			}
			for x := i; x < i2; x++ {
				for y := j; y < j2; y++ {
					o.add(&a[x], &b[y])
				}
			}
			i, j = i2, j2
		}
	}
}

// sortMerge is MWay and MPass: each worker sorts its slice of R and of S
// (a run each); the key space is then split into one range per worker at
// splitters sampled from the runs, and each worker merges its range of
// every run (MWay: one multi-way merge; MPass: successive two-way merges,
// a pass per halving of the number of runs) and merge-joins the two
// sorted sequences it gets.
//
// The study's MWay and MPass need a power-of-two thread count (their
// bitonic merge networks do); these merge any number of runs: a multi-way
// merge takes any k, and two-way passes carry an odd run over to the next
// pass. Ranges split on keys, so a key's tuples are in one range, and one
// heavy key makes its range long: the cost of skew here.
type sortMerge struct {
	name    string
	multi   bool // MWay: multi-way merge; MPass: two-way passes
	workers int
	rs, ss  []Tuple // the sorted runs
	tmp     []Tuple // radix scratch, len max(|R|, |S|)
	ws      []smWorker
	buf     lazyBuf
}

type smWorker struct {
	out
	mr, ms   []Tuple // the merged range of R and of S
	xr, xs   []Tuple // two-way passes' other buffers
	segs     [][]Tuple
	segsNext [][]Tuple
}

func newSortMerge(name string, multi bool, o Options) *sortMerge {
	return &sortMerge{name: name, multi: multi, workers: o.Workers, ws: make([]smWorker, o.Workers)}
}

func (j *sortMerge) Name() string { return j.name }

func (j *sortMerge) Add(_ context.Context, side Side, ts []Tuple, _ Emit) error {
	return j.buf.add(side, ts)
}

func (j *sortMerge) Close(ctx context.Context, emit Emit) error {
	return j.buf.closeWith(ctx, j.Join, emit)
}

func (j *sortMerge) Join(ctx context.Context, r, s []Tuple, emit Emit) error {
	if len(r) == 0 || len(s) == 0 {
		return ctx.Err()
	}
	w := j.workers
	j.rs = resizeTuples(j.rs, len(r))
	j.ss = resizeTuples(j.ss, len(s))
	j.tmp = resizeTuples(j.tmp, len(r)+len(s))
	copy(j.rs, r)
	copy(j.ss, s)
	// Sort the runs: worker id's slice of R and of S.
	parallel(w, func(id int) {
		lo, hi := chunk(len(r), w, id)
		sortTuples(j.rs[lo:hi], j.tmp[lo:hi])
		lo2, hi2 := chunk(len(s), w, id)
		sortTuples(j.ss[lo2:hi2], j.tmp[len(r)+lo2:len(r)+hi2])
	})
	if err := ctx.Err(); err != nil {
		return err
	}
	if w == 1 {
		o := &j.ws[0].out
		o.reset(0, emit)
		mergeJoin(ctx, j.rs, j.ss, o)
		o.flush()
		return ctx.Err()
	}
	split := j.splitters(len(r), len(s))
	parallel(w, func(id int) {
		ws := &j.ws[id]
		ws.reset(id, emit)
		var lo, hi uint64
		hasLo, hasHi := id > 0, id < w-1
		if hasLo {
			lo = split[id-1]
		}
		if hasHi {
			hi = split[id]
		}
		mr := j.mergeRange(ws, &ws.mr, &ws.xr, j.rs, w, lo, hi, hasLo, hasHi)
		ms := j.mergeRange(ws, &ws.ms, &ws.xs, j.ss, w, lo, hi, hasLo, hasHi)
		mergeJoin(ctx, mr, ms, &ws.out)
		ws.flush()
	})
	return ctx.Err()
}

// splitters returns w-1 increasing keys that cut the sorted runs into w
// ranges of about equal size: quantiles of a sample of every run.
func (j *sortMerge) splitters(nr, ns int) []uint64 {
	w := j.workers
	const perRun = 64
	sample := make([]uint64, 0, 2*w*perRun)
	for id := range w {
		for _, run := range [][]Tuple{runOf(j.rs, nr, w, id), runOf(j.ss, ns, w, id)} {
			for k := range perRun {
				if len(run) > 0 {
					sample = append(sample, run[k*len(run)/perRun].Key)
				}
			}
		}
	}
	slices.Sort(sample)
	split := make([]uint64, w-1)
	for i := range split {
		split[i] = sample[(i+1)*len(sample)/w]
	}
	return split
}

func runOf(a []Tuple, n, w, id int) []Tuple {
	lo, hi := chunk(n, w, id)
	return a[lo:hi]
}

// mergeRange merges the tuples with keys in [lo, hi) of the w sorted runs
// of a into *dst, with *scratch for two-way passes (no bound where has* is
// false). The two buffers are swapped when the result ends in scratch, so
// it is always *dst's.
func (j *sortMerge) mergeRange(ws *smWorker, dst, scratch *[]Tuple, a []Tuple, w int, lo, hi uint64, hasLo, hasHi bool) []Tuple {
	ws.segs = ws.segs[:0]
	total := 0
	for id := range w {
		run := runOf(a, len(a), w, id)
		b, e := 0, len(run)
		if hasLo {
			b, _ = slices.BinarySearchFunc(run, lo, cmpKey)
		}
		if hasHi {
			e, _ = slices.BinarySearchFunc(run, hi, cmpKey)
		}
		if e > b {
			ws.segs = append(ws.segs, run[b:e])
			total += e - b
		}
	}
	*dst = resizeTuples(*dst, total)
	if j.multi {
		mergeMulti(*dst, ws.segs)
		return *dst
	}
	*scratch = resizeTuples(*scratch, total)
	res := mergePasses(*dst, *scratch, ws)
	if total > 0 && &res[0] == &(*scratch)[0] {
		*dst, *scratch = *scratch, *dst
	}
	return res
}

func cmpKey(t Tuple, k uint64) int {
	switch {
	case t.Key < k:
		return -1
	case t.Key > k:
		return 1
	}
	return 0
}

// mergeMulti merges the sorted segs into dst (len(dst) = their total): a
// multi-way merge that picks the least head of the segments at each step,
// a scan of k heads, cheap for the few runs of a worker count.
func mergeMulti(dst []Tuple, segs [][]Tuple) {
	switch len(segs) {
	case 0:
		return
	case 1:
		copy(dst, segs[0])
		return
	case 2:
		merge2(dst, segs[0], segs[1])
		return
	}
	heads := make([]int, len(segs))
	for n := range dst {
		best := -1
		var bk uint64
		for i, s := range segs {
			if heads[i] < len(s) && (best < 0 || s[heads[i]].Key < bk) {
				best, bk = i, s[heads[i]].Key
			}
		}
		dst[n] = segs[best][heads[best]]
		heads[best]++
	}
}

// merge2 merges the sorted a and b into dst, a's tuples first among equal
// keys.
func merge2(dst, a, b []Tuple) {
	i, j, n := 0, 0, 0
	for i < len(a) && j < len(b) {
		if b[j].Key < a[i].Key {
			dst[n] = b[j]
			j++
		} else {
			dst[n] = a[i]
			i++
		}
		n++
	}
	n += copy(dst[n:], a[i:])
	copy(dst[n:], b[j:])
}

// mergePasses merges ws.segs by successive two-way merges, ping-ponging
// between dst and scratch (equal lengths, the segments' total), and
// returns the one that holds the result. An odd segment is carried to
// the next pass as it is.
func mergePasses(dst, scratch []Tuple, ws *smWorker) []Tuple {
	segs := ws.segs
	switch len(segs) {
	case 0:
		return dst[:0]
	case 1:
		copy(dst, segs[0])
		return dst
	}
	// The first pass reads the runs and writes into out; later passes read
	// the previous pass's buffer.
	out, other := dst, scratch
	for len(segs) > 1 {
		next := ws.segsNext[:0]
		off := 0
		for i := 0; i < len(segs); i += 2 {
			if i+1 == len(segs) {
				n := copy(out[off:], segs[i])
				next = append(next, out[off:off+n])
				off += n
				break
			}
			n := len(segs[i]) + len(segs[i+1])
			merge2(out[off:off+n], segs[i], segs[i+1])
			next = append(next, out[off:off+n])
			off += n
		}
		ws.segsNext = ws.segs[:0]
		ws.segs = next
		segs = next
		out, other = other, out
	}
	return segs[0]
}
