package join

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"sync"
	"time"
)

// Objective is what the adaptive choice optimises.
type Objective uint8

// The objectives of the study's decision tree.
const (
	// Throughput: the earliest last match of a window.
	Throughput Objective = iota
	// Latency: the least delay between a match's later input and the match.
	Latency
	// Progressiveness: matches as early in the window as possible.
	Progressiveness
)

// String returns the objective's name.
func (o Objective) String() string {
	switch o {
	case Throughput:
		return "throughput"
	case Latency:
		return "latency"
	case Progressiveness:
		return "progressiveness"
	}
	return fmt.Sprintf("Objective(%d)", uint8(o))
}

// ParseObjective returns the objective called name.
func ParseObjective(name string) (Objective, error) {
	for o := Throughput; o <= Progressiveness; o++ {
		if o.String() == name {
			return o, nil
		}
	}
	return 0, fmt.Errorf("%w: objective %q, want throughput, latency or progressiveness", ErrOptions, name)
}

// Features describe a window for the decision: what the study's tree
// branches on, measured cheaply (counts, the time span, a sample of keys).
type Features struct {
	// R and S are the window's tuples per side.
	R, S int
	// RateR and RateS are the arrival rates in tuples per ms; +Inf for a
	// side whose tuples all have one time (data at rest).
	RateR, RateS float64
	// Dupe estimates the mean number of tuples per key on the side that
	// repeats its keys less, from a sample.
	Dupe float64
	// Skew is the share of the sample held by its most frequent key.
	Skew float64
	// Workers is the kernel's worker count.
	Workers int
}

// MarshalJSON writes the features with a rate of data at rest (+Inf) as
// null: JSON has no infinity.
func (f Features) MarshalJSON() ([]byte, error) {
	type plain Features
	return json.Marshal(struct {
		plain
		RateR *float64 `json:"RateR"`
		RateS *float64 `json:"RateS"`
	}{plain(f), finite(f.RateR), finite(f.RateS)})
}

// UnmarshalJSON reads what MarshalJSON writes.
func (f *Features) UnmarshalJSON(b []byte) error {
	type plain Features
	var v struct {
		plain
		RateR *float64 `json:"RateR"`
		RateS *float64 `json:"RateS"`
	}
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	*f = Features(v.plain)
	f.RateR, f.RateS = infinite(v.RateR), infinite(v.RateS)
	return nil
}

func finite(x float64) *float64 {
	if math.IsInf(x, 0) || math.IsNaN(x) {
		return nil
	}
	return &x
}

func infinite(p *float64) float64 {
	if p == nil {
		return math.Inf(1)
	}
	return *p
}

// sampleCap is the most keys a side's sample keeps.
const sampleCap = 8192

// Measure computes the Features of a window whose tuples are r and s, with
// times in units of unit (time.Nanosecond when 0).
func Measure(r, s []Tuple, unit time.Duration, workers int) Features {
	var f Features
	var sr, ss sampler
	for i := range r {
		sr.add(&r[i])
	}
	for i := range s {
		ss.add(&s[i])
	}
	f.R, f.S = len(r), len(s)
	f.RateR, f.RateS = sr.rate(unit), ss.rate(unit)
	f.Dupe, f.Skew = dupeSkew(sr.keys, ss.keys, f.R, f.S)
	f.Workers = workers
	return f
}

// sampler watches one side of a window: its count, its time span and a
// systematic sample of its keys (every stride-th, the stride doubling as
// the sample fills).
type sampler struct {
	n          int
	lo, hi     int64
	keys       []uint64
	stride, at int
}

func (s *sampler) add(t *Tuple) {
	if s.n == 0 {
		s.lo, s.hi = t.TS, t.TS
		if s.stride == 0 {
			s.stride = 1
		}
	}
	s.n++
	s.lo, s.hi = min(s.lo, t.TS), max(s.hi, t.TS)
	s.at++
	if s.at < s.stride {
		return
	}
	s.at = 0
	if len(s.keys) == sampleCap {
		// Keep every other key and sample half as often.
		for i := range sampleCap / 2 {
			s.keys[i] = s.keys[2*i]
		}
		s.keys = s.keys[:sampleCap/2]
		s.stride *= 2
	}
	s.keys = append(s.keys, t.Key)
}

