package interrupt

import "github.com/sluicehq/sluice/runtime/wasmbin"

// reader is the binary format's reader, shared with the plugin loader.
type reader = wasmbin.Reader

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
