// Command goinputs is a test guest of record inputs, written with the Go
// SDK as a user would: a map whose output for each record is its value
// prefixed with the input it arrived on, "1:v" for value v on input 1.
package main

import (
	"strconv"

	"github.com/sluicehq/sluice/sdk/go/sluice"
)

func main() {}

func init() {
	sluice.Map(func(r sluice.Record) (sluice.Record, error) {
		v := append(strconv.AppendInt(nil, int64(r.Input), 10), ':')
		r.Value = append(v, r.Value...)
		return r, nil
	})
}
