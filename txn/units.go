package txn

import "fmt"

// units is the graph the workers explore: operations grouped into units,
// acyclic. With operation units it is the TPG itself and opStart is nil:
// unit i is operation i.
type units struct {
	opStart, ops         []int32 // unit -> its operations in timestamp order
	nParents             []int32
	childStart, children []int32
	order                []int32 // units by level (only when levels were built)
	levelStart           []int32 // level l is order[levelStart[l]:levelStart[l+1]]
	split                int
}

// count returns the number of units.
func (us *units) count() int { return len(us.nParents) }

// levelCount returns the number of levels, 0 when they were not built.
func (us *units) levelCount() int { return max(len(us.levelStart)-1, 0) }

// buildUnits groups operations into units: one per operation, or one per
// per-key chain (segmented at the non-deterministic barriers of the key's
// table when segment is set). Chain units that form a cycle are split into
// operation units: the operation graph is acyclic, so the result is too.
// Levels (for structured exploration) are built only when levels is set.
//
// Finding the cycles of chain units also finds the cycles between chains
// when the batch has no non-deterministic operation (the unit graph is then
// the chain graph), so the plan's counts get them for free; otherwise the
// caller counts them with countCycles.
func (p *plan) buildUnits(u Unit, segment, levels bool) (*units, error) {
	us := &units{}
	if u == OpUnit {
		us.nParents, us.childStart, us.children = p.nParents, p.childStart, p.children
	} else if err := p.chainUnits(us, segment); err != nil {
		return nil, err
	}
	if levels {
		if err := p.buf.levels(us); err != nil {
			return nil, err
		}
	}
	return us, nil
}

