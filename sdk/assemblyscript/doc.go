// Package assemblyscript is the home of the AssemblyScript SDK for Sluice
// operators: the SDK itself is AssemblyScript (assembly/), installed and
// built with npm and asc as README.md says; this Go package holds no code,
// only the SDK's tests, which compile operators written with the SDK
// (testdata/, example/) and run them through the real host
// (hosttest, txnop), and its benchmarks.
//
// The tests skip themselves when AssemblyScript is not installed
// (node_modules/.bin/asc, from `npm install` in this directory), so that
// `go test ./...` passes on a machine without Node.js.
//
// # Design decisions
//
// Memory. Modules are built with `--runtime stub`: no garbage collector,
// the smallest and fastest code, and a heap that only grows. The SDK turns
// that heap into an arena reset on every guest call (assembly/arena.ts):
// what the module's top-level code and sluice_configure allocate lives as
// long as the instance; the input region lives until the next sluice_alloc
// (which is the ABI's lifetime rule, also for the apply region the host
// reuses); everything a call allocates is released when the next call
// starts. An operator therefore never runs out of memory however long it
// runs, at the price of one rule: nothing allocated during a call may be
// kept in a global for a later call (TestMemoryStaysFlat).
//
// Allocation. An allocation costs some 20 ns under wazero, as much as the
// rest of the per-record path, so the hot paths allocate nothing per
// record or per operation: the SDK reuses one Record (with its key and
// value Bytes), one State, one Call and one Outcome, repointed from record
// to record, and decodes apply requests and outcomes lazily, as Go's SDK
// reuses its Record for MapInPlace. Everything handed to a handler is
// therefore valid only during that handler call, as in every Sluice SDK.
//
// Exports. AssemblyScript exports from a module what its entry file
// exports, nothing else: the operator's index.ts re-exports the ABI exports
// of its kind with one line, exports/stream (map, filter, flatmap, keyed),
// exports/txn (transactional), exports/window (aggregate, window) or
// exports/join (join). A module then carries, and imports the host
// functions of, its kind only: a stateless module imports emit, reject
// and log.
//
// Errors. AssemblyScript has no exceptions worth the name (a throw is an
// abort, which `--use abort=` turns into a trap), so errors are messages:
// reject(msg) dead-letters the record or event being handled (a window
// function's window, a join's pair), Planner.fail(msg) fails a batch's
// plan, Effect.fail(msg) an operation, and a configure handler returns its
// error or null. Bugs trap.
//
// Messages. quote() reproduces Go's strconv.Quote (fmt's %q), with the
// printable-rune table of the Go that generated it (tools/genprint.go), so
// that an operator ported from Go dead-letters with byte-identical
// messages: the conformance operators in plugins/conformance/assemblyscript
// are held to the Go plugins' outputs and messages byte for byte.
package assemblyscript
