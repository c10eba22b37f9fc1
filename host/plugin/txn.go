package plugin

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"unsafe"

	"github.com/sluicehq/sluice/abi"
	"github.com/sluicehq/sluice/runtime"
	"github.com/sluicehq/sluice/txn"
)

// txnInstance holds a transactional instance's exports and the region of
// guest memory its apply requests go to.
type txnInstance struct {
	plan, apply, post runtime.Func

	// region is the offset of the apply-request region obtained from
	// sluice_alloc, of regionCap bytes; regionCap is 0 when there is none
	// (a fresh instance, or another sluice_alloc call since: the guest
	// may then have reused the region).
	region    uint32
	regionCap int
	// ctx and cctx are the context of the last apply and the call
	// context derived from it (see applyContext).
	ctx, cctx context.Context
}

// bind resolves the transactional exports of inst and reports whether it
// has them all.
func (t *txnInstance) bind(inst runtime.Instance) bool {
	var ok1, ok2, ok3 bool
	t.plan, ok1 = inst.Func(abi.ExportPlan)
	t.apply, ok2 = inst.Func(abi.ExportApply)
	t.post, ok3 = inst.Func(abi.ExportPost)
	return ok1 && ok2 && ok3
}

// reset takes the exports of n (a new guest instance, or none) and forgets
// the region, which belonged to the previous guest instance.
func (t *txnInstance) reset(n txnInstance) {
	t.plan, t.apply, t.post = n.plan, n.apply, n.post
	t.region, t.regionCap = 0, 0
}

// minRegion is the smallest apply-request region asked of a guest.
const minRegion = 4096

// TxnError is the error of a call of a transactional export. It names the
// plugin, the export (sluice_alloc when the call's input could not be
// placed in guest memory) and, for sluice_apply, the event and operation,
// and wraps the cause: a *runtime.Error (trap, timeout, host function
// error), a *StatusError, an access txn refused (wrapping
// txn.ErrUndeclared), or a result the host cannot use.
type TxnError struct {
	Plugin string
	Export string
	// Event is the event's index in the batch and Op the operation's
	// index within the event, for sluice_apply; both are -1 for a call
	// about the whole batch (sluice_plan, sluice_post).
	Event, Op int
	Err       error
}

func (e *TxnError) Error() string {
	s := fmt.Sprintf("plugin %q export %q", e.Plugin, e.Export)
	if e.Event >= 0 {
		s += fmt.Sprintf(": event %d operation %d", e.Event, e.Op)
	}
	// Say plugin and export once, then what went wrong.
	return withCause(s, e.Err)
}

// Unwrap returns the cause.
func (e *TxnError) Unwrap() error { return e.Err }

// ErrNotTransactional is wrapped by the error of Plan, ApplyOp and Post on an
// instance of a plugin not loaded as KindTransactional.
var ErrNotTransactional = errors.New("not a transactional operator")

// ErrApplyResult is wrapped by the error of an Apply whose guest returned a
// result the host cannot use: an unknown code, or a value outside memory.
var ErrApplyResult = errors.New("unusable sluice_apply result")

// txnReady checks that i can make a transactional call and has a guest
// instance.
func (i *Instance) txnReady(ctx context.Context, what string) error {
	if i.closed {
		return fmt.Errorf("plugin %q: %w", i.p.name, ErrInstanceClosed)
	}
	if !i.p.kind.Transactional() {
		return fmt.Errorf("plugin %q: %s: a %s operator is %w", i.p.name, what, i.p.kind, ErrNotTransactional)
	}
	if i.inst == nil {
		return i.ensure(ctx)
	}
	return nil
}

