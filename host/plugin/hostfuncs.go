package plugin

import (
	"context"
	"encoding/binary"
	"fmt"
	"log/slog"
	"math"
	"unsafe"

	"github.com/sluicehq/sluice/abi"
	"github.com/sluicehq/sluice/runtime"
)

// What the host holds for a guest call beyond the bytes the guest hands it,
// counted against Limits.MaxOutputBytes with them (see call.keep).
const (
	// recordBookkeeping is what the host holds for each emitted record
	// besides its bytes: its abi.Record.
	recordBookkeeping = int(unsafe.Sizeof(abi.Record{}))
	// stateWriteBookkeeping is what the host holds for each write or
	// delete of keyed state besides the key and value: the undo record a
	// savepoint needs and, for a key new to memory, its entry and index.
	stateWriteBookkeeping = 128
	// MaxStateValueBytes bounds one value a keyed operator stores.
	MaxStateValueBytes = abi.MaxRecordSize
)

// Bounds on what the log and reject host functions keep of a guest's message.
const (
	// maxMessageBytes bounds a log or reject message; the rest is cut.
	maxMessageBytes = 1024
	// maxLogsPerCall bounds the log messages one guest call may write;
	// later ones are counted and reported once when the call returns.
	maxLogsPerCall = 64
)

// callKey is the context key under which a guest call's *call travels to the
// host functions.
type callKey struct{}

// call is the state of the guest call in progress, found by host functions
// through the ctx. Each Instance owns one and resets it before every guest
// call, so host calls allocate nothing to find it.
type call struct {
	plugin string
	kind   Kind
	limits Limits
	logger *slog.Logger

	export   string  // the export being called
	st       State   // the State of a keyed operator during sluice_process, else nil
	out      *Output // the Output during sluice_process and sluice_post, else nil
	n        uint32  // number of records in the input batch of the call: the bound of an output's Origin
	rejectN  uint32  // the bound of a rejected origin: n, but for the window exports
	base     uint32  // index, in the batch given to Process, of the call's record 0
	outBytes int     // bytes passed to emit during the call
	logs     int     // log messages written during the call
	dropped  int     // log messages dropped during the call
	lastErr  []byte  // the last LogError message of the call
	// rejected has bit i set when input record i of the call was
	// rejected; dirty says it has bits to clear before the next call.
	rejected []uint64
	dirty    bool
	dec      abi.Decoder
	rec      abi.Record
	tx       txnCall  // the transactional call in progress (txn_host.go)
	tables   []string // a transactional operator's tables, by handle
}

// begin prepares c for a call of export.
func (c *call) begin(export string, st State, out *Output, n, base uint32) {
	c.export, c.st, c.out, c.n, c.rejectN, c.base = export, st, out, n, n, base
	c.outBytes, c.logs, c.dropped = 0, 0, 0
	c.lastErr = c.lastErr[:0]
	if c.dirty {
		clear(c.rejected)
		c.dirty = false
	}
}

// firstReject marks input record origin of the call as rejected and
// reports whether it was not already: a record is dead-lettered once, with
// the first message the guest gave, so that a guest calling reject in a
// loop cannot make the host keep a message per call.
func (c *call) firstReject(origin uint32) bool {
	w, bit := origin/64, uint64(1)<<(origin%64)
	if int(w) >= len(c.rejected) {
		c.rejected = append(c.rejected, make([]uint64, int(w)+1-len(c.rejected))...)
	}
	if c.rejected[w]&bit != 0 {
		return false
	}
	c.rejected[w] |= bit
	c.dirty = true
	return true
}

// end reports dropped log messages and releases what the call referenced.
func (c *call) end(ctx context.Context) {
	if c.dropped > 0 {
		c.logger.LogAttrs(ctx, slog.LevelWarn, "plugin log messages dropped",
			slog.String("export", c.export), slog.Int("dropped", c.dropped), slog.Int("limit", maxLogsPerCall))
	}
	c.st, c.out = nil, nil
}

// reason returns the guest's last error message of the call.
func (c *call) reason() string { return string(c.lastErr) }

// keep counts n more bytes that the guest call makes the host keep (fn's
// what), and fails the call when they take the call past
// Limits.MaxOutputBytes: emitted records and keyed state writes, with the
// host's bookkeeping of each, and a transactional operator's declarations
// and the keys and values txn_get, txn_put and txn_delete copy, all count,
// since the host holds them until the batch ends.
func (c *call) keep(fn, what string, n int) {
	if int64(c.outBytes)+int64(n) > int64(c.limits.MaxOutputBytes) {
		hostFault(fn, "%s take the bytes this call has the host keep to %d, over the limit of %d bytes per call "+
			"(records emitted, state written and the host's bookkeeping of each: abi/ABI.md section 6)",
			what, int64(c.outBytes)+int64(n), c.limits.MaxOutputBytes)
	}
	c.outBytes += n
}

