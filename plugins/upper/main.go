package main

import (
	"github.com/sluicehq/sluice/plugins/upper/upperlib"
	"github.com/sluicehq/sluice/sdk/go/sluice"
)

func main() {}

func init() { sluice.MapInPlace(upper) }

// upper upper-cases r's value in the input buffer, which the SDK allows:
// the record keeps its key, value slice, time and headers, so the SDK
// forwards its encoding without re-encoding it.
func upper(r *sluice.Record) error {
	upperlib.UpperInPlace(r.Value)
	return nil
}
