package bench

// The txn suite, `sluice bench txn`: one of MorphStream's benchmark
// applications run through txnop.Operator with every scheduling strategy
// asked for, the figures of each run checked against the serial strategy.
//
// Design decisions:
//
// Committed state is an in-memory txn.Store (txn/memstore, whose cost per
// lookup does not grow with the number of keys), initialised from the
// workload's App.Initial; each batch's change set is applied to it between
// batches, as the executor applies it to the state tables. A
// state.Store would add the executor's session bookkeeping and Pebble
// commits, whose cost the keyed suite already measures and which do not
// depend on the scheduling strategy; the map keeps the figure about the
// operator and the scheduler. Applying the changes is timed separately
// (ApplySeconds) and is not part of the rate.
//
// An event's latency is its batch's processing time: from the start of
// Operator.Process (plan) to the end of its post step. Every event of a
// batch has the same latency; the time an event waits for its batch to
// fill depends on the source's rate, not on Sluice, and is not counted.
// The rate is the events of the timed batches over the sum of their
// processing times.
//
// Lanes run interleaved: for one strategy, every (key space, worker count,
// logic) combination asked for runs the same batches, batch by batch, in an order
// that rotates from batch to batch, each over its own copy of the state.
// A burst of load from elsewhere on the machine then hits every side of a
// comparison (Wasm against native, 1 worker against 2) alike. The first
// batch of each lane is a warm-up (instances' memory growing, caches) and
// is not timed, though it is checked like the others. A key-space sweep
// (TxnOptions.KeySpaces) gives every size its own workload, initial state
// and batches: the lanes of different sizes run events drawn alike from
// different key spaces, batch for batch, and each size is checked against
// its own oracle.
//
// No figure from a wrong run: every lane's final state (an order-free hash
// of the whole store), output records (a hash of the stream of records) and
// commit counts must equal the serial strategy's. When "serial" is among
// the strategies it runs first and is the reference; otherwise an untimed
// native run of the serial strategy over the same events is.

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/sluicehq/sluice/abi"
	"github.com/sluicehq/sluice/host/plugin"
	"github.com/sluicehq/sluice/host/txnop"
	wasm "github.com/sluicehq/sluice/runtime"
	"github.com/sluicehq/sluice/state"
	"github.com/sluicehq/sluice/txn"
	"github.com/sluicehq/sluice/txn/adapt"
	"github.com/sluicehq/sluice/txn/apps/workload"
	"github.com/sluicehq/sluice/txn/memstore"
)

// TxnLogic is the kind of operator logic a txn run executes.
type TxnLogic string

// The logics.
const (
	// TxnWasm is the application's plugin, compiled to WebAssembly, on
	// wazero with the default call timeout, one instance per worker.
	TxnWasm TxnLogic = "wasm"
	// TxnNative is the same Go source run natively (TxnOptions.Native),
	// the baseline the Wasm figures are read against.
	TxnNative TxnLogic = "native"
)

// Defaults of the txn suite.
const (
	// DefaultTxnPunctuation is the default number of events per batch,
	// MorphStream's punctuation in its Streaming Ledger comparison.
	DefaultTxnPunctuation = 10240
	// DefaultTxnPhaseBatches is the default length of a dynamic
	// workload's phase, in batches. One lane's rate over a phase of 20
	// batches varied by up to 14% on the 2-core benchmark machine, more
	// than the strategies worth choosing between differ; 40 halve that.
	DefaultTxnPhaseBatches = 40
	// DefaultTxnProgress is the default interval between progress lines.
	DefaultTxnProgress = 3 * time.Second
	// quickTxnPunctuation and quickTxnBatches size a quick run: four
	// batches of 1,024 events.
	quickTxnPunctuation = 1024
	quickTxnBatches     = 4
)

// ErrTxnMismatch is wrapped by the error of a run whose final state,
// outputs or commit counts differ from the serial strategy's.
var ErrTxnMismatch = errors.New("result differs from the serial strategy's")

// TxnOptions say what RunTxn runs. Start from DefaultTxnOptions or
// QuickTxnOptions.
type TxnOptions struct {
	// App is the application: sl, gs, ngs, tp or ob (workload.Apps).
	App string
	// Knobs are the workload's knobs; only those the application reads
	// (workload.AppKnobs) matter.
	Knobs workload.Knobs
	// Strategies are the strategy names to run (txn.StrategyNames);
	// empty: all of them.
	Strategies []string
	// Workers are the scheduler worker counts to run each strategy with;
	// empty: GOMAXPROCS.
	Workers []int
	// KeySpaces, when not empty, are the key-space sizes (knob keys) to
	// sweep: every strategy runs with each, interleaved batch by batch,
	// and the report gives each size's rate over the first size's. Empty:
	// Knobs.Keys alone. A dynamic workload takes no sweep.
	KeySpaces []int
	// Logics are the logics to run each strategy with; empty: Wasm only.
	Logics []TxnLogic
	// Events is the number of events each run processes.
	Events int
	// Punctuation is the number of events per batch.
	Punctuation int
	// Plugin is the application's plugin (plugins/<TxnPluginDir(App)>)
	// compiled to WebAssembly; required when Logics holds TxnWasm.
	Plugin []byte
	// Native returns a fresh Logic that runs the application's operator
	// natively over the given tables: the plugin's Go source on the
	// host's scheduler, as hosttest.TxnLogic runs a sluice.Txn (each
	// Logic needs its own operator: their Post keeps buffers). Required:
	// the oracle runs it, and so do the runs of TxnNative. The caller
	// gives it so that this package imports no plugin's code.
	Native func(tables []string) txnop.Logic
	// Quick is recorded in the report: the options are the small ones.
	Quick bool
	// Engine names the WebAssembly engine the plugin runs on (see
	// runtime.New); "": wazero.
	Engine string
	// Dir is where the compilation cache goes; empty: a new temporary
	// directory, removed at the end.
	Dir string
	// Progress receives a line when a run starts and every
	// ProgressEvery while it runs; nil: none.
	Progress io.Writer
	// ProgressEvery is the interval between progress lines; 0:
	// DefaultTxnProgress.
	ProgressEvery time.Duration
	// Logger receives the logs of the plugin and the scheduler; nil:
	// discarded.
	Logger *slog.Logger
	// Phases make the workload dynamic (workload.ParsePhases): the events
	// follow the phases in turn, Events becomes their total, and every
	// strategy runs as its own lane, all interleaved batch by batch, with
	// one worker count and one logic; the report gives each phase's rates
	// and the adaptive strategy's decisions.
	Phases []workload.Phase
	// Adaptive configures the adaptive strategy's decision model.
	Adaptive adapt.Config
	// Pipeline runs, after each strategy's in-memory runs, the same
	// strategy with every worker count and logic through a real job
	// (generator -> the operator -> a discarding sink, Pebble commits;
	// txnpipe.go) and reports its rate beside the in-memory one, its
	// tables read back from Pebble checked against the oracle. Not with
	// Phases or several KeySpaces.
	Pipeline bool
	// MemTableSize is the Pebble memtable size of the pipeline runs'
	// stores (the pipeline file's state.memtable_size); 0:
	// state.DefaultMemTableSize.
	MemTableSize int
	// CommitInterval is the pipeline runs' commit interval (the pipeline
	// file's state.commit_interval); 0: every batch is committed.
	CommitInterval time.Duration
}

