// Command txnbenchguest is ledgerop.BenchOp, for the SDK's WebAssembly
// benchmarks: ledgerop's operator with a Post that emits one small record
// per event.
package main

import (
	"github.com/sluicehq/sluice/host/plugin/hosttest/internal/ledgerop"
	"github.com/sluicehq/sluice/sdk/go/sluice"
)

func main() {}

func init() { sluice.Transactional(ledgerop.BenchOp()) }
