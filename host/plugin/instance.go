package plugin

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"reflect"

	"github.com/sluicehq/sluice/abi"
	"github.com/sluicehq/sluice/runtime"
)

// Instance is one instantiated plugin, configured and ready to process
// batches. It is not safe for concurrent use: each worker owns its own.
//
// An Instance survives its guest's failures: when a guest call fails in a way
// that may leave the guest's memory inconsistent (a trap, timeout, host
// function error or exit, after which the engine refuses further calls), the
// broken guest instance is closed and a fresh one, configured the same way,
// takes its place before the next call. A guest that returns an error status
// returned normally and keeps its instance.
type Instance struct {
	p      *Plugin
	config []byte

	inst    runtime.Instance // nil when broken, until replaced
	alloc   runtime.Func
	process runtime.Func
	mem     runtime.Memory // inst's memory, resolved once
	stack   [4]uint64
	c       *call
	closed  bool
	tx      txnInstance // the transactional exports and buffers (txn.go)
	wf      windowFuncs // the window exports (window.go)
	win     windowBufs  // the window calls' buffers (window.go)
	envs    callEnvs    // the deterministic environment of each call (env.go)

	// callCtx is the context of the last guest call, derived from
	// callParent: a worker passes the same ctx batch after batch (and
	// apply after apply), and deriving it once saves an allocation per
	// call.
	callParent, callCtx context.Context
}

// ErrInstanceClosed is returned by Process on an Instance after Close.
var ErrInstanceClosed = errors.New("plugin instance is closed")

// NewInstance instantiates the plugin and, when the module exports
// sluice_configure, calls it with config (the operator's configuration as
// JSON). A configuration the guest refuses is reported with the reason the
// guest logged, as a *StatusError.
func (p *Plugin) NewInstance(ctx context.Context, config []byte) (*Instance, error) {
	i := &Instance{p: p, config: append([]byte(nil), config...), c: p.newCall()}
	if err := i.ensure(ctx); err != nil {
		return nil, err
	}
	return i, nil
}

// Plugin returns the plugin i is an instance of.
func (i *Instance) Plugin() *Plugin { return i.p }

// Close releases the guest instance. Process fails after Close.
func (i *Instance) Close(ctx context.Context) error {
	i.closed = true
	i.callParent, i.callCtx = nil, nil
	if i.inst == nil {
		return nil
	}
	err := i.inst.Close(ctx)
	i.inst = nil
	if err != nil {
		return fmt.Errorf("plugin %q: closing instance: %w", i.p.name, err)
	}
	return nil
}

// ensure makes a configured guest instance when i has none.
func (i *Instance) ensure(ctx context.Context) error {
	if i.inst != nil {
		return nil
	}
	p := i.p
	c := i.c
	c.begin(abi.ExportInitialize, nil, nil, 0, 0)
	cctx := context.WithValue(ctx, callKey{}, c)
	inst, err := p.mod.Instantiate(cctx)
	c.end(ctx)
	if err != nil {
		return fmt.Errorf("plugin %q: instantiating: %w", p.name, err)
	}
	alloc, ok1 := inst.Func(abi.ExportAlloc)
	process, ok2 := inst.Func(abi.ExportProcess)
	var tx txnInstance
	var wf windowFuncs
	switch {
	case p.kind.Transactional():
		ok2 = tx.bind(inst)
	case p.kind.Windowed():
		ok2 = wf.bind(inst, p.kind)
	}
	if !ok1 || !ok2 {
		_ = inst.Close(context.WithoutCancel(ctx))
		return fmt.Errorf("plugin %q: instance lacks %s or the exports of a %s operator", p.name, abi.ExportAlloc, p.kind)
	}
	if configure, ok := inst.Func(abi.ExportConfigure); ok {
		if err := i.configure(ctx, inst, alloc, configure); err != nil {
			_ = inst.Close(context.WithoutCancel(ctx))
			return err
		}
	}
	i.inst, i.alloc, i.process, i.mem = inst, alloc, process, inst.Memory()
	i.tx.reset(tx)
	i.wf = wf
	return nil
}

