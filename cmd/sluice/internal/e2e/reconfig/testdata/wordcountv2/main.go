// Command wordcountv2 is plugins/wordcount with its outputs marked: it
// counts records per key in the same state (the count as decimal ASCII),
// so it takes over wordcount's state, and emits "v2:" and the new count.
// The cluster tests swap it in for wordcount and tell, by the mark, which
// version made each output.
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

// counter holds the buffers the new count and the output are formatted
// into, reused across records.
type counter struct{ buf, out []byte }

func (c *counter) handle(r sluice.Record, st *sluice.State, out *sluice.Emitter) error {
	var n uint64
	if v, ok := st.Get(); ok {
		var err error
		if n, err = strconv.ParseUint(string(v), 10, 64); err != nil {
			return fmt.Errorf("stored count of key %q: %w", r.Key, err)
		}
	}
	c.buf = strconv.AppendUint(c.buf[:0], n+1, 10)
	st.Put(c.buf)
	c.out = append(append(c.out[:0], "v2:"...), c.buf...)
	out.Emit(sluice.Record{Key: r.Key, Value: c.out, Time: r.Time})
	return nil
}
