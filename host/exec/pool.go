package exec

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"sync"
	"time"

	"github.com/sluicehq/sluice/abi"
	"github.com/sluicehq/sluice/host/plugin"
	"github.com/sluicehq/sluice/state"
)

// worker is one instance of an operator's plugin, with its own state
// session for keyed operators.
type worker struct {
	id   int
	inst *plugin.Instance
	out  plugin.Output
	// spare holds the previous batch's outputs while out takes this
	// one's (a pool stage is lasting: see pool.nextBatch).
	spare plugin.Output
	sess  *state.Session
	state plugin.State

	in     []abi.Record // this batch's input for the worker
	wms    []int64      // a windowed stage's watermark at each of in
	global []int32      // in[i] is stage input global[i] (nil: lo+i)
	lo     int
	err    error

	// Totals for the status: records run and the time spent running them
	// (busy, not waiting for the batch's other workers).
	records uint64
	busy    time.Duration
	// Totals for Measure: outputs, and the delays of the records run
	// (delay summed over delayed records); end is when the worker's last
	// run ended.
	outs    uint64
	delay   time.Duration
	delayed uint64
	end     time.Time
	// kgs[i] is the key group of in[i] (a keyed stage that measures).
	kgs []int32
	// limit is the worker's cap for this batch in records per second (0:
	// none), copied from the pool's caps.
	limit float64
}

// index returns the stage input of the worker's local input i.
func (w *worker) index(i int) int {
	if w.global != nil {
		return int(w.global[i])
	}
	return w.lo + i
}

// pool is the workers of an operator whose code runs in plugin instances,
// one per worker: the stateless and keyed kinds.
type pool struct {
	op      *Operator
	m       *workerMetrics
	workers []*worker
	active  []*worker

	// measure is set unless the job's measurements are off (a benchmark
	// of their cost).
	measure bool
	// caps are the workers' throttles (SetWorkerCap), by worker id;
	// capAll is every other worker's (0: none).
	capMu  sync.Mutex
	caps   map[int]float64
	capAll float64

	// Scratch reused from batch to batch.
	outRecs []abi.Record
	rejects []plugin.Reject
	next    []int
	one     plugin.Output
}

// newInstances makes n instances of code configured for op.
func newInstances(ctx context.Context, op *Operator, code *plugin.Plugin, first, n int) ([]*plugin.Instance, error) {
	if code == nil {
		// A native operator (a built-in window function): no instances.
		return make([]*plugin.Instance, n), nil
	}
	var insts []*plugin.Instance
	for w := first; w < first+n; w++ {
		inst, err := code.NewInstance(ctx, op.Config)
		if err != nil {
			for _, in := range insts {
				in.Close(context.WithoutCancel(ctx))
			}
			return nil, fmt.Errorf("worker %d: %w", w, err)
		}
		insts = append(insts, inst)
	}
	return insts, nil
}

// nextBatch makes the pool lasting: each worker's outputs alternate
// between two buffers, one batch each, so a batch's outputs stay where
// they are while the sinks write them and the next batch runs.
func (p *pool) nextBatch() {
	for _, w := range p.workers {
		w.out, w.spare = w.spare, w.out
	}
}

// work runs the active workers, in parallel when there are several, and
// returns the first worker's error.
func (p *pool) work(ctx context.Context) error {
	p.capMu.Lock()
	for _, w := range p.active {
		limit, ok := p.caps[w.id]
		if !ok {
			limit = p.capAll
		}
		w.limit = limit
	}
	p.capMu.Unlock()
	if len(p.active) == 0 {
		return nil
	}
	// The first worker runs on this goroutine, whose stack has grown to
	// what a guest call needs: each new goroutine grows its own again.
	var wg sync.WaitGroup
	for _, w := range p.active[1:] {
		wg.Go(func() { p.runWorker(ctx, w) })
	}
	p.runWorker(ctx, p.active[0])
	wg.Wait()
	for _, w := range p.active {
		p.m.observe(w)
		if w.err != nil {
			return fmt.Errorf("exec: operator %q: worker %d: %w", p.op.Name, w.id, w.err)
		}
	}
	return nil
}

// runWorker runs the worker's input. A capped worker then sleeps until
// its run has taken at least its records at its cap's rate: it is slower,
// so the sleep counts as busy time.
func (p *pool) runWorker(ctx context.Context, w *worker) {
	start := time.Now()
	w.out.Reset()
	w.err = w.inst.Process(ctx, w.in, w.state, &w.out)
	if w.limit > 0 {
		least := time.Duration(math.Ceil(float64(len(w.in)) / w.limit * float64(time.Second)))
		if d := least - time.Since(start); d > 0 {
			time.Sleep(d)
		}
	}
	w.end = time.Now()
	w.busy += w.end.Sub(start)
	w.records += uint64(len(w.in))
	w.outs += uint64(len(w.out.Records))
}

