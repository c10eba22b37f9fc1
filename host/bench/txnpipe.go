package bench

// The txn suite's pipeline mode (TxnOptions.Pipeline, `sluice bench txn
// --pipeline`): after each strategy's in-memory runs, the same strategy,
// worker counts and logics run through a real job, so that the figure a
// user sees is measured beside the operator's.
//
// Design decisions:
//
// The job is what `sluice run` builds for a transactional pipeline: the
// generator in txn mode (the same events as the in-memory runs: the same
// workload, knobs and seed) -> the transactional operator (the same
// txnop.Operator, Wasm or native) -> a sink, with a Pebble data directory
// (state.Store, no fsync: the pipeline file's default) initialised with
// the workload's initial state, batches cut by the punctuation alone, and
// every batch committed by the executor's committer as in any pipeline.
//
// The sink counts the outputs and discards them: a file or NATS sink
// would add the cost of its own I/O, which the sink suites measure and
// which does not depend on the transactional path; what is measured here
// is the executor, the operator and the commit to Pebble.
//
// The rate is taken from the end of the first batch's processing (its
// outputs reaching the sink, before its commit) to the end of Run (the
// last batch committed), over the events of every batch but the first:
// the first batch is the warm-up, as in the in-memory runs; the commit of
// the first batch and the last are inside the time.
//
// The check: once the job has ended, the tables are read back from
// Pebble (state.Store.Scan, the durable copy, not memory) and hashed as
// the in-memory store is; the hash and the job's committed and aborted
// transactions must equal the oracle's, and nothing may be dead-lettered.
// Outputs are counted, not hashed: their event times are the generator's,
// not the in-memory runs' positions.

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/sluicehq/sluice/connectors"
	"github.com/sluicehq/sluice/connectors/generator"
	"github.com/sluicehq/sluice/host/exec"
	"github.com/sluicehq/sluice/host/pipeline"
	"github.com/sluicehq/sluice/host/plugin"
	"github.com/sluicehq/sluice/state"
	"github.com/sluicehq/sluice/txn"
	"github.com/sluicehq/sluice/txn/apps/workload"
)

// TargetTxnPipelineRatio is the fraction of the in-memory rate (`sluice
// bench txn`) that the same strategy, workers and logic must keep through
// a real pipeline with Pebble commits, in the same run (issue 22).
const TargetTxnPipelineRatio = 0.8

// TxnPipelineRun is one strategy, worker count and logic run through a
// real job (TxnOptions.Pipeline).
type TxnPipelineRun struct {
	Strategy string   `json:"strategy"`
	Workers  int      `json:"workers"`
	Logic    TxnLogic `json:"logic"`
	// Events is the number of events timed (every batch but the first),
	// Seconds their time (see the package documentation), Rate their
	// ratio.
	Events  int     `json:"events_timed"`
	Seconds float64 `json:"seconds"`
	Rate    float64 `json:"events_per_second"`
	// WallSeconds is the whole of Run, the first batch included.
	WallSeconds float64 `json:"wall_seconds"`
	// InMemoryRate is the in-memory run's rate (TxnRun.Rate) of the same
	// strategy, workers and logic; Ratio is Rate over it.
	InMemoryRate float64 `json:"in_memory_events_per_second"`
	Ratio        float64 `json:"ratio"`
	// Batches and Commits are the batches processed and committed (fewer
	// commits than batches with a commit interval); CommitSeconds the
	// time spent in Pebble commits (state's Commit, which overlaps the
	// next batch's processing), CommitEntries the entries they wrote.
	Batches       uint64  `json:"batches"`
	Commits       uint64  `json:"commits"`
	CommitSeconds float64 `json:"commit_seconds"`
	CommitEntries uint64  `json:"commit_entries"`
	// Outputs counts the records the sink received.
	Outputs uint64 `json:"outputs"`
	// MemTableSize is the stores' Pebble memtable size in bytes.
	MemTableSize int `json:"memtable_bytes"`
	// CommitInterval is the job's commit interval (0: every batch).
	CommitInterval string `json:"commit_interval"`
	// Committed and Aborted are the job's transactions; StateHash the
	// hash of the tables read back from Pebble, all equal to the oracle's.
	Committed uint64 `json:"committed"`
	Aborted   uint64 `json:"aborted"`
	StateHash string `json:"state_hash"`
}

// pipelineSink counts the outputs and keeps the time of the first Flush
// (the first batch's outputs written, before its commit).
type pipelineSink struct {
	mu      sync.Mutex
	records uint64
	first   time.Time
}

