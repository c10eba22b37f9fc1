package exec

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sluicehq/sluice/abi"
	"github.com/sluicehq/sluice/connectors"
	"github.com/sluicehq/sluice/host/api/schema"
	"github.com/sluicehq/sluice/host/plugin"
	"github.com/sluicehq/sluice/host/window"
	"github.com/sluicehq/sluice/state"
	"github.com/sluicehq/sluice/txn/adapt"
)

// Operator is one operator of the pipeline's graph.
type Operator struct {
	Name string
	Kind plugin.Kind
	// Inputs name the sources and operators whose records the operator
	// reads; a record's abi.Record.Input is the position of its input
	// here. None: the operator before it, or every source for the first
	// (a chain).
	Inputs []string
	// Plugin runs the operator; for a transactional operator it only names
	// the plugin in dead letters and the status (its instances belong to
	// Txn.Operator), and may be nil for a native one.
	Plugin *plugin.Plugin
	// Config is the operator's configuration as JSON, passed to each instance.
	Config []byte
	// Parallelism is the number of workers (at least 1).
	Parallelism int
	// Tables are the keyed operator's state tables; the first is its default.
	Tables []string
	// StopOnError stops the job on a failed record instead of dead-lettering it.
	StopOnError bool
	// MaxRecordBytes refuses input records that carry more bytes
	// (abi.DataSize: key, value and headers), which are dead-lettered; 0:
	// no limit.
	MaxRecordBytes int
	// Txn makes the operator transactional; Parallelism and Tables are
	// then unused (the txnop.Operator has its workers and tables).
	Txn *Txn
	// Version names the plugin's version in the status, logs and dead
	// letters (the registry's label of the module); "" when unknown.
	Version string
	// RollbackBatches is the trial of a module swapped in (Job.Swap): a
	// failure in its first RollbackBatches batches puts the previous
	// module back and runs the batch again. 0: no trial, no automatic
	// rollback.
	RollbackBatches int
	// Retries is how many times a record that failed (trap, timeout,
	// error status: not one the guest rejects) is run again, alone,
	// before the error policy applies. Not for transactional operators.
	Retries int
	// QuarantineAfter quarantines the operator after that many
	// consecutive batches with failures: the job stops calling its plugin
	// and holds the batch uncommitted until a swap. 0: never.
	QuarantineAfter int
	// Window makes the operator windowed (kinds aggregate and window):
	// keyed by record key, its state is its windows (Tables[0], default
	// the operator's name).
	Window *Window
	// Join makes the operator a window join of its two inputs (kind
	// join), Interval an interval join.
	Join     *Join
	Interval *Interval
}

// pluginName names the operator's plugin, "" for a native operator.
func (o *Operator) pluginName() string {
	if o.Plugin == nil {
		return ""
	}
	return o.Plugin.Name()
}

// Input is a named source. The name (from the pipeline file) keys the
// source's committed position, so it must not change between runs.
type Input struct {
	Name   string
	Source connectors.Source
	// Watermark is how the source's event time advances, for windows;
	// nil: times only grow, and the source is never idle.
	Watermark *window.WatermarkStrategy
}

// Output is a named sink.
type Output struct {
	Name string
	Sink connectors.Sink
	// Inputs name the operators (or sources) whose records the sink
	// writes. None: the last operator, or every source when there are no
	// operators.
	Inputs []string
}

// Config is what a Job runs.
type Config struct {
	// Name of the pipeline; part of every output's de-duplication id.
	Name       string
	Sources    []Input
	Operators  []Operator
	Sinks      []Output
	DeadLetter connectors.Sink
	// Late receives the records that come after their window closed, with
	// the reason in a header (HeaderLate); needed by a job with windows
	// that has late records.
	Late  connectors.Sink
	Store *state.Store
	// BatchSize is the most records in a batch (default 1024) and Linger
	// how long a batch waits for more once it has one (default 5ms). A
	// job with a transactional operator ignores both and batches by the
	// operator's punctuation (Txn.Events and Txn.Interval).
	BatchSize int
	Linger    time.Duration
	// CommitInterval, when positive, lets a batch leave its state
	// uncommitted while the sources keep batches full: state, source
	// positions and sinks' offsets are then committed at most this long
	// apart, and at every batch that is not full, at the end of input, at
	// a stop and before a change of key groups or a checkpoint (commit.go).
	// Zero commits every batch.
	CommitInterval time.Duration
	Logger         *slog.Logger
	Metrics        *Metrics
	// Groups, when not nil, are the key groups the job owns, for a
	// pipeline that runs on several hosts: every source must then be a
	// connectors.Partitioned, read for those groups only, and groups move
	// with ReleaseGroups and AcquireGroups (groups.go). Nil: the job owns
	// every key group and reads its sources whole.
	Groups []int
	// OnRollback, when set, is told of every automatic rollback: the
	// operator, the version that failed, the version put back and why.
	// It is called on the executor's goroutine, between batches.
	OnRollback func(operator, failed, restored string, reason error)

	// noMeasure turns the measurements of Job.Measure off, for the
	// benchmark of what they cost.
	noMeasure bool
}

// Job is a running pipeline.
type Job struct {
	cfg Config
	log *slog.Logger
	m   *Metrics
	// nodes are the operators in Config order; order is the order they
	// run in (each after its inputs).
	nodes []*node
	order []*node
	// byName maps each operator's name to its node, set by New and never
	// changed, for Swap, SetWorkers and Decisions.
	byName map[string]*node
	// sinkSets are the sinks grouped by the streams they write, so that
	// sinks reading the same operators share one set of outputs.
	sinkSets []*sinkSet
	// needIDs is whether any sink uses output ids (connectors.IDUser).
	needIDs bool
	// batchSize and linger cut batches (linger 0: no time bound).
	batchSize int
	linger    time.Duration
	// Commits deferred by Config.CommitInterval (commit.go): tail is
	// whether batches processed since the last Prepare left their state
	// uncommitted, lastCommit when that Prepare was (executor goroutine);
	// carry is the source positions and touched sources of the batches
	// finished since the last commit (committer goroutine).
	tail       bool
	lastCommit time.Time
	carry      uncommitted

	mu     sync.Mutex
	status Status
	// Measurements (measure.go), under mu: each operator's, in Config
	// order, and the batches committed with the time their commits took.
	// epoch is what the delays' times count from; reads counts each
	// source's records read (its reader adds to it), taken those of them
	// taken into a batch (the executor adds to it): the difference waits
	// in the queue between them.
	meters     []*meter
	commits    uint64
	commitTime time.Duration
	epoch      time.Time
	reads      []atomic.Uint64
	taken      []atomic.Uint64
	// updated is the channel Updated handed out, closed (and cleared)
	// once the status changes; nil while nobody waits, so that a batch
	// pays one atomic load for it.
	updated atomic.Pointer[chan struct{}]
	// commitDelay is SetCommitDelay's, in nanoseconds (atomic: set from
	// any goroutine, read by the committer without mu).
	commitDelay atomic.Int64

	// Changes queued for the next batch boundary (swap.go); wake tells
	// the executor one is queued; ended is set when Run returns. changeMu
	// also guards what Swap and SetWorkers read of a stage before they
	// prepare (its worker count, its plugin), which the executor changes;
	// they make instances without it, so batches go on meanwhile.
	changeMu sync.Mutex
	changes  []*queued
	ended    bool
	wake     chan struct{}
	// runCtx is Run's context, for the waits of a quarantine.
	runCtx context.Context
	// spill is what the last chunk read held beyond the previous batch
	// (executor goroutine only).
	spill chunk
	// free holds read buffers for the readers to reuse.
	free chan []connectors.Message
	// owned[kg] is whether the job owns key group kg (nil: it owns every
	// group); parts[i] is source i's partitioned view (nil: not
	// partitioned), with the epoch that tells a read across a change of
	// groups (groups.go). commit is Run's committer, for changes that
	// wait for the batch in flight.
	owned  []bool
	parts  []*partition
	commit *committer
	// clock is the sources' event time, for windowed operators (nil in a
	// job without them); up are the sources each node reads, directly or
	// not; tick is how often a batch runs with no input, for windows of
	// processing time (0: never).
	clock *clock
	up    [][]int
	tick  time.Duration
}

