// Package grepsumop is MorphStream's GrepSum ("GS") as a Sluice
// transactional operator written with the Go SDK: the one source that
// plugins/grepsum compiles to WebAssembly and that tests and benchmarks run
// natively (hosttest.TxnLogic). NonGrepSum (plugins/nongrepsum) builds on
// it: its deterministic operations are GrepSum's (Sum, Abort) and its
// outputs are GrepSum's Result.
//
// # State and events
//
// Events, keys and values are those of txn/apps/grepsum/event: one table,
// "micro" (handle 0, the only table the pipeline declares), values int64
// in 8 bytes little endian, keys the 8-digit decimal of the index.
//
// # Operations
//
// An event's operations are declared in its order, each writing its key
// and declaring its reads as parametric dependencies, with the benchmark's
// function (Sum): new value = own value + Σ values read + 1, wrapping. An
// event flagged to abort declares every operation with Abort instead,
// whose condition always fails, so the transaction aborts at whichever
// operation runs first (MorphStream's SUM(-1)). Each operation first spins
// for the event's busy-ns (plugins/internal/busy).
//
// # Outputs
//
// One record per event, with the event's key and time, whose value is a
// Result in text (AppendResult, ParseResult): for a committed event, each
// operation's key (its index, in decimal) and the value it wrote, in
// operation order; for an aborted event the word alone.
//
//	committed 17=2210 3=5
//	aborted
//
// An event that does not decode declares no operation and is dead-lettered
// by Post with the decoder's error, which names the field at fault.
package grepsumop
