package exec

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/sluicehq/sluice/abi"
	"github.com/sluicehq/sluice/connectors"
	"github.com/sluicehq/sluice/host/api/schema"
	"github.com/sluicehq/sluice/host/plugin"
	"github.com/sluicehq/sluice/state"
	"github.com/sluicehq/sluice/txn/adapt"
)

// Operator is one stage of the chain.
type Operator struct {
	Name string
	Kind plugin.Kind
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
}

// Output is a named sink.
type Output struct {
	Name string
	Sink connectors.Sink
}

// Config is what a Job runs.
type Config struct {
	// Name of the pipeline; part of every output's de-duplication id.
	Name       string
	Sources    []Input
	Operators  []Operator
	Sinks      []Output
	DeadLetter connectors.Sink
	Store      *state.Store
	// BatchSize is the most records in a batch (default 1024) and Linger
	// how long a batch waits for more once it has one (default 5ms). A
	// job with a transactional operator ignores both and batches by the
	// operator's punctuation (Txn.Events and Txn.Interval).
	BatchSize int
	Linger    time.Duration
	Logger    *slog.Logger
	Metrics   *Metrics
	// OnRollback, when set, is told of every automatic rollback: the
	// operator, the version that failed, the version put back and why.
	// It is called on the executor's goroutine, between batches.
	OnRollback func(operator, failed, restored string, reason error)
}

// Job is a running pipeline.
type Job struct {
	cfg    Config
	log    *slog.Logger
	m      *Metrics
	stages []*stage
	// byName maps each operator's name to its stage, set by New and never
	// changed, for the readers of Decisions.
	byName map[string]*stage
	// needIDs is whether any sink uses output ids (connectors.IDUser).
	needIDs bool
	// batchSize and linger cut batches (linger 0: no time bound).
	batchSize int
	linger    time.Duration

	mu     sync.Mutex
	status Status

	// Swaps queued for the next batch boundary (swap.go); wake tells the
	// executor one is queued; ended is set when Run returns.
	swapMu sync.Mutex
	swaps  []*swapReq
	ended  bool
	wake   chan struct{}
	// runCtx is Run's context, for the waits of a quarantine.
	runCtx context.Context
}

// Status is a snapshot of a job's progress, the answer of the API's
// GET /api/v1/pipeline.
type Status = schema.Status