// DefaultTxnOptions returns the full configuration of application app:
// MorphStream's knobs (workload.Defaults), every strategy, GOMAXPROCS
// workers, the Wasm logic, the default punctuation and a number of events
// that takes a few seconds per run on a 2-core machine.
func DefaultTxnOptions(app string) (TxnOptions, error) {
	a, err := lookupTxnApp(app)
	if err != nil {
		return TxnOptions{}, err
	}
	k, err := workload.Defaults(app)
	if err != nil {
		return TxnOptions{}, fmt.Errorf("bench: txn: %w", err)
	}
	return TxnOptions{App: app, Knobs: k, Events: a.events, Punctuation: DefaultTxnPunctuation}, nil
}

// QuickTxnOptions returns DefaultTxnOptions with a few small batches, for
// tests and a first look.
func QuickTxnOptions(app string) (TxnOptions, error) {
	o, err := DefaultTxnOptions(app)
	if err != nil {
		return TxnOptions{}, err
	}
	o.Quick, o.Punctuation, o.Events = true, quickTxnPunctuation, quickTxnBatches*quickTxnPunctuation
	return o, nil
}

// TxnReport is the outcome of RunTxn. Its JSON form is what `sluice bench
// txn --json` writes.
type TxnReport struct {
	Machine Machine   `json:"machine"`
	Date    time.Time `json:"date"`
	Quick   bool      `json:"quick"`
	// App is the application's short name, Title its full name.
	App   string `json:"app"`
	Title string `json:"title"`
	// Knobs are the knobs the application reads, as text.
	Knobs map[string]string `json:"knobs"`
	// Tables are the operator's tables, by handle.
	Tables []string `json:"tables"`
	// Events is the number of events of every run, Punctuation the
	// events per batch, WarmupBatches the batches of each run not timed.
	Events        int `json:"events_per_run"`
	Punctuation   int `json:"punctuation"`
	WarmupBatches int `json:"warmup_batches"`
	// CallTimeoutSeconds is the Wasm engine's per-call deadline (0: none
	// or no Wasm run).
	CallTimeoutSeconds float64 `json:"call_timeout_seconds"`
	// Store describes the committed state the runs read.
	Store string `json:"store"`
	// Oracle says which run the others were checked against.
	Oracle string `json:"oracle"`
	// StateHash and OutputHash are the reference's final state and output
	// hashes, which every run reproduced; Committed and Aborted its
	// transaction outcomes.
	StateHash  string `json:"state_hash"`
	OutputHash string `json:"output_hash"`
	Committed  uint64 `json:"committed"`
	Aborted    uint64 `json:"aborted"`
	// Runs are the measured runs, strategy by strategy, in the order the
	// strategies were given ("serial" first when present), then by
	// workers and logic.
	Runs []TxnRun `json:"runs"`
	// Ratios compare Wasm with native, when both ran.
	Ratios []TxnRatio `json:"wasm_native_ratios,omitempty"`
	// Speedups compare the largest worker count with the smallest, when
	// several ran.
	Speedups []TxnSpeedup `json:"speedups,omitempty"`
	// KeySweep compares each key-space size with the first, when several
	// ran (TxnOptions.KeySpaces).
	KeySweep []TxnKeyRatio `json:"key_sweep,omitempty"`
	// MaxRSSBytes is the process's peak resident memory when the run
	// ended (getrusage; 0 where unknown).
	MaxRSSBytes int64 `json:"max_rss_bytes,omitempty"`
	// Targets are the project's targets that this run's workload bears
	// on, checked.
	Targets []Target `json:"targets"`
	// Dynamic holds the phases of a dynamic workload's run (nil for a
	// static workload).
	Dynamic *TxnDynamic `json:"dynamic,omitempty"`
	// LoadAfter is the load average when the run ended.
	LoadAfter string `json:"load_after,omitempty"`
	// Pipeline holds the runs through a real job (TxnOptions.Pipeline),
	// in the order of Runs.
	Pipeline []TxnPipelineRun `json:"pipeline,omitempty"`
}

