package zipf

import "testing"

func TestZipf(t *testing.T) {
	const n, draws = 100, 20000
	count := func(theta float64, seed uint64) []int {
		z := New(n, theta, seed)
		c := make([]int, n)
		for i := 0; i < draws; i++ {
			v := z.Next()
			if v < 0 || v >= n {
				t.Fatalf("draw %d out of [0, %d)", v, n)
			}
			c[v]++
		}
		return c
	}
	uniform, skewed := count(0, 1), count(1.2, 1)
	// θ = 0: the first tenth of the keys gets about a tenth of the draws.
	if s := sum(uniform[:10]); s < draws/20 || s > draws/5 {
		t.Errorf("θ=0: first 10 keys drew %d of %d", s, draws)
	}
	// θ = 1.2: the first tenth gets most of them.
	if s := sum(skewed[:10]); s < draws/2 {
		t.Errorf("θ=1.2: first 10 keys drew %d of %d", s, draws)
	}
	again := count(1.2, 1)
	for i := range again {
		if again[i] != skewed[i] {
			t.Fatal("same seed, different draws")
		}
	}
}

func sum(c []int) int {
	s := 0
	for _, v := range c {
		s += v
	}
	return s
}
