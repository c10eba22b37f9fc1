package txnop

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"
	"unsafe"

	"github.com/sluicehq/sluice/abi"
	"github.com/sluicehq/sluice/host/plugin"
	"github.com/sluicehq/sluice/txn"
	"github.com/sluicehq/sluice/txn/adapt"
)

// Logic is the logic of one transactional operator.
type Logic interface {
	// Plan declares the operations of each event: it appends exactly one
	// transaction per event to p.Txns, in order, interning keys and
	// arguments with p.Key and p.Bytes.
	Plan(ctx context.Context, events []abi.Record, p *Plan) error
	// Apply computes one operation, as txn.Apply (called concurrently from
	// the scheduler's workers; a.Worker() tells which).
	Apply(ctx context.Context, t, op int, o *txn.Op, a txn.Access) (txn.Effect, error)
	// Post hands the batch's outcomes to the operator, which appends its
	// output records to out (Origin: the event's index) and may reject
	// events (they are dead-lettered; their state effects stay).
	Post(ctx context.Context, events []abi.Record, p *Plan, res *txn.Result, out *plugin.Output) error
	// Close releases the logic's resources.
	Close(ctx context.Context) error
}

// Plan is one batch's transactions as a Logic declares them.
//
// Lifetimes: the operations and read lists (Ops, Keys) are carved from
// chunks the Plan keeps and reuses after Reset, so that planning a batch
// allocates nothing once the chunks have grown to the batch's size: they
// are valid until the next Reset. The bytes of keys and arguments (Key,
// Bytes) are never reused: a Result's change set and a txn.History keep
// keys for longer than the batch.
type Plan struct {
	// Txns holds one transaction per event.
	Txns []txn.Txn

	arena []byte
	ops   chunks[txn.Op]
	keys  chunks[txn.Key]
}

// arenaChunk is the smallest arena chunk; a batch's keys and arguments
// usually fit in one.
const arenaChunk = 64 << 10

// Reset empties p for a new batch. Keys and bytes interned before stay
// valid: the arena is replaced, not overwritten, since results of the
// previous batch may still refer to it. The chunks of operations and reads
// are reused: the transactions of the batch before are no longer valid.
func (p *Plan) Reset() {
	clear(p.Txns)
	p.Txns = p.Txns[:0]
	p.arena = nil
	p.ops.reset()
	p.keys.reset()
}

// Bytes copies b into the plan's arena and returns the copy (nil for an
// empty b).
func (p *Plan) Bytes(b []byte) []byte {
	if len(b) == 0 {
		return nil
	}
	if cap(p.arena)-len(p.arena) < len(b) {
		p.arena = make([]byte, 0, max(arenaChunk, len(b)))
	}
	n := len(p.arena)
	p.arena = append(p.arena, b...)
	return p.arena[n:len(p.arena):len(p.arena)]
}

// Key returns the key (table, key) with its bytes interned in the arena.
func (p *Plan) Key(table uint32, key []byte) txn.Key {
	b := p.Bytes(key)
	return txn.Key{Table: table, Key: unsafe.String(unsafe.SliceData(b), len(b))}
}

// Ops returns n zeroed operations carved from a shared slab, for a Txn's
// Ops, saving an allocation per event. They are valid until the next
// Reset.
func (p *Plan) Ops(n int) []txn.Op { return p.ops.take(n) }

// Keys returns n zeroed keys carved from a shared slab, for an Op's Reads.
// They are valid until the next Reset.
func (p *Plan) Keys(n int) []txn.Key { return p.keys.take(n) }

// minChunk is the fewest elements of a chunk of operations or keys.
const minChunk = 4096

// chunks carves runs of T from chunks that it keeps across resets: after
// the first batches, carving allocates nothing. A run handed out stays
// valid until the next reset.
//
// A run may also be built one element at a time (grow, then run): the open
// run is moved whole to the next chunk when the current one is full, so
// that it stays contiguous.
type chunks[T any] struct {
	cur  []T   // the chunk being carved, up to its length
	all  [][]T // every chunk, each at its full capacity
	next int   // all[next:] are not yet carved since the last reset
	open int   // the start in cur of the run being grown
}

// reset makes every chunk free again.
func (c *chunks[T]) reset() {
	c.cur, c.next, c.open = nil, 0, 0
}

