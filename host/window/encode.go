package window

import (
	"encoding/binary"
	"fmt"

	"github.com/sluicehq/sluice/abi"
)

// The layout in keyed state (docs/windows.md, "State"). For an operator
// with namespace ns, under the routing key of each record key:
//
//	ns+"/s", window(16)          a slice: uvarint(count) + accumulator or contents
//	ns+"/m", window(16)          a window's firings: seq(4) + flags(1)
//	ns+"/p", window(16), n(4)    a count firing waiting for Advance: firing(1) + accumulator or contents
//
// and timers in namespace ns named kind(1) + window(16) [+ n(4)]: 'f' fires
// a window, 'c' purges it, 'n' fires a pending count firing, 'e' (no
// window) fires the key's open windows early. A window(16) is its start
// and end, each big-endian with the sign bit flipped, so that slices are
// ordered by start.
const (
	sliceSuffix   = "/s"
	metaSuffix    = "/m"
	pendingSuffix = "/p"
	windowLen     = 16

	timerFire    = 'f'
	timerCleanup = 'c'
	timerCount   = 'n'
	timerEarly   = 'e'

	metaFired = 1 // the window fired on time
)

func appendWindow(dst []byte, w Window) []byte {
	dst = binary.BigEndian.AppendUint64(dst, uint64(w.Start)^(1<<63))
	return binary.BigEndian.AppendUint64(dst, uint64(w.End)^(1<<63))
}

func decodeWindow(b []byte) (Window, error) {
	if len(b) < windowLen {
		return Window{}, fmt.Errorf("window %x: %w", b, ErrCorrupt)
	}
	return Window{
		Start: int64(binary.BigEndian.Uint64(b) ^ (1 << 63)),
		End:   int64(binary.BigEndian.Uint64(b[8:]) ^ (1 << 63)),
	}, nil
}

// splitSlice splits a slice value into its record count and payload.
func splitSlice(v []byte) (uint64, []byte, error) {
	n, k := binary.Uvarint(v)
	if k <= 0 {
		return 0, nil, fmt.Errorf("slice value %x: %w", v, ErrCorrupt)
	}
	return n, v[k:], nil
}

// appendRecord appends the stored form of a collected record: its time,
// input (the position of the operator's input it came on), value and
// headers (its key is the routing key).
func appendRecord(dst []byte, r *abi.Record) []byte {
	dst = binary.BigEndian.AppendUint64(dst, uint64(r.Time))
	dst = binary.AppendUvarint(dst, uint64(r.Input))
	dst = binary.AppendUvarint(dst, uint64(len(r.Value)))
	dst = append(dst, r.Value...)
	dst = binary.AppendUvarint(dst, uint64(len(r.Headers)))
	for _, h := range r.Headers {
		dst = binary.AppendUvarint(dst, uint64(len(h.Name)))
		dst = append(dst, h.Name...)
		dst = binary.AppendUvarint(dst, uint64(len(h.Value)))
		dst = append(dst, h.Value...)
	}
	return dst
}

// decodeRecords appends the records stored in b to dst; their slices
// alias b.
func decodeRecords(dst []abi.Record, key, b []byte) ([]abi.Record, error) {
	bad := fmt.Errorf("window contents: %w", ErrCorrupt)
	bytesField := func() ([]byte, bool) {
		n, k := binary.Uvarint(b)
		if k <= 0 || uint64(len(b)-k) < n {
			return nil, false
		}
		f := b[k : k+int(n) : k+int(n)]
		b = b[k+int(n):]
		return f, true
	}
	for len(b) > 0 {
		if len(b) < 8 {
			return dst, bad
		}
		r := abi.Record{Time: int64(binary.BigEndian.Uint64(b)), Key: key}
		b = b[8:]
		in, k := binary.Uvarint(b)
		if k <= 0 || in > 1<<16-1 {
			return dst, bad
		}
		r.Input, b = uint16(in), b[k:]
		var ok bool
		if r.Value, ok = bytesField(); !ok {
			return dst, bad
		}
		nh, k := binary.Uvarint(b)
		if k <= 0 || nh > uint64(len(b)) {
			return dst, bad
		}
		b = b[k:]
		if nh > 0 {
			r.Headers = make([]abi.Header, nh)
			for i := range r.Headers {
				if r.Headers[i].Name, ok = bytesField(); !ok {
					return dst, bad
				}
				if r.Headers[i].Value, ok = bytesField(); !ok {
					return dst, bad
				}
			}
		}
		dst = append(dst, r)
	}
	return dst, nil
}

// meta is a window's firing record.
type meta struct {
	seq   uint32
	flags byte
}

func decodeMeta(v []byte) (meta, error) {
	if len(v) != 5 {
		return meta{}, fmt.Errorf("window firings %x: %w", v, ErrCorrupt)
	}
	return meta{seq: binary.BigEndian.Uint32(v), flags: v[4]}, nil
}

func (m meta) append(dst []byte) []byte {
	return append(binary.BigEndian.AppendUint32(dst, m.seq), m.flags)
}
