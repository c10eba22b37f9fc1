package sluice

import (
	"errors"
	"fmt"
	"math"
	"unsafe"

	"github.com/sluicehq/sluice/abi"
	"github.com/sluicehq/sluice/sdk/go/sluice/internal/bridge"
)

// Table is the handle of a state table of a transactional operator: handle
// i is the i-th table the pipeline declares for the operator, so
// DefaultTable, the zero Table, is the first. TableID resolves a name.
type Table uint32

// DefaultTable is the handle of the first table declared for the operator.
const DefaultTable Table = 0

// Key names one state entry: a table and a key in it. An operation's
// declared reads are Keys.
type Key struct {
	Table Table
	Key   []byte
}

// The planner hands a []Key to abi.AppendOpDecl as a []abi.TableKey, without
// a copy: the two must have the same layout. Each constant below overflows,
// failing the build, when they do not.
const (
	_ uintptr = -(unsafe.Sizeof(Key{}) ^ unsafe.Sizeof(abi.TableKey{}))
	_ uintptr = -(unsafe.Offsetof(Key{}.Key) ^ unsafe.Offsetof(abi.TableKey{}.Key))
	_ uintptr = -(unsafe.Sizeof(Table(0)) ^ unsafe.Sizeof(uint32(0)))
)

// tableKeys returns reads as the abi's type, sharing its memory.
func tableKeys(reads []Key) []abi.TableKey {
	if len(reads) == 0 {
		return nil
	}
	return unsafe.Slice((*abi.TableKey)(unsafe.Pointer(unsafe.SliceData(reads))), len(reads))
}

// Outcome is one event's outcome, handed to Txn.Post: whether its
// transaction committed and, per operation in declaration order, what it
// read. Ops[m].Executed is false for the operations after the one whose
// function aborted the transaction (they never ran); Own is the own key's
// value before the operation, Reads the values of the declared reads, and
// Gets the other keys a non-deterministic operation read through Call.Get
// (neither a declared read, whose value is in Reads, nor a key it had
// written itself), with the values it saw, in call order. An Outcome and the bytes it points to
// are valid only during the Post call.
type Outcome = abi.EventOutcome

// OpOutcome is what one operation read; see Outcome.
type OpOutcome = abi.OpOutcome

// Value is a value read from state, with whether the key existed.
type Value = abi.Value

// KeyValue is a key a non-deterministic operation read, with its value.
type KeyValue = abi.KeyValue

// Version is one version of a key in a windowed read's window (Call.Window):
// the value an event wrote (Found false: it deleted the key) and how many
// events before the reader's it is (Back 1: the one just before).
type Version = abi.WindowVersion

// Errors of transactional operators, checked with errors.Is.
var (
	// ErrUndeclared: an operation read or wrote state outside its
	// declaration (a key that is neither its own nor a declared read, a key
	// outside a non-deterministic operation's table, a write by a
	// deterministic operation, a read index out of range). The host fails
	// the operation, and so the batch, whatever its function returns; the
	// function should return Fail with the error.
	ErrUndeclared = errors.New("sluice: state access outside the operation's declaration")
	// ErrUnknownTable: TableID was given a name the pipeline does not
	// declare for the operator.
	ErrUnknownTable = errors.New("sluice: state table not declared for the operator")
)

// TxnFunc computes one operation of a transactional operator: from what c
// reads, the Effect on the operation's own key. It may be called more than
// once for one operation (the scheduler re-executes an operation whose
// inputs an abort changed), on any worker, in any instance, concurrently
// with other operations: it must be deterministic, depending only on what c
// gives it, and must not keep c or the bytes c returns after it returns.
type TxnFunc func(c *Call) Effect

