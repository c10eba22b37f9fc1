// Command keyedguest is a Keyed operator used by the SDK's WebAssembly tests.
// Per key it counts records in the default table and keeps the last value
// in table "last"; the value "del" deletes both, "grow=N" stores an N-byte
// value in "last", "fail" writes and then fails, and "undeclared" reaches
// for a table the pipeline did not declare.
package main

import (
	"bytes"
	"errors"
	"strconv"

	"github.com/sluicehq/sluice/sdk/go/sluice"
)

func main() {}

func init() {
	sluice.Keyed(func(r sluice.Record, st *sluice.State, out *sluice.Emitter) error {
		last := st.Table("last")
		switch v := string(r.Value); {
		case v == "del":
			st.Delete()
			last.Delete()
			return nil
		case v == "undeclared":
			st.Table("undeclared")
		case v == "fail":
			last.Put([]byte("written before failing"))
			out.Emit(sluice.Record{Key: r.Key, Value: []byte("discarded")})
			return errors.New("failed on purpose")
		case len(v) > 5 && v[:5] == "grow=":
			n, err := strconv.Atoi(v[5:])
			if err != nil {
				return err
			}
			last.Put(bytes.Repeat([]byte{'g'}, n))
		default:
			last.Put(r.Value)
		}
		var n uint64
		if old, ok := st.Get(); ok {
			var err error
			if n, err = strconv.ParseUint(string(old), 10, 64); err != nil {
				return err
			}
		}
		n++
		st.Put(strconv.AppendUint(nil, n, 10))
		// Read back the last value: its length checks State.Get's retry.
		lv, _ := last.Get()
		out.Emit(sluice.Record{Key: r.Key, Value: strconv.AppendUint(nil, n, 10), Time: r.Time,
			Headers: []sluice.Header{{Name: []byte("last-len"), Value: strconv.AppendInt(nil, int64(len(lv)), 10)}}})
		return nil
	})
}
