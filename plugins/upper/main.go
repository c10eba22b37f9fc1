package main

import (
	"github.com/sluicehq/sluice/plugins/upper/upperlib"
	"github.com/sluicehq/sluice/sdk/go/sluice"
)

func main() {}

func init() { sluice.Map(upper) }

// upper upper-cases r's value in the input buffer, which the SDK allows.
func upper(r sluice.Record) (sluice.Record, error) {
	r.Value = upperlib.Upper(r.Value[:0], r.Value)
	return r, nil
}
