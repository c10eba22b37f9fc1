package plugin

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"

	"github.com/sluicehq/sluice/abi"
	"github.com/sluicehq/sluice/runtime"
)

// Window functions (ABI.md section 13): an aggregate's sluice_agg_add,
// sluice_agg_merge and sluice_agg_fire, and a window function's
// sluice_window_fire. The host's window operator keeps the windows, their
// contents and their accumulators; these methods only call the guest.

// Firing says why a window fires.
type Firing uint8

// The firings of a window.
const (
	// FiringOnTime is the firing at the window's end.
	FiringOnTime Firing = iota
	// FiringEarly is a firing before the window's end, from an early
	// trigger; the window fires again.
	FiringEarly
	// FiringLate is a firing after the window's end, for records that
	// arrived late within the allowed lateness.
	FiringLate
)

// String returns the firing as the sluice-firing header says it:
// "on-time", "early" or "late".
func (f Firing) String() string {
	switch f {
	case FiringEarly:
		return abi.FiringEarly
	case FiringLate:
		return abi.FiringLate
	}
	return abi.FiringOnTime
}

// Window is a firing window as a guest sees it: [Start, End), in ns since
// the Unix epoch, and why it fires.
type Window struct {
	Start, End int64
	Firing     Firing
}

// AddGroup is one key's slice in a call of AggAdd: the records to fold into
// its accumulator.
type AddGroup struct {
	Key []byte
	// Time is the slice's largest time.
	Time int64
	// Acc is the accumulator so far, empty when the slice has none yet.
	Acc []byte
	// Recs are the records to fold in, in order. Their Origins are
	// ignored: the guest sees them numbered across the call.
	Recs []abi.Record
}

// MergePair is two accumulators of one key, for AggMerge.
type MergePair struct {
	Key  []byte
	A, B []byte
}

// Fire is one key's firing window, for AggFire.
type Fire struct {
	Key    []byte
	Window Window
	Acc    []byte // the window's accumulator
}

// FireContents is one key's firing window with all its records, for
// WindowFire.
type FireContents struct {
	Key    []byte
	Window Window
	// Recs are the key's records of the window, in arrival order. Their
	// Origins are ignored: the guest sees them numbered across the call.
	Recs []abi.Record
}

// ErrNotWindowed is wrapped by the error of AggAdd, AggMerge, AggFire and
// WindowFire on an instance of a plugin not loaded as the kind they serve.
var ErrNotWindowed = errors.New("not an operator of that kind")

// ErrAccumulators is wrapped by the error of a call of sluice_agg_add or
// sluice_agg_merge after which a group or pair has no accumulator, or more
// than one.
var ErrAccumulators = errors.New("accumulators emitted do not match the groups")

// WindowError is the error of a failed call of a window export. It names
// the plugin and the export (sluice_alloc when the call's input could not
// be placed in guest memory), and wraps the cause: a *runtime.Error (trap,
// timeout, host function error), a *StatusError, or an error wrapping
// ErrAccumulators.
type WindowError struct {
	Plugin string
	Export string
	Err    error
}

func (e *WindowError) Error() string {
	s := fmt.Sprintf("plugin %q export %q", e.Plugin, e.Export)
	return withCause(s, e.Err)
}

// Unwrap returns the cause.
func (e *WindowError) Unwrap() error { return e.Err }

// windowFuncs are the window exports of a guest instance.
type windowFuncs struct {
	add, merge, fire, windowFire, join runtime.Func
}

// bind resolves the exports kind requires and reports whether inst has
// them.
func (w *windowFuncs) bind(inst runtime.Instance, kind Kind) bool {
	switch kind {
	case KindWindow:
		var ok bool
		w.windowFire, ok = inst.Func(abi.ExportWindowFire)
		return ok
	case KindJoin:
		var ok bool
		w.join, ok = inst.Func(abi.ExportJoin)
		return ok
	}
	var ok1, ok2, ok3 bool
	w.add, ok1 = inst.Func(abi.ExportAggAdd)
	w.merge, ok2 = inst.Func(abi.ExportAggMerge)
	w.fire, ok3 = inst.Func(abi.ExportAggFire)
	return ok1 && ok2 && ok3
}

// windowBufs are what the window calls of an instance reuse.
type windowBufs struct {
	ev   abi.Record // the record a call's environment derives from
	seen []uint8    // accumulators emitted per group or pair
	acc  []byte     // the accumulator while isolating members
	one  [1]AddGroup
}

