//go:build !wasip1

package sluice

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"unsafe"

	"github.com/sluicehq/sluice/abi"
	"github.com/sluicehq/sluice/sdk/go/sluice/internal/bridge"
)

// The native driver of transactional operators: sluicetest.NewTxnDriver
// (run on the host's scheduler by the host's test harness) runs a Txn's
// handlers through it, in this process, without the ABI, so that the
// one source of an operator runs both natively and in WebAssembly and the
// two can be compared. Plan stages declarations in the Planner's own
// memory, functions read through a bridge.TxnAccess over the scheduler's
// txn.Access, and Post emits into an encoded batch as in WebAssembly.

// activeTxn is the driver whose handler ran last, for TableID, which has no
// receiver: it resolves names against that driver's tables.
var activeTxn atomic.Pointer[txnDriver]

func init() {
	bridge.NewTxnDriver = func(op any, tables []string) (bridge.TxnDriver, error) {
		t, ok := op.(Txn)
		if !ok {
			return nil, fmt.Errorf("sluice: native driver: got a %T, want a sluice.Txn", op)
		}
		if err := checkTxn(&t); err != nil {
			return nil, err
		}
		t.Funcs = append([]TxnFunc(nil), t.Funcs...)
		d := &txnDriver{op: &t, tables: append([]string(nil), tables...)}
		d.g = newGuest(&handlers{kind: kindTxn, name: "Transactional", txn: d.op, sealed: true}, nil)
		d.g.planner.native = true
		return d, nil
	}
}

// nativeBuild is true: a Call may have a native access (sluicetest's
// TxnDriver) instead of the guest core's request and host.
const nativeBuild = true

// address is 0 natively: a pointer does not fit the 32-bit result slot, so
// a native test host reads guest.written instead.
func address(*byte) uint32 { return 0 }

// errNoCall is the error of TableID called when no operator is running.
var errNoCall = errors.New("sluice: TableID called outside an operator's call")

func tableID(name string) (Table, error) {
	if g := active.Load(); g != nil {
		return g.tableID(name)
	}
	if d := activeTxn.Load(); d != nil {
		return d.tableID(name)
	}
	return 0, fmt.Errorf("%w (table %q)", errNoCall, name)
}

// txnDriver implements bridge.TxnDriver. Its guest provides the Planner,
// the decoded record and the Emitter with its output buffer; it has no
// host.
type txnDriver struct {
	op     *Txn
	tables []string
	g      *guest
}

// activate makes d the driver TableID resolves against. It writes the
// shared pointer only when the driver there resolves names otherwise: the
// drivers of one operator's parts (one per scheduler worker, planning at
// once) have the same tables, and writing the pointer for each event
// would bounce its cache line between the cores.
func (d *txnDriver) activate() {
	if a := activeTxn.Load(); a != d && (a == nil || !slices.Equal(a.tables, d.tables)) {
		activeTxn.Store(d)
	}
}

func (d *txnDriver) tableID(name string) (Table, error) {
	for i, t := range d.tables {
		if t == name {
			return Table(i), nil
		}
	}
	return 0, fmt.Errorf("%w: %q (the operator's tables are %s)", ErrUnknownTable, name, strings.Join(d.tables, ", "))
}

func (d *txnDriver) Plan(i int, ev *abi.Record) ([]abi.OpDecl, error) {
	d.activate()
	p := &d.g.planner
	p.begin(len(d.op.Funcs), uint32(i))
	err := d.op.Plan(Record{Key: ev.Key, Value: ev.Value, Time: ev.Time, Headers: ev.Headers, Input: int(ev.Input)}, p)
	p.active = false
	if err != nil {
		return nil, fmt.Errorf("event %d: %w", i, err)
	}
	if p.err != nil {
		return nil, p.err
	}
	return p.decls, nil
}

func (d *txnDriver) NewWorker() bridge.TxnWorker { return &txnWorker{d: d} }

func (d *txnDriver) BeginPost() {
	g := d.g
	if cap(g.out) > maxKeptOut {
		g.out = make([]byte, 0, initialOut)
	}
	g.out = abi.AppendBatchHeader(g.out[:0], 0)
	g.outCount = 0
}

func (d *txnDriver) Post(i int, ev *abi.Record, o *abi.EventOutcome) error {
	if d.op.Post == nil {
		return nil
	}
	d.activate()
	g := d.g
	g.emitter.origin = uint32(i)
	mark, markCount := len(g.out), g.outCount
	if err := d.op.Post(Record{Key: ev.Key, Value: ev.Value, Time: ev.Time, Headers: ev.Headers, Input: int(ev.Input)}, o, &g.emitter); err != nil {
		g.out, g.outCount = g.out[:mark], markCount
		return err
	}
	return nil
}

func (d *txnDriver) Outputs() []byte {
	abi.SetBatchCount(d.g.out, d.g.outCount)
	return d.g.out
}

// begin prepares the native driver's Planner p for the Plan call of event
// i. (The guest core's planBatch sets the fields itself.)
func (p *Planner) begin(nfn int, i uint32) {
	p.active, p.event, p.nfn, p.err = true, i, nfn, nil
	clear(p.decls)
	clear(p.reads)
	p.decls, p.reads, p.arena = p.decls[:0], p.reads[:0], p.arena[:0]
}

// value returns the value of a Write.
func (e *Effect) value() []byte { return unsafe.Slice(e.ptr, e.n) }

// txnWorker implements bridge.TxnWorker with a Call of its own.
type txnWorker struct {
	d *txnDriver
	c Call
}

func (w *txnWorker) Apply(q *abi.ApplyRequest, acc bridge.TxnAccess) (int32, []byte, error) {
	fns := w.d.op.Funcs
	if uint64(q.Fn) >= uint64(len(fns)) {
		return codeFail, nil, unknownFn(q.Event, q.Op, q.Fn, len(fns))
	}
	c := &w.c
	c.req, c.acc, c.err = q, acc, nil
	e := fns[q.Fn](c)
	c.req, c.acc = nil, nil
	if e.code < 0 || c.err != nil || c.badRead {
		err := effectError(&e)
		if ferr := c.fault(); err == nil {
			err = ferr
		}
		return codeFail, nil, fmt.Errorf("function %d: %w", q.Fn, err)
	}
	return e.code, e.value(), nil
}
