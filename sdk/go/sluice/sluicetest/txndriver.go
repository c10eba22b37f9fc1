package sluicetest

import (
	"errors"

	"github.com/sluicehq/sluice/sdk/go/sluice"
	"github.com/sluicehq/sluice/sdk/go/sluice/internal/bridge"
)

// TxnDriver runs a transactional operator's handlers (a sluice.Txn) in this
// process, without the ABI: Plan returns the operations a Plan handler
// declares, a TxnWorker computes one operation's function over a
// TxnAccess, and Post gathers the outputs of the Post handler. It is the
// SDK's half of a native transactional harness; the other half, a
// scheduler, belongs to the host (package host/plugin/hosttest of the
// Sluice module runs a TxnDriver on the host's scheduler as its TxnLogic).
// Plan and Post are called by one goroutine at a time; each TxnWorker by
// one.
type TxnDriver = bridge.TxnDriver

// TxnWorker computes operations for one scheduler worker: Apply calls the
// function of the operation an abi.ApplyRequest describes, as
// sluice_apply would, with a TxnAccess for its Get, Put and Delete calls.
type TxnWorker = bridge.TxnWorker

// TxnAccess is the tracked state access of one operation in a native run:
// Get, Put and Delete of a key of a table handle. A scheduler implements
// it; an error means the access was refused.
type TxnAccess = bridge.TxnAccess

// NewTxnDriver returns a TxnDriver for op, whose TableID calls resolve
// against tables (handle i is tables[i]). It fails when op is not usable
// (a nil Plan, no Funcs, a nil function), and in a WebAssembly build, which
// has no native guest core.
func NewTxnDriver(op sluice.Txn, tables []string) (TxnDriver, error) {
	if bridge.NewTxnDriver == nil {
		return nil, errors.New("sluicetest: package sluice did not install its native transactional driver (a WebAssembly build?)")
	}
	return bridge.NewTxnDriver(op, tables)
}
