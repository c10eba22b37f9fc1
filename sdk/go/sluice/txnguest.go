package sluice

import (
	"encoding/binary"
	"errors"
	"fmt"
	"unsafe"

	"github.com/sluicehq/sluice/abi"
	"github.com/sluicehq/sluice/sdk/go/sluice/internal/bridge"
)

// The guest core of transactional operators: what the exports sluice_plan,
// sluice_apply and sluice_post call. Like process, each ends the lifetime
// of its input regions without a defer; a handler that panics traps the
// call.

// notTxn logs why export cannot run: the plugin registered no
// Transactional handler.
func (g *guest) notTxn(export string) int32 {
	if g.h.kind == kindNone {
		g.host.Log(abi.LogError, "no handler registered: a transactional operator calls sluice.Transactional from an init function of package main (a plugin's main function never runs)")
	} else {
		g.host.Log(abi.LogError, fmt.Sprintf("%s called, but this plugin registers a %s handler, not a Transactional one: it serves %s operators", export, g.h.name, g.h.kind))
	}
	return abi.StatusError
}

// mustTxnHost returns the host's transactional functions; a host without
// them (possible only in a native test) is a misuse.
func (g *guest) mustTxnHost() bridge.TxnHost {
	if g.txnHost == nil {
		panic("sluice: the host provides no transactional functions (txn_plan, txn_get, txn_put, txn_delete)")
	}
	return g.txnHost
}

// tableID resolves a table name through the host, once per name.
func (g *guest) tableID(name string) (Table, error) {
	if t, ok := g.tableIDs[name]; ok {
		return t, nil
	}
	id := g.host.TableID(name)
	if id < 0 {
		return 0, fmt.Errorf("%w: %q: declare it in the operator's state tables in the pipeline", ErrUnknownTable, name)
	}
	if g.tableIDs == nil {
		g.tableIDs = make(map[string]Table)
	}
	g.tableIDs[name] = Table(id)
	return Table(id), nil
}

// plan implements sluice_plan: it calls Txn.Plan for each event of batch
// and hands the declarations to the host in one txn_plan call, or one per
// flushSize bytes of them. A Plan error, a misuse of the Planner or a
// malformed batch fails the call with StatusError, after logging why.
func (g *guest) plan(batch []byte) int32 {
	g.h.sealed = true
	status := g.planBatch(batch)
	g.consumed()
	return status
}

func (g *guest) planBatch(batch []byte) int32 {
	op := g.h.txn
	if op == nil {
		return g.notTxn(abi.ExportPlan)
	}
	h := g.mustTxnHost()
	if len(batch) < abi.BatchHeaderSize {
		g.host.Log(abi.LogError, "input batch: "+batchError(batch).Error())
		return abi.StatusError
	}
	count := binary.LittleEndian.Uint32(batch)
	p := &g.planner
	p.buf = p.buf[:0]
	p.nfn, p.err = len(op.Funcs), nil
	off := abi.BatchHeaderSize
	status := abi.StatusOK
	for i := uint32(0); i < count; i++ {
		if off = decodeRecord(batch, off, &g.rec, &g.hdrs); off < 0 {
			break
		}
		p.active, p.event = true, i
		err := op.Plan(g.rec, p)
		p.active = false
		if err != nil || p.err != nil {
			status = g.planFailed(i, err)
			break
		}
		if len(p.buf) >= flushSize {
			h.TxnPlan(p.buf)
			p.buf = p.buf[:0]
		}
	}
	g.rec = Record{}
	if status == abi.StatusOK && off != len(batch) {
		g.host.Log(abi.LogError, "input batch: "+batchError(batch).Error())
		status = abi.StatusError
	}
	if status == abi.StatusOK && len(p.buf) > 0 {
		h.TxnPlan(p.buf)
	}
	p.buf = p.buf[:0]
	if cap(p.buf) > maxKeptOut {
		p.buf = nil
	}
	return status
}

// planFailed logs why planning event i failed: Plan's error err, or a
// misuse of the Planner, and returns StatusError.
func (g *guest) planFailed(i uint32, err error) int32 {
	if err != nil {
		err = fmt.Errorf("event %d: %w", i, err)
	} else {
		err = g.planner.err
	}
	g.host.Log(abi.LogError, "plan: "+err.Error())
	return abi.StatusError
}

// apply implements sluice_apply: it decodes the request into the reused
// Call, calls the named function and returns its Effect's code, having
// stored the value's address and length in the request's result slot. It
// allocates nothing unless the function does.
//
// It is one function, the rare paths in others, because a call costs some
// 10 to 20 ns in Go's WebAssembly code and this runs once per operation;
// and it stores no pointer into the heap and takes no branch on the common
// path (see txncodec.go). It ends the input region's lifetime first, not
// last: the request stays reachable through req until the call returns.
func (g *guest) apply(req []byte) int32 {
	g.h.sealed = true
	// Only g.pending is reset: regions handed out while in was pending
	// (g.extra, rarely any) live on until the next plan or post, which
	// spares this path a branch.
	g.pending = false
	op, c := g.h.txn, &g.call
	if !decodeApply(req, &c.w) && !decodeApplyReads(req, &c.w) || op == nil || uint64(c.w.fn) >= uint64(len(op.Funcs)) {
		return g.applyRefused(req)
	}
	if nativeBuild {
		c.w.into(&c.nreq)
		c.req = &c.nreq
	}
	e := op.Funcs[c.w.fn](c)
	if e.code < 0 || c.err != nil || c.badRead {
		return g.applyFailed(&e)
	}
	// The result slot is written whatever the code, which saves a branch:
	// the host reads it only after ApplyWrite.
	p := unsafe.Pointer(unsafe.SliceData(req))
	putLE32(p, address(e.ptr))
	putLE32(unsafe.Add(p, 4), uint32(e.n))
	if nativeBuild {
		g.written = e.ptr
	}
	return e.code
}

