package join

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
)

// SideSpec describes how one side of a generated workload is drawn.
type SideSpec struct {
	// N is the side's number of tuples.
	N int
	// Keys is the size of the side's key alphabet: ranks 0..Keys-1, each
	// mapped to a key by one bijection shared by both sides, so rank i is
	// the same key on R and on S.
	Keys int
	// KeySkew is the Zipf exponent of the ranks (0: every key of the
	// alphabet equally often, N/Keys times each, shuffled).
	KeySkew float64
	// TSSkew is the Zipf exponent of the arrival ms (0: uniform arrivals;
	// larger: more of the tuples early in the window).
	TSSkew float64
	// AtRest gives every tuple time 0: the side is all there when the
	// window starts.
	AtRest bool
}

// Workload is a generated window: two sides and the window length, drawn
// deterministically from Seed. Times are ns from the window's start.
type Workload struct {
	Name   string
	R, S   SideSpec
	Window int // ms
	Seed   uint64
}

// Micro is the study's synthetic workload: per-side rates, a window, key
// duplication, key skew and arrival skew.
type Micro struct {
	// RateR and RateS are tuples per ms per side (the study's v).
	RateR, RateS int
	// Window is the window length w in ms.
	Window int
	// Dupe is the mean number of tuples per key (1 or 0: unique keys on
	// each side).
	Dupe int
	// KeySkew is the Zipf exponent of the keys (0: no skew).
	KeySkew float64
	// TSSkew is the Zipf exponent of the arrival times (0: uniform).
	TSSkew float64
	// Seed makes the draw deterministic.
	Seed uint64
}

// Workload returns the micro workload as a Workload: |R| = RateR * Window,
// |S| the same with RateS, one alphabet of max(|R|, |S|) / Dupe keys.
func (m Micro) Workload() Workload {
	nr, ns := m.RateR*m.Window, m.RateS*m.Window
	keys := max(nr, ns) / max(m.Dupe, 1)
	return Workload{
		Name:   "micro",
		R:      SideSpec{N: nr, Keys: keys, KeySkew: m.KeySkew, TSSkew: m.TSSkew},
		S:      SideSpec{N: ns, Keys: keys, KeySkew: m.KeySkew, TSSkew: m.TSSkew},
		Window: m.Window,
		Seed:   m.Seed,
	}
}

// Generate draws the micro workload's two sides.
func (m Micro) Generate() (r, s []Tuple, err error) { return m.Workload().Generate() }

// Shapes are the names of the workloads shaped like the study's four real
// ones (see Shape).
func Shapes() []string { return []string{"stock", "rovio", "ysb", "debs"} }

// Shape returns a synthetic workload shaped like one of the study's real
// ones (its Table 3: rates, sizes, duplication, key skew), scaled down to
// join in seconds on two cores where the original does not:
//
//   - stock: trades (R, 61 tuples/ms) and quotes (S, 77/ms) over 1 s,
//     about 68 and 79 tuples per key, key skew 0.112 and 0.158, arrivals
//     in bursts (Zipf 0.6 over the ms); full size (60,527 + 77,227);
//   - rovio: 2,873 tuples/ms per side, 160 keys (17,960 tuples per key
//     in the original), skew 0.042; the window is cut from 1 s to 20 ms,
//     so 57,472 tuples per side and 359 per key (20 million matches
//     where the original has 88 billion);
//   - ysb: 1,000 campaigns at rest (R, unique) and ad events (S, 10,000
//     per ms, skew 0.032 over the campaigns); the window is cut from 1 s to
//     250 ms: 2.5 million events;
//   - debs: posts and comments, both at rest, about 173 and 112 tuples per
//     key over 5,794 and 8,968 keys, skew 0.003 and 0.011; a quarter of
//     the size (250,000 per side), with the key counts kept.
func Shape(name string, seed uint64) (Workload, error) {
	w := Workload{Name: name, Seed: seed}
	switch name {
	case "stock":
		w.Window = 1000
		w.R = SideSpec{N: 60_527, Keys: 894, KeySkew: 0.112, TSSkew: 0.6}
		w.S = SideSpec{N: 77_227, Keys: 984, KeySkew: 0.158, TSSkew: 0.6}
	case "rovio":
		w.Window = 20
		w.R = SideSpec{N: 57_472, Keys: 160, KeySkew: 0.042}
		w.S = w.R
	case "ysb":
		w.Window = 250
		w.R = SideSpec{N: 1000, Keys: 1000, AtRest: true}
		w.S = SideSpec{N: 2_500_000, Keys: 1000, KeySkew: 0.032}
	case "debs":
		w.Window = 0
		w.R = SideSpec{N: 250_000, Keys: 5794, KeySkew: 0.003, AtRest: true}
		w.S = SideSpec{N: 250_000, Keys: 8968, KeySkew: 0.011, AtRest: true}
	default:
		return w, fmt.Errorf("%w: workload %q, want micro or one of %v", ErrOptions, name, Shapes())
	}
	return w, nil
}