// windowReady checks that i can make a call of export, which serves kind,
// and has a guest instance.
func (i *Instance) windowReady(ctx context.Context, kind Kind, export string) error {
	if i.closed {
		return fmt.Errorf("plugin %q: %w", i.p.name, ErrInstanceClosed)
	}
	if i.p.kind != kind {
		return fmt.Errorf("plugin %q: %s serves %s operators: a %s operator is %w", i.p.name, export, kind, i.p.kind, ErrNotWindowed)
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("plugin %q: %s not started: %w", i.p.name, export, context.Cause(ctx))
	}
	return i.ensure(ctx)
}

// AggAdd runs sluice_agg_add over groups, one per key and slice, and
// appends to out one record per group, in group order: out.Records[m+g],
// where m is len(out.Records) before the call, is group g's new
// accumulator (its Value; its Origin is g). The members the guest
// rejects are appended to out.Rejects, each Index the member's number
// across the call (group 0's members first, then group 1's...); a rejected
// member is not folded into its accumulator.
//
// A failed call (trap, timeout, host function error, error status, an
// accumulator missing or repeated) does not fail the groups: its outputs
// and rejects are dropped and the members are folded again one per call,
// each into the accumulator the previous calls gave; a member whose own
// call fails becomes a Reject whose *RecordError wraps the cause, and is
// not folded. An instance whose guest trapped is replaced before its next
// call.
//
// AggAdd returns an error only when the operator cannot go on: ctx is done
// (out is then as it was), the instance or its plugin was closed, a fresh
// guest instance cannot be made, or the plugin is not an aggregate.
func (i *Instance) AggAdd(ctx context.Context, groups []AddGroup, out *Output) error {
	if err := i.windowReady(ctx, KindAggregate, abi.ExportAggAdd); err != nil {
		return err
	}
	if len(groups) == 0 {
		return nil
	}
	m := out.mark()
	err := i.add(ctx, groups, out)
	if err == nil {
		return nil
	}
	out.truncate(m)
	if err := i.fatal(ctx, len(groups), err); err != nil {
		return err
	}
	i.p.logger.LogAttrs(ctx, slog.LevelDebug, "plugin aggregate call failed; folding its records one at a time",
		slog.Int("groups", len(groups)), slog.Any("error", err))
	member := 0
	for g := range groups {
		gr := &groups[g]
		w := &i.win
		w.acc = append(w.acc[:0], gr.Acc...)
		for k := range gr.Recs {
			if err := i.ensure(ctx); err != nil {
				out.truncate(m)
				return err
			}
			one := &w.one[0]
			*one = AddGroup{Key: gr.Key, Time: gr.Time, Acc: w.acc, Recs: gr.Recs[k : k+1]}
			mk := out.mark()
			err := i.add(ctx, w.one[:], out)
			*one = AddGroup{}
			switch {
			case err != nil:
				out.truncate(mk)
				if err := i.fatal(ctx, len(groups), err); err != nil {
					out.truncate(m)
					return err
				}
				export := abi.ExportAggAdd
				var we *WindowError
				if errors.As(err, &we) {
					export, err = we.Export, we.Err
				}
				out.Rejects = append(out.Rejects, Reject{Index: member, Err: &RecordError{Plugin: i.p.name, Export: export, Index: member, Err: err}})
			case len(out.Rejects) > mk.rejects:
				rejects := append([]Reject(nil), out.Rejects[mk.rejects:]...)
				out.truncate(mk)
				for _, r := range rejects {
					r.Index = member
					if re, ok := r.Err.(*RecordError); ok {
						re.Index = member
					}
					out.Rejects = append(out.Rejects, r)
				}
			default:
				w.acc = append(w.acc[:0], out.Records[mk.records].Value...)
				out.truncate(mk)
			}
			member++
		}
		out.add(&abi.Record{Origin: uint32(g), Key: gr.Key, Time: gr.Time, Value: w.acc})
	}
	return nil
}