// TxnRun is the figures of one strategy with one worker count and one
// logic. Times are over the timed batches (all but the warm-up).
type TxnRun struct {
	Strategy string   `json:"strategy"`
	Workers  int      `json:"workers"`
	Logic    TxnLogic `json:"logic"`
	// Keys is the key-space size of each table (knob keys).
	Keys int `json:"keys"`
	// Events and Batches are what was timed.
	Events  int `json:"events_timed"`
	Batches int `json:"batches_timed"`
	// Seconds is the sum of the timed batches' processing times; Rate is
	// Events / Seconds.
	Seconds float64 `json:"seconds"`
	Rate    float64 `json:"events_per_second"`
	// Event latency: its batch's processing time (see the package
	// documentation), mean and 99th percentile over events, and the
	// longest batch.
	LatencyMeanMs float64 `json:"latency_mean_ms"`
	LatencyP99Ms  float64 `json:"latency_p99_ms"`
	LatencyMaxMs  float64 `json:"latency_max_ms"`
	// Committed and Aborted count the transactions of the whole run,
	// warm-up included; ReExecutions the operations re-executed.
	Committed    uint64 `json:"committed"`
	Aborted      uint64 `json:"aborted"`
	ReExecutions uint64 `json:"re_executions"`
	// Breakdown is where the timed batches' time went.
	Breakdown TxnBreakdown `json:"breakdown"`
	// Graph sums the timed batches' TPG counts.
	Graph TxnGraph `json:"graph"`
}

// TxnBreakdown is where a run's time went, in seconds summed over its
// timed batches (txn.Stats' breakdown). Plan, Finish, Guest and Apply are
// wall-clock time; Explore, Useful and Abort are worker time, summed over
// the scheduler's workers.
type TxnBreakdown struct {
	// Plan is the scheduler building the TPG.
	Plan float64 `json:"plan_seconds"`
	// Explore is scheduling overhead in the first pass.
	Explore float64 `json:"explore_seconds"`
	// Useful is time inside the operations' functions in the first pass.
	Useful float64 `json:"useful_seconds"`
	// Abort is the passes after the first: rollback, checks, re-execution.
	Abort float64 `json:"abort_seconds"`
	// Finish is the scheduler assembling the result.
	Finish float64 `json:"finish_seconds"`
	// Guest is the operator's own work outside the scheduler: its plan
	// and post steps (Process time minus the scheduler's wall time).
	Guest float64 `json:"operator_plan_post_seconds"`
	// Apply is applying the change sets to the store between batches; it
	// is not part of the processing time.
	Apply float64 `json:"apply_seconds"`
}

// TxnGraph sums txn.Counts over a run's timed batches.
type TxnGraph struct {
	Ops          int `json:"ops"`
	Temporal     int `json:"temporal_edges"`
	Parametric   int `json:"parametric_edges"`
	Logical      int `json:"logical_edges"`
	NonDet       int `json:"nondet_edges"`
	Cycles       int `json:"cycles"`
	Units        int `json:"units"`
	SplitUnits   int `json:"split_units"`
	Passes       int `json:"passes"`
	Executions   int `json:"executions"`
	ReExecutions int `json:"re_executions"`
}

// TxnRatio is Wasm's rate over native's for one strategy and worker count.
type TxnRatio struct {
	Strategy string  `json:"strategy"`
	Workers  int     `json:"workers"`
	Keys     int     `json:"keys"`
	Ratio    float64 `json:"ratio"`
}

// TxnSpeedup is one strategy's rate with the most workers over its rate
// with the fewest, for one logic.
type TxnSpeedup struct {
	Strategy string   `json:"strategy"`
	Logic    TxnLogic `json:"logic"`
	Keys     int      `json:"keys"`
	From     int      `json:"from_workers"`
	To       int      `json:"to_workers"`
	Speedup  float64  `json:"speedup"`
}

// TxnKeyRatio is one strategy's rate at a key-space size over its rate at
// the first size of the sweep, for one worker count and logic.
type TxnKeyRatio struct {
	Strategy string   `json:"strategy"`
	Workers  int      `json:"workers"`
	Logic    TxnLogic `json:"logic"`
	FromKeys int      `json:"from_keys"`
	Keys     int      `json:"keys"`
	Rate     float64  `json:"events_per_second"`
	Ratio    float64  `json:"ratio"`
}

// lane is one (key space, workers, logic) combination: its operator, kept
// across strategies, and the run in progress.
type lane struct {
	space    *txnSpace
	workers  int
	logic    TxnLogic
	strategy string // a dynamic run's lane: its strategy
	op       *txnop.Operator
	out      plugin.Output

	// The run in progress.
	store  *memstore.Store
	digest txnDigest
	run    TxnRun
	lat    []batchTime
}

// label names the lane in a CPU profile's samples: its logic, workers and
// key count, as "native/2w/115200".
func (l *lane) label() string {
	return fmt.Sprintf("%s/%dw/%d", l.logic, l.workers, l.space.keys)
}

// batchTime is one timed batch's processing time and size.
type batchTime struct {
	d time.Duration
	n int
}

// txnDigest is what every run must reproduce.
type txnDigest struct {
	state, outputs     uint64
	committed, aborted uint64
}

// txnEnv is what the runs of one RunTxn share.
type txnEnv struct {
	opts    TxnOptions
	app     txnApp
	spaces  []*txnSpace       // one per key-space size; the first is the reference
	dyn     *workload.Dynamic // spaces[0].wl, when the workload is dynamic
	tables  []string
	log     *slog.Logger
	plugin  *plugin.Plugin
	timeout time.Duration
	// corrupt, when set (tests), changes the store of a pipeline run
	// after the job ends and before its tables are checked.
	corrupt func(*state.Store)
}

// txnSpace is one key-space size: its workload, its initial state and the
// batch being run, shared by the lanes of that size.
type txnSpace struct {
	keys    int
	wl      workload.App
	initial *memstore.Store

	recs []abi.Record
	buf  []byte
}

// RunTxn runs the txn suite: for each strategy, every worker count and
// logic of opts over the same events, interleaved batch by batch, and
// returns their figures with the targets checked. It fails when the options
// are wrong, when a batch fails, or when any run's final state, outputs or
// commit counts differ from the serial strategy's (wrapping
// ErrTxnMismatch): a figure is reported only for a correct run.
func RunTxn(ctx context.Context, opts TxnOptions) (*TxnReport, error) {
	e, err := newTxnEnv(opts)
	if err != nil {
		return nil, err
	}
	return e.run(ctx)
}

