// Package ledgerop is MorphStream's Streaming Ledger ("SL") as a Sluice
// transactional operator written with the Go SDK: the one source that
// plugins/ledger compiles to WebAssembly and that tests and benchmarks run
// natively (hosttest.TxnLogic), so that the two can be compared record
// for record and measured against each other.
//
// # State and events
//
// Events, keys and balances are those of txn/apps/ledger/event: tables
// "accounts" and "book_entries", declared by the pipeline in that order
// (the handles are the workload's table indices: a transactional guest
// uses handles directly, and the host fails a batch that names a table the
// operator does not have), balances int64 in 8 bytes little endian, keys
// the 8-digit decimal of the index.
//
// # Operations
//
// A deposit is two read-modify-writes: credit the account, then the book
// entry (FnCredit). A transfer commits only when the source account and
// the source book entry both hold the amount; otherwise the whole transfer
// aborts, so a transfer never takes a balance below zero. It is four
// operations, declared in MorphStream's order, each reading the source
// account's balance as a parametric dependency: debit the source book
// entry (FnDebitIfFunded: it aborts unless both the source account and its
// own balance, the book entry's, cover the amount), credit the destination
// account and book entry (FnCreditIfFunded: it aborts unless the source
// account covers the amount), and last debit the source account itself
// (FnDebitIfFunded on its own balance), so that the three others read the
// balances before the transfer. A transfer short of funds thus aborts at
// its first operation. An operation whose result would overflow an int64
// aborts too, so a balance never wraps. Each operation first spins for the
// event's busy-ns (plugins/internal/busy).
//
// # Outputs
//
// One record per event, with the event's key and time, whose value is a
// Result in text (AppendResult, ParseResult): the kind, the outcome and
// the balances the event read before it changed them, "-" for a balance
// its transaction never read (the operations after the one that aborted):
//
//	deposit committed <account> <book entry>
//	transfer committed|aborted <source account> <source book entry> <destination account> <destination book entry>
//
// An event that does not decode declares no operation and is dead-lettered
// by Post with the decoder's error, which names the field at fault.
package ledgerop
