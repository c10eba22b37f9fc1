package interrupt

import "fmt"

// reader decodes the binary format from a byte slice. Every method fails
// with an error wrapping ErrMalformed, naming the offset, when the bytes run
// out or an integer is longer than its type allows; none panics.
type reader struct {
	b    []byte
	pos  int
	base int // offset of b[0] in the module, for error messages
}

func (r *reader) errorf(format string, args ...any) error {
	return fmt.Errorf("%w: at byte %d: %s", ErrMalformed, r.base+r.pos, fmt.Sprintf(format, args...))
}

func (r *reader) done() bool { return r.pos >= len(r.b) }

func (r *reader) byte() (byte, error) {
	if r.pos >= len(r.b) {
		return 0, r.errorf("unexpected end")
	}
	c := r.b[r.pos]
	r.pos++
	return c, nil
}

// bytes returns the next n bytes.
func (r *reader) bytes(n uint64) ([]byte, error) {
	if n > uint64(len(r.b)-r.pos) {
		return nil, r.errorf("%d bytes announced, %d left", n, len(r.b)-r.pos)
	}
	s := r.b[r.pos : r.pos+int(n)]
	r.pos += int(n)
	return s, nil
}

// uleb reads an unsigned LEB128 integer of at most bits bits.
func (r *reader) uleb(bits uint) (uint64, error) {
	var v uint64
	for shift := uint(0); ; shift += 7 {
		if shift >= bits {
			return 0, r.errorf("integer longer than %d bits", bits)
		}
		c, err := r.byte()
		if err != nil {
			return 0, err
		}
		v |= uint64(c&0x7f) << shift
		if c&0x80 == 0 {
			if bits < 64 && v>>bits != 0 {
				return 0, r.errorf("integer overflows %d bits", bits)
			}
			return v, nil
		}
	}
}

func (r *reader) u32() (uint32, error) {
	v, err := r.uleb(32)
	return uint32(v), err
}

// sleb reads a signed LEB128 integer of at most bits bits (33 for block
// types, 32 and 64 for constants).
func (r *reader) sleb(bits uint) (int64, error) {
	var v int64
	var shift uint
	for {
		if shift >= bits {
			return 0, r.errorf("integer longer than %d bits", bits)
		}
		c, err := r.byte()
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

// name reads a length-prefixed string.
func (r *reader) name() (string, error) {
	n, err := r.u32()
	if err != nil {
		return "", err
	}
	b, err := r.bytes(uint64(n))
	return string(b), err
}

// appendULEB appends v in unsigned LEB128.
func appendULEB(out []byte, v uint64) []byte {
	for {
		c := byte(v & 0x7f)
		v >>= 7
		if v == 0 {
			return append(out, c)
		}
		out = append(out, c|0x80)
	}
}

// appendSLEB appends v in signed LEB128.
func appendSLEB(out []byte, v int64) []byte {
	for {
		c := byte(v & 0x7f)
		v >>= 7
		if (v == 0 && c&0x40 == 0) || (v == -1 && c&0x40 != 0) {
			return append(out, c)
		}
		out = append(out, c|0x80)
	}
}

// appendName appends a length-prefixed string.
func appendName(out []byte, s string) []byte {
	return append(appendULEB(out, uint64(len(s))), s...)
}