// Plan runs sluice_plan over a batch of events (input records in timestamp
// order; event i has Origin i in the guest's encoding) and hands each
// operation the guest declares through txn_plan to decl, in order. The
// declaration aliases guest memory and decl's buffers: decl must copy what
// it keeps. An error from decl fails the guest call (the guest traps) and
// Plan returns it wrapped, so errors.Is and errors.As reach it; event
// indices, tables and keys are decl's to check.
//
// A failed call (trap, timeout, host function error, error status) is
// returned as a *TxnError; an instance whose guest trapped is replaced
// before its next call. An empty batch does not call the guest.
func (i *Instance) Plan(ctx context.Context, events []abi.Record, decl func(*abi.OpDecl) error) error {
	if err := i.txnReady(ctx, "Plan"); err != nil {
		return err
	}
	if len(events) == 0 {
		return nil
	}
	c := i.c
	c.begin(abi.ExportPlan, nil, nil, uint32(len(events)), 0)
	c.tx.decl = decl
	defer func() {
		c.tx.decl = nil
		c.end(ctx)
	}()
	i.inst.SetCallEnv(i.envs.record(domainPlan, &events[0]))
	cctx := i.callContext(ctx)
	i.tx.regionCap = 0 // sluice_alloc is called: the guest may reuse the apply region
	ptr, n, _, err := i.placeBatch(cctx, events, 0)
	if err != nil {
		return i.txnError(abi.ExportAlloc, -1, -1, err)
	}
	i.stack[0], i.stack[1] = uint64(ptr), uint64(n)
	if err := i.tx.plan.Call(cctx, i.stack[:]); err != nil {
		i.breakIfRuntime(ctx, err, false)
		return i.txnError(abi.ExportPlan, -1, -1, err)
	}
	if st := i32(i.stack[0]); st != abi.StatusOK {
		return i.txnError(abi.ExportPlan, -1, -1, &StatusError{Plugin: i.p.name, Export: abi.ExportPlan, Status: st, Reason: c.reason()})
	}
	return nil
}

// ApplyOp runs one execution of operation op of event event of the batch,
// declared as o (as txn.Apply receives them), through sluice_apply and
// returns its effect. The request (abi.ApplyRequest's encoding, of o's own
// key, reads and argument and of the values a gives for them) is encoded
// straight into guest memory. During the call the guest's txn_get,
// txn_put and txn_delete go to a; an access a refuses (txn.ErrUndeclared)
// returns StatusUndeclared to the guest and fails the call with a
// *TxnError wrapping it, whatever the guest returns.
//
// The value of an ApplyWrite is copied out of guest memory into a slab the
// instance never overwrites, as txn keeps it as a version; so are the keys
// and values of txn_put and txn_delete. For a non-deterministic operation
// only ApplyAbort counts: its writes are its txn_put and txn_delete calls.
//
// The request goes to a region of guest memory obtained from sluice_alloc
// once and reused, call after call, until a request does not fit; after
// warm-up a call allocates nothing. A failed call is a *TxnError naming the
// event and operation; an instance whose guest trapped is replaced before
// its next call.
func (i *Instance) ApplyOp(ctx context.Context, event, op int, o *txn.Op, a txn.Access) (txn.Effect, error) {
	if i.inst == nil || i.closed || !i.p.kind.Transactional() {
		if err := i.txnReady(ctx, "ApplyOp"); err != nil {
			return txn.Effect{}, err
		}
	}
	var own []byte
	flags, table, key := abi.OpFlagNonDet, o.Table, ""
	if !o.NonDet {
		var found bool
		own, found = a.Own()
		flags, table, key = 0, o.Write.Table, o.Write.Key
		if found {
			flags = applyFlagOwnFound
		}
	}
	n := applyFixed + len(key) + len(own) + len(o.Arg)
	for j := range o.Reads {
		v, _ := a.Read(j)
		n += 16 + len(o.Reads[j].Key) + len(v)
	}
	var wr txn.WindowReader
	if o.Window > 0 {
		flags |= abi.OpFlagWindow
		wr, _ = a.(txn.WindowReader) // every strategy's Access is one
		for j := range o.Reads {
			n += 4
			for _, v := range window(wr, j) {
				n += 12 + len(v.Value.Bytes)
			}
		}
	}
	c := i.c
	c.begin(abi.ExportApply, nil, nil, 0, 0)
	i.inst.SetCallEnv(i.envs.apply(event, op))
	cctx := i.applyContext(ctx)
	buf, export, err := i.requestRegion(cctx, n)
	if err != nil {
		c.end(ctx)
		return txn.Effect{}, i.txnError(export, event, op, err)
	}
	encodeRequest(buf, uint32(event), uint32(op), flags, table, key, own, o, a, wr)
	return i.callApply(ctx, cctx, event, op, o, a, n)
}

