// Package bench measures the figures a user of Sluice asks about first, on
// the real code paths, and checks them against the project's targets. It is
// what `sluice bench` runs.
//
// Three suites, the transactional benchmark (RunTxn, `sluice bench txn`)
// and the swap benchmark (RunSwap, `sluice bench swap`):
//
//   - wasm: the per-record cost of a batched map in WebAssembly (the upper
//     plugin through plugin.Instance.Process) against the same function in
//     native Go (Plugins.UpperNative, which the caller gives: this package
//     imports no plugin's code), with the output copied as the host
//     copies it. The Wasm side runs on an engine with the default call
//     timeout and on one with the timeout off, because the deadline makes
//     wazero check for cancellation inside guest code.
//   - nats: messages per second through NATS -> Wasm map -> NATS on an
//     embedded server, driven by the real executor (exec.Job with a
//     natsconn.CoreSource and CoreSink), and, in the same run, raw NATS
//     publish -> subscribe of the same messages, so the pipeline is read as
//     a ratio of what the machine's NATS can do at that moment.
//   - keyed: the generator -> wordcount plugin (keyed state) -> a discarding
//     sink through exec.Job with a Pebble-backed state.Store: records per
//     second and the cost of one commit.
//   - txn (txn.go): an application's workload (sl, gs, ngs, tp, ob) through
//     host/txnop.Operator once per strategy, the plugin in WebAssembly and
//     the same source natively, interleaved batch by batch, each run checked
//     against the serial strategy; throughput, latency and where the time
//     goes. Its design notes are at the top of txn.go.
//   - swap (swap.go): a map (upper), keyed (wordcount) or transactional
//     (ledger) operator in exec.Job, fed by a paced generator (every event
//     due at a fixed time, so its latency counts from then and a pipeline
//     that falls behind shows it), while its module is swapped for a new
//     version (compiled afresh, as a new release would be) several times.
//     The sink checks by position that every event came out exactly once;
//     the report compares the p99 latency of the events due around the
//     swaps with the steady state's, and gives the pause.
//
// Design decisions:
//
// The plugins arrive as compiled bytes (Plugins): the package does not build
// them, so it depends neither on a Go toolchain nor on a source tree; the
// command builds them from source and the tests build them once.
//
// The machine is noisy (shared cores): every suite runs several rounds and
// reports the median, and the variants being compared are interleaved round
// by round (native, Wasm with timeout, Wasm without; raw NATS, pipeline), so
// a burst of load from elsewhere hits both sides of a comparison rather
// than one. The report states the machine, the load average before and
// after, and the date.
//
// No message may be lost and no figure may come from a wrong result: every
// round checks its output (counts, content, dead letters, the sum of the
// committed counts) and fails the run loudly rather than report a rate. The
// NATS publisher bounds the messages in flight (published but not yet
// received at the end) to a window, so the slow-consumer limits of the
// client and the server are never reached; an asynchronous NATS error on
// any connection also fails the round.
//
// The pipeline suites run the plugins as `sluice run` does, with the
// default call timeout; Options.NoCallTimeout turns it off for them, so that
// the cost of the deadline to a whole pipeline can be read off two runs.
//
// The results are plain structs with JSON tags, so `sluice bench --json`
// output is the Report itself; Report.WriteTable prints the same figures as
// aligned tables.
package bench