// take returns n zeroed elements.
func (c *chunks[T]) take(n int) []T {
	if c.open != len(c.cur) {
		panic("txnop: a run is being grown")
	}
	if cap(c.cur)-len(c.cur) < n {
		c.nextChunk(n)
	}
	k := len(c.cur)
	c.cur = c.cur[:k+n]
	c.open = k + n
	r := c.cur[k : k+n : k+n]
	clear(r)
	return r
}

// grow appends one zeroed element to the open run and returns it.
func (c *chunks[T]) grow() *T {
	if len(c.cur) == cap(c.cur) {
		run := c.cur[c.open:]
		c.nextChunk(len(run) + 1)
		c.cur = append(c.cur, run...)
		clear(run) // the old chunk keeps no pointers the run has moved
	}
	n := len(c.cur)
	c.cur = c.cur[:n+1]
	e := &c.cur[n]
	var zero T
	*e = zero
	return e
}

// last returns the open run's last element, nil when the run is empty.
func (c *chunks[T]) last() *T {
	if len(c.cur) == c.open {
		return nil
	}
	return &c.cur[len(c.cur)-1]
}

// run closes the open run and returns it, nil when empty.
func (c *chunks[T]) run() []T {
	k := c.open
	c.open = len(c.cur)
	if k == len(c.cur) {
		return nil
	}
	return c.cur[k:len(c.cur):len(c.cur)]
}

// nextChunk makes cur an empty chunk of at least n elements: the next free
// one, or a new one.
func (c *chunks[T]) nextChunk(n int) {
	if c.next < len(c.all) && cap(c.all[c.next]) >= n {
		c.cur = c.all[c.next][:0]
	} else {
		ch := make([]T, 0, max(minChunk, n))
		if c.next < len(c.all) {
			c.all[c.next] = ch // too small for n: replaced
		} else {
			c.all = append(c.all, ch)
		}
		c.cur = ch
	}
	c.next++
	c.open = 0
}

// Config configures an Operator.
type Config struct {
	// Name is the operator's name, for errors and logs.
	Name string
	// Tables names the state tables: table handle i (txn.Key.Table) is
	// Tables[i].
	Tables []string
	// Strategy is the scheduling strategy: a TPG strategy, a baseline, or
	// txn.Adaptive, which lets a decision model (package txn/adapt) choose
	// the TPG strategy of each batch.
	Strategy txn.Strategy
	// Adaptive configures the decision model of the adaptive strategy;
	// zero fields take their defaults.
	Adaptive adapt.Config
	// Workers is the number of scheduler workers (at least 1). A Wasm
	// Logic must have one instance per worker.
	Workers int
	// Logic is the operator's logic; the Operator closes it.
	Logic Logic
	// Logger receives the scheduler's logs (default slog.Default()).
	Logger *slog.Logger
	// MinPart is the fewest events of a part when a PartLogic plans and
	// posts a batch in parts, one per worker (default 256: below it, the
	// hand-off costs more than the part saves).
	MinPart int
	// ReadWindow is the largest window, in events, that a windowed read
	// (txn.Op.Window) of the logic may declare: the operator keeps the
	// versions its batches wrote in the last ReadWindow events, in memory
	// (a txn.History, which the caller may commit with its state), for the
	// windows of the next batches. 0: the logic declares no windowed read,
	// and a batch that does fails.
	ReadWindow uint32
}

// ErrReadWindow is wrapped by the error of a batch whose logic declared a
// windowed read over more events than Config.ReadWindow.
var ErrReadWindow = errors.New("a windowed read reaches further back than the operator's read window")

// Operator runs one transactional operator.
type Operator struct {
	cfg   Config
	sched *txn.Scheduler
	model *adapt.Model // the adaptive strategy's; nil under a static one
	batch uint64       // batches processed
	plan  Plan
	ctx   context.Context // the batch in progress, for apply
	apply txn.Apply
	hist  *txn.History // the versions of the last ReadWindow events; nil without

	// Plan and post in parts (PartLogic).
	bounds []int
	parts  []*Plan
	outs   []*plugin.Output
	errs   []error
}

