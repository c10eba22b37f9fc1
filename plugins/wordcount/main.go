package main

import (
	"fmt"
	"strconv"

	"github.com/sluicehq/sluice/sdk/go/sluice"
)

func main() {}

func init() {
	c := &counter{}
	sluice.Keyed(c.handle)
}

// counter holds the buffer the new count is formatted into, reused across
// records: State.Put copies it and Emit encodes it at once.
type counter struct{ buf []byte }

func (c *counter) handle(r sluice.Record, st *sluice.State, out *sluice.Emitter) error {
	var n uint64
	if v, ok := st.Get(); ok {
		var err error
		if n, err = parseCount(v); err != nil {
			return fmt.Errorf("stored count of key %q: %w", r.Key, err)
		}
	}
	c.buf = appendCount(c.buf[:0], n+1)
	st.Put(c.buf)
	out.Emit(sluice.Record{Key: r.Key, Value: c.buf, Time: r.Time})
	return nil
}

// parseCount reads a count written by appendCount: one or more ASCII
// digits, at most 2^64-1.
func parseCount(b []byte) (uint64, error) {
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

// appendCount appends n in decimal to dst.
func appendCount(dst []byte, n uint64) []byte { return strconv.AppendUint(dst, n, 10) }
