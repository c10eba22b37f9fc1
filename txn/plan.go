package txn

import (
	"fmt"
	"math"
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

	unit      int32 // plan scratch for chain units
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
	readKS     []*keyState
	readPos    []int32 // latest earlier writer of readKS[i], -1 if none

	// results
	obs      Observed
	value    []byte
	del      bool
	written  bool // holds a version (executed, not failed, not Keep)
	failed   bool // aborted or errored
	err      error
	executed bool
	ndWrites []*keyState
}

// plan is a batch's TPG.
type plan struct {
	batch      []Txn
	ops        []opState
	first      []int32 // first[i]: id of transaction i's op 0; first[n] = len(ops)
	keys       map[Key]*keyState
	slab       []keyState
	chains     []*keyState
	dyn        map[uint32]map[string]*keyState // keys created by non-det ops, per table
	edges      []edge
	nParents   []int32
	childStart []int32
	children   []int32
	counts     Counts
	buf        *planBuf
}

// planBuf is memory a Scheduler keeps from batch to batch, so that a batch
// of the same size allocates little.
type planBuf struct {
	ops            []opState
	keys           map[Key]*keyState
	slab           []keyState
	edges          []edge
	readKS         []*keyState
	readPos, stamp []int32
	vals           []Value
}

// reuse returns s resized to n zero elements, reallocated only if too small.
func reuse[T any](s []T, n int) []T {
	if cap(s) < n {
		return make([]T, n)
	}
	s = s[:n]
	clear(s)
	return s
}

// release hands the batch's memory back to its buffer. Nothing of the plan
// may be used afterwards; results must have copied what they keep.
func (p *plan) release() {
	b := p.buf
	b.ops, b.slab, b.edges = p.ops, p.slab, p.edges
}

func makeTS(txn, op int) uint64 { return uint64(txn)<<32 | uint64(op) }

type tableScratch struct {
	lastND  int32
	sinceND []int32
	epoch   int32
}

