package abi

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// Transactional operators (ABI.md, section 10). A transactional guest
// exports ExportPlan, ExportApply and ExportPost instead of ExportProcess;
// the host calls them per batch of events: plan once, apply once per
// operation execution (on any worker's instance, possibly several times),
// post once.
const (
	// ExportPlan: sluice_plan(ptr i32, len i32) -> i32. Receives an encoded
	// batch of input records (the events, in timestamp order) and declares
	// their operations through FuncTxnPlan. Returns a status; an error
	// fails the batch.
	ExportPlan = "sluice_plan"
	// ExportApply: sluice_apply(ptr i32, len i32) -> i32. Receives one
	// encoded apply request and returns one of the Apply* codes, or
	// StatusError. For ApplyWrite, before returning, the guest stores the
	// new value's pointer and length as two little-endian u32 in the first
	// 8 bytes of the request.
	ExportApply = "sluice_apply"
	// ExportPost: sluice_post(events_ptr i32, events_len i32, out_ptr i32,
	// out_len i32) -> i32. Receives the batch of events again and the
	// encoded outcomes, and emits output records through FuncEmit (an
	// output's origin is its event's index). Returns a status.
	ExportPost = "sluice_post"
)

// Host functions of transactional operators.
const (
	// FuncTxnPlan: txn_plan(ptr i32, len i32). During sluice_plan, appends
	// encoded operation declarations (AppendOpDecl) to the batch's plan.
	// May be called any number of times; event indices never decrease.
	// A malformed declaration traps the call.
	FuncTxnPlan = "txn_plan"
	// FuncTxnGet: txn_get(table i32, key_ptr i32, key_len i32, buf_ptr i32,
	// buf_cap i32) -> i32. During sluice_apply, reads a key as of the
	// operation's timestamp, with state_get's buffer protocol. Returns
	// StatusUndeclared for a key outside the operation's declaration.
	FuncTxnGet = "txn_get"
	// FuncTxnPut: txn_put(table i32, key_ptr i32, key_len i32, val_ptr i32,
	// val_len i32) -> i32. During sluice_apply of a non-deterministic
	// operation, writes a key of its table. Returns StatusOK or
	// StatusUndeclared.
	FuncTxnPut = "txn_put"
	// FuncTxnDelete: txn_delete(table i32, key_ptr i32, key_len i32) -> i32.
	// Like FuncTxnPut, deleting the key.
	FuncTxnDelete = "txn_delete"
)

// StatusUndeclared is returned by FuncTxnGet, FuncTxnPut and FuncTxnDelete
// for an access outside the operation's declaration. The host has already
// failed the operation; the guest should return StatusError.
const StatusUndeclared int32 = -4

// Results of sluice_apply.
const (
	// ApplyWrite: write the value whose pointer and length the guest
	// stored in the request's first 8 bytes.
	ApplyWrite int32 = 0
	// ApplyKeep: leave the key unchanged (no version is written).
	ApplyKeep int32 = 1
	// ApplyDelete: delete the key.
	ApplyDelete int32 = 2
	// ApplyAbort: a condition failed; abort the transaction.
	ApplyAbort int32 = 3
)

// OpFlagNonDet marks a non-deterministic operation in OpDecl.Flags and
// ApplyRequest.Flags.
const OpFlagNonDet uint32 = 1

// OpFlagWindow marks a windowed read in OpDecl.Flags and ApplyRequest.Flags
// (ABI.md, section 10.10): its declaration carries its window W
// (OpDecl.Window), and its apply request carries, after each read's value,
// the versions of the read key written by the W events before its own.
// Bit 1 is not a declaration flag: it is the request's own-found bit.
const OpFlagWindow uint32 = 4

// declFlags are the flags a declaration may hold.
const declFlags = OpFlagNonDet | OpFlagWindow

// TableKey names one state entry: a table handle (FuncTableID) and a key.
type TableKey struct {
	Table uint32
	Key   []byte
}

