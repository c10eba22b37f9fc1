// Package countlib holds the logic of the wordcount plugin, so that
// another plugin can count records exactly as it does (the control
// benchmark's slower version of it, plugins/internal/slowcount).
package countlib

import (
	"fmt"
	"strconv"

	"github.com/sluicehq/sluice/sdk/go/sluice"
)

// Counter counts records per key. It holds the buffer the new count is
// formatted into, reused across records: State.Put copies it and Emit
// encodes it at once.
type Counter struct{ buf []byte }

// Handle counts r: it reads the key's count from the operator's default
// state table (decimal ASCII), adds one, stores it and emits the key with
// the new count at r's time. A stored count that is not a decimal number
// is an error (the record is dead-lettered) and the count stays as it is.
func (c *Counter) Handle(r sluice.Record, st *sluice.State, out *sluice.Emitter) error {
	var n uint64
	if v, ok := st.Get(); ok {
		var err error
		if n, err = ParseCount(v); err != nil {
			return fmt.Errorf("stored count of key %q: %w", r.Key, err)
		}
	}
	c.buf = AppendCount(c.buf[:0], n+1)
	st.Put(c.buf)
	out.Emit(sluice.Record{Key: r.Key, Value: c.buf, Time: r.Time})
	return nil
}

// ParseCount reads a count written by AppendCount: one or more ASCII
// digits, at most 2^64-1.
func ParseCount(b []byte) (uint64, error) {
	if len(b) == 0 {
		return 0, fmt.Errorf("empty, want a decimal number")
	}
	var n uint64
	for _, c := range b {
		d := uint64(c - '0')
		if d > 9 {
			return 0, fmt.Errorf("%q is not a decimal number", b)
		}
		if n > (1<<64-1-d)/10 {
			return 0, fmt.Errorf("%q is out of range", b)
		}
		n = n*10 + d
	}
	return n, nil
}

// AppendCount appends n in decimal to dst.
func AppendCount(dst []byte, n uint64) []byte { return strconv.AppendUint(dst, n, 10) }
