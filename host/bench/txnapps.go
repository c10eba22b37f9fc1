package bench

import (
	"fmt"
	"strings"

	"github.com/sluicehq/sluice/txn/apps/workload"
)

// txnApp is what the txn suite knows of one benchmark application beyond
// its workload: where its plugin lives and how many events a default run
// takes. Its operator's code comes from the caller (TxnOptions.Plugin and
// TxnOptions.Native): this package imports no plugin's code.
type txnApp struct {
	// title is the application's name in full, for the report.
	title string
	// plugin is the plugin's directory under plugins/.
	plugin string
	// events is the default number of events per run, a whole number of
	// default punctuations: about four seconds of the Wasm operator with
	// two workers under ns-op-lazy on a 2-core machine at the time of
	// writing (SL 90,000 events/s, GS 160,000, NGS 80,000, TP 155,000, OB
	// 26,000), a second or two at the rates the project aims for.
	events int
}

// lookupTxnApp returns the application called name (a workload.Apps
// name), or an error wrapping workload.ErrUnknownApp that names it.
func lookupTxnApp(name string) (txnApp, error) {
	switch name {
	case workload.StreamingLedger:
		return txnApp{title: "Streaming Ledger", plugin: "ledger", events: 40 * DefaultTxnPunctuation}, nil
	case workload.GrepSum:
		return txnApp{title: "GrepSum", plugin: "grepsum", events: 60 * DefaultTxnPunctuation}, nil
	case workload.NonGrepSum:
		return txnApp{title: "NonGrepSum", plugin: "nongrepsum", events: 30 * DefaultTxnPunctuation}, nil
	case workload.TollProcessing:
		return txnApp{title: "Toll Processing", plugin: "toll", events: 60 * DefaultTxnPunctuation}, nil
	case workload.OnlineBidding:
		return txnApp{title: "Online Bidding", plugin: "bidding", events: 10 * DefaultTxnPunctuation}, nil
	}
	return txnApp{}, fmt.Errorf("bench: txn: %w %q (want one of %s)", workload.ErrUnknownApp, name, strings.Join(workload.Apps(), ", "))
}

// TxnPluginDir returns the directory, under plugins/, of the transactional
// plugin of application app (a workload.Apps name): the caller builds it
// and passes the module as TxnOptions.Plugin.
func TxnPluginDir(app string) (string, error) {
	a, err := lookupTxnApp(app)
	if err != nil {
		return "", err
	}
	return a.plugin, nil
}
