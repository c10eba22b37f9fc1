package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"os"
	osexec "os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/sluicehq/sluice/abi"
	"github.com/sluicehq/sluice/connectors"
	"github.com/sluicehq/sluice/connectors/generator"
	"github.com/sluicehq/sluice/host/exec"
	"github.com/sluicehq/sluice/host/pipeline"
	"github.com/sluicehq/sluice/host/plugin"
	"github.com/sluicehq/sluice/host/registry"
	"github.com/sluicehq/sluice/host/txnop"
	wasm "github.com/sluicehq/sluice/runtime"
	"github.com/sluicehq/sluice/state"
	"github.com/sluicehq/sluice/txn"
	"github.com/sluicehq/sluice/txn/apps/ledger/event"
	"github.com/sluicehq/sluice/txn/apps/workload"
)

// SwapKind is an operator kind the swap benchmark swaps.
type SwapKind string

// The kinds, each with its example plugin.
const (
	// SwapMap swaps plugins/upper (a stateless map).
	SwapMap SwapKind = "map"
	// SwapKeyed swaps plugins/wordcount (keyed state).
	SwapKeyed SwapKind = "keyed"
	// SwapTransactional swaps plugins/ledger (Streaming Ledger
	// transactions on shared tables).
	SwapTransactional SwapKind = "transactional"
)

// SwapKinds lists every kind in the order RunSwap runs them.
func SwapKinds() []SwapKind { return []SwapKind{SwapMap, SwapKeyed, SwapTransactional} }

// ParseSwapKind returns the kind named s.
func ParseSwapKind(s string) (SwapKind, error) {
	for _, k := range SwapKinds() {
		if string(k) == s {
			return k, nil
		}
	}
	return "", fmt.Errorf("bench: swap: unknown operator kind %q (want map, keyed or transactional)", s)
}

// SwapCompile says where a swap's new module is compiled.
type SwapCompile string

// The places a module is compiled.
const (
	// CompileInProcess compiles on the engine, in the pipeline's process:
	// the compile takes CPU from the pipeline as any goroutine does.
	CompileInProcess SwapCompile = "in-process"
	// CompileChild compiles in a child process at the lowest CPU priority
	// (runtime.ProcessCompiler), as `sluice run` does; the engine then
	// loads the compiled code from the compilation cache.
	CompileChild SwapCompile = "child"
	// CompileChildSamePriority compiles in a child process at the
	// pipeline's own priority: the child's share of the CPU without the
	// lower priority.
	CompileChildSamePriority SwapCompile = "child-same-priority"
)

// SwapCompiles lists every SwapCompile.
func SwapCompiles() []SwapCompile {
	return []SwapCompile{CompileInProcess, CompileChild, CompileChildSamePriority}
}

// ParseSwapCompile returns the SwapCompile named s.
func ParseSwapCompile(s string) (SwapCompile, error) {
	for _, c := range SwapCompiles() {
		if string(c) == s {
			return c, nil
		}
	}
	return "", fmt.Errorf("bench: swap: unknown compile %q (want in-process, child or child-same-priority)", s)
}

// SwapPlugins holds the compiled modules the swap benchmark deploys.
type SwapPlugins struct {
	// Upper is plugins/upper, for the map kind.
	Upper []byte
	// WordCount is plugins/wordcount, for the keyed kind.
	WordCount []byte
	// Ledger is plugins/ledger, for the transactional kind.
	Ledger []byte
}

// SwapOptions say what RunSwap runs. Start from DefaultSwapOptions or
// QuickSwapOptions.
type SwapOptions struct {
	// Kinds to run, in the order of SwapKinds whatever the order here;
	// empty: all.
	Kinds []SwapKind
	// Rate is the pace of the source in events per second: every event is
	// due at a fixed time, and its latency counts from then, so a pipeline
	// that falls behind shows it in its latencies.
	Rate float64
	// TxnRate is the transactional kind's pace; 0: Rate. The Streaming
	// Ledger pipeline with a Go guest sustains about 78,000 events/s on 2
	// cores, so DefaultSwapOptions runs it at 50,000.
	TxnRate float64
	// Duration is how long each kind's run lasts at least; it goes on
	// until the last swap has returned and its window has passed, however
	// long the swaps take.
	Duration time.Duration
	// Warmup is the start of each run whose events are not measured
	// (compilation of the first module, caches, the JIT-free warm-up of
	// the state tables).
	Warmup time.Duration
	// Swaps is how many swaps each run makes, evenly spaced after the
	// warm-up.
	Swaps int
	// Window: an event counts as "during a swap" when it is due from
	// Window before the swap starts until Window after it returns; the
	// others after the warm-up are the steady state.
	Window time.Duration
	// Workers is each operator's number of workers; 0: GOMAXPROCS.
	Workers int
	// BatchSize and Linger cut the executor's batches (as the pipeline
	// file's batch keys); 0: the pipeline defaults.
	BatchSize int
	Linger    time.Duration
	// Punctuation and PunctuationInterval cut the transactional operator's
	// batches (as the pipeline file's punctuation keys); 0: 4,096 events
	// or 20 ms.
	Punctuation         int
	PunctuationInterval time.Duration
	// Plugins are the modules deployed; each swap deploys the kind's module
	// with a new version written into it (registry.AppendVersion), so the
	// host compiles it afresh, as it would a new release.
	Plugins SwapPlugins
	// SameModule makes every swap deploy the first module again (loaded
	// from the compilation cache): the swap without the compilation.
	SameModule bool
	// Compile lists where new modules are compiled; each kind runs once
	// per entry, one after the other. Empty: CompileInProcess.
	Compile []SwapCompile
	// Executable is the program a child compile runs: one that serves the
	// compile (runtime.ServeCompile) when it finds
	// runtime.ChildCompileEnv set, as the sluice binary does. Needed for
	// the child compiles only.
	Executable string
	// BackgroundLoad is how many busy processes (each a shell loop that
	// keeps one core busy, at the pipeline's priority) run during each
	// run, as a competing load.
	BackgroundLoad int
	// Quick is recorded in the report: the options are the small ones.
	Quick bool
	// Dir is where state stores and the compilation cache go; empty: a new
	// temporary directory, removed at the end.
	Dir string
	// Progress receives one line per step as it starts; nil: none.
	Progress io.Writer
	// Logger receives the log of the host components; nil: discarded.
	Logger *slog.Logger
}

