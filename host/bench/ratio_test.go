package bench

import (
	"math"
	"math/rand/v2"
	"testing"
)

func TestPairedRateRatioExact(t *testing.T) {
	a := []float64{0.010, 0.012, 0.011, 0.015}
	// The second lane takes twice as long on every batch: the first lane's
	// rate is twice its, with no dispersion.
	b := make([]float64, len(a))
	for i := range a {
		b[i] = 2 * a[i]
	}
	r := pairedRateRatio(a, b)
	if math.Abs(r.Ratio-2) > 1e-12 || math.Abs(r.Low-2) > 1e-9 || math.Abs(r.High-2) > 1e-9 || r.Batches != 4 {
		t.Fatalf("%+v, want 2 (2-2) over 4 batches", r)
	}
	if r.Verdict() != "faster" || r.String() != "2.000 (2.000-2.000)" {
		t.Errorf("verdict %q, text %q", r.Verdict(), r.String())
	}
	if v := pairedRateRatio(b, a).Verdict(); v != "slower" {
		t.Errorf("reversed: %q, want slower", v)
	}
	// The ratio of the rates is the ratio of the summed times, not the
	// mean of the batches' ratios.
	r = pairedRateRatio([]float64{1, 3}, []float64{2, 2})
	if r.Ratio != 1 {
		t.Errorf("ratio %v, want 1 (4 s against 4 s)", r.Ratio)
	}
}

func TestPairedRateRatioTooFew(t *testing.T) {
	for _, c := range []struct{ a, b []float64 }{{nil, nil}, {[]float64{1}, []float64{2}}, {[]float64{0, 0}, []float64{1, 1}}} {
		r := pairedRateRatio(c.a, c.b)
		if !math.IsInf(r.Low, -1) || !math.IsInf(r.High, 1) || r.Verdict() != "within noise" {
			t.Errorf("%v %v: %+v, want an unbounded interval", c.a, c.b, r)
		}
	}
	if s := pairedRateRatio([]float64{1}, []float64{2}).String(); s != "2.000 (no interval)" {
		t.Errorf("text %q", s)
	}
}

// TestPairedRateRatioCoverage draws pairs of lanes whose true rates are
// equal, each batch with noise of its own and noise the two lanes share (a
// batch's events, the machine's state), and checks that about 95% of the
// intervals hold 1: narrower intervals would call noise a difference, wider
// ones would hide real differences.
func TestPairedRateRatioCoverage(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 11))
	for _, n := range []int{8, 40, 200} {
		const trials = 4000
		held := 0
		for range trials {
			a, b := make([]float64, n), make([]float64, n)
			for i := range n {
				shared := 0.05 * (1 + rng.Float64())
				a[i] = shared * (1 + 0.08*rng.NormFloat64())
				b[i] = shared * (1 + 0.08*rng.NormFloat64())
			}
			r := pairedRateRatio(a, b)
			if r.Low <= 1 && 1 <= r.High {
				held++
			}
		}
		if c := float64(held) / trials; c < 0.925 || c > 0.975 {
			t.Errorf("%d batches: %.3f of the intervals hold the true ratio, want about 0.95", n, c)
		}
	}
}

func TestStudentT975(t *testing.T) {
	prev := math.Inf(1)
	for df := range 200 {
		v := studentT975(df)
		if v > prev || v < 1.96 {
			t.Fatalf("df %d: %v after %v", df, v, prev)
		}
		prev = v
	}
	if studentT975(1) != 12.706 || studentT975(30) != 2.042 || studentT975(1000) != 1.96 {
		t.Errorf("t(1) %v, t(30) %v, t(1000) %v", studentT975(1), studentT975(30), studentT975(1000))
	}
}
