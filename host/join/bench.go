package join

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"math/bits"
	"os"
	"runtime"
	"slices"
	"strings"
	"sync/atomic"
	"text/tabwriter"
	"time"
)

// ErrWrongCount is returned by RunBench when a kernel's match count
// differs from the independent count: the run's figures are not reported.
var ErrWrongCount = errors.New("join: wrong match count")

// BenchOptions configure RunBench.
type BenchOptions struct {
	// Algorithms to run, side by side on each window ("auto" included).
	Algorithms []string
	// Workers is every kernel's worker count (default GOMAXPROCS).
	Workers int
	// Workload is micro or one of Shapes().
	Workload string
	// Micro are the knobs of the micro workload; Sweep, when not empty,
	// runs one window per point instead.
	Micro Micro
	// Sweep is a list of micro workloads to run one after another (a
	// sweep of one knob): every algorithm runs on each.
	Sweep []Micro
	// Seed draws the shapes (Micro carries its own).
	Seed uint64
	// Objective is auto's objective.
	Objective Objective
	// Progress, if not nil, receives a line per run.
	Progress io.Writer
	// Repeat runs every algorithm this many times on each window, in
	// rounds (every algorithm once per round, so that a change in the
	// machine's load falls on all of them), and reports each one's run of
	// median throughput (default 1).
	Repeat int
	// Warmup runs every algorithm this many times on each window before
	// the measured rounds, in rounds too, and records nothing from them
	// but a wrong match count: every kernel, auto's choices included, has
	// its buffers when the measured rounds start, as in a stream past its
	// first windows (default 0).
	Warmup int

	// newKernel replaces New in the package's tests (a broken kernel
	// must make the run fail).
	newKernel func(name string, o Options) (Kernel, error)
}

// QuickMicro is the micro workload of --quick: 1/100 of the study's
// default rate, so every algorithm runs in milliseconds.
func QuickMicro() Micro { return Micro{RateR: 128, RateS: 128, Window: 200, Dupe: 1, Seed: 1} }

// DefaultMicro is the study's default micro workload: w = 1 s, v = 12,800
// tuples/ms per side, unique keys, uniform arrivals.
func DefaultMicro() Micro { return Micro{RateR: 12800, RateS: 12800, Window: 1000, Dupe: 1, Seed: 1} }

// BenchReport is what RunBench measured.
type BenchReport struct {
	Date       time.Time    `json:"date"`
	GOOS       string       `json:"goos"`
	GOARCH     string       `json:"goarch"`
	GoVersion  string       `json:"go_version"`
	NumCPU     int          `json:"num_cpu"`
	GOMAXPROCS int          `json:"gomaxprocs"`
	Load       string       `json:"load_before,omitempty"`
	LoadAfter  string       `json:"load_after,omitempty"`
	Workers    int          `json:"workers"`
	Objective  string       `json:"objective"`
	Points     []BenchPoint `json:"points"`
}

// BenchPoint is one window and every algorithm's results on it.
type BenchPoint struct {
	Workload string `json:"workload"`
	// Params describes the workload (the micro knobs or the shape).
	Params   string        `json:"params"`
	R        int           `json:"r"`
	S        int           `json:"s"`
	Window   int           `json:"window_ms"`
	Matches  uint64        `json:"matches"`
	Check    string        `json:"check"` // nested loop or hash count
	Repeat   int           `json:"repeat"`
	Warmup   int           `json:"warmup,omitempty"`
	Features Features      `json:"features"`
	Results  []BenchResult `json:"results"`
}