// gather collects the active workers' outputs and rejects, by input order
// (a k-way merge of the workers' outputs, each already in input order):
// output ids count the outputs of each input in this order, so it must not
// depend on the number of workers.
func (p *pool) gather() ([]abi.Record, []plugin.Reject) {
	p.outRecs, p.rejects = p.outRecs[:0], p.rejects[:0]
	n := 0
	for _, w := range p.active {
		n += len(w.out.Records)
		for _, r := range w.out.Rejects {
			p.rejects = append(p.rejects, plugin.Reject{Index: w.index(r.Index), Err: r.Err})
		}
	}
	// Grown once to the batch's outputs: appending one by one would
	// allocate several times their size on the way.
	p.outRecs = slices.Grow(p.outRecs, n)
	if len(p.active) == 1 || p.active[0].global == nil {
		// One worker, or contiguous runs in worker order: concatenate.
		for _, w := range p.active {
			for _, r := range w.out.Records {
				r.Origin = uint32(w.index(int(r.Origin)))
				p.outRecs = append(p.outRecs, r)
			}
		}
		return p.outRecs, p.rejects
	}
	p.next = slices.Grow(p.next[:0], len(p.active))[:len(p.active)]
	clear(p.next)
	for {
		best, bestG := -1, 0
		for k, w := range p.active {
			if p.next[k] == len(w.out.Records) {
				continue
			}
			g := w.index(int(w.out.Records[p.next[k]].Origin))
			if best < 0 || g < bestG {
				best, bestG = k, g
			}
		}
		if best < 0 {
			break
		}
		r := p.active[best].out.Records[p.next[best]]
		r.Origin = uint32(bestG)
		p.outRecs = append(p.outRecs, r)
		p.next[best]++
	}
	slices.SortFunc(p.rejects, func(a, b plugin.Reject) int { return a.Index - b.Index })
	return p.outRecs, p.rejects
}

// retryOn runs rec alone on w.
func (p *pool) retryOn(ctx context.Context, w *worker, rec *abi.Record) ([]abi.Record, error) {
	p.one.Reset()
	if err := w.inst.Process(ctx, []abi.Record{*rec}, w.state, &p.one); err != nil {
		return nil, err
	}
	if len(p.one.Rejects) > 0 {
		return nil, p.one.Rejects[0].Err
	}
	return p.one.Records, nil
}

// prepare makes one instance per worker of r's plugin.
func (p *pool) prepare(ctx context.Context, op *Operator, r *Replacement, workers int) (*generation, error) {
	return prepareInstances(ctx, op, r, workers)
}

// prepareInstances makes the generation of n instances of r's plugin that
// replaces op's.
func prepareInstances(ctx context.Context, op *Operator, r *Replacement, workers int) (*generation, error) {
	switch {
	case r.Plugin == nil:
		return nil, fmt.Errorf("%w: operator %q: no plugin", ErrSwapRefused, op.Name)
	case r.Plugin.Kind() != op.Kind:
		return nil, fmt.Errorf("%w: operator %q is %s and the new module was loaded as %s", ErrSwapRefused, op.Name, op.Kind, r.Plugin.Kind())
	case r.Txn != nil:
		return nil, fmt.Errorf("%w: operator %q is not transactional", ErrSwapRefused, op.Name)
	}
	insts, err := newInstances(ctx, op, r.Plugin, 0, workers)
	if err != nil {
		return nil, fmt.Errorf("%w: operator %q: %w", ErrSwapRefused, op.Name, err)
	}
	return &generation{insts: insts}, nil
}

// install puts gen's instances on the workers and returns the old ones.
func (p *pool) install(gen *generation) *generation {
	old := &generation{}
	for i, w := range p.workers {
		old.insts = append(old.insts, w.inst)
		w.inst = gen.insts[i]
	}
	gen.insts = nil
	return old
}

// prepareResize makes the instances of the workers a change to n adds.
func (p *pool) prepareResize(ctx context.Context, op *Operator, code *plugin.Plugin, from, n int) (*resize, error) {
	r := &resize{from: from, workers: n, code: code}
	if n > from {
		insts, err := newInstances(ctx, op, code, from, n-from)
		if err != nil {
			return nil, fmt.Errorf("operator %q: %w", op.Name, err)
		}
		r.insts = insts
	}
	return r, nil
}

// grow adds the resize's workers (made by add) or closes the workers past
// r.workers.
func (p *pool) grow(ctx context.Context, r *resize, add func(w *worker)) error {
	var errs []error
	for len(p.workers) > r.workers {
		w := p.workers[len(p.workers)-1]
		if w.inst != nil {
			errs = append(errs, w.inst.Close(ctx))
		}
		p.m.drop(w.id)
		p.capMu.Lock()
		delete(p.caps, w.id)
		p.capMu.Unlock()
		p.workers = p.workers[:len(p.workers)-1]
	}
	for _, inst := range r.insts {
		w := &worker{id: len(p.workers), inst: inst}
		add(w)
		p.workers = append(p.workers, w)
	}
	r.insts = nil
	return errors.Join(errs...)
}

// closeWorkers closes every worker's instance.
func (p *pool) closeWorkers(ctx context.Context) {
	for _, w := range p.workers {
		if w.inst != nil {
			w.inst.Close(ctx)
			w.inst = nil
		}
	}
}

// report fills the workers' part of the status.
func (p *pool) report(os *OperatorStatus) {
	// A new slice: a Status handed out shares the old one.
	os.Workers = make([]WorkerStatus, 0, len(p.workers))
	for _, w := range p.workers {
		os.Workers = append(os.Workers, WorkerStatus{ID: w.id, Records: w.records, BusySeconds: w.busy.Seconds()})
	}
}

// resize is a prepared change of an operator's worker count.
type resize struct {
	from    int // the worker count the resize was prepared for
	workers int
	code    *plugin.Plugin     // the code the new instances run
	insts   []*plugin.Instance // the added workers' instances
}

// close releases the instances of a resize that was not applied.
func (r *resize) close(ctx context.Context) {
	for _, in := range r.insts {
		in.Close(ctx)
	}
	r.insts = nil
}