// Txn is a transactional operator: its events (input records) are
// transactions over the operator's shared state tables, which the host
// schedules on several workers with a result equal to running them one
// after the other in event order. Transactional registers one.
//
// Per batch of events, the host calls Plan for each event, in order, to
// declare the event's operations; runs each operation's function (an
// element of Funcs) when the scheduler reaches it; and, once the batch's
// outcome is known, calls Post for each event, in order, to emit outputs.
type Txn struct {
	// Plan declares the operations of one event, in order, through p. It
	// must decide from ev alone (and the operator's configuration), not
	// from state, which only functions read. An error fails the whole
	// batch: it is for input the operator cannot plan at all, and the
	// host reports it with the batch's failure; a bad event that should
	// just be skipped is better declared with no operations and reported
	// by Post.
	Plan func(ev Record, p *Planner) error
	// Funcs are the functions operations name by their index (Planner's
	// fn argument).
	Funcs []TxnFunc
	// Post emits the outputs of one event once its outcome is known
	// (optional). An error dead-letters the event with the error's text
	// and discards what Post emitted for it; its state effects stay.
	Post func(ev Record, o *Outcome, out *Emitter) error
}

// checkTxn reports what makes op unusable.
func checkTxn(op *Txn) error {
	if op.Plan == nil {
		return errors.New("sluice: Transactional: Txn.Plan is nil")
	}
	if len(op.Funcs) == 0 {
		return errors.New("sluice: Transactional: Txn.Funcs is empty: every operation names a function")
	}
	for i, f := range op.Funcs {
		if f == nil {
			return fmt.Errorf("sluice: Transactional: Txn.Funcs[%d] is nil", i)
		}
	}
	return nil
}

// Transactional registers op as the operator's handler: the plugin serves
// a transactional operator. A plugin registers exactly one handler, from
// an init function of package main. It panics when op.Plan is nil or a
// function of op.Funcs is nil. op is copied; changing its Funcs slice later
// has no effect.
func Transactional(op Txn) {
	if err := checkTxn(&op); err != nil {
		panic(err.Error())
	}
	registered.set(kindTxn, "Transactional", false)
	op.Funcs = append([]TxnFunc(nil), op.Funcs...)
	registered.txn = &op
}

// TableID returns the handle of the operator's state table called name, or
// an error wrapping ErrUnknownTable when the pipeline declares no such
// table. Call it from a handler (Plan, a function, Post, or a Configure
// handler if the host allows it), not from init; handles do not change for
// the life of the instance, so resolve each once and keep it. In
// WebAssembly the SDK caches the answer. In a native build it resolves the
// name against the tables given to the sluicetest.NewTxnDriver most
// recently running a handler.
func TableID(name string) (Table, error) { return tableID(name) }

// Planner declares an event's operations. The SDK passes one to Txn.Plan;
// it is valid only during that call.
//
// An operation either writes one key (Write: deterministic), or reads and
// writes keys of one table that depend on values it reads (NonDet). Each
// names the function that computes it (an index into Txn.Funcs) and carries
// an argument, the event's parameters, which its function receives
// unchanged. The operations of an event run in declaration order, each
// seeing the writes of those before it; an Abort from any of them aborts
// the event's transaction, undoing every write of it.
//
// Key, argument and read keys are copied during the call: their memory may
// be reused at once.
type Planner struct {
	active bool
	event  uint32
	nfn    int    // len(Txn.Funcs)
	err    error  // the first misuse; it fails the batch
	window uint32 // the window of the declaration being made by Window

	// buf gathers encoded declarations for the host (WebAssembly).
	buf []byte

	// A native driver stages the event's declarations instead, in memory
	// owned by the Planner.
	native bool
	decls  []abi.OpDecl
	reads  []abi.TableKey
	arena  []byte
}

// Write declares a deterministic operation: function fn computes the new
// value of key in table t from that key's value and the values of reads,
// other keys the operation reads (which order it after the earlier writers
// of those keys).
func (p *Planner) Write(t Table, key []byte, fn int, arg []byte, reads ...Key) {
	p.declare(0, t, key, fn, arg, reads)
}

// NonDet declares a non-deterministic operation over table t: function fn
// may read (Call.Get) and write (Call.Put, Call.Delete) any key of t, chosen
// from the values it reads, besides reading the declared reads (of any
// table). The host orders it after every earlier and before every later
// operation on t, and records what it actually touched. The operation has
// no own key: its function's Effect counts only when it is Abort.
func (p *Planner) NonDet(t Table, fn int, arg []byte, reads ...Key) {
	p.declare(abi.OpFlagNonDet, t, nil, fn, arg, reads)
}

