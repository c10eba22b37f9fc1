package upperlib

import "encoding/binary"

const (
	ones  = 0x0101010101010101
	highs = 0x8080808080808080
)

// Upper appends src to dst with the ASCII letters a-z upper-cased, and
// returns the extended slice; every other byte, UTF-8 sequences included,
// is copied unchanged. dst may be src[:0], to upper-case in place.
func Upper(dst, src []byte) []byte {
	at := len(dst)
	if cap(dst)-at < len(src) {
		grown := make([]byte, at, at+len(src))
		copy(grown, dst)
		dst = grown
	}
	dst = dst[:at+len(src)]
	out := dst[at:]
	i := 0
	for ; i+8 <= len(src); i += 8 {
		w := binary.LittleEndian.Uint64(src[i:])
		binary.LittleEndian.PutUint64(out[i:], upper8(w))
	}
	for ; i < len(src); i++ {
		c := src[i]
		if 'a' <= c && c <= 'z' {
			c -= 'a' - 'A'
		}
		out[i] = c
	}
	return dst
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
