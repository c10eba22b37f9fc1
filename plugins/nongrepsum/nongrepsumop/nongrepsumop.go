package nongrepsumop

import (
	"encoding/binary"
	"fmt"

	"github.com/sluicehq/sluice/plugins/grepsum/grepsumop"
	"github.com/sluicehq/sluice/plugins/internal/busy"
	"github.com/sluicehq/sluice/sdk/go/sluice"
	"github.com/sluicehq/sluice/txn/apps/nongrepsum/event"
)

// Functions, by index in the operator's Funcs.
const (
	// FnSum is grepsumop.Sum, for deterministic operations.
	FnSum = iota
	// FnAbort is grepsumop.Abort, for every operation of an event
	// flagged to abort.
	FnAbort
	// FnNonDet is NonDetSum.
	FnNonDet
)

// table is the handle of the operator's one table.
const table sluice.Table = event.Table

// nonDetArgSize is the size of NonDetSum's argument: the busy work in
// nanoseconds and the size of the key space, uint32 little endian each.
const nonDetArgSize = 8

// NonDetSum is the non-deterministic operation: after the busy work, it
// reads the pointer (declared read 0), and writes the target key the
// pointer's value selects, in the operation's table, with the target's
// value plus the values of the other declared reads plus one (int64,
// wrapping; a missing key holds 0).
func NonDetSum(c *sluice.Call) sluice.Effect {
	a := c.Arg()
	if len(a) != nonDetArgSize || c.Reads() == 0 {
		return sluice.Fail(fmt.Errorf("nongrepsum: operation %d of event %d: argument of %d bytes and %d reads, want %d bytes and the pointer read",
			c.Op(), c.Event(), len(a), c.Reads(), nonDetArgSize))
	}
	_ = busy.Spin(binary.LittleEndian.Uint32(a))
	keys := binary.LittleEndian.Uint32(a[4:])
	if keys == 0 {
		return sluice.Fail(fmt.Errorf("nongrepsum: operation %d of event %d: a key space of 0 keys", c.Op(), c.Event()))
	}
	p, _ := c.Read(0)
	ptr, err := event.DecodeValue(p)
	if err != nil {
		return sluice.Fail(fmt.Errorf("nongrepsum: pointer of operation %d of event %d: %w", c.Op(), c.Event(), err))
	}
	sum := int64(1)
	for i := 1; i < c.Reads(); i++ {
		r, _ := c.Read(i)
		x, err := event.DecodeValue(r)
		if err != nil {
			return sluice.Fail(fmt.Errorf("nongrepsum: read %d of operation %d of event %d: %w", i, c.Op(), c.Event(), err))
		}
		sum += x
	}
	var k [event.KeyWidth]byte
	target := event.AppendKey(k[:0], event.Target(ptr, keys))
	old, _, err := c.Get(c.Table(), target)
	if err != nil {
		return sluice.Fail(err)
	}
	v, err := event.DecodeValue(old)
	if err != nil {
		return sluice.Fail(fmt.Errorf("nongrepsum: key %q: %w", target, err))
	}
	b := c.Scratch(8)
	binary.LittleEndian.PutUint64(b, uint64(v+sum))
	if err := c.Put(c.Table(), target, b); err != nil {
		return sluice.Fail(err)
	}
	return sluice.Keep()
}

// New returns the NonGrepSum operator. The value serves one operator
// instance (one plugin instance, or one hosttest.TxnLogic): Plan and Post
// reuse buffers it keeps.
func New() sluice.Txn {
	o := &operator{}
	return sluice.Txn{
		Plan:  o.plan,
		Funcs: []sluice.TxnFunc{FnSum: grepsumop.Sum, FnAbort: grepsumop.Abort, FnNonDet: NonDetSum},
		Post:  o.post,
	}
}

// operator is the state of one instance's Plan and Post, which run one at
// a time.
type operator struct {
	ev    event.Event
	keys  []byte
	reads []sluice.Key
	res   grepsumop.Result
	out   []byte
}