// buildPlan builds the TPG of a batch. It does not read state.
//
// buf, when not nil, lends memory from an earlier batch, and receives this
// batch's memory back through (*plan).release once the batch is done.
func buildPlan(batch []Txn, buf *planBuf) (*plan, error) {
	if buf == nil {
		buf = &planBuf{}
	}
	nOps, nKeys := 0, 0
	for i := range batch {
		for j := range batch[i].Ops {
			nOps++
			nKeys += 1 + len(batch[i].Ops[j].Reads)
		}
		if len(batch[i].Ops) > math.MaxInt32 {
			return nil, fmt.Errorf("%w: transaction %d has too many operations", ErrInvalidBatch, i)
		}
	}
	if nOps >= math.MaxInt32 || len(batch) >= math.MaxInt32 {
		return nil, fmt.Errorf("%w: %d operations in %d transactions is too many", ErrInvalidBatch, nOps, len(batch))
	}
	if buf.keys == nil {
		buf.keys = make(map[Key]*keyState, nKeys)
	}
	clear(buf.keys)
	p := &plan{
		batch: batch,
		ops:   reuse(buf.ops, nOps),
		first: make([]int32, len(batch)+1),
		keys:  buf.keys,
		slab:  reuse(buf.slab, nKeys)[:0],
		dyn:   map[uint32]map[string]*keyState{},
		edges: reuse(buf.edges, 2*nOps)[:0],
		buf:   buf,
	}
	nReads := nKeys - nOps
	readKS := reuse(buf.readKS, nReads)
	readPos := reuse(buf.readPos, nReads)
	vals := reuse(buf.vals, nReads)
	stamp := reuse(buf.stamp, nOps)
	buf.readKS, buf.readPos, buf.vals, buf.stamp = readKS, readPos, vals, stamp
	for i := range stamp {
		stamp[i] = -1
	}
	tables := map[uint32]*tableScratch{}
	table := func(t uint32) *tableScratch {
		ts := tables[t]
		if ts == nil {
			ts = &tableScratch{lastND: -1}
			tables[t] = ts
		}
		return ts
	}
	key := func(k Key) *keyState {
		ks := p.keys[k]
		if ks == nil {
			p.slab = append(p.slab, keyState{key: k, chain: -1, unit: -1, last: -1})
			ks = &p.slab[len(p.slab)-1]
			p.keys[k] = ks
		}
		return ks
	}
	add := func(from, to int32, kind edgeKind) {
		if stamp[from] == to {
			return
		}
		stamp[from] = to
		p.edges = append(p.edges, edge{from, to, kind})
		switch kind {
		case edgeTemporal:
			p.counts.Temporal++
		case edgeParametric:
			p.counts.Parametric++
		case edgeNonDet:
			p.counts.NonDet++
		}
	}
	var touched []uint32
	id, r := int32(0), 0
	for t := range batch {
		p.first[t] = id
		if n := len(batch[t].Ops); n > 1 {
			p.counts.Logical += n - 1
		}
		for m := range batch[t].Ops {
			op := &batch[t].Ops[m]
			o := &p.ops[id]
			o.ts, o.txn, o.idx, o.op = makeTS(t, m), int32(t), int32(m), op
			touched = touched[:0]
			if !op.NonDet {
				o.ks = key(op.Write)
				if o.ks.last >= 0 {
					add(o.ks.last, id, edgeTemporal)
				}
				touched = append(touched, op.Write.Table)
			} else {
				touched = append(touched, op.Table)
				if p.dyn[op.Table] == nil {
					p.dyn[op.Table] = map[string]*keyState{}
				}
			}
			n := len(op.Reads)
			o.readKS, o.readPos, o.obs.Reads = readKS[r:r+n:r+n], readPos[r:r+n:r+n], vals[r:r+n:r+n]
			r += n
			for i, rk := range op.Reads {
				ks := key(rk)
				o.readKS[i] = ks
				o.readPos[i] = ks.last
				if ks.last >= 0 {
					add(ks.last, id, edgeParametric)
				}
				touched = appendUnique(touched, rk.Table)
			}
			for _, tb := range touched {
				sc := table(tb)
				if op.NonDet && tb == op.Table {
					for _, x := range sc.sinceND {
						add(x, id, edgeNonDet)
					}
					if sc.lastND >= 0 {
						add(sc.lastND, id, edgeNonDet)
					}
					sc.lastND, sc.sinceND = id, sc.sinceND[:0]
					sc.epoch++
					continue
				}
				if sc.lastND >= 0 {
					add(sc.lastND, id, edgeNonDet)
				}
				sc.sinceND = append(sc.sinceND, id)
			}
			if !op.NonDet {
				o.prevWriter, o.ks.last = o.ks.last, id
				o.epoch = table(op.Write.Table).epoch
			}
			id++
		}
	}
	p.first[len(batch)] = id
	for i := range p.slab {
		if ks := &p.slab[i]; ks.last >= 0 {
			ks.chain = int32(len(p.chains))
			p.chains = append(p.chains, ks)
		}
	}
	p.counts.Txns, p.counts.Ops, p.counts.Keys, p.counts.Chains = len(batch), nOps, len(p.slab), len(p.chains)
	p.nParents = make([]int32, nOps)
	for _, e := range p.edges {
		p.nParents[e.to]++
	}
	p.childStart, p.children = csr(nOps, p.edges)
	p.countCycles()
	return p, nil
}

func appendUnique(s []uint32, v uint32) []uint32 {
	for _, x := range s {
		if x == v {
			return s
		}
	}
	return append(s, v)
}

// csr groups edges by source: the targets of node i are adj[start[i]:start[i+1]].
func csr(n int, edges []edge) (start, adj []int32) {
	start = make([]int32, n+1)
	for _, e := range edges {
		start[e.from+1]++
	}
	for i := 0; i < n; i++ {
		start[i+1] += start[i]
	}
	adj = make([]int32, len(edges))
	fill := make([]int32, n)
	copy(fill, start[:n])
	for _, e := range edges {
		adj[fill[e.from]] = e.to
		fill[e.from]++
	}
	return start, adj
}

// countCycles finds strongly connected components of more than one chain in
// the chain graph (chain of the writer -> chain of the reader, for every
// parametric edge between deterministic operations).
func (p *plan) countCycles() {
	var ce []edge
	for _, e := range p.edges {
		if e.kind != edgeParametric {
			continue
		}
		a, b := p.ops[e.from].ks, p.ops[e.to].ks
		if a == nil || b == nil || a == b {
			continue
		}
		ce = append(ce, edge{a.chain, b.chain, edgeParametric})
	}
	start, adj := csr(len(p.chains), ce)
	_, sizes := tarjan(len(p.chains), start, adj)
	for _, s := range sizes {
		if s > 1 {
			p.counts.Cycles++
			p.counts.CyclicChains += int(s)
		}
	}
}

