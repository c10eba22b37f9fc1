package hosttest

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/sluicehq/sluice/abi"
	"github.com/sluicehq/sluice/host/plugin"
	"github.com/sluicehq/sluice/host/txnop"
	"github.com/sluicehq/sluice/sdk/go/sluice"
	"github.com/sluicehq/sluice/sdk/go/sluice/sluicetest"
	"github.com/sluicehq/sluice/txn"
)

// nativePlugin is the plugin name of the RecordErrors of a native
// transactional operator's rejected events.
const nativePlugin = "native"

// TxnLogic returns the transactional operator op as a txnop.Logic that runs
// its handlers natively, in this process, on the host's scheduler: Plan
// appends to the txnop.Plan directly, functions read and write through the
// scheduler's txn.Access, and Post builds each event's Outcome from the
// txn.Result. No ABI encoding is involved, so this is the native-Go
// baseline a WebAssembly build of the same source (LoadTxnWasm) is measured
// against, and the two can be compared record for record.
//
// tables names the operator's state tables, handle i being tables[i], as
// txnop.Config.Tables; the operator's TableID calls resolve against them.
// Run the Logic with txnop.New (which closes it):
//
//	op, err := txnop.New(txnop.Config{Name: "ledger", Tables: tables, Strategy: st, Workers: 2,
//		Logic: hosttest.TxnLogic(ledger.Op, tables)})
//
// An event whose Post fails is rejected with a *plugin.RecordError wrapping
// plugin.ErrRejected, as the host does. TxnLogic panics when op is not
// usable (a nil Plan, no Funcs, a nil function), as sluice.Transactional
// does.
//
// Apply allocates nothing per call but the copy of the value written (the
// scheduler keeps it as a version), and for a non-deterministic operation
// the keys it touches and the values it Puts.
func TxnLogic(op sluice.Txn, tables []string) txnop.Logic {
	return newNativeLogic(func() sluice.Txn { return op }, tables, false)
}

// TxnLogicParts is TxnLogic for an operator that plans and posts in parts
// (txnop.PartLogic), as a WebAssembly operator does with one instance per
// scheduler worker: newOp is called once per part, on first use, and each
// part's Plan and Post run on its own operator value, all parts at once.
// An operator whose handlers keep state across events (buffers included)
// must therefore be made by newOp, not shared; Plan and Post must depend
// only on their event and its outcome, as abi/ABI.md requires of a guest
// whose instances split a batch. The outcome of every transaction is the
// same as TxnLogic's.
func TxnLogicParts(newOp func() sluice.Txn, tables []string) txnop.Logic {
	return &nativePartLogic{newNativeLogic(newOp, tables, true)}
}

func newNativeLogic(newOp func() sluice.Txn, tables []string, parts bool) *nativeLogic {
	l := &nativeLogic{newOp: newOp, tables: tables, split: parts}
	// The first part's driver is made now, so that an unusable operator
	// panics here rather than in a batch.
	l.parts.Store(&[]*nativePart{l.newPart()})
	l.workers.Store(&[]*nativeWorker{})
	return l
}

// nativeLogic implements txnop.Logic over the SDK's native driver. Plan and
// Post run on the Operator's goroutine, or, in parts, on one goroutine per
// part with a driver each; Apply concurrently, each worker on its own
// nativeWorker, found by index.
type nativeLogic struct {
	newOp  func() sluice.Txn
	tables []string
	split  bool // a driver per part; false: part 0's serves all

	// parts and workers are copied on write, under mu, when an index is
	// seen for the first time; they are read without a lock.
	parts   atomic.Pointer[[]*nativePart]
	workers atomic.Pointer[[]*nativeWorker]
	mu      sync.Mutex
}

// nativePart is the driver and Post's reused buffers of one part of a
// batch.
type nativePart struct {
	d       sluicetest.TxnDriver
	outcome abi.EventOutcome
	ops     []abi.OpOutcome
	vals    []abi.Value
	gets    []abi.KeyValue
	spans   []outcomeSpan
	dec     abi.Decoder
	rec     abi.Record
}