// prepare makes the report's header and, when the Wasm logic runs, loads
// the plugin; the returned function releases what it made and joins its
// error into *err.
func (e *txnEnv) prepare(ctx context.Context) (*TxnReport, func(err *error), error) {
	opts := e.opts
	rep := &TxnReport{
		Machine: CurrentMachine(), Date: time.Now().UTC().Truncate(time.Second), Quick: opts.Quick,
		App: opts.App, Title: e.app.title, Knobs: knobText(opts.App, &opts.Knobs), Tables: e.tables,
		Events: opts.Events, Punctuation: opts.Punctuation, WarmupBatches: warmup(opts),
		Store: "in-memory (txn/memstore), change sets applied between batches, not timed",
	}
	e.step("machine: %d cores (GOMAXPROCS %d), %s, load %s",
		rep.Machine.NumCPU, rep.Machine.GOMAXPROCS, orUnknown(rep.Machine.CPUModel, "CPU model unknown"), orUnknown(rep.Machine.Load, "unknown"))
	release := func(*error) {}
	if !slices.Contains(opts.Logics, TxnWasm) {
		return rep, release, nil
	}
	eng, dir, err := e.loadPlugin(ctx)
	release = func(errp *error) {
		var cerr error
		if e.plugin != nil {
			cerr = e.plugin.Close(context.WithoutCancel(ctx))
		}
		if eng != nil {
			cerr = errors.Join(cerr, eng.Close(context.WithoutCancel(ctx)))
		}
		if dir != "" {
			os.RemoveAll(dir)
		}
		if *errp == nil && cerr != nil {
			*errp = fmt.Errorf("bench: txn: closing the plugin: %w", cerr)
		}
	}
	if err != nil {
		release(&err)
		return nil, nil, err
	}
	rep.CallTimeoutSeconds = e.timeout.Seconds()
	return rep, release, nil
}

// closeLanes closes the lanes' operators, joining the first error into
// *err.
func closeLanes(ctx context.Context, lanes []*lane, err *error) {
	for _, l := range lanes {
		if cerr := l.op.Close(context.WithoutCancel(ctx)); *err == nil && cerr != nil {
			*err = fmt.Errorf("bench: txn: closing the %s operator with %s: %w", l.logic, workersText(l.workers), cerr)
		}
	}
}

// run runs the suite as RunTxn describes.
func (e *txnEnv) run(ctx context.Context) (rep *TxnReport, err error) {
	if e.dyn != nil {
		return e.runDynamic(ctx)
	}
	opts := e.opts
	rep, release, err := e.prepare(ctx)
	if err != nil {
		return nil, err
	}
	defer release(&err)
	lanes, err := e.lanes(ctx)
	defer closeLanes(ctx, lanes, &err)
	if err != nil {
		return nil, err
	}

	strategies := slices.Clone(opts.Strategies)
	refs := map[*txnSpace]*txnDigest{}
	refNative := map[*txnSpace]bool{}
	if i := slices.Index(strategies, "serial"); i >= 0 {
		strategies = append([]string{"serial"}, slices.Delete(strategies, i, i+1)...)
		rep.Oracle = "the serial strategy's run below (native if it ran, fewest workers)"
	} else {
		for _, s := range e.spaces {
			d, err := e.oracle(ctx, s)
			if err != nil {
				return nil, err
			}
			refs[s] = &d
		}
		rep.Oracle = "an untimed native run of the serial strategy"
	}
	if len(e.spaces) > 1 {
		rep.Oracle += ", one per key-space size"
	}
	for i, name := range strategies {
		st, _ := txn.ParseStrategy(name) // checked by newTxnEnv
		e.step("txn %s: strategy %s (%d/%d): %s events in batches of %s, %s interleaved",
			opts.App, name, i+1, len(strategies), thousands(float64(opts.Events)), thousands(float64(opts.Punctuation)), laneNames(lanes))
		// The labels split a --cpuprofile by phase, strategy and lane
		// (go tool pprof -tagfocus phase=pipeline); the pipeline's
		// goroutines inherit them.
		pprof.Do(ctx, pprof.Labels("phase", "memory", "strategy", name), func(ctx context.Context) {
			err = e.runStrategy(ctx, name, st, lanes)
		})
		if err != nil {
			return nil, err
		}
		if len(refs) == 0 {
			// The serial strategy's runs: per key space, native when it
			// ran (the baseline the Wasm build is compared with), fewest
			// workers.
			for _, l := range lanes {
				if refs[l.space] == nil || (l.logic == TxnNative && !refNative[l.space]) {
					d := l.digest
					refs[l.space], refNative[l.space] = &d, l.logic == TxnNative
				}
			}
		}
		for _, l := range lanes {
			if err := refs[l.space].check(&l.digest); err != nil {
				return nil, fmt.Errorf("bench: txn %s: strategy %s, %s, %s, %s keys: %w",
					opts.App, name, workersText(l.workers), l.logic, thousands(float64(l.space.keys)), err)
			}
			rep.Runs = append(rep.Runs, l.run)
		}
		if opts.Pipeline {
			for _, l := range lanes {
				var pr TxnPipelineRun
				pprof.Do(ctx, pprof.Labels("phase", "pipeline", "strategy", name, "lane", l.label()), func(ctx context.Context) {
					pr, err = e.runPipeline(ctx, name, st, l, refs[l.space])
				})
				if err != nil {
					return nil, err
				}
				rep.Pipeline = append(rep.Pipeline, pr)
			}
		}
	}
	ref := refs[e.spaces[0]]
	rep.StateHash, rep.OutputHash = hex64(ref.state), hex64(ref.outputs)
	rep.Committed, rep.Aborted = ref.committed, ref.aborted
	rep.Ratios, rep.Speedups, rep.KeySweep = ratios(rep.Runs), speedups(rep.Runs), keySweep(rep.Runs)
	rep.LoadAfter = loadAverage("/proc/loadavg")
	rep.MaxRSSBytes = maxRSS()
	rep.Targets = rep.checkTargets()
	return rep, nil
}

