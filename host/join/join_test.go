package join

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"testing"

	"go.uber.org/goleak"
	"pgregory.net/rapid"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// collector gathers a kernel's matches from all its workers.
type collector struct {
	mu sync.Mutex
	ms []Match
}

func (c *collector) emit(_ int, ms []Match) {
	c.mu.Lock()
	c.ms = append(c.ms, ms...)
	c.mu.Unlock()
}

// genTuples draws n tuples of one side: keys from an alphabet from 1 key
// (every tuple equal) to twice n (mostly unique), uniform or Zipf-skewed
// (exponent 0.5 to 2), small or spread over 64 bits, with increasing
// times, a few units apart or billions (a window whose times span more
// than 32 bits, as nanoseconds do in a window over 4.3 s: a kernel that
// narrowed them would be caught).
func genTuples(t *rapid.T, label string, n int) []Tuple {
	alphabet := rapid.IntRange(1, 2*n+1).Draw(t, label+"-alphabet")
	skew := rapid.SampledFrom([]float64{0, 0.5, 1, 2}).Draw(t, label+"-zipf")
	big := rapid.Bool().Draw(t, label+"-bigkeys")
	step := int64(1)
	if rapid.Bool().Draw(t, label+"-widetimes") {
		step = 1 << 31
	}
	var z *zipf
	if skew > 0 {
		z = newZipf(skew, alphabet)
	}
	rng := rand.New(rand.NewPCG(rapid.Uint64().Draw(t, label+"-seed"), 0))
	ts := make([]Tuple, n)
	var now int64
	for i := range ts {
		var k uint64
		if z != nil {
			k = uint64(z.draw(rng) - 1)
		} else {
			k = uint64(rapid.IntRange(0, alphabet-1).Draw(t, "k"))
		}
		if big {
			k = k*0x9E3779B97F4A7C15 | 1<<63
		}
		now += step * int64(rapid.IntRange(0, 3).Draw(t, "dt"))
		ts[i] = Tuple{Key: k, TS: now, Ref: uint32(i)}
	}
	return ts
}

// runKernel drives k through Add (in random batches, R and S interleaved
// in time order) and Close, or through Join for a lazy kernel when
// direct, and returns the matches.
func runKernel(t *rapid.T, k Kernel, r, s []Tuple, direct bool) []Match {
	ctx := context.Background()
	var c collector
	if l, ok := k.(Lazy); ok && direct {
		if err := l.Join(ctx, r, s, c.emit); err != nil {
			t.Fatalf("%s: Join: %v", k.Name(), err)
		}
		return c.ms
	}
	i, j := 0, 0
	for i < len(r) || j < len(s) {
		// Mostly small calls, so that the sides interleave finely; some
		// longer than SHJ's probe block.
		n := rapid.IntRange(1, 8).Draw(t, "batch")
		if rapid.IntRange(0, 3).Draw(t, "long") == 0 {
			n = rapid.IntRange(probeBlock+1, 3*probeBlock).Draw(t, "long-batch")
		}
		side, src, at := R, r, &i
		if i == len(r) || (j < len(s) && s[j].TS < r[i].TS) {
			side, src, at = S, s, &j
		}
		end := min(*at+n, len(src))
		if err := k.Add(ctx, side, src[*at:end], c.emit); err != nil {
			t.Fatalf("%s: Add: %v", k.Name(), err)
		}
		*at = end
	}
	if err := k.Close(ctx, c.emit); err != nil {
		t.Fatalf("%s: Close: %v", k.Name(), err)
	}
	return c.ms
}

// TestKernelsAgainstNestedLoop checks every kernel, and auto, against the
// nested-loop join on random windows: random sizes including empty sides,
// heavy duplication and skewed keys, 1 to 5 workers, small and big keys,
// and PRJ's radix bits and PMJ's run size at random. Each kernel runs two
// windows in a row, so reused buffers must not leak one window into the
// next.
func TestKernelsAgainstNestedLoop(t *testing.T) {
	for _, name := range Names() {
		t.Run(name, func(t *testing.T) {
			rapid.Check(t, func(t *rapid.T) {
				o := Options{
					Workers:   rapid.IntRange(1, 5).Draw(t, "workers"),
					RadixBits: rapid.IntRange(0, 12).Draw(t, "bits"),
					Group:     rapid.IntRange(1, 4).Draw(t, "group"),
					Delta:     rapid.SampledFrom([]float64{0.01, 0.2, 1}).Draw(t, "delta"),
					pmjMinRun: rapid.IntRange(1, 64).Draw(t, "minrun"),
				}
				k, err := New(name, o)
				if err != nil {
					t.Fatal(err)
				}
				maxN := 300
				if raceEnabled {
					maxN = 100
				}
				for range 2 {
					r := genTuples(t, "r", rapid.IntRange(0, maxN).Draw(t, "nr"))
					s := genTuples(t, "s", rapid.IntRange(0, maxN).Draw(t, "ns"))
					want := NestedLoop(r, s)
					got := runKernel(t, k, r, s, rapid.Bool().Draw(t, "direct"))
					SortMatches(want)
					SortMatches(got)
					if !slices.Equal(got, want) {
						t.Fatalf("%s: %d matches, want %d\n got %v\nwant %v", name, len(got), len(want), head(got), head(want))
					}
				}
			})
		})
	}
}

func head(ms []Match) []Match { return ms[:min(len(ms), 10)] }

