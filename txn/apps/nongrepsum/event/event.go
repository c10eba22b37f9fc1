package event

import (
	"strconv"

	"github.com/sluicehq/sluice/txn/apps/internal/wire"
)

// Tag is the first byte of every NonGrepSum event (format v1).
const Tag byte = 'N'

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

// Op is one operation. A deterministic one writes Key; a non-deterministic
// one writes Target(value of Key, Keys).
type Op struct {
	Key    uint32
	Reads  []uint32
	NonDet bool
}

// Event is one NonGrepSum transaction.
type Event struct {
	// Abort makes every operation's condition fail.
	Abort bool
	// BusyNanos is the busy work each operation does, in nanoseconds.
	BusyNanos uint32
	// Keys is the size of the table's key space, which Target needs; every
	// key of the event is below it.
	Keys uint32
	// Ops are the operations in order; an encoded event has at least one.
	Ops []Op
}

// Target returns the key a non-deterministic operation writes when its
// pointer key holds p: uint64(p) mod keys. keys must be positive.
func Target(p int64, keys uint32) uint32 { return uint32(uint64(p) % uint64(keys)) }

const (
	flagAbort  = 1
	flagNonDet = 1
)

// AppendEvent appends the encoding of e to dst.
func AppendEvent(dst []byte, e *Event) []byte {
	dst = AppendHeader(dst, e.Abort, e.BusyNanos, e.Keys, len(e.Ops))
	for i := range e.Ops {
		dst = AppendOp(dst, e.Ops[i].NonDet, e.Ops[i].Key, e.Ops[i].Reads)
	}
	return dst
}

// AppendHeader appends the part of an event before its operations; ops
// operations must follow, each appended by AppendOp.
func AppendHeader(dst []byte, abort bool, busyNanos, keys uint32, ops int) []byte {
	flags := byte(0)
	if abort {
		flags |= flagAbort
	}
	dst = append(dst, Tag, flags)
	dst = wire.AppendUvarint(dst, uint64(busyNanos))
	dst = wire.AppendUvarint(dst, uint64(keys))
	return wire.AppendUvarint(dst, uint64(ops))
}

// AppendOp appends one operation of an event started by AppendHeader.
func AppendOp(dst []byte, nonDet bool, key uint32, reads []uint32) []byte {
	flags := byte(0)
	if nonDet {
		flags |= flagNonDet
	}
	dst = append(dst, flags)
	dst = wire.AppendUvarint(dst, uint64(key))
	dst = wire.AppendUvarint(dst, uint64(len(reads)))
	for _, k := range reads {
		dst = wire.AppendUvarint(dst, uint64(k))
	}
	return dst
}

const format = "nongrepsum event"

// DecodeEvent decodes an event written by AppendEvent. A malformed input,
// or a key not below Keys, fails with a *FieldError naming the field.
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
	r.Tag(Tag, "a NonGrepSum event")
	flags := r.Byte("flags")
	if flags&^flagAbort != 0 {
		r.FailAt("flags", 1, "unknown flag bits")
	}
	busy := r.Uvarint32("busy-ns", 1<<32-1)
	off := r.Offset()
	keys := r.Uvarint32("keys", wire.MaxKeys)
	if !r.Failed() && keys == 0 {
		r.FailAt("keys", off, "0, want at least 1")
	}
	n := r.Count("op count", 3)
	if !r.Failed() && n == 0 {
		r.Fail("op count", "no operations")
	}
	var flat []uint32
	if len(e.Ops) > 0 {
		flat = e.Ops[0].Reads[:0]
	}
	if cap(flat) < r.Remaining() {
		flat = make([]uint32, 0, r.Remaining())
	}
	ops := e.Ops[:0]
	for i := 0; i < n && !r.Failed(); i++ {
		opOff := r.Offset()
		opFlags := r.Byte("op flags")
		if opFlags&^flagNonDet != 0 {
			r.FailAt("op flags", opOff, "unknown flag bits")
		}
		key := readKey(&r, "op key", keys)
		m := r.Count("op read count", 1)
		from := len(flat)
		for j := 0; j < m; j++ {
			flat = append(flat, readKey(&r, "op read key", keys))
		}
		ops = append(ops, Op{Key: key, Reads: flat[from:len(flat):len(flat)], NonDet: opFlags&flagNonDet != 0})
	}
	if err := r.Err(); err != nil {
		*e = Event{}
		return err
	}
	ops[0].Reads = flat[:len(ops[0].Reads)]
	*e = Event{Abort: flags&flagAbort != 0, BusyNanos: busy, Keys: keys, Ops: ops}
	return nil
}

// readKey reads a key that must be below keys.
func readKey(r *wire.Reader, field string, keys uint32) uint32 {
	off := r.Offset()
	k := r.Uvarint32(field, wire.MaxKeys-1)
	if !r.Failed() && k >= keys {
		r.FailAt(field, off, strconv.FormatUint(uint64(k), 10)+" not below keys "+strconv.FormatUint(uint64(keys), 10))
	}
	return k
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
	err := wire.Fixed("nongrepsum value", "value", b, w[:])
	return int64(w[0]), err
}
