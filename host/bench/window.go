package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"runtime/pprof"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/sluicehq/sluice/abi"
	"github.com/sluicehq/sluice/connectors"
	"github.com/sluicehq/sluice/host/exec"
	"github.com/sluicehq/sluice/host/pipeline"
	"github.com/sluicehq/sluice/host/plugin"
	"github.com/sluicehq/sluice/host/window"
	wasm "github.com/sluicehq/sluice/runtime"
	"github.com/sluicehq/sluice/state"
)

// WindowOptions configure `sluice bench window`: a windowed count per key
// through the executor with Pebble commits, tumbling against sliding
// windows of the same size, through the built-in count and through a Wasm
// aggregate (plugins/wincount).
type WindowOptions struct {
	// Records per run and Keys they are spread over (round robin).
	Records, Keys int
	// Rate is the event time's pace: records per second of event time.
	Rate int
	// Size is the windows' size, Slide the sliding windows' slide.
	Size, Slide time.Duration
	// Workers of the windowed operator; 0: GOMAXPROCS.
	Workers int
	// CommitInterval is the job's (exec.Config.CommitInterval); 0: every
	// batch is committed.
	CommitInterval time.Duration
	// Rounds per case (the median is reported).
	Rounds int
	// WinCount is the wincount plugin's module; nil skips the Wasm cases.
	WinCount []byte
	Dir      string
	Logger   *slog.Logger
	Progress io.Writer
}

// DefaultWindowOptions are the issue's: 100,000 keys, windows of a minute,
// sliding by a second (60 slices a window).
func DefaultWindowOptions() WindowOptions {
	return WindowOptions{Records: 2_000_000, Keys: 100_000, Rate: 100_000, Size: time.Minute, Slide: time.Second, Rounds: 3}
}

// QuickWindowOptions are small, for a first look and for tests.
func QuickWindowOptions() WindowOptions {
	o := DefaultWindowOptions()
	o.Records, o.Keys, o.Rounds = 100_000, 10_000, 1
	return o
}

// WindowReport is the result of RunWindow.
type WindowReport struct {
	Machine Machine      `json:"machine"`
	Date    time.Time    `json:"date"`
	Options WindowParams `json:"options"`
	Cases   []WindowCase `json:"cases"`
}

// WindowParams are the options a report ran with.
type WindowParams struct {
	Records int    `json:"records"`
	Keys    int    `json:"keys"`
	Rate    int    `json:"event_rate_per_second"`
	Size    string `json:"size"`
	Slide   string `json:"slide"`
	Workers int    `json:"workers"`
	Rounds  int    `json:"rounds"`
	// CommitInterval is the job's commit interval ("0s": every batch).
	CommitInterval string `json:"commit_interval"`
}

// WindowCase is one function over one kind of window.
type WindowCase struct {
	Function string `json:"function"` // built-in or wasm
	Window   string `json:"window"`   // tumbling or sliding
	// Rate is input records per second, from start to the last commit
	// (the end of input fires every window still open, in the run).
	Rate    float64   `json:"records_per_second"`
	Rounds  []float64 `json:"rounds_records_per_second"`
	Outputs uint64    `json:"outputs"`
	// SlidingCost is, for a sliding case, its time per record over the
	// tumbling case's with the same function; SlidingCostPerOutput the
	// same per output. A sliding window emits a result every slide while
	// it holds records of the key: with keys that have few records a
	// window, the outputs, not the records, set its cost.
	SlidingCost          float64 `json:"sliding_cost,omitempty"`
	SlidingCostPerOutput float64 `json:"sliding_cost_per_output,omitempty"`
}

