package txnop

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"unsafe"

	"github.com/sluicehq/sluice/abi"
	"github.com/sluicehq/sluice/host/plugin"
	"github.com/sluicehq/sluice/txn"
)

// wasmLogic is the Logic of a WebAssembly guest: one plugin instance per
// scheduler worker, instance 0 also serving plan and post (which run
// before and after the scheduler, never beside an apply).
type wasmLogic struct {
	p       *plugin.Plugin
	workers []*wasmWorker
}

// wasmWorker is one worker's instance and the request it reuses for every
// apply, with the state of the plan or post part it serves. Each lives in
// its own allocation, padded, so that two workers' requests never share a
// cache line.
type wasmWorker struct {
	inst *plugin.Instance
	q    abi.ApplyRequest

	// Plan of a part.
	decl  func(*abi.OpDecl) error // w.declare, bound once
	plan  *Plan                   // the plan being declared, during Plan
	nEv   int                     // events in the part being planned
	ops   []txn.Op                // operations of the event being declared
	nDecl int                     // declarations seen in the part

	// Post of a part: the outcomes' encoding and the buffers that build
	// each event's abi.EventOutcome.
	outcomes []byte
	outOps   []abi.OpOutcome
	outVals  []abi.Value
	outGets  []abi.KeyValue
	ev       abi.EventOutcome

	_ [64]byte
}

var _ PartLogic = (*wasmLogic)(nil)

// NewWasm returns the Logic of a transactional WebAssembly plugin, with one
// instance per scheduler worker, each configured with config (the
// operator's configuration as JSON). workers must equal the Workers of the
// Operator's Config. Closing the Logic closes the instances, not the
// plugin.
func NewWasm(ctx context.Context, p *plugin.Plugin, workers int, config []byte) (Logic, error) {
	if p.Kind() != plugin.KindTransactional {
		return nil, fmt.Errorf("txnop: plugin %q was loaded for %s operators, want %s", p.Name(), p.Kind(), plugin.KindTransactional)
	}
	if workers < 1 {
		return nil, fmt.Errorf("txnop: plugin %q: %d workers, want at least 1", p.Name(), workers)
	}
	l := &wasmLogic{p: p, workers: make([]*wasmWorker, workers)}
	for w := range l.workers {
		inst, err := p.NewInstance(ctx, config)
		if err != nil {
			return nil, errors.Join(fmt.Errorf("txnop: plugin %q: instance for worker %d: %w", p.Name(), w, err), l.Close(ctx))
		}
		wk := &wasmWorker{inst: inst}
		wk.decl = wk.declare
		l.workers[w] = wk
	}
	return l, nil
}

// Plan runs the guest's sluice_plan on instance 0 and turns its
// declarations into one transaction per event.
func (l *wasmLogic) Plan(ctx context.Context, events []abi.Record, p *Plan) error {
	return l.PlanPart(ctx, 0, events, 0, p)
}

// PlanPart runs sluice_plan on worker w's instance for a part of the
// batch; the guest numbers the part's events from 0.
func (l *wasmLogic) PlanPart(ctx context.Context, w int, events []abi.Record, _ int, p *Plan) error {
	wk := l.workers[w]
	wk.plan, wk.nEv, wk.nDecl = p, len(events), 0
	wk.ops = wk.ops[:0]
	defer func() {
		wk.plan = nil
		clear(wk.ops) // the operations point into the plan's arena
		wk.ops = wk.ops[:0]
	}()
	if err := wk.inst.Plan(ctx, events, wk.decl); err != nil {
		return err
	}
	if len(events) > 0 {
		wk.closeEvent()
	}
	for len(p.Txns) < len(events) {
		p.Txns = append(p.Txns, txn.Txn{})
	}
	return nil
}

// declare takes one declaration of the guest. Declarations come in event
// order: the operations of event len(plan.Txns) are collected in l.ops
// until a declaration for a later event closes it; events skipped are
// empty transactions.
func (l *wasmWorker) declare(d *abi.OpDecl) error {
	p := l.plan
	k := l.nDecl
	l.nDecl++
	e, cur := int(d.Event), len(p.Txns)
	switch {
	case e >= l.nEv:
		return fmt.Errorf("declaration %d of the batch is for event %d, but the batch has %d events", k, e, l.nEv)
	case e < cur:
		return fmt.Errorf("declaration %d of the batch is for event %d, after declarations for event %d: event indices must not decrease", k, e, cur)
	case e > cur:
		l.closeEvent()
		for len(p.Txns) < e {
			p.Txns = append(p.Txns, txn.Txn{})
		}
	}
	op := txn.Op{Fn: d.Fn, Arg: p.Bytes(d.Arg)}
	if d.Flags&abi.OpFlagNonDet != 0 {
		if len(d.Key) != 0 {
			return fmt.Errorf("declaration %d of the batch (event %d operation %d) is non-deterministic but names key %q: a non-deterministic operation has no key of its own", k, e, len(l.ops), d.Key)
		}
		op.NonDet, op.Table = true, d.Table
	} else {
		op.Write = p.Key(d.Table, d.Key)
	}
	if len(d.Reads) > 0 {
		op.Reads = p.Keys(len(d.Reads))
		for j := range d.Reads {
			op.Reads[j] = p.Key(d.Reads[j].Table, d.Reads[j].Key)
		}
	}
	l.ops = append(l.ops, op)
	return nil
}

