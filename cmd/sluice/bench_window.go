package main

import (
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"

	"github.com/sluicehq/sluice/host/bench"
)

func newBenchWindowCmd() *cobra.Command {
	var (
		quick                bool
		records, keys, rate  int
		workers, rounds      int
		size, slide          time.Duration
		noWasm               bool
		commitEvery          time.Duration
		jsonFile, cpuProfile string
	)
	cmd := &cobra.Command{
		Use:   "window [--quick] [--records N] [--keys N] [--size D] [--slide D] [--workers N] [--commit-interval D] [--no-wasm]",
		Short: "Measure windowed counts per key: built-in and Wasm aggregates, tumbling and sliding windows",
		Long: `Run a count per key and window through the executor, with Pebble commits,
over tumbling windows and over sliding windows of the same size (60 slices a
window by default), with the built-in count and with a Wasm aggregate
(plugins/wincount, built from source with the Go toolchain), rounds
interleaved. The input is generated: records of --keys keys in turn, --rate
records per second of event time; the end of input fires every window still
open, within the measured time.

The table gives each case's records per second and outputs, and for sliding
windows their time over the tumbling windows', per record and per output. A
sliding window emits a result every slide while it holds records of the key:
when a key has few records a window (--quick's 10 records per key over 60
slides), each record is in 60 results, and the outputs, not the records, set
the cost.

By default every batch is committed; --commit-interval D lets full batches
leave their state uncommitted for up to D (the pipeline file's
state.commit_interval), so a slice changed by many batches is written once.

Each round checks that the windows' counts add up to what the input holds
(each record counted once in each of its windows) and the command fails rather
than report a figure from a wrong run. Progress goes to stderr; the table to
stdout, the figures as JSON to --json.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			opts := bench.DefaultWindowOptions()
			if quick {
				opts = bench.QuickWindowOptions()
			}
			fl := cmd.Flags()
			for name, set := range map[string]func(){
				"records": func() { opts.Records = records }, "keys": func() { opts.Keys = keys }, "rate": func() { opts.Rate = rate },
				"size": func() { opts.Size = size }, "slide": func() { opts.Slide = slide }, "rounds": func() { opts.Rounds = rounds },
			} {
				if fl.Changed(name) {
					set()
				}
			}
			opts.Workers = workers
			if commitEvery < 0 {
				return &usageError{fmt.Sprintf("--commit-interval %v: want 0 (every batch) or more", commitEvery)}
			}
			opts.CommitInterval = commitEvery
			if opts.Records < 1 || opts.Keys < 1 || opts.Rate < 1 || opts.Rounds < 1 {
				return &usageError{"--records, --keys, --rate and --rounds want 1 or more"}
			}
			if opts.Size <= 0 || opts.Slide <= 0 || opts.Size%opts.Slide != 0 {
				return &usageError{fmt.Sprintf("--size %v and --slide %v: want positive durations, the size a multiple of the slide", opts.Size, opts.Slide)}
			}
			stderr := cmd.ErrOrStderr()
			opts.Progress = stderr
			work, err := os.MkdirTemp("", "sluice-bench-window-")
			if err != nil {
				return err
			}
			defer os.RemoveAll(work)
			opts.Dir = work
			if !noWasm {
				fmt.Fprintln(stderr, "bench: building the wincount plugin with the Go toolchain")
				paths, err := buildExamples(cmd.Context(), filepath.Join(work, "plugins"), "wincount")
				if err != nil {
					return err
				}
				if err := readExamples(paths, map[string]*[]byte{"wincount": &opts.WinCount}); err != nil {
					return err
				}
			}
			if cpuProfile != "" {
				stop, err := startCPUProfile(cpuProfile)
				if err != nil {
					return err
				}
				defer stop()
			}
			rep, err := bench.RunWindow(cmd.Context(), opts)
			if err != nil {
				return err
			}
			return writeReport(cmd, rep, jsonFile, cpuProfile)
		},
	}
	fl := cmd.Flags()
	fl.BoolVar(&quick, "quick", false, "100,000 records over 10,000 keys, one round")
	fl.IntVar(&records, "records", 0, "records per run (default 2,000,000)")
	fl.IntVar(&keys, "keys", 0, "keys the records are spread over (default 100,000)")
	fl.IntVar(&rate, "rate", 0, "records per second of event time (default 100,000)")
	fl.DurationVar(&size, "size", 0, "the windows' size (default 1m)")
	fl.DurationVar(&slide, "slide", 0, "the sliding windows' slide (default 1s)")
	fl.IntVar(&workers, "workers", 0, "the windowed operator's workers (default GOMAXPROCS)")
	fl.DurationVar(&commitEvery, "commit-interval", 0, "commit at most this often while batches come full, as the pipeline file's state.commit_interval (default 0: every batch)")
	fl.IntVar(&rounds, "rounds", 0, "rounds per case; the median is reported (default 3)")
	fl.BoolVar(&noWasm, "no-wasm", false, "skip the Wasm aggregate (no Go toolchain needed)")
	fl.StringVar(&jsonFile, "json", "bench-window.json", "where to write the results as JSON; - prints JSON instead of the table")
	fl.StringVar(&cpuProfile, "cpuprofile", "", "write a CPU profile of the runs to this file")
	return cmd
}