// Window declares a windowed read: a deterministic operation, as Write
// declares it, whose function also sees, for each of reads, every version
// of the key written by the window events before its own (Call.Window),
// oldest first; the window never holds its own event's writes nor later
// ones. window is at least 1 and at most the operator's read_window in the
// pipeline file, or the batch fails.
func (p *Planner) Window(t Table, key []byte, fn int, arg []byte, window uint32, reads ...Key) {
	if window == 0 {
		if p != nil && p.active && p.err == nil {
			p.err = fmt.Errorf("event %d: a windowed read of window 0: want at least 1 event", p.event)
		}
		return
	}
	p.window = window
	p.declare(abi.OpFlagWindow, t, key, fn, arg, reads)
	p.window = 0
}

func (p *Planner) declare(flags uint32, t Table, key []byte, fn int, arg []byte, reads []Key) {
	if p == nil || !p.active || uint(fn) >= uint(p.nfn) {
		p.misuse(fn)
		return
	}
	if nativeBuild && p.native {
		p.stage(&abi.OpDecl{Event: p.event, Fn: uint32(fn), Flags: flags, Table: uint32(t), Key: key, Reads: tableKeys(reads), Arg: arg, Window: p.window})
		return
	}
	if flags&abi.OpFlagWindow != 0 {
		size := declFixed + len(key) + len(arg) + 8*len(reads)
		for i := range reads {
			size += len(reads[i].Key)
		}
		appendDeclCopy(&p.buf, size, p.event, uint32(fn), flags, uint32(t), key, reads, arg)
		p.buf = append(p.buf, byte(p.window), byte(p.window>>8), byte(p.window>>16), byte(p.window>>24))
		return
	}
	// The encoding (abi.AppendOpDecl's), written for Go's WebAssembly code:
	// it runs once per declaration. The byte strings are moved rather than
	// copied when they may be (see txncodec.go), and p.buf gets only its
	// length stored, which stores no pointer, unless it must grow.
	size := declFixed + len(key) + len(arg) + 8*len(reads)
	copies := noMove(key) | noMove(arg)
	for i := range reads {
		size += len(reads[i].Key)
		copies |= noMove(reads[i].Key)
	}
	at := len(p.buf)
	if copies != 0 || cap(p.buf)-at < size+16 {
		appendDeclCopy(&p.buf, size, p.event, uint32(fn), flags, uint32(t), key, reads, arg)
		return
	}
	p.buf = p.buf[:at+size]
	d := unsafe.Add(unsafe.Pointer(unsafe.SliceData(p.buf)), at)
	putLE32(d, p.event)
	putLE32(unsafe.Add(d, 4), uint32(fn))
	putLE32(unsafe.Add(d, 8), flags)
	putLE32(unsafe.Add(d, 12), uint32(t))
	putLE32(unsafe.Add(d, 16), uint32(len(key)))
	move16(unsafe.Add(d, 20), unsafe.Pointer(unsafe.SliceData(key)))
	off := 20 + len(key)
	putLE32(unsafe.Add(d, off), uint32(len(reads)))
	off += 4
	for i := range reads {
		r := &reads[i]
		putLE32(unsafe.Add(d, off), uint32(r.Table))
		putLE32(unsafe.Add(d, off+4), uint32(len(r.Key)))
		move16(unsafe.Add(d, off+8), unsafe.Pointer(unsafe.SliceData(r.Key)))
		off += 8 + len(r.Key)
	}
	putLE32(unsafe.Add(d, off), uint32(len(arg)))
	move16(unsafe.Add(d, off+4), unsafe.Pointer(unsafe.SliceData(arg)))
}

// misuse panics for a Planner used outside its Plan call, and records an
// operation naming a function the operator does not have: it fails the
// batch.
func (p *Planner) misuse(fn int) {
	if p == nil || !p.active {
		panic("sluice: Planner used outside the Plan call it was passed to")
	}
	if p.err == nil {
		p.err = fmt.Errorf("event %d: operation names function %d, but the operator has %d functions (Txn.Funcs)", p.event, fn, p.nfn)
	}
}

