package txn

import (
	"fmt"
	"hash/maphash"
	"math"
	"sync/atomic"
)

// edgeKind is the kind of a TPG edge, in the order that claims a duplicate.
type edgeKind uint8

const (
	edgeTemporal edgeKind = iota
	edgeParametric
	edgeNonDet
)

type edge struct {
	from, to int32
	kind     edgeKind
}

// keyState holds one key's versions for the batch.
//
// Invariants: last is the latest deterministic writer of the key, and each
// writer's prevWriter the one before it (timestamp order), fixed after
// planning; each writer owns its version (in its
// opState) and is the only one to change it. nd holds the versions written by
// non-deterministic operations, sorted by timestamp; it changes only while a
// non-deterministic operation on the key's table runs, and that operation is
// ordered against every other operation touching the table, so nd needs no
// lock.
type keyState struct {
	key         Key
	committed   []byte
	committedOK bool
	last        int32 // latest deterministic writer, -1 if none
	nd          []ndVersion
	chain       int32 // index of the key's chain, -1 without writers
	writes      int32 // deterministic writers: the length of its chain

	unit      int32 // plan scratch for chain units, -1 until assigned
	unitEpoch int32
}

type ndVersion struct {
	ts    uint64
	txn   int32
	value []byte
	del   bool
}

// opState is one TPG vertex and its version.
//
// Fields after "results" are written only by the worker executing the
// operation; the TPG orders every reader after it.
type opState struct {
	ts         uint64
	txn        int32
	idx        int32
	op         *Op
	ks         *keyState // own key; nil when non-deterministic
	prevWriter int32     // previous writer of the own key, -1 if none
	epoch      int32     // non-deterministic barriers on the own table before it
	r0         int32     // its reads are the plan's readKS[r0:], readPos[r0:]

	// results
	written  bool // holds a version (executed, not failed, not Keep)
	failed   bool // aborted or errored
	del      bool
	executed bool
	obs      *Observed // in the plan's obs, which becomes the Result's
	value    []byte
	err      error
	ndWrites []*keyState
}

// plan is a batch's TPG.
//
// Its slices other than first, obs and vals live in a planBuf and are
// reused by the next batch: nothing a Result keeps may alias them. The
// operations record what they read straight into obs and vals, which the
// Result takes over, so that assembling it copies nothing.
type plan struct {
	batch      []Txn
	ops        []opState
	first      []int32    // first[i]: id of transaction i's op 0; first[n] = len(ops)
	obs        []Observed // per operation: what it read (owned by the Result)
	vals       []Value    // the values of every Observed.Reads (owned by the Result)
	nparts     int        // key partitions: one per worker that plans
	seed       maphash.Seed
	tabs       []keyTable                      // per partition
	slabs      [][]keyState                    // per partition: its keys in order of first appearance
	keyOrder   []*keyState                     // the batch's keys in order of first appearance
	readKS     []*keyState                     // per read: the key's state
	readPos    []int32                         // per read: the key's latest writer before the reader, -1 if none
	chainIDs   int                             // chain ids are below: partition w numbers w, w+nparts, ...
	nd         bool                            // the batch has non-deterministic operations
	dyn        map[uint32]map[string]*keyState // keys created by non-det ops, per table
	edges      []edge
	nParents   []int32 // per operation
	childStart []int32 // children of operation i: children[childStart[i]:childStart[i+1]]
	children   []int32
	counts     Counts
	buf        *planBuf
}

// planBuf is memory a Scheduler keeps from batch to batch, so that a batch
// of the same size allocates little: the TPG, the key tables, the unit graph
// and the per-batch state of a run. A batch takes what it needs and grows
// it; nothing in it survives the batch.
type planBuf struct {
	seed           maphash.Seed
	ops            []opState
	tabs           []keyTable
	slabs          [][]keyState
	outKS          [][]*keyState // per partition: the key of each access it owns
	outPos         [][]int32     // per partition: the key's latest writer before it
	keyOrder       []*keyState
	wh, rh         []uint64 // hash of each operation's own key (0: none), of each read
	wk, rk         []Key    // each operation's own key, each read key: phase 2 reads them in order
	rstart         []int32  // per operation: index of its first read
	rangeID        []int32  // per transaction range: id of its first operation
	rangeR         []int32  // per transaction range: index of its first read
	partCnt        []int32  // per transaction range and partition: accesses
	logical        []int
	chains         []int32    // per partition: chains
	maxChain       []int32    // per partition: the longest chain
	loadErr        []error    // per partition: the first Store error
	loadK          [][]Key    // per partition: the keys to load from a BatchStore
	loadH          [][]uint64 // per partition: their hashes
	loadV          [][]Value  // per partition: their committed values
	cursor         []int32
	edges          []edge
	readKS         []*keyState
	readPos, stamp []int32
	nParents       []int32
	childStart     []int32
	children       []int32
	fill           []int32
	tables         []tableScratch
	touched        []uint32

	// units
	unitOf, uStart, uOps, uFill []int32
	uStamp, uNParents           []int32
	uChildStart, uChildren      []int32
	uEdges                      []edge
	level, indeg, order, lstart []int32
	roots                       []int32
	tj                          tarjanBuf

	// run
	failCount []atomic.Int32
	pending   []atomic.Int32
	hidden    []bool
}

