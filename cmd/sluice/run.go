package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/sluicehq/sluice/host/pipeline"
	"github.com/sluicehq/sluice/host/runner"
	"github.com/spf13/cobra"
)

// logFlags are the logging flags shared by the commands that run pipelines.
type logFlags struct {
	level  string
	format string
}

func (f *logFlags) register(cmd *cobra.Command, level string) {
	cmd.Flags().StringVar(&f.level, "log-level", level, "log level: debug, info, warn or error")
	cmd.Flags().StringVar(&f.format, "log-format", "text", "log format: text or json")
}

func (f *logFlags) logger() (*slog.Logger, error) {
	var lvl slog.Level
	if err := lvl.UnmarshalText([]byte(f.level)); err != nil {
		return nil, &usageError{fmt.Sprintf("--log-level %q: want debug, info, warn or error", f.level)}
	}
	opts := &slog.HandlerOptions{Level: lvl}
	switch strings.ToLower(f.format) {
	case "text":
		return slog.New(slog.NewTextHandler(os.Stderr, opts)), nil
	case "json":
		return slog.New(slog.NewJSONHandler(os.Stderr, opts)), nil
	}
	return nil, &usageError{fmt.Sprintf("--log-format %q: want text or json", f.format)}
}

func newRunCmd() *cobra.Command {
	var (
		file           string
		opts           runner.Options
		logs           logFlags
		progress       time.Duration
		failOnDeadLets bool
	)
	cmd := &cobra.Command{
		Use:   "run -c PIPELINE.yaml [--data-dir DIR] [--nats-url URL]",
		Short: "Run a pipeline until its sources end or it is stopped",
		Long: `Run the pipeline described by a pipeline file (see the README's pipeline file
reference). With no NATS URL, in the file or on the command line, and a pipeline
that uses NATS, an embedded NATS server with JetStream starts in-process, storing
its data under the data directory.

A pipeline whose sources are all finite (files, a bounded generator) ends by itself
once every record is processed and committed, and the command exits 0. SIGINT or
SIGTERM stops reading, finishes and commits what was read, and exits 0; a second
signal exits at once, even with a sink that does not answer, with status 128 plus
the signal's number (130 for SIGINT, 143 for SIGTERM).

A pipeline cut into stages (cluster.stages, docs/cluster.md) runs every stage in
this process, each a host of its own stage's cluster, its data under
<data_dir>/stages/<operator> and its HTTP API on a free port.

Dead letters (records an operator failed on, and input that could not be
decoded) go to <data_dir>/dead-letters.jsonl unless dead_letter says otherwise;
at exit the command says how many there were and where. With
--fail-on-dead-letters (or dead_letter.fail_run: true), a run that
dead-lettered records still processes and commits everything, then exits 3.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if file == "" {
				return &usageError{"run: -c PIPELINE.yaml is required"}
			}
			log, err := logs.logger()
			if err != nil {
				return err
			}
			p, err := pipeline.Load(file)
			if err != nil {
				return err
			}
			opts.Logger = log
			opts.Version = versionString()
			opts.Compiler = selfCompiler()
			ctx := cmd.Context()
			if stages := p.Stages(); len(stages) > 1 {
				return runStages(ctx, cmd.ErrOrStderr(), stages, opts, progress, failOnDeadLets || p.DeadLetter.FailRun)
			}
			h, err := runner.Start(ctx, p, opts)
			if err != nil {
				return stoppedWhileStarting(ctx, cmd.ErrOrStderr(), err)
			}
			if u := h.DashboardURL(); u != "" {
				fmt.Fprintln(cmd.ErrOrStderr(), "sluice: dashboard at", u)
			}
			running := []any{"pipeline", p.Name, "operators", len(p.Operators)}
			if ci := time.Duration(p.State.CommitInterval); ci > 0 {
				running = append(running, "commit_interval", ci.String())
			}
			log.Info("pipeline running", running...)
			stopProgress := reportProgress(log, h, progress)
			err = h.Run(ctx)
			stopProgress()
			st := h.Status()
			if err != nil {
				if st.Dead > 0 {
					fmt.Fprintln(cmd.ErrOrStderr(), "sluice:", deadLetterSummary(st.Dead, h.DeadLetters()))
				}
				return err
			}
			log.Info("pipeline stopped", "batches", st.Batches, "commits", h.Commits(), "records_in", st.RecordsIn,
				"records_out", st.Outputs, "dead_letters", st.Dead)
			if st.Dead == 0 {
				return nil
			}
			msg := deadLetterSummary(st.Dead, h.DeadLetters())
			if failOnDeadLets || p.DeadLetter.FailRun {
				return &deadLettersError{msg}
			}
			fmt.Fprintln(cmd.ErrOrStderr(), "sluice:", msg)
			return nil
		},
	}
	cmd.Flags().BoolVar(&failOnDeadLets, "fail-on-dead-letters", false, "exit with status 3 if any record was dead-lettered (after processing and committing everything); as dead_letter.fail_run")
	cmd.Flags().StringVarP(&file, "config", "c", "", "the pipeline file")
	cmd.Flags().StringVar(&opts.DataDir, "data-dir", "", "data directory (state, embedded NATS store, plugin registry, dead letters); overrides data_dir")
	cmd.Flags().StringVar(&opts.NATSURL, "nats-url", "", "URL of a NATS server to use instead of the embedded one; overrides nats.url")
	cmd.Flags().StringVar(&opts.HostID, "host-id", "", "this host's id among the hosts of a pipeline spread over several (docs/cluster.md); overrides cluster.host")
	cmd.Flags().BoolVar(&opts.Pool, "pool", false, "join the pipeline's cluster as a pool host: live, but given no key groups until taken into service (sluice cluster host activate, or control.hosts; docs/cluster.md)")
	cmd.Flags().StringVar(&opts.HTTPAddr, "http", "", `address of the HTTP API (health, metrics, status), or "off"; overrides http.addr`)
	cmd.Flags().DurationVar(&progress, "progress", 10*time.Second, "how often to log progress (records, rate, source positions, sink offsets); 0 turns it off")
	logs.register(cmd, "info")
	return cmd
}

// stoppedWhileStarting returns err, the error of runner.Start, unless it
// is the cancellation of a stop asked for (SIGINT, SIGTERM) while the
// pipeline was starting: then it says so on w and returns nil, since
// nothing was read and a stop is what was asked for.
func stoppedWhileStarting(ctx context.Context, w io.Writer, err error) error {
	if ctx.Err() == nil || !errors.Is(err, context.Canceled) {
		return err
	}
	fmt.Fprintln(w, "sluice: stopped while the pipeline was starting; nothing was read")
	return nil
}

// reportProgress logs the job's progress every interval until the returned
// function is called.
func reportProgress(log *slog.Logger, h *runner.Host, interval time.Duration) func() {
	if interval <= 0 {
		return func() {}
	}
	done := make(chan struct{})
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		t := time.NewTicker(interval)
		defer t.Stop()
		var last uint64
		for {
			select {
			case <-done:
				return
			case <-t.C:
				st := h.Status()
				sources, sinks := splitPositions(st.Positions)
				log.Info("progress", "records_in", st.RecordsIn,
					"rate_per_s", float64(st.RecordsIn-last)/interval.Seconds(),
					"records_out", st.Outputs, "dead_letters", st.Dead, "batches", st.Batches,
					"source_positions", sources, "sink_offsets", sinks)
				last = st.RecordsIn
			}
		}
	}()
	return func() { close(done); <-stopped }
}

// deadLetterSummary says how many records a run dead-lettered and where
// they are: a file (a path) or a NATS subject.
func deadLetterSummary(n uint64, where string) string {
	if strings.HasPrefix(where, "NATS ") {
		where = "published to " + where
	} else {
		where = "see " + where
	}
	if n == 1 {
		return "1 record dead-lettered: " + where
	}
	return fmt.Sprintf("%d records dead-lettered: %s", n, where)
}

// deadLettersError ends a run that dead-lettered records when it was asked
// to fail for that: exit status exitDeadLetters.
type deadLettersError struct{ msg string }

func (e *deadLettersError) Error() string { return e.msg }

// sinkOffsetPrefix begins the names under which the committed positions
// hold a sink's offset (the length of a file, the stream sequence of a
// JetStream sink) rather than a source's position.
const sinkOffsetPrefix = "sink/"

// splitPositions splits committed positions into the sources' positions
// and the sinks' offsets, by name.
func splitPositions(all map[string]uint64) (sources, sinks map[string]uint64) {
	sources, sinks = map[string]uint64{}, map[string]uint64{}
	for name, v := range all {
		if sink, ok := strings.CutPrefix(name, sinkOffsetPrefix); ok {
			sinks[sink] = v
		} else {
			sources[name] = v
		}
	}
	return sources, sinks
}

// runStages runs the stages of a pipeline cut into stages (cluster.stages,
// docs/cluster.md) in this process, each a host of its own stage's
// cluster: the first with the data directory and HTTP address the file
// and flags give, each later one under <data directory>/stages/<operator>
// with its HTTP API on a free port of the same interface (logged, and
// written to its data directory). It returns when every stage has
// stopped: a stage that fails stops the others. With failOnDead, a run
// that dead-lettered records ends in a *deadLettersError.
func runStages(ctx context.Context, w io.Writer, stages []*pipeline.Pipeline, opts runner.Options, progress time.Duration, failOnDead bool) error {
	log := opts.Logger
	base := opts.DataDir
	if base == "" {
		base = stages[0].DataDir
	}
	addr := opts.HTTPAddr
	if addr == "" {
		addr = stages[0].HTTP.Addr
	}
	runCtx, stop := context.WithCancel(ctx)
	defer stop()
	hosts := make([]*runner.Host, len(stages))
	for i, p := range stages {
		o := opts
		o.Logger = log.With("stage", p.Stage.Operator)
		o.DataDir = filepath.Join(base, p.Stage.Dir)
		if i > 0 && addr != "off" {
			host, _, err := net.SplitHostPort(addr)
			if err != nil {
				host = "127.0.0.1"
			}
			o.HTTPAddr = net.JoinHostPort(host, "0")
		}
		h, err := runner.Start(runCtx, p, o)
		if err != nil {
			for _, started := range hosts[:i] {
				started.Close(context.WithoutCancel(ctx))
			}
			return stoppedWhileStarting(ctx, w, fmt.Errorf("stage %s: %w", p.Stage.Operator, err))
		}
		hosts[i] = h
		if i == 0 {
			if u := h.DashboardURL(); u != "" {
				fmt.Fprintln(w, "sluice: dashboard at", u)
			}
		}
	}
	log.Info("pipeline running in stages", "pipeline", stages[0].Name, "stages", len(stages))
	errs := make([]error, len(stages))
	var wg sync.WaitGroup
	for i, h := range hosts {
		wg.Go(func() {
			stopProgress := reportProgress(log.With("stage", stages[i].Stage.Operator), h, progress)
			defer stopProgress()
			if err := h.Run(runCtx); err != nil {
				errs[i] = fmt.Errorf("stage %s: %w", stages[i].Stage.Operator, err)
				stop() // one stage failed: stop the others
			}
		})
	}
	wg.Wait()
	var dead uint64
	for i, h := range hosts {
		st := h.Status()
		dead += st.Dead
		log.Info("stage stopped", "stage", stages[i].Stage.Operator, "batches", st.Batches, "records_in", st.RecordsIn,
			"records_out", st.Outputs, "dead_letters", st.Dead)
		if st.Dead > 0 {
			fmt.Fprintln(w, "sluice: stage", stages[i].Stage.Operator+":", deadLetterSummary(st.Dead, h.DeadLetters()))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	if dead > 0 && failOnDead {
		return &deadLettersError{fmt.Sprintf("%d records dead-lettered", dead)}
	}
	return nil
}