// DefaultSwapOptions returns the configuration `sluice bench swap` runs:
// 100,000 events/s (50,000 for the transactional kind), 30 s per kind, 5
// swaps each.
func DefaultSwapOptions() SwapOptions {
	return SwapOptions{
		Rate: 100_000, TxnRate: 50_000, Duration: 30 * time.Second, Warmup: 5 * time.Second, Swaps: 5,
		Window: 250 * time.Millisecond,
	}
}

// QuickSwapOptions returns a small configuration of the same shape, for
// tests and a first look.
func QuickSwapOptions() SwapOptions {
	return SwapOptions{
		Quick: true, Rate: 20_000, Duration: 3 * time.Second, Warmup: 500 * time.Millisecond, Swaps: 2,
		Window: 250 * time.Millisecond,
	}
}

// SwapReport is the outcome of RunSwap. Its JSON form is what `sluice
// bench swap --json` writes.
type SwapReport struct {
	Machine Machine   `json:"machine"`
	Date    time.Time `json:"date"`
	Quick   bool      `json:"quick"`
	Rate    float64   `json:"rate"`
	// BackgroundLoad is the number of busy processes that ran alongside.
	BackgroundLoad int          `json:"background_load"`
	Results        []SwapResult `json:"results"`
	// Targets are the project's swap targets checked against the results.
	Targets []Target `json:"targets"`
	// LoadAfter is the load average when the run ended.
	LoadAfter string `json:"load_after,omitempty"`
}

// SwapResult is one kind's run.
type SwapResult struct {
	Kind    SwapKind `json:"kind"`
	Plugin  string   `json:"plugin"`
	Workers int      `json:"workers"`
	// Compile is where the swaps' modules were compiled.
	Compile SwapCompile `json:"compile"`
	// Events is how many events the source produced (about Rate x the
	// run's length); every one of them reached the sink exactly once
	// (RunSwap fails otherwise).
	Events uint64 `json:"events"`
	// Rate is the pace asked; Achieved is events over the time from the
	// first event due to the last output.
	Rate     float64 `json:"rate"`
	Achieved float64 `json:"achieved_rate"`
	// Swaps is how many swaps were made; Calls describes each.
	Swaps int        `json:"swaps"`
	Calls []SwapCall `json:"calls"`
	// Steady and During are the latencies of the events due in steady
	// state and during the swaps (see SwapOptions.Window).
	Steady LatencyStats `json:"steady"`
	During LatencyStats `json:"during_swaps"`
	// P99Ratio is During.P99 over Steady.P99.
	P99Ratio float64 `json:"p99_ratio"`
	// Pause is the longest time without any output inside the swaps'
	// windows; SteadyGap the longest outside them (after the warm-up).
	PauseMs     float64 `json:"pause_ms"`
	SteadyGapMs float64 `json:"steady_gap_ms"`
	// PauseSwap is the swap (from 0, in Calls) around which the longest
	// pause was, and PauseAtMs when it began, from the start of that
	// swap's call (negative: before it), to set against the call's load
	// and swap times.
	PauseSwap int     `json:"pause_swap"`
	PauseAtMs float64 `json:"pause_at_ms"`
	// Dead is the number of dead-lettered records (0 in a correct run).
	Dead uint64 `json:"dead_letters"`
}

// keptUp reports whether the pipeline kept pace with the source (within
// 1%): otherwise its latencies measure a growing backlog.
func (r *SwapResult) keptUp() bool { return r.Achieved >= 0.99*r.Rate }

// SwapCall is one swap: loading (compiling) the new module, making its
// instances and installing them at a batch boundary, all while the old
// module runs.
type SwapCall struct {
	Version string  `json:"version"`
	AtMs    float64 `json:"at_ms"` // since the run started
	LoadMs  float64 `json:"load_ms"`
	SwapMs  float64 `json:"swap_ms"` // job.Swap: instances and install
	// The steps of the swap (exec.SwapTimes): making the instances (for
	// the transactional kind, its scheduler and instances), waiting for a
	// batch boundary, installing the instances there; and the first batch
	// on the new code against the last one on the old.
	InstancesMs  float64 `json:"instances_ms"`
	BoundaryMs   float64 `json:"boundary_ms"`
	InstallMs    float64 `json:"install_ms"`
	FirstBatchMs float64 `json:"first_batch_ms"`
	BeforeMs     float64 `json:"batch_before_ms"`
}