// applyRefused logs why apply could not call a function: no Transactional
// handler, a malformed request, or an unknown function.
func (g *guest) applyRefused(req []byte) int32 {
	op, w := g.h.txn, &g.call.w
	switch {
	case op == nil:
		return g.notTxn(abi.ExportApply)
	case !decodeApplyReads(req, w):
		var q abi.ApplyRequest
		err := abi.DecodeApplyRequest(req, &q)
		if err == nil {
			err = errApplyMismatch
		}
		g.host.Log(abi.LogError, "apply: "+err.Error())
	default:
		g.host.Log(abi.LogError, unknownFn(w.event, w.op, w.fn, len(op.Funcs)).Error())
	}
	return abi.StatusError
}

// applyFailed logs why the function's operation failed: its Fail, or an
// access the host refused, and returns StatusError. It clears the Call's
// record of refused accesses for the next operation.
func (g *guest) applyFailed(e *Effect) int32 {
	c := &g.call
	err := effectError(e)
	if ferr := c.fault(); err == nil {
		err = ferr
	}
	c.err = nil
	g.host.Log(abi.LogError, fmt.Sprintf("apply: event %d operation %d: function %d failed: %v", c.w.event, c.w.op, c.w.fn, err))
	return abi.StatusError
}

// errApplyMismatch is reported if decodeApply refuses a request that
// abi.DecodeApplyRequest accepts: a bug in txncodec.go.
var errApplyMismatch = errors.New("sluice: internal error: the SDK's decoder refused an apply request that abi.DecodeApplyRequest accepts")

// unknownFn is the error of an operation that names a function the
// operator does not have.
func unknownFn(event, op, fn uint32, n int) error {
	return fmt.Errorf("apply: event %d operation %d names function %d, but the operator has %d functions (Txn.Funcs)", event, op, fn, n)
}

// post implements sluice_post: it calls Txn.Post for each event with its
// outcome, emitting as FlatMap does: a Post error rejects its event and
// discards what it emitted. A malformed batch or outcome encoding fails
// the call with StatusError.
func (g *guest) post(events, outcomes []byte) int32 {
	g.h.sealed = true
	status := g.postBatch(events, outcomes)
	g.consumed()
	return status
}

func (g *guest) postBatch(events, outcomes []byte) int32 {
	op := g.h.txn
	if op == nil {
		return g.notTxn(abi.ExportPost)
	}
	if op.Post == nil {
		return abi.StatusOK // nothing to emit
	}
	if len(events) < abi.BatchHeaderSize {
		g.host.Log(abi.LogError, "input batch: "+batchError(events).Error())
		return abi.StatusError
	}
	count := binary.LittleEndian.Uint32(events)
	if len(outcomes) < 4 || uint64(binary.LittleEndian.Uint32(outcomes))*8 > uint64(len(outcomes)-4) {
		g.host.Log(abi.LogError, "post: "+outcomesError(outcomes).Error())
		return abi.StatusError
	}
	if n := binary.LittleEndian.Uint32(outcomes); n != count {
		g.host.Log(abi.LogError, fmt.Sprintf("post: outcomes of %d events for a batch of %d", n, count))
		return abi.StatusError
	}
	g.out = abi.AppendBatchHeader(g.out[:0], 0)
	g.outCount = 0
	off, ooff := abi.BatchHeaderSize, 4
	for i := uint32(0); i < count; i++ {
		if off = decodeRecord(events, off, &g.rec, &g.hdrs); off < 0 {
			break
		}
		if ooff = g.odec.next(outcomes, ooff); ooff < 0 {
			break
		}
		g.emitter.origin = i
		mark, markCount := len(g.out), g.outCount
		if err := op.Post(g.rec, &g.odec.out, &g.emitter); err != nil {
			g.out, g.outCount = g.out[:mark], markCount
			g.host.Reject(i, err.Error())
		} else if len(g.out) >= flushSize {
			g.flush()
		}
	}
	g.rec = Record{}
	status := abi.StatusOK
	switch {
	case off < 0 || ooff >= 0 && off != len(events): // a record refused, or bytes after the last
		g.host.Log(abi.LogError, "input batch: "+batchError(events).Error())
		status = abi.StatusError
	case ooff != len(outcomes): // an outcome refused, or bytes after the last
		g.host.Log(abi.LogError, "post: "+outcomesError(outcomes).Error())
		status = abi.StatusError
	case g.outCount > 0:
		g.flush()
	}
	if cap(g.out) > maxKeptOut {
		g.out = make([]byte, 0, initialOut)
	}
	return status
}
