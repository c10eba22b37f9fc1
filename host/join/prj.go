package join

import (
	"context"
	"sync/atomic"
)

// prj is the parallel radix join: both inputs are partitioned on the top
// bits of their keys' hashes until an R partition fits in a core's cache,
// then each partition is joined on its own by one worker with a small
// bucket-chain table. No table is shared.
//
// The first pass partitions in parallel (a histogram per worker, a prefix
// sum, then each worker scatters its slice into its own ranges); when the
// radix bits are more than 8, each first-pass partition is partitioned
// again on the remaining bits by the worker that takes it, in a buffer of
// its own, and joined at once while it is in cache. The histograms count
// all the radix bits in the one read of the inputs, so the second pass
// reads a partition once, to scatter it. Workers take
// partitions from a shared counter, so a partition grown large by skewed
// keys does not hold the others back.
type prj struct {
	workers int
	bits    int // 0: chosen from |R|
	rOut    []Tuple
	sOut    []Tuple
	ws      []prjWorker
	buf     lazyBuf
}

// prjWorker is one worker's reused memory.
type prjWorker struct {
	out
	histR, histS []int   // counts on all the radix bits
	curR, curS   []int   // first-pass write cursors
	r2, s2       []Tuple // second-pass buffers
	cr, cs       []int   // second-pass partition bounds
	posR, posS   []int   // second-pass write cursors
	head         []uint32
	next         []uint32
}

// prjPartTuples is the R partition size PRJ aims at when it chooses the
// radix bits: 4,096 tuples of 24 bytes with their table, about 130 KB,
// inside a core's L2.
const prjPartTuples = 4096

func newPRJ(o Options) *prj {
	return &prj{workers: o.Workers, bits: o.RadixBits, ws: make([]prjWorker, o.Workers)}
}

func (j *prj) Name() string { return "prj" }

func (j *prj) Add(_ context.Context, side Side, ts []Tuple, _ Emit) error { return j.buf.add(side, ts) }

func (j *prj) Close(ctx context.Context, emit Emit) error { return j.buf.closeWith(ctx, j.Join, emit) }

// radixBits returns the bits PRJ partitions r on.
func (j *prj) radixBits(nr int) int {
	if j.bits > 0 {
		return j.bits
	}
	return min(int(log2(ceilPow2(nr/prjPartTuples))), 16)
}

func (j *prj) Join(ctx context.Context, r, s []Tuple, emit Emit) error {
	if len(r) == 0 || len(s) == 0 {
		return ctx.Err()
	}
	bits := j.radixBits(len(r))
	b1 := bits
	if bits > 8 {
		b1 = (bits + 1) / 2
	}
	b2 := bits - b1
	parts := 1 << b1
	shift1 := uint(64 - b1)
	w := j.workers
	if cap(j.rOut) < len(r) {
		j.rOut = make([]Tuple, len(r))
	}
	if cap(j.sOut) < len(s) {
		j.sOut = make([]Tuple, len(s))
	}
	rOut, sOut := j.rOut[:len(r)], j.sOut[:len(s)]
	for i := range j.ws {
		ws := &j.ws[i]
		ws.histR = resize(ws.histR, 1<<bits)
		ws.histS = resize(ws.histS, 1<<bits)
		ws.curR = resize(ws.curR, parts)
		ws.curS = resize(ws.curS, parts)
	}
	// Histograms on all the radix bits, in one read of the inputs: a
	// first-pass partition's count is the sum of its 1<<b2 bins, and the
	// second pass sums a partition's bins over the workers in place of
	// reading the partition once more.
	parallel(w, func(id int) {
		ws := &j.ws[id]
		histogram(ws.histR, runOf(r, len(r), w, id), uint(64-bits))
		histogram(ws.histS, runOf(s, len(s), w, id), uint(64-bits))
	})
	// Prefix sums: worker id's range of partition p starts after every
	// worker's part of the partitions before p and the lower workers' part
	// of p: its write cursor. startR/startS keep each partition's bounds.
	startR := make([]int, parts+1)
	startS := make([]int, parts+1)
	var offR, offS int
	for p := range parts {
		startR[p], startS[p] = offR, offS
		for id := range w {
			ws := &j.ws[id]
			ws.curR[p], ws.curS[p] = offR, offS
			for _, c := range ws.histR[p<<b2 : (p+1)<<b2] {
				offR += c
			}
			for _, c := range ws.histS[p<<b2 : (p+1)<<b2] {
				offS += c
			}
		}
	}
	startR[parts], startS[parts] = offR, offS
	// Scatter.
	parallel(w, func(id int) {
		ws := &j.ws[id]
		if scatter(ctx, rOut, runOf(r, len(r), w, id), ws.curR, shift1) {
			scatter(ctx, sOut, runOf(s, len(s), w, id), ws.curS, shift1)
		}
	})
	if err := ctx.Err(); err != nil {
		return err
	}
	// Join the partitions.
	var nextPart atomic.Int64
	parallel(w, func(id int) {
		ws := &j.ws[id]
		ws.reset(id, emit)
		for {
			p := int(nextPart.Add(1) - 1)
			if p >= parts || ctx.Err() != nil {
				break
			}
			pr := rOut[startR[p]:startR[p+1]]
			ps := sOut[startS[p]:startS[p+1]]
			if len(pr) == 0 || len(ps) == 0 {
				continue
			}
			if b2 == 0 {
				ws.joinPart(pr, ps, uint(b1))
				continue
			}
			ws.subPartition(ctx, pr, ps, j.ws, p, uint(b1), b2)
		}
		ws.flush()
	})
	return ctx.Err()
}