// stage copies d into memory the Planner owns, for the native driver.
// Slices taken before the arena grows keep pointing into its previous
// array, which is not written again: they stay valid.
func (p *Planner) stage(d *abi.OpDecl) {
	// Field by field: a copy of *d would make escape analysis believe
	// the caller's slices are kept, and move them to the heap.
	s := abi.OpDecl{Event: d.Event, Fn: d.Fn, Flags: d.Flags, Table: d.Table, Key: p.keep(d.Key), Arg: p.keep(d.Arg), Window: d.Window}
	if len(d.Reads) > 0 {
		r0 := len(p.reads)
		for _, r := range d.Reads {
			p.reads = append(p.reads, abi.TableKey{Table: r.Table, Key: p.keep(r.Key)})
		}
		s.Reads = p.reads[r0:len(p.reads):len(p.reads)]
	}
	p.decls = append(p.decls, s)
}

// keep copies b into the arena.
func (p *Planner) keep(b []byte) []byte {
	if len(b) == 0 {
		return nil
	}
	n := len(p.arena)
	p.arena = append(p.arena, b...)
	return p.arena[n:len(p.arena):len(p.arena)]
}

// Effect is what a function decides for its operation: write a value
// (Write), leave the key as it is (Keep), delete it (Delete), abort the
// event's transaction (Abort), or fail (Fail). The zero Effect writes an
// empty value. For a non-deterministic operation, whose writes are its Puts
// and Deletes, only Abort and Fail count.
type Effect struct {
	// The value as a pointer and a length, and the error separately, so
	// that an Effect is four words or less and Go's WebAssembly code
	// returns it in registers rather than through memory copies.
	ptr  *byte
	n    int32
	code int32 // abi.ApplyWrite, ApplyKeep, ApplyDelete, ApplyAbort or codeFail
	err  error
}

// codeFail is the Effect code of Fail: the apply call returns StatusError.
const codeFail = abi.StatusError

// codeTooLarge is the Effect code of a Write of a value over the ABI's
// limit: the operation fails with errTooLarge.
const codeTooLarge int32 = -100

// Write returns the Effect that stores v as the key's new value. v is
// copied after the function returns, so it may be a buffer the function
// reuses from call to call (Call.Scratch) or bytes it read.
func Write(v []byte) Effect {
	// No call here, so that Write is inlined: a value over the ABI's
	// limit fails the operation when the SDK reads the Effect.
	e := Effect{ptr: unsafe.SliceData(v), n: int32(len(v))}
	if len(v) > math.MaxInt32 {
		e.code = codeTooLarge
	}
	return e
}

// errTooLarge is the failure of a Write of a value over the ABI's limit.
var errTooLarge = fmt.Errorf("sluice: Write of a value over the ABI's limit of %d bytes", math.MaxInt32)

// Keep returns the Effect that leaves the key unchanged: no version is
// written, so the operation does not count as a write of the key.
func Keep() Effect { return Effect{code: abi.ApplyKeep} }

// Delete returns the Effect that deletes the key.
func Delete() Effect { return Effect{code: abi.ApplyDelete} }

// Abort returns the Effect that aborts the event's transaction: a
// condition failed. Every write of the transaction is undone, its later
// operations do not run, and Post sees the event as not committed.
func Abort() Effect { return Effect{code: abi.ApplyAbort} }

// Fail returns the Effect that fails the operation with err: not an abort
// but a fault (a value that cannot be decoded, an access refused with
// ErrUndeclared). It fails the whole batch, whose error carries err's text.
func Fail(err error) Effect {
	if err == nil {
		err = errors.New("sluice: Fail(nil): the function failed without an error")
	}
	return Effect{code: codeFail, err: err}
}

// Call is one execution of an operation, handed to its function: what the
// operation is, the values it reads, and tracked access to state. It is
// valid only during the function call, and so are the byte slices its
// methods return, which must not be modified: in a native run they are the
// scheduler's versions.
type Call struct {
	// req is the request being computed in native builds: a native run's
	// (sluicetest's TxnDriver, with acc its state access), or the guest
	// core's, decoded into w and copied into nreq. In WebAssembly the
	// accessors read w and the native code is compiled out (nativeBuild).
	req  *abi.ApplyRequest
	nreq abi.ApplyRequest
	acc  bridge.TxnAccess
	w    wireRequest
	g    *guest
	// err is the first access the host refused, and badRead and badIndex
	// a read index out of range: the operation fails whatever the
	// function returns. The guest core clears them when it reports the
	// failure, so that they need no store on the common path.
	err      error
	badRead  bool
	badIndex int
	getBuf   []byte
	scratch  []byte
	versions []Version // Window's, in WebAssembly
}