// chainUnits builds chain units into us.
func (p *plan) chainUnits(us *units, segment bool) error {
	b := p.buf
	n := len(p.ops)
	unitOf := grow(b.unitOf, n)
	b.unitOf = unitOf
	nu := int32(0)
	for i := range p.ops {
		o := &p.ops[i]
		ks := o.ks
		if ks == nil {
			unitOf[i] = nu
			nu++
			continue
		}
		// ks.unit starts at -1 for every batch (intern) and is set here once.
		if ks.unit < 0 || (segment && ks.unitEpoch != o.epoch) {
			ks.unit, ks.unitEpoch = nu, o.epoch
			nu++
		}
		unitOf[i] = ks.unit
	}
	p.groupUnits(unitOf, int(nu))
	ue := p.unitEdges(unitOf, int(nu))
	start, adj := csrInto(int(nu), ue, &b.uChildStart, &b.uChildren, &b.uFill)
	comp, sizes := b.tj.run(int(nu), start, adj)
	cycles, cyclic := 0, 0
	for _, s := range sizes {
		if s > 1 {
			cycles++
			cyclic += int(s)
		}
	}
	if !p.nd {
		p.counts.Cycles, p.counts.CyclicChains = cycles, cyclic
	}
	if cycles > 0 {
		// Renumber: units in a cyclic component become one unit per op.
		newID := make([]int32, nu)
		for i := range newID {
			newID[i] = -1
		}
		next := int32(0)
		for i := range unitOf {
			old := unitOf[i]
			if sizes[comp[old]] > 1 {
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
		us.split = cyclic
		nu = next
		p.groupUnits(unitOf, int(nu))
		ue = p.unitEdges(unitOf, int(nu))
		start, adj = csrInto(int(nu), ue, &b.uChildStart, &b.uChildren, &b.uFill)
	}
	us.opStart, us.ops = b.uStart, b.uOps
	us.childStart, us.children = start, adj
	us.nParents = reuse(b.uNParents, int(nu))
	b.uNParents = us.nParents
	for _, e := range ue {
		us.nParents[e.to]++
	}
	return nil
}

// groupUnits lists each unit's operations in timestamp order into the
// buffer's uStart and uOps: unit u has uOps[uStart[u]:uStart[u+1]].
func (p *plan) groupUnits(unitOf []int32, nu int) {
	b := p.buf
	start := reuse(b.uStart, nu+1)
	for _, x := range unitOf {
		start[x+1]++
	}
	for i := 0; i < nu; i++ {
		start[i+1] += start[i]
	}
	ops := grow(b.uOps, len(unitOf))
	fill := grow(b.uFill, nu)
	copy(fill, start[:nu])
	for i, x := range unitOf {
		ops[fill[x]] = int32(i)
		fill[x]++
	}
	b.uStart, b.uOps, b.uFill = start, ops, fill
}

// unitEdges maps operation edges to deduplicated edges between units, using
// the grouping of groupUnits.
func (p *plan) unitEdges(unitOf []int32, nu int) []edge {
	b := p.buf
	start, ops := b.uStart, b.uOps
	stamp := reuse(b.uStamp, nu)
	b.uStamp = stamp
	out := b.uEdges[:0]
	for a := int32(0); a < int32(nu); a++ {
		for _, op := range ops[start[a]:start[a+1]] {
			for _, c := range p.children[p.childStart[op]:p.childStart[op+1]] {
				if x := unitOf[c]; x != a && stamp[x] != a+1 {
					stamp[x] = a + 1
					out = append(out, edge{a, x, edgeTemporal})
				}
			}
		}
	}
	b.uEdges = out
	return out
}

// levels sorts units by level (longest path from a root) with Kahn's
// algorithm into us.order and us.levelStart, and fails on a cycle.
func (b *planBuf) levels(us *units) error {
	nu := us.count()
	level := reuse(b.level, nu)
	indeg := grow(b.indeg, nu)
	queue := grow(b.fill, nu)[:0]
	b.level, b.indeg = level, indeg
	copy(indeg, us.nParents)
	for i := 0; i < nu; i++ {
		if indeg[i] == 0 {
			queue = append(queue, int32(i))
		}
	}
	maxLevel := int32(0)
	for h := 0; h < len(queue); h++ {
		v := queue[h]
		lv := level[v]
		for _, c := range us.children[us.childStart[v]:us.childStart[v+1]] {
			if lv+1 > level[c] {
				level[c] = lv + 1
			}
			indeg[c]--
			if indeg[c] == 0 {
				queue = append(queue, c)
			}
		}
		maxLevel = max(maxLevel, lv)
	}
	b.fill = queue
	if len(queue) != nu {
		return fmt.Errorf("txn: internal error: scheduling graph has a cycle (%d of %d units ordered)", len(queue), nu)
	}
	nl := int(maxLevel) + 1
	if nu == 0 {
		nl = 0
	}
	ls := reuse(b.lstart, nl+1)
	for _, v := range queue {
		ls[level[v]+1]++
	}
	for l := 0; l < nl; l++ {
		ls[l+1] += ls[l]
	}
	order := grow(b.order, nu)
	// Counting sort by level, topological within a level; indeg (all zero
	// now) is the fill scratch.
	fill := indeg[:nl]
	copy(fill, ls[:nl])
	for _, v := range queue {
		order[fill[level[v]]] = v
		fill[level[v]]++
	}
	b.lstart, b.order = ls, order
	us.order, us.levelStart = order, ls
	return nil
}

// tarjanBuf is the memory of Tarjan's algorithm, kept between batches.
type tarjanBuf struct {
	index, low, comp, stack, sizes []int32
	onStack                        []bool
	call                           []tarjanFrame
}

type tarjanFrame struct{ v, next int32 }

// run returns the strongly connected component of every node and the size
// of every component, iteratively (no recursion on deep graphs). Both
// slices belong to the buffer.
func (b *tarjanBuf) run(n int, start, adj []int32) (comp []int32, sizes []int32) {
	index := grow(b.index, n)
	low := grow(b.low, n)
	comp = grow(b.comp, n)
	onStack := reuse(b.onStack, n)
	for i := range index {
		index[i] = -1
	}
	stack, call, sizes := b.stack[:0], b.call[:0], b.sizes[:0]
	next := int32(0)
	for root := 0; root < n; root++ {
		if index[root] >= 0 {
			continue
		}
		if start[root] == start[root+1] {
			// No successor: a component of its own (most chains).
			index[root], comp[root] = next, int32(len(sizes))
			next++
			sizes = append(sizes, 1)
			continue
		}
		call = append(call, tarjanFrame{int32(root), start[root]})
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
					call = append(call, tarjanFrame{w, start[w]})
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
	b.index, b.low, b.comp, b.onStack = index, low, comp, onStack
	b.stack, b.call, b.sizes = stack, call, sizes
	return comp, sizes
}