// HostModule returns the "sluice" host functions, to be registered with the
// engine every plugin is loaded into:
//
//	eng, err := runtime.NewWazero(ctx, runtime.NewConfig().WithHostModules(plugin.HostModule()))
//
// The functions serve every plugin of the engine: each finds the call in
// progress, and through it the plugin, its State and its Output (or, for a
// transactional operator, the operation's txn.Access), in its ctx. Any
// plugin may import every function; one called outside the call it belongs
// to (txn_plan outside sluice_plan, txn_get, txn_put and txn_delete outside
// sluice_apply, emit and reject outside sluice_process and sluice_post)
// fails the guest call.
//
// Every pointer and length a guest passes is checked against its memory; a
// bad one, or a misuse of the ABI, fails the guest call with a
// *runtime.HostError naming the function and the fault.
func HostModule() runtime.HostModule {
	return runtime.HostModule{
		Name: abi.HostModule,
		Funcs: []runtime.HostFunc{
			{Name: abi.FuncEmit, Signature: sig(2, 0), Fn: hostEmit},
			{Name: abi.FuncReject, Signature: sig(3, 0), Fn: hostReject},
			{Name: abi.FuncTableID, Signature: sig(2, 1), Fn: hostTableID},
			{Name: abi.FuncStateGet, Signature: sig(5, 1), Fn: hostStateGet},
			{Name: abi.FuncStatePut, Signature: sig(5, 0), Fn: hostStatePut},
			{Name: abi.FuncStateDelete, Signature: sig(3, 0), Fn: hostStateDelete},
			{Name: abi.FuncLog, Signature: sig(3, 0), Fn: hostLog},
			{Name: abi.FuncTxnPlan, Signature: sig(2, 0), Fn: hostTxnPlan},
			{Name: abi.FuncTxnGet, Signature: sig(5, 1), Fn: hostTxnGet},
			{Name: abi.FuncTxnPut, Signature: sig(5, 1), Fn: hostTxnPut},
			{Name: abi.FuncTxnDelete, Signature: sig(3, 1), Fn: hostTxnDelete},
		},
	}
}

// sig returns the signature of a function of params i32 parameters and
// results i32 results: every function of the ABI has only i32s.
func sig(params, results int) runtime.Signature {
	s := runtime.Signature{Params: make([]runtime.ValueType, params)}
	for i := range s.Params {
		s.Params[i] = runtime.I32
	}
	if results > 0 {
		s.Results = make([]runtime.ValueType, results)
		for i := range s.Results {
			s.Results[i] = runtime.I32
		}
	}
	return s
}

// hostFault fails the guest call: the engine turns the panic into a trap
// reported as a *runtime.Error of kind KindHost.
func hostFault(fn, format string, args ...any) {
	panic(&runtime.HostError{Func: fn, Reason: fmt.Sprintf(format, args...)})
}

// hostFaultErr fails the guest call with a *runtime.HostError that wraps
// err, so errors.Is and errors.As reach both.
func hostFaultErr(fn string, err error, format string, args ...any) {
	panic(fmt.Errorf("%w: %w", &runtime.HostError{Func: fn, Reason: fmt.Sprintf(format, args...)}, err))
}

// callOf returns the call in progress, failing the guest call when there is
// none (a host function called by a module this package did not start).
func callOf(ctx context.Context, fn string) *call {
	c, _ := ctx.Value(callKey{}).(*call)
	if c == nil {
		hostFault(fn, "called outside a Sluice guest call: the host has no call in progress")
	}
	return c
}

// checkRange fails the guest call unless [ptr, ptr+n) lies in memory.
func checkRange(mem runtime.Memory, fn, what string, ptr, n uint32) {
	end := uint64(ptr) + uint64(n)
	if end > math.MaxUint32 {
		hostFault(fn, "%s pointer %#x + length %d overflows the 32-bit address space (memory is %d bytes)", what, ptr, n, mem.Size())
	}
	if end > uint64(mem.Size()) {
		hostFault(fn, "%s pointer %#x length %d is outside memory of %d bytes", what, ptr, n, mem.Size())
	}
}

// read returns the guest's bytes at [ptr, ptr+n), failing the guest call when
// the range is outside its memory.
func read(mem runtime.Memory, fn, what string, ptr, n uint32) []byte {
	checkRange(mem, fn, what, ptr, n)
	b, ok := mem.Read(ptr, n)
	if !ok {
		hostFault(fn, "%s pointer %#x length %d is outside memory of %d bytes", what, ptr, n, mem.Size())
	}
	return b
}

// i32 returns the i32 parameter v as a signed value.
func i32(v uint64) int32 { return int32(uint32(v)) }