var _ connectors.Sink = (*pipelineSink)(nil)

func (s *pipelineSink) Name() string { return "discard" }

func (s *pipelineSink) Write(_ context.Context, out []connectors.Out) error {
	s.mu.Lock()
	s.records += uint64(len(out))
	s.mu.Unlock()
	return nil
}

func (s *pipelineSink) Flush(context.Context) error {
	s.mu.Lock()
	if s.first.IsZero() {
		s.first = time.Now()
	}
	s.mu.Unlock()
	return nil
}

func (s *pipelineSink) Close() error { return nil }

// runPipeline runs strategy st (named name) with l's workers and logic
// through a real job over l's key space, checks its state in Pebble
// against ref and returns its figures.
func (e *txnEnv) runPipeline(ctx context.Context, name string, st txn.Strategy, l *lane, ref *txnDigest) (run TxnPipelineRun, err error) {
	run = TxnPipelineRun{Strategy: name, Workers: l.workers, Logic: l.logic, InMemoryRate: l.run.Rate,
		MemTableSize: cmp.Or(e.opts.MemTableSize, state.DefaultMemTableSize), CommitInterval: e.opts.CommitInterval.String()}
	e.step("txn %s: strategy %s, %s, %s: through a pipeline (generator -> operator -> discard, Pebble commits)",
		e.opts.App, name, workersText(l.workers), l.logic)
	dir, err := os.MkdirTemp(e.opts.Dir, "pipeline-")
	if err != nil {
		return run, fmt.Errorf("bench: txn: %w", err)
	}
	defer os.RemoveAll(dir)
	store, err := state.Open(filepath.Join(dir, "state"), state.Options{KeyGroups: pipeline.DefaultKeyGroups, MemTableSize: e.opts.MemTableSize, Logger: e.log})
	if err != nil {
		return run, fmt.Errorf("bench: txn: %w", err)
	}
	defer func() {
		if cerr := store.Close(); cerr != nil && err == nil {
			err = fmt.Errorf("bench: txn: %w", cerr)
		}
	}()
	k := e.opts.Knobs
	k.Keys = l.space.keys
	wl, err := workload.New(e.opts.App, k) // the generator's own: it reads on its goroutine
	if err != nil {
		return run, fmt.Errorf("bench: txn: %w", err)
	}
	if err := loadInitial(wl, store); err != nil {
		return run, err
	}
	loaded := store.Stats().Total // the initial state's commit, not the job's
	op, err := e.newOperator(ctx, l.logic, l.workers)
	if err != nil {
		return run, err
	}
	if err := op.SetStrategy(st); err != nil {
		return run, errors.Join(fmt.Errorf("bench: txn: %w", err), op.Close(ctx))
	}
	gen, err := generator.New(generator.Config{Mode: generator.Txn, Workload: wl, Count: uint64(e.opts.Events), Name: "events"})
	if err != nil {
		return run, errors.Join(fmt.Errorf("bench: txn: %w", err), op.Close(ctx))
	}
	xop := exec.Operator{Name: e.app.plugin, Kind: plugin.KindTransactional, Parallelism: l.workers, StopOnError: true,
		Txn: &exec.Txn{Operator: op, Events: e.opts.Punctuation}}
	if l.logic == TxnWasm {
		xop.Plugin = e.plugin
	}
	sink := &pipelineSink{}
	job, err := exec.New(ctx, exec.Config{
		Name:           "bench-txn-" + e.opts.App,
		Sources:        []exec.Input{{Name: "events", Source: gen}},
		Operators:      []exec.Operator{xop},
		Sinks:          []exec.Output{{Name: "discard", Sink: sink}},
		DeadLetter:     &discardSink{name: "dead-letters"},
		Store:          store,
		CommitInterval: e.opts.CommitInterval,
		Logger:         e.log,
	})
	if err != nil {
		return run, fmt.Errorf("bench: txn: %w", err)
	}
	start := time.Now()
	runErr := job.Run(ctx)
	end := time.Now()
	if cerr := job.Close(context.WithoutCancel(ctx)); runErr == nil && cerr != nil {
		runErr = cerr
	}
	if runErr != nil {
		return run, fmt.Errorf("bench: txn %s: strategy %s, %s, %s, pipeline: %w", e.opts.App, name, workersText(l.workers), l.logic, runErr)
	}
	status := job.Status()
	if e.corrupt != nil {
		e.corrupt(store)
	}
	d := txnDigest{}
	if d.state, err = pebbleHash(store, e.tables); err != nil {
		return run, err
	}
	if len(status.Operators) == 1 && status.Operators[0].Txn != nil {
		d.committed, d.aborted = status.Operators[0].Txn.Committed, status.Operators[0].Txn.Aborted
	}
	run.Committed, run.Aborted, run.StateHash = d.committed, d.aborted, hex64(d.state)
	// Outputs are not compared (see above): take the reference's.
	d.outputs = ref.outputs
	if err := ref.check(&d); err != nil {
		return run, fmt.Errorf("bench: txn %s: strategy %s, %s, %s, pipeline (tables read back from Pebble): %w",
			e.opts.App, name, workersText(l.workers), l.logic, err)
	}
	if status.Dead > 0 {
		return run, fmt.Errorf("bench: txn %s: strategy %s, pipeline: %d events dead-lettered", e.opts.App, name, status.Dead)
	}
	stats := store.Stats()
	sink.mu.Lock()
	first, outputs := sink.first, sink.records
	sink.mu.Unlock()
	run.Outputs, run.Batches, run.Commits = outputs, status.Batches, job.Measure().Commits
	run.CommitSeconds = (stats.Total.Duration - loaded.Duration).Seconds()
	run.CommitEntries = stats.Total.Entries - loaded.Entries
	run.WallSeconds = end.Sub(start).Seconds()
	if timed := e.opts.Events - min(e.opts.Punctuation, e.opts.Events); timed > 0 && !first.IsZero() {
		run.Events, run.Seconds = timed, end.Sub(first).Seconds()
	} else {
		run.Events, run.Seconds = e.opts.Events, run.WallSeconds
	}
	if run.Seconds > 0 {
		run.Rate = float64(run.Events) / run.Seconds
	}
	if run.InMemoryRate > 0 {
		run.Ratio = run.Rate / run.InMemoryRate
	}
	e.step("txn %s: strategy %s, %s, %s: pipeline %s events/s, in memory %s events/s (%.2fx)",
		e.opts.App, name, workersText(l.workers), l.logic, thousands(run.Rate), thousands(run.InMemoryRate), run.Ratio)
	return run, nil
}