// BenchResult is one algorithm's figures on one window, as the study
// defines them, with real clocks from the window's start: eager
// algorithms are fed each tuple once the clock reaches its time; lazy ones
// get the window at its end (its length on the clock) and join it then.
type BenchResult struct {
	Algorithm string `json:"algorithm"`
	// Throughputs are every run's throughput when the window ran more
	// than once; the other figures are the median run's.
	Throughputs []float64 `json:"throughputs,omitempty"`
	// Chosen is the algorithm auto ran.
	Chosen string `json:"chosen,omitempty"`
	Reason string `json:"reason,omitempty"`
	// Throughput is the inputs over the time of the last match, per s.
	Throughput float64 `json:"throughput"`
	// LastMatch is the time of the last match from the window's start.
	LastMatch time.Duration `json:"last_match_ns"`
	// P95 is the 95th percentile of a match's time minus the later
	// arrival of its two inputs.
	P95 time.Duration `json:"p95_latency_ns"`
	// T50 is when half the matches had been emitted.
	T50 time.Duration `json:"t50_ns"`
	// Busy is the time spent inside the kernel's calls: the join's own
	// cost, without the wait for arrivals.
	Busy time.Duration `json:"busy_ns"`
	// JoinRate is the inputs over Busy, per s.
	JoinRate float64 `json:"join_rate"`
	// CPU is the CPU time the process used during the run (all its
	// threads; 0 where not measured). On a machine shared with other work
	// the wall-clock figures stretch with the load; CPU much less.
	CPU     time.Duration `json:"cpu_ns"`
	Matches uint64        `json:"matches"`
}

// nestedLoopLimit is the most pairs the check counts by nested loop; above
// it, the hash count.
const nestedLoopLimit = 20_000_000

// RunBench runs every algorithm on each window of the workload (or
// sweep) and checks each run's match count against an independent count,
// failing with ErrWrongCount rather than report figures from a wrong run.
func RunBench(ctx context.Context, opts BenchOptions) (*BenchReport, error) {
	if opts.Workers == 0 {
		opts.Workers = runtime.GOMAXPROCS(0)
	}
	if opts.newKernel == nil {
		opts.newKernel = New
	}
	for _, name := range opts.Algorithms {
		if _, ok := ByName(name); !ok && name != Auto {
			return nil, fmt.Errorf("%w %q (want one of %v)", ErrUnknown, name, Names())
		}
	}
	rep := &BenchReport{
		Date: time.Now().UTC(), GOOS: runtime.GOOS, GOARCH: runtime.GOARCH, GoVersion: runtime.Version(),
		NumCPU: runtime.NumCPU(), GOMAXPROCS: runtime.GOMAXPROCS(0), Load: loadAvg(),
		Workers: opts.Workers, Objective: opts.Objective.String(),
	}
	var works []Workload
	var params []string
	switch {
	case opts.Workload == "micro" || opts.Workload == "":
		sweep := opts.Sweep
		if len(sweep) == 0 {
			sweep = []Micro{opts.Micro}
		}
		for _, m := range sweep {
			works = append(works, m.Workload())
			params = append(params, m.String())
		}
	default:
		w, err := Shape(opts.Workload, opts.Seed)
		if err != nil {
			return nil, err
		}
		works = append(works, w)
		params = append(params, fmt.Sprintf("|R|=%d |S|=%d w=%dms", w.R.N, w.S.N, w.Window))
	}
	for i, w := range works {
		pt, err := benchPoint(ctx, &opts, w, params[i], fmt.Sprintf("%d/%d", i+1, len(works)))
		if err != nil {
			return rep, err
		}
		rep.Points = append(rep.Points, pt)
	}
	rep.LoadAfter = loadAvg()
	return rep, nil
}

// String gives the knobs as the bench command's flags name them.
func (m Micro) String() string {
	return fmt.Sprintf("vR=%d vS=%d w=%dms dupe=%d key-skew=%g ts-skew=%g", m.RateR, m.RateS, m.Window, max(m.Dupe, 1), m.KeySkew, m.TSSkew)
}