// newTxnEnv checks the options, fills their defaults, and prepares the
// workload and its initial state.
func newTxnEnv(opts TxnOptions) (*txnEnv, error) {
	app, err := lookupTxnApp(opts.App)
	if err != nil {
		return nil, err
	}
	if len(opts.Strategies) == 0 {
		opts.Strategies = txn.StrategyNames()
	}
	seen := map[string]bool{}
	for _, s := range opts.Strategies {
		if _, err := txn.ParseStrategy(s); err != nil {
			return nil, fmt.Errorf("bench: txn: %w", err)
		}
		if seen[s] {
			return nil, fmt.Errorf("bench: txn: strategy %q given twice", s)
		}
		seen[s] = true
	}
	if len(opts.Workers) == 0 {
		opts.Workers = []int{runtime.GOMAXPROCS(0)}
	}
	for _, w := range opts.Workers {
		if w < 1 {
			return nil, fmt.Errorf("bench: txn: %d workers: want at least 1", w)
		}
	}
	opts.Workers = slices.Compact(slices.Sorted(slices.Values(opts.Workers)))
	if len(opts.Logics) == 0 {
		opts.Logics = []TxnLogic{TxnWasm}
	}
	for _, l := range opts.Logics {
		if l != TxnWasm && l != TxnNative {
			return nil, fmt.Errorf("bench: txn: logic %q: want %q or %q", l, TxnWasm, TxnNative)
		}
	}
	opts.Logics = slices.Compact(opts.Logics)
	if slices.Contains(opts.Logics, TxnWasm) && len(opts.Plugin) == 0 {
		return nil, fmt.Errorf("bench: txn: the %s plugin (plugins/%s compiled to WebAssembly) was not given (TxnOptions.Plugin empty)", opts.App, app.plugin)
	}
	if opts.Native == nil {
		return nil, fmt.Errorf("bench: txn: the %s operator in native Go (plugins/%s run natively) was not given (TxnOptions.Native nil)", opts.App, app.plugin)
	}
	if opts.Events < 1 || opts.Punctuation < 1 {
		return nil, fmt.Errorf("bench: txn: %d events in batches of %d: want at least 1 of each", opts.Events, opts.Punctuation)
	}
	if opts.ProgressEvery <= 0 {
		opts.ProgressEvery = DefaultTxnProgress
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	e := &txnEnv{opts: opts, app: app, log: log}
	if opts.Pipeline && (len(opts.Phases) > 0 || len(opts.KeySpaces) > 1) {
		return nil, fmt.Errorf("bench: txn: the pipeline mode runs a static workload with one key space (got %d phases, keys %v)", len(opts.Phases), opts.KeySpaces)
	}
	if opts.CommitInterval < 0 {
		return nil, fmt.Errorf("bench: txn: commit interval %v is negative", opts.CommitInterval)
	}
	if opts.MemTableSize != 0 && (opts.MemTableSize < state.MinMemTableSize || opts.MemTableSize > state.MaxMemTableSize) {
		return nil, fmt.Errorf("bench: txn: memtable size %d: want %d to %d bytes", opts.MemTableSize, state.MinMemTableSize, state.MaxMemTableSize)
	}
	if len(opts.Phases) > 0 {
		if len(opts.Workers) > 1 || len(opts.Logics) > 1 || len(opts.KeySpaces) > 1 {
			return nil, fmt.Errorf("bench: txn: a dynamic workload runs one worker count, one logic and one key space (got workers %v, logics %v, keys %v)",
				opts.Workers, opts.Logics, opts.KeySpaces)
		}
		dyn, err := workload.NewDynamic(opts.App, opts.Phases)
		if err != nil {
			return nil, fmt.Errorf("bench: txn: %w", err)
		}
		e.dyn, e.opts.Events = dyn, dyn.Events()
		s := &txnSpace{keys: opts.Phases[0].Knobs.Keys, wl: dyn}
		if err := s.init(opts.App); err != nil {
			return nil, err
		}
		e.spaces, e.tables = []*txnSpace{s}, dyn.Tables()
		return e, nil
	}
	sizes := opts.KeySpaces
	if len(sizes) == 0 {
		sizes = []int{opts.Knobs.Keys}
	}
	for i, keys := range sizes {
		if slices.Contains(sizes[:i], keys) {
			return nil, fmt.Errorf("bench: txn: key-space size %d given twice", keys)
		}
		k := opts.Knobs
		k.Keys = keys
		wl, err := workload.New(opts.App, k)
		if err != nil {
			return nil, fmt.Errorf("bench: txn: %w", err)
		}
		s := &txnSpace{keys: keys, wl: wl}
		if err := s.init(opts.App); err != nil {
			return nil, err
		}
		e.spaces, e.tables = append(e.spaces, s), wl.Tables()
	}
	return e, nil
}

// init fills the space's initial state from its workload.
func (s *txnSpace) init(app string) error {
	s.initial = memstore.New()
	for t := range s.wl.Tables() {
		s.initial.Reserve(uint32(t), s.keys, 24)
	}
	err := s.wl.Initial(func(table int, key, value []byte) error {
		s.initial.Put(txn.Key{Table: uint32(table), Key: string(key)}, value)
		return nil
	})
	if err != nil {
		return fmt.Errorf("bench: txn: initial state of %s with %d keys: %w", app, s.keys, err)
	}
	return nil
}

// warmup returns the number of untimed batches of each run: the first,
// unless it is the only one.
func warmup(opts TxnOptions) int {
	if opts.Events > opts.Punctuation {
		return 1
	}
	return 0
}

// step announces a step on the progress writer.
func (e *txnEnv) step(format string, args ...any) {
	if e.opts.Progress != nil {
		fmt.Fprintf(e.opts.Progress, "bench: "+format+"\n", args...)
	}
}

// loadPlugin compiles the plugin on the engine of the options, configured as `sluice
// run` configures it (default call timeout) and returns the engine, which
// the caller closes, and the temporary directory it made, which the caller
// removes.
func (e *txnEnv) loadPlugin(ctx context.Context) (wasm.Engine, string, error) {
	dir, tmp := e.opts.Dir, ""
	if dir == "" {
		d, err := os.MkdirTemp("", "sluice-bench-txn-")
		if err != nil {
			return nil, "", fmt.Errorf("bench: txn: %w", err)
		}
		dir, tmp = d, d
	}
	cfg := wasm.NewConfig().WithCacheDir(filepath.Join(dir, "wasm-cache")).WithHostModules(plugin.HostModule())
	e.timeout = cfg.CallTimeout()
	eng, err := wasm.New(ctx, e.opts.Engine, cfg)
	if err != nil {
		return nil, tmp, fmt.Errorf("bench: txn: %s engine: %w", cmp.Or(e.opts.Engine, wasm.EngineWazero), err)
	}
	e.step("txn %s: compiling the %s plugin", e.opts.App, e.app.plugin)
	p, err := plugin.Load(ctx, eng, e.app.plugin+".wasm", e.opts.Plugin, plugin.KindTransactional,
		plugin.WithTables(e.tables), plugin.WithLogger(e.log))
	if err != nil {
		return eng, tmp, fmt.Errorf("bench: txn: loading the %s plugin: %w", e.app.plugin, err)
	}
	e.plugin = p
	return eng, tmp, nil
}

// newOperator returns an operator of the given logic with the given
// workers, its strategy set per run.
func (e *txnEnv) newOperator(ctx context.Context, logic TxnLogic, workers int) (*txnop.Operator, error) {
	var l txnop.Logic
	if logic == TxnWasm {
		w, err := txnop.NewWasm(ctx, e.plugin, workers, nil)
		if err != nil {
			return nil, fmt.Errorf("bench: txn: %w", err)
		}
		l = w
	} else {
		l = e.opts.Native(e.tables)
	}
	op, err := txnop.New(txnop.Config{
		Name: e.app.plugin, Tables: e.tables, Strategy: txn.Strategy{Kind: txn.Serial}, Workers: workers, Logic: l,
		Logger: e.log,
	})
	if err != nil {
		return nil, errors.Join(fmt.Errorf("bench: txn: %w", err), l.Close(ctx))
	}
	return op, nil
}

// lanes makes one lane per worker count and logic; on error, those made
// so far are returned too, for the caller to close.
func (e *txnEnv) lanes(ctx context.Context) ([]*lane, error) {
	var ls []*lane
	for _, s := range e.spaces {
		for _, w := range e.opts.Workers {
			for _, lg := range e.opts.Logics {
				op, err := e.newOperator(ctx, lg, w)
				if err != nil {
					return ls, err
				}
				ls = append(ls, &lane{space: s, workers: w, logic: lg, op: op})
			}
		}
	}
	return ls, nil
}

// oracle runs the serial strategy natively, untimed, over key space s and
// returns what every run over it must reproduce.
func (e *txnEnv) oracle(ctx context.Context, s *txnSpace) (txnDigest, error) {
	e.step("txn %s: oracle: the serial strategy, native, %s events, %s keys (not timed)",
		e.opts.App, thousands(float64(e.opts.Events)), thousands(float64(s.keys)))
	op, err := e.newOperator(ctx, TxnNative, 1)
	if err != nil {
		return txnDigest{}, err
	}
	l := &lane{space: s, workers: 1, logic: TxnNative, op: op}
	pprof.Do(ctx, pprof.Labels("phase", "oracle"), func(ctx context.Context) {
		err = e.runStrategy(ctx, "serial", txn.Strategy{Kind: txn.Serial}, []*lane{l})
	})
	if cerr := op.Close(context.WithoutCancel(ctx)); err == nil && cerr != nil {
		err = fmt.Errorf("bench: txn: closing the oracle: %w", cerr)
	}
	return l.digest, err
}

// runStrategy runs every lane with strategy st over the workload's events,
// interleaved batch by batch, and leaves each lane's figures and digest in
// it.
func (e *txnEnv) runStrategy(ctx context.Context, name string, st txn.Strategy, lanes []*lane) error {
	for _, l := range lanes {
		if err := l.op.SetStrategy(st); err != nil {
			return fmt.Errorf("bench: txn: %w", err)
		}
		l.store = cloneStore(l.space.initial)
		l.digest = txnDigest{outputs: fnvOffset}
		l.run = TxnRun{Strategy: name, Workers: l.workers, Logic: l.logic, Keys: l.space.keys}
		l.lat = l.lat[:0]
	}
	var spaces []*txnSpace // the lanes' key spaces
	for _, l := range lanes {
		if !slices.Contains(spaces, l.space) {
			spaces = append(spaces, l.space)
		}
	}
	total, batch := e.opts.Events, e.opts.Punctuation
	skip := warmup(e.opts)
	last := time.Now()
	for b, first := 0, 0; first < total; b, first = b+1, first+batch {
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("bench: txn: %w", err)
		}
		n := min(batch, total-first)
		for _, s := range spaces {
			s.events(first, n)
		}
		for i := range lanes {
			l := lanes[(b+i)%len(lanes)]
			if err := e.runBatch(ctx, l, b >= skip); err != nil {
				return fmt.Errorf("bench: txn %s: strategy %s, %s, %s, %s keys, batch %d (events %d to %d): %w",
					e.opts.App, name, workersText(l.workers), l.logic, thousands(float64(l.space.keys)), b, first, first+n-1, err)
			}
		}
		if e.opts.Progress != nil && time.Since(last) >= e.opts.ProgressEvery {
			last = time.Now()
			e.step("txn %s: %s: %s/%s events; %s", e.opts.App, name,
				thousands(float64(first+n)), thousands(float64(total)), laneRates(lanes, len(e.spaces) > 1))
		}
	}
	for _, l := range lanes {
		l.digest.state = stateHash(l.store)
		l.store = nil
		l.finish()
	}
	return nil
}