// configure hands the guest its configuration.
func (i *Instance) configure(ctx context.Context, inst runtime.Instance, alloc, configure runtime.Func) error {
	c := i.c
	c.begin(abi.ExportConfigure, nil, nil, 0, 0)
	defer c.end(ctx)
	inst.SetCallEnv(runtime.CallEnv{}) // no event: the epoch and seed zero
	cctx := context.WithValue(ctx, callKey{}, c)
	ptr, buf, err := i.reserve(cctx, alloc, inst.Memory(), len(i.config))
	if err != nil {
		return fmt.Errorf("plugin %q: passing the configuration: %w", i.p.name, err)
	}
	copy(buf, i.config)
	i.stack[0], i.stack[1] = uint64(ptr), uint64(len(i.config))
	if err := configure.Call(cctx, i.stack[:]); err != nil {
		return fmt.Errorf("plugin %q: %s failed: %w", i.p.name, abi.ExportConfigure, err)
	}
	if st := i32(i.stack[0]); st != abi.StatusOK {
		return &StatusError{Plugin: i.p.name, Export: abi.ExportConfigure, Status: st, Reason: c.reason()}
	}
	return nil
}

// reserve obtains n bytes of guest memory from sluice_alloc and returns
// their offset and a view of them, which aliases guest memory: the caller
// writes the guest's argument there directly, and must be done before the
// guest runs again.
func (i *Instance) reserve(ctx context.Context, alloc runtime.Func, mem runtime.Memory, n int) (uint32, []byte, error) {
	if n > math.MaxInt32 {
		return 0, nil, fmt.Errorf("%d bytes do not fit a 32-bit guest: %w", n, ErrAlloc)
	}
	// While sluice_alloc runs, the call is in no phase that may emit,
	// reject, declare or reach state: those host functions trap, naming
	// sluice_alloc.
	c := i.c
	export, st, out := c.export, c.st, c.out
	c.export, c.st, c.out = abi.ExportAlloc, nil, nil
	i.stack[0] = uint64(n)
	err := alloc.Call(ctx, i.stack[:])
	c.export, c.st, c.out = export, st, out
	if err != nil {
		return 0, nil, err
	}
	ptr := uint32(i.stack[0])
	if ptr == 0 && n > 0 {
		return 0, nil, fmt.Errorf("%s(%d) returned 0: %w", abi.ExportAlloc, n, ErrAlloc)
	}
	buf, ok := mem.Read(ptr, uint32(n))
	if !ok {
		return 0, nil, fmt.Errorf("%s(%d) returned %#x, outside memory of %d bytes: %w", abi.ExportAlloc, n, ptr, mem.Size(), ErrAlloc)
	}
	return ptr, buf, nil
}

