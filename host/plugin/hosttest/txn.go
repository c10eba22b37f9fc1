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
	d, err := sluicetest.NewTxnDriver(op, tables)
	if err != nil {
		panic(err.Error())
	}
	l := &nativeLogic{d: d}
	l.workers.Store(&[]*nativeWorker{})
	return l
}

// nativeLogic implements txnop.Logic over the SDK's native driver. Plan and
// Post run on the Operator's goroutine; Apply concurrently, each worker on
// its own nativeWorker, found by index.
type nativeLogic struct {
	d sluicetest.TxnDriver

	// workers is copied on write, under mu, when a worker index is seen
	// for the first time; Apply reads it without a lock.
	workers atomic.Pointer[[]*nativeWorker]
	mu      sync.Mutex

	// Post's reused buffers.
	outcome abi.EventOutcome
	ops     []abi.OpOutcome
	vals    []abi.Value
	gets    []abi.KeyValue
	dec     abi.Decoder
	rec     abi.Record
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
	l.mu.Lock()
	defer l.mu.Unlock()
	ws := *l.workers.Load()
	if i < len(ws) && ws[i] != nil {
		return ws[i]
	}
	grown := make([]*nativeWorker, max(len(ws), i+1))
	copy(grown, ws)
	grown[i] = &nativeWorker{w: l.d.NewWorker()}
	l.workers.Store(&grown)
	return grown[i]
}

func (l *nativeLogic) Plan(_ context.Context, events []abi.Record, p *txnop.Plan) error {
	for i := range events {
		decls, err := l.d.Plan(i, &events[i])
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
	l.d.BeginPost()
	for i := range events {
		l.outcomeOf(res, i, len(p.Txns[i].Ops))
		if err := l.d.Post(i, &events[i], &l.outcome); err != nil {
			out.Rejects = append(out.Rejects, plugin.Reject{Index: i, Err: &plugin.RecordError{
				Plugin: nativePlugin, Export: abi.ExportPost, Index: i, Reason: err.Error(), Err: plugin.ErrRejected,
			}})
		}
	}
	l.outcome = abi.EventOutcome{}
	// The outputs alias the driver's buffer, which it reuses from the next
	// batch's Post on: valid until the next Process, as txnop promises.
	if err := l.dec.Reset(l.d.Outputs()); err != nil {
		return fmt.Errorf("hosttest: decoding the outputs: %w", err)
	}
	r := &l.rec
	for l.dec.Next(r) {
		if len(r.Headers) > 0 {
			r.Headers = append([]abi.Header(nil), r.Headers...) // the decoder reuses its slice
		}
		out.Records = append(out.Records, *r)
	}
	*r = abi.Record{}
	if err := l.dec.Err(); err != nil {
		return fmt.Errorf("hosttest: decoding the outputs: %w", err)
	}
	return nil
}

// outcomeOf fills l.outcome with event t's outcome, of n operations.
func (l *nativeLogic) outcomeOf(res *txn.Result, t, n int) {
	l.ops, l.vals, l.gets = l.ops[:0], l.vals[:0], l.gets[:0]
	type span struct{ r0, r1, g0, g1 int }
	spans := make([]span, 0, 8)
	for m := range n {
		ob := res.Observed(t, m)
		var s span
		s.r0 = len(l.vals)
		for _, v := range ob.Reads {
			l.vals = append(l.vals, abiValue(v))
		}
		s.r1, s.g0 = len(l.vals), len(l.gets)
		for _, g := range ob.Gets {
			l.gets = append(l.gets, abi.KeyValue{TableKey: abi.TableKey{Table: g.Key.Table, Key: bytesOf(g.Key.Key)}, Value: abiValue(g.Value)})
		}
		s.g1 = len(l.gets)
		l.ops = append(l.ops, abi.OpOutcome{Executed: ob.Executed, Own: abiValue(ob.Own)})
		spans = append(spans, s)
	}
	// Slice the shared buffers only now: the appends may have moved them.
	for m := range l.ops {
		s := spans[m]
		l.ops[m].Reads = l.vals[s.r0:s.r1:s.r1]
		l.ops[m].Gets = l.gets[s.g0:s.g1:s.g1]
	}
	l.outcome = abi.EventOutcome{Committed: res.Committed[t], Ops: l.ops}
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
