package zipf

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestAliasMatchesZipf: the alias table's draws follow P(i) ∝ 1/(i+1)^θ:
// every value's count is within 5 standard deviations of its expectation
// (a fixed seed, so the test is deterministic; it fails on a wrong table,
// not on bad luck).
func TestAliasMatchesZipf(t *testing.T) {
	const n, draws = 200, 1_000_000
	for _, theta := range []float64{0, 0.25, 0.99, 1.5} {
		a := NewAlias(n, theta)
		if a.N() != n {
			t.Fatalf("N() = %d, want %d", a.N(), n)
		}
		r := rand.New(rand.NewPCG(1, 2))
		counts := make([]int, n)
		for range draws {
			v := a.Draw(r.Uint64())
			if v >= n {
				t.Fatalf("θ=%g: draw %d out of [0, %d)", theta, v, n)
			}
			counts[v]++
		}
		sum := 0.0
		for i := range n {
			sum += math.Pow(float64(i+1), -theta)
		}
		for i, c := range counts {
			p := math.Pow(float64(i+1), -theta) / sum
			mean, sd := draws*p, math.Sqrt(draws*p*(1-p))
			if math.Abs(float64(c)-mean) > 5*sd+1 {
				t.Errorf("θ=%g: value %d drawn %d times, want %.0f ± %.0f", theta, i, c, mean, 5*sd)
			}
		}
	}
}

// TestAliasEdges: one value, and the extreme random inputs.
func TestAliasEdges(t *testing.T) {
	for _, theta := range []float64{0, 0.8} {
		one := NewAlias(1, theta)
		for _, u := range []uint64{0, 1 << 63, math.MaxUint64} {
			if v := one.Draw(u); v != 0 {
				t.Fatalf("θ=%g: one value: Draw(%#x) = %d", theta, u, v)
			}
		}
		a := NewAlias(1000, theta)
		if v := a.Draw(math.MaxUint64); v >= 1000 {
			t.Fatalf("θ=%g: Draw(max) = %d", theta, v)
		}
	}
}

func BenchmarkDraw(b *testing.B) {
	const n = 115200
	b.Run("alias", func(b *testing.B) {
		a := NewAlias(n, 0.25)
		r := rand.NewPCG(1, 2)
		var s uint32
		for b.Loop() {
			s += a.Draw(r.Uint64())
		}
		_ = s
	})
	b.Run("cdf", func(b *testing.B) {
		z := New(n, 0.25, 1)
		var s int
		for b.Loop() {
			s += z.Next()
		}
		_ = s
	})
}