func newPlanBuf() *planBuf { return &planBuf{seed: maphash.MakeSeed()} }

// reuse returns s resized to n zero elements, reallocated only if too small.
func reuse[T any](s []T, n int) []T {
	s = grow(s, n)
	clear(s)
	return s
}

// grow returns s resized to n elements, reallocated only if too small; the
// elements keep whatever they held.
func grow[T any](s []T, n int) []T {
	if cap(s) < n {
		return make([]T, n, n+n/8)
	}
	return s[:n]
}

func makeTS(txn, op int) uint64 { return uint64(txn)<<32 | uint64(op) }

// tableScratch tracks the non-deterministic barriers of one table while a
// plan is built. Only tables that some non-deterministic operation of the
// batch is scoped to have one: no other table has barriers.
type tableScratch struct {
	table   uint32
	lastND  int32   // latest non-deterministic operation on the table
	sinceND []int32 // operations touching the table since lastND
	epoch   int32   // barriers so far
}

// parallelPlanMin is the number of operations from which the plan is built
// on the workers: below it, handing the phases over costs more than they do.
const parallelPlanMin = 2048

// created marks, in outPos, the access that added its key to the batch.
const created = -2

// buildPlan builds the TPG of a batch and, when store is not nil, loads the
// committed value of every key; a Store error fails it (a *StoreError).
//
// buf, when not nil, lends memory from an earlier batch; the plan's memory
// stays in it, for the next batch. The keys are split by hash into nparts
// partitions; dispatch, when not nil, runs a function on nparts workers
// (w in [0, nparts)) and waits for them.
//
// The build has three phases, each a pass over the operations in timestamp
// order:
//
//  1. by transaction range, on every worker: set up the vertices, and hash
//     and list every key access;
//  2. by key partition, on every worker: intern the keys the partition owns
//     in its own table, load their committed values, and record for each of
//     its accesses the key's state and its latest earlier writer (the key's
//     chain is built as a side effect, and numbered);
//  3. on one thread: gather those records in access order into the
//     vertices, and add each edge with its kind, deduplicated per target (an
//     operation's edges are all added while it is visited), counting the
//     CSR of children as it goes. Barrier bookkeeping is done only for the
//     tables that a non-deterministic operation of the batch is scoped to.
//
// Phase 2 is where the time goes (a key lookup is a cache miss or two, and
// so is a committed value), and partitioning it needs no lock: a key belongs
// to one worker. Phase 3 only streams through arrays.
func buildPlan(batch []Txn, buf *planBuf, store Store, nparts int, dispatch func(func(w int))) (*plan, error) {
	if buf == nil {
		buf = newPlanBuf()
	}
	nparts = max(nparts, 1)
	if len(batch) >= math.MaxInt32 {
		return nil, fmt.Errorf("%w: %d transactions is too many", ErrInvalidBatch, len(batch))
	}
	rangeID := grow(buf.rangeID, nparts+1)
	rangeR := grow(buf.rangeR, nparts+1)
	buf.rangeID, buf.rangeR = rangeID, rangeR
	nOps, nReads, nd := 0, 0, false
	w := 0
	for t := range batch {
		for w < nparts && t == len(batch)*w/nparts {
			rangeID[w], rangeR[w] = int32(nOps), int32(nReads)
			w++
		}
		ops := batch[t].Ops
		if len(ops) > math.MaxInt32 {
			return nil, fmt.Errorf("%w: transaction %d has too many operations", ErrInvalidBatch, t)
		}
		nOps += len(ops)
		for j := range ops {
			nReads += len(ops[j].Reads)
			nd = nd || ops[j].NonDet
		}
		if nOps+nReads >= math.MaxInt32 {
			return nil, fmt.Errorf("%w: more than %d operations and reads", ErrInvalidBatch, math.MaxInt32)
		}
	}
	for ; w <= nparts; w++ {
		rangeID[w], rangeR[w] = int32(nOps), int32(nReads)
	}
	buf.ops = grow(buf.ops, nOps)
	buf.wh = grow(buf.wh, nOps)
	buf.rh = grow(buf.rh, nReads)
	buf.wk = grow(buf.wk, nOps)
	buf.rk = grow(buf.rk, nReads)
	buf.rstart = grow(buf.rstart, nOps+1)
	buf.rstart[nOps] = int32(nReads)
	buf.readKS = grow(buf.readKS, nReads)
	buf.readPos = grow(buf.readPos, nReads)
	buf.partCnt = reuse(buf.partCnt, nparts*nparts)
	buf.logical = reuse(buf.logical, nparts)
	buf.chains = reuse(buf.chains, nparts)
	buf.maxChain = reuse(buf.maxChain, nparts)
	buf.tabs = grow(buf.tabs, nparts)
	buf.slabs = grow(buf.slabs, nparts)
	buf.outKS = grow(buf.outKS, nparts)
	buf.outPos = grow(buf.outPos, nparts)
	seed := buf.seed
	if bs, ok := store.(BatchStore); ok {
		// Hash with the store's seed: the store then looks the keys up
		// by the plan's hashes instead of hashing them again.
		seed = bs.Seed()
		buf.loadK, buf.loadH, buf.loadV = grow(buf.loadK, nparts), grow(buf.loadH, nparts), grow(buf.loadV, nparts)
	}
	p := &plan{
		batch:   batch,
		ops:     buf.ops,
		first:   make([]int32, len(batch)+1),
		obs:     make([]Observed, nOps),
		readKS:  buf.readKS,
		readPos: buf.readPos,
		vals:    make([]Value, nReads),
		nparts:  nparts,
		seed:    seed,
		tabs:    buf.tabs,
		slabs:   buf.slabs,
		nd:      nd,
		buf:     buf,
	}
	p.first[len(batch)] = int32(nOps)
	if nd {
		p.dyn = map[uint32]map[string]*keyState{}
		p.ndTables()
	}
	run := func(f func(w int)) {
		if dispatch != nil && nOps >= parallelPlanMin {
			dispatch(f)
			return
		}
		for w := 0; w < nparts; w++ {
			f(w)
		}
	}
	run(p.setUp)
	buf.loadErr = reuse(buf.loadErr, nparts)
	run(func(w int) { p.intern(w, store) })
	for _, err := range buf.loadErr[:nparts] {
		if err != nil {
			clear(buf.loadErr)
			return nil, err
		}
	}
	p.link()
	return p, nil
}