// add makes one call of sluice_agg_add over groups and checks that it gave
// one accumulator per group, which it puts in group order.
func (i *Instance) add(ctx context.Context, groups []AddGroup, out *Output) error {
	members := 0
	n := abi.BatchHeaderSize
	for g := range groups {
		gr := &groups[g]
		members += len(gr.Recs)
		n += headSize(gr.Key, gr.Acc, nil) + abi.BatchHeaderSize
		for k := range gr.Recs {
			n += abi.EncodedSize(&gr.Recs[k])
		}
	}
	w := &i.win
	w.ev = abi.Record{Key: groups[0].Key, Time: groups[0].Time, Value: groups[0].Acc}
	if len(groups[0].Recs) > 0 {
		w.ev = groups[0].Recs[0]
	}
	cctx := i.beginWindow(ctx, abi.ExportAggAdd, domainAggAdd, out, len(groups), members)
	defer i.c.end(ctx)
	ptr, buf, err := i.reserveInput(cctx, n)
	if err != nil {
		return i.windowError(abi.ExportAlloc, err)
	}
	inputs := i.p.ReadsInputs()
	b := abi.AppendBatchHeader(buf[:0], uint32(len(groups)))
	member := uint32(0)
	for g := range groups {
		gr := &groups[g]
		b = appendHead(b, uint32(g), gr.Key, gr.Time, gr.Acc, nil)
		b = abi.AppendBatchHeader(b, uint32(len(gr.Recs)))
		for k := range gr.Recs {
			b = appendMember(b, &gr.Recs[k], member, inputs)
			member++
		}
	}
	m := out.mark()
	if err := i.callWindow(ctx, cctx, i.wf.add, abi.ExportAggAdd, ptr, b, n); err != nil {
		return err
	}
	return i.oneEach(abi.ExportAggAdd, "group", len(groups), out, m)
}

// AggMerge runs sluice_agg_merge over pairs and appends to out one record
// per pair, in pair order: out.Records[m+j], where m is len(out.Records)
// before the call, holds the merge of pair j in its Value (its Origin is
// j).
//
// A failed call (trap, timeout, host function error, error status, an
// accumulator missing or repeated) is returned as a *WindowError, and its
// outputs are dropped; an instance whose guest trapped is replaced before
// its next call. Errors that stop the operator are those of AggAdd.
func (i *Instance) AggMerge(ctx context.Context, pairs []MergePair, out *Output) error {
	if err := i.windowReady(ctx, KindAggregate, abi.ExportAggMerge); err != nil {
		return err
	}
	if len(pairs) == 0 {
		return nil
	}
	n := abi.BatchHeaderSize
	for j := range pairs {
		n += headSize(pairs[j].Key, pairs[j].A, nil) + headSize(pairs[j].Key, pairs[j].B, nil)
	}
	w := &i.win
	w.ev = abi.Record{Key: pairs[0].Key, Value: pairs[0].A}
	cctx := i.beginWindow(ctx, abi.ExportAggMerge, domainAggMerge, out, len(pairs), 0)
	defer i.c.end(ctx)
	ptr, buf, err := i.reserveInput(cctx, n)
	if err != nil {
		return i.windowError(abi.ExportAlloc, err)
	}
	b := abi.AppendBatchHeader(buf[:0], uint32(2*len(pairs)))
	for j := range pairs {
		b = appendHead(b, uint32(2*j), pairs[j].Key, 0, pairs[j].A, nil)
		b = appendHead(b, uint32(2*j+1), pairs[j].Key, 0, pairs[j].B, nil)
	}
	m := out.mark()
	if err := i.callWindow(ctx, cctx, i.wf.merge, abi.ExportAggMerge, ptr, b, n); err != nil {
		return err
	}
	if err := i.oneEach(abi.ExportAggMerge, "pair", len(pairs), out, m); err != nil {
		return err
	}
	return nil
}

// AggFire runs sluice_agg_fire over fires, one per key and firing window,
// and appends the results the guest emits to out, each Origin the index of
// its fire and each Time its window's End - 1. The fires the guest rejects
// are appended to out.Rejects (Index the fire's), and their results
// dropped.
//
// A failed call is returned as a *WindowError and its outputs and rejects
// are dropped; an instance whose guest trapped is replaced before its
// next call. Errors that stop the operator are those of AggAdd.
func (i *Instance) AggFire(ctx context.Context, fires []Fire, out *Output) error {
	if err := i.windowReady(ctx, KindAggregate, abi.ExportAggFire); err != nil {
		return err
	}
	if len(fires) == 0 {
		return nil
	}
	n := abi.BatchHeaderSize
	for j := range fires {
		n += headSize(fires[j].Key, fires[j].Acc, &fires[j].Window)
	}
	w := &i.win
	w.ev = abi.Record{Key: fires[0].Key, Time: fires[0].Window.End - 1, Value: fires[0].Acc}
	cctx := i.beginWindow(ctx, abi.ExportAggFire, domainAggFire, out, len(fires), len(fires))
	defer i.c.end(ctx)
	ptr, buf, err := i.reserveInput(cctx, n)
	if err != nil {
		return i.windowError(abi.ExportAlloc, err)
	}
	b := abi.AppendBatchHeader(buf[:0], uint32(len(fires)))
	for j := range fires {
		f := &fires[j]
		b = appendHead(b, uint32(j), f.Key, f.Window.End-1, f.Acc, &f.Window)
	}
	m := out.mark()
	if err := i.callWindow(ctx, cctx, i.wf.fire, abi.ExportAggFire, ptr, b, n); err != nil {
		return err
	}
	if len(out.Rejects) > m.rejects {
		dropRejectedOutputs(out, m)
	}
	for k := m.records; k < len(out.Records); k++ {
		out.Records[k].Time = fires[out.Records[k].Origin].Window.End - 1
	}
	return nil
}

