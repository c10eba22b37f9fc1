// Package sluicetest runs a Sluice plugin's operator in ordinary Go tests,
// with the host's semantics, against in-memory state.
//
//	func TestCount(t *testing.T) {
//		h := sluicetest.New().Declare("counts")
//		out, rejects, err := h.Process(sluicetest.KV("the", "the"), sluicetest.KV("the", "the"))
//		// out[1].Value == "2", rejects empty, err nil
//		v, _ := h.State("counts", "the") // "2"
//	}
//
// New drives the handler the test binary registered (the plugin package's
// init functions register it when its tests run) through the SDK's own guest
// core: the batch is encoded as the host encodes it, copied into a region
// from the SDK's allocator, decoded and processed by the same code the
// WebAssembly exports call, and the outputs are decoded from the SDK's
// encoding. So a native test exercises the SDK's encoding too, not a
// shortcut. Its host functions are an in-memory fake that checks what the
// real host checks.
//
// LoadWasm loads the plugin's compiled module into the real host instead
// (package host/plugin on wazero, with its defaults), and WasmModule.New
// gives a Harness with the same methods whose batches go through
// (*plugin.Instance).Process: outputs, rejects, traps, and the recovery
// from them are the host's own, and the harness's tables are the
// plugin.State the host reads and writes. So the same test checks the
// module the host will run.
//
// Both harnesses follow the host's rules, the native one by mirroring
// plugin.Instance.Process step by step: a record the operator rejects
// leaves no trace (its outputs are dropped, a keyed operator's state writes
// undone); a batch whose call fails (a trap, an error status) is undone
// and its records run again one call each, so that only the failing ones
// become Rejects, whose Err says why; after a trap the instance is
// replaced by a fresh, reconfigured one while state, which the host owns,
// is kept. A native harness is keyed when it has declared tables and
// stateless otherwise; a WebAssembly harness has the kind its module was
// loaded as.
//
// Transactional operators (sluice.Transactional) run on the host's own
// scheduler, package host/txnop, as a txnop.Logic: TxnLogic runs a
// sluice.Txn's handlers natively, without the ABI, and LoadTxnWasm loads
// the compiled module through the host (txnop.NewWasm). A test runs the
// same events through a txnop.Operator with either, with any strategy and
// number of workers, and compares what Process returns; TxnLogic is also
// the native-Go baseline of the benchmarks.
//
// Design decisions:
//
// The WebAssembly harness runs the host's code rather than a test double
// of it, so that a module that passes here behaves the same in a pipeline,
// and a change of the host's semantics reaches plugin tests at once. This
// makes sluicetest, alone in sdk/, import the host (host/plugin and
// runtime): acceptable because it is a test-only package that is never
// compiled into a guest, while package sluice, which guests are built
// from, imports nothing of the host. The native harness cannot use
// plugin.Instance (there is no module to instantiate), so it repeats the
// host's recovery algorithm in a few lines; the example plugins' tests run
// every case both ways and require identical results, which keeps the two
// in step.
//
// Every native harness runs the one handler the test binary registered,
// and a handler typically keeps its configuration in a package variable.
// So native guest calls from all harnesses are serialised on one
// process-wide lock, and a harness re-applies its configuration before
// processing when another harness configured the handler since: two
// harnesses with different configurations behave as two instances would.
//
// TxnLogic does not go through a Harness: a transactional operator's batch
// is planned, scheduled and posted by txnop, whose Operator a test drives
// directly, and whose results (outcomes, change set, outputs) are what a
// test compares. It reaches the SDK's handlers through the internal bridge
// package, as the native Harness does, and fills each operation's request
// from the scheduler's txn.Access, so that its only cost per operation over
// a hand-written txn.Apply is the dispatch (BenchmarkTxnLogicApply).
//
// A WebAssembly harness's guest log messages reach Harness.Logs through
// the slog logger the plugin is loaded with: the host logs them with the
// ctx of the guest call, and the harness's ctx carries its log. Messages
// the host writes about the plugin are not the operator's and are left out.
package sluicetest
