package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/sluicehq/sluice/host/bench"
)

// swapPlugins names the example plugin each kind deploys.
var swapPlugins = map[bench.SwapKind]string{
	bench.SwapMap: "upper", bench.SwapKeyed: "wordcount", bench.SwapTransactional: "ledger",
}

func newBenchSwapCmd() *cobra.Command {
	var (
		quick    bool
		jsonFile string
		kinds    []string
		rate     float64
		txnRate  float64
		punct    int
		punctInt time.Duration
		duration time.Duration
		warmup   time.Duration
		swaps    int
		workers  int
		same     bool
		compiles []string
		busy     int
		profile  string
		logs     logFlags
	)
	cmd := &cobra.Command{
		Use:   "swap [--kind map,keyed,transactional] [--compile child,in-process] [--background-load N] [--rate N] [--duration D] [--swaps N] [--quick] [--json FILE]",
		Short: "Measure hot swaps under a steady load: nothing lost, latency during the swaps against steady state",
		Long: `Build the example plugins (upper, wordcount, ledger) and, for each operator
kind, run a pipeline (paced generator -> operator -> sink) at a fixed rate while
the operator's module is swapped --swaps times, evenly spaced after a warm-up.
Each swap deploys the kind's plugin with a new version written into it, so the
host checks and compiles it afresh while the old version keeps running, makes
its instances, and installs it at the next batch boundary on every worker at
once, state in place:

  map            plugins/upper, a stateless map
  keyed          plugins/wordcount, counts per key in keyed state (1,000 keys)
  transactional  plugins/ledger, Streaming Ledger transactions on shared tables
                 (MorphStream's workload, the adaptive strategy, batches of
                 --punctuation events or --punctuation-interval), at
                 --txn-rate events/s

--compile says where each new module is compiled; with a list, each kind runs
once per entry, one after the other, with modules no other run compiled:

  child                compiled in a child sluice process at the lowest CPU
                       priority, as sluice run does; the pipeline's process
                       then loads the code from the compilation cache (the
                       default)
  child-same-priority  the same child at the pipeline's own priority
  in-process           compiled in the pipeline's process, on its engine

--background-load N runs N busy processes (a shell loop each, at the
pipeline's priority) during every run, as a competing load: the target is then
a p99 ratio of at most 3 instead of 2.

Every event is due at a fixed time (its position over the rate); its latency
runs from then to its output at the sink, so a pipeline that falls behind shows
it. The sink checks by position that every event came out exactly once (and
the ledger that its tables conserve money); the command fails rather than
report a figure from a wrong run. It prints, per kind, the p50, p99 and maximum
latency of the events due in steady state and of those due during the swaps
(from 250 ms before each swap's call to 250 ms after it returns), their p99
ratio (the target: at most 2; a kind whose pipeline fell behind the source
misses it, as its latencies then measure the backlog), the pause (the longest time without output
during the swaps) and how long each swap's load and install took. Progress
goes to stderr. The full run takes about two minutes; run it on a quiet machine.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			opts := bench.DefaultSwapOptions()
			if quick {
				opts = bench.QuickSwapOptions()
			}
			fl := cmd.Flags()
			for _, list := range kinds {
				for _, name := range strings.Split(list, ",") {
					k, err := bench.ParseSwapKind(strings.TrimSpace(name))
					if err != nil {
						return &usageError{fmt.Sprintf("--kind %q: want map, keyed or transactional", name)}
					}
					opts.Kinds = append(opts.Kinds, k)
				}
			}
			if fl.Changed("rate") {
				if rate <= 0 {
					return &usageError{fmt.Sprintf("--rate %v: want a positive number of events per second", rate)}
				}
				opts.Rate = rate
			}
			if fl.Changed("txn-rate") {
				if txnRate <= 0 {
					return &usageError{fmt.Sprintf("--txn-rate %v: want a positive number of events per second", txnRate)}
				}
				opts.TxnRate = txnRate
			}
			if fl.Changed("punctuation") {
				if punct < 1 {
					return &usageError{fmt.Sprintf("--punctuation %d: want at least 1 event per batch", punct)}
				}
				opts.Punctuation = punct
			}
			if fl.Changed("punctuation-interval") {
				if punctInt <= 0 {
					return &usageError{fmt.Sprintf("--punctuation-interval %v: want a positive duration", punctInt)}
				}
				opts.PunctuationInterval = punctInt
			}
			if fl.Changed("duration") {
				opts.Duration = duration
			}
			if fl.Changed("warmup") {
				opts.Warmup = warmup
			}
			if opts.Warmup < 0 || opts.Duration <= opts.Warmup {
				return &usageError{fmt.Sprintf("--duration %v: want longer than the warm-up (%v)", opts.Duration, opts.Warmup)}
			}
			if fl.Changed("swaps") {
				if swaps < 1 {
					return &usageError{fmt.Sprintf("--swaps %d: want at least 1", swaps)}
				}
				opts.Swaps = swaps
			}
			if fl.Changed("workers") {
				if workers < 1 {
					return &usageError{fmt.Sprintf("--workers %d: want at least 1", workers)}
				}
				opts.Workers = workers
			}
			if jsonFile == "" {
				return &usageError{"--json: a file name is required (use - for stdout)"}
			}
			opts.SameModule = same
			for _, list := range compiles {
				for _, name := range strings.Split(list, ",") {
					c, err := bench.ParseSwapCompile(strings.TrimSpace(name))
					if err != nil {
						return &usageError{fmt.Sprintf("--compile %q: want child, child-same-priority or in-process", name)}
					}
					opts.Compile = append(opts.Compile, c)
				}
			}
			if len(opts.Compile) == 0 {
				opts.Compile = []bench.SwapCompile{bench.CompileChild}
			}
			if busy < 0 {
				return &usageError{fmt.Sprintf("--background-load %d: want 0 or more busy processes", busy)}
			}
			opts.BackgroundLoad = busy
			exe, err := os.Executable()
			if err != nil {
				return fmt.Errorf("bench swap: finding this executable, which the child compiles run: %w", err)
			}
			opts.Executable = exe
			log, err := logs.logger()
			if err != nil {
				return err
			}
			ctx := cmd.Context()
			stderr := cmd.ErrOrStderr()
			opts.Logger, opts.Progress = log, stderr

			work, err := os.MkdirTemp("", "sluice-bench-swap-")
			if err != nil {
				return err
			}
			defer os.RemoveAll(work)
			opts.Dir = work
			run := opts.Kinds
			if len(run) == 0 {
				run = bench.SwapKinds()
			}
			var names []string
			for _, k := range run {
				names = append(names, swapPlugins[k])
			}
			names = uniq(names)
			fmt.Fprintf(stderr, "bench: building the example plugins (%s) with the Go toolchain\n", strings.Join(names, ", "))
			paths, err := buildExamples(ctx, filepath.Join(work, "plugins"), names...)
			if err != nil {
				return err
			}
			if err := readExamples(paths, map[string]*[]byte{"upper": &opts.Plugins.Upper, "wordcount": &opts.Plugins.WordCount, "ledger": &opts.Plugins.Ledger}); err != nil {
				return err
			}
			if profile != "" {
				stopProfile, err := startCPUProfile(profile)
				if err != nil {
					return err
				}
				defer stopProfile()
			}
			rep, err := bench.RunSwap(ctx, opts)
			if err != nil {
				return err
			}
			return writeReport(cmd, rep, jsonFile, profile)
		},
	}
	def := bench.DefaultSwapOptions()
	fl := cmd.Flags()
	fl.BoolVar(&quick, "quick", false, "a short run at 20,000 events/s with 2 swaps per kind, for a first look and for tests")
	fl.StringVar(&jsonFile, "json", "bench-swap.json", "where to write the results as JSON; - prints JSON instead of the tables")
	fl.StringSliceVar(&kinds, "kind", nil, "operator kinds to run: map, keyed, transactional (repeat or separate with commas; default all)")
	fl.Float64Var(&rate, "rate", def.Rate, "events per second from the source")
	fl.Float64Var(&txnRate, "txn-rate", def.TxnRate, "events per second for the transactional kind (Streaming Ledger with a Go guest sustains about 78,000 on 2 cores)")
	fl.IntVar(&punct, "punctuation", 4096, "the transactional operator's events per batch")
	fl.DurationVar(&punctInt, "punctuation-interval", 20*time.Millisecond, "the transactional operator's time bound per batch")
	fl.DurationVar(&duration, "duration", def.Duration, "length of each kind's run")
	fl.DurationVar(&warmup, "warmup", def.Warmup, "start of each run that is not measured and has no swap")
	fl.IntVar(&swaps, "swaps", def.Swaps, "swaps per kind, evenly spaced after the warm-up")
	fl.BoolVar(&same, "same-module", false, "swap in the first module again (from the compilation cache) instead of a new version: the swap without compiling")
	fl.StringSliceVar(&compiles, "compile", nil, "where new modules are compiled: child, child-same-priority, in-process (a list runs each kind once per entry; default child)")
	fl.IntVar(&busy, "background-load", 0, "busy processes (one core each) running alongside, as a competing load")
	fl.StringVar(&profile, "cpuprofile", "", "write a CPU profile of the runs (not the plugin build) to this file")
	fl.IntVar(&workers, "workers", 0, "workers of the operator (default GOMAXPROCS)")
	logs.register(cmd, "warn")
	return cmd
}