// The encoding of an apply request (abi.AppendApplyRequest's): the result
// slot, fn, event, op, flags, table and the key's length come first.
const (
	applyFixed = abi.ApplyResultSize + 6*4 + 4 + 4 + 4 // and the own value's, the read count's and the argument's lengths
	// applyFlagOwnFound is bit 1 of a request's flags: the own key was
	// found (ABI.md section 10.5).
	applyFlagOwnFound uint32 = 2
)

// encodeRequest writes the apply request of operation op of event event,
// declared as o, to buf, which has exactly its size: flags, table and key
// as the request states them, own the own key's value, and the declared
// reads' values as a reads them, and a windowed read's windows as wr gives
// them.
func encodeRequest(buf []byte, event, op, flags, table uint32, key string, own []byte, o *txn.Op, a txn.Access, wr txn.WindowReader) {
	le := binary.LittleEndian
	le.PutUint64(buf, 0)
	le.PutUint32(buf[8:], o.Fn)
	le.PutUint32(buf[12:], event)
	le.PutUint32(buf[16:], op)
	le.PutUint32(buf[20:], flags)
	le.PutUint32(buf[24:], table)
	p := 28 + putString(buf[28:], key)
	p += putBytes(buf[p:], own)
	le.PutUint32(buf[p:], uint32(len(o.Reads)))
	p += 4
	for j := range o.Reads {
		le.PutUint32(buf[p:], o.Reads[j].Table)
		p += 4 + putString(buf[p+4:], o.Reads[j].Key)
		v, found := a.Read(j)
		le.PutUint32(buf[p:], b2u(found))
		p += 4 + putBytes(buf[p+4:], v)
		if flags&abi.OpFlagWindow != 0 {
			w := window(wr, j)
			le.PutUint32(buf[p:], uint32(len(w)))
			p += 4
			for _, v := range w {
				le.PutUint32(buf[p:], uint32(v.Back))
				le.PutUint32(buf[p+4:], b2u(v.Value.Found))
				p += 8 + putBytes(buf[p+8:], v.Value.Bytes)
			}
		}
	}
	putBytes(buf[p:], o.Arg)
}

// window returns the window of read j, nil when wr is nil. A window's Back
// is at most the operation's Window, a u32.
func window(wr txn.WindowReader, j int) []txn.Version {
	if wr == nil {
		return nil
	}
	return wr.Window(j)
}

// putString writes s with its u32 length before it and returns the bytes
// written.
func putString(b []byte, s string) int {
	binary.LittleEndian.PutUint32(b, uint32(len(s)))
	return 4 + copy(b[4:], s)
}

// putBytes writes v with its u32 length before it and returns the bytes
// written.
func putBytes(b, v []byte) int {
	binary.LittleEndian.PutUint32(b, uint32(len(v)))
	return 4 + copy(b[4:], v)
}

func b2u(b bool) uint32 {
	if b {
		return 1
	}
	return 0
}

// applyContext returns the context of an apply call under ctx. A worker
// passes the same ctx apply after apply: comparing the interface's words
// (type and data) tells it is the same in a few instructions, where
// callContext compares reflected types. Equal words are the same context;
// unequal ones only cost callContext's check.
func (i *Instance) applyContext(ctx context.Context) context.Context {
	t := &i.tx
	if t.cctx != nil && sameWords(ctx, t.ctx) {
		return t.cctx
	}
	t.ctx, t.cctx = ctx, i.callContext(ctx)
	return t.cctx
}