// OpDecl is one operation declared at plan time.
//
// Encoding (all integers u32 little endian): event, fn, flags, table,
// key length, key, read count, then per read: table, key length, key;
// then argument length, argument.
type OpDecl struct {
	// Event is the index of the operation's event in the planned batch.
	Event uint32
	// Fn names the guest function that computes the operation.
	Fn uint32
	// Flags holds OpFlagNonDet, OpFlagWindow, both, or 0.
	Flags uint32
	// Table and Key are the key a deterministic operation writes; for a
	// non-deterministic one, Table is the table it may touch and Key is
	// empty.
	Table uint32
	Key   []byte
	// Reads are the other keys the operation reads.
	Reads []TableKey
	// Arg is passed to the function unchanged (the event's parameters).
	Arg []byte
	// Window is a windowed read's window, in events (at least 1), encoded
	// after Arg when Flags holds OpFlagWindow; ignored otherwise.
	Window uint32
}

// AppendOpDecl appends the encoding of d to dst.
func AppendOpDecl(dst []byte, d *OpDecl) []byte {
	le := binary.LittleEndian
	dst = le.AppendUint32(dst, d.Event)
	dst = le.AppendUint32(dst, d.Fn)
	dst = le.AppendUint32(dst, d.Flags)
	dst = le.AppendUint32(dst, d.Table)
	dst = appendField(dst, d.Key)
	dst = le.AppendUint32(dst, uint32(len(d.Reads)))
	for i := range d.Reads {
		dst = le.AppendUint32(dst, d.Reads[i].Table)
		dst = appendField(dst, d.Reads[i].Key)
	}
	dst = appendField(dst, d.Arg)
	if d.Flags&OpFlagWindow != 0 {
		dst = le.AppendUint32(dst, d.Window)
	}
	return dst
}

// ErrMalformedTxn is wrapped by every error decoding a transactional
// encoding (declarations, apply requests, outcomes).
var ErrMalformedTxn = errors.New("abi: malformed transactional encoding")

// TxnDecodeError says where and why a transactional encoding failed to
// decode.
type TxnDecodeError struct {
	What   string // "operation declaration", "apply request", "outcomes"
	Offset int    // byte offset of the problem
	Reason string
}

func (e *TxnDecodeError) Error() string {
	return fmt.Sprintf("abi: malformed %s at byte %d: %s", e.What, e.Offset, e.Reason)
}

// Unwrap makes errors.Is(err, ErrMalformedTxn) hold.
func (e *TxnDecodeError) Unwrap() error { return ErrMalformedTxn }

// reader decodes u32 fields and length-prefixed byte strings, remembering
// the first error.
type reader struct {
	what string
	b    []byte
	p    int
	err  error
}

func (r *reader) fail(reason string) {
	if r.err == nil {
		r.err = &TxnDecodeError{What: r.what, Offset: r.p, Reason: reason}
	}
}

func (r *reader) u32(name string) uint32 {
	if r.err != nil {
		return 0
	}
	if len(r.b)-r.p < 4 {
		r.fail("truncated " + name)
		return 0
	}
	v := binary.LittleEndian.Uint32(r.b[r.p:])
	r.p += 4
	return v
}

func (r *reader) bytes(name string) []byte {
	if r.err != nil {
		return nil
	}
	b, p, ok := field(r.b, r.p)
	if !ok {
		r.fail(name + " length exceeds the input")
		return nil
	}
	r.p = p
	return b
}

// count reads a u32 count of items each at least minSize bytes long, and
// refuses one that cannot fit in what is left.
func (r *reader) count(name string, minSize int) int {
	n := r.u32(name)
	if r.err == nil && uint64(n)*uint64(minSize) > uint64(len(r.b)-r.p) {
		r.p -= 4
		r.fail(fmt.Sprintf("%s %d does not fit in the %d bytes left", name, n, len(r.b)-r.p-4))
		return 0
	}
	return int(n)
}

// PlanDecoder reads the operation declarations of one FuncTxnPlan call
// without copying.
type PlanDecoder struct {
	r     reader
	reads []TableKey
}

// Reset makes the decoder read b from its start.
func (d *PlanDecoder) Reset(b []byte) {
	d.r = reader{what: "operation declaration", b: b}
}