// pebbleHash hashes the committed tables as stateHash hashes a store,
// reading them back from Pebble; tables are the operator's, by handle.
func pebbleHash(store *state.Store, tables []string) (uint64, error) {
	var sum uint64
	for i, t := range tables {
		err := store.Scan(t, func(key, value []byte) error {
			sum += entryHash(uint32(i), key, value)
			return nil
		})
		if err != nil {
			return 0, fmt.Errorf("bench: txn: reading table %s back: %w", t, err)
		}
	}
	return sum, nil
}

// loadInitial commits a workload's initial state (workload.App.Initial)
// to store's tables, named as the workload names them.
func loadInitial(wl workload.App, store *state.Store) error {
	tables := wl.Tables()
	err := wl.Initial(func(table int, key, value []byte) error {
		tb := store.Table(tables[table])
		tb.Group(state.KeyGroup(key, tb.KeyGroups())).Put(key, value)
		return nil
	})
	if err == nil {
		err = store.Commit(nil)
	}
	if err != nil {
		return fmt.Errorf("bench: initial state of %s: %w", wl.Name(), err)
	}
	return nil
}

// pipelineTargets checks TargetTxnPipelineRatio, worst of the pipeline
// runs.
func (r *TxnReport) pipelineTargets() []Target {
	if len(r.Pipeline) == 0 {
		return nil
	}
	worst, best := &r.Pipeline[0], &r.Pipeline[0]
	for i := range r.Pipeline {
		x := &r.Pipeline[i]
		if x.Ratio < worst.Ratio {
			worst = x
		}
		if x.Ratio > best.Ratio {
			best = x
		}
	}
	return []Target{{
		Name: fmt.Sprintf("%s: pipeline (Pebble commits) over in-memory rate, same strategy, workers and logic, same run (worst of %d)", r.App, len(r.Pipeline)),
		Want: fmt.Sprintf(">= %.1fx", TargetTxnPipelineRatio),
		Got: fmt.Sprintf("%.2fx (%s, %s, %s: %s against %s events/s; best %.2fx, %s %s)", worst.Ratio, worst.Strategy, workersText(worst.Workers), worst.Logic,
			thousands(worst.Rate), thousands(worst.InMemoryRate), best.Ratio, best.Strategy, best.Logic),
		Met: worst.Ratio >= TargetTxnPipelineRatio,
	}}
}