// events draws events [first, first+n) into the space's batch, shared by
// its lanes: event i has time i and, as Origin, its index in the batch.
func (s *txnSpace) events(first, n int) {
	s.recs = slices.Grow(s.recs[:0], n)[:n]
	cur := s.buf[:0]
	used := 0
	for j := range n {
		k, v := s.wl.Event(uint64(first+j), cur)
		s.recs[j] = abi.Record{Origin: uint32(j), Time: int64(first + j), Key: k, Value: v}
		used += len(k) + len(v)
		cur = v[len(v):]
	}
	if used > cap(s.buf) {
		// Event spilled into new buffers: size the next batch's at once.
		s.buf = make([]byte, 0, used+used/4)
	}
}

// runBatch runs the shared batch through lane l, applies its changes to
// the lane's store, folds its outcome into the lane's digest and, when
// timed, its figures into the lane's run.
func (e *txnEnv) runBatch(ctx context.Context, l *lane, timed bool) error {
	l.out.Reset()
	var (
		res *txn.Result
		err error
	)
	start := time.Now()
	recs := l.space.recs
	pprof.Do(ctx, pprof.Labels("lane", l.label()), func(ctx context.Context) {
		res, err = l.op.Process(ctx, recs, l.store, &l.out)
	})
	elapsed := time.Since(start)
	if err != nil {
		return err
	}
	if len(l.out.Rejects) > 0 {
		r := l.out.Rejects[0]
		return fmt.Errorf("event %d of the batch was rejected (%d rejects): %w", r.Index, len(l.out.Rejects), r.Err)
	}
	for _, c := range res.Committed {
		if c {
			l.digest.committed++
		} else {
			l.digest.aborted++
		}
	}
	l.digest.outputs = hashOutputs(l.digest.outputs, l.out.Records)
	applyStart := time.Now()
	l.apply(res.Changes)
	applied := time.Since(applyStart)
	s := &res.Stats
	l.run.ReExecutions += uint64(s.ReExecutions)
	if !timed {
		return nil
	}
	r := &l.run
	r.Events += len(recs)
	r.Batches++
	r.Seconds += elapsed.Seconds()
	l.lat = append(l.lat, batchTime{d: elapsed, n: len(recs)})
	bd := &r.Breakdown
	bd.Plan += s.Plan.Seconds()
	bd.Explore += s.Explore.Seconds()
	bd.Useful += s.Useful.Seconds()
	bd.Abort += s.Abort.Seconds()
	bd.Finish += s.Finish.Seconds()
	bd.Guest += max(elapsed-s.Wall, 0).Seconds()
	bd.Apply += applied.Seconds()
	g := &r.Graph
	g.Ops += s.Ops
	g.Temporal += s.Temporal
	g.Parametric += s.Parametric
	g.Logical += s.Logical
	g.NonDet += s.NonDet
	g.Cycles += s.Cycles
	g.Units += s.Units
	g.SplitUnits += s.SplitUnits
	g.Passes += s.Passes
	g.Executions += s.Executions
	g.ReExecutions += s.ReExecutions
	return nil
}

