package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime/pprof"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/sluicehq/sluice/host/bench"
	"github.com/sluicehq/sluice/host/plugin"
	"github.com/sluicehq/sluice/state"
	"github.com/sluicehq/sluice/txn"
	"github.com/sluicehq/sluice/txn/apps/workload"
)

// benchTxnFlags are the flags of `sluice bench txn` besides the knobs.
type benchTxnFlags struct {
	app         string
	strategies  []string
	workers     string
	native      string
	compare     bool
	events      int
	punctuation int
	quick       bool
	jsonFile    string
	cpuProfile  string
	dynamic     string
	phaseEvents int
	plugin      string
	engine      string
	keySweep    bool
	pipeline    bool
	memTable    int
	commitEvery time.Duration
	logs        logFlags
}

func newBenchTxnCmd() *cobra.Command {
	var f benchTxnFlags
	knobs := map[string]*string{}
	cmd := &cobra.Command{
		Use:   "txn [--app sl|gs|ngs|tp|ob] [--strategy NAME|all] [--workers N[,N]] [--native[=both]] [knobs]",
		Short: "Measure a transactional benchmark application under each scheduling strategy",
		Long: `Build the application's plugin from source and run its workload (MorphStream's
benchmarks: sl Streaming Ledger, gs GrepSum, ngs NonGrepSum, tp Toll Processing,
ob Online Bidding) through the transactional operator, once per strategy, over
an in-memory store initialised as the workload defines. For each strategy,
worker count and logic it prints events per second, the mean and 99th
percentile event latency (an event's latency is its batch's processing time:
plan, schedule and post), where the time went (plan, explore, useful work,
abort handling, the scheduler's finish, the operator's own plan and post
steps) and the commits and aborts.

The plugin runs in WebAssembly as a pipeline runs it (wazero, default call
timeout); --native runs the same Go source natively instead, and --native=both
(or --compare) runs both, interleaved batch by batch, and prints the Wasm/native
ratio. A worker list (--workers 1,2) runs every count the same way and prints
the speedup. Every run's final state, outputs and commit counts must equal the
serial strategy's, or the command fails rather than report a figure.

Knobs are flags named as in the pipeline file's generator (--keys, --skew,
--deposit-ratio, ...); unset knobs take MorphStream's defaults for the
application, and a knob the application does not read is refused. Progress goes
to stderr; the tables to stdout, the figures as JSON to --json.

--strategy all runs every strategy and "adaptive", which chooses one TPG
strategy per batch from what the previous batches measured (package txn/adapt,
docs/transactions.md).

--dynamic PHASES makes the workload change as it runs: a preset ("morphstream":
MorphStream's dynamic workload for sl and gs, phases that raise skew, parametric
dependencies and aborts in turn) or phases separated by ";", each a list of
knob=value changed from the phase before, with events=N for its length and
name=TEXT, e.g. --dynamic 'skew=0.25;skew=0.9;abort-ratio=0.2'. Every strategy
then runs as its own lane, all interleaved batch by batch, and the report gives
each phase's best static strategy, the adaptive strategy's choices and rate, the
adaptive strategy against each static one over the whole run, and its decisions
and every lane's batch times in the JSON (with --native to measure the scheduler
with native operators). Each ratio of the adaptive strategy to a static one comes
with a 95% interval from the batches paired across the two lanes: a ratio whose
interval holds 1 is a tie.

A key-space sweep measures how the cost per event grows with the state:
--keys takes a list (--keys 115200,1152000,11520000), or --key-sweep runs the
application's key count (or --keys) times 1, 10 and 100. Every strategy then
runs at each size, interleaved batch by batch with the other sizes, each size
checked against its own serial run, and the report gives each size's rate,
breakdown and rate over the first size's, and the peak resident memory (the
stores of every size are held at once: Streaming Ledger with 11,520,000 keys a
table holds 23,040,000 entries a lane).

--pipeline measures what a user of the pipeline sees: after each strategy's
in-memory runs, the same strategy, with every worker count and logic, runs
through a real job as 'sluice run' builds it: the generator in txn mode (the
same events: same workload, knobs and seed) -> the transactional operator ->
a sink that counts and discards the outputs (a file or NATS sink would add
its own I/O, measured by the sink benchmarks, not the transactional path),
batches cut by the punctuation, every batch committed to a Pebble data
directory in a temporary directory (no fsync, the pipeline file's default)
by the executor's committer, overlapping the next batch. The report gives
its rate (the events after the first batch, from the first batch's outputs
to the last commit) beside the in-memory rate and their ratio, the commits'
time and size; the tables read back from Pebble, the committed and aborted
transactions must equal the oracle's, or the command fails. Not with
--dynamic or a key-space sweep. --memtable-size sets the stores' Pebble
memtable (the pipeline file's state.memtable_size); --commit-interval D lets
full batches leave their state uncommitted for up to D (the pipeline file's
state.commit_interval), and the report gives the commits beside the batches.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := checkEngineFlag(f.engine); err != nil {
				return err
			}
			opts, err := f.options(cmd, knobs)
			if err != nil {
				return err
			}
			opts.Engine = f.engine
			log, err := f.logs.logger()
			if err != nil {
				return err
			}
			ctx := cmd.Context()
			stderr := cmd.ErrOrStderr()
			opts.Logger = log
			opts.Progress = stderr

			work, err := os.MkdirTemp("", "sluice-bench-txn-")
			if err != nil {
				return err
			}
			defer os.RemoveAll(work)
			opts.Dir = work
			if f.plugin != "" && slices.Contains(opts.Logics, bench.TxnWasm) {
				if opts.Plugin, err = plugin.ReadModule(f.plugin, 0); err != nil {
					return fmt.Errorf("--plugin: %w", err)
				}
			} else if slices.Contains(opts.Logics, bench.TxnWasm) {
				dir, _ := bench.TxnPluginDir(opts.App) // the app was checked
				fmt.Fprintf(stderr, "bench: building the %s plugin with the Go toolchain\n", dir)
				paths, err := buildExamples(ctx, filepath.Join(work, "plugins"), dir)
				if err != nil {
					return err
				}
				if opts.Plugin, err = plugin.ReadModule(paths[dir], 0); err != nil {
					return err
				}
			}

			if f.cpuProfile != "" {
				stopProfile, err := startCPUProfile(f.cpuProfile)
				if err != nil {
					return err
				}
				defer stopProfile()
			}
			rep, err := bench.RunTxn(ctx, opts)
			if err != nil {
				return err
			}
			return writeReport(cmd, rep, f.jsonFile, f.cpuProfile)
		},
	}
	registerEngineFlag(cmd, &f.engine)
	fl := cmd.Flags()
	fl.StringVar(&f.app, "app", workload.StreamingLedger, "the application: "+strings.Join(workload.Apps(), ", "))
	fl.StringSliceVar(&f.strategies, "strategy", []string{"all"}, "strategies to run (repeat or separate with commas), or all: "+strings.Join(txn.StrategyNames(), ", "))
	fl.StringVar(&f.workers, "workers", "", "scheduler workers, or a list such as 1,2 to compare (default GOMAXPROCS)")
	fl.StringVar(&f.native, "native", "false", "run the operator natively instead of in WebAssembly; --native=both runs both, interleaved, and prints the ratio")
	fl.Lookup("native").NoOptDefVal = "true"
	fl.BoolVar(&f.compare, "compare", false, "same as --native=both")
	fl.IntVar(&f.events, "events", 0, "events per run (default: a few seconds' worth per strategy for the application; 4,096 with --quick)")
	fl.IntVar(&f.punctuation, "punctuation", 0, fmt.Sprintf("events per batch (default %d; 1,024 with --quick)", bench.DefaultTxnPunctuation))
	fl.BoolVar(&f.quick, "quick", false, "a few small batches, for a first look and for tests")
	fl.StringVar(&f.jsonFile, "json", "bench-txn.json", "where to write the results as JSON; - prints JSON instead of the tables")
	fl.StringVar(&f.cpuProfile, "cpuprofile", "", "write a CPU profile of the measurements (not the plugin build) to this file; its samples are labelled by phase (oracle, memory, pipeline), strategy and lane (go tool pprof -tagfocus phase=pipeline)")
	fl.StringVar(&f.dynamic, "dynamic", "", "a dynamic workload: a preset (morphstream) or phases such as 'skew=0.25;skew=0.9;abort-ratio=0.2' (see above)")
	fl.IntVar(&f.phaseEvents, "phase-events", 0, fmt.Sprintf("events of a --dynamic phase that gives no events= (default %d batches; 2 with --quick)", bench.DefaultTxnPhaseBatches))
	fl.BoolVar(&f.keySweep, "key-sweep", false, "run every strategy with the key count (the application's or --keys) times 1, 10 and 100, interleaved, and print each size's rate over the first's")
	fl.BoolVar(&f.pipeline, "pipeline", false, "also run each strategy through a real pipeline (generator -> operator -> discarding sink, Pebble commits) and print its rate over the in-memory one (see above)")
	fl.DurationVar(&f.commitEvery, "commit-interval", 0, "with --pipeline: commit at most this often while batches come full, as the pipeline file's state.commit_interval (default 0: every batch)")
	fl.IntVar(&f.memTable, "memtable-size", 0, fmt.Sprintf("with --pipeline: the Pebble memtable size in bytes, as the pipeline file's state.memtable_size (default %d)", state.DefaultMemTableSize))
	fl.StringVar(&f.plugin, "plugin", "", "run this WebAssembly module as the application's operator instead of building plugins/<app> (any language; it must behave as the Go plugin does)")
	for _, name := range workload.KnobNames() {
		knobs[name] = fl.String(name, "", knobUsage(name))
	}
	f.logs.register(cmd, "warn")
	return cmd
}

// options turns the flags into the suite's options; a mistake is a
// usageError naming the flag and the value at fault.
func (f *benchTxnFlags) options(cmd *cobra.Command, knobs map[string]*string) (bench.TxnOptions, error) {
	var opts bench.TxnOptions
	var err error
	if f.quick {
		opts, err = bench.QuickTxnOptions(f.app)
	} else {
		opts, err = bench.DefaultTxnOptions(f.app)
	}
	if err != nil {
		return opts, &usageError{fmt.Sprintf("--app %q: want one of %s", f.app, strings.Join(workload.Apps(), ", "))}
	}
	if opts.Native, err = nativeTxn(f.app); err != nil {
		return opts, &usageError{fmt.Sprintf("--app %q: %v", f.app, err)}
	}
	reads, _ := workload.AppKnobs(f.app)
	for _, name := range workload.KnobNames() {
		if !cmd.Flags().Changed(name) {
			continue
		}
		if name == "keys" && strings.Contains(*knobs[name], ",") {
			if opts.KeySpaces, err = keyList(*knobs[name], &opts.Knobs); err != nil {
				return opts, err
			}
			continue
		}
		if !slices.Contains(reads, name) {
			return opts, &usageError{fmt.Sprintf("--%s: the %s application does not read this knob (its knobs: %s)", name, f.app, strings.Join(reads, ", "))}
		}
		if err := opts.Knobs.Set(name, *knobs[name]); err != nil {
			var ke *workload.KnobError
			if errors.As(err, &ke) {
				return opts, &usageError{fmt.Sprintf("--%s %q: %s", name, ke.Value, ke.Reason)}
			}
			return opts, &usageError{fmt.Sprintf("--%s: %v", name, err)}
		}
	}
	if f.keySweep {
		if len(opts.KeySpaces) > 0 {
			return opts, &usageError{"--key-sweep: give either a --keys list or --key-sweep"}
		}
		k := opts.Knobs.Keys
		opts.KeySpaces = []int{k, 10 * k, 100 * k}
		for _, n := range opts.KeySpaces {
			if n > workload.MaxKeys {
				return opts, &usageError{fmt.Sprintf("--key-sweep: 100 times %d keys is more than %d", k, workload.MaxKeys)}
			}
		}
	}
	for _, list := range f.strategies {
		for _, s := range strings.Split(list, ",") {
			s = strings.TrimSpace(s)
			if s == "all" {
				opts.Strategies = append(opts.Strategies, txn.StrategyNames()...)
				opts.Strategies = append(opts.Strategies, txn.AdaptiveName)
				continue
			}
			if _, err := txn.ParseStrategy(s); err != nil {
				return opts, &usageError{fmt.Sprintf("--strategy %q: unknown strategy (want all, %s or one of %s)", s, txn.AdaptiveName, strings.Join(txn.StrategyNames(), ", "))}
			}
			opts.Strategies = append(opts.Strategies, s)
		}
	}
	opts.Strategies = uniq(opts.Strategies)
	if f.workers != "" {
		if opts.Workers, err = bench.ParseTxnWorkers(f.workers); err != nil {
			return opts, &usageError{fmt.Sprintf("--workers %q: want a positive number or a list such as 1,2", f.workers)}
		}
	}
	native := f.native
	if f.compare {
		native = "both"
	}
	switch strings.ToLower(native) {
	case "false", "no", "off":
		opts.Logics = []bench.TxnLogic{bench.TxnWasm}
	case "true", "yes", "on", "only":
		opts.Logics = []bench.TxnLogic{bench.TxnNative}
	case "both":
		opts.Logics = []bench.TxnLogic{bench.TxnWasm, bench.TxnNative}
	default:
		return opts, &usageError{fmt.Sprintf("--native %q: want true, false or both", f.native)}
	}
	if cmd.Flags().Changed("punctuation") {
		if f.punctuation < 1 {
			return opts, &usageError{fmt.Sprintf("--punctuation %d: want at least 1 event per batch", f.punctuation)}
		}
		opts.Punctuation = f.punctuation
	}
	if cmd.Flags().Changed("events") {
		if f.events < 1 {
			return opts, &usageError{fmt.Sprintf("--events %d: want at least 1", f.events)}
		}
		opts.Events = f.events
	}
	if f.jsonFile == "" {
		return opts, &usageError{"--json: a file name is required (use - for stdout)"}
	}
	if cmd.Flags().Changed("phase-events") && f.phaseEvents < 1 {
		return opts, &usageError{fmt.Sprintf("--phase-events %d: want at least 1", f.phaseEvents)}
	}
	if f.pipeline {
		if f.dynamic != "" || len(opts.KeySpaces) > 1 {
			return opts, &usageError{"--pipeline runs a static workload with one key space: drop --dynamic, the --keys list or --key-sweep"}
		}
		opts.Pipeline = true
	}
	if cmd.Flags().Changed("memtable-size") {
		if !f.pipeline {
			return opts, &usageError{"--memtable-size: only with --pipeline"}
		}
		if f.memTable < state.MinMemTableSize || f.memTable > state.MaxMemTableSize {
			return opts, &usageError{fmt.Sprintf("--memtable-size %d: want %d to %d bytes", f.memTable, state.MinMemTableSize, state.MaxMemTableSize)}
		}
		opts.MemTableSize = f.memTable
	}
	if cmd.Flags().Changed("commit-interval") {
		if !f.pipeline {
			return opts, &usageError{"--commit-interval: only with --pipeline"}
		}
		if f.commitEvery < 0 {
			return opts, &usageError{fmt.Sprintf("--commit-interval %v: want 0 (every batch) or more", f.commitEvery)}
		}
		opts.CommitInterval = f.commitEvery
	}
	if f.dynamic != "" {
		if cmd.Flags().Changed("events") {
			return opts, &usageError{"--events: a --dynamic workload's length is the sum of its phases' (use --phase-events or events= in a phase)"}
		}
		if len(opts.Workers) > 1 || len(opts.Logics) > 1 || len(opts.KeySpaces) > 1 {
			return opts, &usageError{"--dynamic runs one worker count, one logic and one key space: drop the worker list, --native=both, the --keys list or --key-sweep"}
		}
		per := f.phaseEvents
		if per == 0 {
			per = opts.Punctuation * bench.DefaultTxnPhaseBatches
			if f.quick {
				per = opts.Punctuation * 2
			}
		}
		if opts.Phases, err = workload.ParsePhases(f.app, f.dynamic, opts.Knobs, per); err != nil {
			return opts, &usageError{fmt.Sprintf("--dynamic %q: %v", f.dynamic, err)}
		}
	} else if cmd.Flags().Changed("phase-events") {
		return opts, &usageError{"--phase-events: only with --dynamic"}
	}
	return opts, nil
}

// keyList parses a --keys list such as 115200,1152000: each size is
// checked as the knob is, and the first becomes the knob's value.
func keyList(list string, k *workload.Knobs) ([]int, error) {
	var sizes []int
	for _, f := range strings.Split(list, ",") {
		f = strings.TrimSpace(f)
		if err := k.Set("keys", f); err != nil {
			var ke *workload.KnobError
			if errors.As(err, &ke) {
				return nil, &usageError{fmt.Sprintf("--keys %q: %s", ke.Value, ke.Reason)}
			}
			return nil, &usageError{fmt.Sprintf("--keys %q: %v", list, err)}
		}
		if slices.Contains(sizes, k.Keys) {
			return nil, &usageError{fmt.Sprintf("--keys %q: %d given twice", list, k.Keys)}
		}
		sizes = append(sizes, k.Keys)
	}
	k.Keys = sizes[0]
	return sizes, nil
}

// knobHelp says what each workload knob is.
func knobHelp(name string) string {
	switch name {
	case "keys":
		return "key-space size of each table, or a list of sizes to sweep (115200,1152000)"
	case "skew":
		return "Zipf skew of key access (0: uniform)"
	case "abort-ratio":
		return "fraction of transactions drawn to abort"
	case "txn-length":
		return "operations per transaction (gs, ngs), items per event (ob)"
	case "multi-read-ratio":
		return "fraction of operations that read other keys"
	case "reads":
		return "keys a multi-read operation reads"
	case "deposit-ratio":
		return "fraction of deposits"
	case "buy-ratio":
		return "fraction of buys"
	case "busy-ns":
		return "busy work per operation, in nanoseconds"
	case "nondet-ratio":
		return "fraction of non-deterministic operations"
	case "acyclic":
		return "reads only below the key written: no cycles between chains"
	case "seed":
		return "seed of the event stream"
	}
	return "workload knob"
}

// knobUsage is the usage line of a knob's flag: what it is, which
// applications read it, and where its default comes from.
func knobUsage(name string) string {
	var apps []string
	for _, a := range workload.Apps() {
		if names, _ := workload.AppKnobs(a); slices.Contains(names, name) {
			apps = append(apps, a)
		}
	}
	return fmt.Sprintf("knob: %s [%s] (default: MorphStream's for the application)", knobHelp(name), strings.Join(apps, " "))
}

// uniq drops repeated names, keeping the first of each.
func uniq(names []string) []string {
	var out []string
	for _, n := range names {
		if !slices.Contains(out, n) {
			out = append(out, n)
		}
	}
	return out
}

// startCPUProfile starts a CPU profile written to path; the function it
// returns stops it and closes the file.
func startCPUProfile(path string) (stop func(), err error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("--cpuprofile: %w", err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("--cpuprofile: %w", err)
	}
	return func() {
		pprof.StopCPUProfile()
		f.Close()
	}, nil
}

// report is what the bench commands print and write.
type report interface {
	WriteTable(io.Writer) error
	WriteJSON(io.Writer) error
}

// writeReport prints rep's tables and writes its JSON to jsonFile ("-":
// the JSON to stdout instead of the tables).
func writeReport(cmd *cobra.Command, rep report, jsonFile, cpuProfile string) error {
	if jsonFile == "-" {
		return rep.WriteJSON(cmd.OutOrStdout())
	}
	if err := rep.WriteTable(cmd.OutOrStdout()); err != nil {
		return err
	}
	jf, err := os.Create(jsonFile)
	if err != nil {
		return fmt.Errorf("--json: %w", err)
	}
	if err := rep.WriteJSON(jf); err != nil {
		jf.Close()
		return err
	}
	if err := jf.Close(); err != nil {
		return fmt.Errorf("--json: %w", err)
	}
	fmt.Fprintf(cmd.OutOrStdout(), "\nresults written to %s\n", jsonFile)
	if cpuProfile != "" {
		fmt.Fprintf(cmd.OutOrStdout(), "CPU profile written to %s (go tool pprof -top %s)\n", cpuProfile, cpuProfile)
	}
	return nil
}
