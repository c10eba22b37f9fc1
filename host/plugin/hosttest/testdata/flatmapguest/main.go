// Command flatmapguest is a FlatMap operator used by the SDK's WebAssembly
// tests: it emits one record per space-separated field of the value; a field
// "fail" makes it fail after emitting the fields before it; a field
// "many=N" emits N records of 1 KiB each (to cross the SDK's flush size).
package main

import (
	"bytes"
	"errors"
	"strconv"

	"github.com/sluicehq/sluice/sdk/go/sluice"
)

func main() {}

func init() {
	big := bytes.Repeat([]byte("x"), 1024)
	sluice.FlatMap(func(r sluice.Record, out *sluice.Emitter) error {
		for _, f := range bytes.Fields(r.Value) {
			if string(f) == "fail" {
				return errors.New("field fail")
			}
			if n, ok := bytes.CutPrefix(f, []byte("many=")); ok {
				count, err := strconv.Atoi(string(n))
				if err != nil {
					return err
				}
				for i := range count {
					out.Emit(sluice.Record{Key: strconv.AppendInt(nil, int64(i), 10), Value: big, Time: r.Time})
				}
				continue
			}
			out.Emit(sluice.Record{Key: r.Key, Value: f, Time: r.Time})
		}
		return nil
	})
}