// Process runs the operator over the batch in, appending output records and
// rejects to out. st is the keyed state of a keyed operator and is ignored
// for the others.
//
// The batch is encoded once and handed to the guest in one call. If that call
// fails (trap, timeout, host function error, exit, error status), the state
// is rolled back to a savepoint taken before the batch, the batch's outputs
// are dropped, and the records are processed again one at a time, each with
// its own savepoint: a record whose call fails becomes a Reject whose error
// names the plugin, the export and the record and wraps the cause; the others
// produce their outputs as usual, with Origins in terms of in. Records the
// guest rejects with the reject host function become Rejects too, and leave
// no trace: their outputs are dropped and, for a keyed operator, their state
// changes undone (the batch is run again record by record to tell its
// records' writes apart, as after a failure).
//
// Running a record a second time is safe: stateless operators are pure
// functions of their input, and a keyed operator's state changes from the
// failed call were rolled back before the retry.
//
// Process returns an error only when the operator cannot go on: ctx is done
// (the batch's state changes are then rolled back and its outputs dropped),
// the instance or its plugin was closed, a fresh guest instance cannot be
// made, or a keyed operator was given no State.
func (i *Instance) Process(ctx context.Context, in []abi.Record, st State, out *Output) error {
	if i.closed {
		return fmt.Errorf("plugin %q: %w", i.p.name, ErrInstanceClosed)
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("plugin %q: batch of %d records not started: %w", i.p.name, len(in), context.Cause(ctx))
	}
	if i.p.kind.Transactional() {
		return fmt.Errorf("plugin %q: a transactional operator has no %s: use Plan, ApplyOp and Post", i.p.name, abi.ExportProcess)
	}
	if i.p.kind.Windowed() {
		return fmt.Errorf("plugin %q: %s operators have no %s: use AggAdd, AggMerge, AggFire, WindowFire or Join", i.p.name, i.p.kind, abi.ExportProcess)
	}
	if !i.p.kind.Stateful() {
		st = nil
	} else if st == nil {
		return fmt.Errorf("plugin %q: a keyed operator needs a State to process records", i.p.name)
	}
	if len(in) == 0 {
		return nil
	}
	if err := i.ensure(ctx); err != nil {
		return err
	}
	var sp int
	if st != nil {
		sp = st.Savepoint()
	}
	m := out.mark()
	export, err := i.run(ctx, in, 0, len(in), st, out)
	undo := func() {
		if st != nil {
			st.RollbackTo(sp)
		}
		out.truncate(m)
	}
	if err == nil {
		// A rejected record must leave no trace in keyed state. Its writes
		// are interleaved with the batch's other records, so the batch is
		// undone and run again record by record, where they can be told apart.
		if len(out.Rejects) == m.rejects {
			return nil
		}
		if st == nil {
			dropRejectedOutputs(out, m)
			return nil
		}
		if len(in) == 1 {
			rejects := append([]Reject(nil), out.Rejects[m.rejects:]...)
			undo()
			out.Rejects = append(out.Rejects, rejects...)
			return nil
		}
		err = errRejectedInBatch
	}
	undo()
	if err := i.fatal(ctx, len(in), err); err != nil {
		return err
	}
	if len(in) == 1 {
		// The batch call was the record's own call: running it again
		// would repeat it exactly.
		out.Rejects = append(out.Rejects, Reject{Index: 0, Err: &RecordError{Plugin: i.p.name, Export: export, Index: 0, Err: err}})
		return nil
	}
	i.p.logger.LogAttrs(ctx, slog.LevelDebug, "plugin batch failed; processing its records one at a time",
		slog.Int("records", len(in)), slog.String("export", export), slog.Any("error", err))
	for k := range in {
		if err := i.ensure(ctx); err != nil {
			undo()
			return err
		}
		var spk int
		if st != nil {
			spk = st.Savepoint()
		}
		mk := out.mark()
		export, err := i.run(ctx, in, k, k+1, st, out)
		if err == nil {
			if len(out.Rejects) > mk.rejects {
				// Rejected: keep the reject, drop the record's writes and outputs.
				rejects := append([]Reject(nil), out.Rejects[mk.rejects:]...)
				if st != nil {
					st.RollbackTo(spk)
				}
				out.truncate(mk)
				out.Rejects = append(out.Rejects, rejects...)
			}
			continue
		}
		if st != nil {
			st.RollbackTo(spk)
		}
		out.truncate(mk)
		if err := i.fatal(ctx, len(in), err); err != nil {
			undo()
			return err
		}
		out.Rejects = append(out.Rejects, Reject{Index: k, Err: &RecordError{Plugin: i.p.name, Export: export, Index: k, Err: err}})
	}
	return nil
}

// dropRejectedOutputs removes, from what was added to out since m, the
// records emitted for inputs that were rejected: a dead-lettered record has
// no effect downstream.
func dropRejectedOutputs(out *Output, m mark) {
	rejected := out.Rejects[m.rejects:]
	isRejected := func(origin uint32) bool {
		for _, r := range rejected {
			if r.Index == int(origin) {
				return true
			}
		}
		return false
	}
	kept := out.Records[:m.records]
	for _, r := range out.Records[m.records:] {
		if !isRejected(r.Origin) {
			kept = append(kept, r)
		}
	}
	clear(out.Records[len(kept):])
	out.Records = kept
}

// errRejectedInBatch marks a keyed batch that must be run again record by
// record because the guest rejected some of its records.
var errRejectedInBatch = errors.New("records rejected in a keyed batch")

// fatal returns the error that stops Process after a failed call when the
// failure is not the records' doing (the caller's context is done, or the
// module or engine was closed under the instance), and nil when it is.
func (i *Instance) fatal(ctx context.Context, n int, err error) error {
	if ctx.Err() != nil {
		return fmt.Errorf("plugin %q: batch of %d records abandoned: %w", i.p.name, n, context.Cause(ctx))
	}
	if errors.Is(err, runtime.ErrClosed) {
		return fmt.Errorf("plugin %q: batch of %d records abandoned: %w", i.p.name, n, err)
	}
	return nil
}