// ret encodes an i32 result.
func ret(v int32) uint64 { return uint64(uint32(v)) }

// printable limits a guest-supplied byte string for an error message.
func printable(b []byte) string {
	const limit = 64
	if len(b) > limit {
		return fmt.Sprintf("%q... (%d bytes)", b[:limit], len(b))
	}
	return fmt.Sprintf("%q", b)
}

// emit(ptr, len): append an encoded batch of output records to the Output.
func hostEmit(ctx context.Context, mem runtime.Memory, stack []uint64) {
	const fn = abi.FuncEmit
	c := callOf(ctx, fn)
	if c.out == nil {
		hostFault(fn, "called during %s: records may be emitted only by %s and %s, and by the window exports (abi/ABI.md section 13)", c.export, abi.ExportProcess, abi.ExportPost)
	}
	ptr, n := uint32(stack[0]), uint32(stack[1])
	b := read(mem, fn, "batch", ptr, n)
	// Each record costs the host its abi.Record besides its bytes. The
	// count is the batch's own, bounded by what its bytes can hold (the
	// decoder refuses a batch that claims more).
	var count int
	if len(b) >= abi.BatchHeaderSize {
		count = min(int(binary.LittleEndian.Uint32(b)), (len(b)-abi.BatchHeaderSize)/abi.MinEncodedRecordSize)
	}
	c.keep(fn, "emitted records", int(n)+count*recordBookkeeping)
	// One copy of the whole batch into the output arena; the records then
	// point into it instead of each being copied.
	b = c.out.copyBytes(b)
	c.out.growRecords(count)
	if err := c.dec.Reset(b); err != nil {
		hostFaultErr(fn, err, "malformed output batch")
	}
	r := &c.rec
	for i := 0; c.dec.Next(r); i++ {
		if r.Origin >= c.n {
			hostFault(fn, "output record %d has Origin %d, but the input batch has %d records", i, r.Origin, c.n)
		}
		if size := abi.DataSize(r); size > c.limits.MaxRecordBytes {
			hostFault(fn, "output record %d holds %d bytes (key, value and headers), over the limit of %d bytes (limits.max_record_bytes)", i, size, c.limits.MaxRecordBytes)
		}
		c.out.addAliased(r, c.base)
	}
	if err := c.dec.Err(); err != nil {
		hostFaultErr(fn, err, "malformed output batch")
	}
	*r = abi.Record{} // do not keep guest memory reachable
}

// reject(origin, msg_ptr, msg_len): mark an input record as failed. A
// record rejected again in the same call keeps its first message.
func hostReject(ctx context.Context, mem runtime.Memory, stack []uint64) {
	const fn = abi.FuncReject
	c := callOf(ctx, fn)
	if c.out == nil {
		hostFault(fn, "called during %s: records may be rejected only by %s and %s, and by the window exports (abi/ABI.md section 13)", c.export, abi.ExportProcess, abi.ExportPost)
	}
	if c.export == abi.ExportAggMerge {
		hostFault(fn, "called during %s: accumulators are merged, not records: nothing may be rejected", c.export)
	}
	origin := uint32(stack[0])
	msg := read(mem, fn, "message", uint32(stack[1]), uint32(stack[2]))
	if origin >= c.rejectN {
		hostFault(fn, "origin %d is not in the input batch of %d records", origin, c.rejectN)
	}
	if !c.firstReject(origin) {
		return
	}
	idx := int(origin) + int(c.base)
	c.out.Rejects = append(c.out.Rejects, Reject{Index: idx, Err: &RecordError{
		Plugin: c.plugin, Export: c.export, Index: idx, Reason: clip(msg), Err: ErrRejected,
	}})
}

// clip copies a guest message into a string of at most maxMessageBytes.
func clip(msg []byte) string {
	if len(msg) > maxMessageBytes {
		return fmt.Sprintf("%s... (%d bytes cut)", msg[:maxMessageBytes], len(msg)-maxMessageBytes)
	}
	return string(msg)
}

// state returns the call's State, failing the guest call when the operator
// has none.
func (c *call) state(fn string) State {
	if c.kind.Transactional() {
		hostFault(fn, "called by a transactional operator: its tables are reached through %s, %s and %s during %s",
			abi.FuncTxnGet, abi.FuncTxnPut, abi.FuncTxnDelete, abi.ExportApply)
	}
	if !c.kind.Stateful() {
		hostFault(fn, "called by a %s operator: only keyed operators have state", c.kind)
	}
	if c.st == nil {
		hostFault(fn, "called during %s: state is available only during %s", c.export, abi.ExportProcess)
	}
	return c.st
}