// WindowFire runs sluice_window_fire over fires, one per key and firing
// window with the window's records, and appends the results the guest
// emits to out, each Origin the index of its fire and each Time its
// window's End - 1. The records the guest rejects are appended to
// out.Rejects, each Index the record's number across the call (fire 0's
// records first, then fire 1's...).
//
// A failed call is returned as a *WindowError and its outputs and rejects
// are dropped; an instance whose guest trapped is replaced before its
// next call. Errors that stop the operator are those of AggAdd, for a
// plugin that is not a window function.
func (i *Instance) WindowFire(ctx context.Context, fires []FireContents, out *Output) error {
	if err := i.windowReady(ctx, KindWindow, abi.ExportWindowFire); err != nil {
		return err
	}
	if len(fires) == 0 {
		return nil
	}
	members := 0
	n := abi.BatchHeaderSize
	for j := range fires {
		f := &fires[j]
		members += len(f.Recs)
		n += headSize(f.Key, nil, &f.Window) + abi.BatchHeaderSize
		for k := range f.Recs {
			n += abi.EncodedSize(&f.Recs[k])
		}
	}
	w := &i.win
	w.ev = abi.Record{Key: fires[0].Key, Time: fires[0].Window.End - 1}
	if len(fires[0].Recs) > 0 {
		w.ev = fires[0].Recs[0]
	}
	cctx := i.beginWindow(ctx, abi.ExportWindowFire, domainWindowFire, out, len(fires), members)
	defer i.c.end(ctx)
	ptr, buf, err := i.reserveInput(cctx, n)
	if err != nil {
		return i.windowError(abi.ExportAlloc, err)
	}
	inputs := i.p.ReadsInputs()
	b := abi.AppendBatchHeader(buf[:0], uint32(len(fires)))
	member := uint32(0)
	for j := range fires {
		f := &fires[j]
		b = appendHead(b, uint32(j), f.Key, f.Window.End-1, nil, &f.Window)
		b = abi.AppendBatchHeader(b, uint32(len(f.Recs)))
		for k := range f.Recs {
			b = appendMember(b, &f.Recs[k], member, inputs)
			member++
		}
	}
	m := out.mark()
	if err := i.callWindow(ctx, cctx, i.wf.windowFire, abi.ExportWindowFire, ptr, b, n); err != nil {
		return err
	}
	for k := m.records; k < len(out.Records); k++ {
		out.Records[k].Time = fires[out.Records[k].Origin].Window.End - 1
	}
	return nil
}

// beginWindow starts a call of export, which the caller ends with
// i.c.end: outputs go to out, Origins are below outputs and rejects name
// one of rejects records. It returns the call's context.
func (i *Instance) beginWindow(ctx context.Context, export string, domain uint64, out *Output, outputs, rejects int) context.Context {
	c := i.c
	c.begin(export, nil, out, uint32(outputs), 0)
	c.rejectN = uint32(rejects)
	i.inst.SetCallEnv(i.envs.record(domain, &i.win.ev))
	i.win.ev = abi.Record{}
	return i.callContext(ctx)
}

// reserveInput obtains n bytes of guest memory for a call's input. An
// allocation failure that may have left the guest inconsistent closes the
// guest instance.
func (i *Instance) reserveInput(cctx context.Context, n int) (uint32, []byte, error) {
	ptr, buf, err := i.reserve(cctx, i.alloc, i.mem, n)
	if err != nil {
		i.breakIfRuntime(cctx, err, true)
	}
	return ptr, buf, err
}

