package main

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/sluicehq/sluice/host/bench"
)

func newBenchControlCmd() *cobra.Command {
	var (
		quick      bool
		jsonFile   string
		modes      []string
		rate       float64
		capRate    float64
		phase      time.Duration
		maxWorkers int
		soak       time.Duration
		profile    string
		logs       logFlags
	)
	cmd := &cobra.Command{
		Use:   "control [--mode off,ds2,latency,all] [--rate N] [--cap N] [--phase D] [--soak D] [--quick] [--json FILE]",
		Short: "Measure the control plane: rate steps, a hot-key shift and a straggler, with each policy and without",
		Long: `Build the example plugin wordcount (and, for every policy's run, a slower
version of it, plugins/internal/slowcount) and run a keyed word count (a paced
source of keys -> wordcount -> a checking sink) through phases of --phase each:

  base       the base rate (--rate), more than one worker's capacity
  step-up    twice the base rate
  step-down  half the base rate
  rise       the base rate again
  hot-shift  80% of the records go to the keys of one worker's key groups
  straggler  worker 0 slowed to a third of its capacity

once per configuration (--mode): the control plane off (one worker
throughout), DS2 alone, the latency guarantor alone, and every policy; with
every policy (the straggler detector, DS2 deciding after one round, the
latency guarantor, the doctor, in that priority) more phases inject the job
doctor's faults: one key hotter than a worker can serve (hot-key); every
commit 150 ms slower, as on a slow disk (slow-commits, a bench-only setting,
at a quarter of the rate); the operator's plugin swapped for a slower version
of it, about 1 ms of work a record (slow-version, at a quarter of the rate;
swapped back after it); then more records than the most workers can run
(backlog). --soak D adds a run of every policy under a rate that
varies between half and one and a half times --rate for D. Every mode counts
the decisions undone within a minute: rolled back, or a worker count changed
back within 60 s. Under the same rate (the target: 0) such a reversal counts
unless the arrival rate at the sources, measured when each of the two
decisions was taken, moved the reversal's way by more than a tenth (a
scale-in after the rate fell, a scale-out after it rose) or a phase began
between them; the count whatever the rate is given too.

--cap caps each worker at that many records/s, a bench-only setting that
makes a worker's capacity small and known on a machine with few cores, so
that the decisions show (0 runs uncapped; the hot-key shift, the straggler
and the hot key are made through the cap, so their targets are then listed
as not checked). Every record is due at a fixed
time; its latency runs from then to its count at the sink, which checks that
every record was counted exactly once. The report gives, per phase, the
workers at its end, the p99 latency, how long after the phase began every
second's p99 stayed under Lreq (1 s), the decisions (moves of key groups,
worker changes) and when the injected fault was found; then every decision
with its reason, and the targets. Progress goes to stderr. The full run
takes about 12 minutes.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			const slowCount = "internal/slowcount"
			opts := bench.DefaultControlOptions()
			if quick {
				opts = bench.QuickControlOptions()
			}
			fl := cmd.Flags()
			for _, list := range modes {
				for _, m := range strings.Split(list, ",") {
					m = strings.TrimSpace(m)
					if !slices.Contains(bench.ControlModes(), m) {
						return &usageError{fmt.Sprintf("--mode %q: want off, ds2, latency or all", m)}
					}
					opts.Modes = append(opts.Modes, m)
				}
			}
			if fl.Changed("rate") {
				if rate <= 0 {
					return &usageError{fmt.Sprintf("--rate %v: want a positive number of records per second", rate)}
				}
				opts.Rate = rate
			}
			if fl.Changed("cap") {
				if capRate < 0 {
					return &usageError{fmt.Sprintf("--cap %v: want records per second per worker, or 0 for none", capRate)}
				}
				opts.Cap = capRate
			}
			if fl.Changed("phase") {
				if phase <= 0 {
					return &usageError{fmt.Sprintf("--phase %v: want a positive duration", phase)}
				}
				opts.Phase = phase
			}
			if fl.Changed("max-workers") {
				if maxWorkers < 1 {
					return &usageError{fmt.Sprintf("--max-workers %d: want at least 1", maxWorkers)}
				}
				opts.MaxWorkers = maxWorkers
			}
			if fl.Changed("soak") {
				if soak <= 0 {
					return &usageError{fmt.Sprintf("--soak %v: want a positive duration", soak)}
				}
				opts.Soak = soak
			}
			if jsonFile == "" {
				return &usageError{"--json: a file name is required (use - for stdout)"}
			}
			log, err := logs.logger()
			if err != nil {
				return err
			}
			ctx := cmd.Context()
			stderr := cmd.ErrOrStderr()
			opts.Logger, opts.Progress = log, stderr
			work, err := os.MkdirTemp("", "sluice-bench-control-")
			if err != nil {
				return err
			}
			defer os.RemoveAll(work)
			opts.Dir = work
			names := []string{"wordcount"}
			if opts.Modes == nil || slices.Contains(opts.Modes, bench.ControlAll) {
				names = append(names, slowCount) // for the slow-version phase
			}
			fmt.Fprintf(stderr, "bench: building the plugins %s with the Go toolchain\n", strings.Join(names, ", "))
			paths, err := buildExamples(ctx, filepath.Join(work, "plugins"), names...)
			if err != nil {
				return err
			}
			if err := readExamples(paths, map[string]*[]byte{"wordcount": &opts.WordCount, slowCount: &opts.SlowCount}); err != nil {
				return err
			}
			if profile != "" {
				stopProfile, err := startCPUProfile(profile)
				if err != nil {
					return err
				}
				defer stopProfile()
			}
			rep, err := bench.RunControl(ctx, opts)
			if err != nil {
				return err
			}
			return writeReport(cmd, rep, jsonFile, profile)
		},
	}
	def := bench.DefaultControlOptions()
	fl := cmd.Flags()
	fl.BoolVar(&quick, "quick", false, "short phases (8 s), for a first look and for tests")
	fl.StringVar(&jsonFile, "json", "bench-control.json", "where to write the results as JSON; - prints JSON instead of the tables")
	fl.StringSliceVar(&modes, "mode", nil, "configurations to run: off, ds2, latency, all (repeat or separate with commas; default all four)")
	fl.Float64Var(&rate, "rate", def.Rate, "the base rate in records per second")
	fl.Float64Var(&capRate, "cap", def.Cap, "each worker's capacity in records per second (a bench-only setting; 0: uncapped)")
	fl.DurationVar(&phase, "phase", def.Phase, "length of each phase")
	fl.IntVar(&maxWorkers, "max-workers", def.MaxWorkers, "the most workers the control plane may give the operator")
	fl.DurationVar(&soak, "soak", 0, "also run every policy this long under a rate varying between half and 1.5 times --rate (a sine of two minutes' period)")
	fl.StringVar(&profile, "cpuprofile", "", "write a CPU profile of the runs (not the plugin build) to this file")
	logs.register(cmd, "warn")
	return cmd
}
