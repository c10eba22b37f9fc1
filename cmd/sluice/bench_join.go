package main

import (
	"fmt"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/sluicehq/sluice/host/join"
)

// benchJoinFlags are the flags of `sluice bench join`.
type benchJoinFlags struct {
	algorithms []string
	workers    int
	workload   string
	sweep      string
	rate       int
	rateR      int
	rateS      int
	window     int
	dupe       int
	keySkew    float64
	tsSkew     float64
	seed       uint64
	objective  string
	quick      bool
	repeat     int
	warmup     int
	jsonFile   string
	cpuProfile string
}

func newBenchJoinCmd() *cobra.Command {
	var f benchJoinFlags
	cmd := &cobra.Command{
		Use:   "join [--algorithm NAME|all] [--workers N] [--workload micro|stock|rovio|ysb|debs] [--sweep NAME] [knobs]",
		Short: "Measure the intra-window join kernels side by side on one window",
		Long: `Generate a window and join it with every algorithm of package host/join
(lazy: npj, prj, mway, mpass; eager: shj-jm, shj-jb, pmj-jm, pmj-jb) and with
auto, the adaptive choice, one after another on the same tuples.

Metrics as the study defines them (Zhang et al., SIGMOD 2021), with real clocks
from the window's start: eager algorithms are fed each tuple once the clock
reaches its time; lazy ones get the window at its end and join it then.
  inputs/s     the window's tuples over the time of the last match;
  last match   when the last match was emitted;
  p95 latency  95th percentile of a match's time minus the later arrival of
               its two inputs;
  50% at       when half the matches had been emitted (progressiveness);
  join busy    the time spent inside the kernel's calls, and the inputs over it;
  CPU          the CPU time the process used during the run (wall-clock figures
               stretch with the machine's load, CPU time much less).
Every run's match count is checked against an independent count (a nested loop
on small windows, a count of each key on large ones) and the command fails
rather than report a figure from a wrong run.

The micro workload takes the knobs below (the study's defaults: w = 1 s, v =
12,800 tuples/ms per side, unique keys); --sweep runs one of the study's sweeps
instead (rate, rate-s, dupe, key-skew, ts-skew, window); with --window, a sweep
keeps its rates and replaces its base window of 1 s (the window sweep scales
with it), to run a sweep in less time and memory. stock, rovio, ysb and
debs are synthetic windows shaped like the study's real workloads, scaled to
join in seconds (docs/joins.md). --quick divides the rates by 100. --repeat N
runs every algorithm N times per window, in rounds, and reports the median run
of each: on a loaded machine one run's figures vary by more than the
algorithms differ. A kernel persists from round to round, as from window to
window: its first round allocates its buffers, the later ones reuse them;
--warmup N runs N unrecorded rounds first, so that the measured rounds start
with every kernel's buffers, auto's included, as a stream past its first
windows does. Progress
goes to stderr; the tables to stdout, the figures as JSON to --json.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			opts, err := f.options()
			if err != nil {
				return err
			}
			opts.Progress = cmd.ErrOrStderr()
			if f.cpuProfile != "" {
				stop, err := startCPUProfile(f.cpuProfile)
				if err != nil {
					return err
				}
				defer stop()
			}
			rep, err := join.RunBench(cmd.Context(), opts)
			if err != nil {
				return err
			}
			return writeReport(cmd, rep, f.jsonFile, f.cpuProfile)
		},
	}
	fl := cmd.Flags()
	fl.StringSliceVar(&f.algorithms, "algorithm", []string{"all"}, "algorithms to run (repeat or separate with commas), or all: "+strings.Join(join.Names(), ", "))
	fl.IntVar(&f.workers, "workers", 0, "each kernel's workers (default GOMAXPROCS)")
	fl.StringVar(&f.workload, "workload", "micro", "micro, or a shape: "+strings.Join(join.Shapes(), ", "))
	fl.StringVar(&f.sweep, "sweep", "", "run a micro sweep: "+strings.Join(join.Sweeps(), ", "))
	fl.IntVar(&f.rate, "rate", 0, "micro: tuples per ms on each side (default 12,800; 128 with --quick)")
	fl.IntVar(&f.rateR, "rate-r", 0, "micro: tuples per ms on R (default --rate)")
	fl.IntVar(&f.rateS, "rate-s", 0, "micro: tuples per ms on S (default --rate)")
	fl.IntVar(&f.window, "window", 0, "micro: the window in ms (default 1,000; 200 with --quick)")
	fl.IntVar(&f.dupe, "dupe", 1, "micro: tuples per key")
	fl.Float64Var(&f.keySkew, "key-skew", 0, "micro: Zipf exponent of the keys")
	fl.Float64Var(&f.tsSkew, "ts-skew", 0, "micro: Zipf exponent of the arrival times")
	fl.Uint64Var(&f.seed, "seed", 1, "the generator's seed")
	fl.StringVar(&f.objective, "objective", "throughput", "auto's objective: throughput, latency or progressiveness")
	fl.BoolVar(&f.quick, "quick", false, "small windows, for a first look and for tests")
	fl.IntVar(&f.repeat, "repeat", 1, "run every algorithm this many times per window, in rounds, and report each one's median run")
	fl.IntVar(&f.warmup, "warmup", 0, "run every algorithm this many times per window before the measured rounds, unrecorded")
	fl.StringVar(&f.jsonFile, "json", "bench-join.json", "where to write the results as JSON; - prints JSON instead of the tables")
	fl.StringVar(&f.cpuProfile, "cpuprofile", "", "write a CPU profile of the runs to this file")
	return cmd
}

// options turns the flags into RunBench's options; a mistake is a
// usageError naming the flag and the value at fault.
func (f *benchJoinFlags) options() (join.BenchOptions, error) {
	var opts join.BenchOptions
	for _, list := range f.algorithms {
		for _, name := range strings.Split(list, ",") {
			name = strings.TrimSpace(name)
			if name == "all" {
				opts.Algorithms = append(opts.Algorithms, join.Names()...)
				continue
			}
			if _, ok := join.ByName(name); !ok && name != join.Auto {
				return opts, &usageError{fmt.Sprintf("--algorithm %q: want all or one of %s", name, strings.Join(join.Names(), ", "))}
			}
			opts.Algorithms = append(opts.Algorithms, name)
		}
	}
	opts.Algorithms = slices.Compact(opts.Algorithms)
	if f.workers < 0 {
		return opts, &usageError{fmt.Sprintf("--workers %d: want 1 or more", f.workers)}
	}
	opts.Workers = f.workers
	if f.repeat < 1 {
		return opts, &usageError{fmt.Sprintf("--repeat %d: want 1 or more", f.repeat)}
	}
	opts.Repeat = f.repeat
	if f.warmup < 0 {
		return opts, &usageError{fmt.Sprintf("--warmup %d: want 0 or more", f.warmup)}
	}
	opts.Warmup = f.warmup
	if f.workload != "micro" && !slices.Contains(join.Shapes(), f.workload) {
		return opts, &usageError{fmt.Sprintf("--workload %q: want micro or one of %s", f.workload, strings.Join(join.Shapes(), ", "))}
	}
	opts.Workload, opts.Seed = f.workload, f.seed
	obj, err := join.ParseObjective(f.objective)
	if err != nil {
		return opts, &usageError{fmt.Sprintf("--objective %q: want throughput, latency or progressiveness", f.objective)}
	}
	opts.Objective = obj
	m := join.DefaultMicro()
	if f.quick {
		m = join.QuickMicro()
	}
	if f.rate != 0 {
		m.RateR, m.RateS = f.rate, f.rate
	}
	if f.rateR != 0 {
		m.RateR = f.rateR
	}
	if f.rateS != 0 {
		m.RateS = f.rateS
	}
	if f.window != 0 {
		m.Window = f.window
	}
	m.Dupe, m.KeySkew, m.TSSkew, m.Seed = f.dupe, f.keySkew, f.tsSkew, f.seed
	for _, k := range []struct {
		flag string
		v    float64
	}{{"--rate", float64(m.RateR)}, {"--rate-s", float64(m.RateS)}, {"--window", float64(m.Window)}, {"--dupe", float64(m.Dupe)}} {
		if k.v < 1 {
			return opts, &usageError{fmt.Sprintf("%s %v: want 1 or more", k.flag, k.v)}
		}
	}
	if m.KeySkew < 0 || m.TSSkew < 0 {
		return opts, &usageError{"--key-skew and --ts-skew: want 0 or more"}
	}
	opts.Micro = m
	if f.sweep != "" {
		if f.workload != "micro" {
			return opts, &usageError{fmt.Sprintf("--sweep %q: sweeps are of the micro workload, not %s", f.sweep, f.workload)}
		}
		if opts.Sweep, err = join.Sweep(f.sweep, f.quick, f.seed); err != nil {
			return opts, &usageError{fmt.Sprintf("--sweep %q: want one of %s", f.sweep, strings.Join(join.Sweeps(), ", "))}
		}
		if f.window != 0 {
			// --window replaces the sweep's base window of 1 s, at the
			// same rates: the window sweep scales with it.
			for i := range opts.Sweep {
				opts.Sweep[i].Window = max(opts.Sweep[i].Window*f.window/1000, 1)
			}
		}
	}
	return opts, nil
}
