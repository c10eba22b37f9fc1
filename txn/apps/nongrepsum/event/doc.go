// Package event is the wire format of NonGrepSum (MorphStream's "NGS"
// benchmark of non-deterministic state access): its events, its state
// values and its keys. The workload generator (txn/apps/workload) writes
// these events; the NonGrepSum operator, native or compiled to Wasm, reads
// them. The package is kept light for the Wasm guest: it imports no part of
// the host and nothing that reflects.
//
// # State
//
// As GrepSum's: one table, Table ("micro"), with one entry per key in
// [0, Keys): the key is the KeyWidth-digit decimal of its index (AppendKey),
// the value an int64 in 8 bytes little endian (AppendValue), starting at
// InitialValue(k) = k.
//
// # Events
//
// An event is a transaction of len(Ops) operations, run in order. A
// deterministic operation (NonDet false) is a GrepSum operation:
//
//	new value of Key = old value of Key + Σ values of Reads + 1   (int64, wrapping)
//
// A non-deterministic operation (NonDet true) writes a key that is known
// only when it runs: Key is a pointer. The operation reads the value p of
// Key, and the key it writes is
//
//	T = Target(p, Keys) = uint64(p) mod Keys
//
// which it updates as a deterministic operation would update Key:
//
//	new value of T = old value of T + Σ values of Reads + 1   (int64, wrapping)
//
// Its Reads are declared keys, read directly; only the pointer's target is
// non-deterministic. So the operation reads Key, reads and writes T, reads
// Reads, all in the one table, and a scheduler must order it against every
// earlier and later operation on that table. MorphStream's NonGrepSum also
// dereferences its reads and averages; here the value is a sum, and the
// modulo keeps every target inside the table whatever the sums grow to.
//
// When Abort is set, every operation's condition fails, so the transaction
// aborts whichever operation runs first.
//
// Encoding (v1), after the tag byte 'N': a flags byte (bit 0: abort; the
// other bits must be 0), then unsigned varints: busy-ns, keys, the number of
// operations; per operation a flags byte (bit 0: non-deterministic), its
// key, its number of reads and the read keys.
package event