func benchPoint(ctx context.Context, opts *BenchOptions, w Workload, params, at string) (BenchPoint, error) {
	progress := func(format string, args ...any) {
		if opts.Progress != nil {
			fmt.Fprintf(opts.Progress, "bench join: "+format+"\n", args...)
		}
	}
	progress("point %s: %s %s: generating", at, w.Name, params)
	r, s, err := w.Generate()
	if err != nil {
		return BenchPoint{}, err
	}
	pt := BenchPoint{Workload: w.Name, Params: params, R: len(r), S: len(s), Window: w.Window}
	if float64(len(r))*float64(len(s)) <= nestedLoopLimit {
		pt.Matches, pt.Check = uint64(len(NestedLoop(r, s))), "nested loop"
	} else {
		pt.Matches, pt.Check = CountMatches(r, s), "hash count"
	}
	pt.Features = Measure(r, s, time.Nanosecond, opts.Workers)
	pt.Repeat = max(opts.Repeat, 1)
	pt.Warmup = max(opts.Warmup, 0)
	runs := make([][]BenchResult, len(opts.Algorithms))
	// Each algorithm's kernel persists from round to round, as from window
	// to window of a stream: the first round allocates its buffers.
	kernels := map[string]Kernel{}
	for round := -pt.Warmup; round < pt.Repeat; round++ {
		for i, name := range opts.Algorithms {
			progress("point %s: %s (%d/%d)%s", at, name, i+1, len(opts.Algorithms), roundNote(round, pt.Repeat, pt.Warmup))
			res, err := benchOne(ctx, opts, kernels, name, r, s, w.Window, pt.Features, pt.Matches)
			if err != nil {
				return pt, fmt.Errorf("%s on %s %s: %w", name, w.Name, params, err)
			}
			if res.Matches != pt.Matches {
				return pt, fmt.Errorf("%w: %s on %s %s: %d matches, the %s gives %d", ErrWrongCount, name, w.Name, params, res.Matches, pt.Check, pt.Matches)
			}
			progress("point %s: %s: %.0f inputs/s, p95 %v, last match %v", at, name, res.Throughput, res.P95.Round(time.Microsecond), res.LastMatch.Round(time.Microsecond))
			if round >= 0 {
				runs[i] = append(runs[i], res)
			}
			runtime.GC() // the next run starts without this one's garbage
		}
	}
	for _, rs := range runs {
		pt.Results = append(pt.Results, median(rs))
	}
	return pt, nil
}

func roundNote(round, rounds, warmup int) string {
	if round < 0 {
		return fmt.Sprintf(", warm-up %d/%d", round+warmup+1, warmup)
	}
	if rounds == 1 {
		return ""
	}
	return fmt.Sprintf(", round %d/%d", round+1, rounds)
}

// median returns the run of median throughput (the lower middle one of an
// even number), with every run's throughput.
func median(rs []BenchResult) BenchResult {
	if len(rs) == 1 {
		return rs[0]
	}
	sorted := slices.Clone(rs)
	slices.SortFunc(sorted, func(a, b BenchResult) int { return cmp.Compare(a.Throughput, b.Throughput) })
	m := sorted[(len(sorted)-1)/2]
	for _, r := range rs {
		m.Throughputs = append(m.Throughputs, r.Throughput)
	}
	return m
}

// latHist is a log-linear histogram of latencies in ns: 16 buckets per
// power of two.
type latHist [64 * 16]uint64

func latBucket(ns int64) int {
	if ns < 16 {
		return int(max(ns, 0))
	}
	e := bits.Len64(uint64(ns)) - 5 // ns >> e is in [16, 32)
	return (e+1)*16 + int(uint64(ns)>>e) - 16
}

func latValue(b int) int64 {
	if b < 16 {
		return int64(b)
	}
	e := b/16 - 1
	return int64(16+b%16) << e
}

// workerStats is one worker's share of a run's measurements.
type workerStats struct {
	hist latHist
	last int64 // ns of its last match
	_    [64]byte
}

