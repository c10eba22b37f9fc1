package plugin

import (
	"context"
	"encoding/binary"
	"fmt"
	"math"
	"unsafe"

	"github.com/sluicehq/sluice/abi"
	"github.com/sluicehq/sluice/runtime"
	"github.com/sluicehq/sluice/txn"
)

// txnCall is the transactional part of a call: what txn_plan hands its
// declarations to during sluice_plan, and the operation's view of state
// that txn_get, txn_put and txn_delete reach during sluice_apply.
type txnCall struct {
	// decl receives each declaration during sluice_plan; nil otherwise.
	decl  func(*abi.OpDecl) error
	dec   abi.PlanDecoder
	op    abi.OpDecl
	reads []abi.TableKey // op.Reads, reused

	// acc and apply are the operation's Access and declaration during
	// sluice_apply; nil otherwise.
	acc   txn.Access
	apply *txn.Op
	// err is the first access txn refused during the call, wrapped with
	// the host function's name. The call fails with it whatever the
	// guest does next.
	err error
	// pend is a value txn_get found too large for the guest's buffer,
	// kept so that the guest's second call (with a buffer large enough)
	// does not read state twice: txn records every read of a
	// non-deterministic operation, and the guest read the key once.
	pend pendingGet

	// slab holds copies of the keys and values handed to txn, which keeps
	// them as versions for the rest of the batch.
	slab slab
}

// pendingGet is a value txn_get could not copy into the guest's buffer.
type pendingGet struct {
	ok    bool
	table uint32
	key   string
	val   []byte
	found bool
}

// beginApply prepares t for a sluice_apply call of operation o over a.
func (t *txnCall) beginApply(o *txn.Op, a txn.Access) {
	t.acc, t.apply, t.err = a, o, nil
	t.pend = pendingGet{}
}

// endApply releases what the call referenced and returns the access error
// of the call, if any.
func (t *txnCall) endApply() error {
	err := t.err
	t.acc, t.apply, t.err = nil, nil, nil
	t.pend = pendingGet{}
	return err
}

// slabChunk is the size of a slab chunk; values larger than a quarter of
// it get their own allocation rather than ending the current chunk.
const slabChunk = 64 << 10

// slab carves copies of byte strings from chunks that are never written
// again once carved: txn and the Result keep what it hands out for as long
// as they like, and a full chunk is simply left to the garbage collector.
// Copying costs an allocation per chunk, not per key or value.
type slab struct {
	buf []byte
}

// copy returns a copy of b, or nil for an empty b.
func (s *slab) copy(b []byte) []byte {
	n := len(b)
	if n == 0 {
		return nil
	}
	if n > slabChunk/4 {
		return append([]byte(nil), b...)
	}
	if cap(s.buf)-len(s.buf) < n {
		s.buf = make([]byte, 0, slabChunk)
	}
	at := len(s.buf)
	s.buf = append(s.buf, b...)
	return s.buf[at : at+n : at+n]
}

// string returns a copy of b as a string.
func (s *slab) string(b []byte) string {
	c := s.copy(b)
	return unsafe.String(unsafe.SliceData(c), len(c))
}

// access returns the operation's Access, failing the guest call outside
// sluice_apply.
func (c *call) access(fn string) txn.Access {
	if c.export != abi.ExportApply || c.tx.acc == nil {
		if c.kind.Transactional() {
			hostFault(fn, "called during %s: a transactional operator reaches state only during %s", c.export, abi.ExportApply)
		}
		hostFault(fn, "called by a %s operator: only transactional operators may call it, during %s", c.kind, abi.ExportApply)
	}
	return c.tx.acc
}

// refused records an access txn refused and returns the status the guest
// gets.
func (c *call) refused(fn string, err error) uint64 {
	if c.tx.err == nil {
		c.tx.err = fmt.Errorf("%s refused: %w", fn, err)
	}
	return ret(abi.StatusUndeclared)
}

