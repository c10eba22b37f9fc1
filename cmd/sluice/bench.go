package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/sluicehq/sluice/host/bench"
	"github.com/sluicehq/sluice/plugins/upper/upperlib"
)

func newBenchCmd() *cobra.Command {
	var (
		quick      bool
		jsonFile   string
		only       []string
		cpuProfile string
		noTimeout  bool
		dashboard  bool
		rounds     int
		engine     string
		logs       logFlags
	)
	cmd := &cobra.Command{
		Use:   "bench [--quick] [--json FILE] [--only wasm|nats|keyed] [--no-call-timeout] [--dashboard] [--rounds N] [--engine wazero|wasmtime] [--cpuprofile FILE]",
		Short: "Measure the user-level figures: Wasm call path, NATS pipeline, keyed state commits",
		Long: `Build the example plugins (upper, wordcount) from source and measure:

  wasm   the per-record cost of a batched map in WebAssembly against the same
         function in native Go, batches of 64, 256 and 1024 records of 64 bytes,
         on an engine with the default call timeout and on one without;
  nats   NATS -> Wasm map -> NATS through the executor on an embedded server,
         64-byte and 1 KiB messages, against raw NATS publish -> subscribe
         and against a relay (a subscriber that publishes each message
         again: the same two crossings of the server with nothing between
         them), measured in the same run (rounds interleaved, medians);
         with --dashboard, each round's pipeline runs twice with the job's
         event stream served on 127.0.0.1, a page open (a client decoding
         every event) and closed, interleaved, and reports open over closed;
         --rounds sets its rounds per message size (3; 1 with --quick): the
         medians of more rounds stand better against a noisy machine;
  keyed  generator -> wordcount (keyed state) -> discard with Pebble commits:
         records per second and the cost of one commit.

Every round checks its output (no message lost, counts and content right) and
the command fails rather than report a figure from a wrong run. The results are
printed as tables, with the machine, the load average and the date, checked
against the project's targets, and written as JSON to --json. Progress goes to
stderr. Run it on a quiet machine: the figures are only as good as the load
allows. The full run takes a minute or two on two cores; --quick takes seconds.
--engine runs the plugins on wasmtime instead of wazero (in a build with the
wasmtime tag): the wasm suite then compares native Go with wasmtime.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			opts := bench.DefaultOptions()
			if quick {
				opts = bench.QuickOptions()
			}
			for _, list := range only {
				for _, name := range strings.Split(list, ",") {
					s, err := bench.ParseSuite(strings.TrimSpace(name))
					if err != nil {
						return &usageError{fmt.Sprintf("--only %q: want wasm, nats or keyed", name)}
					}
					opts.Suites = append(opts.Suites, s)
				}
			}
			if rounds < 0 {
				return &usageError{fmt.Sprintf("--rounds %d: want a positive number of rounds", rounds)}
			}
			if rounds > 0 {
				opts.NATS.Rounds = rounds
			}
			if err := checkEngineFlag(engine); err != nil {
				return err
			}
			opts.Engine = engine
			if jsonFile == "" {
				return &usageError{"--json: a file name is required (use - for stdout)"}
			}
			log, err := logs.logger()
			if err != nil {
				return err
			}
			ctx := cmd.Context()
			stderr := cmd.ErrOrStderr()
			opts.Logger = log
			opts.NoCallTimeout = noTimeout
			opts.NATS.Dashboard = dashboard
			opts.Progress = stderr

			work, err := os.MkdirTemp("", "sluice-bench-")
			if err != nil {
				return err
			}
			defer os.RemoveAll(work)
			opts.Dir = work
			names := pluginsFor(opts.Suites)
			fmt.Fprintf(stderr, "bench: building the example plugins (%s) with the Go toolchain\n", strings.Join(names, ", "))
			paths, err := buildExamples(ctx, filepath.Join(work, "plugins"), names...)
			if err != nil {
				return err
			}
			plugins := bench.Plugins{UpperNative: upperlib.Upper}
			if err := readExamples(paths, map[string]*[]byte{"upper": &plugins.Upper, "wordcount": &plugins.WordCount}); err != nil {
				return err
			}

			if cpuProfile != "" {
				stopProfile, err := startCPUProfile(cpuProfile)
				if err != nil {
					return err
				}
				defer stopProfile()
			}
			rep, err := bench.Run(ctx, plugins, opts)
			if err != nil {
				return err
			}
			return writeReport(cmd, rep, jsonFile, cpuProfile)
		},
	}
	cmd.Flags().BoolVar(&quick, "quick", false, "small sizes, for a first look and for tests (seconds, not minutes)")
	cmd.Flags().StringVar(&jsonFile, "json", "bench.json", "where to write the results as JSON; - prints JSON instead of the tables")
	cmd.Flags().StringSliceVar(&only, "only", nil, "run only these suites: wasm, nats, keyed (repeat or separate with commas)")
	cmd.Flags().BoolVar(&noTimeout, "no-call-timeout", false, "run the nats and keyed pipelines' plugins without the call timeout, to see what the deadline costs them (wasm always measures both)")
	cmd.Flags().BoolVar(&dashboard, "dashboard", false, "nats: run each pipeline round with the event stream served, once with a dashboard page reading it and once without, and report open over closed")
	cmd.Flags().IntVar(&rounds, "rounds", 0, "nats: rounds per message size, each a raw, a relay and a pipeline run (two with --dashboard); 0: 3, or 1 with --quick")
	cmd.Flags().StringVar(&cpuProfile, "cpuprofile", "", "write a CPU profile of the measurements (not the plugin build) to this file")
	registerEngineFlag(cmd, &engine)
	logs.register(cmd, "info")
	lvl := cmd.Flags().Lookup("log-level")
	lvl.DefValue = "warn"
	_ = lvl.Value.Set("warn") // the host's info lines would drown the progress
	cmd.AddCommand(newBenchTxnCmd(), newBenchSwapCmd(), newBenchJoinCmd(), newBenchWindowCmd(), newBenchMigrateCmd(), newBenchControlCmd())
	return cmd
}

// pluginsFor lists the example plugins the suites need.
func pluginsFor(suites []bench.Suite) []string {
	if len(suites) == 0 {
		suites = bench.AllSuites()
	}
	var upper, wordcount bool
	for _, s := range suites {
		switch s {
		case bench.SuiteWasm, bench.SuiteNATS:
			upper = true
		case bench.SuiteKeyed:
			wordcount = true
		}
	}
	var names []string
	if upper {
		names = append(names, "upper")
	}
	if wordcount {
		names = append(names, "wordcount")
	}
	return names
}