// LatencyStats summarises event latencies: from the time an event was due
// at the source to the time its output reached the sink.
type LatencyStats struct {
	Events int     `json:"events"`
	P50Ms  float64 `json:"p50_ms"`
	P99Ms  float64 `json:"p99_ms"`
	MaxMs  float64 `json:"max_ms"`
}

// ErrSwapOutput is wrapped by RunSwap's error when a run's output is wrong:
// an event lost, duplicated or dead-lettered.
var ErrSwapOutput = errors.New("bench: swap: wrong output")

// RunSwap runs, for each kind, a pipeline at a fixed pace and swaps its
// operator's module while it runs; it checks that every event reached the
// sink exactly once and reports the latencies in steady state and during
// the swaps.
func RunSwap(ctx context.Context, opts SwapOptions) (rep *SwapReport, err error) {
	kinds := opts.Kinds
	if len(kinds) == 0 {
		kinds = SwapKinds()
	}
	for _, k := range kinds {
		if _, err := ParseSwapKind(string(k)); err != nil {
			return nil, err
		}
	}
	switch {
	case opts.Rate <= 0 || opts.TxnRate < 0:
		return nil, fmt.Errorf("bench: swap: rate %v (transactional %v): want a positive number of events per second", opts.Rate, opts.TxnRate)
	case opts.Duration <= opts.Warmup || opts.Warmup < 0:
		return nil, fmt.Errorf("bench: swap: duration %v must be longer than the warm-up %v", opts.Duration, opts.Warmup)
	case opts.Swaps < 1:
		return nil, fmt.Errorf("bench: swap: %d swaps: want at least 1", opts.Swaps)
	case opts.Window < 0:
		return nil, fmt.Errorf("bench: swap: negative window %v", opts.Window)
	case opts.BackgroundLoad < 0:
		return nil, fmt.Errorf("bench: swap: background load %d: want 0 or more busy processes", opts.BackgroundLoad)
	}
	compiles := opts.Compile
	if len(compiles) == 0 {
		compiles = []SwapCompile{CompileInProcess}
	}
	for _, c := range compiles {
		if _, err := ParseSwapCompile(string(c)); err != nil {
			return nil, err
		}
		if c != CompileInProcess && opts.Executable == "" {
			return nil, fmt.Errorf("bench: swap: compile %s: no executable to run the child compiles (SwapOptions.Executable)", c)
		}
	}
	if opts.BatchSize <= 0 {
		opts.BatchSize = pipeline.DefaultBatchSize
	}
	if opts.Linger <= 0 {
		opts.Linger = pipeline.DefaultLinger
	}
	if opts.Punctuation <= 0 {
		opts.Punctuation = 4096
	}
	if opts.PunctuationInterval <= 0 {
		opts.PunctuationInterval = 20 * time.Millisecond
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	dir := opts.Dir
	if dir == "" {
		if dir, err = os.MkdirTemp("", "sluice-bench-swap-"); err != nil {
			return nil, fmt.Errorf("bench: %w", err)
		}
		defer os.RemoveAll(dir)
	}
	e := &env{dir: dir, log: log, progress: opts.Progress, engines: map[bool]wasm.Engine{}}
	defer func() {
		if cerr := e.close(context.WithoutCancel(ctx)); cerr != nil && err == nil {
			err = cerr
		}
	}()
	rep = &SwapReport{Machine: CurrentMachine(), Date: time.Now().UTC(), Quick: opts.Quick, Rate: opts.Rate, BackgroundLoad: opts.BackgroundLoad}
	run := 0
	for _, k := range SwapKinds() {
		if !slices.Contains(kinds, k) {
			continue
		}
		for _, c := range compiles {
			run++
			res, err := runSwapKind(ctx, e, k, c, run, opts)
			if err != nil {
				return nil, err
			}
			rep.Results = append(rep.Results, *res)
		}
	}
	rep.Targets = swapTargets(rep.Results, opts.BackgroundLoad)
	rep.LoadAfter = loadAverage("/proc/loadavg")
	return rep, nil
}

// swapKind is what differs between the kinds.
type swapKind struct {
	plugin string
	code   []byte
	kind   plugin.Kind
	// seq returns the source position an output stands for (1-based).
	seq func(out *abi.Record) (uint64, error)
	// keys is the number of distinct keys of the source (0: none).
	keys uint64
}

func (e *env) swapKind(k SwapKind, p SwapPlugins) (*swapKind, error) {
	switch k {
	case SwapMap:
		// The value is the decimal position; upper-casing leaves digits.
		return &swapKind{plugin: "upper", code: p.Upper, kind: plugin.KindMap, seq: func(r *abi.Record) (uint64, error) {
			return strconv.ParseUint(string(r.Value), 10, 64)
		}}, nil
	case SwapKeyed:
		// Key k counts positions k, k+K, k+2K, ... (position 0 does not
		// exist: key 0 counts K, 2K, ...): the n-th count of a key stands
		// for one position, so a lost or repeated record shows as a
		// position missing or seen twice.
		const keys = 1000
		return &swapKind{plugin: "wordcount", code: p.WordCount, kind: plugin.KindKeyed, keys: keys, seq: func(r *abi.Record) (uint64, error) {
			key, err := strconv.ParseUint(string(r.Key), 10, 64)
			if err != nil {
				return 0, err
			}
			n, err := strconv.ParseUint(string(r.Value), 10, 64)
			if err != nil || n == 0 || key >= keys {
				return 0, fmt.Errorf("key %q count %q", r.Key, r.Value)
			}
			if key == 0 {
				return n * keys, nil
			}
			return key + (n-1)*keys, nil
		}}, nil
	case SwapTransactional:
		// The source sets each event's key to its position; the ledger
		// emits one outcome per event under the event's key.
		return &swapKind{plugin: "ledger", code: p.Ledger, kind: plugin.KindTransactional, seq: func(r *abi.Record) (uint64, error) {
			return strconv.ParseUint(string(r.Key), 10, 64)
		}}, nil
	}
	return nil, fmt.Errorf("bench: swap: unknown operator kind %q", k)
}

// runSwapKind runs kind k with its modules compiled as c; run numbers
// the run, so that its modules differ from every other run's and none is
// found compiled already.
func runSwapKind(ctx context.Context, e *env, k SwapKind, c SwapCompile, run int, opts SwapOptions) (res *SwapResult, err error) {
	sk, err := e.swapKind(k, opts.Plugins)
	if err != nil {
		return nil, err
	}
	if len(sk.code) == 0 {
		return nil, fmt.Errorf("bench: swap: the %s plugin (plugins/%s compiled to WebAssembly) was not given", sk.plugin, sk.plugin)
	}
	workers := parallelism(opts.Workers)
	if k == SwapTransactional && opts.TxnRate > 0 {
		opts.Rate = opts.TxnRate
	}
	e.step("swap %s: %v at %s events/s through %s (%d workers), %d swaps after %v of warm-up, compiled %s, %d busy processes alongside",
		k, opts.Duration, thousands(opts.Rate), sk.plugin, workers, opts.Swaps, opts.Warmup, c, opts.BackgroundLoad)
	eng, err := e.swapEngine(ctx, c, opts.Executable)
	if err != nil {
		return nil, err
	}
	defer func() {
		if cerr := eng.Close(context.WithoutCancel(ctx)); cerr != nil && err == nil {
			err = fmt.Errorf("bench: swap: %w", cerr)
		}
	}()
	stopLoad, err := startBusy(ctx, opts.BackgroundLoad)
	if err != nil {
		return nil, err
	}
	defer stopLoad()
	load := func(version string) (*plugin.Plugin, time.Duration, error) {
		if opts.SameModule {
			version = "v1"
		}
		code, err := registry.AppendVersion(sk.code, fmt.Sprintf("%s-run%d", version, run))
		if err != nil {
			return nil, 0, fmt.Errorf("bench: swap: %w", err)
		}
		t0 := time.Now()
		p, err := plugin.Load(ctx, eng, sk.plugin+".wasm", code, sk.kind, plugin.WithLogger(e.log))
		if err != nil {
			return nil, 0, fmt.Errorf("bench: swap: loading %s %s: %w", sk.plugin, version, err)
		}
		return p, time.Since(t0), nil
	}
	first, _, err := load("v1")
	if err != nil {
		return nil, err
	}
	defer func() {
		// The job closes the swapped-in modules (ClosePlugin); the first
		// is this function's.
		if cerr := first.Close(context.WithoutCancel(ctx)); cerr != nil && err == nil {
			err = fmt.Errorf("bench: swap: %w", cerr)
		}
	}()

	store, err := state.Open(filepath.Join(e.dir, "swap-state", fmt.Sprintf("%s-run%d", k, run)), state.Options{KeyGroups: pipeline.DefaultKeyGroups, Logger: e.log})
	if err != nil {
		return nil, fmt.Errorf("bench: %w", err)
	}
	defer func() {
		if cerr := store.Close(); cerr != nil && err == nil {
			err = fmt.Errorf("bench: %w", cerr)
		}
	}()

	var wl workload.App
	genCfg := generator.Config{Mode: generator.Sequence, Keys: sk.keys, Rate: opts.Rate, Name: "paced"}
	op := exec.Operator{Name: "op", Kind: sk.kind, Plugin: first, Parallelism: workers, Version: "v1", RollbackBatches: 3}
	var newTxn func(p *plugin.Plugin) (*txnop.Operator, error)
	switch k {
	case SwapKeyed:
		op.Tables = []string{tableCounts}
	case SwapTransactional:
		knobs, err := workload.Defaults(workload.StreamingLedger)
		if err == nil {
			wl, err = workload.New(workload.StreamingLedger, knobs)
		}
		if err != nil {
			return nil, fmt.Errorf("bench: swap: %w", err)
		}
		genCfg.Mode, genCfg.Keys, genCfg.Workload = generator.Txn, 0, wl
		if err := loadInitial(wl, store); err != nil {
			return nil, err
		}
		newTxn = func(p *plugin.Plugin) (*txnop.Operator, error) {
			logic, err := txnop.NewWasm(ctx, p, workers, nil)
			if err != nil {
				return nil, fmt.Errorf("bench: swap: %w", err)
			}
			o, err := txnop.New(txnop.Config{Name: "op", Tables: wl.Tables(), Strategy: txn.Strategy{Kind: txn.Adaptive}, Workers: workers, Logic: logic, Logger: e.log})
			if err != nil {
				return nil, errors.Join(fmt.Errorf("bench: swap: %w", err), logic.Close(ctx))
			}
			return o, nil
		}
		o, err := newTxn(first)
		if err != nil {
			return nil, err
		}
		op.Txn = &exec.Txn{Operator: o, Events: opts.Punctuation, Interval: opts.PunctuationInterval}
	}
	gen, err := generator.New(genCfg)
	if err != nil {
		if op.Txn != nil {
			_ = op.Txn.Operator.Close(ctx)
		}
		return nil, fmt.Errorf("bench: swap: %w", err)
	}
	src := newPacedSource(gen, opts.Rate, k == SwapTransactional)
	sink := newLatencySink(uint64(opts.Rate*opts.Duration.Seconds()), sk.seq)
	dead := &discardSink{name: "dead-letters"}
	job, err := exec.New(ctx, exec.Config{
		Name:       "bench-swap-" + string(k),
		Sources:    []exec.Input{{Name: "paced", Source: src}},
		Operators:  []exec.Operator{op},
		Sinks:      []exec.Output{{Name: "latency", Sink: sink}},
		DeadLetter: dead,
		Store:      store,
		BatchSize:  opts.BatchSize,
		Linger:     opts.Linger,
		Logger:     e.log,
	})
	if err != nil {
		return nil, fmt.Errorf("bench: swap: %w", err)
	}
	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- job.Run(runCtx) }()

	// The swaps, evenly spaced after the warm-up, while Run runs.
	res = &SwapResult{Kind: k, Plugin: sk.plugin, Workers: workers, Compile: c, Rate: opts.Rate}
	// stop ends the job with an error; the swaps' errors say more.
	stop := func() {
		cancel()
		<-done
	}
	select {
	case <-src.isOpen:
	case err := <-done:
		return nil, fmt.Errorf("bench: swap %s: the pipeline stopped before reading: %w", k, err)
	case <-ctx.Done():
		stop()
		return nil, ctx.Err()
	}
	start := src.openedAt()
	var windows [][2]time.Time
	step := (opts.Duration - opts.Warmup) / time.Duration(opts.Swaps+1)
	for i := 1; i <= opts.Swaps; i++ {
		at := start.Add(opts.Warmup + time.Duration(i)*step)
		select {
		case <-time.After(time.Until(at)):
		case err := <-done:
			return nil, fmt.Errorf("bench: swap %s: the pipeline stopped: %w", k, err)
		case <-ctx.Done():
			stop()
			return nil, ctx.Err()
		}
		if i > 1 {
			firstBatch(job, &res.Calls[len(res.Calls)-1])
		}
		version := "v" + strconv.Itoa(i+1)
		t0 := time.Now()
		p, loadTime, err := load(version)
		if err != nil {
			stop()
			return nil, err
		}
		r := exec.Replacement{Plugin: p, Version: version, ClosePlugin: true}
		tx := time.Now()
		if newTxn != nil {
			if r.Txn, err = newTxn(p); err != nil {
				stop()
				return nil, errors.Join(err, p.Close(ctx))
			}
		}
		t1 := time.Now()
		times, err := job.SwapTimed(ctx, "op", r)
		if err != nil {
			stop()
			return nil, fmt.Errorf("bench: swap %s: swap to %s: %w", k, version, err)
		}
		t2 := time.Now()
		windows = append(windows, [2]time.Time{t0, t2})
		res.Calls = append(res.Calls, SwapCall{Version: version, AtMs: ms(t0.Sub(start)), LoadMs: ms(loadTime), SwapMs: ms(t2.Sub(t1)),
			InstancesMs: ms(t1.Sub(tx) + times.Instances), BoundaryMs: ms(times.Boundary), InstallMs: ms(times.Install)})
		e.step("swap %s: %s in place: load %.1f ms, swap %.1f ms", k, version, ms(loadTime), ms(t2.Sub(t1)))
	}
	// The end: Duration after the start, and not before the last swap's
	// window has passed.
	end := start.Add(opts.Duration)
	if last := windows[len(windows)-1][1].Add(opts.Window + 100*time.Millisecond); last.After(end) {
		end = last
	}
	select {
	case <-time.After(time.Until(end)):
	case err := <-done:
		return nil, fmt.Errorf("bench: swap %s: the pipeline stopped: %w", k, err)
	case <-ctx.Done():
		stop()
		return nil, ctx.Err()
	}
	firstBatch(job, &res.Calls[len(res.Calls)-1])
	res.Events = src.end()
	if err := <-done; err != nil {
		return nil, fmt.Errorf("bench: swap %s: pipeline: %w", k, err)
	}
	res.Swaps = len(res.Calls)
	st := job.Status()
	res.Dead = st.Dead
	if err := sink.check(res.Events, st.Dead); err != nil {
		return nil, fmt.Errorf("bench: swap %s: %w", k, err)
	}
	if got := st.Operators[0].Version; got != res.Calls[len(res.Calls)-1].Version {
		return nil, fmt.Errorf("bench: swap %s: the operator runs %s after the last swap to %s", k, got, res.Calls[len(res.Calls)-1].Version)
	}
	if k == SwapTransactional {
		if err := checkLedger(wl, store, res.Events); err != nil {
			return nil, fmt.Errorf("bench: swap %s: %w", k, err)
		}
	}
	sink.summarise(res, start, opts, windows)
	return res, nil
}