// Next decodes the next declaration into o and reports whether it did; it
// returns false at the end of the input or on an error (see Err). o's
// slices alias the input; o.Reads is owned by d and reused by the next call.
func (d *PlanDecoder) Next(o *OpDecl) bool {
	r := &d.r
	if r.err != nil || r.p == len(r.b) {
		return false
	}
	o.Event = r.u32("event")
	o.Fn = r.u32("fn")
	o.Flags = r.u32("flags")
	if o.Flags&^declFlags != 0 && r.err == nil {
		r.p -= 4
		r.fail(fmt.Sprintf("unknown flags %#x", o.Flags))
	}
	o.Table = r.u32("table")
	o.Key = r.bytes("key")
	n := r.count("read count", 8)
	d.reads = d.reads[:0]
	for i := 0; i < n && r.err == nil; i++ {
		t := r.u32("read table")
		d.reads = append(d.reads, TableKey{Table: t, Key: r.bytes("read key")})
	}
	o.Reads = d.reads
	o.Arg = r.bytes("argument")
	o.Window = 0
	if o.Flags&OpFlagWindow != 0 {
		o.Window = r.u32("window")
		if o.Window == 0 && r.err == nil {
			r.p -= 4
			r.fail("window 0: a windowed read's window is at least 1 event")
		}
	}
	return r.err == nil
}

// Err returns the first decoding error, or nil.
func (d *PlanDecoder) Err() error { return d.r.err }

// Value is a value read from state, with whether the key existed.
type Value struct {
	Found bool
	Bytes []byte
}

// ReadValue is a declared read and the value it saw.
type ReadValue struct {
	TableKey
	Value
	// Window is, in the request of a windowed read (OpFlagWindow), the
	// versions of the key written by the events of the window, oldest
	// first; nil otherwise.
	Window []WindowVersion
}

// WindowVersion is one version of a key in a windowed read's window: the value
// an event wrote (Found false: it deleted the key), and how many events
// before the reader's it is (1: the one just before).
type WindowVersion struct {
	Back uint32
	Value
}

// ApplyRequest is what the host hands sluice_apply for one execution of
// an operation.
//
// Encoding (integers u32 little endian): 8 bytes of result slot (zero),
// fn, event, op, flags (OpFlagNonDet; bit 1 set when the own key was
// found), table, key length, key, own value length, own value, read count,
// then per read: table, key length, key, found (0 or 1), value length,
// value, and for a windowed read (OpFlagWindow) the version count and per
// version: back, found, value length, value; then argument length,
// argument.
type ApplyRequest struct {
	Fn    uint32
	Event uint32 // the event's index in the batch
	Op    uint32 // the operation's index within its event
	Flags uint32 // OpFlagNonDet, OpFlagWindow, both, or 0
	Table uint32
	Key   []byte
	// Own is the own key's value before the operation (deterministic).
	Own   Value
	Reads []ReadValue
	Arg   []byte

	versions []WindowVersion // the decoder's, for the reads' windows
	ends     []int           // end of each read's window in versions
}

// ApplyResultSize is the size of the result slot at the start of an
// encoded apply request.
const ApplyResultSize = 8

// applyFlagOwnFound is bit 1 of an encoded request's flags.
const applyFlagOwnFound uint32 = 2

// AppendApplyRequest appends the encoding of q to dst.
func AppendApplyRequest(dst []byte, q *ApplyRequest) []byte {
	le := binary.LittleEndian
	dst = le.AppendUint64(dst, 0)
	dst = le.AppendUint32(dst, q.Fn)
	dst = le.AppendUint32(dst, q.Event)
	dst = le.AppendUint32(dst, q.Op)
	f := q.Flags &^ applyFlagOwnFound
	if q.Own.Found {
		f |= applyFlagOwnFound
	}
	dst = le.AppendUint32(dst, f)
	dst = le.AppendUint32(dst, q.Table)
	dst = appendField(dst, q.Key)
	dst = appendField(dst, q.Own.Bytes)
	dst = le.AppendUint32(dst, uint32(len(q.Reads)))
	for i := range q.Reads {
		rv := &q.Reads[i]
		dst = le.AppendUint32(dst, rv.Table)
		dst = appendField(dst, rv.Key)
		dst = appendValue(dst, rv.Value)
		if q.Flags&OpFlagWindow != 0 {
			dst = le.AppendUint32(dst, uint32(len(rv.Window)))
			for _, v := range rv.Window {
				dst = le.AppendUint32(dst, v.Back)
				dst = appendValue(dst, v.Value)
			}
		}
	}
	return appendField(dst, q.Arg)
}

// DecodeApplyRequest decodes b into q without copying: q's slices alias b,
// and q.Reads is reused.
func DecodeApplyRequest(b []byte, q *ApplyRequest) error {
	if decodeApplyFast(b, q) {
		return nil
	}
	return decodeApplyChecked(b, q)
}