// benchOne runs one algorithm on the window r, s, whose match count is
// want (for the time to 50%; the caller checks the count).
func benchOne(ctx context.Context, opts *BenchOptions, kernels map[string]Kernel, name string, r, s []Tuple, window int, f Features, want uint64) (BenchResult, error) {
	res := BenchResult{Algorithm: name}
	o := Options{Workers: opts.Workers, Expected: max(len(r), len(s))}
	k := kernels[name]
	if k == nil {
		var err error
		if name == Auto {
			k, err = NewAuto(o, Config{Objective: opts.Objective})
		} else {
			k, err = opts.newKernel(name, o)
		}
		if err != nil {
			return res, err
		}
		kernels[name] = k
	}
	lazy := false
	if a, ok := k.(*autoKernel); ok {
		a.Hint(f)
		a.start()
		res.Chosen, res.Reason = a.decision.Algorithm, a.decision.Reason
		alg, _ := ByName(res.Chosen)
		lazy = alg.Lazy
	} else {
		alg, _ := ByName(name)
		lazy = alg.Lazy
	}
	stats := make([]workerStats, opts.Workers)
	var total, half atomic.Uint64
	var t50 atomic.Int64
	var origin time.Time
	clock := func() int64 { return int64(time.Since(origin)) }
	emit := func(worker int, ms []Match) {
		now := clock()
		st := &stats[worker]
		for i := range ms {
			st.hist[latBucket(now-ms[i].TS)]++
		}
		st.last = now
		n := uint64(len(ms))
		after := total.Add(n)
		if h := half.Load(); after >= h && after-n < h {
			t50.Store(now)
		}
	}
	half.Store(max((want+1)/2, 1))
	var busy time.Duration
	cpu0 := processCPU()
	timed := func(f func() error) error {
		t0 := time.Now()
		err := f()
		busy += time.Since(t0)
		return err
	}
	if lazy {
		// The window is complete at its end: the clock starts there.
		origin = time.Now().Add(-time.Duration(window) * time.Millisecond)
		if l, ok := k.(Lazy); ok {
			if err := timed(func() error { return l.Join(ctx, r, s, emit) }); err != nil {
				return res, err
			}
		} else {
			err := timed(func() error {
				if err := k.Add(ctx, R, r, emit); err != nil {
					return err
				}
				if err := k.Add(ctx, S, s, emit); err != nil {
					return err
				}
				return k.Close(ctx, emit)
			})
			if err != nil {
				return res, err
			}
		}
	} else {
		origin = time.Now()
		if err := feedRealTime(ctx, k, r, s, clock, emit, timed); err != nil {
			return res, err
		}
	}
	end := clock()
	res.CPU = processCPU() - cpu0
	var hist latHist
	var last int64
	for i := range stats {
		for b, c := range stats[i].hist {
			hist[b] += c
		}
		last = max(last, stats[i].last)
	}
	res.Matches = total.Load()
	if res.Matches == 0 {
		last = end
	}
	res.LastMatch = time.Duration(last)
	res.Throughput = float64(len(r)+len(s)) / max(res.LastMatch.Seconds(), 1e-9)
	res.P95 = time.Duration(percentile(&hist, res.Matches, 0.95))
	res.T50 = time.Duration(t50.Load())
	res.Busy = busy
	res.JoinRate = float64(len(r)+len(s)) / max(busy.Seconds(), 1e-9)
	return res, nil
}

func percentile(h *latHist, n uint64, p float64) int64 {
	if n == 0 {
		return 0
	}
	want := uint64(math.Ceil(p * float64(n)))
	var seen uint64
	for b, c := range h {
		seen += c
		if seen >= want {
			return latValue(b)
		}
	}
	return latValue(len(h) - 1)
}

// maxFeed is the most tuples of a side an eager kernel gets in one call:
// a kernel that falls behind catches up in calls of this size.
const maxFeed = 8192