// RunWindow runs the window benchmark: each function over tumbling and
// sliding windows, rounds interleaved. Every round's outputs are checked
// against the counts the input implies, and a wrong round fails the run.
func RunWindow(ctx context.Context, opts WindowOptions) (*WindowReport, error) {
	if opts.Records <= 0 || opts.Keys <= 0 || opts.Rate <= 0 || opts.Size <= 0 || opts.Slide <= 0 || opts.Rounds <= 0 {
		return nil, fmt.Errorf("bench: window: records, keys, rate, size, slide and rounds must be positive (got %+v)", opts)
	}
	if opts.CommitInterval < 0 {
		return nil, fmt.Errorf("bench: window: the commit interval %v is negative", opts.CommitInterval)
	}
	if opts.Size%opts.Slide != 0 {
		return nil, fmt.Errorf("bench: window: the size %v is not a multiple of the slide %v", opts.Size, opts.Slide)
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	dir := opts.Dir
	if dir == "" {
		tmp, err := os.MkdirTemp("", "sluice-bench-window-")
		if err != nil {
			return nil, fmt.Errorf("bench: %w", err)
		}
		defer os.RemoveAll(tmp)
		dir = tmp
	}
	e := &env{dir: dir, log: log, progress: opts.Progress, engineName: wasm.EngineWazero, engines: map[bool]wasm.Engine{}}
	defer e.close(context.WithoutCancel(ctx))
	workers := parallelism(opts.Workers)
	rep := &WindowReport{Machine: CurrentMachine(), Date: time.Now().UTC().Truncate(time.Second),
		Options: WindowParams{Records: opts.Records, Keys: opts.Keys, Rate: opts.Rate, Size: opts.Size.String(),
			Slide: opts.Slide.String(), Workers: workers, Rounds: opts.Rounds, CommitInterval: opts.CommitInterval.String()}}
	e.step("machine: %d cores (GOMAXPROCS %d), load %s", rep.Machine.NumCPU, rep.Machine.GOMAXPROCS, orUnknown(rep.Machine.Load, "unknown"))
	var wasmPlugin *plugin.Plugin
	functions := []string{"built-in"}
	if opts.WinCount != nil {
		e.step("window: compiling the wincount plugin")
		p, err := e.load(ctx, "wincount", opts.WinCount, plugin.KindAggregate, true)
		if err != nil {
			return nil, err
		}
		wasmPlugin = p
		functions = append(functions, "wasm")
	}
	type key struct{ fn, win string }
	rounds := map[key][]float64{}
	outputs := map[key]uint64{}
	for r := range opts.Rounds {
		for _, fn := range functions {
			for _, win := range []string{"tumbling", "sliding"} {
				e.step("window: round %d/%d: %s count per key, %s windows of %v, %d records over %d keys, %d workers",
					r+1, opts.Rounds, fn, win, opts.Size, opts.Records, opts.Keys, workers)
				var (
					rate float64
					n    uint64
					err  error
				)
				// The label splits a --cpuprofile by case (go tool pprof
				// -tagfocus case=built-in/sliding); the job's goroutines
				// inherit it.
				pprof.Do(ctx, pprof.Labels("case", fn+"/"+win), func(ctx context.Context) {
					rate, n, err = windowRound(ctx, e, wasmPlugin, fn, win, r, workers, opts)
				})
				if err != nil {
					return nil, err
				}
				k := key{fn, win}
				rounds[k] = append(rounds[k], rate)
				outputs[k] = n
			}
		}
	}
	for _, fn := range functions {
		tum, tumOut := median(rounds[key{fn, "tumbling"}]), outputs[key{fn, "tumbling"}]
		for _, win := range []string{"tumbling", "sliding"} {
			k := key{fn, win}
			c := WindowCase{Function: fn, Window: win, Rate: median(rounds[k]), Rounds: rounds[k], Outputs: outputs[k]}
			if win == "sliding" && c.Rate > 0 {
				c.SlidingCost = tum / c.Rate
				if c.Outputs > 0 {
					c.SlidingCostPerOutput = c.SlidingCost * float64(tumOut) / float64(c.Outputs)
				}
			}
			rep.Cases = append(rep.Cases, c)
		}
	}
	return rep, nil
}

// windowRound runs one case and returns records per second and the
// outputs, after checking them: the counts of each window add up to what
// each record contributes (one per window that holds it).
func windowRound(ctx context.Context, e *env, p *plugin.Plugin, fn, win string, round, workers int, opts WindowOptions) (float64, uint64, error) {
	dir := filepath.Join(e.dir, "window-state", fn+"-"+win+"-"+strconv.Itoa(round))
	store, err := state.Open(dir, state.Options{KeyGroups: pipeline.DefaultKeyGroups, Logger: e.log})
	if err != nil {
		return 0, 0, fmt.Errorf("bench: %w", err)
	}
	defer store.Close()
	spec := window.Spec{Assigner: window.Tumbling, Size: opts.Size}
	perRecord := 1
	if win == "sliding" {
		spec = window.Spec{Assigner: window.Sliding, Size: opts.Size, Slide: opts.Slide}
		perRecord = int(opts.Size / opts.Slide)
	}
	op := exec.Operator{Name: "count", Kind: plugin.KindAggregate, Parallelism: workers, Window: &exec.Window{Spec: spec}}
	if fn == "wasm" {
		op.Plugin = p
	} else {
		op.Window.Function = func() window.Function {
			f, _ := window.Builtin("count", "")
			return f
		}
	}
	src := &timedSource{n: opts.Records, keys: opts.Keys, step: int64(time.Second) / int64(opts.Rate)}
	sink := &countSink{wasm: fn == "wasm"}
	job, err := exec.New(ctx, exec.Config{
		Name:           "bench-window",
		Sources:        []exec.Input{{Name: "events", Source: src}},
		Operators:      []exec.Operator{op},
		Sinks:          []exec.Output{{Name: "counts", Sink: sink}},
		DeadLetter:     &discardSink{name: "dead-letters"},
		Late:           &discardSink{name: "late"},
		Store:          store,
		BatchSize:      pipeline.DefaultBatchSize,
		Linger:         pipeline.DefaultLinger,
		CommitInterval: opts.CommitInterval,
		Logger:         e.log,
	})
	if err != nil {
		return 0, 0, fmt.Errorf("bench: %w", err)
	}
	start := time.Now()
	if err := job.Run(ctx); err != nil {
		return 0, 0, fmt.Errorf("bench: windowed count: %w", err)
	}
	elapsed := time.Since(start)
	if sink.err != nil {
		return 0, 0, fmt.Errorf("bench: windowed count: %w", sink.err)
	}
	if want := uint64(opts.Records * perRecord); sink.total != want {
		return 0, 0, fmt.Errorf("bench: windowed count (%s, %s): the windows count %d records, want %d (%d records, each in %d windows)",
			fn, win, sink.total, want, opts.Records, perRecord)
	}
	return float64(opts.Records) / elapsed.Seconds(), sink.outputs, nil
}

// timedSource delivers n records of keys k0..k(keys-1) in turn, with event
// times step apart from 2026-01-01; resumable from a position.
type timedSource struct {
	n, keys, next int
	step          int64
	keyNames      [][]byte
}

var _ connectors.Source = (*timedSource)(nil)

func (s *timedSource) Name() string { return "timed" }

func (s *timedSource) Open(_ context.Context, after uint64) error {
	s.next = int(after)
	s.keyNames = make([][]byte, s.keys)
	for i := range s.keyNames {
		s.keyNames[i] = []byte("k" + strconv.Itoa(i))
	}
	return nil
}

// windowEpoch is the event time of the first record.
var windowEpoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).UnixNano()