// tarjan returns the strongly connected component of every node and the
// size of every component, iteratively (no recursion on deep graphs).
func tarjan(n int, start, adj []int32) (comp []int32, sizes []int32) {
	index := make([]int32, n)
	low := make([]int32, n)
	comp = make([]int32, n)
	onStack := make([]bool, n)
	for i := range index {
		index[i] = -1
	}
	var stack []int32
	type frame struct{ v, next int32 }
	var call []frame
	next := int32(0)
	for root := 0; root < n; root++ {
		if index[root] >= 0 {
			continue
		}
		call = append(call, frame{int32(root), start[root]})
		index[root], low[root] = next, next
		next++
		stack = append(stack, int32(root))
		onStack[root] = true
		for len(call) > 0 {
			f := &call[len(call)-1]
			v := f.v
			if f.next < start[v+1] {
				w := adj[f.next]
				f.next++
				if index[w] < 0 {
					index[w], low[w] = next, next
					next++
					stack = append(stack, w)
					onStack[w] = true
					call = append(call, frame{w, start[w]})
				} else if onStack[w] && index[w] < low[v] {
					low[v] = index[w]
				}
				continue
			}
			call = call[:len(call)-1]
			if len(call) > 0 {
				if u := call[len(call)-1].v; low[v] < low[u] {
					low[u] = low[v]
				}
			}
			if low[v] == index[v] {
				c := int32(len(sizes))
				size := int32(0)
				for {
					w := stack[len(stack)-1]
					stack = stack[:len(stack)-1]
					onStack[w] = false
					comp[w] = c
					size++
					if w == v {
						break
					}
				}
				sizes = append(sizes, size)
			}
		}
	}
	return comp, sizes
}

// units is the graph the workers explore: operations grouped into units,
// acyclic, with units sorted by level (longest path from a root).
type units struct {
	opStart, ops         []int32 // unit -> its operations in timestamp order
	nParents             []int32
	childStart, children []int32
	order                []int32 // units by level
	levelStart           []int32 // level l is order[levelStart[l]:levelStart[l+1]]
	split                int
}

// buildUnits groups operations into units: one per operation, or one per
// per-key chain (segmented at the non-deterministic barriers of the key's
// table when segment is set). Chain units that form a cycle are split into
// operation units: the operation graph is acyclic, so the result is too.
func (p *plan) buildUnits(u Unit, segment bool) (*units, error) {
	n := len(p.ops)
	unitOf := make([]int32, n)
	nu := int32(0)
	if u == OpUnit {
		for i := range unitOf {
			unitOf[i] = int32(i)
		}
		nu = int32(n)
	} else {
		for i := range p.slab {
			p.slab[i].unit = -1
		}
		for i := range p.ops {
			o := &p.ops[i]
			if o.ks == nil {
				unitOf[i] = nu
				nu++
				continue
			}
			if o.ks.unit < 0 || (segment && o.ks.unitEpoch != o.epoch) {
				o.ks.unit, o.ks.unitEpoch = nu, o.epoch
				nu++
			}
			unitOf[i] = o.ks.unit
		}
	}
	ue := p.unitEdges(unitOf, int(nu))
	split := 0
	if u == ChainUnit {
		start, adj := csr(int(nu), ue)
		comp, sizes := tarjan(int(nu), start, adj)
		cyclic := false
		for _, s := range sizes {
			if s > 1 {
				cyclic = true
			}
		}
		if cyclic {
			// Renumber: units in a cyclic component become one unit per op.
			newID := make([]int32, nu)
			for i := range newID {
				newID[i] = -1
			}
			splitUnit := make([]bool, nu)
			for i := int32(0); i < nu; i++ {
				if sizes[comp[i]] > 1 {
					splitUnit[i] = true
					split++
				}
			}
			next := int32(0)
			for i := range unitOf {
				old := unitOf[i]
				if splitUnit[old] {
					unitOf[i] = next
					next++
					continue
				}
				if newID[old] < 0 {
					newID[old] = next
					next++
				}
				unitOf[i] = newID[old]
			}
			nu = next
			ue = p.unitEdges(unitOf, int(nu))
		}
	}
	us := &units{split: split}
	us.opStart = make([]int32, nu+1)
	for _, x := range unitOf {
		us.opStart[x+1]++
	}
	for i := int32(0); i < nu; i++ {
		us.opStart[i+1] += us.opStart[i]
	}
	us.ops = make([]int32, n)
	fill := make([]int32, nu)
	copy(fill, us.opStart[:nu])
	for i, x := range unitOf {
		us.ops[fill[x]] = int32(i)
		fill[x]++
	}
	us.childStart, us.children = csr(int(nu), ue)
	us.nParents = make([]int32, nu)
	for _, e := range ue {
		us.nParents[e.to]++
	}
	if err := us.levels(); err != nil {
		return nil, err
	}
	return us, nil
}

