package wire

import (
	"errors"
	"strconv"
)

// KeyWidth is the number of decimal digits of a key: key k of a table is k
// in decimal, zero-padded to KeyWidth digits ("00000042").
const KeyWidth = 8

// MaxKeys bounds a table's key space: keys are in [0, MaxKeys), so every
// key fits KeyWidth digits.
const MaxKeys = 100_000_000

// AppendKey appends the KeyWidth-digit decimal form of k to dst. k must be
// below MaxKeys; higher digits are dropped.
func AppendKey(dst []byte, k uint32) []byte {
	var d [KeyWidth]byte
	for i := KeyWidth - 1; i >= 0; i-- {
		d[i] = byte('0' + k%10)
		k /= 10
	}
	return append(dst, d[:]...)
}

// ParseKey parses a key written by AppendKey: exactly KeyWidth decimal
// digits.
func ParseKey(b []byte) (uint32, bool) {
	if len(b) != KeyWidth {
		return 0, false
	}
	var k uint32
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		k = k*10 + uint32(c-'0')
	}
	return k, true
}

// AppendUvarint appends v as an unsigned LEB128 varint (the encoding of
// encoding/binary.AppendUvarint): 7 bits per byte, low bits first.
func AppendUvarint(dst []byte, v uint64) []byte {
	for v >= 0x80 {
		dst = append(dst, byte(v)|0x80)
		v >>= 7
	}
	return append(dst, byte(v))
}

// AppendUint64 appends v as 8 bytes, little endian.
func AppendUint64(dst []byte, v uint64) []byte {
	return append(dst, byte(v), byte(v>>8), byte(v>>16), byte(v>>24),
		byte(v>>32), byte(v>>40), byte(v>>48), byte(v>>56))
}

// Uint64 reads 8 bytes, little endian; b must hold at least 8.
func Uint64(b []byte) uint64 {
	_ = b[7]
	return uint64(b[0]) | uint64(b[1])<<8 | uint64(b[2])<<16 | uint64(b[3])<<24 |
		uint64(b[4])<<32 | uint64(b[5])<<40 | uint64(b[6])<<48 | uint64(b[7])<<56
}

// ErrMalformed is wrapped by every error of a decoder built on this
// package: check with errors.Is.
var ErrMalformed = errors.New("malformed")

// FieldError reports a malformed event or state value: which format, which
// field, where, and why. It wraps ErrMalformed.
type FieldError struct {
	// Format names what was decoded, e.g. "ledger event".
	Format string
	// Field names the field at fault, e.g. "amount" or "op key".
	Field string
	// Offset is the byte offset of the field in the input.
	Offset int
	// Reason says what is wrong: "truncated", "out of range", ...
	Reason string
}

// Error formats the error as "ledger event: field amount at byte 9: truncated".
func (e *FieldError) Error() string {
	return e.Format + ": field " + e.Field + " at byte " + strconv.Itoa(e.Offset) + ": " + e.Reason
}

// Unwrap returns ErrMalformed.
func (e *FieldError) Unwrap() error { return ErrMalformed }

// Reasons used by Reader.
const (
	Truncated  = "truncated"
	OutOfRange = "out of range"
	Overflow   = "varint overflows 64 bits"
)

// Reader decodes fields from a byte slice in order. After the first
// failure every method returns zero and Err reports that first failure, so
// a decoder reads all its fields and checks once.
type Reader struct {
	format string
	b      []byte
	off    int
	err    *FieldError
}

// NewReader returns a Reader over b; format names the input in errors.
func NewReader(format string, b []byte) Reader { return Reader{format: format, b: b} }

// Fail records a failure of field at the current offset, unless one is
// already recorded.
func (r *Reader) Fail(field, reason string) {
	r.FailAt(field, r.off, reason)
}

// FailAt records a failure of field at offset off, unless one is already
// recorded.
func (r *Reader) FailAt(field string, off int, reason string) {
	if r.err == nil {
		r.err = &FieldError{Format: r.format, Field: field, Offset: off, Reason: reason}
	}
}