// nativePartLogic is a nativeLogic that plans and posts in parts.
type nativePartLogic struct{ *nativeLogic }

var _ txnop.PartLogic = (*nativePartLogic)(nil)

// newPart returns a part with a driver of its own. It panics when the
// operator is not usable, as sluice.Transactional does.
func (l *nativeLogic) newPart() *nativePart {
	d, err := sluicetest.NewTxnDriver(l.newOp(), l.tables)
	if err != nil {
		panic(err.Error())
	}
	return &nativePart{d: d}
}

// part returns part i, making it on first use.
func (l *nativeLogic) part(i int) *nativePart {
	if !l.split {
		i = 0
	}
	if ps := *l.parts.Load(); i < len(ps) && ps[i] != nil {
		return ps[i]
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	ps := *l.parts.Load()
	if i < len(ps) && ps[i] != nil {
		return ps[i]
	}
	grown := make([]*nativePart, max(len(ps), i+1))
	copy(grown, ps)
	grown[i] = l.newPart()
	l.parts.Store(&grown)
	return grown[i]
}

// nativeWorker is one scheduler worker's state.
type nativeWorker struct {
	w    sluicetest.TxnWorker
	q    abi.ApplyRequest
	acc  nativeAccess
	vers []abi.WindowVersion // the windows of a windowed read's request
}

// worker returns worker i's state, making it on first use.
func (l *nativeLogic) worker(i int) *nativeWorker {
	if ws := *l.workers.Load(); i < len(ws) && ws[i] != nil {
		return ws[i]
	}
	d := l.part(0).d // every worker's applies are its: a worker keeps no state across them
	l.mu.Lock()
	defer l.mu.Unlock()
	ws := *l.workers.Load()
	if i < len(ws) && ws[i] != nil {
		return ws[i]
	}
	grown := make([]*nativeWorker, max(len(ws), i+1))
	copy(grown, ws)
	grown[i] = &nativeWorker{w: d.NewWorker()}
	l.workers.Store(&grown)
	return grown[i]
}

func (l *nativeLogic) Plan(_ context.Context, events []abi.Record, p *txnop.Plan) error {
	return l.part(0).plan(events, 0, p)
}

// PlanPart plans the batch's events first to first+len(events)-1 on part
// w's driver.
func (l *nativePartLogic) PlanPart(_ context.Context, w int, events []abi.Record, first int, p *txnop.Plan) error {
	return l.part(w).plan(events, first, p)
}

// plan appends a transaction per event to p; event i of events is the
// batch's event first+i.
func (pt *nativePart) plan(events []abi.Record, first int, p *txnop.Plan) error {
	for i := range events {
		decls, err := pt.d.Plan(first+i, &events[i])
		if err != nil {
			return err
		}
		ops := p.Ops(len(decls))
		for m := range decls {
			d, o := &decls[m], &ops[m]
			o.Fn = d.Fn
			if d.Flags&abi.OpFlagWindow != 0 {
				o.Window = d.Window
			}
			if d.Flags&abi.OpFlagNonDet != 0 {
				o.NonDet, o.Table = true, d.Table
			} else {
				o.Write = p.Key(d.Table, d.Key)
			}
			if len(d.Reads) > 0 {
				o.Reads = p.Keys(len(d.Reads))
				for j := range d.Reads {
					o.Reads[j] = p.Key(d.Reads[j].Table, d.Reads[j].Key)
				}
			}
			o.Arg = p.Bytes(d.Arg)
		}
		p.Txns = append(p.Txns, txn.Txn{Ops: ops})
	}
	return nil
}

func (l *nativeLogic) Apply(_ context.Context, t, op int, o *txn.Op, a txn.Access) (txn.Effect, error) {
	w := l.worker(a.Worker())
	// The request as sluice_apply would receive it, its values read
	// from a at once (the scheduler has them ready), without the reads'
	// keys, which the SDK does not show.
	q := &w.q
	q.Fn, q.Event, q.Op, q.Flags, q.Table, q.Key, q.Arg = o.Fn, uint32(t), uint32(op), 0, o.Table, nil, o.Arg
	q.Own = abi.Value{}
	if o.NonDet {
		q.Flags = abi.OpFlagNonDet
	} else {
		q.Table, q.Key = o.Write.Table, bytesOf(o.Write.Key)
		q.Own.Bytes, q.Own.Found = a.Own()
	}
	if cap(q.Reads) < len(o.Reads) {
		q.Reads = make([]abi.ReadValue, len(o.Reads))
	}
	q.Reads = q.Reads[:len(o.Reads)]
	for i := range q.Reads {
		q.Reads[i].Bytes, q.Reads[i].Found = a.Read(i)
		q.Reads[i].Window = nil
	}
	if o.Window > 0 {
		// The windows as sluice_apply would receive them.
		q.Flags |= abi.OpFlagWindow
		wr, _ := a.(txn.WindowReader) // every strategy's Access is one
		w.vers = w.vers[:0]
		var ends []int
		for i := range q.Reads {
			for _, v := range wr.Window(i) {
				w.vers = append(w.vers, abi.WindowVersion{Back: uint32(v.Back), Value: abiValue(v.Value)})
			}
			ends = append(ends, len(w.vers))
		}
		lo := 0
		for i, hi := range ends {
			q.Reads[i].Window = w.vers[lo:hi:hi]
			lo = hi
		}
	}
	w.acc.a, w.acc.nondet = a, o.NonDet
	code, v, err := w.w.Apply(q, &w.acc)
	w.acc.a = nil
	switch {
	case err != nil:
		return txn.Effect{}, err
	case o.NonDet && code != abi.ApplyAbort:
		return txn.Effect{}, nil // its writes are its Puts and Deletes
	}
	switch code {
	case abi.ApplyWrite:
		// The scheduler keeps the value; the function may reuse its
		// buffer.
		var c []byte
		if v != nil {
			c = make([]byte, len(v))
			copy(c, v)
		}
		return txn.Effect{Value: c}, nil
	case abi.ApplyKeep:
		return txn.Effect{Keep: true}, nil
	case abi.ApplyDelete:
		return txn.Effect{Delete: true}, nil
	case abi.ApplyAbort:
		return txn.Effect{Abort: true}, nil
	}
	return txn.Effect{}, fmt.Errorf("hosttest: the SDK returned the unknown apply code %d", code)
}

func (l *nativeLogic) Post(_ context.Context, events []abi.Record, p *txnop.Plan, res *txn.Result, out *plugin.Output) error {
	return l.part(0).post(events, 0, len(events), p, res, out)
}

// PostPart posts the batch's events lo to hi-1 on part w's driver.
func (l *nativePartLogic) PostPart(_ context.Context, w int, events []abi.Record, lo, hi int, p *txnop.Plan, res *txn.Result, out *plugin.Output) error {
	return l.part(w).post(events, lo, hi, p, res, out)
}

// post runs the Post handler on the batch's events lo to hi-1 and appends
// their outputs and rejects, by batch index, to out.
func (pt *nativePart) post(events []abi.Record, lo, hi int, p *txnop.Plan, res *txn.Result, out *plugin.Output) error {
	pt.d.BeginPost()
	for i := lo; i < hi; i++ {
		pt.outcomeOf(res, i, len(p.Txns[i].Ops))
		if err := pt.d.Post(i, &events[i], &pt.outcome); err != nil {
			out.Rejects = append(out.Rejects, plugin.Reject{Index: i, Err: &plugin.RecordError{
				Plugin: nativePlugin, Export: abi.ExportPost, Index: i, Reason: err.Error(), Err: plugin.ErrRejected,
			}})
		}
	}
	pt.outcome = abi.EventOutcome{}
	// The outputs alias the driver's buffer, which it reuses from the next
	// batch's Post on: valid until the next Process, as txnop promises.
	if err := pt.dec.Reset(pt.d.Outputs()); err != nil {
		return fmt.Errorf("hosttest: decoding the outputs: %w", err)
	}
	r := &pt.rec
	for pt.dec.Next(r) {
		if len(r.Headers) > 0 {
			r.Headers = append([]abi.Header(nil), r.Headers...) // the decoder reuses its slice
		}
		out.Records = append(out.Records, *r)
	}
	*r = abi.Record{}
	if err := pt.dec.Err(); err != nil {
		return fmt.Errorf("hosttest: decoding the outputs: %w", err)
	}
	return nil
}

// outcomeSpan locates an operation's reads and gets in a part's shared
// buffers.
type outcomeSpan struct{ r0, r1, g0, g1 int }

// outcomeOf fills pt.outcome with event t's outcome, of n operations.
func (pt *nativePart) outcomeOf(res *txn.Result, t, n int) {
	pt.ops, pt.vals, pt.gets, pt.spans = pt.ops[:0], pt.vals[:0], pt.gets[:0], pt.spans[:0]
	for m := range n {
		ob := res.Observed(t, m)
		var s outcomeSpan
		s.r0 = len(pt.vals)
		for _, v := range ob.Reads {
			pt.vals = append(pt.vals, abiValue(v))
		}
		s.r1, s.g0 = len(pt.vals), len(pt.gets)
		for _, g := range ob.Gets {
			pt.gets = append(pt.gets, abi.KeyValue{TableKey: abi.TableKey{Table: g.Key.Table, Key: bytesOf(g.Key.Key)}, Value: abiValue(g.Value)})
		}
		s.g1 = len(pt.gets)
		pt.ops = append(pt.ops, abi.OpOutcome{Executed: ob.Executed, Own: abiValue(ob.Own)})
		pt.spans = append(pt.spans, s)
	}
	// Slice the shared buffers only now: the appends may have moved them.
	for m := range pt.ops {
		s := pt.spans[m]
		pt.ops[m].Reads = pt.vals[s.r0:s.r1:s.r1]
		pt.ops[m].Gets = pt.gets[s.g0:s.g1:s.g1]
	}
	pt.outcome = abi.EventOutcome{Committed: res.Committed[t], Ops: pt.ops}
}

func abiValue(v txn.Value) abi.Value { return abi.Value{Found: v.Found, Bytes: v.Bytes} }

func (l *nativeLogic) Close(context.Context) error { return nil }

// nativeAccess is a sluicetest.TxnAccess over a txn.Access. The scheduler keeps
// the keys a non-deterministic operation touches and the values it writes,
// which the SDK's caller may reuse: those are copied. A deterministic
// operation's Get only compares its key, which is passed without a copy.
type nativeAccess struct {
	a      txn.Access
	nondet bool
}

func (n *nativeAccess) Get(table uint32, key []byte) ([]byte, bool, error) {
	k := txn.Key{Table: table}
	if n.nondet {
		k.Key = string(key)
	} else {
		k.Key = unsafe.String(unsafe.SliceData(key), len(key))
	}
	return n.a.Get(k)
}

func (n *nativeAccess) Put(table uint32, key, value []byte) error {
	v := make([]byte, len(value))
	copy(v, value)
	return n.a.Put(txn.Key{Table: table, Key: string(key)}, v)
}

func (n *nativeAccess) Delete(table uint32, key []byte) error {
	return n.a.Delete(txn.Key{Table: table, Key: string(key)})
}

// bytesOf returns the bytes of s without a copy; they must not be modified.
func bytesOf(s string) []byte { return unsafe.Slice(unsafe.StringData(s), len(s)) }
