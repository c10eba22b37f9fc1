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
// Keys are interned in the Plan's arena, an allocation per 64 KiB of keys
// and arguments rather than one per key; the operations and their read
// lists are carved from chunks the Plan keeps and reuses from batch to
// batch, so that planning a batch allocates nothing else once the chunks
// have grown. A Wasm plan decodes the guest's declarations in place, in
// guest memory, during its txn_plan call, and builds each event's
// operations straight in those chunks: it copies only the key and argument
// bytes, which must outlive the guest's memory (the TPG, the Result's change
// set and a History keep them). A Result's keys and values are valid until
// the next Process; the plan's operations, until the next plan.
package txnop