// OperatorStatus describes one operator in a Status.
type OperatorStatus = schema.OperatorStatus

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
		wake: make(chan struct{}, 1), runCtx: context.Background()}
	if transactional {
		j.batchSize, j.linger = events, interval
	}
	j.status = Status{Pipeline: cfg.Name, State: "starting", Positions: map[string]uint64{}}
	for _, o := range cfg.Sinks {
		if u, ok := o.Sink.(connectors.IDUser); ok && u.UsesIDs() {
			j.needIDs = true
		}
	}
	for i := range cfg.Operators {
		st, err := newStage(ctx, &cfg.Operators[i], cfg.Store)
		if err != nil {
			j.closeStages(ctx)
			return nil, err
		}
		staged = i + 1
		j.stages = append(j.stages, st)
		if j.byName == nil {
			j.byName = map[string]*stage{}
		}
		j.byName[st.op.Name] = st
		j.m.addOperator(st.op.Name, st.txn != nil)
		os := OperatorStatus{Name: st.op.Name, Kind: string(st.op.Kind), Plugin: st.op.pluginName(), Parallelism: st.parallelism(), Version: st.version}
		if st.txn != nil {
			t := st.txn.status
			os.Txn = &t
		}
		j.status.Operators = append(j.status.Operators, os)
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
		if err := rw.Rewind(off); err != nil {
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
	for _, in := range cfg.Sources {
		after := committed[in.Name]
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
	s.Operators = append([]OperatorStatus(nil), j.status.Operators...)
	for i := range s.Operators {
		if t := s.Operators[i].Txn; t != nil {
			c := *t
			if c.Last != nil {
				l := *c.Last
				c.Last = &l
			}
			s.Operators[i].Txn = &c
		}
	}
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
	st, ok := j.byName[operator]
	switch {
	case !ok:
		return nil, fmt.Errorf("%w %q", ErrUnknownOperator, operator)
	case st.txn == nil:
		return nil, fmt.Errorf("%w: operator %q is not transactional", ErrNotAdaptive, operator)
	}
	recs, err := st.txn.decisions(n)
	if err != nil {
		return nil, fmt.Errorf("operator %q: %w", operator, err)
	}
	return recs, nil
}

func (j *Job) setState(s string, err error) {
	j.mu.Lock()
	j.status.State = s
	if err != nil {
		j.status.Error = err.Error()
	}
	j.mu.Unlock()
}

// chunk is what a reader hands the executor: messages of one source.
type chunk struct {
	src  int
	msgs []connectors.Message
}

// Run processes batches until the sources end (finite sources: returns nil
// once everything is committed) or ctx is cancelled (drains what was read,
// commits it and returns nil). It returns an error when the job cannot go on:
// a source or sink fails, a commit fails, or an operator with the stop
// policy fails on a record.
func (j *Job) Run(ctx context.Context) (err error) {
	j.runCtx = ctx
	defer func() {
		j.failSwaps(context.WithoutCancel(ctx))
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
	b := newBatch(j.cfg.Sources)
	for {
		more, err := j.collect(procCtx, queue, b)
		if err != nil {
			return err
		}
		if len(b.in) > 0 || len(b.dead) > 0 {
			if err := j.process(procCtx, b); err != nil {
				return err
			}
		}
		if !more {
			break
		}
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
	for {
		buf := make([]connectors.Message, size)
		n, err := src.Read(ctx, buf)
		if n > 0 {
			j.m.sourceRecords.WithLabelValues(in.Name).Add(float64(n))
			queue <- chunk{src: i, msgs: buf[:n]}
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
// overflow it is kept in b.spill for the next batch, so that a
// transactional operator's punctuation holds however sources chunk their
// reads.
//
// Swaps queued while it waits for the first chunk are installed at once:
// between batches is a batch boundary.
func (j *Job) collect(ctx context.Context, queue <-chan chunk, b *batch) (bool, error) {
	b.reset()
	for len(b.spill.msgs) == 0 {
		select {
		case c, ok := <-queue:
			if !ok {
				return false, nil
			}
			b.spill = c
		case <-j.wake:
			j.installSwaps(ctx)
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
		if len(b.spill.msgs) > 0 {
			j.add(b, j.take(b))
			continue
		}
		select {
		case c, ok := <-queue:
			if !ok {
				return false, nil
			}
			b.spill = c
		case <-expired:
			return true, nil
		}
	}
	return true, nil
}

// take returns as much of b.spill as fits in the batch and keeps the rest.
func (j *Job) take(b *batch) chunk {
	c := b.spill
	room := j.batchSize - len(b.in) - len(b.dead)
	if room >= len(c.msgs) {
		b.spill = chunk{}
		return c
	}
	b.spill = chunk{src: c.src, msgs: c.msgs[room:]}
	return chunk{src: c.src, msgs: c.msgs[:room]}
}

// add appends a chunk's messages to the batch. Messages the source could not
// decode, and records over the first operator's size limit, go straight to
// the dead letters.
func (j *Job) add(b *batch, c chunk) {
	limit := 0
	if len(j.stages) > 0 {
		limit = j.stages[0].op.MaxRecordBytes
	}
	for i := range c.msgs {
		m := &c.msgs[i]
		b.advance(c.src, m.Position)
		if m.Err != nil {
			b.dead = append(b.dead, deadLetter{rec: m.Record, src: c.src, pos: m.Position, stage: -1, err: m.Err})
			continue
		}
		if limit > 0 {
			if n := abi.DataSize(&m.Record); n > limit {
				b.dead = append(b.dead, deadLetter{rec: m.Record, src: c.src, pos: m.Position, stage: 0,
					err: fmt.Errorf("record of %d bytes (key, value and headers) is over the operator's limit of %d bytes (limits.max_record_bytes)", n, limit)})
				continue
			}
		}
		m.Record.Origin = uint32(len(b.in))
		b.in = append(b.in, m.Record)
		b.prov = append(b.prov, origin{src: int32(c.src), pos: m.Position})
	}
}

// process runs one batch through the operators, writes the sinks, commits
// and acknowledges.
func (j *Job) process(ctx context.Context, b *batch) error {
	start := time.Now()
	j.installSwaps(ctx)
	recs := b.in
	// idx[i] is the batch input that recs[i] descends from.
	idx := b.idx0()
	for si, st := range j.stages {
		out, outIdx, rejects, err := j.runStage(ctx, si, recs, idx)
		if err != nil {
			return err
		}
		om := &j.m.ops[si]
		om.in.Add(float64(len(recs)))
		om.out.Add(float64(len(out)))
		for _, r := range rejects {
			o := b.prov[idx[r.Index]]
			if st.op.StopOnError {
				return fmt.Errorf("exec: operator %q failed on record %d of source %q and its error policy is stop: %w",
					st.op.Name, o.pos, j.cfg.Sources[o.src].Name, r.Err)
			}
			b.dead = append(b.dead, deadLetter{rec: recs[r.Index], src: int(o.src), pos: o.pos, stage: si, err: r.Err,
				plugin: st.op.pluginName(), version: st.version})
		}
		recs, idx = out, outIdx
	}

	// Outputs, with ids derived from the input they came from.
	b.outs = slices.Grow(b.outs[:0], len(recs))
	for k := range b.ordinal {
		b.ordinal[k] = 0
	}
	for i := range recs {
		in := idx[i]
		o := b.prov[in]
		n := b.ordinal[in]
		b.ordinal[in]++
		r := recs[i]
		r.Origin = 0
		out := connectors.Out{Record: r}
		if j.needIDs {
			out.ID = j.outputID(o, n)
		}
		b.outs = append(b.outs, out)
	}
	for _, s := range j.cfg.Sinks {
		if err := s.Sink.Write(ctx, b.outs); err != nil {
			return fmt.Errorf("exec: sink %q: %w", s.Name, err)
		}
	}
	if err := j.writeDead(ctx, b); err != nil {
		return err
	}
	flushCtx := context.WithoutCancel(ctx) // a drain must finish its flush
	for _, s := range j.cfg.Sinks {
		if err := s.Sink.Flush(flushCtx); err != nil {
			return fmt.Errorf("exec: sink %q: flush: %w", s.Name, err)
		}
	}
	for _, out := range j.rewindable() {
		b.positions[sinkKey(out.Name)] = out.Sink.(connectors.Rewindable).Offset()
	}
	// Transactional change sets are applied now, after the outputs are
	// written: an output may alias a value a change overwrites.
	for _, st := range j.stages {
		if err := st.apply(); err != nil {
			return err
		}
	}
	if err := j.cfg.Store.Commit(b.positions); err != nil {
		return fmt.Errorf("exec: commit: %w", err)
	}
	for _, st := range j.stages {
		st.committed()
	}
	for si, in := range j.cfg.Sources {
		if !b.touched[si] {
			continue
		}
		if err := in.Source.Ack(flushCtx, b.positions[in.Name]); err != nil {
			// The commit holds; the source will redeliver and skip.
			j.log.Warn("acknowledging the source failed; it will redeliver committed records, which are skipped",
				"source", in.Name, "position", b.positions[in.Name], "err", err)
		}
	}

	j.m.batches.Inc()
	j.m.batchSeconds.Observe(time.Since(start).Seconds())
	j.m.outputs.Add(float64(len(b.outs)))
	j.m.dead.Add(float64(len(b.dead)))
	j.mu.Lock()
	j.status.Batches++
	j.status.RecordsIn += uint64(len(b.in))
	j.status.Outputs += uint64(len(b.outs))
	j.status.Dead += uint64(len(b.dead))
	for k, v := range b.positions {
		j.status.Positions[k] = v
	}
	for si, st := range j.stages {
		os := &j.status.Operators[si]
		os.RecordsIn, os.RecordsOut, os.Dead = st.in, st.out, st.dead
		os.Plugin, os.Version, os.TrialBatches, os.Quarantined = st.op.pluginName(), st.version, st.probation, st.quarantined
		if st.txn != nil {
			*os.Txn = st.txn.status
		}
	}
	j.mu.Unlock()
	return nil
}

func (j *Job) outputID(o origin, n uint32) string {
	buf := make([]byte, 0, len(j.cfg.Name)+32)
	buf = append(buf, j.cfg.Name...)
	buf = append(buf, '/')
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

func (j *Job) writeDead(ctx context.Context, b *batch) error {
	if len(b.dead) == 0 {
		return nil
	}
	outs := make([]connectors.Out, 0, len(b.dead))
	for i, d := range b.dead {
		r := d.rec
		r.Origin = 0
		op, plug, version := "", d.plugin, d.version
		if d.stage >= 0 && d.stage < len(j.stages) {
			op = j.stages[d.stage].op.Name
			if plug == "" {
				plug, version = j.stages[d.stage].op.pluginName(), j.stages[d.stage].version
			}
			j.stages[d.stage].dead++
			j.m.ops[d.stage].dead.Inc()
		}
		src := j.cfg.Sources[d.src].Name
		r.Headers = append(append([]abi.Header(nil), r.Headers...),
			abi.Header{Name: []byte(HeaderError), Value: []byte(d.err.Error())},
			abi.Header{Name: []byte(HeaderOperator), Value: []byte(op)},
			abi.Header{Name: []byte(HeaderPlugin), Value: []byte(plug)},
			abi.Header{Name: []byte(HeaderVersion), Value: []byte(version)},
			abi.Header{Name: []byte(HeaderSource), Value: []byte(src)},
			abi.Header{Name: []byte(HeaderPosition), Value: strconv.AppendUint(nil, d.pos, 10)},
		)
		j.log.Warn("record dead-lettered", "operator", op, "source", src, "position", d.pos, "err", d.err)
		outs = append(outs, connectors.Out{Record: r, ID: j.cfg.Name + "/dead/" + src + "/" + strconv.FormatUint(d.pos, 10) + "/" + strconv.Itoa(i)})
	}
	if j.cfg.DeadLetter == nil {
		return fmt.Errorf("exec: %d records failed and the job has no dead-letter sink: %w", len(b.dead), b.dead[0].err)
	}
	if err := j.cfg.DeadLetter.Write(ctx, outs); err != nil {
		return fmt.Errorf("exec: dead-letter sink: %w", err)
	}
	if err := j.cfg.DeadLetter.Flush(context.WithoutCancel(ctx)); err != nil {
		return fmt.Errorf("exec: dead-letter sink: flush: %w", err)
	}
	return nil
}

// Close releases the operators' plugin instances and transactional
// operators of a job that is not run; Run does it itself when it returns,
// and Close after that does nothing. Close must not be called while Run
// is running.
func (j *Job) Close(ctx context.Context) error {
	j.failSwaps(ctx)
	var errs []error
	for _, st := range j.stages {
		errs = append(errs, st.close(ctx))
	}
	j.stages = nil
	return errors.Join(errs...)
}

func (j *Job) closeStages(ctx context.Context) {
	for _, st := range j.stages {
		if err := st.close(ctx); err != nil {
			j.log.Warn("closing an operator failed", "err", err)
		}
	}
	j.stages = nil
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
	// spill is what the last chunk read held beyond the previous batch.
	spill     chunk
	in        []abi.Record
	prov      []origin
	dead      []deadLetter
	outs      []connectors.Out
	ordinal   []uint32
	idx       []int32
	positions map[string]uint64
	touched   []bool
	srcNames  []string
}

func newBatch(sources []Input) *batch {
	b := &batch{positions: map[string]uint64{}, touched: make([]bool, len(sources))}
	for _, s := range sources {
		b.srcNames = append(b.srcNames, s.Name)
	}
	return b
}

func (b *batch) reset() {
	b.in, b.prov, b.dead = b.in[:0], b.prov[:0], b.dead[:0]
	clear(b.positions)
	clear(b.touched)
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
