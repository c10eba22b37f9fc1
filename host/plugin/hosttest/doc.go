// Package hosttest runs plugin operators in the real host for tests: a
// compiled module through package plugin, and a transactional operator on
// the host's scheduler, package txnop.
//
// LoadWasm loads a plugin's compiled module into the host (package plugin
// on wazero, with its defaults), and WasmModule.New gives a Harness whose
// batches go through (*plugin.Instance).Process: outputs, rejects, traps,
// and the recovery from them are the host's own, and the harness's tables
// are the plugin.State the host reads and writes. Its methods and result
// types are those of the Go SDK's native harness (package sluicetest of
// module github.com/sluicehq/sluice/sdk/go), so a test runs one case both
// ways and compares.
//
// Transactional operators (sluice.Transactional) run on txnop as a
// txnop.Logic: TxnLogic runs a sluice.Txn's handlers natively, without the
// ABI, through the SDK's sluicetest.TxnDriver, and LoadTxnWasm loads the
// compiled module through the host (txnop.NewWasm). A test runs the same
// events through a txnop.Operator with either, with any strategy and
// number of workers, and compares what Process returns. TxnLogicParts is
// TxnLogic with an operator value per part of a batch, so that its plan and
// post run in parts on the workers, as a WebAssembly operator's do on its
// instances: it is the native-Go baseline of the benchmarks.
//
// Design decisions:
//
// The harness runs the host's code rather than a test double of it, so
// that a module that passes here behaves the same in a pipeline, and a
// change of the host's semantics reaches plugin tests at once. It lives in
// the host's module, not in the SDK's: the SDK's module depends on the abi
// module alone, so that a plugin author's module graph holds only what a
// guest needs, and the host's dependencies (Pebble, nats-server,
// wasmtime-go, Prometheus) stay out of it. Plugin authors outside this
// repository test their compiled module with `sluice plugin test`.
//
// TxnLogic fills each operation's request from the scheduler's txn.Access,
// so that its only cost per operation over a hand-written txn.Apply is the
// dispatch (BenchmarkTxnLogicApply).
//
// A harness's guest log messages reach Harness.Logs through the slog
// logger the plugin is loaded with: the host logs them with the ctx of the
// guest call, and the harness's ctx carries its log. Messages the host
// writes about the plugin are not the operator's and are left out.
//
// The package also holds the Go SDK's tests that need the host: the SDK's
// guests compiled to WebAssembly and run through package plugin
// (sdk_test.go), and its benchmarks against a bare wazero embedding.
package hosttest