// New starts an Operator's scheduler workers.
func New(cfg Config) (*Operator, error) {
	if cfg.Logic == nil {
		return nil, fmt.Errorf("txnop: operator %q: no logic", cfg.Name)
	}
	s, err := txn.New(txn.Config{Workers: cfg.Workers, Logger: cfg.Logger})
	if err != nil {
		return nil, fmt.Errorf("txnop: operator %q: %w", cfg.Name, err)
	}
	if cfg.MinPart <= 0 {
		cfg.MinPart = defaultMinPart
	}
	o := &Operator{cfg: cfg, sched: s}
	if cfg.ReadWindow > 0 {
		// The History's Store is the batch's, set by Process.
		o.hist, _ = txn.NewHistory(emptyStore{}, uint64(cfg.ReadWindow))
	}
	if err := o.SetStrategy(cfg.Strategy); err != nil {
		return nil, errors.Join(err, s.Close())
	}
	o.apply = func(t, op int, x *txn.Op, a txn.Access) (txn.Effect, error) {
		return o.cfg.Logic.Apply(o.ctx, t, op, x, a)
	}
	return o, nil
}

// Name returns the operator's name.
func (o *Operator) Name() string { return o.cfg.Name }

// Tables returns the names of the operator's tables, by handle.
func (o *Operator) Tables() []string { return o.cfg.Tables }

// Strategy returns the operator's scheduling strategy, txn.Adaptive when
// a decision model chooses it per batch.
func (o *Operator) Strategy() txn.Strategy { return o.cfg.Strategy }

// SetStrategy changes the strategy from the next batch on. Setting the
// adaptive strategy starts a new decision model (Config.Adaptive), which
// has the scheduler count the cycles between chains when its rules need
// them; a static strategy drops the model. Not safe to call during
// Process.
func (o *Operator) SetStrategy(st txn.Strategy) error {
	if st.Kind != txn.Adaptive {
		o.cfg.Strategy, o.model = st, nil
		o.sched.SetAnalyze(false)
		return nil
	}
	m, err := adapt.New(o.cfg.Adaptive)
	if err != nil {
		return fmt.Errorf("txnop: operator %q: %w", o.cfg.Name, err)
	}
	o.cfg.Strategy, o.model = st, m
	o.sched.SetAnalyze(true)
	return nil
}

// Model returns the decision model of the adaptive strategy, nil under a
// static strategy. Its History may be read while the operator runs.
func (o *Operator) Model() *adapt.Model { return o.model }

// TakeModel makes o continue with from's decision model (what it learned,
// its history and counts) in place of its own new one, when both run the
// adaptive strategy with the same configuration, and reports whether it
// did. A swap uses it so that the operator's new module does not start
// learning from nothing and its decisions stay one history. The two
// operators then share the model: only one of them may run batches at a
// time. Not safe to call during Process.
func (o *Operator) TakeModel(from *Operator) bool {
	if o.model == nil || from == nil || from.model == nil || !sameConfig(o.model.Config(), from.model.Config()) {
		return false
	}
	o.model = from.model
	return true
}

// sameConfig reports whether a and b configure models alike.
func sameConfig(a, b adapt.Config) bool {
	ai, bi := a.Initial, b.Initial
	a.Initial, b.Initial = nil, nil
	return a == b && (ai == nil) == (bi == nil) && (ai == nil || *ai == *bi)
}

// TakeHistory makes o continue with from's History (the versions of the
// last ReadWindow events) in place of its own empty one, when both keep
// one of the same window, and reports whether it did: a swapped-in module's
// windowed reads see the events before the swap. The two operators then
// share the History: only one of them may run batches at a time. Not safe
// to call during Process.
func (o *Operator) TakeHistory(from *Operator) bool {
	if o.hist == nil || from == nil || from.hist == nil || o.hist.Window() != from.hist.Window() {
		return false
	}
	o.hist = from.hist
	return true
}

// History returns the versions the operator keeps for windowed reads, nil
// when its ReadWindow is 0.
func (o *Operator) History() *txn.History { return o.hist }

// emptyStore is a Store with nothing in it.
type emptyStore struct{}

func (emptyStore) Get(txn.Key) ([]byte, bool, error) { return nil, false, nil }

// SampleNext asks for a copy of the next batch's task precedence graph
// of at most maxOps operations (txn.Scheduler.SampleNext).
func (o *Operator) SampleNext(maxOps int) { o.sched.SampleNext(maxOps) }

// Sampled returns the last batch sampled, nil before any.
func (o *Operator) Sampled() *txn.Sample { return o.sched.Sampled() }