// setUp is phase 1 for transaction range w: it sets up the range's
// vertices and hashes its key accesses, counting them per partition.
func (p *plan) setUp(w int) {
	b := p.buf
	n, np := len(p.batch), p.nparts
	id, r := b.rangeID[w], b.rangeR[w]
	cnt := make([]int32, np) // this range's accesses per partition
	logical := 0
	for t := n * w / np; t < n*(w+1)/np; t++ {
		p.first[t] = id
		ops := p.batch[t].Ops
		logical += max(len(ops)-1, 0)
		for m := range ops {
			op := &ops[m]
			nr := int32(len(op.Reads))
			b.rstart[id] = r
			p.ops[id] = opState{
				ts: makeTS(t, m), txn: int32(t), idx: int32(m), op: op, prevWriter: -1, r0: r,
				obs: &p.obs[id],
			}
			p.obs[id].Reads = p.vals[r : r+nr : r+nr]
			if op.Window > 0 && nr > 0 {
				p.obs[id].Windows = make([][]Version, nr)
			}
			h := uint64(0)
			if !op.NonDet {
				h = KeyHash(p.seed, op.Write)
				cnt[partOf(h, np)]++
				b.wk[id] = op.Write
			}
			b.wh[id] = h
			for i, k := range op.Reads {
				h := KeyHash(p.seed, k)
				b.rh[r+int32(i)] = h
				b.rk[r+int32(i)] = k
				cnt[partOf(h, np)]++
			}
			r += nr
			id++
		}
	}
	copy(b.partCnt[w*np:(w+1)*np], cnt)
	b.logical[w] = logical
}