func (s *sampler) reset() {
	s.n, s.at, s.stride = 0, 0, 1
	s.keys = s.keys[:0]
}

// rate returns the side's tuples per ms.
func (s *sampler) rate(unit time.Duration) float64 {
	if unit == 0 {
		unit = time.Nanosecond
	}
	if s.n == 0 {
		return 0
	}
	span := float64(s.hi-s.lo) * float64(unit) / float64(time.Millisecond)
	if span <= 0 {
		return math.Inf(1)
	}
	// n tuples over a span make n-1 gaps: v per ms gives exactly v.
	return float64(s.n-1) / span
}

// dupeSkew estimates from the samples of two sides of nr and ns tuples the
// duplication of the less duplicated side (the mean number of tuples a
// tuple shares its key with on its side, the sum of the squared key counts
// over the tuples: 1 for unique keys, d for d duplicates of every key, from
// the pairs of equal keys in each sample), and the sampled share of the
// most frequent key on either side. A join is costly to hash when both
// sides repeat their keys: a few campaigns joined with many events is a
// probe of a small table per event, no worse than unique keys.
func dupeSkew(a, b []uint64, nr, ns int) (dupe, skew float64) {
	da, ta := sideDupe(a, nr)
	db, tb := sideDupe(b, ns)
	switch {
	case len(a) == 0 && len(b) == 0:
		return 1, 0
	case len(a) == 0:
		return db, tb
	case len(b) == 0:
		return da, ta
	}
	return min(da, db), max(ta, tb)
}

func sideDupe(keys []uint64, n int) (dupe, top float64) {
	m := len(keys)
	if m == 0 {
		return 1, 0
	}
	counts := make(map[uint64]int, m)
	for _, k := range keys {
		counts[k]++
	}
	pairs, most := 0, 0
	for _, c := range counts {
		pairs += c * (c - 1) / 2
		most = max(most, c)
	}
	// A pair of tuples of one key is in the sample with probability p*p.
	p := float64(m) / float64(n)
	return 1 + 2*float64(pairs)/(p*p*float64(n)), float64(most) / float64(m)
}

// Config is the adaptive choice's thresholds and learning knobs.
type Config struct {
	// Objective is what to optimise (default Throughput).
	Objective Objective
	// LowRate: a side arriving at it or below (tuples/ms) is slow, and an
	// eager join keeps up with it (default 2,000: the study's low rate is
	// 1,600, and a stream of 1,600 per ms whose last tuple comes before the
	// window's end measures a little more).
	LowRate float64
	// EagerMax: the most tuples per ms, both sides together, an eager
	// kernel keeps up with; above it a slow side does not make the choice
	// eager, as its backlog would outgrow a lazy join's wait (default
	// 16,000: on two cores shj-jm kept up with 1,600 + 1,600, 1,600 +
	// 6,400 and 1,600 + 12,800 tuples/ms, where it measured 1.36x prj's
	// throughput).
	EagerMax float64
	// HighRate: both sides at or above it (tuples/ms) is a high rate,
	// where lazy joins win (default 6,400: at 6,400 a side shj-jm kept up
	// on a quiet machine, 1.05x prj's throughput, and fell behind on a
	// busy one, 0.41x).
	HighRate float64
	// DupeHigh: more tuples per key than this is high duplication, where
	// sort-based joins win (default 10).
	DupeHigh float64
	// SkewHigh: a sampled top-key share above this is skewed (default
	// 0.05).
	SkewHigh float64
	// ManyWorkers: at least this many workers is the study's large core
	// count, where high duplication picks mpass (its two-way passes scale
	// better); below it, mway (default 8, the most threads the study ran).
	// At 2 workers the two merge alike (one two-way merge of each side's
	// two runs), and mway keeps no scratch buffers for passes.
	ManyWorkers int
	// LargeWindow: R above this many tuples is large, where PRJ's
	// partitioning pays off (default 65,536: PRJ measured ahead of NPJ
	// from 160,000 tuples a side up, unique keys, 2 workers).
	LargeWindow int
	// Margin: a measured algorithm replaces the rules' choice when its
	// cost is lower by more than this fraction (default 0.1).
	Margin float64
	// ExploreEvery: every this many windows in a class, one window runs
	// the candidate measured least (default 16; negative: never).
	ExploreEvery int
	// History is how many decisions are kept (default 256).
	History int
	// TSUnit is the unit of the tuples' TS (default time.Nanosecond).
	TSUnit time.Duration
}