// decodeApplyChecked is DecodeApplyRequest with every check and message.
func decodeApplyChecked(b []byte, q *ApplyRequest) error {
	r := reader{what: "apply request", b: b}
	if len(b) < ApplyResultSize {
		r.fail("shorter than the result slot")
		return r.err
	}
	r.p = ApplyResultSize
	q.Fn = r.u32("fn")
	q.Event = r.u32("event")
	q.Op = r.u32("op")
	f := r.u32("flags")
	q.Flags, q.Own.Found = f&(OpFlagNonDet|OpFlagWindow), f&applyFlagOwnFound != 0
	q.Table = r.u32("table")
	q.Key = r.bytes("key")
	q.Own.Bytes = r.bytes("own value")
	n := r.count("read count", 16)
	q.Reads = q.Reads[:0]
	q.versions, q.ends = q.versions[:0], q.ends[:0]
	for i := 0; i < n && r.err == nil; i++ {
		var rv ReadValue
		rv.Table = r.u32("read table")
		rv.Key = r.bytes("read key")
		rv.Value = r.value("read value")
		q.Reads = append(q.Reads, rv)
		if q.Flags&OpFlagWindow == 0 {
			continue
		}
		nv := r.count("version count", 12)
		for j := 0; j < nv && r.err == nil; j++ {
			back := r.u32("version back")
			q.versions = append(q.versions, WindowVersion{Back: back, Value: r.value("version value")})
		}
		q.ends = append(q.ends, len(q.versions))
	}
	if r.err == nil && q.Flags&OpFlagWindow != 0 {
		// Slice the versions only now: appends above may have moved them.
		lo := 0
		for i, hi := range q.ends {
			if hi > lo {
				q.Reads[i].Window = q.versions[lo:hi:hi]
			}
			lo = hi
		}
	}
	q.Arg = r.bytes("argument")
	if r.err == nil && r.p != len(b) {
		r.fail(fmt.Sprintf("%d trailing bytes", len(b)-r.p))
	}
	return r.err
}

func (r *reader) value(name string) Value {
	// name is built into messages only on failure: this is a hot path.
	if r.err != nil {
		return Value{}
	}
	if len(r.b)-r.p < 4 {
		r.fail("truncated " + name + " found flag")
		return Value{}
	}
	found := binary.LittleEndian.Uint32(r.b[r.p:])
	if found > 1 {
		r.fail(fmt.Sprintf("%s found flag is %d, want 0 or 1", name, found))
		return Value{}
	}
	r.p += 4
	return Value{Found: found == 1, Bytes: r.bytes(name)}
}

// KeyValue is a key a non-deterministic operation read through FuncTxnGet
// and the value it saw.
type KeyValue struct {
	TableKey
	Value
}

// OpOutcome is what one operation read, as handed to sluice_post.
type OpOutcome struct {
	// Executed is false for operations after the one that aborted their
	// event's transaction: they never ran.
	Executed bool
	Own      Value
	Reads    []Value
	// Gets are the values a non-deterministic operation read from state
	// through FuncTxnGet, in call order: keys that are not declared reads
	// (their values are in Reads) and that it had not written itself.
	Gets []KeyValue
}

// EventOutcome is one event's outcome.
type EventOutcome struct {
	Committed bool
	Ops       []OpOutcome
}

// Encoding of outcomes (integers u32 little endian): event count, then per
// event: committed (0 or 1), operation count, then per operation: executed
// (0 or 1), own found (0 or 1), own length, own value, read count, per read:
// found, length, value; get count, per get: table, key length, key, found,
// length, value.

// AppendOutcomesHeader appends the event count of an outcomes encoding.
func AppendOutcomesHeader(dst []byte, events uint32) []byte {
	return binary.LittleEndian.AppendUint32(dst, events)
}

// AppendEventOutcome appends one event's outcome.
func AppendEventOutcome(dst []byte, e *EventOutcome) []byte {
	le := binary.LittleEndian
	dst = le.AppendUint32(dst, b2u(e.Committed))
	dst = le.AppendUint32(dst, uint32(len(e.Ops)))
	for i := range e.Ops {
		o := &e.Ops[i]
		dst = le.AppendUint32(dst, b2u(o.Executed))
		dst = appendValue(dst, o.Own)
		dst = le.AppendUint32(dst, uint32(len(o.Reads)))
		for j := range o.Reads {
			dst = appendValue(dst, o.Reads[j])
		}
		dst = le.AppendUint32(dst, uint32(len(o.Gets)))
		for j := range o.Gets {
			g := &o.Gets[j]
			dst = le.AppendUint32(dst, g.Table)
			dst = appendField(dst, g.Key)
			dst = appendValue(dst, g.Value)
		}
	}
	return dst
}