// subPartition partitions first-pass partition p (pr and ps) again on the
// next b2 bits of the hash (below the b1 already used), its counts the sum
// of its bins in all workers' histograms, and joins each piece.
func (ws *prjWorker) subPartition(ctx context.Context, pr, ps []Tuple, all []prjWorker, p int, b1 uint, b2 int) {
	parts := 1 << b2
	shift := 64 - b1 - uint(b2)
	ws.r2 = resizeTuples(ws.r2, len(pr))
	ws.s2 = resizeTuples(ws.s2, len(ps))
	ws.cr = resize(ws.cr, parts+1)
	ws.cs = resize(ws.cs, parts+1)
	cr, cs := ws.cr, ws.cs
	clear(cr)
	clear(cs)
	for i := range all {
		for q, c := range all[i].histR[p<<b2 : (p+1)<<b2] {
			cr[q+1] += c
		}
		for q, c := range all[i].histS[p<<b2 : (p+1)<<b2] {
			cs[q+1] += c
		}
	}
	for q := 1; q <= parts; q++ {
		cr[q] += cr[q-1]
		cs[q] += cs[q-1]
	}
	ws.posR = append(ws.posR[:0], cr[:parts]...)
	ws.posS = append(ws.posS[:0], cs[:parts]...)
	if !scatter(ctx, ws.r2, pr, ws.posR, shift) || !scatter(ctx, ws.s2, ps, ws.posS, shift) {
		return
	}
	for q := range parts {
		a, b := ws.r2[cr[q]:cr[q+1]], ws.s2[cs[q]:cs[q+1]]
		if len(a) > 0 && len(b) > 0 {
			ws.joinPart(a, b, b1+uint(b2))
		}
	}
}

// joinPart joins one partition with a bucket-chain table of its R tuples,
// bucketed on the hash bits below the used ones.
func (ws *prjWorker) joinPart(pr, ps []Tuple, used uint) {
	n := ceilPow2(len(pr))
	mask := uint64(n - 1)
	shift := 64 - used - log2(n)
	if used+log2(n) > 64 {
		shift = 0
	}
	ws.head = resizeU32(ws.head, n)
	ws.next = resizeU32(ws.next, len(pr))
	head, next := ws.head, ws.next[:len(pr)]
	clear(head)
	for i := range pr {
		b := hash(pr[i].Key) >> shift & mask
		next[i] = head[b]
		head[b] = uint32(i + 1)
	}
	for i := range ps {
		t := &ps[i]
		for e := head[hash(t.Key)>>shift&mask]; e != 0; e = next[e-1] {
			if pr[e-1].Key == t.Key {
				ws.add(&pr[e-1], t)
			}
		}
	}
}

// histogram sets h[p] to the number of tuples of a in partition p: the
// bits of their keys' hashes from shift up, below len(h) (a power of two).
func histogram(h []int, a []Tuple, shift uint) {
	clear(h)
	mask := uint64(len(h) - 1)
	for i := range a {
		h[hash(a[i].Key)>>shift&mask]++
	}
}

// scatter writes each tuple of a to dst at its partition's cursor in pos
// (as histogram partitions it, len(pos) partitions) and advances the
// cursor. It returns false, having stopped, when ctx is cancelled.
func scatter(ctx context.Context, dst, a []Tuple, pos []int, shift uint) bool {
	mask := uint64(len(pos) - 1)
	for lo := 0; lo < len(a); lo += 1 << 16 {
		if ctx.Err() != nil {
			return false
		}
		for _, t := range a[lo:min(lo+1<<16, len(a))] {
			p := hash(t.Key) >> shift & mask
			dst[pos[p]] = t
			pos[p]++
		}
	}
	return true
}

func resize(b []int, n int) []int {
	if cap(b) < n {
		return make([]int, n)
	}
	return b[:n]
}

func resizeU32(b []uint32, n int) []uint32 {
	if cap(b) < n {
		return make([]uint32, n)
	}
	return b[:n]
}

func resizeTuples(b []Tuple, n int) []Tuple {
	if cap(b) < n {
		return make([]Tuple, n)
	}
	return b[:n]
}
