// Package txnop runs transactional operators. An Operator takes a batch of
// events (input records, in timestamp order), has its Logic declare each
// event's operations (plan), schedules them on a txn.Scheduler over the
// committed state (apply, on the scheduler's workers), and hands each
// event's outcome back to the Logic, which emits output records (post).
// The caller commits the change set through state/ with the batch's source
// positions.
//
// A Logic is either a WebAssembly guest (one plugin instance per scheduler
// worker, so that applies run in parallel; see ABI.md, "Transactional
// operators") or native Go code, so that the same scheduler measures both.
//
// Keys are interned in the Plan's arena, one allocation per batch rather
// than one per key; a Result's keys and values are valid until the next
// Process.
package txnop