// unitEdges maps operation edges to deduplicated edges between units.
func (p *plan) unitEdges(unitOf []int32, nu int) []edge {
	identity := nu == len(p.ops)
	for i := 0; identity && i < len(unitOf); i++ {
		identity = unitOf[i] == int32(i)
	}
	if identity {
		return p.edges
	}
	// Group operations by unit, then deduplicate each unit's targets.
	start := make([]int32, nu+1)
	for _, x := range unitOf {
		start[x+1]++
	}
	for i := 0; i < nu; i++ {
		start[i+1] += start[i]
	}
	ops := make([]int32, len(unitOf))
	fill := make([]int32, nu)
	copy(fill, start[:nu])
	for i, x := range unitOf {
		ops[fill[x]] = int32(i)
		fill[x]++
	}
	stamp := make([]int32, nu)
	for i := range stamp {
		stamp[i] = -1
	}
	var out []edge
	for a := int32(0); a < int32(nu); a++ {
		for _, op := range ops[start[a]:start[a+1]] {
			for _, c := range p.children[p.childStart[op]:p.childStart[op+1]] {
				if b := unitOf[c]; b != a && stamp[b] != a {
					stamp[b] = a
					out = append(out, edge{a, b, edgeTemporal})
				}
			}
		}
	}
	return out
}

// levels sorts units by level with Kahn's algorithm and fails on a cycle.
func (us *units) levels() error {
	nu := len(us.nParents)
	level := make([]int32, nu)
	indeg := make([]int32, nu)
	copy(indeg, us.nParents)
	queue := make([]int32, 0, nu)
	for i := 0; i < nu; i++ {
		if indeg[i] == 0 {
			queue = append(queue, int32(i))
		}
	}
	maxLevel := int32(0)
	for h := 0; h < len(queue); h++ {
		v := queue[h]
		for _, c := range us.children[us.childStart[v]:us.childStart[v+1]] {
			if level[v]+1 > level[c] {
				level[c] = level[v] + 1
			}
			indeg[c]--
			if indeg[c] == 0 {
				queue = append(queue, c)
			}
		}
		if level[v] > maxLevel {
			maxLevel = level[v]
		}
	}
	if len(queue) != nu {
		return fmt.Errorf("txn: internal error: scheduling graph has a cycle (%d of %d units ordered)", len(queue), nu)
	}
	nl := int(maxLevel) + 1
	if nu == 0 {
		nl = 0
	}
	us.levelStart = make([]int32, nl+1)
	for _, v := range queue {
		us.levelStart[level[v]+1]++
	}
	for l := 0; l < nl; l++ {
		us.levelStart[l+1] += us.levelStart[l]
	}
	us.order = make([]int32, nu)
	fill := make([]int32, nl)
	copy(fill, us.levelStart[:nl])
	for _, v := range queue { // counting sort by level, topological within
		us.order[fill[level[v]]] = v
		fill[level[v]]++
	}
	return nil
}

// Analyze builds a batch's TPG and returns its dependency counts (edges of
// each kind, chains, cycles between chains), for a decision model or a
// dashboard, without executing anything.
func Analyze(batch []Txn) (Counts, error) {
	p, err := buildPlan(batch, nil)
	if err != nil {
		return Counts{}, err
	}
	return p.counts, nil
}
