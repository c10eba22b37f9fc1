// Package event is the wire format of GrepSum (MorphStream's "GS"
// benchmark): its events, its state values and its keys. The workload
// generator (txn/apps/workload) writes these events; the GrepSum operator,
// native or compiled to Wasm, reads them. The package is kept light for the
// Wasm guest: it imports no part of the host and nothing that reflects.
//
// # State
//
// One table, Table ("micro"), with one entry per key in [0, keys): the key
// is the KeyWidth-digit decimal of its index (AppendKey), the value an int64
// in 8 bytes little endian (AppendValue). Key k starts at InitialValue(k),
// that is k.
//
// # Events
//
// An event is a transaction of len(Ops) operations, run in order. Operation
// j writes Ops[j].Key and reads the keys Ops[j].Reads (parametric
// dependencies; a key may repeat, and may be the written key). Its function,
// the benchmark's reference semantics that every implementation follows:
//
//	new value of Key = old value of Key + Σ values of Reads + 1   (int64, wrapping)
//
// after BusyNanos of busy work. MorphStream averages the keys instead; a sum
// plus one makes every operation change state, so a lost or repeated update
// shows in the final state. When Abort is set, every operation's condition
// fails, so the transaction aborts whichever operation runs first
// (MorphStream's SUM(-1)); the generator sets it to realise its abort ratio.
//
// Encoding (v1), after the tag byte 'G': a flags byte (bit 0: abort; the
// other bits must be 0), then unsigned varints: busy-ns, the number of
// operations, and per operation its key, its number of reads and the read
// keys.
package event
