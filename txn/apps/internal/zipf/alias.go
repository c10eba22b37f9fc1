package zipf

import (
	"math"
	"math/bits"
)

// Alias draws from the distribution of Zipf (P(i) proportional to
// 1/(i+1)^θ over [0, n)) in constant time, by Vose's alias method: one
// multiplication and one table lookup per draw, where Zipf binary-searches
// a CDF. It holds no generator: the caller passes the random bits, so one
// read-only table serves any number of generators concurrently, such as
// the per-event generators of a workload whose i-th event must not depend
// on the events drawn before it.
type Alias struct {
	n     uint64
	cells []cell // nil for θ = 0: uniform, no table
}

// cell is one column of the alias table: the column's own value is kept
// when the draw's fraction is below thr/2^32, else the draw is alias.
type cell struct {
	thr   uint32
	alias uint32
}

// NewAlias returns the alias table of n values (1 <= n < 2^32) with skew
// theta >= 0. Building it takes O(n) time and 8n bytes.
func NewAlias(n int, theta float64) *Alias {
	a := &Alias{n: uint64(n)}
	if theta == 0 {
		return a
	}
	// Vose: scale the probabilities to mean 1, then pair each column
	// below 1 with one above 1 that tops it up.
	p := make([]float64, n)
	sum := 0.0
	for i := range p {
		p[i] = math.Pow(float64(i+1), -theta)
		sum += p[i]
	}
	small := make([]uint32, 0, n)
	large := make([]uint32, 0, n)
	for i := range p {
		p[i] *= float64(n) / sum
		if p[i] < 1 {
			small = append(small, uint32(i))
		} else {
			large = append(large, uint32(i))
		}
	}
	a.cells = make([]cell, n)
	for len(small) > 0 && len(large) > 0 {
		s, l := small[len(small)-1], large[len(large)-1]
		small = small[:len(small)-1]
		a.cells[s] = cell{thr: threshold(p[s]), alias: l}
		p[l] -= 1 - p[s]
		if p[l] < 1 {
			large = large[:len(large)-1]
			small = append(small, l)
		}
	}
	// What remains is 1 up to rounding: keep the column's own value.
	for _, i := range append(small, large...) {
		a.cells[i] = cell{thr: math.MaxUint32, alias: i}
	}
	return a
}

// threshold scales a probability in [0, 1] to 32 bits.
func threshold(p float64) uint32 {
	if p >= 1 {
		return math.MaxUint32
	}
	return uint32(p * (1 << 32))
}

// N returns the number of values.
func (a *Alias) N() int { return int(a.n) }

// Draw maps 64 uniformly random bits to a value in [0, n): the high half of
// u*n picks a column, the low half decides between the column and its
// alias.
func (a *Alias) Draw(u uint64) uint32 {
	col, frac := bits.Mul64(u, a.n)
	if a.cells == nil {
		return uint32(col)
	}
	c := a.cells[col]
	if uint32(frac>>32) < c.thr {
		return uint32(col)
	}
	return c.alias
}
