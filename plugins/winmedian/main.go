package main

import (
	"fmt"
	"slices"
	"strconv"

	"github.com/sluicehq/sluice/sdk/go/sluice"
)

func main() {}

func init() { sluice.WindowFunc(median) }

// median emits the median of the window's values.
func median(key []byte, _ sluice.Window, recs []sluice.Record, out *sluice.Emitter) error {
	if len(recs) == 0 {
		return nil
	}
	vs := make([]int64, len(recs))
	for i, r := range recs {
		v, err := strconv.ParseInt(string(r.Value), 10, 64)
		if err != nil || len(r.Value) > 0 && r.Value[0] == '+' {
			return fmt.Errorf("record %d: value is not a decimal integer", i)
		}
		vs[i] = v
	}
	slices.Sort(vs)
	out.Emit(sluice.Record{Key: key, Value: strconv.AppendInt(nil, vs[len(vs)/2], 10)})
	return nil
}
