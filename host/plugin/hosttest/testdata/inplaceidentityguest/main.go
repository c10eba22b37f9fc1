// Command inplaceidentityguest is a MapInPlace operator that leaves its
// input as it is, used by the SDK's WebAssembly benchmark to measure the
// SDK's own per-record cost with a handler that takes a pointer.
package main

import "github.com/sluicehq/sluice/sdk/go/sluice"

func main() {}

func init() {
	sluice.MapInPlace(func(*sluice.Record) error { return nil })
}