// feedRealTime gives k each side's tuples once the clock reaches their
// time (ns from the window's start), the two sides alternating, then
// closes the window.
func feedRealTime(ctx context.Context, k Kernel, r, s []Tuple, clock func() int64, emit Emit, timed func(func() error) error) error {
	i, j := 0, 0
	for i < len(r) || j < len(s) {
		now := clock()
		fed := false
		for _, sd := range [2]struct {
			side Side
			src  []Tuple
			at   *int
		}{{R, r, &i}, {S, s, &j}} {
			end := *sd.at
			for end < len(sd.src) && end-*sd.at < maxFeed && sd.src[end].TS <= now {
				end++
			}
			if end > *sd.at {
				batch := sd.src[*sd.at:end]
				if err := timed(func() error { return k.Add(ctx, sd.side, batch, emit) }); err != nil {
					return err
				}
				*sd.at = end
				fed = true
			}
		}
		if fed {
			continue
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		next := int64(math.MaxInt64)
		if i < len(r) {
			next = r[i].TS
		}
		if j < len(s) {
			next = min(next, s[j].TS)
		}
		if wait := time.Duration(next - clock()); wait > 0 {
			time.Sleep(min(wait, 200*time.Microsecond))
		}
	}
	return timed(func() error { return k.Close(ctx, emit) })
}

// loadAvg returns /proc/loadavg's first three fields, or "".
func loadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return ""
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return ""
	}
	return strings.Join(f[:3], " ")
}

// WriteJSON writes the report as indented JSON.
func (rep *BenchReport) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(rep)
}

// WriteTable prints the report: a table per window, algorithms side by
// side, with auto's choice and its ratio to the best kernel.
func (rep *BenchReport) WriteTable(w io.Writer) error {
	fmt.Fprintf(w, "Sluice join kernels benchmark, %s\n", rep.Date.Format("2006-01-02 15:04 MST"))
	fmt.Fprintf(w, "%s/%s %s, %d CPUs, GOMAXPROCS %d, %d workers, load %s -> %s, auto's objective %s\n",
		rep.GOOS, rep.GOARCH, rep.GoVersion, rep.NumCPU, rep.GOMAXPROCS, rep.Workers, rep.Load, rep.LoadAfter, rep.Objective)
	for _, pt := range rep.Points {
		fmt.Fprintf(w, "\n%s %s: |R| %d, |S| %d, %d matches (checked by %s)", pt.Workload, pt.Params, pt.R, pt.S, pt.Matches, pt.Check)
		if pt.Repeat > 1 {
			fmt.Fprintf(w, ", the median of %d runs", pt.Repeat)
		}
		fmt.Fprintln(w)
		f := pt.Features
		fmt.Fprintf(w, "features: rate R %.4g/ms S %.4g/ms, dupe %.3g, top key %.3g\n", f.RateR, f.RateS, f.Dupe, f.Skew)
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
		fmt.Fprintln(tw, "algorithm\tinputs/s\tlast match\tp95 latency\t50% at\tjoin busy\tjoin inputs/s\tCPU\t")
		best := 0.0
		for _, res := range pt.Results {
			if res.Algorithm != Auto {
				best = max(best, res.Throughput)
			}
		}
		for _, res := range pt.Results {
			name := res.Algorithm
			if res.Chosen != "" {
				name += " (" + res.Chosen + ")"
			}
			fmt.Fprintf(tw, "%s\t%.0f\t%v\t%v\t%v\t%v\t%.0f\t%v\t\n", name, res.Throughput,
				res.LastMatch.Round(time.Microsecond), res.P95.Round(time.Microsecond), res.T50.Round(time.Microsecond),
				res.Busy.Round(time.Microsecond), res.JoinRate, res.CPU.Round(time.Millisecond))
		}
		if err := tw.Flush(); err != nil {
			return err
		}
		for _, res := range pt.Results {
			if res.Algorithm != Auto || best == 0 {
				continue
			}
			fmt.Fprintf(w, "auto chose %s (%s): %.3f x the best kernel's throughput", res.Chosen, res.Reason, res.Throughput/best)
			for _, o := range pt.Results {
				if o.Algorithm == res.Chosen {
					fmt.Fprintf(w, "; %s's own runs %.3f x", o.Algorithm, o.Throughput/best)
				}
			}
			fmt.Fprintln(w)
		}
	}
	return nil
}