// table_id(name_ptr, name_len) -> i32. The name is copied into a string for
// State.TableID: guests resolve a handle once and keep it.
func hostTableID(ctx context.Context, mem runtime.Memory, stack []uint64) {
	const fn = abi.FuncTableID
	c := callOf(ctx, fn)
	name := read(mem, fn, "name", uint32(stack[0]), uint32(stack[1]))
	if c.kind.Transactional() {
		// Any phase: a guest may resolve its handles in configure or plan.
		for i, t := range c.tables {
			if t == string(name) {
				stack[0] = ret(int32(i))
				return
			}
		}
		stack[0] = ret(abi.StatusNotFound)
		return
	}
	st := c.state(fn)
	id, ok := st.TableID(string(name))
	if !ok {
		stack[0] = ret(abi.StatusNotFound)
		return
	}
	stack[0] = ret(id)
}

// state_get(table, key_ptr, key_len, buf_ptr, buf_cap) -> i32.
func hostStateGet(ctx context.Context, mem runtime.Memory, stack []uint64) {
	const fn = abi.FuncStateGet
	c := callOf(ctx, fn)
	table := i32(stack[0])
	key := read(mem, fn, "key", uint32(stack[1]), uint32(stack[2]))
	bufPtr, bufCap := uint32(stack[3]), uint32(stack[4])
	checkRange(mem, fn, "buffer", bufPtr, bufCap)
	st := c.state(fn)
	v, found, err := st.Get(table, key)
	if err != nil {
		hostFaultErr(fn, err, "table %d key %s", table, printable(key))
	}
	if !found {
		stack[0] = ret(abi.StatusNotFound)
		return
	}
	if len(v) > math.MaxInt32 {
		hostFault(fn, "table %d key %s: value of %d bytes is too large for the ABI", table, printable(key), len(v))
	}
	if len(v) <= int(bufCap) && !mem.Write(bufPtr, v) {
		hostFault(fn, "buffer pointer %#x length %d is outside memory of %d bytes", bufPtr, len(v), mem.Size())
	}
	stack[0] = ret(int32(len(v)))
}

// state_put(table, key_ptr, key_len, val_ptr, val_len).
func hostStatePut(ctx context.Context, mem runtime.Memory, stack []uint64) {
	const fn = abi.FuncStatePut
	c := callOf(ctx, fn)
	table := i32(stack[0])
	key := read(mem, fn, "key", uint32(stack[1]), uint32(stack[2]))
	val := read(mem, fn, "value", uint32(stack[3]), uint32(stack[4]))
	st := c.state(fn)
	if len(val) > MaxStateValueBytes {
		hostFault(fn, "table %d key %s: value of %d bytes is over the limit of %d bytes per state value", table, printable(key), len(val), MaxStateValueBytes)
	}
	c.keep(fn, "state writes", len(key)+len(val)+stateWriteBookkeeping)
	if err := st.Put(table, key, val); err != nil {
		hostFaultErr(fn, err, "table %d key %s", table, printable(key))
	}
}

// state_delete(table, key_ptr, key_len).
func hostStateDelete(ctx context.Context, mem runtime.Memory, stack []uint64) {
	const fn = abi.FuncStateDelete
	c := callOf(ctx, fn)
	table := i32(stack[0])
	key := read(mem, fn, "key", uint32(stack[1]), uint32(stack[2]))
	st := c.state(fn)
	c.keep(fn, "state writes", len(key)+stateWriteBookkeeping)
	if err := st.Delete(table, key); err != nil {
		hostFaultErr(fn, err, "table %d key %s", table, printable(key))
	}
}

// log(level, ptr, len): write a guest message to the plugin's logger.
func hostLog(ctx context.Context, mem runtime.Memory, stack []uint64) {
	const fn = abi.FuncLog
	c := callOf(ctx, fn)
	level := i32(stack[0])
	msg := read(mem, fn, "message", uint32(stack[1]), uint32(stack[2]))
	if level >= abi.LogError {
		// Kept even when the message is not logged: it is the reason an
		// export that fails reports.
		c.lastErr = append(c.lastErr[:0], msg[:min(len(msg), maxMessageBytes)]...)
	}
	if c.logs >= maxLogsPerCall {
		c.dropped++
		return
	}
	c.logs++
	lvl := slogLevel(level)
	if !c.logger.Enabled(ctx, lvl) {
		return
	}
	c.logger.LogAttrs(ctx, lvl, clip(msg), slog.String("export", c.export))
}

// slogLevel maps an abi.Log* level to slog, clamping unknown levels.
func slogLevel(l int32) slog.Level {
	switch {
	case l <= abi.LogDebug:
		return slog.LevelDebug
	case l == abi.LogInfo:
		return slog.LevelInfo
	case l == abi.LogWarn:
		return slog.LevelWarn
	}
	return slog.LevelError
}
