package upperlib

import "encoding/binary"

const (
	ones  = 0x0101010101010101
	highs = 0x8080808080808080
)

// Upper appends src to dst with the ASCII letters a-z upper-cased, and
// returns the extended slice; every other byte, UTF-8 sequences included,
// is copied unchanged. dst may be src[:0], to upper-case in place (see
// UpperInPlace).
func Upper(dst, src []byte) []byte {
	at := len(dst)
	if cap(dst)-at < len(src) {
		grown := make([]byte, at, at+len(src))
		copy(grown, dst)
		dst = grown
	}
	dst = dst[:at+len(src)]
	out := dst[at:]
	if len(src) == 0 {
		return dst
	}
	if &out[0] == &src[0] {
		UpperInPlace(out)
		return dst
	}
	le := binary.LittleEndian
	// Four words per iteration, each block's bounds checked once: Go's
	// WebAssembly code pays for every loop iteration and every bounds
	// check far more than native code does.
	for len(src) >= 32 && len(out) >= 32 {
		s, d := (*[32]byte)(src), (*[32]byte)(out)
		w0, w1, w2, w3 := le.Uint64(s[0:]), le.Uint64(s[8:]), le.Uint64(s[16:]), le.Uint64(s[24:])
		le.PutUint64(d[0:], upper8(w0))
		le.PutUint64(d[8:], upper8(w1))
		le.PutUint64(d[16:], upper8(w2))
		le.PutUint64(d[24:], upper8(w3))
		src, out = src[32:], out[32:]
	}
	for len(src) >= 8 && len(out) >= 8 {
		le.PutUint64(out, upper8(le.Uint64(src)))
		src, out = src[8:], out[8:]
	}
	for i, c := range src {
		if 'a' <= c && c <= 'z' {
			c -= 'a' - 'A'
		}
		out[i] = c
	}
	return dst
}

// UpperInPlace upper-cases the ASCII letters a-z of b in place, as
// Upper(b[:0], b) does. It is the form to use in WebAssembly: reading and
// writing one slice keeps the loops' state to a pointer and a length, and
// every value a Go loop keeps costs there.
func UpperInPlace(b []byte) {
	le := binary.LittleEndian
	for len(b) >= 32 {
		w := (*[32]byte)(b)
		le.PutUint64(w[0:], upper8(le.Uint64(w[0:])))
		le.PutUint64(w[8:], upper8(le.Uint64(w[8:])))
		le.PutUint64(w[16:], upper8(le.Uint64(w[16:])))
		le.PutUint64(w[24:], upper8(le.Uint64(w[24:])))
		b = b[32:]
	}
	for len(b) >= 8 {
		le.PutUint64(b, upper8(le.Uint64(b)))
		b = b[8:]
	}
	for i, c := range b {
		if 'a' <= c && c <= 'z' {
			b[i] = c - ('a' - 'A')
		}
	}
}

// upper8 upper-cases the ASCII lower-case letters among the eight bytes of
// w. For each byte b with its high bit clear, b+(0x80-'a') has the high bit
// set exactly when b >= 'a', and b+(0x80-'z'-1) exactly when b > 'z'; their
// XOR marks 'a' <= b <= 'z'. Bytes with the high bit set (non-ASCII) are
// masked out. The adds cannot carry between bytes because every byte is
// below 0x80 after masking.
func upper8(w uint64) uint64 {
	low7 := w &^ highs
	geA := low7 + (0x80-'a')*ones
	gtZ := low7 + (0x80-'z'-1)*ones
	lower := (geA ^ gtZ) &^ w & highs
	return w ^ (lower >> 2) // 0x80 >> 2 == 0x20, the case bit
}
