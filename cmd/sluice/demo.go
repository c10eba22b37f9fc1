package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/spf13/cobra"

	"github.com/sluicehq/sluice/connectors"
	"github.com/sluicehq/sluice/connectors/generator"
	"github.com/sluicehq/sluice/host/pipeline"
	"github.com/sluicehq/sluice/host/runner"
)

const demoPipeline = `# The pipeline 'sluice demo' runs: lines published to NATS are stored in a
# JetStream stream, split into words by one Wasm plugin, counted per word by
# another (keyed state, committed to Pebble), and the counts published back.
name: demo
nats:
  port: -1                   # embedded server on a free port
sources:
  - name: lines
    type: jetstream
    stream: DEMO_LINES
    create: true
    subjects: [demo.lines]
operators:
  - name: split
    plugin: plugins/wordsplit.wasm
    kind: flatmap
  - name: count
    plugin: plugins/wordcount.wasm
    kind: keyed
    state: [counts]
sinks:
  - name: counts
    type: nats
    subject: demo.counts
http:
  addr: %s
`

func newDemoCmd() *cobra.Command {
	var (
		duration time.Duration
		rate     int
		dataDir  string
		httpAddr string
		keep     bool
		logs     logFlags
	)
	cmd := &cobra.Command{
		Use:   "demo",
		Short: "Run a live word count: embedded NATS, two Wasm plugins, keyed state",
		Long: `Build the example plugins, start an embedded NATS server, and run a pipeline
that counts words in sentences published to NATS, showing the most frequent
words and the throughput every second. It stops after --duration (or on
Ctrl-C), drains and commits. Without --data-dir, it works in a new temporary
directory, which it removes at exit unless --keep says to keep it (and then
says how to read the committed counts).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			log, err := logs.logger()
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			ctx := cmd.Context()
			temporary := dataDir == ""
			if temporary {
				dataDir, err = os.MkdirTemp("", "sluice-demo-")
				if err != nil {
					return err
				}
				if !keep {
					defer func() {
						if err := os.RemoveAll(dataDir); err != nil {
							fmt.Fprintf(cmd.ErrOrStderr(), "sluice: removing the demo's directory: %v\n", err)
						}
					}()
				}
			}
			fmt.Fprintln(out, "building the example plugins (wordsplit, wordcount) with the Go toolchain...")
			if _, err := buildExamples(ctx, filepath.Join(dataDir, "plugins"), "wordsplit", "wordcount"); err != nil {
				return err
			}
			pfile := filepath.Join(dataDir, "demo.yaml")
			if err := os.WriteFile(pfile, fmt.Appendf(nil, demoPipeline, httpAddr), 0o644); err != nil {
				return err
			}
			p, err := pipeline.Load(pfile)
			if err != nil {
				return err
			}
			fmt.Fprintln(out, "starting the pipeline: compiling the plugins, or loading them from the compile cache...")
			h, err := runner.Start(ctx, p, runner.Options{Logger: log, Version: versionString(), Compiler: selfCompiler()})
			if err != nil {
				return stoppedWhileStarting(ctx, cmd.ErrOrStderr(), err)
			}
			fmt.Fprintf(out, "pipeline %s running on NATS %s; metrics at http://%s/metrics\n", pfile, h.NATSURL(), h.HTTPAddr())
			if u := h.DashboardURL(); u != "" {
				fmt.Fprintf(out, "dashboard: %s\n", u)
			}

			counts := newTopWords()
			sub, err := h.NATS().Subscribe("demo.counts", func(m *nats.Msg) {
				counts.set(m.Header.Get("Sluice-Key"), string(m.Data))
			})
			if err != nil {
				h.Close(ctx)
				return err
			}
			defer sub.Unsubscribe()

			runCtx, stop := context.WithTimeout(ctx, duration)
			defer stop()
			pubCtx, stopPub := context.WithCancel(runCtx)
			var published int64
			var pubErr error
			var wg sync.WaitGroup
			wg.Go(func() { published, pubErr = publishLines(pubCtx, h.NATS(), rate) })

			runErr := make(chan error, 1)
			go func() { runErr <- h.Run(runCtx) }()
			tick := time.NewTicker(time.Second)
			defer tick.Stop()
			start := time.Now()
			var lastIn uint64
		loop:
			for {
				select {
				case err := <-runErr:
					stopPub()
					wg.Wait()
					if err != nil {
						return err
					}
					break loop
				case <-tick.C:
					st := h.Status()
					fmt.Fprintf(out, "\n%5.0fs  lines in %d (%d/s)  words counted %d  batches %d\n",
						time.Since(start).Seconds(), st.RecordsIn, st.RecordsIn-lastIn, st.Outputs, st.Batches)
					lastIn = st.RecordsIn
					counts.print(out, 8)
				}
			}
			if pubErr != nil && !errors.Is(pubErr, context.Canceled) && !errors.Is(pubErr, context.DeadlineExceeded) {
				return pubErr
			}
			st := h.Status()
			fmt.Fprintf(out, "\nstopped: %d lines published, %d processed and committed in %d batches, %d word counts emitted, %d dead letters\n",
				published, st.RecordsIn, st.Batches, st.Outputs, st.Dead)
			removed := temporary && !keep
			if waiting := published - int64(st.RecordsIn); waiting > 0 {
				// Stopping at the deadline leaves what arrived last unread;
				// JetStream keeps it, unacknowledged, for the next run.
				fmt.Fprintf(out, "%d lines published just before the stop were not read yet", waiting)
				if !removed {
					fmt.Fprint(out, ": they stay in the JetStream stream under the data directory")
				}
				fmt.Fprintln(out)
			}
			if removed {
				fmt.Fprintf(out, "the counts were committed in %s, removed now (--keep or --data-dir DIR keeps them)\n", dataDir)
				return nil
			}
			fmt.Fprintf(out, "the counts are committed state; see them with:\n  %s state dump --data-dir %s --table counts\n", selfCommand(), p.DataDir)
			return nil
		},
	}
	cmd.Flags().DurationVar(&duration, "duration", 10*time.Second, "how long to run")
	cmd.Flags().IntVar(&rate, "rate", 20000, "sentences published per second")
	cmd.Flags().StringVar(&dataDir, "data-dir", "", "where to put the plugins, the pipeline file and its data, kept at exit (default: a new temporary directory, removed at exit)")
	cmd.Flags().BoolVar(&keep, "keep", false, "keep the temporary directory at exit, to inspect the committed state")
	cmd.Flags().StringVar(&httpAddr, "http", "127.0.0.1:0", "address of the HTTP API (port 0: a free port)")
	logs.register(cmd, "warn")
	return cmd
}

// selfCommand is how the user can run this program again: "sluice", or
// "go run ./cmd/sluice" when it was started by go run (from a build cache
// directory that is gone afterwards).
func selfCommand() string {
	if strings.Contains(os.Args[0], "go-build") {
		return "go run ./cmd/sluice"
	}
	return "sluice"
}

// publishLines publishes generated sentences to demo.lines at rate per
// second until ctx is done, and returns how many it published.
func publishLines(ctx context.Context, nc *nats.Conn, rate int) (int64, error) {
	gen, err := generator.New(generator.Config{Mode: generator.Words, Rate: float64(rate), Seed: 1, Name: "demo"})
	if err != nil {
		return 0, err
	}
	defer gen.Close()
	if err := gen.Open(ctx, 0); err != nil {
		return 0, err
	}
	buf := make([]connectors.Message, 256)
	var n int64
	for {
		k, err := gen.Read(ctx, buf)
		for i := range k {
			if err := nc.Publish("demo.lines", buf[i].Record.Value); err != nil {
				return n, err
			}
			n++
		}
		if err != nil {
			if errors.Is(err, io.EOF) {
				return n, nil
			}
			return n, err
		}
	}
}

// topWords keeps the latest count of each word.
type topWords struct {
	mu     sync.Mutex
	counts map[string]uint64
}

func newTopWords() *topWords { return &topWords{counts: map[string]uint64{}} }

func (t *topWords) set(word, count string) {
	n, err := strconv.ParseUint(count, 10, 64)
	if err != nil {
		return
	}
	t.mu.Lock()
	if n > t.counts[word] {
		t.counts[word] = n
	}
	t.mu.Unlock()
}

func (t *topWords) print(w io.Writer, n int) {
	t.mu.Lock()
	type wc struct {
		word  string
		count uint64
	}
	all := make([]wc, 0, len(t.counts))
	for k, v := range t.counts {
		all = append(all, wc{k, v})
	}
	t.mu.Unlock()
	slices.SortFunc(all, func(a, b wc) int {
		return cmp.Or(cmp.Compare(b.count, a.count), cmp.Compare(a.word, b.word))
	})
	for i := 0; i < n && i < len(all); i++ {
		fmt.Fprintf(w, "  %-12s %d\n", all[i].word, all[i].count)
	}
}