// dueNs is when the i-th record (from 0) of a source paced at rate per
// second is due, in nanoseconds after its start.
func dueNs(i uint64, rate float64) int64 { return int64(math.Round(float64(i) * 1e9 / rate)) }

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// newPacedSource returns gen, paced at rate, as a pacedSource.
func newPacedSource(gen *generator.Source, rate float64, keyIsPosition bool) *pacedSource {
	return &pacedSource{Source: gen, rate: rate, keyIsPosition: keyIsPosition, isOpen: make(chan struct{})}
}

// pacedSource is an endless paced generator with each record's event time
// set to the wall-clock time it is due (the generator paces records from
// its Open), so that a sink can tell each record's latency, until end is
// called; with keyIsPosition, a record's key is its decimal position.
type pacedSource struct {
	*generator.Source
	rate          float64
	keyIsPosition bool

	isOpen chan struct{} // closed by Open

	mu      sync.Mutex
	opened  time.Time
	after   uint64
	last    uint64 // the last position read
	stopped bool   // end was called: Read returns io.EOF
	ends    []int
}

// end makes the source end after the records it has given out and
// returns how many that is.
func (s *pacedSource) end() uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.stopped = true
	return s.last - s.after
}

func (s *pacedSource) Open(ctx context.Context, after uint64) error {
	if err := s.Source.Open(ctx, after); err != nil {
		return err
	}
	s.mu.Lock()
	s.opened, s.after = time.Now(), after
	s.mu.Unlock()
	close(s.isOpen)
	return nil
}

