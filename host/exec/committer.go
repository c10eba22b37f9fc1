package exec

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/sluicehq/sluice/connectors"
)

// commitDepth is how many written batches may wait for their sinks'
// flushes and their commits while the executor processes the next ones.
const commitDepth = 4

// committer finishes processed batches, in order, in two stages, each on a
// goroutine of its own:
//
//   - the writer writes a batch's outputs, dead letters and late records to
//     the sinks, flushes the sinks, and takes what the commit needs (the
//     source positions, the rewindable sinks' offsets); a sink whose flush
//     can run while it is written to (connectors.FlushStarter: core NATS,
//     whose flush is a round trip to the server) only has its flush
//     started;
//   - the durable stage waits for the started flushes, commits the batch's
//     state with the positions and offsets, acknowledges the sources and
//     updates the status.
//
// The executor waits only for the writer before it reuses a batch and its
// output buffers, so up to commitDepth batches wait for their flushes and
// commits while it processes the next: a round trip per batch does not
// stall the pipeline. A batch's outputs are still flushed before the
// commit that covers them, and the commits keep the batches' order. A
// failure in either stage fails the batches after it: none is committed.
type committer struct {
	todo    chan *handoff     // executor -> writer
	written chan error        // writer -> executor: each handed batch's writes
	durable chan *durableWork // writer -> durable stage
	busy    bool              // a batch handed over whose writes are not waited for
	queued  sync.WaitGroup    // batches written and not through the durable stage
	exit    chan struct{}     // closed when both stages have ended

	mu     sync.Mutex
	failed error // the durable stage's first failure

	// alarm is closed when either stage fails, so that an executor
	// waiting for input learns of it without waiting for a next batch.
	alarm     chan struct{}
	alarmOnce sync.Once
}

// durableWork is a written batch on its way to its commit: what the durable
// stage needs of it, taken before the executor reuses the batch.
type durableWork struct {
	h       *handoff
	flushes []startedFlush
	// positions and touched are the source positions (with the rewindable
	// sinks' offsets) and the sources touched that the commit writes and
	// acknowledges; nil without a commit.
	positions map[string]uint64
	touched   []bool
	records   int // records read
}

// startedFlush is a sink's flush started by the writer.
type startedFlush struct {
	sink string
	wait func() error
}

func (j *Job) startCommitter(ctx context.Context) *committer {
	c := &committer{
		todo:    make(chan *handoff),
		written: make(chan error, 1),
		// One batch in the durable stage, one held by the writer until
		// the channel takes it: commitDepth in all.
		durable: make(chan *durableWork, commitDepth-2),
		exit:    make(chan struct{}),
		alarm:   make(chan struct{}),
	}
	go func() {
		defer close(c.durable)
		for h := range c.todo {
			var w *durableWork
			err := c.err()
			if err == nil {
				w, err = j.write(ctx, h)
			}
			if err != nil {
				c.raise()
				c.written <- err
				continue
			}
			c.queued.Add(1) // before written: wait must see it
			c.written <- nil
			c.durable <- w
		}
	}()
	go func() {
		// The durable stage ends last: the writer closes its channel.
		defer close(c.exit)
		for w := range c.durable {
			if c.err() == nil {
				if err := j.makeDurable(ctx, w); err != nil {
					c.mu.Lock()
					c.failed = err
					c.mu.Unlock()
					c.raise()
				}
			}
			c.queued.Done()
		}
	}()
	return c
}

// err returns the durable stage's first failure.
func (c *committer) err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.failed
}

// raise closes the alarm.
func (c *committer) raise() { c.alarmOnce.Do(func() { close(c.alarm) }) }

// submit waits until the batch handed over before is written, and returns
// its error or a failed commit's, or hands h over.
func (c *committer) submit(h *handoff) error {
	if err := c.waitWritten(); err != nil {
		return err
	}
	if err := c.err(); err != nil {
		return err
	}
	c.todo <- h
	c.busy = true
	return nil
}

// waitWritten waits for the writes of the batch handed over last, if not
// waited for yet, and returns their error.
func (c *committer) waitWritten() error {
	if !c.busy {
		return nil
	}
	c.busy = false
	return <-c.written
}

// wait waits until every batch handed over is committed (or has failed),
// and returns the first error.
func (c *committer) wait() error {
	err := c.waitWritten()
	c.queued.Wait()
	if err != nil {
		return err
	}
	return c.err()
}

// first waits for the batches in flight and returns their error, which
// came first (a commit that failed fails the next batch's too), or else
// err.
func (c *committer) first(err error) error {
	if cerr := c.wait(); cerr != nil {
		return cerr
	}
	return err
}