// OutcomeDecoder reads an outcomes encoding without copying.
type OutcomeDecoder struct {
	r     reader
	n, i  int
	ops   []OpOutcome
	vals  []Value
	gets  []KeyValue
	spans []span
}

// span locates one operation's reads and gets in the decoder's buffers.
type span struct{ r0, r1, g0, g1 int }

// Reset makes the decoder read b from its start and returns the number of
// events it announces.
func (d *OutcomeDecoder) Reset(b []byte) (int, error) {
	d.r = reader{what: "outcomes", b: b}
	d.n = d.r.count("event count", 8)
	d.i = 0
	return d.n, d.r.err
}

// Next decodes the next event's outcome into e and reports whether it did.
// e's slices alias the input and buffers of d reused by the next call.
func (d *OutcomeDecoder) Next(e *EventOutcome) bool {
	r := &d.r
	if r.err != nil {
		return false
	}
	if d.i < d.n && d.nextFast(e) {
		return true
	}
	return d.nextChecked(e)
}

// nextChecked is Next with every check and message.
func (d *OutcomeDecoder) nextChecked(e *EventOutcome) bool {
	r := &d.r
	if r.err != nil {
		return false
	}
	if d.i == d.n {
		if r.p != len(r.b) {
			r.fail(fmt.Sprintf("%d trailing bytes after %d events", len(r.b)-r.p, d.n))
		}
		return false
	}
	d.i++
	e.Committed = r.flag("committed")
	n := r.count("operation count", 20)
	d.ops, d.vals, d.gets = d.ops[:0], d.vals[:0], d.gets[:0]
	sp := d.spans[:0]
	for i := 0; i < n && r.err == nil; i++ {
		var o OpOutcome
		o.Executed = r.flag("executed")
		o.Own = r.value("own value")
		var s span
		s.r0 = len(d.vals)
		nr := r.count("read count", 8)
		for j := 0; j < nr && r.err == nil; j++ {
			d.vals = append(d.vals, r.value("read value"))
		}
		s.r1, s.g0 = len(d.vals), len(d.gets)
		ng := r.count("get count", 16)
		for j := 0; j < ng && r.err == nil; j++ {
			var g KeyValue
			g.Table = r.u32("get table")
			g.Key = r.bytes("get key")
			g.Value = r.value("get value")
			d.gets = append(d.gets, g)
		}
		s.g1 = len(d.gets)
		d.ops = append(d.ops, o)
		sp = append(sp, s)
	}
	d.spans = sp
	if r.err != nil {
		return false
	}
	// Slice the shared buffers only now: appends above may have moved them.
	for i := range d.ops {
		d.ops[i].Reads = d.vals[sp[i].r0:sp[i].r1:sp[i].r1]
		d.ops[i].Gets = d.gets[sp[i].g0:sp[i].g1:sp[i].g1]
	}
	e.Ops = d.ops
	return true
}

// Err returns the first decoding error, or nil.
func (d *OutcomeDecoder) Err() error { return d.r.err }

func (r *reader) flag(name string) bool {
	v := r.u32(name)
	if v > 1 && r.err == nil {
		r.p -= 4
		r.fail(fmt.Sprintf("%s is %d, want 0 or 1", name, v))
	}
	return v == 1
}

func appendField(dst, b []byte) []byte {
	dst = binary.LittleEndian.AppendUint32(dst, uint32(len(b)))
	return append(dst, b...)
}

func appendValue(dst []byte, v Value) []byte {
	dst = binary.LittleEndian.AppendUint32(dst, b2u(v.Found))
	return appendField(dst, v.Bytes)
}

func b2u(b bool) uint32 {
	if b {
		return 1
	}
	return 0
}

// The fast decoders below read well-formed input with the fewest calls and
// checks (they run in the guest, once per operation); on anything they do
// not accept they give up, and the checked decoders above report the error.

// fastU32 reads a u32 at b[p:].
func fastU32(b []byte, p int) (uint32, bool) {
	if p < 0 || len(b)-p < 4 {
		return 0, false
	}
	return binary.LittleEndian.Uint32(b[p:]), true
}

