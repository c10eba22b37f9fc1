package txnop

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"unsafe"

	"github.com/sluicehq/sluice/abi"
	"github.com/sluicehq/sluice/host/plugin"
	"github.com/sluicehq/sluice/txn"
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
type Plan struct {
	// Txns holds one transaction per event.
	Txns []txn.Txn

	arena []byte
	ops   []txn.Op
	keys  []txn.Key
}

// arenaChunk is the smallest arena chunk; a batch's keys and arguments
// usually fit in one.
const arenaChunk = 64 << 10

// Reset empties p for a new batch. Keys and bytes interned before stay
// valid: the arena is replaced, not overwritten, since results of the
// previous batch may still refer to it.
func (p *Plan) Reset() {
	clear(p.Txns)
	p.Txns = p.Txns[:0]
	p.arena = nil
	p.ops = p.ops[:0:0]
	p.keys = p.keys[:0:0]
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
// Ops, saving an allocation per event.
func (p *Plan) Ops(n int) []txn.Op {
	if cap(p.ops)-len(p.ops) < n {
		p.ops = make([]txn.Op, 0, max(4096, n))
	}
	k := len(p.ops)
	p.ops = p.ops[:k+n]
	return p.ops[k : k+n : k+n]
}

// Keys returns n zeroed keys carved from a shared slab, for an Op's Reads.
func (p *Plan) Keys(n int) []txn.Key {
	if cap(p.keys)-len(p.keys) < n {
		p.keys = make([]txn.Key, 0, max(4096, n))
	}
	k := len(p.keys)
	p.keys = p.keys[:k+n]
	return p.keys[k : k+n : k+n]
}

// Config configures an Operator.
type Config struct {
	// Name is the operator's name, for errors and logs.
	Name string
	// Tables names the state tables: table handle i (txn.Key.Table) is
	// Tables[i].
	Tables []string
	// Strategy is the scheduling strategy.
	Strategy txn.Strategy
	// Workers is the number of scheduler workers (at least 1). A Wasm
	// Logic must have one instance per worker.
	Workers int
	// Logic is the operator's logic; the Operator closes it.
	Logic Logic
	// Logger receives the scheduler's logs (default slog.Default()).
	Logger *slog.Logger
}

// Operator runs one transactional operator.
type Operator struct {
	cfg   Config
	sched *txn.Scheduler
	plan  Plan
	ctx   context.Context // the batch in progress, for apply
	apply txn.Apply
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
	o := &Operator{cfg: cfg, sched: s}
	o.apply = func(t, op int, x *txn.Op, a txn.Access) (txn.Effect, error) {
		return o.cfg.Logic.Apply(o.ctx, t, op, x, a)
	}
	return o, nil
}

// Name returns the operator's name.
func (o *Operator) Name() string { return o.cfg.Name }

// Tables returns the names of the operator's tables, by handle.
func (o *Operator) Tables() []string { return o.cfg.Tables }

// Strategy returns the operator's scheduling strategy.
func (o *Operator) Strategy() txn.Strategy { return o.cfg.Strategy }

// SetStrategy changes the strategy from the next batch on.
func (o *Operator) SetStrategy(st txn.Strategy) { o.cfg.Strategy = st }

// Workers returns the number of scheduler workers.
func (o *Operator) Workers() int { return o.cfg.Workers }

// Process runs one batch of events over the committed state store: plan,
// schedule, post. The outputs are appended to out; the returned Result
// holds the change set to commit (keys by table handle) and the batch's
// statistics. The Result, its keys and the outputs are valid until the
// next Process. An error fails the whole batch; nothing of it must be
// committed.
func (o *Operator) Process(ctx context.Context, events []abi.Record, store txn.Store, out *plugin.Output) (*txn.Result, error) {
	o.plan.Reset()
	if err := o.cfg.Logic.Plan(ctx, events, &o.plan); err != nil {
		return nil, fmt.Errorf("txnop: operator %q: plan: %w", o.cfg.Name, err)
	}
	if len(o.plan.Txns) != len(events) {
		return nil, fmt.Errorf("txnop: operator %q: plan declared %d transactions for %d events", o.cfg.Name, len(o.plan.Txns), len(events))
	}
	if err := o.checkTables(); err != nil {
		return nil, err
	}
	o.ctx = ctx
	res, err := o.sched.Run(ctx, o.cfg.Strategy, o.plan.Txns, store, o.apply)
	o.ctx = nil
	if err != nil {
		var oe *txn.OpError
		if errors.As(err, &oe) {
			return nil, fmt.Errorf("txnop: operator %q: event %d of the batch: %w", o.cfg.Name, oe.Txn, err)
		}
		return nil, fmt.Errorf("txnop: operator %q: %w", o.cfg.Name, err)
	}
	if err := o.cfg.Logic.Post(ctx, events, &o.plan, res, out); err != nil {
		return nil, fmt.Errorf("txnop: operator %q: post: %w", o.cfg.Name, err)
	}
	return res, nil
}

// checkTables refuses a plan that names a table handle the operator does
// not have.
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