// apply writes a batch's change set into the lane's store, which copies
// each value (a change may alias a value of the store, and the Result's
// versions are reused by the next batch).
func (l *lane) apply(changes []txn.Change) {
	for i := range changes {
		c := &changes[i]
		if c.Delete {
			l.store.Delete(c.Key)
			continue
		}
		l.store.Put(c.Key, c.Value)
	}
}

// finish computes the run's rate and latencies from its timed batches.
func (l *lane) finish() {
	r := &l.run
	r.Committed, r.Aborted = l.digest.committed, l.digest.aborted
	if r.Seconds > 0 {
		r.Rate = float64(r.Events) / r.Seconds
	}
	if len(l.lat) == 0 {
		return
	}
	lat := slices.SortedFunc(slices.Values(l.lat), func(a, b batchTime) int { return int(a.d - b.d) })
	var sum float64
	events := 0
	for _, x := range lat {
		sum += x.d.Seconds() * float64(x.n)
		events += x.n
	}
	r.LatencyMeanMs = 1e3 * sum / float64(events)
	r.LatencyMaxMs = 1e3 * lat[len(lat)-1].d.Seconds()
	// The 99th percentile event: the first batch, by time, at which 99%
	// of the events have been counted.
	need, seen := 0.99*float64(events), 0
	for _, x := range lat {
		seen += x.n
		if float64(seen) >= need {
			r.LatencyP99Ms = 1e3 * x.d.Seconds()
			break
		}
	}
}

// check returns an error wrapping ErrTxnMismatch that names what in d
// differs from the reference.
func (ref *txnDigest) check(d *txnDigest) error {
	var diffs []string
	if d.state != ref.state {
		diffs = append(diffs, fmt.Sprintf("final state hash %s, want %s", hex64(d.state), hex64(ref.state)))
	}
	if d.outputs != ref.outputs {
		diffs = append(diffs, fmt.Sprintf("output hash %s, want %s", hex64(d.outputs), hex64(ref.outputs)))
	}
	if d.committed != ref.committed || d.aborted != ref.aborted {
		diffs = append(diffs, fmt.Sprintf("%d committed and %d aborted, want %d and %d", d.committed, d.aborted, ref.committed, ref.aborted))
	}
	if len(diffs) == 0 {
		return nil
	}
	return fmt.Errorf("%w: %s (a scheduler or operator bug: no figure is reported)", ErrTxnMismatch, strings.Join(diffs, "; "))
}

// cloneStore copies a store.
func cloneStore(m *memstore.Store) *memstore.Store { return m.Clone() }

// FNV-1a, 64 bits: stable across processes and machines, so that the
// hashes in a report compare between runs.
const (
	fnvOffset = 14695981039346656037
	fnvPrime  = 1099511628211
)

func fnvBytes(h uint64, b []byte) uint64 {
	for _, c := range b {
		h ^= uint64(c)
		h *= fnvPrime
	}
	return h
}

func fnvUint(h, x uint64) uint64 {
	for range 8 {
		h ^= x & 0xff
		h *= fnvPrime
		x >>= 8
	}
	return h
}