// Failed reports whether a failure is recorded.
func (r *Reader) Failed() bool { return r.err != nil }

// Offset returns the offset of the next field.
func (r *Reader) Offset() int { return r.off }

// Remaining returns the number of bytes not yet read.
func (r *Reader) Remaining() int { return len(r.b) - r.off }

// Byte reads one byte.
func (r *Reader) Byte(field string) byte {
	if r.err != nil {
		return 0
	}
	if r.off >= len(r.b) {
		r.Fail(field, Truncated)
		return 0
	}
	c := r.b[r.off]
	r.off++
	return c
}

// Uvarint reads an unsigned varint.
func (r *Reader) Uvarint(field string) uint64 {
	if r.err != nil {
		return 0
	}
	var v uint64
	for i, c := range r.b[r.off:] {
		if i == 9 { // a 10th byte holds bit 63 only
			if c > 1 {
				r.Fail(field, Overflow)
				return 0
			}
			r.off += 10
			return v | uint64(c)<<63
		}
		if c < 0x80 {
			r.off += i + 1
			return v | uint64(c)<<(7*i)
		}
		v |= uint64(c&0x7f) << (7 * i)
	}
	r.Fail(field, Truncated)
	return 0
}

// Uvarint32 reads an unsigned varint that must fit in max (inclusive).
func (r *Reader) Uvarint32(field string, max uint32) uint32 {
	off := r.off
	v := r.Uvarint(field)
	if v > uint64(max) {
		r.FailAt(field, off, OutOfRange+" (over "+strconv.FormatUint(uint64(max), 10)+")")
		return 0
	}
	return uint32(v)
}

// Int64 reads an unsigned varint that must fit a non-negative int64.
func (r *Reader) Int64(field string) int64 {
	off := r.off
	v := r.Uvarint(field)
	if v > 1<<63-1 {
		r.FailAt(field, off, OutOfRange+" (over 2^63-1)")
		return 0
	}
	return int64(v)
}

// Count reads a varint element count for a list whose elements take at
// least minSize bytes each, and checks that the rest of the input can hold
// them, which bounds what a decoder allocates for a hostile input.
func (r *Reader) Count(field string, minSize int) int {
	off := r.off
	v := r.Uvarint(field)
	if r.err != nil {
		return 0
	}
	if v > uint64(r.Remaining()/minSize) {
		r.FailAt(field, off, "count "+strconv.FormatUint(v, 10)+" exceeds the remaining "+strconv.Itoa(r.Remaining())+" bytes")
		return 0
	}
	return int(v)
}

// Err returns the first failure, or a failure of "end" when bytes remain
// after the last field, or nil.
func (r *Reader) Err() error {
	if r.err == nil && r.off != len(r.b) {
		r.Fail("end", strconv.Itoa(len(r.b)-r.off)+" trailing bytes")
	}
	if r.err == nil {
		return nil
	}
	return r.err
}

// Fixed decodes a state value of n little-endian uint64 words into dst
// (len(dst) == n). An empty value decodes as zeros: a key that was never
// written holds the zero state. Any other length than 0 or 8n fails with a
// FieldError naming format and field.
func Fixed(format, field string, b []byte, dst []uint64) error {
	switch len(b) {
	case 0:
		clear(dst)
		return nil
	case 8 * len(dst):
		for i := range dst {
			dst[i] = Uint64(b[8*i:])
		}
		return nil
	}
	return &FieldError{Format: format, Field: field, Offset: 0,
		Reason: "length " + strconv.Itoa(len(b)) + ", want 0 or " + strconv.Itoa(8*len(dst))}
}

// Tag reads the tag byte that starts an event and fails unless it is want;
// name is the kind of event the format holds, for the message.
func (r *Reader) Tag(want byte, name string) {
	off := r.off
	c := r.Byte("tag")
	if !r.Failed() && c != want {
		r.FailAt("tag", off, "not "+name+" (tag "+hexByte(c)+", want "+hexByte(want)+")")
	}
}

func hexByte(c byte) string {
	const digits = "0123456789abcdef"
	return "0x" + string([]byte{digits[c>>4], digits[c&15]})
}