// Workers returns the number of scheduler workers.
func (o *Operator) Workers() int { return o.cfg.Workers }

// Process runs one batch of events over the committed state store: plan,
// schedule, post. The outputs are appended to out; the returned Result
// holds the change set to commit (keys by table handle) and the batch's
// statistics. The Result, its keys and the outputs are valid until the
// next Process. An error fails the whole batch; nothing of it must be
// committed.
func (o *Operator) Process(ctx context.Context, events []abi.Record, store txn.Store, out *plugin.Output) (*txn.Result, error) {
	start := time.Now()
	if err := o.planBatch(ctx, events); err != nil {
		return nil, fmt.Errorf("txnop: operator %q: plan: %w", o.cfg.Name, err)
	}
	if len(o.plan.Txns) != len(events) {
		return nil, fmt.Errorf("txnop: operator %q: plan declared %d transactions for %d events", o.cfg.Name, len(o.plan.Txns), len(events))
	}
	if err := o.checkTables(); err != nil {
		return nil, err
	}
	if bl, ok := o.cfg.Logic.(BatchLogic); ok {
		bl.StartBatch(events)
	}
	st := o.cfg.Strategy
	if o.model != nil {
		st = o.model.Next()
		o.sched.SetAnalyze(o.model.NeedsCycles())
	}
	o.ctx = ctx
	if o.hist != nil {
		o.hist.Store = store
		store = o.hist
	}
	res, err := o.sched.Run(ctx, st, o.plan.Txns, store, o.apply)
	o.ctx = nil
	if err != nil {
		var oe *txn.OpError
		if errors.As(err, &oe) {
			return nil, fmt.Errorf("txnop: operator %q: event %d of the batch: %w", o.cfg.Name, oe.Txn, err)
		}
		return nil, fmt.Errorf("txnop: operator %q: %w", o.cfg.Name, err)
	}
	if err := o.postBatch(ctx, events, res, out); err != nil {
		return nil, fmt.Errorf("txnop: operator %q: post: %w", o.cfg.Name, err)
	}
	if o.hist != nil {
		o.hist.Commit(res)
		o.hist.Store = emptyStore{} // do not keep the batch's store reachable
	}
	o.batch++
	if o.model != nil {
		o.model.Observe(adapt.Collect(o.batch, len(events), o.cfg.Workers, &res.Stats, time.Since(start)))
	}
	return res, nil
}

// BatchLogic is a Logic that is given the batch's events after the plan and
// before the scheduler applies any operation: a Wasm logic hands them to
// every worker's instance, so that an apply on any worker reads its event's
// time and draws from its event's random stream (the deterministic guest
// environment, abi/ABI.md section 6).
type BatchLogic interface {
	Logic
	// StartBatch takes the events of the batch about to be applied; they
	// stay valid until Process returns.
	StartBatch(events []abi.Record)
}

// PartLogic is a Logic whose plan and post can run in parts: consecutive
// ranges of a batch's events, each on one worker's resources (a Wasm
// instance), all at once. Plan and post are per event, so the parts give
// the same result as one call; they let every core work on the phases
// that surround the scheduler.
type PartLogic interface {
	Logic
	// PlanPart declares the operations of events (the batch's events
	// first to first+len(events)-1) on worker w's resources, appending one
	// transaction per event to p, like Plan.
	PlanPart(ctx context.Context, w int, events []abi.Record, first int, p *Plan) error
	// PostPart is Post for the batch's events lo to hi-1 (events, p and res
	// are the whole batch's) on worker w's resources. Its outputs' Origin
	// and its rejects' Index are batch indices.
	PostPart(ctx context.Context, w int, events []abi.Record, lo, hi int, p *Plan, res *txn.Result, out *plugin.Output) error
}

// defaultMinPart is the default of Config.MinPart.
const defaultMinPart = 256

// partBounds returns the bounds of the parts n events are cut into: at most
// one per worker, none smaller than minPart.
func (o *Operator) partBounds(n int) []int {
	k := min(o.cfg.Workers, n/o.cfg.MinPart)
	o.bounds = o.bounds[:0]
	if k < 2 {
		return append(o.bounds, 0, n)
	}
	for i := 0; i <= k; i++ {
		o.bounds = append(o.bounds, i*n/k)
	}
	return o.bounds
}