// run makes one guest call over in[lo:hi] and returns the export that failed
// with its error. A failure that may have left the guest inconsistent
// closes the guest instance, to be replaced before the next call.
func (i *Instance) run(ctx context.Context, in []abi.Record, lo, hi int, st State, out *Output) (string, error) {
	c := i.c
	c.begin(abi.ExportProcess, st, out, uint32(hi-lo), uint32(lo))
	defer c.end(ctx)
	i.inst.SetCallEnv(i.envs.record(domainProcess, &in[lo]))
	cctx := i.callContext(ctx)
	ptr, n, _, err := i.placeBatch(cctx, in[lo:hi], 0)
	if err != nil {
		return abi.ExportAlloc, err
	}
	i.stack[0], i.stack[1] = uint64(ptr), uint64(n)
	if err := i.process.Call(cctx, i.stack[:]); err != nil {
		i.breakIfRuntime(ctx, err, false)
		return abi.ExportProcess, err
	}
	if status := i32(i.stack[0]); status != abi.StatusOK {
		return abi.ExportProcess, &StatusError{Plugin: i.p.name, Export: abi.ExportProcess, Status: status, Reason: c.reason()}
	}
	return "", nil
}

// callContext returns the context of a guest call of i: ctx carrying i's
// call for the host functions. A worker passes the same ctx call after call,
// so the derived context is made once and kept.
func (i *Instance) callContext(ctx context.Context) context.Context {
	if !sameContext(ctx, i.callParent) {
		i.callParent, i.callCtx = ctx, context.WithValue(ctx, callKey{}, i.c)
	}
	return i.callCtx
}

// placeBatch encodes in as a batch straight into guest memory, in a region
// from sluice_alloc with extra bytes to spare after the batch, and returns
// the region's offset, the batch's length and a view of the spare bytes
// (valid until the guest runs again). Each record's Origin is its index in
// in; its Input is encoded only for a module that reads inputs. An allocation failure that may have left the guest inconsistent
// closes the guest instance.
func (i *Instance) placeBatch(cctx context.Context, in []abi.Record, extra int) (uint32, int, []byte, error) {
	n := abi.BatchHeaderSize
	for k := range in {
		n += abi.EncodedSize(&in[k])
	}
	ptr, buf, err := i.reserve(cctx, i.alloc, i.mem, n+extra)
	if err != nil {
		i.breakIfRuntime(cctx, err, true)
		return 0, 0, nil, err
	}
	// One pass; the Origin is set in the encoding, after the fact, rather
	// than in a copy of the record, and so are the flags of a module that
	// does not read inputs: 0, as version 1 has always sent (ABI.md
	// section 9).
	inputs := i.p.ReadsInputs()
	b := abi.AppendBatchHeader(buf[:0], uint32(len(in)))
	for k := range in {
		at := len(b)
		b = abi.AppendRecord(b, &in[k])
		binary.LittleEndian.PutUint32(b[at+4:], uint32(k))
		if !inputs && in[k].Input != 0 {
			binary.LittleEndian.PutUint32(b[at+8:], 0)
		}
	}
	if len(b) != n {
		// abi.EncodedSize disagrees with abi.AppendRecord: the guest would
		// read a batch that is not the one encoded.
		return 0, 0, nil, fmt.Errorf("plugin %q: internal error: batch encoded in %d bytes, %d expected", i.p.name, len(b), n)
	}
	return ptr, n, buf[n : n+extra : n+extra], nil
}

// sameContext reports whether a and b are the same context, without
// comparing values of a type that cannot be compared (the comparison would
// panic).
func sameContext(a, b context.Context) bool {
	if a == nil || b == nil {
		return false
	}
	t := reflect.TypeOf(a)
	return t == reflect.TypeOf(b) && t.Comparable() && a == b
}

// breakIfRuntime closes the guest instance after a failure that may have
// left it inconsistent: any engine error, or, when placing input, a
// sluice_alloc that returned memory it does not have.
func (i *Instance) breakIfRuntime(ctx context.Context, err error, placing bool) {
	var re *runtime.Error
	if !errors.As(err, &re) && !(placing && errors.Is(err, ErrAlloc)) {
		return
	}
	if cerr := i.inst.Close(context.WithoutCancel(ctx)); cerr != nil {
		i.p.logger.LogAttrs(ctx, slog.LevelWarn, "closing a broken plugin instance", slog.Any("error", cerr))
	}
	i.inst, i.alloc, i.process, i.mem = nil, nil, nil, nil
	i.tx.reset(txnInstance{})
	i.wf = windowFuncs{}
}
