package join

import "sync/atomic"

// Matched records which Refs of each side a window's matches used, so a
// caller can derive outer joins from a kernel's inner join: a left join
// adds the R tuples never matched, a right join the S ones, a full join
// both. Its Emit wrapper may be called by every worker at once.
type Matched struct {
	r, s []atomic.Uint64
}

// NewMatched returns a Matched for Refs below nr on R and ns on S.
func NewMatched(nr, ns int) *Matched {
	return &Matched{r: make([]atomic.Uint64, (nr+63)/64), s: make([]atomic.Uint64, (ns+63)/64)}
}

// Reset clears the marks and sizes them for Refs below nr and ns, reusing
// the memory.
func (m *Matched) Reset(nr, ns int) {
	m.r = resetBits(m.r, nr)
	m.s = resetBits(m.s, ns)
}

func resetBits(b []atomic.Uint64, n int) []atomic.Uint64 {
	words := (n + 63) / 64
	if cap(b) < words {
		return make([]atomic.Uint64, words)
	}
	b = b[:words]
	clear(b)
	return b
}

// Emit returns an Emit that marks each match's Refs, then passes the
// matches to next (if not nil). A Ref beyond the sizes given panics.
func (m *Matched) Emit(next Emit) Emit {
	return func(worker int, ms []Match) {
		for i := range ms {
			m.r[ms[i].R/64].Or(1 << (ms[i].R % 64))
			m.s[ms[i].S/64].Or(1 << (ms[i].S % 64))
		}
		if next != nil {
			next(worker, ms)
		}
	}
}

// Unmatched appends to dst the Refs below n of side that no match used,
// in increasing order, and returns it. Call it once the kernel's calls
// have returned.
func (m *Matched) Unmatched(dst []uint32, side Side, n int) []uint32 {
	bits := m.r
	if side == S {
		bits = m.s
	}
	for i := range n {
		if bits[i/64].Load()&(1<<(i%64)) == 0 {
			dst = append(dst, uint32(i))
		}
	}
	return dst
}