// DefaultConfig returns the defaults above.
func DefaultConfig() Config {
	return Config{
		LowRate: 2000, EagerMax: 16_000, HighRate: 6400, DupeHigh: 10, SkewHigh: 0.05, ManyWorkers: 8, LargeWindow: 65_536,
		Margin: 0.1, ExploreEvery: 16, History: 256, TSUnit: time.Nanosecond,
	}
}

// Decision is one window's record: the features the choice was made on,
// the algorithm and why, and what the window cost.
type Decision struct {
	Window    uint64   `json:"window"`
	Algorithm string   `json:"algorithm"`
	Rule      string   `json:"rule"`   // the decision tree's choice
	Reason    string   `json:"reason"` // rule, measured or explore
	Features  Features `json:"features"`
	// Measured is the window's features as it ran.
	Measured Features `json:"measured"`
	// Cost is what the window cost under the objective (see NewAuto).
	Cost time.Duration `json:"cost"`
	// Busy is the time spent inside the kernel's calls.
	Busy time.Duration `json:"busy"`
}

// Rule returns the study's decision tree's choice for f under cfg, and the
// branch that chose it. "Sort-merge" is mway below ManyWorkers workers and
// mpass from there (the study: MPass scales better with many cores).
//
//   - at least one slow side (LowRate or less) with at most EagerMax
//     tuples per ms in all and low duplication, or a small side (at most
//     LargeWindow tuples) at rest beside a stream: shj-jm; a slow side
//     with high duplication: sort-merge (shj-jm ran at under half mpass's
//     throughput at Zipf 0.8, 1,600 tuples/ms); a slow side beside a fast
//     one above EagerMax: the lazy choice below;
//   - both sides fast (HighRate or more) or data at rest: lazy;
//     sort-merge when duplication is high, else prj for a large window
//     with low skew, else npj;
//   - in between: sort-merge with high duplication (the study's tree has
//     pmj-jb here; on two cores the lazy sort-merge measured ahead of it
//     on all three metrics, on the rovio shape); otherwise shj-jm for
//     latency and progressiveness, and the lazy choice for throughput.
func (c Config) Rule(f Features) (name, branch string) {
	sortMerge := "mway"
	if f.Workers >= c.ManyWorkers {
		sortMerge = "mpass"
	}
	lazy := func() (string, string) {
		switch {
		case f.Dupe > c.DupeHigh:
			return sortMerge, "high duplication: sort-merge"
		case f.R > c.LargeWindow && f.Skew <= c.SkewHigh:
			return "prj", "large window, low skew: radix partitions"
		}
		return "npj", "low duplication: shared hash table"
	}
	lo := min(f.RateR, f.RateS)
	atRest := func(rate float64, n int) bool { return math.IsInf(rate, 1) && n <= c.LargeWindow }
	switch {
	case f.R == 0 || f.S == 0:
		return "npj", "an empty side"
	case !math.IsInf(lo, 1) && (atRest(f.RateR, f.R) || atRest(f.RateS, f.S)):
		return "shj-jm", "a small side at rest: eager, each arrival probes a table in cache"
	case lo <= c.LowRate && f.RateR+f.RateS <= c.EagerMax && f.Dupe <= c.DupeHigh:
		return "shj-jm", "a slow side: eager, join-matrix"
	case lo <= c.LowRate && f.Dupe > c.DupeHigh:
		return sortMerge, "a slow side, high duplication: sort-merge"
	case lo <= c.LowRate:
		n, b := lazy()
		return n, "a slow side, too many tuples for eager: " + b
	case lo >= c.HighRate:
		n, b := lazy()
		return n, "high rate, " + b
	case f.Dupe > c.DupeHigh:
		return sortMerge, "medium rate, high duplication: sort-merge"
	case c.Objective != Throughput:
		return "shj-jm", "medium rate, " + c.Objective.String() + ": eager, join-matrix"
	}
	n, b := lazy()
	return n, "medium rate, throughput: " + b
}

