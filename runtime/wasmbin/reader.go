package wasmbin

import (
	"errors"
	"fmt"
)

// ErrMalformed is wrapped by every error of a Reader and of CheckBounds: the
// bytes are not well-formed WebAssembly, as far as they were read.
var ErrMalformed = errors.New("malformed WebAssembly module")

// Error is a Reader's error: what is wrong, and where.
type Error struct {
	Offset int    // in the module
	Reason string // "unexpected end", "integer longer than 32 bits"...
}

func (e *Error) Error() string {
	return fmt.Sprintf("%v: at byte %d: %s", ErrMalformed, e.Offset, e.Reason)
}

// Unwrap returns ErrMalformed.
func (e *Error) Unwrap() error { return ErrMalformed }

// Reader decodes the binary format from B, starting at Pos. Base is the
// offset of B[0] in the module, so that errors name offsets in the module.
// Every method fails with an error wrapping ErrMalformed, naming the
// offset, when the bytes run out or an integer is longer than its type
// allows; none panics.
type Reader struct {
	B    []byte
	Pos  int
	Base int
}

// Errorf returns an *Error at the reader's offset.
func (r *Reader) Errorf(format string, args ...any) error {
	return &Error{Offset: r.Base + r.Pos, Reason: fmt.Sprintf(format, args...)}
}

// Done reports whether every byte has been read.
func (r *Reader) Done() bool { return r.Pos >= len(r.B) }

// Left returns the number of bytes not read yet.
func (r *Reader) Left() int { return max(len(r.B)-r.Pos, 0) }

// Byte reads one byte.
func (r *Reader) Byte() (byte, error) {
	if r.Pos >= len(r.B) {
		return 0, r.Errorf("unexpected end")
	}
	c := r.B[r.Pos]
	r.Pos++
	return c, nil
}

// Bytes returns the next n bytes, which alias B.
func (r *Reader) Bytes(n uint64) ([]byte, error) {
	if n > uint64(r.Left()) {
		return nil, r.Errorf("%d bytes announced, %d left", n, r.Left())
	}
	s := r.B[r.Pos : r.Pos+int(n)]
	r.Pos += int(n)
	return s, nil
}

// ULEB reads an unsigned LEB128 integer of at most bits bits.
func (r *Reader) ULEB(bits uint) (uint64, error) {
	var v uint64
	for shift := uint(0); ; shift += 7 {
		if shift >= bits {
			return 0, r.Errorf("integer longer than %d bits", bits)
		}
		c, err := r.Byte()
		if err != nil {
			return 0, err
		}
		v |= uint64(c&0x7f) << shift
		if c&0x80 == 0 {
			if bits < 64 && v>>bits != 0 {
				return 0, r.Errorf("integer overflows %d bits", bits)
			}
			return v, nil
		}
	}
}

// U32 reads an unsigned 32-bit LEB128 integer.
func (r *Reader) U32() (uint32, error) {
	v, err := r.ULEB(32)
	return uint32(v), err
}

// SLEB reads a signed LEB128 integer of at most bits bits (33 for block
// types, 32 and 64 for constants).
func (r *Reader) SLEB(bits uint) (int64, error) {
	var v int64
	var shift uint
	for {
		if shift >= bits {
			return 0, r.Errorf("integer longer than %d bits", bits)
		}
		c, err := r.Byte()
		if err != nil {
			return 0, err
		}
		v |= int64(c&0x7f) << shift
		shift += 7
		if c&0x80 == 0 {
			if shift < 64 && c&0x40 != 0 {
				v |= -1 << shift // sign-extend
			}
			return v, nil
		}
	}
}

// Name reads a length-prefixed string.
func (r *Reader) Name() (string, error) {
	n, err := r.U32()
	if err != nil {
		return "", err
	}
	b, err := r.Bytes(uint64(n))
	return string(b), err
}