// intern is phase 2 for partition w: it interns the keys the partition
// owns, loads their committed values from store (when not nil) and records,
// for each access it owns in access order, the key's state and its latest
// earlier writer (created for the access that added the key). A BatchStore
// loads the partition's keys in one call at the end, by their hashes.
func (p *plan) intern(w int, store Store) {
	bs, batched := store.(BatchStore)
	var hashes []uint64
	if batched {
		hashes = p.buf.loadH[w][:0]
		store = nil
	}
	b := p.buf
	np := p.nparts
	n := 0
	for v := 0; v < np; v++ {
		n += int(b.partCnt[v*np+w])
	}
	tab := &b.tabs[w]
	tab.reset(n)
	slab := grow(b.slabs[w], n)[:0]
	room := cap(slab)
	outKS, outPos := grow(b.outKS[w], n), grow(b.outPos[w], n)
	wh, rh, rstart, wk, rk := b.wh, b.rh, b.rstart, b.wk, b.rk
	k, chains, longest := 0, int32(0), int32(0)
	var loadErr error
	for id := int32(0); id < int32(len(p.ops)); id++ {
		r0, r1 := rstart[id], rstart[id+1]
		var own *keyState
		if h := wh[id]; h != 0 && partOf(h, np) == w {
			own, outPos[k] = internKey(tab, &slab, wk[id], h, store, &loadErr)
			if batched && outPos[k] == created {
				hashes = append(hashes, h)
			}
			outKS[k] = own
			k++
		}
		for r := r0; r < r1; r++ {
			if h := rh[r]; partOf(h, np) == w {
				outKS[k], outPos[k] = internKey(tab, &slab, rk[r], h, store, &loadErr)
				if batched && outPos[k] == created {
					hashes = append(hashes, h)
				}
				k++
			}
		}
		if own != nil {
			if own.last < 0 {
				own.chain = chains*int32(np) + int32(w)
				chains++
			}
			own.last = id
			own.writes++
			longest = max(longest, own.writes)
		}
	}
	if cap(slab) != room {
		panic("txn: internal error: key slab reallocated while planning")
	}
	if batched {
		loadErr = p.load(w, bs, slab, hashes)
	}
	b.slabs[w], b.outKS[w], b.outPos[w] = slab, outKS, outPos
	b.chains[w] = chains
	b.maxChain[w] = longest
	b.loadErr[w] = loadErr
}

// load loads the committed values of the partition's keys, slab (whose
// hashes are hashes), from bs in one call, and returns the store's error.
func (p *plan) load(w int, bs BatchStore, slab []keyState, hashes []uint64) error {
	b := p.buf
	keys, vals := grow(b.loadK[w], len(slab)), grow(b.loadV[w], len(slab))
	for i := range slab {
		keys[i] = slab[i].key
	}
	failed, err := bs.GetBatch(keys, hashes, vals)
	for i := range slab {
		slab[i].committed, slab[i].committedOK = vals[i].Bytes, vals[i].Found
	}
	clear(keys) // the keys and values are the batch's: keep nothing alive
	clear(vals)
	b.loadK[w], b.loadH[w], b.loadV[w] = keys, hashes, vals
	if err != nil {
		return &StoreError{Key: slab[failed].key, Err: err}
	}
	return nil
}

// internKey returns the state of k (hash h) and its latest writer so far,
// or created if the key is new; a new key's committed value is loaded from
// store, and *loadErr receives the first error of the Store. slab has room
// for every key of the partition.
func internKey(tab *keyTable, slab *[]keyState, k Key, h uint64, store Store, loadErr *error) (*keyState, int32) {
	i, added := tab.intern(k, h, slab)
	ks := &(*slab)[i]
	if !added {
		return ks, ks.last
	}
	ks.last, ks.chain, ks.unit, ks.writes = -1, -1, -1, 0
	if store != nil {
		var err error
		ks.committed, ks.committedOK, err = store.Get(k)
		if err != nil && *loadErr == nil {
			*loadErr = &StoreError{Key: k, Err: err}
		}
	}
	return ks, created
}

