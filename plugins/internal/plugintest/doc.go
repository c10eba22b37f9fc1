// Package plugintest holds what the example plugins' tests share: building
// the plugin in the current directory to WebAssembly once per test binary,
// loading it into the real host (through hosttest.LoadWasm or
// hosttest.LoadTxnWasm), and checking that the compiled module behaves
// exactly as the native build under the same batches (a metamorphic test
// of the plugin, of the SDK, and of the native harness against the host
// whose rules it mirrors).
//
// For the transactional benchmark plugins (ledger, grepsum, nongrepsum,
// toll, bidding) it adds: TxnWorkload, a txn/apps/workload stream cut into
// batches with its tables' initial state; RunTxn, which runs one through a
// txnop.Operator and records a TxnTrace (commits, change sets, outputs,
// rejects, final state); CheckStrategies, which requires every strategy,
// with 1 and 2 workers, natively and in WebAssembly, to give the native
// serial run's trace; and BenchTxn, the ns/event benchmark. A WebAssembly
// Logic is loaded once per worker count and reused by every run, because
// compiling the module costs about a second on the reference machine and a
// test makes sixty runs.
//
// Like hosttest, it imports the host: it is test support, never compiled
// into a plugin.
package plugintest
