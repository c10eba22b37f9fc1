// Command txnguest is the transactional operator of package ledgerop, for
// the SDK's WebAssembly tests: the same source sluicetest.TxnLogic runs
// natively.
package main

import (
	"github.com/sluicehq/sluice/sdk/go/sluice"
	"github.com/sluicehq/sluice/sdk/go/sluice/internal/ledgerop"
)

func main() {}

func init() { sluice.Transactional(ledgerop.Op()) }