// link is phase 3: it gathers the partitions' records into the vertices in
// access order, lists the keys in order of first appearance, and builds the
// edges and the CSR of children.
func (p *plan) link() {
	b, np := p.buf, p.nparts
	nOps := len(p.ops)
	nKeys := 0
	for w := 0; w < np; w++ {
		nKeys += len(b.slabs[w])
		p.counts.Logical += b.logical[w]
		p.counts.Chains += int(b.chains[w])
		p.counts.MaxChain = max(p.counts.MaxChain, int(b.maxChain[w]))
		p.chainIDs = max(p.chainIDs, int(b.chains[w])*np)
	}
	cur := reuse(b.cursor, np)
	b.cursor = cur
	b.stamp = reuse(b.stamp, nOps)
	p.nParents = reuse(b.nParents, nOps)
	p.childStart = reuse(b.childStart, nOps+1)
	b.nParents, b.childStart = p.nParents, p.childStart
	p.edges = grow(b.edges, nOps+len(b.rh))[:0]
	keyOrder := grow(b.keyOrder, nKeys)[:0]
	wh, rh, rstart, readKS, readPos := b.wh, b.rh, b.rstart, b.readKS, b.readPos
	outKS, outPos := b.outKS, b.outPos
	for id := int32(0); id < int32(nOps); id++ {
		o := &p.ops[id]
		if h := wh[id]; h != 0 {
			q := partOf(h, np)
			c := cur[q]
			cur[q]++
			ks, pw := outKS[q][c], outPos[q][c]
			o.ks = ks
			if pw >= 0 {
				o.prevWriter = pw
				p.add(pw, id, edgeTemporal)
			} else if pw == created {
				keyOrder = append(keyOrder, ks)
			}
		}
		for r := rstart[id]; r < rstart[id+1]; r++ {
			q := partOf(rh[r], np)
			c := cur[q]
			cur[q]++
			ks, pos := outKS[q][c], outPos[q][c]
			readKS[r] = ks
			if pos == created {
				keyOrder = append(keyOrder, ks)
				pos = -1
			}
			readPos[r] = pos
			if pos >= 0 {
				p.add(pos, id, edgeParametric)
			}
		}
		if p.nd {
			p.barriers(o.op, id)
			if o.ks != nil {
				if sc := p.scratchOf(o.op.Write.Table); sc != nil {
					o.epoch = sc.epoch
				}
			}
		}
	}
	p.keyOrder, b.keyOrder = keyOrder, keyOrder
	b.edges = p.edges
	p.counts.Txns, p.counts.Ops, p.counts.Keys = len(p.batch), nOps, nKeys
	// Children in CSR form: childStart holds the counts, shifted by one.
	cs := p.childStart
	for i := 0; i < nOps; i++ {
		cs[i+1] += cs[i]
	}
	b.children = grow(b.children, len(p.edges))
	b.fill = grow(b.fill, nOps)
	p.children = b.children
	fill := b.fill
	copy(fill, cs[:nOps])
	for _, e := range p.edges {
		p.children[fill[e.from]] = e.to
		fill[e.from]++
	}
}

// add records the edge from -> to unless it already exists. An operation's
// incoming edges are all added while it is visited, so stamp[from] == to+1
// finds a duplicate; the kind added first (temporal, then parametric, then
// non-deterministic) claims it.
func (p *plan) add(from, to int32, kind edgeKind) {
	if p.buf.stamp[from] == to+1 {
		return
	}
	p.buf.stamp[from] = to + 1
	p.edges = append(p.edges, edge{from, to, kind})
	p.nParents[to]++
	p.childStart[from+1]++
	switch kind {
	case edgeTemporal:
		p.counts.Temporal++
	case edgeParametric:
		p.counts.Parametric++
	case edgeNonDet:
		p.counts.NonDet++
	}
}

// ndTables prepares the barrier bookkeeping of every table a
// non-deterministic operation of the batch is scoped to, and its map of
// keys created at run time.
func (p *plan) ndTables() {
	tabs := p.buf.tables[:0]
	for i := range p.batch {
		for j := range p.batch[i].Ops {
			op := &p.batch[i].Ops[j]
			if !op.NonDet {
				continue
			}
			seen := false
			for k := range tabs {
				seen = seen || tabs[k].table == op.Table
			}
			if !seen {
				p.dyn[op.Table] = map[string]*keyState{}
				if len(tabs) < cap(tabs) {
					tabs = tabs[:len(tabs)+1]
					sc := &tabs[len(tabs)-1]
					sc.table, sc.lastND, sc.sinceND, sc.epoch = op.Table, -1, sc.sinceND[:0], 0
				} else {
					tabs = append(tabs, tableScratch{table: op.Table, lastND: -1})
				}
			}
		}
	}
	p.buf.tables = tabs
}