// Status is a snapshot of a job's progress, the answer of the API's
// GET /api/v1/pipeline.
type Status = schema.Status

// OperatorStatus describes one operator in a Status.
type OperatorStatus = schema.OperatorStatus

// WorkerStatus describes one worker of an operator.
type WorkerStatus = schema.WorkerStatus

// New prepares a job: it makes every worker's plugin instance (so a plugin
// that fails to configure stops the job before any record is read) and
// opens the sources after their committed positions. The job owns the
// operators' Txn.Operator from here on: New closes them if it fails.
func New(ctx context.Context, cfg Config) (_ *Job, err error) {
	staged := 0 // operators whose stage owns their Txn.Operator
	defer func() {
		if err == nil {
			return
		}
		for i := staged; i < len(cfg.Operators); i++ {
			if t := cfg.Operators[i].Txn; t != nil && t.Operator != nil {
				_ = t.Operator.Close(context.WithoutCancel(ctx))
			}
		}
	}()
	if len(cfg.Sources) == 0 || len(cfg.Sinks) == 0 {
		return nil, errors.New("exec: a job needs at least one source and one sink")
	}
	if cfg.Store == nil {
		return nil, errors.New("exec: a job needs a state store (it also holds the source positions)")
	}
	if cfg.BatchSize <= 0 {
		cfg.BatchSize = 1024
	}
	if cfg.Linger <= 0 {
		cfg.Linger = 5 * time.Millisecond
	}
	if cfg.CommitInterval < 0 {
		return nil, fmt.Errorf("exec: commit interval %v is negative", cfg.CommitInterval)
	}
	events, interval, transactional, err := punctuation(cfg.Operators)
	if err != nil {
		return nil, err
	}
	if err := checkTables(cfg.Operators); err != nil {
		return nil, err
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Metrics == nil {
		cfg.Metrics = NewMetrics()
	}
	j := &Job{cfg: cfg, log: cfg.Logger, m: cfg.Metrics, batchSize: cfg.BatchSize, linger: cfg.Linger,
		wake: make(chan struct{}, 1), runCtx: context.Background(), epoch: time.Now(), reads: make([]atomic.Uint64, len(cfg.Sources)),
		taken: make([]atomic.Uint64, len(cfg.Sources)), carry: newUncommitted(len(cfg.Sources))}
	if transactional {
		j.batchSize, j.linger = events, interval
	}
	j.status = Status{Pipeline: cfg.Name, State: "starting", Positions: map[string]uint64{}}
	for _, o := range cfg.Sinks {
		if u, ok := o.Sink.(connectors.IDUser); ok && u.UsesIDs() {
			j.needIDs = true
		}
	}
	g, err := resolve(&cfg)
	if err != nil {
		return nil, err
	}
	if unread := g.unread(&cfg); len(unread) > 0 {
		return nil, fmt.Errorf("%w: nothing reads the records of %s", ErrGraph, strings.Join(unread, ", "))
	}
	j.byName = map[string]*node{}
	for i := range cfg.Operators {
		op := &cfg.Operators[i]
		if op.Parallelism < 1 {
			op.Parallelism = 1
		}
		om := j.m.operator(op.Name)
		code, err := newStage(ctx, op, cfg.Store, j.m, om, j.log)
		if err != nil {
			j.closeStages(ctx)
			return nil, err
		}
		staged = i + 1
		n := &node{op: op, code: code, m: om, inputs: g.opInputs[i], version: op.Version, wm: window.MinWatermark}
		if len(n.inputs) > 1 && op.Plugin != nil && !op.Plugin.ReadsInputs() {
			j.log.Warn("the operator reads several inputs, but its plugin does not read which input a record came from (it exports no sluice_features; rebuild it with a current SDK): it cannot tell them apart",
				"operator", op.Name, "inputs", len(n.inputs))
		}
		j.nodes = append(j.nodes, n)
		j.byName[op.Name] = n
		var os OperatorStatus
		n.status(&os)
		os.Inputs = refNames(&cfg, g.opInputs[i])
		j.status.Operators = append(j.status.Operators, os)
		if p := poolOf(code); p != nil {
			p.measure = !cfg.noMeasure
		}
		n.meter = newMeter(n, os.Inputs)
		n.publish()
		j.meters = append(j.meters, n.meter)
	}
	for i, s := range cfg.Sinks {
		j.status.Sinks = append(j.status.Sinks, schema.SinkStatus{Name: s.Name, Inputs: refNames(&cfg, g.sinkInputs[i])})
	}
	bounds := batchBounds()
	j.status.BatchSeconds = schema.Histogram{Bounds: bounds, Counts: make([]uint64, len(bounds)+1)}
	for _, i := range g.order {
		j.order = append(j.order, j.nodes[i])
	}
	j.sinkSets = groupSinks(cfg.Sinks, g.sinkInputs)
	j.up = upstream(j.nodes, len(cfg.Sources))
	for _, n := range j.nodes {
		if c, ok := n.code.(clocked); ok {
			if j.clock == nil {
				if j.clock, err = newClock(j, time.Now().UnixNano()); err != nil {
					j.closeStages(ctx)
					return nil, err
				}
			}
			if t := c.tick(); t > 0 && (j.tick == 0 || t < j.tick) {
				j.tick = t
			}
		}
	}
	if j.clock != nil {
		for _, in := range cfg.Sources {
			if w := in.Watermark; w != nil && w.Idle > 0 && (j.tick == 0 || w.Idle/4 < j.tick) {
				j.tick = max(w.Idle/4, time.Millisecond)
			}
		}
	}
	committed := cfg.Store.Positions()
	var first map[string]uint64
	for _, out := range j.rewindable() {
		rw := out.Sink.(connectors.Rewindable)
		off, ok := committed[sinkKey(out.Name)]
		if !ok {
			// None committed yet (a new pipeline or sink): commit where
			// the sink starts, so that a crash in the first batch is cut
			// back too.
			if first == nil {
				first = map[string]uint64{}
			}
			first[sinkKey(out.Name)] = rw.Offset()
			continue
		}
		if err := rw.Rewind(ctx, off); err != nil {
			j.closeStages(ctx)
			return nil, fmt.Errorf("exec: sink %q: %w", out.Name, err)
		}
	}
	if first != nil {
		if err := cfg.Store.Commit(first); err != nil {
			j.closeStages(ctx)
			return nil, fmt.Errorf("exec: commit the sinks' first offsets: %w", err)
		}
	}
	j.parts = make([]*partition, len(cfg.Sources))
	if cfg.Groups != nil {
		if err := j.ownGroups(cfg.Groups); err != nil {
			j.closeStages(ctx)
			return nil, err
		}
	}
	for si, in := range cfg.Sources {
		after := committed[in.Name]
		if p, ok := in.Source.(connectors.Partitioned); ok && j.owned != nil {
			if err := j.openPartitioned(ctx, si, p, committed); err != nil {
				j.closeStages(ctx)
				return nil, err
			}
			j.status.Positions[in.Name] = after
			continue
		}
		if err := in.Source.Open(ctx, after); err != nil {
			j.closeStages(ctx)
			return nil, fmt.Errorf("exec: open source %q: %w", in.Name, err)
		}
		j.status.Positions[in.Name] = after
	}
	return j, nil
}

// deadLetterName names the dead-letter sink among the sinks.
const deadLetterName = "dead_letter"

// lateName names the late records' sink among the sinks.
const lateName = "late"

// sinkKey is the key under which a rewindable sink's offset is committed
// with the source positions. Source names cannot contain "/".
func sinkKey(name string) string { return "sink/" + name }

// rewindable returns the sinks, the dead-letter one included, whose output
// is made exactly once by committing their offsets.
func (j *Job) rewindable() []Output {
	var outs []Output
	for _, o := range j.cfg.Sinks {
		if _, ok := o.Sink.(connectors.Rewindable); ok {
			outs = append(outs, o)
		}
	}
	if _, ok := j.cfg.DeadLetter.(connectors.Rewindable); ok {
		outs = append(outs, Output{Name: deadLetterName, Sink: j.cfg.DeadLetter})
	}
	if _, ok := j.cfg.Late.(connectors.Rewindable); ok {
		outs = append(outs, Output{Name: lateName, Sink: j.cfg.Late})
	}
	return outs
}

// Status returns a snapshot of the job's progress.
func (j *Job) Status() Status {
	j.mu.Lock()
	defer j.mu.Unlock()
	s := j.status
	s.Positions = make(map[string]uint64, len(j.status.Positions))
	for k, v := range j.status.Positions {
		s.Positions[k] = v
	}
	s.BatchSeconds.Bounds = slices.Clone(j.status.BatchSeconds.Bounds)
	s.BatchSeconds.Counts = slices.Clone(j.status.BatchSeconds.Counts)
	s.Operators = append([]OperatorStatus(nil), j.status.Operators...)
	for i := range s.Operators {
		s.Operators[i].Workers = slices.Clone(s.Operators[i].Workers)
		if t := s.Operators[i].Txn; t != nil {
			c := *t
			if c.Last != nil {
				l := *c.Last
				c.Last = &l
			}
			s.Operators[i].Txn = &c
		}
		if w := s.Operators[i].Window; w != nil {
			c := *w
			s.Operators[i].Window = &c
		}
	}
	s.Sources = slices.Clone(j.status.Sources)
	return s
}

// Errors of Decisions.
var (
	// ErrUnknownOperator: no operator of the job has that name.
	ErrUnknownOperator = errors.New("exec: no such operator")
	// ErrNotAdaptive: the operator is not transactional under the adaptive
	// strategy.
	ErrNotAdaptive = errors.New("exec: the operator's strategy is not adaptive")
)

// Decisions returns up to n (all kept when n <= 0) of the latest batches
// of a transactional operator under the adaptive strategy, oldest first:
// what each measured and the decision taken after it. It may be called
// while the job runs.
func (j *Job) Decisions(operator string, n int) ([]adapt.Record, error) {
	nd, ok := j.byName[operator]
	if !ok {
		return nil, fmt.Errorf("%w %q", ErrUnknownOperator, operator)
	}
	d, ok := nd.code.(decider)
	if !ok {
		return nil, fmt.Errorf("%w: operator %q is not transactional", ErrNotAdaptive, operator)
	}
	recs, err := d.decisions(n)
	if err != nil {
		return nil, fmt.Errorf("operator %q: %w", operator, err)
	}
	return recs, nil
}

// ErrNotTransactional: the operator is not transactional.
var ErrNotTransactional = errors.New("exec: the operator is not transactional")

// TPG asks for a copy of the task precedence graph of the next batch of a
// transactional operator that runs under a TPG strategy (of at most a few
// thousand operations) and returns the last copy taken, with ok false
// before any. It may be called while the job runs; the batches pay one
// atomic load for it.
func (j *Job) TPG(operator string) (tpg schema.TPG, ok bool, err error) {
	nd, found := j.byName[operator]
	if !found {
		return schema.TPG{}, false, fmt.Errorf("%w %q", ErrUnknownOperator, operator)
	}
	ts, isTxn := nd.code.(*txnStage)
	if !isTxn {
		return schema.TPG{}, false, fmt.Errorf("%w: operator %q", ErrNotTransactional, operator)
	}
	s := ts.tpg()
	if s == nil {
		return schema.TPG{}, false, nil
	}
	tpg = schema.TPG{Strategy: s.Strategy, Txns: s.Txns, TotalOps: s.TotalOps, Truncated: s.Truncated, Units: s.Units,
		Ops: make([]schema.TPGOp, len(s.Ops)), Edges: make([]schema.TPGEdge, len(s.Edges))}
	for i, o := range s.Ops {
		tpg.Ops[i] = schema.TPGOp{Txn: o.Txn, Index: o.Index, Table: o.Key.Table, Key: o.Key.Key, NonDet: o.NonDet,
			Unit: o.Unit, Order: o.Order, Worker: o.Worker, Aborted: o.Aborted}
	}
	for i, e := range s.Edges {
		tpg.Edges[i] = schema.TPGEdge{From: e.From, To: e.To, Kind: e.Kind.String()}
	}
	return tpg, true, nil
}

func (j *Job) setState(s string, err error) {
	j.mu.Lock()
	j.status.State = s
	if err != nil {
		j.status.Error = err.Error()
	}
	j.mu.Unlock()
	j.notify()
}

// Updated returns a channel that is closed the next time the status
// changes: a batch is committed, or the job's state changes. Callers that
// follow the job (the API's event stream) ask for the channel, then read
// Status, then wait on the channel and ask again: a change between the
// read and the wait closes the channel already in hand. The job does
// nothing for them while none waits.
func (j *Job) Updated() <-chan struct{} {
	for {
		if p := j.updated.Load(); p != nil {
			return *p
		}
		c := make(chan struct{})
		if j.updated.CompareAndSwap(nil, &c) {
			return c
		}
	}
}

// notify closes the channel Updated handed out, if any.
func (j *Job) notify() {
	if p := j.updated.Load(); p != nil && j.updated.CompareAndSwap(p, nil) {
		close(*p)
	}
}

// refNames names the sources and operators rs refers to.
func refNames(cfg *Config, rs []ref) []string {
	names := make([]string, len(rs))
	for i, r := range rs {
		if r.src >= 0 {
			names[i] = cfg.Sources[r.src].Name
		} else {
			names[i] = cfg.Operators[r.op].Name
		}
	}
	return names
}

// chunk is what a reader hands the executor: messages of one source.
type chunk struct {
	src  int
	msgs []connectors.Message
	// delivered is a partitioned source's Delivered after the read, and
	// epoch the source's epoch then (groups.go); they hold for the last
	// piece.
	delivered, epoch uint64
	// buf is the buffer msgs lies in, up to the messages the read filled
	// (its capacity is the whole buffer), to recycle once its messages
	// are in a batch: set on a chunk's last piece.
	buf []connectors.Message
	// read is when the chunk was read, since the job's epoch.
	read time.Duration
}

// Run processes batches until the sources end (finite sources: returns nil
// once everything is committed) or ctx is cancelled (drains what was read,
// commits it and returns nil). It returns an error when the job cannot go on:
// a source or sink fails, a commit fails, or an operator with the stop
// policy fails on a record.
func (j *Job) Run(ctx context.Context) (err error) {
	j.runCtx = ctx
	defer func() {
		j.failChanges(context.WithoutCancel(ctx))
		j.closeStages(context.WithoutCancel(ctx))
		if errors.Is(err, errQuarantineStop) {
			j.log.Warn("stopped on request while an operator was quarantined; the batch in hand was not committed and will be read again")
			err = nil
		}
		if err != nil {
			j.setState("failed", err)
		} else {
			j.setState("stopped", nil)
		}
	}()
	j.setState("running", nil)

	// Readers stop when ctx is done; the executor then drains what they
	// handed over. runCtx cancels the readers if the executor fails.
	readCtx, cancelRead := context.WithCancel(ctx)
	defer cancelRead()
	queue := make(chan chunk, 4*len(j.cfg.Sources))
	j.free = make(chan []connectors.Message, cap(queue)+len(j.cfg.Sources)+1)
	readErr := make(chan error, len(j.cfg.Sources))
	var readers sync.WaitGroup
	for i, in := range j.cfg.Sources {
		readers.Add(1)
		go func() {
			defer readers.Done()
			readErr <- j.read(readCtx, i, in, queue)
		}()
	}
	go func() { readers.Wait(); close(queue) }()
	defer func() {
		cancelRead()
		for range queue { // let blocked readers finish
		}
	}()

	// A batch read before a stop request is processed to the end: guest
	// calls must not be cut short by the cancellation that asked for a drain.
	procCtx := context.WithoutCancel(ctx)
	c := j.startCommitter(procCtx)
	defer c.stop()
	j.commit = c
	defer func() { j.commit = nil }()
	// Two batches: one processed while the other is written and committed.
	// k counts the batches handed to the committer: batches[k%2] is the
	// one not in flight. A batch that ends up empty (every record read
	// again, or of a key group not owned here) is not handed over, and is
	// filled again.
	batches := [2]*batch{newBatch(j.cfg.Sources), newBatch(j.cfg.Sources)}
	k := 0
	j.lastCommit = time.Now()
	for {
		b := batches[k%2]
		more, err := j.collect(procCtx, queue, b)
		if err != nil {
			return c.first(err)
		}
		if b.commitOnly {
			if err := j.commitTail(procCtx); err != nil {
				return c.first(err)
			}
		} else if len(b.in) > 0 || len(b.dead) > 0 || b.tick {
			h, err := j.process(procCtx, b)
			if err != nil {
				return c.first(err)
			}
			if err := c.submit(h); err != nil {
				return err
			}
			k++
		}
		if !more {
			break
		}
	}
	if j.clock != nil && ctx.Err() == nil {
		// Every source ended: event time is over, and every window still
		// open fires (a batch with no input and an infinite watermark),
		// in the batch that is not in flight once the other is committed.
		if err := c.wait(); err != nil {
			return err
		}
		b := batches[k%2]
		b.reset()
		j.clock.begin(b, time.Now().UnixNano())
		b.flush = true
		h, err := j.process(procCtx, b)
		if err != nil {
			return c.first(err)
		}
		if err := c.submit(h); err != nil {
			return err
		}
	}
	// Every batch read was processed: what a commit interval left
	// uncommitted is committed now.
	if err := j.commitTail(procCtx); err != nil {
		return c.first(err)
	}
	if err := c.wait(); err != nil {
		return err
	}
	close(readErr)
	for err := range readErr {
		if err != nil {
			return err
		}
	}
	if ctx.Err() != nil {
		j.log.Info("stopped on request; everything read was committed")
	} else {
		j.log.Info("all sources ended; everything was committed")
	}
	return nil
}

// read runs one source until it ends, fails or ctx is done.
func (j *Job) read(ctx context.Context, i int, in Input, queue chan<- chunk) error {
	src := in.Source
	size := min(j.batchSize, 4096)
	records := j.m.sourceRecords.WithLabelValues(in.Name)
	for {
		var buf []connectors.Message
		select {
		case buf = <-j.free:
		default:
			buf = make([]connectors.Message, size)
		}
		n, err := src.Read(ctx, buf[:size])
		if n > 0 {
			records.Add(float64(n))
			j.reads[i].Add(uint64(n))
			// buf[:n]: recycle clears what the read filled, not the
			// whole buffer.
			c := chunk{src: i, msgs: buf[:n], buf: buf[:n], read: time.Since(j.epoch)}
			if p := j.parts[i]; p != nil {
				c.epoch, c.delivered = p.afterRead()
			}
			queue <- c
		} else {
			j.recycle(buf)
		}
		switch {
		case err == nil:
		case errors.Is(err, io.EOF):
			j.log.Debug("source ended", "source", in.Name)
			return nil
		case ctx.Err() != nil:
			return nil
		default:
			return fmt.Errorf("exec: source %q: %w", in.Name, err)
		}
	}
}

// collect fills b from the queue: it blocks for the first chunk, then takes
// more until the batch is full or the linger time has passed (never, with
// no linger). It reports false when the queue is closed (all readers done)
// and drained.
//
// A batch is never larger than batchSize: the rest of a chunk that would
// overflow it is kept in j.spill for the next batch, so that a
// transactional operator's punctuation holds however sources chunk their
// reads.
//
// Swaps queued while it waits for the first chunk are installed at once:
// between batches is a batch boundary.
func (j *Job) collect(ctx context.Context, queue <-chan chunk, b *batch) (bool, error) {
	b.reset()
	if err := j.applyChanges(ctx, false); err != nil {
		return false, err
	}
	var tick <-chan time.Time
	if j.tick > 0 {
		t := time.NewTimer(j.tick)
		defer t.Stop()
		tick = t.C
	}
	due := j.commitTimer()
	if due != nil {
		defer due.Stop()
	}
	if j.clock != nil {
		j.clock.begin(b, time.Now().UnixNano())
	}
	for len(j.spill.msgs) == 0 {
		select {
		case c, ok := <-queue:
			if !ok {
				return false, nil
			}
			j.spill = c
		case <-j.wake:
			if err := j.applyChanges(ctx, false); err != nil {
				return false, err
			}
		case <-j.commitAlarm():
			// A batch handed over failed; Run returns its error.
			return false, errFinishFailed
		case <-timerC(due):
			// Nothing came while state waited uncommitted: commit it.
			b.commitOnly = true
			return true, nil
		case <-tick:
			// Nothing came for a while: a batch without input, so that
			// windows of processing time fire and idle sources let event
			// time go on.
			b.tick = true
			return true, nil
		}
	}
	j.add(b, j.take(b))
	var expired <-chan time.Time
	if j.linger > 0 {
		timer := time.NewTimer(j.linger)
		defer timer.Stop()
		expired = timer.C
	}
	for len(b.in)+len(b.dead) < j.batchSize {
		if len(j.spill.msgs) > 0 {
			j.add(b, j.take(b))
			continue
		}
		select {
		case c, ok := <-queue:
			if !ok {
				return false, nil
			}
			j.spill = c
		case <-expired:
			return true, nil
		}
	}
	return true, nil
}

// errFinishFailed stops the executor when the committer fails; the
// committer's own error is the one Run returns.
var errFinishFailed = errors.New("exec: a batch handed to the committer failed")

// commitAlarm returns the committer's alarm, closed when a batch handed
// over fails, or nil outside Run.
func (j *Job) commitAlarm() <-chan struct{} {
	if j.commit == nil {
		return nil
	}
	return j.commit.alarm
}

// take returns as much of j.spill as fits in the batch and keeps the rest.
func (j *Job) take(b *batch) chunk {
	c := j.spill
	room := j.batchSize - len(b.in) - len(b.dead)
	if room >= len(c.msgs) {
		j.spill = chunk{}
		return c
	}
	j.spill = chunk{src: c.src, msgs: c.msgs[room:], buf: c.buf, delivered: c.delivered, epoch: c.epoch, read: c.read}
	return chunk{src: c.src, msgs: c.msgs[:room], read: c.read}
}

// recycle hands a read buffer back to the readers (the records in it were
// copied into a batch: their bytes are their own).
func (j *Job) recycle(buf []connectors.Message) {
	if buf == nil {
		return
	}
	clear(buf) // let go of the records' bytes: buf is what a read filled
	select {
	case j.free <- buf:
	default:
	}
}

// add appends a chunk's messages to the batch. Messages the source could not
// decode go straight to the dead letters.
func (j *Job) add(b *batch, c chunk) {
	j.taken[c.src].Add(uint64(len(c.msgs)))
	part := j.parts[c.src]
	current := part != nil && c.epoch == part.epoch.Load()
	// Without partitions the source's position advances once per chunk,
	// to the highest the chunk holds.
	var high uint64
	for i := range c.msgs {
		m := &c.msgs[i]
		if part != nil {
			if !part.take(j, m) {
				continue // read again, of a group not owned here, or before it was
			}
			b.touched[c.src] = true
			if !current {
				// Read across a change of groups: its Delivered does not
				// vouch for the record, so its group's floor is committed.
				part.floors[m.Group] = m.Position
				b.positions[floorKey(b.srcNames[c.src], m.Group)] = m.Position
			}
		} else {
			high = max(high, m.Position)
		}
		if m.Err != nil {
			b.dead = append(b.dead, deadLetter{rec: m.Record, src: c.src, pos: m.Position, stage: -1, err: m.Err})
			continue
		}
		m.Record.Origin = uint32(len(b.in))
		b.in = append(b.in, m.Record)
		b.prov = append(b.prov, origin{src: int32(c.src), pos: m.Position})
		if !j.cfg.noMeasure {
			b.readAt = append(b.readAt, int64(c.read))
		}
		if j.clock != nil {
			j.clock.observe(b, c.src, m.Record.Time)
		}
	}
	if part == nil && len(c.msgs) > 0 {
		b.advance(c.src, high)
	}
	if current && c.buf != nil {
		b.complete(c.src, b.srcNames[c.src], c.delivered)
		part.advance(c.delivered)
	}
	j.recycle(c.buf)
}

// process runs one batch through the graph and prepares it for finish:
// its outputs copied, its state captured for the commit.
func (j *Job) process(ctx context.Context, b *batch) (*handoff, error) {
	start := time.Now()
	_ = j.applyChanges(ctx, true) // with a batch in hand it commits nothing: no error
	for _, n := range j.nodes {
		if l, ok := n.code.(lasting); ok {
			l.nextBatch()
		}
	}
	if j.clock != nil {
		j.clock.end(j, b)
	}
	idx := b.idx0()
	for k, n := range j.order {
		recs, idx := j.gather(b, n.inputs, &n.merged, &n.mergedIdx, idx)
		recs, idx = j.fit(b, n, recs, idx)
		ck, isClocked := n.code.(clocked)
		if len(recs) == 0 && !isClocked {
			n.recs, n.idx = nil, nil
			continue
		}
		if isClocked {
			end := j.marks(b, n, j.up[slices.Index(j.nodes, j.order[k])], idx)
			n.wm = end
			if b.flush {
				end = math.MaxInt64
			}
			ck.setClock(n.wms, end, b.now)
		}
		n.in += uint64(len(recs))
		n.m.in.Add(float64(len(recs)))
		runStart := time.Now()
		out, rejects, err := j.runNode(ctx, n, recs)
		if err != nil {
			return nil, err
		}
		runEnd := time.Now()
		j.timeBatch(n, runEnd.Sub(runStart))
		if !j.cfg.noMeasure {
			j.measureRun(n, b, idx, runStart, runEnd)
		}
		var made []madeRecord
		if isClocked {
			made = ck.made()
		}
		for _, r := range rejects {
			var o origin
			var rec abi.Record
			if r.Index < len(recs) {
				o, rec = b.prov[idx[r.Index]], recs[r.Index]
			} else {
				// A record the stage made and could not finish (a join's
				// pair its plugin rejected): an input of its own, as
				// its outputs would have been.
				m := made[r.Index-len(recs)]
				o, rec = origin{src: -1, pos: uint64(len(b.made))}, m.rec
				b.made = append(b.made, m)
			}
			if n.op.StopOnError {
				return nil, fmt.Errorf("exec: operator %q failed on %s and its error policy is stop: %w",
					n.op.Name, j.describe(b, o), r.Err)
			}
			b.dead = append(b.dead, deadLetter{rec: rec, src: int(o.src), pos: o.pos, stage: slices.Index(j.nodes, n), err: r.Err,
				plugin: n.op.pluginName(), version: n.version})
		}
		n.outIdx = n.outIdx[:0]
		if isClocked {
			for _, l := range ck.late() {
				o := b.prov[idx[l.index]]
				b.late = append(b.late, lateLetter{rec: recs[l.index], o: o, stage: slices.Index(j.nodes, n), reason: l.reason})
			}
		}
		n.madeProv = slices.Grow(n.madeProv[:0], len(made))[:len(made)]
		for k := range n.madeProv {
			n.madeProv[k] = -1
		}
		for i := range out {
			if o := int(out[i].Origin); o >= len(recs) {
				// Made at a batch boundary (a fired window, a join's
				// pair): an input of its own, named by the id the stage
				// gave it, whatever number of outputs it has.
				k := o - len(recs)
				if n.madeProv[k] < 0 {
					b.prov = append(b.prov, origin{src: -1, pos: uint64(len(b.made))})
					b.made = append(b.made, made[k])
					n.madeProv[k] = int32(len(b.prov) - 1)
				}
				n.outIdx = append(n.outIdx, n.madeProv[k])
				continue
			}
			n.outIdx = append(n.outIdx, idx[out[i].Origin])
		}
		n.recs, n.idx = out, n.outIdx
		n.out += uint64(len(out))
		n.m.out.Add(float64(len(out)))
	}

	// Outputs, with ids derived from the input they came from, copied
	// out of the operators' buffers (which the next batch reuses while
	// this one is written), unless every operator the sinks read keeps
	// its outputs until the batch after next (lasting).
	h := &handoff{b: b, start: start}
	b.arena, b.hdrs = b.arena[:0], b.hdrs[:0]
	if len(b.prov) > len(b.ordinal) {
		b.ordinal = slices.Grow(b.ordinal[:0], len(b.prov))[:len(b.prov)]
	}
	for _, set := range j.sinkSets {
		recs, idx := j.gather(b, set.inputs, &set.merged, &set.mergedIdx, b.idx)
		outs := slices.Grow(b.outs[len(b.outs):], len(recs))[:0]
		clear(b.ordinal)
		keep := j.lasting(set.inputs)
		for i := range recs {
			in := idx[i]
			n := b.ordinal[in]
			b.ordinal[in]++
			out := connectors.Out{Record: recs[i]}
			if !keep {
				out.Record = b.copy(&recs[i])
			}
			if j.needIDs {
				out.ID = j.outputID(b, b.prov[in], n)
			}
			outs = append(outs, out)
		}
		b.outs = append(b.outs, outs...)
		h.sets = append(h.sets, setOuts{sinks: set.sinks, n: len(outs)})
		h.total += len(outs)
	}
	h.dead = j.deadLetters(b)
	h.late = j.lateLetters(b)
	// Transactional change sets are applied now, after the outputs are
	// copied: an output may alias a value a change overwrites.
	for _, n := range j.nodes {
		if err := n.code.apply(); err != nil {
			return nil, err
		}
	}
	if j.commitDue(b) {
		pending, err := j.prepare()
		if err != nil {
			return nil, err
		}
		h.pending = pending
	} else {
		j.tail = true
	}
	for _, n := range j.nodes {
		n.code.committed()
	}
	h.ops = make([]OperatorStatus, len(j.nodes))
	h.synced = make([]uint64, len(j.nodes))
	for i, n := range j.nodes {
		n.status(&h.ops[i])
		h.synced[i] = n.synced
	}
	if !j.cfg.noMeasure {
		j.mu.Lock()
		for _, n := range j.nodes {
			n.publish()
		}
		j.mu.Unlock()
	}
	if j.clock != nil {
		h.sources = j.clock.status(j, b.now)
	}
	return h, nil
}

// handoff is a processed batch on its way to the sinks and the commit.
type handoff struct {
	b     *batch
	start time.Time
	sets  []setOuts // b.outs in runs, one per sink set
	total int
	dead  []connectors.Out
	late  []connectors.Out
	// pending is the batch's commit: nil when a commit interval defers
	// it, in which case the next commit carries the batch's positions.
	pending *state.PendingCommit
	// commitOnly: no batch, only the commit of deferred ones (commitTail).
	commitOnly bool
	// ops is the operators' status after the batch, sources the
	// sources' event time; synced is each node's synced count when ops
	// was taken.
	ops     []OperatorStatus
	synced  []uint64
	sources []schema.SourceStatus
}

// setOuts is the run of a handoff's outputs that some sinks write.
type setOuts struct {
	sinks []Output
	n     int
}

// gather returns the stream of records that inputs name, with the batch
// input each descends from, in batch input order (ties in the order of
// inputs), each record's Input set to the position of its input in
// inputs. One operator's stream is returned as it is; several are merged
// into *merged and *mergedIdx. idx0 is the batch's identity mapping.
func (j *Job) gather(b *batch, inputs []ref, merged *[]abi.Record, mergedIdx *[]int32, idx0 []int32) ([]abi.Record, []int32) {
	if allSources(inputs, len(j.cfg.Sources)) {
		if len(inputs) > 1 {
			// The batch as read; each record's input is its source's position.
			*merged = append((*merged)[:0], b.in...)
			for i := range *merged {
				(*merged)[i].Input = uint16(b.prov[i].src)
			}
			return *merged, idx0
		}
		return b.in, idx0
	}
	streams := make([]stream, len(inputs))
	for k, r := range inputs {
		streams[k] = j.stream(b, r)
	}
	if len(streams) == 1 {
		return streams[0].recs, streams[0].idx
	}
	*merged, *mergedIdx = (*merged)[:0], (*mergedIdx)[:0]
	next := make([]int, len(streams))
	for {
		best := -1
		for k, s := range streams {
			if next[k] < len(s.recs) && (best < 0 || s.idx[next[k]] < streams[best].idx[next[best]]) {
				best = k
			}
		}
		if best < 0 {
			return *merged, *mergedIdx
		}
		s := streams[best]
		r := s.recs[next[best]]
		r.Input = uint16(best)
		*merged = append(*merged, r)
		*mergedIdx = append(*mergedIdx, s.idx[next[best]])
		next[best]++
	}
}

// lasting reports whether every one of inputs is an operator whose stage
// keeps its outputs until the batch after next, so that a batch's outputs
// need no copy to outlive the next batch's run.
func (j *Job) lasting(inputs []ref) bool {
	for _, r := range inputs {
		if r.op < 0 {
			return false
		}
		if _, ok := j.nodes[r.op].code.(lasting); !ok {
			return false
		}
	}
	return true
}

// stream is a stream of records with the batch input each descends from.
type stream struct {
	recs []abi.Record
	idx  []int32
}

// stream returns r's records in this batch.
func (j *Job) stream(b *batch, r ref) stream {
	if r.op >= 0 {
		n := j.nodes[r.op]
		return stream{n.recs, n.idx}
	}
	return b.source(r.src)
}

// fit sends the records over n's size limit (abi.DataSize: key, value and
// headers) to the dead letters and returns the others.
func (j *Job) fit(b *batch, n *node, recs []abi.Record, idx []int32) ([]abi.Record, []int32) {
	limit := n.op.MaxRecordBytes
	if limit <= 0 {
		return recs, idx
	}
	over := false
	for i := range recs {
		if abi.DataSize(&recs[i]) > limit {
			over = true
			break
		}
	}
	if !over {
		return recs, idx
	}
	n.fit, n.fitIdx = n.fit[:0], n.fitIdx[:0]
	for i := range recs {
		if size := abi.DataSize(&recs[i]); size > limit {
			o := b.prov[idx[i]]
			b.dead = append(b.dead, deadLetter{rec: recs[i], src: int(o.src), pos: o.pos, stage: slices.Index(j.nodes, n),
				err: fmt.Errorf("record of %d bytes (key, value and headers) is over the operator's limit of %d bytes (limits.max_record_bytes)", size, limit)})
			continue
		}
		n.fit, n.fitIdx = append(n.fit, recs[i]), append(n.fitIdx, idx[i])
	}
	return n.fit, n.fitIdx
}

// sinkSet is the sinks that write the same streams.
type sinkSet struct {
	inputs []ref
	sinks  []Output
	// Scratch reused from batch to batch.
	merged    []abi.Record
	mergedIdx []int32
}

// groupSinks groups sinks by the streams they read, in sink order.
func groupSinks(sinks []Output, inputs [][]ref) []*sinkSet {
	var sets []*sinkSet
	for i, s := range sinks {
		k := slices.IndexFunc(sets, func(set *sinkSet) bool { return slices.Equal(set.inputs, inputs[i]) })
		if k < 0 {
			sets = append(sets, &sinkSet{inputs: inputs[i]})
			k = len(sets) - 1
		}
		sets[k].sinks = append(sets[k].sinks, s)
	}
	return sets
}

func (j *Job) outputID(b *batch, o origin, n uint32) string {
	buf := make([]byte, 0, len(j.cfg.Name)+32)
	buf = append(buf, j.cfg.Name...)
	buf = append(buf, '/')
	if o.src < 0 {
		buf = append(buf, b.made[o.pos].id...)
		buf = append(buf, '/')
		buf = strconv.AppendUint(buf, uint64(n), 10)
		return string(buf)
	}
	buf = append(buf, j.cfg.Sources[o.src].Name...)
	buf = append(buf, '/')
	buf = strconv.AppendUint(buf, o.pos, 10)
	buf = append(buf, '/')
	buf = strconv.AppendUint(buf, uint64(n), 10)
	return string(buf)
}

// Dead-letter headers.
const (
	HeaderError    = "Sluice-Error"
	HeaderOperator = "Sluice-Operator"
	HeaderPlugin   = "Sluice-Plugin"
	// HeaderVersion is the version of the plugin that failed.
	HeaderVersion  = "Sluice-Plugin-Version"
	HeaderSource   = "Sluice-Source"
	HeaderPosition = "Sluice-Position"
)

// deadLetters makes the batch's dead letters, their bytes copied, with
// the error and where the record came from in headers, and counts them.
func (j *Job) deadLetters(b *batch) []connectors.Out {
	if len(b.dead) == 0 {
		return nil
	}
	// In the order the sources delivered them, whichever operator failed
	// on them (or none: undecodable input).
	slices.SortStableFunc(b.dead, func(x, y deadLetter) int {
		return cmp.Or(cmp.Compare(x.src, y.src), cmp.Compare(x.pos, y.pos))
	})
	outs := make([]connectors.Out, 0, len(b.dead))
	for i, d := range b.dead {
		r := copyRecord(d.rec)
		r.Origin, r.Input = 0, 0
		op, plug, version := "", d.plugin, d.version
		if d.stage >= 0 && d.stage < len(j.nodes) {
			n := j.nodes[d.stage]
			op = n.op.Name
			if plug == "" {
				plug, version = n.op.pluginName(), n.version
			}
			n.dead++
			n.m.dead.Inc()
		}
		src, pos := j.where(b, origin{src: int32(d.src), pos: d.pos})
		r.Headers = append(r.Headers,
			abi.Header{Name: []byte(HeaderError), Value: []byte(d.err.Error())},
			abi.Header{Name: []byte(HeaderOperator), Value: []byte(op)},
			abi.Header{Name: []byte(HeaderPlugin), Value: []byte(plug)},
			abi.Header{Name: []byte(HeaderVersion), Value: []byte(version)},
			abi.Header{Name: []byte(HeaderSource), Value: []byte(src)},
			abi.Header{Name: []byte(HeaderPosition), Value: []byte(pos)},
		)
		j.log.Warn("record dead-lettered", "operator", op, "source", src, "position", pos, "err", d.err)
		outs = append(outs, connectors.Out{Record: r, ID: j.cfg.Name + "/dead/" + src + "/" + pos + "/" + strconv.Itoa(i)})
	}
	return outs
}

// writeDead writes and flushes dead letters.
func (j *Job) writeDead(ctx context.Context, outs []connectors.Out) error {
	if len(outs) == 0 {
		return nil
	}
	if j.cfg.DeadLetter == nil {
		return fmt.Errorf("exec: %d records failed and the job has no dead-letter sink: %s", len(outs), header(outs[0].Record, HeaderError))
	}
	if err := j.cfg.DeadLetter.Write(ctx, outs); err != nil {
		return fmt.Errorf("exec: dead-letter sink: %w", err)
	}
	if err := j.cfg.DeadLetter.Flush(ctx); err != nil {
		return fmt.Errorf("exec: dead-letter sink: flush: %w", err)
	}
	return nil
}

// header returns the value of r's header name, "" when it has none.
func header(r abi.Record, name string) string {
	for _, h := range r.Headers {
		if string(h.Name) == name {
			return string(h.Value)
		}
	}
	return ""
}

// Close releases the operators' plugin instances and transactional
// operators of a job that is not run; Run does it itself when it returns,
// and Close after that does nothing. Close must not be called while Run
// is running.
func (j *Job) Close(ctx context.Context) error {
	j.failChanges(ctx)
	var errs []error
	for _, n := range j.nodes {
		errs = append(errs, n.close(ctx))
	}
	j.nodes, j.order = nil, nil
	return errors.Join(errs...)
}

func (j *Job) closeStages(ctx context.Context) {
	for _, n := range j.nodes {
		if err := n.close(ctx); err != nil {
			j.log.Warn("closing an operator failed", "err", err)
		}
	}
	j.nodes, j.order = nil, nil
}

// origin is where a batch input came from.
type origin struct {
	src int32
	pos uint64
}

type deadLetter struct {
	rec   abi.Record
	src   int
	pos   uint64
	stage int // operator index, -1 for source decoding errors
	err   error
	// plugin and version name the code that failed ("": the stage's
	// current code).
	plugin, version string
}

// batch holds one batch's data; it is reused from batch to batch.
type batch struct {
	in   []abi.Record
	prov []origin
	// readAt is when each of in was read (its chunk's read time), since
	// the job's epoch; empty when the job does not measure.
	readAt []int64
	// made are the inputs no source delivered (fired windows): an origin
	// with src -1 is made[pos].
	made      []madeRecord
	dead      []deadLetter
	late      []lateLetter
	outs      []connectors.Out
	ordinal   []uint32
	idx       []int32
	positions map[string]uint64
	touched   []bool
	srcNames  []string
	// arena and hdrs hold the bytes and headers of the batch's outputs,
	// copied out of the operators' buffers.
	arena []byte
	hdrs  []abi.Header
	// srcs are the per-source streams, made when the graph reads a source
	// on its own (made is whether srcs[i] is this batch's).
	srcs    []stream
	srcMade []bool
	// Event time (watermark.go): the processing time the batch was read
	// at, and each input's source watermark after it. tick: a batch of no
	// input, run for time's sake; flush: the last batch, after every
	// source ended, which fires every window.
	now         int64
	after       []int64
	tick, flush bool
	// commitOnly: collect found nothing to read while state waited
	// uncommitted (commit.go); the batch is empty.
	commitOnly bool
}

func newBatch(sources []Input) *batch {
	b := &batch{positions: map[string]uint64{}, touched: make([]bool, len(sources)),
		srcs: make([]stream, len(sources)), srcMade: make([]bool, len(sources))}
	for _, s := range sources {
		b.srcNames = append(b.srcNames, s.Name)
	}
	return b
}

func (b *batch) reset() {
	b.in, b.prov, b.dead, b.outs = b.in[:0], b.prov[:0], b.dead[:0], b.outs[:0]
	b.readAt = b.readAt[:0]
	b.made, b.late = b.made[:0], b.late[:0]
	b.tick, b.flush, b.commitOnly = false, false, false
	clear(b.positions)
	clear(b.touched)
	clear(b.srcMade)
}

// copy returns r with its bytes copied into the batch's arenas. A copy
// that outgrows them moves to new ones; the records copied before keep
// pointing into the old ones, which stay alive through them.
func (b *batch) copy(r *abi.Record) abi.Record {
	n := len(r.Key) + len(r.Value)
	for _, h := range r.Headers {
		n += len(h.Name) + len(h.Value)
	}
	if cap(b.arena)-len(b.arena) < n {
		b.arena = make([]byte, 0, max(2*cap(b.arena), n, 64<<10))
	}
	bytes := func(v []byte) []byte {
		if v == nil {
			return nil
		}
		at := len(b.arena)
		b.arena = append(b.arena, v...)
		return b.arena[at:len(b.arena):len(b.arena)]
	}
	c := abi.Record{Time: r.Time, Key: bytes(r.Key), Value: bytes(r.Value)}
	if len(r.Headers) > 0 {
		if cap(b.hdrs)-len(b.hdrs) < len(r.Headers) {
			b.hdrs = make([]abi.Header, 0, max(2*cap(b.hdrs), len(r.Headers), 256))
		}
		at := len(b.hdrs)
		for _, h := range r.Headers {
			b.hdrs = append(b.hdrs, abi.Header{Name: bytes(h.Name), Value: bytes(h.Value)})
		}
		c.Headers = b.hdrs[at:len(b.hdrs):len(b.hdrs)]
	}
	return c
}

// source returns source src's records in this batch.
func (b *batch) source(src int) stream {
	if !b.srcMade[src] {
		s := stream{b.srcs[src].recs[:0], b.srcs[src].idx[:0]}
		for i := range b.in {
			if int(b.prov[i].src) == src {
				s.recs, s.idx = append(s.recs, b.in[i]), append(s.idx, int32(i))
			}
		}
		b.srcs[src], b.srcMade[src] = s, true
	}
	return b.srcs[src]
}

// advance records that source src has been read up to pos.
func (b *batch) advance(src int, pos uint64) {
	b.touched[src] = true
	if name := b.srcNames[src]; pos > b.positions[name] {
		b.positions[name] = pos
	}
}

// idx0 returns the identity mapping for the batch inputs, and sizes the
// per-input ordinal counters.
func (b *batch) idx0() []int32 {
	b.idx = b.idx[:0]
	for i := range b.in {
		b.idx = append(b.idx, int32(i))
	}
	if cap(b.ordinal) < len(b.in) {
		b.ordinal = make([]uint32, len(b.in))
	}
	b.ordinal = b.ordinal[:len(b.in)]
	return b.idx
}