// txn_plan(ptr, len): decode operation declarations and hand each to the
// Plan call's decl.
func hostTxnPlan(ctx context.Context, mem runtime.Memory, stack []uint64) {
	const fn = abi.FuncTxnPlan
	c := callOf(ctx, fn)
	if c.export != abi.ExportPlan || c.tx.decl == nil {
		if c.kind.Transactional() {
			hostFault(fn, "called during %s: operations may be declared only during %s", c.export, abi.ExportPlan)
		}
		hostFault(fn, "called by a %s operator: only transactional operators may call it, during %s", c.kind, abi.ExportPlan)
	}
	b := read(mem, fn, "declarations", uint32(stack[0]), uint32(stack[1]))
	c.keep(fn, "declarations", len(b))
	t := &c.tx
	off, k := 0, 0
	for off < len(b) {
		next := nextDecl(b, off, &t.op, &t.reads)
		if next < 0 {
			break
		}
		if err := t.decl(&t.op); err != nil {
			hostFaultErr(fn, err, "declaration refused")
		}
		off, k = next, k+1
	}
	if off < len(b) {
		// Malformed, or beyond nextDecl: abi's decoder goes on from the
		// same declaration, and says what is wrong with offsets into b.
		t.dec.Reset(b)
		for i := 0; t.dec.Next(&t.op); i++ {
			if i < k {
				continue
			}
			if err := t.decl(&t.op); err != nil {
				hostFaultErr(fn, err, "declaration refused")
			}
		}
		if err := t.dec.Err(); err != nil {
			hostFaultErr(fn, err, "malformed operation declarations")
		}
	}
	t.op = abi.OpDecl{} // do not keep guest memory reachable
	clear(t.reads)
}

// nextDecl decodes the declaration at b[off:] into d, as abi.PlanDecoder
// does (txn_test.go checks): d's slices alias b, with their capacity
// clipped, and d.Reads reuses *reads. It returns the offset after the
// declaration, or -1 when b[off:] does not start with a well-formed one,
// for abi.PlanDecoder to report. It runs once per declaration: a few
// checks and no call, where the abi decoder's bookkeeping costs several
// times as much.
func nextDecl(b []byte, off int, d *abi.OpDecl, reads *[]abi.TableKey) int {
	le := binary.LittleEndian
	// event, fn, flags, table and the key's length.
	if len(b)-off < 20 {
		return -1
	}
	d.Event = le.Uint32(b[off:])
	d.Fn = le.Uint32(b[off+4:])
	d.Flags = le.Uint32(b[off+8:])
	d.Table = le.Uint32(b[off+12:])
	if d.Flags&^(abi.OpFlagNonDet|abi.OpFlagWindow) != 0 {
		return -1
	}
	var ok bool
	if d.Key, off, ok = lenField(b, off+16); !ok || len(b)-off < 4 {
		return -1
	}
	n := le.Uint32(b[off:])
	off += 4
	// A read takes at least 8 bytes; abi refuses a count that cannot fit.
	if uint64(n)*8 > uint64(len(b)-off) {
		return -1
	}
	rs := (*reads)[:0]
	for range n {
		if len(b)-off < 4 {
			return -1
		}
		tk := abi.TableKey{Table: le.Uint32(b[off:])}
		if tk.Key, off, ok = lenField(b, off+4); !ok {
			return -1
		}
		rs = append(rs, tk)
	}
	*reads = rs
	d.Reads = rs
	if d.Arg, off, ok = lenField(b, off); !ok {
		return -1
	}
	d.Window = 0
	if d.Flags&abi.OpFlagWindow != 0 {
		if len(b)-off < 4 {
			return -1
		}
		if d.Window = le.Uint32(b[off:]); d.Window == 0 {
			return -1
		}
		off += 4
	}
	return off
}

// lenField reads a u32-length-prefixed byte string at b[off:] and returns
// it, with its capacity clipped (nil when empty), and the offset after it.
func lenField(b []byte, off int) ([]byte, int, bool) {
	if len(b)-off < 4 {
		return nil, off, false
	}
	n := binary.LittleEndian.Uint32(b[off:])
	off += 4
	if uint64(n) > uint64(len(b)-off) || n > math.MaxInt32 {
		return nil, off, false
	}
	if n == 0 {
		return nil, off, true
	}
	e := off + int(n)
	return b[off:e:e], e, true
}