// TestKernelsLargeAgainstCount checks every kernel's match count on inputs
// large enough for PMJ's several runs, PRJ's two passes and long chains,
// against the hash count.
func TestKernelsLargeAgainstCount(t *testing.T) {
	n := 30_000
	if testing.Short() || raceEnabled {
		n = 3_000
	}
	for _, shape := range []struct {
		name string
		gen  Micro
	}{
		{"unique", Micro{RateR: n, RateS: n, Window: 1, Dupe: 1, Seed: 1}},
		{"dupe20", Micro{RateR: n, RateS: n, Window: 1, Dupe: 20, Seed: 2}},
		{"zipf1", Micro{RateR: n, RateS: n / 2, Window: 1, KeySkew: 1, Seed: 3}},
	} {
		r, s, err := shape.gen.Generate()
		if err != nil {
			t.Fatal(err)
		}
		want := CountMatches(r, s)
		for _, name := range Names() {
			t.Run(shape.name+"/"+name, func(t *testing.T) {
				for _, workers := range []int{1, 3} {
					k, err := New(name, Options{Workers: workers, RadixBits: 10, Expected: n})
					if err != nil {
						t.Fatal(err)
					}
					var c counter
					ctx := context.Background()
					feed(t, ctx, k, r, s, 997, c.emit)
					if got := c.n.Load(); got != want {
						t.Fatalf("%s, %d workers: %d matches, want %d", name, workers, got, want)
					}
				}
			})
		}
	}
}

// feed drives k with batches of size of each side in time order, then
// closes the window.
func feed(t testing.TB, ctx context.Context, k Kernel, r, s []Tuple, size int, emit Emit) {
	t.Helper()
	i, j := 0, 0
	for i < len(r) || j < len(s) {
		side, src, at := R, r, &i
		if i == len(r) || (j < len(s) && s[j].TS < r[i].TS) {
			side, src, at = S, s, &j
		}
		end := min(*at+size, len(src))
		if err := k.Add(ctx, side, src[*at:end], emit); err != nil {
			t.Fatal(err)
		}
		*at = end
	}
	if err := k.Close(ctx, emit); err != nil {
		t.Fatal(err)
	}
}

func TestNewErrors(t *testing.T) {
	if _, err := New("hash", Options{}); !errors.Is(err, ErrUnknown) {
		t.Errorf("New(hash): %v, want ErrUnknown", err)
	}
	for _, o := range []Options{{Workers: -1}, {RadixBits: 17}, {Delta: 2}, {Group: -1}} {
		if _, err := New("npj", o); !errors.Is(err, ErrOptions) {
			t.Errorf("New(npj, %+v): %v, want ErrOptions", o, err)
		}
	}
	k, _ := New("shj-jm", Options{Workers: 1})
	if err := k.Add(context.Background(), Side(7), nil, nil); !errors.Is(err, ErrSide) {
		t.Errorf("Add(Side(7)): %v, want ErrSide", err)
	}
	if got := fmt.Sprint(len(Names())); got != "9" {
		t.Errorf("%s names, want 9", got)
	}
}

func TestCancel(t *testing.T) {
	m := Micro{RateR: 100_000, RateS: 100_000, Window: 1, Dupe: 1, Seed: 4}
	r, s, err := m.Generate()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	for _, a := range Algorithms() {
		if !a.Lazy {
			continue
		}
		k, _ := New(a.Name, Options{Workers: 2})
		if err := k.(Lazy).Join(ctx, r, s, func(int, []Match) {}); !errors.Is(err, context.Canceled) {
			t.Errorf("%s: Join under a cancelled context: %v", a.Name, err)
		}
	}
}

func TestMatched(t *testing.T) {
	r := []Tuple{{Key: 1, Ref: 0}, {Key: 2, Ref: 1}, {Key: 3, Ref: 2}}
	s := []Tuple{{Key: 2, Ref: 0}, {Key: 4, Ref: 1}, {Key: 2, Ref: 2}}
	m := NewMatched(len(r), len(s))
	k, _ := New("npj", Options{Workers: 2})
	if err := k.(Lazy).Join(context.Background(), r, s, m.Emit(nil)); err != nil {
		t.Fatal(err)
	}
	if got := m.Unmatched(nil, R, len(r)); !slices.Equal(got, []uint32{0, 2}) {
		t.Errorf("unmatched R %v, want [0 2]", got)
	}
	if got := m.Unmatched(nil, S, len(s)); !slices.Equal(got, []uint32{1}) {
		t.Errorf("unmatched S %v, want [1]", got)
	}
	m.Reset(3, 3)
	if got := m.Unmatched(nil, S, 3); len(got) != 3 {
		t.Errorf("after Reset, unmatched S %v, want all", got)
	}
}

// counter counts a kernel's matches.
type counter struct{ n atomic.Uint64 }

func (c *counter) emit(_ int, ms []Match) { c.n.Add(uint64(len(ms))) }

// TestLazyKernelsReuse checks that a lazy kernel joining a window of the
// size of the one before allocates only a few small objects (its phases'
// goroutines, PRJ's partition bounds), not its tables and buffers again.
func TestLazyKernelsReuse(t *testing.T) {
	r, s, err := Micro{RateR: 20_000, RateS: 20_000, Window: 1, Dupe: 2, Seed: 5}.Generate()
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for _, a := range Algorithms() {
		if !a.Lazy {
			continue
		}
		k, _ := New(a.Name, Options{Workers: 3, RadixBits: 12}) // PRJ: two passes
		join := func() {
			if err := k.(Lazy).Join(ctx, r, s, func(int, []Match) {}); err != nil {
				t.Fatal(err)
			}
		}
		join()
		if n := testing.AllocsPerRun(3, join); n > 40 {
			t.Errorf("%s: %.0f allocations per window after the first", a.Name, n)
		}
	}
}