// Event returns the index of the operation's event in its batch.
func (c *Call) Event() int {
	if nativeBuild {
		return int(c.req.Event)
	}
	return int(c.w.event)
}

// Op returns the operation's index among its event's operations, in
// declaration order.
func (c *Call) Op() int {
	if nativeBuild {
		return int(c.req.Op)
	}
	return int(c.w.op)
}

// Fn returns the index of the function called.
func (c *Call) Fn() int {
	if nativeBuild {
		return int(c.req.Fn)
	}
	return int(c.w.fn)
}

// Arg returns the argument the operation was declared with.
func (c *Call) Arg() []byte {
	if nativeBuild {
		return c.req.Arg
	}
	return c.w.bytes(c.w.arg)
}

// Key returns the operation's own key: the key it writes. A
// non-deterministic operation has none (nil).
func (c *Call) Key() []byte {
	if nativeBuild {
		return c.req.Key
	}
	return c.w.bytes(c.w.key)
}

// Table returns the table of the operation's own key, or the table a
// non-deterministic operation is scoped to.
func (c *Call) Table() Table {
	if nativeBuild {
		return Table(c.req.Table)
	}
	return Table(c.w.table)
}

// NonDet reports whether the operation was declared with Planner.NonDet.
func (c *Call) NonDet() bool {
	if nativeBuild {
		return c.req.Flags&abi.OpFlagNonDet != 0
	}
	return c.w.flags&abi.OpFlagNonDet != 0
}

// Own returns the own key's value before the operation, and whether the
// key exists. A non-deterministic operation has no own key: (nil, false).
func (c *Call) Own() ([]byte, bool) {
	if nativeBuild {
		return c.req.Own.Bytes, c.req.Own.Found
	}
	return c.w.bytes(c.w.own), c.w.ownFound
}

// Reads returns the number of declared reads.
func (c *Call) Reads() int {
	if nativeBuild {
		return len(c.req.Reads)
	}
	return int(c.w.nreads)
}

// Read returns the value of declared read i (in the order Planner's reads
// were given) as of the operation's place in event order, and whether the
// key exists. An index out of range is an access outside the declaration:
// it returns (nil, false) and fails the operation (ErrUndeclared).
func (c *Call) Read(i int) ([]byte, bool) {
	if nativeBuild {
		if uint(i) < uint(len(c.req.Reads)) {
			r := &c.req.Reads[i]
			return r.Bytes, r.Found
		}
	} else if uint(i) < uint(c.w.nreads) {
		r := &c.w.reads[i]
		return c.w.bytes(r.val), r.found
	}
	// No call here, so that Read is inlined: the SDK turns the bad index
	// into the operation's failure when the function returns.
	c.badRead, c.badIndex = true, i
	return nil, false
}

// Window returns the window of declared read i of a windowed read
// (Planner.Window): the versions of the key written by the events of the
// window, oldest first, one per event (its last write of the key). The
// versions are valid only during the function call. An operation that is
// not a windowed read, or an index out of range, is an access outside the
// declaration: it returns nil and fails the operation (ErrUndeclared).
func (c *Call) Window(i int) []Version {
	if nativeBuild {
		if c.req.Flags&abi.OpFlagWindow != 0 && uint(i) < uint(len(c.req.Reads)) {
			return c.req.Reads[i].Window
		}
	} else if c.w.flags&abi.OpFlagWindow != 0 && uint(i) < uint(c.w.nreads) {
		c.versions = c.w.window(i, c.versions[:0])
		return c.versions
	}
	c.badRead, c.badIndex = true, i
	return nil
}

// fault returns the reason the operation fails whatever its function
// returned (a refused access), or nil.
func (c *Call) fault() error {
	if c.badRead {
		c.refuse(fmt.Errorf("%w: read index %d of %d declared reads", ErrUndeclared, c.badIndex, c.Reads()))
		c.badRead = false
	}
	return c.err
}