// openedAt returns the time the source was opened (the due time of its
// first record); call it once isOpen is closed.
func (s *pacedSource) openedAt() time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.opened
}

func (s *pacedSource) Read(ctx context.Context, buf []connectors.Message) (int, error) {
	s.mu.Lock()
	stopped := s.stopped
	s.mu.Unlock()
	if stopped {
		return 0, io.EOF
	}
	n, err := s.Source.Read(ctx, buf)
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stopped {
		// end was called during the wait: these records were not given out.
		return 0, io.EOF
	}
	if n > 0 {
		s.last = buf[n-1].Position
	}
	base := s.opened.UnixNano()
	if s.keyIsPosition {
		// One allocation per Read: the records keep their keys until the
		// sink has written them.
		slab := make([]byte, 0, n*8)
		s.ends = s.ends[:0]
		for i := range n {
			slab = strconv.AppendUint(slab, buf[i].Position, 10)
			s.ends = append(s.ends, len(slab))
		}
		from := 0
		for i, end := range s.ends {
			buf[i].Record.Key, from = slab[from:end:end], end
		}
	}
	for i := range n {
		buf[i].Record.Time = base + dueNs(buf[i].Position-s.after-1, s.rate)
	}
	return n, err
}

// latencySink records, for every output, the position it stands for and
// its latency; and the time of every Write.
type latencySink struct {
	seq func(*abi.Record) (uint64, error)

	mu      sync.Mutex
	latency []int64 // by position - 1; -1: not seen
	writes  []time.Time
	err     error
	dups    uint64
	extra   uint64
}

