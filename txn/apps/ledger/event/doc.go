// Package event is the wire format of Streaming Ledger (MorphStream's "SL"
// benchmark): its events, its state values and its keys. The workload
// generator (txn/apps/workload) writes these events; the Streaming Ledger
// operator, native or compiled to Wasm, reads them. The package is kept
// light for the Wasm guest: it imports no part of the host and nothing that
// reflects, and decoding allocates nothing.
//
// # State
//
// Two tables, Accounts ("accounts") and BookEntries ("book_entries"), each
// with one entry per key in [0, keys): the key is the KeyWidth-digit decimal
// of its index (AppendKey), the value a balance, an int64 in 8 bytes little
// endian (AppendBalance). Every entry starts at InitialBalance.
//
// # Events
//
// A deposit credits Amount to Account and to Book: two read-modify-writes.
// A transfer moves Amount from Account and Book to DstAccount and DstBook:
// four read-modify-writes. It commits only when the source account and the
// source book entry both hold Amount before the transfer; otherwise the
// whole transaction aborts, so no balance goes negative. The generator
// realises its abort ratio MorphStream's way: an aborting transfer carries
// AbortAmount, which no balance reaches; and the others always commit,
// since balances start high enough (InitialBalance) that none runs out.
//
// Encoding (v1), after the tag byte 'L': a flags byte (bit 0: deposit; the
// other bits must be 0), then unsigned varints: account, book, and for a
// transfer dst account and dst book; then amount and busy-ns.
package event