func (s *timedSource) Read(_ context.Context, buf []connectors.Message) (int, error) {
	if s.next >= s.n {
		return 0, io.EOF
	}
	i := 0
	for ; i < len(buf) && s.next < s.n; i++ {
		buf[i] = connectors.Message{Record: abi.Record{Key: s.keyNames[s.next%s.keys], Value: []byte("1"),
			Time: windowEpoch + int64(s.next)*s.step}, Position: uint64(s.next + 1)}
		s.next++
	}
	return i, nil
}

func (s *timedSource) Ack(context.Context, uint64) error { return nil }
func (s *timedSource) Resumable() bool                   { return true }
func (s *timedSource) Close() error                      { return nil }

// countSink adds up the counts of the outputs: the built-in's JSON count,
// or wincount's "count,sum".
type countSink struct {
	wasm           bool
	outputs, total uint64
	err            error
}

func (c *countSink) Name() string { return "counts" }

func (c *countSink) Write(_ context.Context, out []connectors.Out) error {
	for _, o := range out {
		c.outputs++
		var n uint64
		if c.wasm {
			count, _, _ := strings.Cut(string(o.Record.Value), ",")
			v, err := strconv.ParseUint(count, 10, 64)
			if err != nil && c.err == nil {
				c.err = fmt.Errorf("output %q: %w", o.Record.Value, err)
			}
			n = v
		} else {
			var v struct{ Count uint64 }
			if err := json.Unmarshal(o.Record.Value, &v); err != nil && c.err == nil {
				c.err = fmt.Errorf("output %q: %w", o.Record.Value, err)
			}
			n = v.Count
		}
		c.total += n
	}
	return nil
}

func (c *countSink) Flush(context.Context) error { return nil }
func (c *countSink) Close() error                { return nil }

// WriteJSON writes the report as indented JSON.
func (r *WindowReport) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}

// WriteTable writes the report as a table.
func (r *WindowReport) WriteTable(w io.Writer) error {
	commits := commitCadence(r.Options.CommitInterval)
	fmt.Fprintf(w, "windowed count per key: %d records over %d keys, windows of %s (sliding by %s), %d workers, %s, %s, load %s\n\n",
		r.Options.Records, r.Options.Keys, r.Options.Size, r.Options.Slide, r.Options.Workers, commits, r.Date.Format(time.RFC3339), orUnknown(r.Machine.Load, "unknown"))
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "function\twindow\trecords/s\toutputs\tsliding / tumbling time\tper output\t")
	for _, c := range r.Cases {
		cost, perOut := "", ""
		if c.SlidingCost > 0 {
			cost = fmt.Sprintf("%.2fx", c.SlidingCost)
		}
		if c.SlidingCostPerOutput > 0 {
			perOut = fmt.Sprintf("%.2fx", c.SlidingCostPerOutput)
		}
		fmt.Fprintf(tw, "%s\t%s\t%.0f\t%d\t%s\t%s\t\n", c.Function, c.Window, c.Rate, c.Outputs, cost, perOut)
	}
	return tw.Flush()
}