// newLatencySink returns a sink sized for about events positions (it
// grows past them).
func newLatencySink(events uint64, seq func(*abi.Record) (uint64, error)) *latencySink {
	return &latencySink{seq: seq, latency: make([]int64, 0, events)}
}

func (s *latencySink) Name() string { return "latency" }

func (s *latencySink) Write(_ context.Context, out []connectors.Out) error {
	now := time.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	s.writes = append(s.writes, now)
	for i := range out {
		r := &out[i].Record
		pos, err := s.seq(r)
		switch {
		case err != nil:
			if s.err == nil {
				s.err = fmt.Errorf("output key %q value %q stands for no position: %v", r.Key, r.Value, err)
			}
		case pos == 0 || pos > 1<<40:
			s.extra++
		case pos > uint64(len(s.latency)):
			for uint64(len(s.latency)) < pos {
				s.latency = append(s.latency, -1)
			}
			s.latency[pos-1] = now.UnixNano() - r.Time
		case s.latency[pos-1] >= 0:
			s.dups++
		default:
			s.latency[pos-1] = now.UnixNano() - r.Time
		}
	}
	return nil
}

func (s *latencySink) Flush(context.Context) error { return nil }
func (s *latencySink) Close() error                { return nil }

// check returns an error wrapping ErrSwapOutput unless each of the events
// positions was seen exactly once, no other, and nothing was
// dead-lettered.
func (s *latencySink) check(events, dead uint64) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.err != nil {
		return fmt.Errorf("%w: %w", ErrSwapOutput, s.err)
	}
	if n := uint64(len(s.latency)); n > events {
		s.extra += n - events
		s.latency = s.latency[:events]
	}
	for uint64(len(s.latency)) < events {
		s.latency = append(s.latency, -1)
	}
	var missing uint64
	first := uint64(0)
	for i, l := range s.latency {
		if l < 0 {
			if missing == 0 {
				first = uint64(i) + 1
			}
			missing++
		}
	}
	if missing > 0 || s.dups > 0 || s.extra > 0 || dead > 0 {
		return fmt.Errorf("%w: of %d events, %d never reached the sink (the first at position %d), %d reached it twice, %d outputs stand for no event given out, %d were dead-lettered",
			ErrSwapOutput, len(s.latency), missing, first, s.dups, s.extra, dead)
	}
	return nil
}