// get reads a key for the operation in progress (for txn_get). A deterministic
// operation's own key and declared reads are answered from its Access
// without naming the key (no copy); anything else goes through
// Access.Get, which records it and refuses what the declaration does not
// allow.
func (c *call) get(table uint32, key []byte) ([]byte, bool, error) {
	t := &c.tx
	if o := t.apply; !o.NonDet {
		for j := range o.Reads {
			if o.Reads[j].Table == table && o.Reads[j].Key == string(key) {
				v, ok := t.acc.Read(j)
				return v, ok, nil
			}
		}
		if o.Write.Table == table && o.Write.Key == string(key) {
			v, ok := t.acc.Own()
			return v, ok, nil
		}
	}
	if p := &t.pend; p.ok && p.table == table && p.key == string(key) {
		v, found := p.val, p.found
		*p = pendingGet{}
		return v, found, nil
	}
	c.keep(abi.FuncTxnGet, "the key", len(key))
	k := txn.Key{Table: table, Key: t.slab.string(key)}
	v, found, err := t.acc.Get(k)
	if err != nil {
		return nil, false, err
	}
	t.pend = pendingGet{ok: true, table: table, key: k.Key, val: v, found: found}
	return v, found, nil
}

// txn_get(table, key_ptr, key_len, buf_ptr, buf_cap) -> i32, with
// state_get's buffer protocol, or StatusUndeclared.
func hostTxnGet(ctx context.Context, mem runtime.Memory, stack []uint64) {
	const fn = abi.FuncTxnGet
	c := callOf(ctx, fn)
	c.access(fn)
	table := uint32(stack[0])
	key := read(mem, fn, "key", uint32(stack[1]), uint32(stack[2]))
	bufPtr, bufCap := uint32(stack[3]), uint32(stack[4])
	checkRange(mem, fn, "buffer", bufPtr, bufCap)
	v, found, err := c.get(table, key)
	if err != nil {
		stack[0] = c.refused(fn, err)
		return
	}
	if !found {
		c.tx.pend.ok = false
		stack[0] = ret(abi.StatusNotFound)
		return
	}
	if len(v) > math.MaxInt32 {
		hostFault(fn, "table %d key %s: value of %d bytes is too large for the ABI", table, printable(key), len(v))
	}
	if len(v) <= int(bufCap) {
		c.tx.pend.ok = false
		if !mem.Write(bufPtr, v) {
			hostFault(fn, "buffer pointer %#x length %d is outside memory of %d bytes", bufPtr, len(v), mem.Size())
		}
	}
	stack[0] = ret(int32(len(v)))
}

// txn_put(table, key_ptr, key_len, val_ptr, val_len) -> i32.
func hostTxnPut(ctx context.Context, mem runtime.Memory, stack []uint64) {
	const fn = abi.FuncTxnPut
	c := callOf(ctx, fn)
	a := c.access(fn)
	table := uint32(stack[0])
	key := read(mem, fn, "key", uint32(stack[1]), uint32(stack[2]))
	val := read(mem, fn, "value", uint32(stack[3]), uint32(stack[4]))
	t := &c.tx
	t.pend.ok = false
	c.keep(fn, "the key and value", len(key)+len(val))
	if err := a.Put(txn.Key{Table: table, Key: t.slab.string(key)}, t.slab.copy(val)); err != nil {
		stack[0] = c.refused(fn, err)
		return
	}
	stack[0] = ret(abi.StatusOK)
}

// txn_delete(table, key_ptr, key_len) -> i32.
func hostTxnDelete(ctx context.Context, mem runtime.Memory, stack []uint64) {
	const fn = abi.FuncTxnDelete
	c := callOf(ctx, fn)
	a := c.access(fn)
	table := uint32(stack[0])
	key := read(mem, fn, "key", uint32(stack[1]), uint32(stack[2]))
	t := &c.tx
	t.pend.ok = false
	c.keep(fn, "the key", len(key))
	if err := a.Delete(txn.Key{Table: table, Key: t.slab.string(key)}); err != nil {
		stack[0] = c.refused(fn, err)
		return
	}
	stack[0] = ret(abi.StatusOK)
}
