package bridge

import "github.com/sluicehq/sluice/abi"

// TxnHost is the set of host functions of transactional operators
// (abi.FuncTxnPlan and the tracked state accesses), as the guest core calls
// them. A Host that also implements TxnHost can run a transactional
// operator's exports. Slices passed in are guest memory: an implementation
// must not keep them after it returns.
type TxnHost interface {
	// TxnPlan receives encoded operation declarations (abi.AppendOpDecl).
	TxnPlan(decls []byte)
	// TxnGet reads a key during sluice_apply with StateGet's buffer
	// protocol; it returns abi.StatusNotFound or abi.StatusUndeclared.
	TxnGet(table int32, key, buf []byte) int32
	// TxnPut writes a key during sluice_apply of a non-deterministic
	// operation; it returns abi.StatusOK or abi.StatusUndeclared.
	TxnPut(table int32, key, value []byte) int32
	// TxnDelete deletes a key, as TxnPut.
	TxnDelete(table int32, key []byte) int32
}

// TxnAccess is the tracked state access of one operation in a native run,
// without the ABI: sluicetest implements it over a txn.Access. Table
// handles are uint32 as in txn.Key. Values returned alias the scheduler's
// versions and must not be modified; keys and values passed in may be
// reused by the caller after the call returns. An error means the access
// was refused.
type TxnAccess interface {
	Get(table uint32, key []byte) ([]byte, bool, error)
	Put(table uint32, key, value []byte) error
	Delete(table uint32, key []byte) error
}

// TxnDriver runs a transactional operator's handlers (a sluice.Txn) in
// this process, without the ABI, for sluicetest's native txnop.Logic. Plan
// and Post are called by one goroutine at a time; each TxnWorker by one.
type TxnDriver interface {
	// Plan runs the Plan handler on event i and returns the operations it
	// declared, valid until the next call, or the error that fails the
	// batch. Keys, arguments and reads are copies owned by the driver.
	Plan(i int, ev *abi.Record) ([]abi.OpDecl, error)
	// NewWorker returns a worker for one scheduler worker's applies.
	NewWorker() TxnWorker
	// BeginPost starts collecting a batch's outputs.
	BeginPost()
	// Post runs the Post handler on event i with its outcome; outputs are
	// gathered, those of an event whose handler fails are discarded and
	// its error returned.
	Post(i int, ev *abi.Record, o *abi.EventOutcome) error
	// Outputs returns the outputs gathered since BeginPost as an encoded
	// batch (origins are event indices), valid until the next BeginPost.
	Outputs() []byte
}

// TxnWorker computes operations on one scheduler worker.
type TxnWorker interface {
	// Apply calls the function of the operation q describes, as
	// sluice_apply would with q encoded (the own value and the values of
	// the declared reads included; the reads' keys may be left out), with
	// acc for Get, Put and Delete. It returns one of the abi.Apply* codes
	// and, for abi.ApplyWrite, the value (which the caller must copy
	// before the next Apply), or the error that fails the batch. q and what
	// it points to must stay unchanged during the call.
	Apply(q *abi.ApplyRequest, acc TxnAccess) (code int32, value []byte, err error)
}

// NewTxnDriver returns a driver for op, which must be a sluice.Txn, whose
// package-level TableID resolves names against tables (handle i is
// tables[i]). It is set by package sluice in native builds and is nil in
// WebAssembly builds. (The parameter is an any because this package cannot
// name package sluice's types.)
var NewTxnDriver func(op any, tables []string) (TxnDriver, error)
