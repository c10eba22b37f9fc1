package event

import (
	"github.com/sluicehq/sluice/txn/apps/internal/wire"
)

// Tag is the first byte of every GrepSum event (format v1).
const Tag byte = 'G'

// The state table.
const (
	Table     = 0
	TableName = "micro"
)

// KeyWidth is the number of decimal digits of a key.
const KeyWidth = wire.KeyWidth

// ErrMalformed is wrapped by every decoding error.
var ErrMalformed = wire.ErrMalformed

// FieldError is the error a decoder returns: it names the field at fault.
type FieldError = wire.FieldError

// Op is one operation: it writes Key from its own value and the values of
// Reads.
type Op struct {
	Key   uint32
	Reads []uint32
}

// Event is one GrepSum transaction.
type Event struct {
	// Abort makes every operation's condition fail.
	Abort bool
	// BusyNanos is the busy work each operation does, in nanoseconds.
	BusyNanos uint32
	// Ops are the operations in order; an encoded event has at least one.
	Ops []Op
}

const flagAbort = 1

// AppendEvent appends the encoding of e to dst.
func AppendEvent(dst []byte, e *Event) []byte {
	dst = AppendHeader(dst, e.Abort, e.BusyNanos, len(e.Ops))
	for i := range e.Ops {
		dst = AppendOp(dst, e.Ops[i].Key, e.Ops[i].Reads)
	}
	return dst
}

// AppendHeader appends the part of an event before its operations; ops
// operations must follow, each appended by AppendOp. It lets a generator
// encode an event without building an Event.
func AppendHeader(dst []byte, abort bool, busyNanos uint32, ops int) []byte {
	flags := byte(0)
	if abort {
		flags |= flagAbort
	}
	dst = append(dst, Tag, flags)
	dst = wire.AppendUvarint(dst, uint64(busyNanos))
	return wire.AppendUvarint(dst, uint64(ops))
}

// AppendOp appends one operation of an event started by AppendHeader.
func AppendOp(dst []byte, key uint32, reads []uint32) []byte {
	dst = wire.AppendUvarint(dst, uint64(key))
	dst = wire.AppendUvarint(dst, uint64(len(reads)))
	for _, k := range reads {
		dst = wire.AppendUvarint(dst, uint64(k))
	}
	return dst
}

const format = "grepsum event"

// DecodeEvent decodes an event written by AppendEvent. A malformed input
// fails with a *FieldError naming the field.
func DecodeEvent(b []byte) (Event, error) {
	var e Event
	err := DecodeEventInto(&e, b)
	return e, err
}

// DecodeEventInto decodes into e, reusing the memory of e.Ops and of their
// Reads: a decoder of many events allocates only while they grow. All the
// Reads share one array, so e must not be shared with an earlier result the
// caller still uses. On failure e is reset to the zero Event.
func DecodeEventInto(e *Event, b []byte) error {
	r := wire.NewReader(format, b)
	r.Tag(Tag, "a GrepSum event")
	flags := r.Byte("flags")
	if flags&^flagAbort != 0 {
		r.FailAt("flags", 1, "unknown flag bits")
	}
	busy := r.Uvarint32("busy-ns", 1<<32-1)
	n := r.Count("op count", 2)
	if !r.Failed() && n == 0 {
		r.Fail("op count", "no operations")
	}
	// One array for every op's reads: each read takes at least one byte,
	// so the rest of the input bounds their number.
	var flat []uint32
	if len(e.Ops) > 0 {
		flat = e.Ops[0].Reads[:0]
	}
	if cap(flat) < r.Remaining() {
		flat = make([]uint32, 0, r.Remaining())
	}
	ops := e.Ops[:0]
	for i := 0; i < n && !r.Failed(); i++ {
		key := r.Uvarint32("op key", wire.MaxKeys-1)
		m := r.Count("op read count", 1)
		from := len(flat)
		for j := 0; j < m; j++ {
			flat = append(flat, r.Uvarint32("op read key", wire.MaxKeys-1))
		}
		ops = append(ops, Op{Key: key, Reads: flat[from:len(flat):len(flat)]})
	}
	if err := r.Err(); err != nil {
		*e = Event{}
		return err
	}
	// Op 0's Reads keeps the whole array's capacity for the next reuse.
	ops[0].Reads = flat[:len(ops[0].Reads)]
	*e = Event{Abort: flags&flagAbort != 0, BusyNanos: busy, Ops: ops}
	return nil
}

// AppendKey appends key k: k in KeyWidth decimal digits.
func AppendKey(dst []byte, k uint32) []byte { return wire.AppendKey(dst, k) }

// ParseKey parses a key written by AppendKey.
func ParseKey(b []byte) (uint32, bool) { return wire.ParseKey(b) }

// InitialValue is key k's value before the first event: k.
func InitialValue(k uint32) int64 { return int64(k) }

// AppendValue appends a value: 8 bytes, little endian.
func AppendValue(dst []byte, v int64) []byte { return wire.AppendUint64(dst, uint64(v)) }

// DecodeValue decodes a value. An empty value (a key never written) is 0;
// any other length than 8 fails with a *FieldError.
func DecodeValue(b []byte) (int64, error) {
	var w [1]uint64
	err := wire.Fixed("grepsum value", "value", b, w[:])
	return int64(w[0]), err
}