// sameWords reports whether a and b hold the same type and data pointer.
func sameWords(a, b context.Context) bool {
	x, y := (*[2]unsafe.Pointer)(unsafe.Pointer(&a)), (*[2]unsafe.Pointer)(unsafe.Pointer(&b))
	return x[0] == y[0] && x[1] == y[1]
}

// requestRegion returns n bytes of the apply-request region, growing it
// when it is too small: a view of guest memory, valid until the guest runs.
// A failure is the apply's error, of the export named: sluice_alloc when
// growing the region failed.
func (i *Instance) requestRegion(cctx context.Context, n int) ([]byte, string, error) {
	t := &i.tx
	if n > t.regionCap {
		if err := i.growRegion(cctx, n); err != nil {
			return nil, abi.ExportAlloc, err
		}
	}
	buf, ok := i.mem.Read(t.region, uint32(n))
	if !ok {
		return nil, abi.ExportApply, fmt.Errorf("the request region at %#x of %d bytes is outside memory of %d bytes", t.region, n, i.mem.Size())
	}
	return buf, "", nil
}

// callApply calls sluice_apply over the n-byte request in the region, for
// operation op of event event, declared as o, and returns its effect.
func (i *Instance) callApply(ctx, cctx context.Context, event, op int, o *txn.Op, a txn.Access, n int) (txn.Effect, error) {
	c := i.c
	c.tx.beginApply(o, a)
	i.stack[0], i.stack[1] = uint64(i.tx.region), uint64(n)
	err := i.tx.apply.Call(cctx, i.stack[:])
	accErr := c.tx.endApply()
	c.end(ctx)
	if err != nil {
		i.breakIfRuntime(ctx, err, false)
	}
	switch {
	case accErr != nil:
		return txn.Effect{}, i.txnError(abi.ExportApply, event, op, accErr)
	case err != nil:
		return txn.Effect{}, i.txnError(abi.ExportApply, event, op, err)
	}
	code := i32(i.stack[0])
	switch {
	case code == abi.ApplyWrite && !o.NonDet:
		v, err := i.applyValue()
		if err != nil {
			return txn.Effect{}, i.txnError(abi.ExportApply, event, op, err)
		}
		return txn.Effect{Value: v}, nil
	case code == abi.ApplyAbort:
		return txn.Effect{Abort: true}, nil
	case code == abi.StatusError:
		return txn.Effect{}, i.txnError(abi.ExportApply, event, op,
			&StatusError{Plugin: i.p.name, Export: abi.ExportApply, Status: code, Reason: c.reason()})
	case code != abi.ApplyWrite && code != abi.ApplyKeep && code != abi.ApplyDelete:
		return txn.Effect{}, i.txnError(abi.ExportApply, event, op,
			fmt.Errorf("%w: returned %d, want ApplyWrite (0), ApplyKeep (1), ApplyDelete (2), ApplyAbort (3) or StatusError (-2)", ErrApplyResult, code))
	case o.NonDet || code == abi.ApplyKeep:
		return txn.Effect{Keep: true}, nil
	}
	return txn.Effect{Delete: true}, nil
}

// applyValue copies out the value of an ApplyWrite, whose pointer and
// length the guest left in the request's first 8 bytes.
func (i *Instance) applyValue() ([]byte, error) {
	slot, ok := i.mem.Read(i.tx.region, abi.ApplyResultSize)
	if !ok {
		return nil, fmt.Errorf("%w: the request region at %#x is outside memory of %d bytes", ErrApplyResult, i.tx.region, i.mem.Size())
	}
	ptr, n := binary.LittleEndian.Uint32(slot), binary.LittleEndian.Uint32(slot[4:])
	if end := uint64(ptr) + uint64(n); end > uint64(i.mem.Size()) {
		return nil, fmt.Errorf("%w: ApplyWrite value at pointer %#x length %d is outside memory of %d bytes", ErrApplyResult, ptr, n, i.mem.Size())
	}
	v, ok := i.mem.Read(ptr, n)
	if !ok {
		return nil, fmt.Errorf("%w: ApplyWrite value at pointer %#x length %d is outside memory of %d bytes", ErrApplyResult, ptr, n, i.mem.Size())
	}
	return i.c.tx.slab.copy(v), nil
}