// cost is an algorithm's measured cost in one class of windows.
type cost struct {
	mean float64 // seconds, an exponential moving average
	n    int
}

// class is a coarse class of windows the measured costs are kept per.
type class struct {
	rule             string
	size, dupe, skew int8
}

func classOf(rule string, f Features, c Config) class {
	return class{
		rule: rule,
		size: decade(float64(f.R+f.S), 1000),
		dupe: decade(f.Dupe, 1),
		skew: boolClass(f.Skew > c.SkewHigh),
	}
}

func boolClass(b bool) int8 {
	if b {
		return 1
	}
	return 0
}

func decade(x, unit float64) int8 {
	if !(x >= unit) {
		return 0
	}
	return int8(min(1+int(math.Log10(x/unit)), 9))
}

// autoKernel chooses one algorithm per window and learns from what each
// window cost (see NewAuto).
type autoKernel struct {
	opts  Options
	cfg   Config
	kerns map[string]Kernel

	cur      Kernel
	decision Decision
	hint     *Features
	last     *Features
	side     [2]sampler
	busy     time.Duration
	started  bool

	windows uint64
	seen    map[class]uint64
	costs   map[class]map[string]*cost

	mu      sync.Mutex
	history []Decision
	next    int
}

// AutoKernel is the adaptive kernel: a Kernel that runs one of the eight
// algorithms per window, with its decisions for status pages.
type AutoKernel interface {
	// Lazy: Join takes a whole window, with the chosen kernel's Join
	// when that is lazy.
	Lazy
	// Hint gives the features of the next window when the caller knows
	// them better than the last window does (a benchmark's generator, a
	// configured rate).
	Hint(f Features)
	// Decisions returns up to n of the latest decisions, oldest first (all
	// when n <= 0).
	Decisions(n int) []Decision
}

// NewAuto returns the adaptive kernel. Each window starts with a choice
// from the features of the window before it (or those given to Hint), by
// the study's decision tree (Config.Rule) unless a measured algorithm in
// the same class of windows (the rule's choice, decades of size and
// duplication, skewed or not) was cheaper by more than Margin; every
// ExploreEvery windows of a class, the candidate measured least runs
// instead. A window's cost is the delay it added under the objective,
// from the kernel's own calls: for throughput, the time its Close took
// plus however far its Add calls fell behind the window's span (an eager
// algorithm that cannot keep up ends late); for latency and
// progressiveness, the same plus half the window's span for a lazy
// algorithm, whose matches all wait for the window's end.
func NewAuto(o Options, cfg Config) (AutoKernel, error) {
	o, err := o.withDefaults()
	if err != nil {
		return nil, err
	}
	return newAuto(o, cfg), nil
}