// effectError returns the error of an Effect that fails the operation, or
// nil.
func effectError(e *Effect) error {
	switch e.code {
	case codeFail:
		return e.err
	case codeTooLarge:
		return errTooLarge
	}
	return nil
}

// Get returns the value of key in table t as of the operation's place in
// event order, and whether it exists. A deterministic operation may Get its
// own key and its declared reads; a non-deterministic one its declared
// reads and any key of its table, and sees its own Puts and Deletes. The
// host records each key a non-deterministic operation reads (Outcome's
// Gets). Anything else is refused with an error wrapping ErrUndeclared, and
// the operation fails whatever the function returns: return Fail(err).
//
// The value is valid until the next Get of the call.
func (c *Call) Get(t Table, key []byte) ([]byte, bool, error) {
	if nativeBuild && c.acc != nil {
		v, ok, err := c.acc.Get(uint32(t), key)
		if err != nil {
			return nil, false, c.refused("get", t, key, err)
		}
		return v, ok, nil
	}
	h := c.g.mustTxnHost()
	for attempt := 0; ; attempt++ {
		buf := c.getBuf[:cap(c.getBuf)]
		n := h.TxnGet(int32(t), key, buf)
		switch {
		case n == abi.StatusNotFound:
			return nil, false, nil
		case n == abi.StatusUndeclared:
			return nil, false, c.refused("get", t, key, nil)
		case n < 0:
			panic(fmt.Sprintf("sluice: %s returned the unknown status %d", abi.FuncTxnGet, n))
		case int(n) <= len(buf):
			return buf[:n], true, nil
		case attempt > 0:
			panic(fmt.Sprintf("sluice: %s reported %d bytes after a retry with a %d-byte buffer", abi.FuncTxnGet, n, len(buf)))
		}
		c.getBuf = make([]byte, int(n)+int(n)/4)
	}
}

// Put stores value for key in table t: only a non-deterministic operation
// may, and only in its table; anything else is refused with an error
// wrapping ErrUndeclared (see Get). key and value are copied during the
// call.
func (c *Call) Put(t Table, key, value []byte) error {
	if nativeBuild && c.acc != nil {
		if err := c.acc.Put(uint32(t), key, value); err != nil {
			return c.refused("put", t, key, err)
		}
		return nil
	}
	return c.status("put", t, key, c.g.mustTxnHost().TxnPut(int32(t), key, value))
}

// Delete deletes key in table t, under Put's rules.
func (c *Call) Delete(t Table, key []byte) error {
	if nativeBuild && c.acc != nil {
		if err := c.acc.Delete(uint32(t), key); err != nil {
			return c.refused("delete", t, key, err)
		}
		return nil
	}
	return c.status("delete", t, key, c.g.mustTxnHost().TxnDelete(int32(t), key))
}

// status turns the status of txn_put or txn_delete into an error.
func (c *Call) status(what string, t Table, key []byte, st int32) error {
	switch st {
	case abi.StatusOK:
		return nil
	case abi.StatusUndeclared:
		return c.refused(what, t, key, nil)
	}
	panic(fmt.Sprintf("sluice: txn_%s returned the unknown status %d", what, st))
}

// Scratch returns n bytes (of unspecified content) that the SDK reuses from
// call to call, for building the value a function writes without
// allocating: sluice.Write(c.Scratch(8)) after filling them. They are valid
// until the function returns.
func (c *Call) Scratch(n int) []byte {
	if cap(c.scratch) < n {
		c.scratch = make([]byte, max(n, 64))
	}
	return c.scratch[:n]
}

// refused records and returns the error of an access the host refused;
// cause is the native scheduler's reason, if any.
func (c *Call) refused(what string, t Table, key []byte, cause error) error {
	var err error
	if cause != nil {
		err = fmt.Errorf("%w: %s of table %d key %q: %w", ErrUndeclared, what, t, key, cause)
	} else {
		err = fmt.Errorf("%w: %s of table %d key %q", ErrUndeclared, what, t, key)
	}
	c.refuse(err)
	return err
}

// refuse records err as the reason the operation fails.
func (c *Call) refuse(err error) {
	if c.err == nil {
		c.err = err
	}
}
