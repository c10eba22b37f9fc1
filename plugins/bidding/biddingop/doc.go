// Package biddingop is MorphStream's Online Bidding ("OB") as a Sluice
// transactional operator written with the Go SDK: the one source that
// plugins/bidding compiles to WebAssembly and that tests and benchmarks run
// natively (hosttest.TxnLogic).
//
// # State and events
//
// Events, keys and values are those of txn/apps/bidding/event: one table,
// "goods" (handle 0, the only table the pipeline declares), each item's
// value its ask price and quantity (event.Good); keys the 8-digit decimal
// of the item.
//
// # Operations
//
// An event is one read-modify-write per item, in its order, all of the
// event's kind:
//
//   - buy (FnBuy): the item's ask price must be at most the bid and its
//     quantity at least the quantity bought, which it then loses; any item
//     failing its condition aborts the whole purchase, so a quantity never
//     goes negative;
//   - alert (FnAlert): the item's ask price becomes the alert's;
//   - top-up (FnTopUp): the item's quantity grows by the top-up's, or the
//     event aborts when that would overflow an int64.
//
// Each operation first spins for the event's busy-ns
// (plugins/internal/busy).
//
// # Outputs
//
// One record per event, with the event's key and time, whose value is a
// Result in text (AppendResult, ParseResult): the kind, the outcome and,
// for a committed buy, the amount paid: the sum over its items of the ask
// price times the quantity bought.
//
//	buy committed 152
//	buy aborted
//	alert committed
//	top-up committed
//
// An event that does not decode declares no operation and is dead-lettered
// by Post with the decoder's error, which names the field at fault.
package biddingop
