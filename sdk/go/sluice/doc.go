// Package sluice is the Go SDK for writing Sluice operators: plain Go,
// compiled to a WebAssembly module that the Sluice host runs in a sandbox.
//
// # A plugin in one file
//
// A plugin is a main package that registers exactly one handler from an init
// function:
//
//	package main
//
//	import (
//		"strconv"
//
//		"github.com/sluicehq/sluice/sdk/go/sluice"
//	)
//
//	func main() {}
//
//	func init() {
//		sluice.Keyed(func(r sluice.Record, st *sluice.State, out *sluice.Emitter) error {
//			var n uint64
//			if v, ok := st.Get(); ok {
//				n, _ = strconv.ParseUint(string(v), 10, 64)
//			}
//			v := strconv.AppendUint(nil, n+1, 10)
//			st.Put(v)
//			out.Emit(sluice.Record{Key: r.Key, Value: v, Time: r.Time})
//			return nil
//		})
//	}
//
// Build it with `sluice plugin build DIR`, or by hand:
//
//	GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared -o op.wasm .
//
// # Why init and not main
//
// -buildmode=c-shared on wasip1 makes a WASI reactor. Its _initialize export,
// which the host calls once per instance, starts the Go runtime and runs
// every package's initialisation (package variable initialisers, then init
// functions, in dependency order) and then returns to the host without
// calling main.main: the Go runtime does the same for every c-shared and
// c-archive build (see runtime.main). So a handler registered in main would
// never be registered. Registering from a package variable's initialiser
// works as well, since it runs in the same phase, but init is the idiomatic
// place. main must exist, and stays empty.
//
// # Handlers
//
// One handler per plugin, of one of five kinds, matching the operator's kind
// in the pipeline:
//
//   - Map: one output per input. MapInPlace registers the same kind of
//     handler in the form that changes the record it is given, through a
//     pointer, rather than returning one: the faster form in WebAssembly.
//   - Filter: the input itself, or nothing. A kept record is forwarded as it
//     was encoded, without being re-encoded.
//   - FlatMap: any number of outputs per input, through an Emitter.
//   - Keyed: like FlatMap, plus a State bound to the record's key.
//   - Transactional: each input record is a transaction over shared
//     tables (see below).
//
// Configure optionally registers a function that receives the operator's
// config from the pipeline file, as JSON, before the first record.
//
// # Transactional operators
//
// A Txn's events are transactions that any key of the operator's tables may
// serve; the host runs a batch of them on several workers with the result
// of running them one by one, in order (MorphStream's model, see
// docs/transactions.md). Its Plan declares each event's operations through
// a Planner: which key each writes (or, for a non-deterministic one, which
// table it may touch), which other keys it reads, which function of Funcs
// computes it and with which argument. The host builds the dependency graph
// from the declarations and calls each operation's function (a TxnFunc)
// when its inputs are known, with a Call that reads them; the function
// returns an Effect: Write, Keep, Delete, Abort (the transaction is undone)
// or Fail (the batch fails). Every state access goes through the host,
// which refuses one outside the declaration (ErrUndeclared). Post then
// sees each event's Outcome and emits outputs. Functions run any number of
// times, on any worker, concurrently: they must be deterministic and keep
// nothing of a Call.
//
// # Errors, panics and dead letters
//
// A handler that returns an error dead-letters its input record, and the
// record leaves no trace: the SDK calls the host's reject with the error's
// text and discards what the handler emitted for that record, and the host
// undoes the state the handler wrote for it; the batch goes on. (The host
// tells a rejected record's writes from those of the rest of its batch by
// undoing the batch and running it again one record per call, so the other
// records of a keyed batch with a rejected record are processed twice.) A
// panic is different: it traps the whole guest call; the host then undoes
// the batch's state changes, drops its outputs, replaces the instance and
// re-runs the batch's records one at a time, so that only the record that
// panics is dead-lettered, with the panic message from the guest's stderr.
// Use errors for bad input and panics for bugs and misconfiguration
// (State.Table panics for an undeclared table).
//
// # Memory and lifetimes
//
// The host writes each input batch into guest memory once, and the records
// a handler receives alias that memory: Key, Value and the headers are valid
// only until the handler returns (Record.Clone copies them). A handler may
// modify them in place. Emitter.Emit and the Map and Filter results are
// encoded into the SDK's output buffer at once, so what they point to may be
// reused immediately. State.Get returns a buffer that the next Get reuses.
// Outputs reach the host in one emit call per batch, or one per ~1 MiB of
// output, always between two records.
//
// A Map or MapInPlace output that is its input record, with its bytes
// changed in place or not (the same Key, Value and Headers slices, the same
// Time), is not encoded again: the SDK forwards the input's encoding, as it
// does a Filter's kept records, and a batch whose records are all forwarded
// is handed back to the host where it lies. Upper-casing a value in place,
// masking bytes, returning the record after looking at it: these cost no
// output encoding.
//
// # Determinism
//
// An operator may run a record more than once (after a failure or a
// rejected record in its batch, on another worker, in a fresh instance), so
// it must compute the same outputs from the same input and state. The
// host's sandbox gives the guest no wall clock, no entropy, no files, no
// network and no environment unless the pipeline grants them: time.Now
// reads the time of the call's event (a batch's first record; a
// transactional apply's own event) and crypto/rand draws from a stream
// seeded from that event, so the same call re-run draws the same. Go's
// global math/rand functions and map iteration order are seeded once per
// instance and are not deterministic: seed a generator of your own from
// crypto/rand within the call, and sort what you emit from a map. Use
// Record.Time for each record's time (abi/ABI.md section 6).
//
// # Testing
//
// The same code builds natively, where package
// github.com/sluicehq/sluice/sdk/go/sluice/sluicetest runs the registered
// handler against an in-memory host with plain `go test`, through the same
// encoding, allocation and batch code the WebAssembly exports use, with the
// host's rules for rejects and failures. It can also load the compiled
// .wasm into the real host and run it under the same harness.
//
// # Performance
//
// The per-record path makes no allocation for handlers that allocate none
// themselves (TestNoAllocationPerRecord), and it is written for Go's
// WebAssembly code under wazero, where every function call, every loop
// iteration, every memory access (the engine bounds-checks each) and every
// value kept across a call costs several times what it does natively. The
// SDK decodes records with its own codec, one call per record for the
// handler and none for the SDK in the Map and Filter loop, checked against
// package abi's by tests and fuzz tests; it uses abi.Decoder only to explain
// a malformed batch. The forwarding of unchanged records (see above) spares
// the output encoding. A MapInPlace handler spares the copies of a Record
// passed and returned by value: in WebAssembly about half of what an
// identity Map costs (BenchmarkWasmMap), natively nothing
// (BenchmarkProcess).
//
// # Design decisions
//
// The exports (sluice_abi_version, sluice_alloc, sluice_configure,
// sluice_process, and sluice_plan, sluice_apply and sluice_post for
// transactional operators) live in this package, behind the wasip1 build
// tag, so a plugin author writes none of the ABI. Every module therefore
// exports all of them and imports the transactional host functions too; the
// host calls only those of the operator's kind, and the guest answers a
// call for another kind with an error naming the handler it registered.
// Since the exports cannot say which handler that is, the module also
// exports sluice_kinds, which reports it: `sluice plugin build` writes its
// answer into the module's sluice.kinds custom section, and the host then
// refuses, at load, a pipeline that gives the operator another kind
// (abi/ABI.md section 12). It exports sluice_features too, declaring that
// it reads the input each record arrived on (Record.Input; abi/ABI.md
// section 9.1), whatever handler is registered: a handler that ignores
// Record.Input loses nothing. A module is one operator instance
// with its own memory, so the handler registry and the guest state are
// process-wide by nature: the one place this code base keeps package-level
// state. In native builds, sluicetest reaches the same guest core through an
// internal package rather than through exported API.
//
// sluice_alloc hands out one input region that is reused from batch to
// batch; a second request before the first region is consumed gets a fresh
// region, so the host may allocate for several arguments of one call.
//
// Records are passed to Map, Filter, FlatMap and Keyed handlers by value,
// which keeps handlers plain functions. Go's WebAssembly code moves an
// 80-byte Record with calls to memmove, and zeroes the temporary that
// receives a returned one with a loop of them: passing and returning a
// Record by value costs about 60 ns per record under wazero, natively next
// to nothing. MapInPlace exists for the handlers that care; it hands out
// the address of one Record, owned by the SDK and decoded in place from
// record to record, which is why the SDK keeps that Record in the heap (a
// pointer handed to an unknown function escapes) and stores its fields only
// when needed (each pointer store into the heap pays a write-barrier check).
//
// The Map and Filter loop is one function with the decoding written out in
// it rather than called: a call per record for the SDK's own work would cost
// about as much as the handler's. decodeRecord, which FlatMap and Keyed use,
// holds the same code; FuzzProcess checks both against abi.Decoder.
//
// Transactional operators follow the same rule. sluice_apply runs once per
// operation execution, where abi.DecodeApplyRequest would cost 430 to 850 ns
// in Go's WebAssembly code against a 30 ns guest call; declarations
// (abi.AppendOpDecl) and outcomes (abi.OutcomeDecoder) cost as much per
// operation. txncodec.go has the SDK's own decoder and encoder for them,
// with no call per field, checked against package abi's by property and
// fuzz tests (FuzzDecodeApply, FuzzOutcomeDecoder). An Effect is four words
// (the value as a pointer and a 32-bit length), and Write, Call.Own and
// Call.Read have no call in them, so that Go inlines them into a function.
// Plan's declarations reach the host in one txn_plan call per batch (or per
// MiB), not one per operation.
//
// The same handlers run natively through sluicetest.NewTxnDriver (the
// host's test harness runs the driver on the host's scheduler) without the
// ABI: the native-Go baseline a WebAssembly build is measured against, and
// the reference it is tested against. A Call then
// reads a request the adapter fills from the scheduler's txn.Access, and
// reaches it for Get, Put and Delete through an internal interface, so that
// this package imports nothing of the host.
package sluice