// growRegion obtains a request region of at least n bytes from
// sluice_alloc, with room to spare so that it is seldom grown again.
func (i *Instance) growRegion(cctx context.Context, n int) error {
	size := max(n, 2*i.tx.regionCap, minRegion)
	if size > math.MaxInt32 {
		size = n
	}
	i.tx.regionCap = 0
	ptr, _, err := i.reserve(cctx, i.alloc, i.mem, size)
	if err != nil {
		i.breakIfRuntime(cctx, err, true)
		return err
	}
	i.tx.region, i.tx.regionCap = ptr, size
	return nil
}

// Post runs sluice_post over the batch's events and their encoded outcomes
// (abi.AppendOutcomesHeader and abi.AppendEventOutcome), appending the
// records the guest emits to out, each with its event's index as Origin,
// and the events it rejects to out.Rejects; the outputs of a rejected event
// are dropped. The events and outcomes are
// placed in one region from sluice_alloc, the outcomes after the events.
//
// A failed call is returned as a *TxnError and its outputs and rejects are
// dropped; an instance whose guest trapped is replaced before its next
// call. An empty batch does not call the guest.
func (i *Instance) Post(ctx context.Context, events []abi.Record, outcomes []byte, out *Output) error {
	if err := i.txnReady(ctx, "Post"); err != nil {
		return err
	}
	if len(events) == 0 {
		return nil
	}
	c := i.c
	c.begin(abi.ExportPost, nil, out, uint32(len(events)), 0)
	defer c.end(ctx)
	i.inst.SetCallEnv(i.envs.record(domainPost, &events[0]))
	m := out.mark()
	cctx := i.callContext(ctx)
	i.tx.regionCap = 0 // sluice_alloc is called: the guest may reuse the apply region
	ptr, n, spare, err := i.placeBatch(cctx, events, len(outcomes))
	if err != nil {
		return i.txnError(abi.ExportAlloc, -1, -1, err)
	}
	copy(spare, outcomes)
	i.stack[0], i.stack[1] = uint64(ptr), uint64(n)
	i.stack[2], i.stack[3] = uint64(ptr)+uint64(n), uint64(len(outcomes))
	if err := i.tx.post.Call(cctx, i.stack[:]); err != nil {
		out.truncate(m)
		i.breakIfRuntime(ctx, err, false)
		return i.txnError(abi.ExportPost, -1, -1, err)
	}
	if st := i32(i.stack[0]); st != abi.StatusOK {
		out.truncate(m)
		return i.txnError(abi.ExportPost, -1, -1, &StatusError{Plugin: i.p.name, Export: abi.ExportPost, Status: st, Reason: c.reason()})
	}
	if len(out.Rejects) > m.rejects {
		// A dead-lettered event has no effect downstream: its state
		// effects stand, as the batch committed, but its outputs go.
		dropRejectedOutputs(out, m)
	}
	return nil
}

// txnError wraps err as the failure of export.
func (i *Instance) txnError(export string, event, op int, err error) error {
	return &TxnError{Plugin: i.p.name, Export: export, Event: event, Op: op, Err: err}
}

// withCause appends to s, a message naming the plugin and the export, what
// went wrong in a guest call: the trap, timeout or host function error of
// a *runtime.Error, the status and reason of a *StatusError, or err.
func withCause(s string, err error) string {
	switch err := err.(type) {
	case *runtime.Error:
		if err.Err != nil {
			s += fmt.Sprintf(": %s: %v", err.Kind, err.Err)
			if err.Stderr != "" {
				s += " (guest stderr: " + err.Stderr + ")"
			}
			return s
		}
	case *StatusError:
		s += fmt.Sprintf(": returned status %d (%s)", err.Status, statusName(err.Status))
		if err.Reason != "" {
			return s + ": " + err.Reason
		}
		return s + " without logging a reason"
	}
	return s + ": " + err.Error()
}