// stop ends the committer's goroutines once the batches in flight are
// through.
func (c *committer) stop() {
	_ = c.waitWritten()
	close(c.todo)
	<-c.exit
}

// write writes a processed batch's outputs, dead letters and late records,
// flushes the sinks or starts their flushes, and takes what its commit
// needs. It runs on the committer's writer goroutine while the executor
// processes the next batch, one batch at a time, in order.
func (j *Job) write(ctx context.Context, h *handoff) (*durableWork, error) {
	b := h.b
	outs := b.outs
	for _, set := range h.sets {
		for _, s := range set.sinks {
			if err := s.Sink.Write(ctx, outs[:set.n]); err != nil {
				return nil, fmt.Errorf("exec: sink %q: %w", s.Name, err)
			}
		}
		outs = outs[set.n:]
	}
	if err := j.writeDead(ctx, h.dead); err != nil {
		return nil, err
	}
	if err := j.writeLate(ctx, h.late); err != nil {
		return nil, err
	}
	w := &durableWork{h: h, records: len(b.in)}
	for _, s := range j.cfg.Sinks {
		if fs, ok := s.Sink.(connectors.FlushStarter); ok {
			w.flushes = append(w.flushes, startedFlush{sink: s.Name, wait: fs.StartFlush(ctx)})
			continue
		}
		if err := s.Sink.Flush(ctx); err != nil {
			return nil, fmt.Errorf("exec: sink %q: flush: %w", s.Name, err)
		}
	}
	positions := j.carry.add(b)
	if h.pending != nil {
		w.positions = maps.Clone(positions)
		for _, out := range j.rewindable() {
			w.positions[sinkKey(out.Name)] = out.Sink.(connectors.Rewindable).Offset()
		}
		w.touched = slices.Clone(j.carry.touched)
		j.carry.reset()
	}
	return w, nil
}

// makeDurable waits for a written batch's flushes, commits its state with
// the source positions and the sinks' offsets, acknowledges the sources
// and updates the status. It runs on the committer's durable goroutine,
// one batch at a time, in order.
func (j *Job) makeDurable(ctx context.Context, w *durableWork) error {
	h := w.h
	for _, f := range w.flushes {
		if err := f.wait(); err != nil {
			return fmt.Errorf("exec: sink %q: flush: %w", f.sink, err)
		}
	}
	var commitTook time.Duration
	if h.pending != nil {
		commitStart := time.Now()
		if d := j.commitDelay.Load(); d > 0 {
			time.Sleep(time.Duration(d)) // SetCommitDelay: a benchmark's slow disk
		}
		if err := h.pending.Commit(ctx, w.positions); err != nil {
			return fmt.Errorf("exec: commit: %w", err)
		}
		commitTook = time.Since(commitStart)
		for si, in := range j.cfg.Sources {
			if !w.touched[si] {
				continue
			}
			if err := in.Source.Ack(ctx, w.positions[in.Name]); err != nil {
				// The commit holds; the source will redeliver and skip.
				j.log.Warn("acknowledging the source failed; it will redeliver committed records, which are skipped",
					"source", in.Name, "position", w.positions[in.Name], "err", err)
			}
		}
	}

	took := time.Since(h.start).Seconds()
	if !h.commitOnly {
		j.m.batches.Inc()
		j.m.batchSeconds.Observe(took)
	}
	j.m.outputs.Add(float64(h.total))
	j.m.dead.Add(float64(len(h.dead)))
	j.mu.Lock()
	if h.pending != nil {
		j.m.commits.Inc()
		j.commits++
		j.commitTime += commitTook
		for k, v := range w.positions {
			j.status.Positions[k] = v
		}
	}
	if !h.commitOnly {
		j.status.Batches++
		j.status.BatchSeconds.Counts[bucket(j.status.BatchSeconds.Bounds, took)]++
	}
	j.status.RecordsIn += uint64(w.records)
	j.status.Outputs += uint64(h.total)
	j.status.Dead += uint64(len(h.dead))
	// The counters of the batch; the code's lifecycle (version, trial,
	// quarantine) is the executor's, kept current by syncStatus.
	for i := range h.ops {
		os, o := &j.status.Operators[i], &h.ops[i]
		os.RecordsIn, os.RecordsOut, os.Dead, os.Retries = o.RecordsIn, o.RecordsOut, o.Dead, o.Retries
		if h.synced[i] != j.nodes[i].synced {
			// A change at a boundary after this batch (a swap, a
			// worker count) copied a later status in: its workers are
			// not this batch's.
			continue
		}
		os.Workers, os.Txn, os.Window = o.Workers, o.Txn, o.Window
	}
	if h.sources != nil {
		j.status.Sources = h.sources
	}
	j.mu.Unlock()
	j.notify()
	return nil
}