// inParts runs f for each part on its own goroutine (the first on the
// caller's) and returns the error of the first part that failed.
func (o *Operator) inParts(bounds []int, f func(w, lo, hi int) error) error {
	k := len(bounds) - 1
	if cap(o.errs) < k {
		o.errs = make([]error, k)
	}
	errs := o.errs[:k]
	var wg sync.WaitGroup
	for w := 1; w < k; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[w] = f(w, bounds[w], bounds[w+1])
		}()
	}
	errs[0] = f(0, bounds[0], bounds[1])
	wg.Wait()
	for i, err := range errs {
		errs[i] = nil
		if err != nil {
			clear(errs)
			return err
		}
	}
	return nil
}

// planBatch plans the batch, in parts when the logic can.
func (o *Operator) planBatch(ctx context.Context, events []abi.Record) error {
	o.plan.Reset()
	pl, ok := o.cfg.Logic.(PartLogic)
	bounds := o.partBounds(len(events))
	if !ok || len(bounds) <= 2 {
		return o.cfg.Logic.Plan(ctx, events, &o.plan)
	}
	for len(o.parts) < len(bounds)-1 {
		o.parts = append(o.parts, new(Plan))
	}
	err := o.inParts(bounds, func(w, lo, hi int) error {
		p := o.parts[w]
		p.Reset()
		if err := pl.PlanPart(ctx, w, events[lo:hi], lo, p); err != nil {
			return err
		}
		if len(p.Txns) != hi-lo {
			return fmt.Errorf("part %d declared %d transactions for %d events", w, len(p.Txns), hi-lo)
		}
		return nil
	})
	if err != nil {
		return err
	}
	for w := range len(bounds) - 1 {
		o.plan.Txns = append(o.plan.Txns, o.parts[w].Txns...)
	}
	return nil
}

// postBatch posts the batch, in parts when the logic can, appending the
// outputs to out in event order.
func (o *Operator) postBatch(ctx context.Context, events []abi.Record, res *txn.Result, out *plugin.Output) error {
	pl, ok := o.cfg.Logic.(PartLogic)
	bounds := o.partBounds(len(events))
	if !ok || len(bounds) <= 2 {
		return o.cfg.Logic.Post(ctx, events, &o.plan, res, out)
	}
	for len(o.outs) < len(bounds)-1 {
		o.outs = append(o.outs, new(plugin.Output))
	}
	err := o.inParts(bounds, func(w, lo, hi int) error {
		o.outs[w].Reset()
		return pl.PostPart(ctx, w, events, lo, hi, &o.plan, res, o.outs[w])
	})
	if err != nil {
		return err
	}
	// The parts' outputs stay in their own arenas, valid until the next
	// Process, as the outputs of one Post would be.
	for w := range len(bounds) - 1 {
		out.Records = append(out.Records, o.outs[w].Records...)
		out.Rejects = append(out.Rejects, o.outs[w].Rejects...)
	}
	return nil
}

// checkTables refuses a plan that names a table handle the operator does
// not have, or declares a windowed read over more events than its
// ReadWindow.
func (o *Operator) checkTables() error {
	n := uint32(len(o.cfg.Tables))
	for t := range o.plan.Txns {
		for m := range o.plan.Txns[t].Ops {
			op := &o.plan.Txns[t].Ops[m]
			tb := op.Write.Table
			if op.NonDet {
				tb = op.Table
			}
			if tb >= n {
				return fmt.Errorf("txnop: operator %q: event %d operation %d: table handle %d, but the operator has %d tables %q", o.cfg.Name, t, m, tb, n, o.cfg.Tables)
			}
			if op.Window > o.cfg.ReadWindow {
				return fmt.Errorf("txnop: operator %q: event %d operation %d: %w: a window of %d events, but the operator's read_window is %d",
					o.cfg.Name, t, m, ErrReadWindow, op.Window, o.cfg.ReadWindow)
			}
			for _, r := range op.Reads {
				if r.Table >= n {
					return fmt.Errorf("txnop: operator %q: event %d operation %d: read of table handle %d, but the operator has %d tables %q", o.cfg.Name, t, m, r.Table, n, o.cfg.Tables)
				}
			}
		}
	}
	return nil
}

// Close stops the scheduler and closes the logic.
func (o *Operator) Close(ctx context.Context) error {
	o.sched.Close()
	return o.cfg.Logic.Close(ctx)
}