// callWindow calls f, export, over the input encoded in b, which should
// be n bytes at ptr, and drops what the call added to out when it fails.
func (i *Instance) callWindow(ctx, cctx context.Context, f runtime.Func, export string, ptr uint32, b []byte, n int) error {
	if len(b) != n {
		return i.windowError(export, fmt.Errorf("internal error: input encoded in %d bytes, %d expected", len(b), n))
	}
	out := i.c.out
	m := out.mark()
	i.stack[0], i.stack[1] = uint64(ptr), uint64(n)
	if err := f.Call(cctx, i.stack[:]); err != nil {
		out.truncate(m)
		i.breakIfRuntime(ctx, err, false)
		return i.windowError(export, err)
	}
	if st := i32(i.stack[0]); st != abi.StatusOK {
		out.truncate(m)
		return i.windowError(export, &StatusError{Plugin: i.p.name, Export: export, Status: st, Reason: i.c.reason()})
	}
	return nil
}

// oneEach checks that the call that added to out since m emitted exactly
// one record per group (what: "group" or "pair") of n, and puts them in
// group order. Otherwise it drops what the call added and fails.
func (i *Instance) oneEach(export, what string, n int, out *Output, m mark) error {
	recs := out.Records[m.records:]
	w := &i.win
	if cap(w.seen) < n {
		w.seen = make([]uint8, n)
	}
	seen := w.seen[:n]
	clear(seen)
	for k := range recs {
		o := recs[k].Origin
		if seen[o] > 0 {
			out.truncate(m)
			return i.windowError(export, fmt.Errorf("%w: %s %d has two accumulators: the guest must emit exactly one per %s", ErrAccumulators, what, o, what))
		}
		seen[o] = 1
	}
	if len(recs) != n {
		g := 0
		for seen[g] > 0 {
			g++
		}
		out.truncate(m)
		return i.windowError(export, fmt.Errorf("%w: %s %d has no accumulator: the guest must emit exactly one per %s", ErrAccumulators, what, g, what))
	}
	// Each origin once: a permutation, put in order in place.
	for k := range recs {
		for int(recs[k].Origin) != k {
			o := recs[k].Origin
			recs[k], recs[o] = recs[o], recs[k]
		}
	}
	return nil
}

// windowError wraps err as the failure of export.
func (i *Instance) windowError(export string, err error) error {
	return &WindowError{Plugin: i.p.name, Export: export, Err: err}
}

// fireHeaderBytes is what a firing window's three headers take in a
// record's encoding: their lengths, names and the two 8-byte bounds, less
// the firing's name.
const fireHeaderBytes = 3*8 + len(abi.HeaderWindowStart) + len(abi.HeaderWindowEnd) + len(abi.HeaderFiring) + 16

// headSize returns the encoded size of a head record of key and value,
// with the headers of w when it is not nil.
func headSize(key, value []byte, w *Window) int {
	n := abi.MinEncodedRecordSize + len(key) + len(value)
	if w != nil {
		n += fireHeaderBytes + len(w.Firing.String())
	}
	return n
}

// appendHead appends a head record (ABI.md section 13): origin, key, time
// and value, no flags, and the headers of w when it is not nil.
func appendHead(b []byte, origin uint32, key []byte, time int64, value []byte, w *Window) []byte {
	le := binary.LittleEndian
	b = le.AppendUint32(b, uint32(headSize(key, value, w)-4))
	b = le.AppendUint32(b, origin)
	b = le.AppendUint32(b, 0)
	b = le.AppendUint64(b, uint64(time))
	b = le.AppendUint32(b, uint32(len(key)))
	b = append(b, key...)
	b = le.AppendUint32(b, uint32(len(value)))
	b = append(b, value...)
	if w == nil {
		return le.AppendUint32(b, 0)
	}
	b = le.AppendUint32(b, 3)
	b = appendHeader(b, abi.HeaderWindowStart)
	b = le.AppendUint32(b, 8)
	b = abi.AppendWindowTime(b, w.Start)
	b = appendHeader(b, abi.HeaderWindowEnd)
	b = le.AppendUint32(b, 8)
	b = abi.AppendWindowTime(b, w.End)
	b = appendHeader(b, abi.HeaderFiring)
	f := w.Firing.String()
	b = le.AppendUint32(b, uint32(len(f)))
	return append(b, f...)
}

// appendHeader appends a header's name with its length.
func appendHeader(b []byte, name string) []byte {
	return append(binary.LittleEndian.AppendUint32(b, uint32(len(name))), name...)
}

// appendMember appends member r with origin, its input encoded only when
// the module reads inputs, as placeBatch does.
func appendMember(b []byte, r *abi.Record, origin uint32, inputs bool) []byte {
	at := len(b)
	b = abi.AppendRecord(b, r)
	binary.LittleEndian.PutUint32(b[at+4:], origin)
	if !inputs && r.Input != 0 {
		binary.LittleEndian.PutUint32(b[at+8:], 0)
	}
	return b
}
