// Package nongrepsumop is MorphStream's NonGrepSum ("NGS", the benchmark
// of non-deterministic state access) as a Sluice transactional operator
// written with the Go SDK: the one source that plugins/nongrepsum compiles
// to WebAssembly and that tests and benchmarks run natively
// (hosttest.TxnLogic). It is GrepSum (package grepsumop) plus operations
// whose key is known only when they run.
//
// # State and events
//
// Events, keys and values are those of txn/apps/nongrepsum/event: one
// table, "micro" (handle 0, the only table the pipeline declares), values
// int64 in 8 bytes little endian, keys the 8-digit decimal of the index.
//
// # Operations
//
// A deterministic operation is GrepSum's (grepsumop.Sum). A
// non-deterministic one (FnNonDet) is declared with Planner.NonDet over the
// table, with the pointer key as its first declared read and the event's
// reads after it; when it runs, it reads the pointer's value p, computes
// the target T = event.Target(p, keys) (p mod the key space), reads T with
// Call.Get and writes T's value plus the other reads plus one with
// Call.Put: the host records both accesses and orders the operation
// against every other operation on the table. (When T is the pointer or
// another declared read, the host answers the Get from the declared reads
// and does not list it in the Outcome's Gets; Post reads it there.) An event flagged to abort
// declares every operation with grepsumop.Abort. Each operation first
// spins for the event's busy-ns (plugins/internal/busy).
//
// # Outputs
//
// One record per event, with the event's key and time, whose value is a
// grepsumop.Result in text: for a committed event each operation's key
// written (for a non-deterministic one, the target) and its new value, in
// operation order; for an aborted event the word alone.
//
//	committed 17=2210 3=5
//	aborted
//
// An event that does not decode declares no operation and is dead-lettered
// by Post with the decoder's error, which names the field at fault.
package nongrepsumop
