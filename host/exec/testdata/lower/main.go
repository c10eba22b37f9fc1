// Command lower is a map operator that lower-cases ASCII values, the
// replacement of plugins/upper in the swap tests: its outputs tell which
// module processed a record.
package main

import "github.com/sluicehq/sluice/sdk/go/sluice"

func main() {}

func init() {
	sluice.MapInPlace(func(r *sluice.Record) error {
		for i, c := range r.Value {
			if 'A' <= c && c <= 'Z' {
				r.Value[i] = c + 'a' - 'A'
			}
		}
		return nil
	})
}
