package join

import "fmt"

// Sweeps are the names of the micro sweeps (see Sweep).
func Sweeps() []string { return []string{"rate", "rate-s", "dupe", "key-skew", "ts-skew", "window"} }

// Sweep returns the points of one of the study's micro sweeps, each knob
// as the study varies it with the others at its values:
//
//   - rate: v = 1,600, 6,400, 12,800 tuples/ms per side (the study goes
//     on to 25,600: 51 million tuples, more memory than the benchmark
//     machine spares);
//   - rate-s: v_R = 1,600 and v_S = 1,600, 6,400, 12,800;
//   - dupe: 1, 10, 100 tuples per key at v = 6,400;
//   - key-skew: Zipf 0, 0.4, 0.8 at v = 1,600 (the study sweeps 0 to 1.6
//     at 12,800: Zipf 1.6 over 12.8 million keys makes some 10^13
//     matches, and 0.8 at 12,800 600 million in a tenth of the window);
//   - ts-skew: Zipf 0, 0.8, 1.6 at v = 1,600;
//   - window: 500, 1,000, 1,500 ms at v = 12,800.
//
// w = 1 s and unique keys unless the sweep varies them. quick divides the
// rates by 100, for tests.
func Sweep(name string, quick bool, seed uint64) ([]Micro, error) {
	base := Micro{RateR: 12800, RateS: 12800, Window: 1000, Dupe: 1, Seed: seed}
	var pts []Micro
	each := func(n int, f func(i int, m *Micro)) {
		for i := range n {
			m := base
			f(i, &m)
			pts = append(pts, m)
		}
	}
	rates := []int{1600, 6400, 12800}
	switch name {
	case "rate":
		each(3, func(i int, m *Micro) { m.RateR, m.RateS = rates[i], rates[i] })
	case "rate-s":
		each(3, func(i int, m *Micro) { m.RateR, m.RateS = 1600, rates[i] })
	case "dupe":
		each(3, func(i int, m *Micro) { m.RateR, m.RateS, m.Dupe = 6400, 6400, []int{1, 10, 100}[i] })
	case "key-skew":
		each(3, func(i int, m *Micro) { m.RateR, m.RateS, m.KeySkew = 1600, 1600, []float64{0, 0.4, 0.8}[i] })
	case "ts-skew":
		each(3, func(i int, m *Micro) { m.RateR, m.RateS, m.TSSkew = 1600, 1600, []float64{0, 0.8, 1.6}[i] })
	case "window":
		each(3, func(i int, m *Micro) { m.Window = []int{500, 1000, 1500}[i] })
	default:
		return nil, fmt.Errorf("%w: sweep %q, want one of %v", ErrOptions, name, Sweeps())
	}
	if quick {
		for i := range pts {
			pts[i].RateR = max(pts[i].RateR/100, 1)
			pts[i].RateS = max(pts[i].RateS/100, 1)
		}
	}
	return pts, nil
}
