package txnop

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"

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

// wasmWorker is one worker's instance, with the state of the plan or post
// part it serves. Each lives in its own allocation, padded, so that two
// workers' state never shares a cache line.
type wasmWorker struct {
	inst *plugin.Instance

	// Plan of a part.
	decl  func(*abi.OpDecl) error // w.declare, bound once
	plan  *Plan                   // the plan being declared, during Plan
	nEv   int                     // events in the part being planned
	nDecl int                     // declarations seen in the part

	// Post of a part: the outcomes' encoding.
	outcomes []byte

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

// StartBatch gives the batch's events to every worker's instance, whose
// applies read their event's time and identity from them.
func (l *wasmLogic) StartBatch(events []abi.Record) {
	for _, wk := range l.workers {
		wk.inst.SetEvents(events)
	}
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
	defer func() { wk.plan = nil }()
	err := wk.inst.Plan(ctx, events, wk.decl)
	// The operations of the last event, or of the event a failed call was
	// declaring: the plan's chunks must have no open run.
	if len(events) > 0 {
		wk.closeEvent()
	}
	if err != nil {
		return err
	}
	for len(p.Txns) < len(events) {
		p.Txns = append(p.Txns, txn.Txn{})
	}
	return nil
}

// declare takes one declaration of the guest. Declarations come in event
// order: the operations of event len(plan.Txns) are built in place, as the
// open run of the plan's chunks of operations, until a declaration for a
// later event closes it; events skipped are empty transactions. Nothing
// is allocated per declaration: the key and argument are copied into the
// plan's arena (they alias guest memory, which the guest reuses), the
// operation and its reads are carved from the plan's chunks.
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
	if d.Flags&abi.OpFlagNonDet != 0 && len(d.Key) != 0 {
		return fmt.Errorf("declaration %d of the batch (event %d operation %d) is non-deterministic but names key %q: a non-deterministic operation has no key of its own", k, e, len(p.ops.cur)-p.ops.open, d.Key)
	}
	// An argument equal to the previous operation's of the event (an
	// event's operations often share its parameters) shares its copy.
	var arg []byte
	if prev := p.ops.last(); prev != nil && bytes.Equal(prev.Arg, d.Arg) {
		arg = prev.Arg
	} else {
		arg = p.Bytes(d.Arg)
	}
	op := p.ops.grow()
	op.Fn, op.Arg = d.Fn, arg
	if d.Flags&abi.OpFlagWindow != 0 {
		op.Window = d.Window
	}
	if d.Flags&abi.OpFlagNonDet != 0 {
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
	return nil
}

// closeEvent appends the transaction of the event being declared: the
// plan's open run of operations.
func (l *wasmWorker) closeEvent() {
	p := l.plan
	p.Txns = append(p.Txns, txn.Txn{Ops: p.ops.run()})
}

// Apply runs one operation on the instance of the calling worker, which
// encodes its request straight from o and a.
func (l *wasmLogic) Apply(ctx context.Context, t, op int, o *txn.Op, a txn.Access) (txn.Effect, error) {
	wid := a.Worker()
	if wid < 0 || wid >= len(l.workers) {
		return txn.Effect{}, fmt.Errorf("txnop: plugin %q: apply on worker %d, but the logic has %d instances (NewWasm's workers must equal the Operator's)", l.p.Name(), wid, len(l.workers))
	}
	return l.workers[wid].inst.ApplyOp(ctx, t, op, o, a)
}

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
		b = appendOutcome(b, t, len(p.Txns[t].Ops), res)
	}
	wk.outcomes = b
	r0, j0 := len(out.Records), len(out.Rejects)
	err := wk.inst.Post(ctx, events[lo:hi], b, out)
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

// appendOutcome appends the outcome of transaction t, of ops operations,
// to b: abi.AppendEventOutcome's encoding (wasm_internal_test.go checks),
// written straight from the Result's observations in one pass, after one
// over their sizes for a single growth of b, rather than through an
// abi.EventOutcome built for each event.
func appendOutcome(b []byte, t, ops int, res *txn.Result) []byte {
	n := 8
	for m := range ops {
		ob := res.Observed(t, m)
		n += 4 + 8 + len(ob.Own.Bytes) + 4 + 8*len(ob.Reads) + 4 + 16*len(ob.Gets)
		for _, v := range ob.Reads {
			n += len(v.Bytes)
		}
		for _, g := range ob.Gets {
			n += len(g.Key.Key) + len(g.Value.Bytes)
		}
	}
	at := len(b)
	b = slices.Grow(b, n)[:at+n]
	e := b[at:]
	le := binary.LittleEndian
	le.PutUint32(e, b2u(res.Committed[t]))
	le.PutUint32(e[4:], uint32(ops))
	p := 8
	for m := range ops {
		ob := res.Observed(t, m)
		le.PutUint32(e[p:], b2u(ob.Executed))
		p += 4 + putValue(e[p+4:], ob.Own)
		le.PutUint32(e[p:], uint32(len(ob.Reads)))
		p += 4
		for _, v := range ob.Reads {
			p += putValue(e[p:], v)
		}
		le.PutUint32(e[p:], uint32(len(ob.Gets)))
		p += 4
		for _, g := range ob.Gets {
			le.PutUint32(e[p:], g.Key.Table)
			le.PutUint32(e[p+4:], uint32(len(g.Key.Key)))
			p += 8 + copy(e[p+8:], g.Key.Key)
			p += putValue(e[p:], g.Value)
		}
	}
	return b
}

// putValue writes v as found flag, length and bytes, and returns the bytes
// written.
func putValue(b []byte, v txn.Value) int {
	binary.LittleEndian.PutUint32(b, b2u(v.Found))
	binary.LittleEndian.PutUint32(b[4:], uint32(len(v.Bytes)))
	return 8 + copy(b[8:], v.Bytes)
}

func b2u(b bool) uint32 {
	if b {
		return 1
	}
	return 0
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
