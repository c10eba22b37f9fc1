// Package conformance checks that the guest SDKs of every language make
// operators that behave exactly as the Go ones: the same output records
// (key, value, time, headers, origin), the same dead letters with the same
// messages, and the same final state, byte for byte, on the same input.
//
// The operators live in plugins/conformance/<language>/<operator>/, one
// directory each, for language rust, c, assemblyscript and wat, and
// operator:
//
//	upper      a stateless map, as plugins/upper
//	enrich     a configured filter-and-enrich of JSON objects, as plugins/enrich
//	wordcount  a keyed count, as plugins/wordcount
//	ledger     the transactional Streaming Ledger, as plugins/ledger
//	wincount   an aggregate: a count and a sum per key and window, as plugins/wincount
//	winmedian  a window function: the median of a window, as plugins/winmedian
//	joiner     a join function: each pair's values joined, as plugins/joiner
//
// The Go versions are the plugins of those names in plugins/: they are the
// specification. The package has no code of its own, only tests:
//
//	go test ./plugins/conformance/                     the conformance test
//	go test -run X -bench . ./plugins/conformance/     the per-language benchmarks
//
// The test builds every operator with package sdk/build, as `sluice plugin
// build` does, runs each through the host (hosttest's harness over
// host/plugin for the batch kinds, host/txnop with two strategies and two
// workers for the ledger, host/plugin's AggAdd, AggMerge, AggFire and
// WindowFire for the window functions, Join for the join function), and
// compares every language's results with the Go operator's (for the window
// and join functions, with the expected results the Go operators give
// too). A language whose directory is absent is not tested, and
// a language present must implement all seven operators; a language whose
// toolchain is not installed is skipped, unless SLUICE_REQUIRE_TOOLCHAINS=1
// (CI sets it), when that fails the test.
//
// The benchmarks report, per language: each module's size, the time to
// compile and instantiate a module with and without wazero's compilation
// cache, the cost per record of a batched map (upper, batches of 256
// records of 64 bytes), and Streaming Ledger's throughput (events/s, two
// workers, strategy ns-op-lazy).
//
// Design decisions:
//
// The Go plugins, not a specification of each operator's output, are the
// oracle: they are tested on their own (plugins/*/main_test.go), and a
// metamorphic comparison finds every difference, including those nobody
// thought to specify (the text of a JSON syntax error, a count that
// overflows, the order of headers), which a hand-written expectation
// would miss.
//
// Every run builds the operators afresh, into a temporary directory, so
// go test never reports a cached result for the package: the operators'
// sources and the SDKs are read by the compilers, in other processes,
// which go test's cache does not see, and a cached result could be stale.
//
// Failures of a guest call (traps, error statuses) are compared by class,
// not text: the host's message for them carries the engine's stack trace,
// which differs between languages by construction. Dead letters an
// operator asks for are compared by text, byte for byte. A refused
// configuration is compared by refusal alone; its message is logged when
// it differs.
package conformance