// summarise fills res's latencies and gaps: events due within Window of a
// swap's call are "during", the others after the warm-up "steady".
func (s *latencySink) summarise(res *SwapResult, start time.Time, opts SwapOptions, windows [][2]time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	// around returns the swap whose window holds t, -1 for none.
	around := func(t time.Time) int {
		for i, w := range windows {
			if !t.Before(w[0].Add(-opts.Window)) && !t.After(w[1].Add(opts.Window)) {
				return i
			}
		}
		return -1
	}
	in := func(t time.Time) bool { return around(t) >= 0 }
	var steady, during []int64
	base := start.UnixNano()
	var last int64
	for i, l := range s.latency {
		due := base + dueNs(uint64(i), opts.Rate)
		last = max(last, due+l)
		if time.Duration(due-base) < opts.Warmup {
			continue
		}
		if in(time.Unix(0, due)) {
			during = append(during, l)
		} else {
			steady = append(steady, l)
		}
	}
	res.Steady, res.During = latencyStats(steady), latencyStats(during)
	if res.Steady.P99Ms > 0 {
		res.P99Ratio = res.During.P99Ms / res.Steady.P99Ms
	}
	if last > base {
		res.Achieved = float64(len(s.latency)) / time.Duration(last-base).Seconds()
	}
	warm := start.Add(opts.Warmup)
	for i := 1; i < len(s.writes); i++ {
		a, b := s.writes[i-1], s.writes[i]
		if a.Before(warm) {
			continue
		}
		g := ms(b.Sub(a))
		w := around(a)
		if w < 0 {
			w = around(b)
		}
		if w >= 0 {
			if g > res.PauseMs {
				res.PauseMs, res.PauseSwap, res.PauseAtMs = g, w, ms(a.Sub(windows[w][0]))
			}
		} else {
			res.SteadyGapMs = max(res.SteadyGapMs, g)
		}
	}
}

func latencyStats(ls []int64) LatencyStats {
	if len(ls) == 0 {
		return LatencyStats{}
	}
	slices.Sort(ls)
	at := func(p float64) float64 {
		i := min(len(ls)-1, int(p*float64(len(ls))))
		return float64(ls[i]) / 1e6
	}
	return LatencyStats{Events: len(ls), P50Ms: at(0.50), P99Ms: at(0.99), MaxMs: float64(ls[len(ls)-1]) / 1e6}
}

// checkLedger checks that the committed balances conserve money: each
// table sums to its initial sum plus the deposits of the first events
// events, which a lost or repeated deposit would break.
func checkLedger(wl workload.App, store *state.Store, events uint64) error {
	var deposits int64
	for i := range events {
		_, v := wl.Event(i, nil)
		ev, err := event.DecodeEvent(v)
		if err != nil {
			return fmt.Errorf("event %d: %w", i, err)
		}
		if ev.Deposit {
			deposits++
		}
	}
	tables := wl.Tables()
	initial := make([]int64, len(tables))
	err := wl.Initial(func(table int, _, value []byte) error {
		b, err := event.DecodeBalance(value)
		initial[table] += b
		return err
	})
	if err != nil {
		return fmt.Errorf("initial balances: %w", err)
	}
	for i, t := range tables {
		var sum int64
		err := store.Scan(t, func(_, value []byte) error {
			b, err := event.DecodeBalance(value)
			sum += b
			return err
		})
		if err != nil {
			return fmt.Errorf("table %s: %w", t, err)
		}
		if want := initial[i] + deposits*event.DepositAmount; sum != want {
			return fmt.Errorf("%w: table %s sums to %d, want %d (initial %d plus %d deposits of %d)",
				ErrSwapOutput, t, sum, want, initial[i], deposits, event.DepositAmount)
		}
	}
	return nil
}

// swapTargets checks the project's swap targets: nothing lost or
// duplicated (RunSwap fails otherwise) and the p99 latency during swaps at
// most twice the steady p99, per kind, or three times with a competing
// load (busy processes alongside).
func swapTargets(rs []SwapResult, busy int) []Target {
	limit := 2.0
	load := ""
	if busy > 0 {
		limit = 3
		load = fmt.Sprintf(", %d busy processes alongside", busy)
	}
	var ts []Target
	for _, r := range rs {
		t := Target{
			Name: fmt.Sprintf("swap under load (%s, %s events/s, compiled %s%s): p99 latency during swaps over steady p99", r.Kind, thousands(r.Rate), r.Compile, load),
			Want: fmt.Sprintf("<= %gx", limit),
			Got:  fmt.Sprintf("%.2fx (%.1f ms against %.1f ms)", r.P99Ratio, r.During.P99Ms, r.Steady.P99Ms),
			Met:  r.P99Ratio > 0 && r.P99Ratio <= limit,
		}
		if !r.keptUp() {
			// Latencies that grow with a backlog compare nothing.
			t.Got = fmt.Sprintf("the pipeline fell behind the source: %s of %s events/s", thousands(r.Achieved), thousands(r.Rate))
			t.Met = false
		}
		ts = append(ts, t)
	}
	return ts
}

// WriteJSON writes the report as indented JSON.
func (r *SwapReport) WriteJSON(w io.Writer) error { return writeJSON(w, r) }

