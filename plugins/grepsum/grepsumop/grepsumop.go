package grepsumop

import (
	"encoding/binary"
	"fmt"

	"github.com/sluicehq/sluice/plugins/internal/busy"
	"github.com/sluicehq/sluice/sdk/go/sluice"
	"github.com/sluicehq/sluice/txn/apps/grepsum/event"
)

// Functions, by index in the operator's Funcs.
const (
	// FnSum is Sum.
	FnSum = iota
	// FnAbort is Abort.
	FnAbort
)

// table is the handle of the operator's one table.
const table sluice.Table = event.Table

// ArgSize is the size of the argument of Sum and Abort (AppendArg).
const ArgSize = 4

// AppendArg appends the argument of Sum and Abort: the busy work in
// nanoseconds, uint32 little endian.
func AppendArg(dst []byte, busyNanos uint32) []byte {
	return binary.LittleEndian.AppendUint32(dst, busyNanos)
}

// spin does the busy work the operation's argument asks for.
func spin(c *sluice.Call) error {
	a := c.Arg()
	if len(a) != ArgSize {
		return fmt.Errorf("grepsum: operation %d of event %d: argument of %d bytes, want %d", c.Op(), c.Event(), len(a), ArgSize)
	}
	_ = busy.Spin(binary.LittleEndian.Uint32(a))
	return nil
}

// Sum is GrepSum's function: it writes the own key's value plus the
// values of the declared reads plus one (int64, wrapping; a missing key
// holds 0), after the busy work its argument (AppendArg) asks for. A value
// that is not 8 bytes fails the operation.
func Sum(c *sluice.Call) sluice.Effect {
	if err := spin(c); err != nil {
		return sluice.Fail(err)
	}
	own, _ := c.Own()
	v, err := event.DecodeValue(own)
	if err != nil {
		return sluice.Fail(fmt.Errorf("grepsum: key %q: %w", c.Key(), err))
	}
	for i := range c.Reads() {
		r, _ := c.Read(i)
		x, err := event.DecodeValue(r)
		if err != nil {
			return sluice.Fail(fmt.Errorf("grepsum: read %d of the operation on key %q: %w", i, c.Key(), err))
		}
		v += x
	}
	b := c.Scratch(8)
	binary.LittleEndian.PutUint64(b, uint64(v+1))
	return sluice.Write(b)
}

// Abort is the function of an event flagged to abort: after the busy work
// its argument (AppendArg) asks for, its condition fails.
func Abort(c *sluice.Call) sluice.Effect {
	if err := spin(c); err != nil {
		return sluice.Fail(err)
	}
	return sluice.Abort()
}

// New returns the GrepSum operator. The value serves one operator
// instance (one plugin instance, or one hosttest.TxnLogic): Plan and Post
// reuse buffers it keeps.
func New() sluice.Txn {
	o := &operator{}
	return sluice.Txn{
		Plan:  o.plan,
		Funcs: []sluice.TxnFunc{FnSum: Sum, FnAbort: Abort},
		Post:  o.post,
	}
}

// operator is the state of one instance's Plan and Post, which run one at
// a time.
type operator struct {
	ev    event.Event
	keys  []byte
	reads []sluice.Key
	res   Result
	out   []byte
}

func (o *operator) plan(ev sluice.Record, p *sluice.Planner) error {
	if err := event.DecodeEventInto(&o.ev, ev.Value); err != nil {
		return nil // no operations: Post dead-letters the event
	}
	fn := FnSum
	if o.ev.Abort {
		fn = FnAbort
	}
	var arg [ArgSize]byte
	AppendArg(arg[:0], o.ev.BusyNanos)
	var k [event.KeyWidth]byte
	for _, op := range o.ev.Ops {
		o.reads = ReadKeys(o.reads[:0], &o.keys, table, op.Reads)
		p.Write(table, event.AppendKey(k[:0], op.Key), fn, arg[:], o.reads...)
	}
	return nil
}

// ReadKeys appends to dst the Keys of table for the key indices reads, their
// text in *buf (reused), and returns dst.
func ReadKeys(dst []sluice.Key, buf *[]byte, t sluice.Table, reads []uint32) []sluice.Key {
	b := (*buf)[:0]
	for _, r := range reads {
		b = event.AppendKey(b, r)
	}
	*buf = b
	for i := range reads {
		dst = append(dst, sluice.Key{Table: t, Key: b[i*event.KeyWidth : (i+1)*event.KeyWidth]})
	}
	return dst
}

// post emits the event's Result: the values its committed operations
// wrote, computed from what they read.
func (o *operator) post(ev sluice.Record, oc *sluice.Outcome, out *sluice.Emitter) error {
	if err := event.DecodeEventInto(&o.ev, ev.Value); err != nil {
		return err
	}
	r := &o.res
	r.Committed, r.Writes = oc.Committed, r.Writes[:0]
	if oc.Committed {
		if len(oc.Ops) != len(o.ev.Ops) {
			return fmt.Errorf("grepsum: outcome of %d operations for an event of %d", len(oc.Ops), len(o.ev.Ops))
		}
		for m := range oc.Ops {
			v, err := NewValue(oc.Ops[m].Own, oc.Ops[m].Reads)
			if err != nil {
				return err
			}
			r.Writes = append(r.Writes, Write{Key: o.ev.Ops[m].Key, Value: v})
		}
	}
	o.out = AppendResult(o.out[:0], r)
	out.Emit(sluice.Record{Key: ev.Key, Value: o.out, Time: ev.Time})
	return nil
}

// NewValue is GrepSum's function over values read: old plus the reads plus
// one (int64, wrapping; a missing key holds 0).
func NewValue(old sluice.Value, reads []sluice.Value) (int64, error) {
	v, err := event.DecodeValue(old.Bytes)
	if err != nil {
		return 0, err
	}
	for _, r := range reads {
		x, err := event.DecodeValue(r.Bytes)
		if err != nil {
			return 0, err
		}
		v += x
	}
	return v + 1, nil
}