// fnvField hashes a length-prefixed byte string, so that fields cannot
// run into each other.
func fnvField(h uint64, b []byte) uint64 { return fnvBytes(fnvUint(h, uint64(len(b))), b) }

// stateHash hashes a store independently of map order: the sum of the
// entries' hashes.
func stateHash(m *memstore.Store) uint64 {
	var sum uint64
	for k, v := range m.All() {
		sum += entryHash(k.Table, []byte(k.Key), v)
	}
	return sum
}

// entryHash is the hash of one entry of a table (by handle) that a state
// hash sums: the same for an in-memory store (stateHash) and for tables
// read back from Pebble (pebbleHash), which the pipeline mode compares.
func entryHash(table uint32, key, value []byte) uint64 {
	h := fnvUint(fnvOffset, uint64(table))
	h = fnvField(h, key)
	return fnvField(h, value)
}

// hashOutputs folds a batch's output records, in order, into h.
func hashOutputs(h uint64, recs []abi.Record) uint64 {
	for i := range recs {
		r := &recs[i]
		h = fnvUint(h, uint64(r.Origin))
		h = fnvUint(h, uint64(r.Time))
		h = fnvField(h, r.Key)
		h = fnvField(h, r.Value)
		h = fnvUint(h, uint64(len(r.Headers)))
		for _, hd := range r.Headers {
			h = fnvField(h, hd.Name)
			h = fnvField(h, hd.Value)
		}
	}
	return h
}

// workersText is "1 worker" or "n workers".
func workersText(n int) string {
	if n == 1 {
		return "1 worker"
	}
	return strconv.Itoa(n) + " workers"
}

func hex64(x uint64) string { return fmt.Sprintf("%016x", x) }

// knobText returns the knobs app reads, as text.
func knobText(app string, k *workload.Knobs) map[string]string {
	names, _ := workload.AppKnobs(app)
	m := make(map[string]string, len(names))
	for _, n := range names {
		m[n], _ = k.Get(n)
	}
	return m
}

// laneNames describes the lanes: "wasm and native with 1 and 2 workers".
func laneNames(lanes []*lane) string {
	var parts []string
	for _, l := range lanes {
		name := fmt.Sprintf("%s/%dw", l.logic, l.workers)
		if l.space != lanes[0].space || l.space != lanes[len(lanes)-1].space {
			name = fmt.Sprintf("%s/%dk", name, l.space.keys/1000)
		}
		parts = append(parts, name)
	}
	return strings.Join(parts, ", ")
}

// laneRates describes the lanes' rates so far, for progress lines, with
// their key-space sizes when keys is set.
func laneRates(lanes []*lane, keys bool) string {
	var parts []string
	for _, l := range lanes {
		rate := "warming up"
		if l.run.Seconds > 0 {
			rate = thousands(float64(l.run.Events)/l.run.Seconds) + " events/s"
		}
		name := fmt.Sprintf("%s/%dw", l.logic, l.workers)
		if keys {
			name = fmt.Sprintf("%s/%dk", name, l.space.keys/1000)
		}
		parts = append(parts, name+" "+rate)
	}
	return strings.Join(parts, ", ")
}

// ratios pairs the Wasm and native runs of each strategy and worker count.
func ratios(runs []TxnRun) []TxnRatio {
	var out []TxnRatio
	for i := range runs {
		w := &runs[i]
		if w.Logic != TxnWasm {
			continue
		}
		for j := range runs {
			n := &runs[j]
			if n.Logic == TxnNative && n.Strategy == w.Strategy && n.Workers == w.Workers && n.Keys == w.Keys && n.Rate > 0 {
				out = append(out, TxnRatio{Strategy: w.Strategy, Workers: w.Workers, Keys: w.Keys, Ratio: w.Rate / n.Rate})
			}
		}
	}
	return out
}

// speedups compares, for each strategy and logic, the run with the most
// workers with the run with the fewest.
func speedups(runs []TxnRun) []TxnSpeedup {
	type key struct {
		s    string
		l    TxnLogic
		keys int
	}
	lo, hi := map[key]*TxnRun{}, map[key]*TxnRun{}
	var order []key
	for i := range runs {
		r := &runs[i]
		k := key{r.Strategy, r.Logic, r.Keys}
		if lo[k] == nil {
			order = append(order, k)
			lo[k], hi[k] = r, r
		}
		if r.Workers < lo[k].Workers {
			lo[k] = r
		}
		if r.Workers > hi[k].Workers {
			hi[k] = r
		}
	}
	var out []TxnSpeedup
	for _, k := range order {
		a, b := lo[k], hi[k]
		if a.Workers == b.Workers || a.Rate <= 0 {
			continue
		}
		out = append(out, TxnSpeedup{Strategy: k.s, Logic: k.l, Keys: k.keys, From: a.Workers, To: b.Workers, Speedup: b.Rate / a.Rate})
	}
	return out
}

// keySweep compares, for each strategy, worker count and logic, the run
// at every key-space size with the run at the first size (the runs come
// in the order of the sizes).
func keySweep(runs []TxnRun) []TxnKeyRatio {
	var out []TxnKeyRatio
	for i := range runs {
		r := &runs[i]
		j := slices.IndexFunc(runs, func(x TxnRun) bool {
			return x.Strategy == r.Strategy && x.Workers == r.Workers && x.Logic == r.Logic
		})
		base := &runs[j]
		if base.Keys == r.Keys || base.Rate <= 0 {
			continue
		}
		out = append(out, TxnKeyRatio{Strategy: r.Strategy, Workers: r.Workers, Logic: r.Logic,
			FromKeys: base.Keys, Keys: r.Keys, Rate: r.Rate, Ratio: r.Rate / base.Rate})
	}
	return out
}

// ParseTxnWorkers parses a worker list such as "2" or "1,2".
func ParseTxnWorkers(s string) ([]int, error) {
	var ws []int
	for _, f := range strings.Split(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 {
			return nil, fmt.Errorf("bench: txn: workers %q: want a positive integer or a list like 1,2", s)
		}
		ws = append(ws, n)
	}
	return ws, nil
}