func (o *operator) plan(ev sluice.Record, p *sluice.Planner) error {
	if err := event.DecodeEventInto(&o.ev, ev.Value); err != nil {
		return nil // no operations: Post dead-letters the event
	}
	var arg, ndArg [nonDetArgSize]byte
	grepsumop.AppendArg(arg[:0], o.ev.BusyNanos)
	binary.LittleEndian.PutUint32(ndArg[:], o.ev.BusyNanos)
	binary.LittleEndian.PutUint32(ndArg[4:], o.ev.Keys)
	var k [event.KeyWidth]byte
	for _, op := range o.ev.Ops {
		if !op.NonDet {
			o.reads = grepsumop.ReadKeys(o.reads[:0], &o.keys, table, op.Reads)
			fn := FnSum
			if o.ev.Abort {
				fn = FnAbort
			}
			p.Write(table, event.AppendKey(k[:0], op.Key), fn, arg[:grepsumop.ArgSize], o.reads...)
			continue
		}
		// The pointer is read 0, the event's reads follow.
		o.reads = append(o.reads[:0], sluice.Key{Table: table, Key: event.AppendKey(k[:0], op.Key)})
		o.reads = grepsumop.ReadKeys(o.reads, &o.keys, table, op.Reads)
		if o.ev.Abort {
			p.NonDet(table, FnAbort, arg[:grepsumop.ArgSize], o.reads...)
		} else {
			p.NonDet(table, FnNonDet, ndArg[:], o.reads...)
		}
	}
	return nil
}

// post emits the event's Result: the keys its committed operations wrote
// and their values, computed from what the operations read.
func (o *operator) post(ev sluice.Record, oc *sluice.Outcome, out *sluice.Emitter) error {
	if err := event.DecodeEventInto(&o.ev, ev.Value); err != nil {
		return err
	}
	r := &o.res
	r.Committed, r.Writes = oc.Committed, r.Writes[:0]
	if oc.Committed {
		if len(oc.Ops) != len(o.ev.Ops) {
			return fmt.Errorf("nongrepsum: outcome of %d operations for an event of %d", len(oc.Ops), len(o.ev.Ops))
		}
		for m := range oc.Ops {
			w, err := o.written(&o.ev.Ops[m], &oc.Ops[m])
			if err != nil {
				return fmt.Errorf("nongrepsum: operation %d: %w", m, err)
			}
			r.Writes = append(r.Writes, w)
		}
	}
	o.out = grepsumop.AppendResult(o.out[:0], r)
	out.Emit(sluice.Record{Key: ev.Key, Value: o.out, Time: ev.Time})
	return nil
}

// written returns what a committed operation wrote, from what it read.
func (o *operator) written(op *event.Op, oo *sluice.OpOutcome) (grepsumop.Write, error) {
	if !op.NonDet {
		v, err := grepsumop.NewValue(oo.Own, oo.Reads)
		return grepsumop.Write{Key: op.Key, Value: v}, err
	}
	if len(oo.Reads) != 1+len(op.Reads) {
		return grepsumop.Write{}, fmt.Errorf("%d reads, want the pointer and %d", len(oo.Reads), len(op.Reads))
	}
	ptr, err := event.DecodeValue(oo.Reads[0].Bytes)
	if err != nil {
		return grepsumop.Write{}, err
	}
	target := event.Target(ptr, o.ev.Keys)
	old, err := targetValue(op, oo, target)
	if err != nil {
		return grepsumop.Write{}, err
	}
	v, err := grepsumop.NewValue(old, oo.Reads[1:])
	return grepsumop.Write{Key: target, Value: v}, err
}

// targetValue returns the value a non-deterministic operation read of its
// target: its one Get, or, when the target is a declared read (the pointer
// itself or another read), whose Get the host answers from the reads
// without recording it, that read.
func targetValue(op *event.Op, oo *sluice.OpOutcome, target uint32) (sluice.Value, error) {
	switch {
	case len(oo.Gets) == 1:
		return oo.Gets[0].Value, nil
	case len(oo.Gets) > 1:
		return sluice.Value{}, fmt.Errorf("%d gets, want one", len(oo.Gets))
	case target == op.Key:
		return oo.Reads[0], nil
	}
	for i, k := range op.Reads {
		if k == target {
			return oo.Reads[1+i], nil
		}
	}
	return sluice.Value{}, fmt.Errorf("no get of the target %d", target)
}
