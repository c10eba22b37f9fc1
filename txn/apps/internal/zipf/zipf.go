// Package zipf draws Zipf-distributed integers for any skew θ >= 0 (θ = 0 is
// uniform), which math/rand's Zipf (θ > 1 only) does not cover; MorphStream's
// workloads use θ between 0 and 1. Zipf carries its own generator and
// binary-searches a CDF; Alias takes the caller's random bits and draws in
// constant time from a read-only table, for generators that must draw event
// i without drawing the events before it.
package zipf

import (
	"math"
	"math/rand/v2"
	"sort"
)

// Zipf draws integers in [0, n) with P(i) proportional to 1/(i+1)^θ.
type Zipf struct {
	cdf []float64
	r   *rand.Rand
}

// New returns a generator over n values with skew theta, seeded by seed.
func New(n int, theta float64, seed uint64) *Zipf {
	cdf := make([]float64, n)
	sum := 0.0
	for i := range cdf {
		sum += 1 / math.Pow(float64(i+1), theta)
		cdf[i] = sum
	}
	for i := range cdf {
		cdf[i] /= sum
	}
	return &Zipf{cdf: cdf, r: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))}
}

// Next draws a value.
func (z *Zipf) Next() int {
	u := z.r.Float64()
	return min(sort.SearchFloat64s(z.cdf, u), len(z.cdf)-1)
}

// Rand returns the generator's source, for other draws of the same seed.
func (z *Zipf) Rand() *rand.Rand { return z.r }
