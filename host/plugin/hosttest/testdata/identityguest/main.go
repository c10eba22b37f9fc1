// Command identityguest is a Map operator that returns its input, used by
// the SDK's WebAssembly benchmark to measure the SDK's own per-record cost.
package main

import "github.com/sluicehq/sluice/sdk/go/sluice"

func main() {}

func init() {
	sluice.Map(func(r sluice.Record) (sluice.Record, error) { return r, nil })
}
