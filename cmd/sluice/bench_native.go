package main

import (
	"fmt"

	"github.com/sluicehq/sluice/host/plugin/hosttest"
	"github.com/sluicehq/sluice/host/txnop"
	"github.com/sluicehq/sluice/plugins/bidding/biddingop"
	"github.com/sluicehq/sluice/plugins/grepsum/grepsumop"
	"github.com/sluicehq/sluice/plugins/ledger/ledgerop"
	"github.com/sluicehq/sluice/plugins/nongrepsum/nongrepsumop"
	"github.com/sluicehq/sluice/plugins/toll/tollop"
	gsdk "github.com/sluicehq/sluice/sdk/go/sluice"
	"github.com/sluicehq/sluice/txn/apps/workload"
)

// The benchmarks compare a plugin compiled to WebAssembly with the same Go
// source run natively. Package bench imports no plugin's code (the host
// does not depend on the guest side); the binary, which builds the plugins
// anyway, gives it their native forms.

// nativeTxnOps are the operators of the transactional benchmark plugins,
// by workload application (workload.Apps).
var nativeTxnOps = map[string]func() gsdk.Txn{
	workload.StreamingLedger: ledgerop.New,
	workload.GrepSum:         grepsumop.New,
	workload.NonGrepSum:      nongrepsumop.New,
	workload.TollProcessing:  tollop.New,
	workload.OnlineBidding:   biddingop.New,
}

// nativeTxn returns bench.TxnOptions.Native for application app: its
// plugin's operator on the host's scheduler, without the ABI.
func nativeTxn(app string) (func(tables []string) txnop.Logic, error) {
	op, ok := nativeTxnOps[app]
	if !ok {
		return nil, fmt.Errorf("no native operator for the %q application", app)
	}
	return func(tables []string) txnop.Logic { return hosttest.TxnLogicParts(op, tables) }, nil
}