// Generate draws the workload's two sides: R's Refs are 0..|R|-1, S's
// 0..|S|-1, each side in time order.
func (w Workload) Generate() (r, s []Tuple, err error) {
	for _, sp := range []*SideSpec{&w.R, &w.S} {
		if sp.N < 0 || (sp.N > 0 && sp.Keys < 1) || sp.KeySkew < 0 || sp.TSSkew < 0 {
			return nil, nil, fmt.Errorf("%w: workload %s: side %+v", ErrOptions, w.Name, *sp)
		}
		if sp.N > math.MaxUint32 {
			return nil, nil, fmt.Errorf("%w: workload %s: %d tuples on a side, at most %d", ErrOptions, w.Name, sp.N, math.MaxUint32)
		}
	}
	if w.Window < 0 {
		return nil, nil, fmt.Errorf("%w: workload %s: window %d ms", ErrOptions, w.Name, w.Window)
	}
	bits := log2(ceilPow2(max(w.R.Keys, w.S.Keys)))
	r = w.side(&w.R, bits, 0)
	s = w.side(&w.S, bits, 1)
	return r, s, nil
}

// keyOf maps a rank to its key: a multiplication by an odd constant modulo
// 2^bits, a bijection, so ranks stay distinct keys and hot ranks spread
// over the key space.
func keyOf(rank uint64, bits uint) uint64 {
	return (rank * 0x9E3779B97F4A7C15) & (1<<bits - 1)
}

func (w Workload) side(sp *SideSpec, bits uint, which uint64) []Tuple {
	rng := rand.New(rand.NewPCG(w.Seed, which))
	ts := make([]Tuple, sp.N)
	if sp.N == 0 {
		return ts
	}
	if sp.KeySkew == 0 {
		for i := range ts {
			ts[i].Key = keyOf(uint64(i%sp.Keys), bits)
		}
		rng.Shuffle(len(ts), func(i, j int) { ts[i].Key, ts[j].Key = ts[j].Key, ts[i].Key })
	} else {
		z := newZipf(sp.KeySkew, sp.Keys)
		for i := range ts {
			ts[i].Key = keyOf(uint64(z.draw(rng)-1), bits)
		}
	}
	const ms = 1_000_000
	switch {
	case sp.AtRest || w.Window == 0:
	case sp.TSSkew == 0:
		for i := range ts {
			ts[i].TS = int64(i) * int64(w.Window) * ms / int64(sp.N)
		}
	default:
		z := newZipf(sp.TSSkew, w.Window)
		for i := range ts {
			ts[i].TS = int64(z.draw(rng)-1) * ms
		}
		slices.SortFunc(ts, func(a, b Tuple) int { return int(a.TS - b.TS) })
		// Spread each ms's tuples over the ms, keeping the order.
		for i := 0; i < len(ts); {
			j := i
			for j < len(ts) && ts[j].TS == ts[i].TS {
				j++
			}
			for k := i; k < j; k++ {
				ts[k].TS += int64(k-i) * ms / int64(j-i)
			}
			i = j
		}
	}
	for i := range ts {
		ts[i].Ref = uint32(i)
	}
	return ts
}

// zipf draws ranks 1..n with P(k) proportional to 1/k^s, for any s > 0:
// Hörmann and Derflinger's rejection-inversion, constant time per draw
// and no table (the alphabets run to millions).
type zipf struct {
	s, n          float64
	hx1, hn, edge float64
}

func newZipf(s float64, n int) *zipf {
	z := &zipf{s: s, n: float64(n)}
	z.hx1 = z.hIntegral(1.5) - 1
	z.hn = z.hIntegral(z.n + 0.5)
	z.edge = 2 - z.hIntegralInv(z.hIntegral(2.5)-z.h(2))
	return z
}

func (z *zipf) draw(rng *rand.Rand) int {
	for {
		u := z.hn + rng.Float64()*(z.hx1-z.hn)
		x := z.hIntegralInv(u)
		k := math.Floor(x + 0.5)
		k = min(max(k, 1), z.n)
		if k-x <= z.edge || u >= z.hIntegral(k+0.5)-z.h(k) {
			return int(k)
		}
	}
}

func (z *zipf) h(x float64) float64 { return math.Exp(-z.s * math.Log(x)) }

func (z *zipf) hIntegral(x float64) float64 {
	lx := math.Log(x)
	return expm1Over((1-z.s)*lx) * lx
}

func (z *zipf) hIntegralInv(x float64) float64 {
	t := x * (1 - z.s)
	if t < -1 {
		t = -1 // rounding near the end of the range
	}
	return math.Exp(log1pOver(t) * x)
}

// expm1Over returns (e^x - 1) / x, 1 at 0.
func expm1Over(x float64) float64 {
	if math.Abs(x) < 1e-8 {
		return 1 + x/2
	}
	return math.Expm1(x) / x
}

// log1pOver returns log(1 + x) / x, 1 at 0.
func log1pOver(x float64) float64 {
	if math.Abs(x) < 1e-8 {
		return 1 - x/2
	}
	return math.Log1p(x) / x
}
