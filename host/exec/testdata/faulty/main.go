// Command faulty is a keyed counting operator that misbehaves on demand, for
// the executor's failure tests: the value "boom" panics, "loop" never
// returns, "reject" is rejected, anything else is counted per key.
package main

import (
	"errors"
	"strconv"

	"github.com/sluicehq/sluice/sdk/go/sluice"
)

func main() {}

func init() {
	sluice.Keyed(func(r sluice.Record, st *sluice.State, out *sluice.Emitter) error {
		// Write first, so a failure after it shows whether state is rolled back.
		prev, _ := st.Get()
		n, _ := strconv.Atoi(string(prev))
		st.Put([]byte(strconv.Itoa(n + 1)))
		switch string(r.Value) {
		case "boom":
			panic("boom")
		case "loop":
			for {
			}
		case "reject":
			return errors.New("rejected on purpose")
		}
		out.Emit(sluice.Record{Key: r.Key, Value: []byte(strconv.Itoa(n + 1)), Time: r.Time})
		return nil
	})
}
