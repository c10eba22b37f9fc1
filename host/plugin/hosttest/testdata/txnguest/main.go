// Command txnguest is the transactional operator of package ledgerop, for
// the SDK's WebAssembly tests: the same source hosttest.TxnLogic runs
// natively.
package main

import (
	"github.com/sluicehq/sluice/host/plugin/hosttest/internal/ledgerop"
	"github.com/sluicehq/sluice/sdk/go/sluice"
)

func main() {}

func init() { sluice.Transactional(ledgerop.Op()) }