func newAuto(o Options, cfg Config) *autoKernel {
	d := DefaultConfig()
	if cfg.LowRate == 0 {
		cfg.LowRate = d.LowRate
	}
	if cfg.EagerMax == 0 {
		cfg.EagerMax = d.EagerMax
	}
	if cfg.HighRate == 0 {
		cfg.HighRate = d.HighRate
	}
	if cfg.DupeHigh == 0 {
		cfg.DupeHigh = d.DupeHigh
	}
	if cfg.SkewHigh == 0 {
		cfg.SkewHigh = d.SkewHigh
	}
	if cfg.ManyWorkers == 0 {
		cfg.ManyWorkers = d.ManyWorkers
	}
	if cfg.LargeWindow == 0 {
		cfg.LargeWindow = d.LargeWindow
	}
	if cfg.Margin == 0 {
		cfg.Margin = d.Margin
	}
	if cfg.ExploreEvery == 0 {
		cfg.ExploreEvery = d.ExploreEvery
	}
	if cfg.History <= 0 {
		cfg.History = d.History
	}
	if cfg.TSUnit == 0 {
		cfg.TSUnit = d.TSUnit
	}
	return &autoKernel{
		opts: o, cfg: cfg, kerns: map[string]Kernel{},
		seen: map[class]uint64{}, costs: map[class]map[string]*cost{},
	}
}

func (a *autoKernel) Name() string { return Auto }

func (a *autoKernel) Hint(f Features) { a.hint = &f }

func (a *autoKernel) kernel(name string) Kernel {
	k, ok := a.kerns[name]
	if !ok {
		alg, _ := ByName(name)
		k = alg.mk(a.opts)
		a.kerns[name] = k
	}
	return k
}

// candidates are the algorithms explored beside a rule's choice: the lazy
// ones where the rule is lazy, and the eager ones and the best-known lazy
// one where it is eager.
func candidates(rule string) []string {
	if alg, _ := ByName(rule); alg.Lazy {
		return []string{"npj", "prj", "mway", "mpass"}
	}
	return []string{"shj-jm", "shj-jb", "pmj-jm", "pmj-jb", "npj"}
}

// choose picks the algorithm for a window with features f.
func (a *autoKernel) choose(f Features) Decision {
	rule, branch := a.cfg.Rule(f)
	d := Decision{Window: a.windows, Rule: rule, Algorithm: rule, Reason: "rule: " + branch, Features: f}
	cl := classOf(rule, f, a.cfg)
	a.seen[cl]++
	costs := a.costs[cl]
	if a.cfg.ExploreEvery > 0 && a.seen[cl]%uint64(a.cfg.ExploreEvery) == 0 {
		least, name := math.MaxInt, ""
		for _, c := range candidates(rule) {
			n := 0
			if k := costs[c]; k != nil {
				n = k.n
			}
			if n < least {
				least, name = n, c
			}
		}
		d.Algorithm, d.Reason = name, "explore"
		return d
	}
	if base := costs[rule]; base != nil {
		best := base.mean * (1 - a.cfg.Margin)
		for name, c := range costs {
			if name != rule && c.mean < best {
				best = c.mean
				d.Algorithm = name
				d.Reason = fmt.Sprintf("measured: %.3gs against the rule's %.3gs", c.mean, base.mean)
			}
		}
	}
	return d
}

func (a *autoKernel) start() {
	f := Features{Workers: a.opts.Workers}
	if a.hint != nil {
		f = *a.hint
	} else if a.last != nil {
		f = *a.last
	}
	a.decision = a.choose(f)
	a.cur = a.kernel(a.decision.Algorithm)
	a.side[0].reset()
	a.side[1].reset()
	a.busy = 0
	a.started = true
}

func (a *autoKernel) Add(ctx context.Context, side Side, ts []Tuple, emit Emit) error {
	if side != R && side != S {
		return ErrSide
	}
	if !a.started {
		a.start()
	}
	sm := &a.side[side]
	for i := range ts {
		sm.add(&ts[i])
	}
	t0 := time.Now()
	err := a.cur.Add(ctx, side, ts, emit)
	a.busy += time.Since(t0)
	return err
}