// scratchOf returns the barrier bookkeeping of table t, nil if no
// non-deterministic operation of the batch is scoped to it.
func (p *plan) scratchOf(t uint32) *tableScratch {
	for i := range p.buf.tables {
		if p.buf.tables[i].table == t {
			return &p.buf.tables[i]
		}
	}
	return nil
}

// barriers adds the non-deterministic edges of operation id: a
// non-deterministic operation on table T comes after every earlier operation
// touching T, and every later one after it.
func (p *plan) barriers(op *Op, id int32) {
	touched := p.buf.touched[:0]
	if op.NonDet {
		touched = append(touched, op.Table)
	} else {
		touched = append(touched, op.Write.Table)
	}
	for i := range op.Reads {
		touched = appendUnique(touched, op.Reads[i].Table)
	}
	p.buf.touched = touched
	for _, tb := range touched {
		sc := p.scratchOf(tb)
		if sc == nil {
			continue
		}
		if op.NonDet && tb == op.Table {
			for _, x := range sc.sinceND {
				p.add(x, id, edgeNonDet)
			}
			if sc.lastND >= 0 {
				p.add(sc.lastND, id, edgeNonDet)
			}
			sc.lastND, sc.sinceND = id, sc.sinceND[:0]
			sc.epoch++
			continue
		}
		if sc.lastND >= 0 {
			p.add(sc.lastND, id, edgeNonDet)
		}
		sc.sinceND = append(sc.sinceND, id)
	}
}

func appendUnique(s []uint32, v uint32) []uint32 {
	for _, x := range s {
		if x == v {
			return s
		}
	}
	return append(s, v)
}

// lookup returns the state of a key the batch declares, nil if none.
func (p *plan) lookup(k Key) *keyState {
	h := KeyHash(p.seed, k)
	q := partOf(h, p.nparts)
	if i := p.tabs[q].find(k, h, p.slabs[q]); i >= 0 {
		return &p.slabs[q][i]
	}
	return nil
}

// countCycles finds strongly connected components of more than one chain in
// the chain graph (chain of the writer -> chain of the reader, for every
// parametric edge between deterministic operations).
func (p *plan) countCycles() {
	b := p.buf
	ce := b.uEdges[:0]
	for _, e := range p.edges {
		if e.kind != edgeParametric {
			continue
		}
		a, c := p.ops[e.from].ks, p.ops[e.to].ks
		if a == nil || c == nil || a == c {
			continue
		}
		ce = append(ce, edge{a.chain, c.chain, edgeParametric})
	}
	b.uEdges = ce
	n := p.chainIDs
	start, adj := csrInto(n, ce, &b.uChildStart, &b.uChildren, &b.uFill)
	_, sizes := b.tj.run(n, start, adj)
	p.counts.Cycles, p.counts.CyclicChains = 0, 0
	for _, s := range sizes {
		if s > 1 {
			p.counts.Cycles++
			p.counts.CyclicChains += int(s)
		}
	}
}

// csrInto groups edges by source into *start and *adj (reused): the targets
// of node i are adj[start[i]:start[i+1]]. fill is scratch.
func csrInto(n int, edges []edge, start, adj, fill *[]int32) ([]int32, []int32) {
	s := reuse(*start, n+1)
	for _, e := range edges {
		s[e.from+1]++
	}
	for i := 0; i < n; i++ {
		s[i+1] += s[i]
	}
	a := grow(*adj, len(edges))
	f := grow(*fill, n)
	copy(f, s[:n])
	for _, e := range edges {
		a[f[e.from]] = e.to
		f[e.from]++
	}
	*start, *adj, *fill = s, a, f
	return s, a
}

// Analyze builds a batch's TPG and returns its dependency counts (edges of
// each kind, chains, cycles between chains), for a decision model or a
// dashboard, without executing anything.
func Analyze(batch []Txn) (Counts, error) {
	p, err := buildPlan(batch, nil, nil, 1, nil)
	if err != nil {
		return Counts{}, err
	}
	p.countCycles()
	return p.counts, nil
}
