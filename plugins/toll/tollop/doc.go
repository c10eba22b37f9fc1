// Package tollop is MorphStream's Toll Processing ("TP", after Linear
// Road) as a Sluice transactional operator written with the Go SDK: the
// one source that plugins/toll compiles to WebAssembly and that tests and
// benchmarks run natively (hosttest.TxnLogic).
//
// # State and events
//
// Events, keys and values are those of txn/apps/toll/event: tables
// "segment_speed" (handle 0: a segment's sum and count of valid speeds)
// and "segment_count" (handle 1: the set of vehicles seen on the segment,
// a 128-bit bitmap), declared by the pipeline in that order; keys the
// 8-digit decimal of the segment.
//
// # Operations
//
// A position report is two read-modify-writes of its segment: add the
// speed to its statistics (FnSpeed), then add the vehicle to its set
// (FnVehicle). Both are conditioned on the report being valid (a speed of
// at most event.MaxSpeed): an invalid report aborts at the first. Each
// operation first spins for the event's busy-ns (plugins/internal/busy).
//
// # Outputs
//
// One record per event, with the event's key and time, whose value is a
// Result in text (AppendResult, ParseResult): for a committed report, the
// segment's average speed (two decimals) and its number of distinct
// vehicles, the report included; for an aborted one the word alone.
//
//	committed 121.50 17
//	aborted
//
// An event that does not decode declares no operation and is dead-lettered
// by Post with the decoder's error, which names the field at fault.
package tollop
