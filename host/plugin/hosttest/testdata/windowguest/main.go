// Command windowguest is the transactional operator of package windowop,
// for the SDK's WebAssembly tests of windowed reads: the same source
// hosttest.TxnLogic runs natively.
package main

import (
	"github.com/sluicehq/sluice/host/plugin/hosttest/internal/windowop"
	"github.com/sluicehq/sluice/sdk/go/sluice"
)

func main() {}

func init() { sluice.Transactional(windowop.Op()) }