// WriteTable prints the report as aligned tables with units.
func (r *SwapReport) WriteTable(w io.Writer) error {
	var b strings.Builder
	writeHeader(&b, "Sluice swap under load", r.Date, r.Quick, r.Machine, r.LoadAfter)
	fmt.Fprintf(&b, "source: %s events/s, each due at a fixed time; latency: from an event's due time to its output at the sink\n", thousands(r.Rate))
	fmt.Fprintf(&b, "competing load: %d busy processes (a shell loop each)\n", r.BackgroundLoad)
	fmt.Fprintln(&b, "checked: every event reached the sink exactly once (by position), none dead-lettered; the ledger's tables conserve money")
	fmt.Fprintln(&b, "\nLatency, steady state against the events due during the swaps (from a window before each swap's call to a window after it)")
	tw := table(&b)
	fmt.Fprintln(tw, "kind\tcompiled\tplugin\tworkers\tevents\tachieved\tswaps\tsteady p50\tsteady p99\tduring p50\tduring p99\tduring max\tp99 ratio\tpause\tsteady gap\t")
	for _, x := range r.Results {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\t%s/s\t%d\t%.1f ms\t%.1f ms\t%.1f ms\t%.1f ms\t%.1f ms\t%.2f\t%.1f ms\t%.1f ms\t\n",
			x.Kind, x.Compile, x.Plugin, x.Workers, thousands(float64(x.Events)), thousands(x.Achieved), x.Swaps,
			x.Steady.P50Ms, x.Steady.P99Ms, x.During.P50Ms, x.During.P99Ms, x.During.MaxMs, x.P99Ratio, x.PauseMs, x.SteadyGapMs)
	}
	tw.Flush()
	fmt.Fprintln(&b, "pause: the longest time without output during the swaps; steady gap: the longest outside them")
	for _, x := range r.Results {
		if x.PauseMs > 0 && x.PauseSwap < len(x.Calls) {
			c := x.Calls[x.PauseSwap]
			fmt.Fprintf(&b, "  %s, compiled %s: the pause began %.1f ms into the call of the swap to %s (its load took %.1f ms, then the swap %.1f ms)\n",
				x.Kind, x.Compile, x.PauseAtMs, c.Version, c.LoadMs, c.SwapMs)
		}
	}
	fmt.Fprintln(&b, "\nSwaps: loading (checking and compiling the new version) and Swap (its instances, installed at a batch boundary)")
	tw = table(&b)
	fmt.Fprintln(tw, "kind\tcompiled\tversion\tat\tload\tswap\tinstances\tboundary wait\tinstall\tfirst batch\tbatch before\t")
	for _, x := range r.Results {
		for _, c := range x.Calls {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%.1f s\t%.1f ms\t%.1f ms\t%.1f ms\t%.1f ms\t%.2f ms\t%.2f ms\t%.2f ms\t\n", x.Kind, x.Compile, c.Version, c.AtMs/1e3, c.LoadMs, c.SwapMs,
				c.InstancesMs, c.BoundaryMs, c.InstallMs, c.FirstBatchMs, c.BeforeMs)
		}
	}
	fmt.Fprintln(&b, "instances: making the new code's instances (transactional: its scheduler too), while batches go on; boundary wait: until the executor takes the swap; install: the executor putting them in place; first batch: the first batch on the new code, against the last one on the old")
	tw.Flush()
	writeTargets(&b, r.Targets)
	_, err := io.WriteString(w, b.String())
	return err
}

// swapEngine returns a new engine, like the shared one with the call
// timeout, whose modules are compiled as c (by a child running
// executable for the child compiles).
func (e *env) swapEngine(ctx context.Context, c SwapCompile, executable string) (wasm.Engine, error) {
	cfg := wasm.NewConfig().
		WithCacheDir(filepath.Join(e.dir, "wasm-cache")).
		WithHostModules(plugin.HostModule())
	switch c {
	case CompileChild:
		cfg = cfg.WithCompiler(&wasm.ProcessCompiler{Path: executable, Nice: wasm.LowestNice})
	case CompileChildSamePriority:
		cfg = cfg.WithCompiler(&wasm.ProcessCompiler{Path: executable})
	}
	eng, err := wasm.New(ctx, e.engineName, cfg)
	if err != nil {
		return nil, fmt.Errorf("bench: %s engine: %w", e.engineName, err)
	}
	return eng, nil
}

// startBusy starts n processes that each keep a core busy (a shell
// loop) and returns the function that stops them.
func startBusy(ctx context.Context, n int) (stop func(), err error) {
	var cmds []*osexec.Cmd
	stop = func() {
		for _, c := range cmds {
			_ = c.Process.Kill()
			_ = c.Wait()
		}
	}
	for range n {
		c := osexec.CommandContext(ctx, "sh", "-c", "while :; do :; done")
		if err := c.Start(); err != nil {
			stop()
			return nil, fmt.Errorf("bench: swap: starting a busy process for the background load: %w", err)
		}
		cmds = append(cmds, c)
	}
	return stop, nil
}

// firstBatch fills c, the operator's last swap, with the times of the
// first batch on its code and the last before it, which the job has by
// the time the next swap starts (at the rate the benchmark runs, the
// swap's first batch follows it within milliseconds).
func firstBatch(job *exec.Job, c *SwapCall) {
	if t, ok := job.LastSwap("op"); ok {
		c.FirstBatchMs, c.BeforeMs = ms(t.FirstBatch), ms(t.Before)
	}
}