// Join joins a whole window at once: with the chosen kernel's Join when
// it is lazy, through Add and Close otherwise. The features are taken from
// r and s (each in time order) by their ends and a sample of their keys.
func (a *autoKernel) Join(ctx context.Context, r, s []Tuple, emit Emit) error {
	if !a.started {
		a.start()
	}
	l, ok := a.cur.(Lazy)
	if !ok {
		if err := a.Add(ctx, R, r, emit); err != nil {
			return err
		}
		if err := a.Add(ctx, S, s, emit); err != nil {
			return err
		}
		return a.Close(ctx, emit)
	}
	for side, ts := range [2][]Tuple{r, s} {
		sm := &a.side[side]
		if len(ts) == 0 {
			continue
		}
		stride := max(len(ts)/sampleCap, 1)
		for i := 0; i < len(ts); i += stride {
			sm.keys = append(sm.keys, ts[i].Key)
		}
		sm.n, sm.lo, sm.hi = len(ts), ts[0].TS, ts[len(ts)-1].TS
	}
	t0 := time.Now()
	err := l.Join(ctx, r, s, emit)
	return a.finish(err, 0, time.Since(t0))
}

func (a *autoKernel) Close(ctx context.Context, emit Emit) error {
	if !a.started {
		a.start()
	}
	t0 := time.Now()
	err := a.cur.Close(ctx, emit)
	return a.finish(err, a.busy, time.Since(t0))
}

// finish ends a window whose Add calls took adding and whose closing
// (Close, or a whole Join) took closing: it learns what the window cost
// and resets for the next.
func (a *autoKernel) finish(err error, adding, closing time.Duration) error {
	a.busy = adding + closing
	a.started = false
	a.hint = nil
	if err != nil {
		return err
	}
	sr, ss := &a.side[0], &a.side[1]
	m := Features{R: sr.n, S: ss.n, RateR: sr.rate(a.cfg.TSUnit), RateS: ss.rate(a.cfg.TSUnit), Workers: a.opts.Workers}
	m.Dupe, m.Skew = dupeSkew(sr.keys, ss.keys, m.R, m.S)
	span := time.Duration(0)
	if m.R+m.S > 0 {
		lo, hi := min(sr.lo, ss.lo), max(sr.hi, ss.hi)
		if sr.n == 0 {
			lo, hi = ss.lo, ss.hi
		} else if ss.n == 0 {
			lo, hi = sr.lo, sr.hi
		}
		span = time.Duration(hi-lo) * a.cfg.TSUnit
	}
	c := closing + max(0, adding-span)
	if alg, _ := ByName(a.decision.Algorithm); alg.Lazy && a.cfg.Objective != Throughput {
		c += span / 2
	}
	a.learn(a.decision, m, c)
	a.last = &m
	return nil
}

// learn records what the window cost.
func (a *autoKernel) learn(d Decision, m Features, c time.Duration) {
	cl := classOf(d.Rule, d.Features, a.cfg)
	costs := a.costs[cl]
	if costs == nil {
		costs = map[string]*cost{}
		a.costs[cl] = costs
	}
	k := costs[d.Algorithm]
	if k == nil {
		k = &cost{}
		costs[d.Algorithm] = k
	}
	k.n++
	w := max(1/float64(k.n), 0.25)
	k.mean += w * (c.Seconds() - k.mean)
	d.Measured, d.Cost, d.Busy = m, c, a.busy
	a.windows++
	a.mu.Lock()
	defer a.mu.Unlock()
	if len(a.history) < a.cfg.History {
		a.history = append(a.history, d)
		return
	}
	a.history[a.next] = d
	a.next = (a.next + 1) % len(a.history)
}

func (a *autoKernel) Decisions(n int) []Decision {
	a.mu.Lock()
	defer a.mu.Unlock()
	if n <= 0 || n > len(a.history) {
		n = len(a.history)
	}
	out := make([]Decision, n)
	for i := range out {
		out[i] = a.history[(a.next+len(a.history)-n+i)%len(a.history)]
	}
	return out
}