// fastField reads a length-prefixed byte string at b[p:].
func fastField(b []byte, p int) ([]byte, int, bool) {
	n, ok := fastU32(b, p)
	p += 4
	if !ok || uint64(n) > uint64(len(b)-p) {
		return nil, p, false
	}
	if n == 0 {
		return nil, p, true
	}
	e := p + int(n)
	return b[p:e:e], e, true
}

// fastValue reads a found flag and a byte string at b[p:].
func fastValue(b []byte, p int) (Value, int, bool) {
	f, ok := fastU32(b, p)
	if !ok || f > 1 {
		return Value{}, p, false
	}
	v, p, ok := fastField(b, p+4)
	return Value{Found: f == 1, Bytes: v}, p, ok
}

func decodeApplyFast(b []byte, q *ApplyRequest) bool {
	if len(b) < ApplyResultSize+20 {
		return false
	}
	le := binary.LittleEndian
	q.Fn = le.Uint32(b[8:])
	q.Event = le.Uint32(b[12:])
	q.Op = le.Uint32(b[16:])
	f := le.Uint32(b[20:])
	if f&OpFlagWindow != 0 {
		return false // the checked decoder reads windows
	}
	q.Flags, q.Own.Found = f&OpFlagNonDet, f&applyFlagOwnFound != 0
	q.Table = le.Uint32(b[24:])
	var ok bool
	p := 28
	if q.Key, p, ok = fastField(b, p); !ok {
		return false
	}
	if q.Own.Bytes, p, ok = fastField(b, p); !ok {
		return false
	}
	n, ok := fastU32(b, p)
	p += 4
	if !ok || uint64(n)*16 > uint64(len(b)-p) {
		return false
	}
	q.Reads = q.Reads[:0]
	for range n {
		var rv ReadValue
		if rv.Table, ok = fastU32(b, p); !ok {
			return false
		}
		if rv.Key, p, ok = fastField(b, p+4); !ok {
			return false
		}
		if rv.Value, p, ok = fastValue(b, p); !ok {
			return false
		}
		q.Reads = append(q.Reads, rv)
	}
	q.Arg, p, ok = fastField(b, p)
	return ok && p == len(b)
}

// nextFast decodes the next event when it is well formed, else leaves d
// as it was and returns false.
func (d *OutcomeDecoder) nextFast(e *EventOutcome) bool {
	b, p := d.r.b, d.r.p
	c, ok1 := fastU32(b, p)
	n, ok2 := fastU32(b, p+4)
	p += 8
	if !ok1 || !ok2 || c > 1 || uint64(n)*20 > uint64(len(b)-p) {
		return false
	}
	d.ops, d.vals, d.gets, d.spans = d.ops[:0], d.vals[:0], d.gets[:0], d.spans[:0]
	for range n {
		var o OpOutcome
		x, ok := fastU32(b, p)
		if !ok || x > 1 {
			return false
		}
		o.Executed = x == 1
		if o.Own, p, ok = fastValue(b, p+4); !ok {
			return false
		}
		s := span{r0: len(d.vals)}
		nr, ok := fastU32(b, p)
		p += 4
		if !ok || uint64(nr)*8 > uint64(len(b)-p) {
			return false
		}
		for range nr {
			var v Value
			if v, p, ok = fastValue(b, p); !ok {
				return false
			}
			d.vals = append(d.vals, v)
		}
		s.r1, s.g0 = len(d.vals), len(d.gets)
		ng, ok := fastU32(b, p)
		p += 4
		if !ok || uint64(ng)*16 > uint64(len(b)-p) {
			return false
		}
		for range ng {
			var g KeyValue
			if g.Table, ok = fastU32(b, p); !ok {
				return false
			}
			if g.Key, p, ok = fastField(b, p+4); !ok {
				return false
			}
			if g.Value, p, ok = fastValue(b, p); !ok {
				return false
			}
			d.gets = append(d.gets, g)
		}
		s.g1 = len(d.gets)
		d.ops = append(d.ops, o)
		d.spans = append(d.spans, s)
	}
	for i := range d.ops {
		s := d.spans[i]
		d.ops[i].Reads = d.vals[s.r0:s.r1:s.r1]
		d.ops[i].Gets = d.gets[s.g0:s.g1:s.g1]
	}
	e.Committed, e.Ops = c == 1, d.ops
	d.r.p = p
	d.i++
	return true
}