// closeEvent appends the transaction of the event being declared.
func (l *wasmWorker) closeEvent() {
	p := l.plan
	var ops []txn.Op
	if len(l.ops) > 0 {
		ops = p.Ops(len(l.ops))
		copy(ops, l.ops)
	}
	p.Txns = append(p.Txns, txn.Txn{Ops: ops})
	clear(l.ops)
	l.ops = l.ops[:0]
}

// Apply runs one operation on the instance of the calling worker.
func (l *wasmLogic) Apply(ctx context.Context, t, op int, o *txn.Op, a txn.Access) (txn.Effect, error) {
	wid := a.Worker()
	if wid < 0 || wid >= len(l.workers) {
		return txn.Effect{}, fmt.Errorf("txnop: plugin %q: apply on worker %d, but the logic has %d instances (NewWasm's workers must equal the Operator's)", l.p.Name(), wid, len(l.workers))
	}
	w := l.workers[wid]
	q := &w.q
	q.Fn, q.Event, q.Op, q.Arg = o.Fn, uint32(t), uint32(op), o.Arg
	if o.NonDet {
		q.Flags, q.Table, q.Key, q.Own = abi.OpFlagNonDet, o.Table, nil, abi.Value{}
	} else {
		v, found := a.Own()
		q.Flags, q.Table, q.Key, q.Own = 0, o.Write.Table, keyBytes(o.Write.Key), abi.Value{Found: found, Bytes: v}
	}
	q.Reads = q.Reads[:0]
	for j := range o.Reads {
		v, found := a.Read(j)
		q.Reads = append(q.Reads, abi.ReadValue{
			TableKey: abi.TableKey{Table: o.Reads[j].Table, Key: keyBytes(o.Reads[j].Key)},
			Value:    abi.Value{Found: found, Bytes: v},
		})
	}
	return w.inst.Apply(ctx, q, a)
}

// keyBytes views a key's bytes without copying; the views are only read.
func keyBytes(s string) []byte { return unsafe.Slice(unsafe.StringData(s), len(s)) }

// Post encodes every event's outcome and runs the guest's sluice_post on
// instance 0.
func (l *wasmLogic) Post(ctx context.Context, events []abi.Record, p *Plan, res *txn.Result, out *plugin.Output) error {
	return l.PostPart(ctx, 0, events, 0, len(events), p, res, out)
}

// PostPart runs sluice_post on worker w's instance for events lo to hi-1;
// the guest numbers them from 0, and their outputs' origins and rejects'
// indices are shifted back to batch indices.
func (l *wasmLogic) PostPart(ctx context.Context, w int, events []abi.Record, lo, hi int, p *Plan, res *txn.Result, out *plugin.Output) error {
	wk := l.workers[w]
	b := abi.AppendOutcomesHeader(wk.outcomes[:0], uint32(hi-lo))
	for t := lo; t < hi; t++ {
		b = abi.AppendEventOutcome(b, wk.outcome(t, &p.Txns[t], res))
	}
	wk.outcomes = b
	r0, j0 := len(out.Records), len(out.Rejects)
	err := wk.inst.Post(ctx, events[lo:hi], b, out)
	// They point into the Result's versions: do not keep them alive.
	clear(wk.outVals[:cap(wk.outVals)])
	clear(wk.outGets[:cap(wk.outGets)])
	clear(wk.outOps[:cap(wk.outOps)])
	if lo > 0 {
		for i := r0; i < len(out.Records); i++ {
			out.Records[i].Origin += uint32(lo)
		}
		for i := j0; i < len(out.Rejects); i++ {
			rj := &out.Rejects[i]
			rj.Index += lo
			var re *plugin.RecordError
			if errors.As(rj.Err, &re) {
				re.Index += lo
			}
		}
	}
	return err
}

// outcome builds the abi form of transaction t's outcome in l's buffers,
// valid until the next call.
func (l *wasmWorker) outcome(t int, tx *txn.Txn, res *txn.Result) *abi.EventOutcome {
	nr, ng := 0, 0
	for m := range tx.Ops {
		ob := res.Observed(t, m)
		nr += len(ob.Reads)
		ng += len(ob.Gets)
	}
	// Grown once to the event's needs, so that the per-operation slices
	// below are not moved by a later append.
	ops := slices.Grow(l.outOps[:0], len(tx.Ops))
	vals := slices.Grow(l.outVals[:0], nr)
	gets := slices.Grow(l.outGets[:0], ng)
	for m := range tx.Ops {
		ob := res.Observed(t, m)
		r0, g0 := len(vals), len(gets)
		for _, v := range ob.Reads {
			vals = append(vals, abi.Value{Found: v.Found, Bytes: v.Bytes})
		}
		for _, g := range ob.Gets {
			gets = append(gets, abi.KeyValue{
				TableKey: abi.TableKey{Table: g.Key.Table, Key: keyBytes(g.Key.Key)},
				Value:    abi.Value{Found: g.Value.Found, Bytes: g.Value.Bytes},
			})
		}
		ops = append(ops, abi.OpOutcome{
			Executed: ob.Executed,
			Own:      abi.Value{Found: ob.Own.Found, Bytes: ob.Own.Bytes},
			Reads:    vals[r0:len(vals):len(vals)],
			Gets:     gets[g0:len(gets):len(gets)],
		})
	}
	l.outOps, l.outVals, l.outGets = ops, vals, gets
	l.ev = abi.EventOutcome{Committed: res.Committed[t], Ops: ops}
	return &l.ev
}

// Close closes the instances.
func (l *wasmLogic) Close(ctx context.Context) error {
	var errs []error
	for _, w := range l.workers {
		if w != nil {
			errs = append(errs, w.inst.Close(ctx))
		}
	}
	return errors.Join(errs...)
}
