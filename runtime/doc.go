// Package runtime runs WebAssembly guest modules (Sluice's operators) behind
// one small interface, so the rest of the host never names a Wasm engine.
//
// # What it owns
//
// An Engine compiles modules; a Module makes Instances; an Instance exposes
// its exported functions as Funcs and its linear memory as a Memory. Host
// functions are written once, as HostFunc values on wazero's stack-based
// calling convention (parameters and results in a []uint64), and each engine
// adapts them. Every failure of a guest comes back as an *Error whose Kind
// says what happened (trap, timeout, exit, host function error, link error,
// compile error) and which names the module and the export involved, with the
// head and tail of what the guest wrote to stderr during the failed call: a
// Go guest's panic message ("panic: runtime error: index out of range ...")
// lands there. Go's wasip1 runtime ends a panic or a fatal error inside a
// //go:wasmexport call with an unreachable instruction, so those are
// KindTrap with the message in Error.Stderr; os.Exit is KindExit with its
// code.
//
// # Two engines
//
// NewWazero is the default. wazero is pure Go (no cgo, cross-compiles, one
// static binary), compiles ahead of time to machine code, and a call into a
// guest costs about 20 ns and a guest-to-host call about 75 ns, with no
// allocation per call when the call timeout is off. NewWasmtime, behind the
// "wasmtime" build tag, runs the same modules on wasmtime-go: Cranelift code
// is often faster inside long-running guest loops, but every call crosses cgo
// and wasmtime-go's value boxing, about 2 µs, which per-batch calls can
// afford and per-record calls cannot. Both engines pass the same test suite.
//
// # Isolation
//
// A guest gets WASI preview 1 (Go's wasip1 port needs it) with no
// arguments, no environment, no files and no sockets. Its clocks and random
// source are deterministic (wazero's defaults: a fake clock starting at
// 2022-01-01 that advances 1 ms per reading, and a seeded random source),
// because Sluice may re-execute a guest operation after an abort and must
// get the same result. Stdout is discarded; up to Config.StderrLimit bytes
// of each call's stderr are kept. Memory is capped per instance
// (Config.MemoryLimitPages); a guest that grows past the cap sees
// memory.grow fail, and what it does then is the guest's business (a Go
// guest dies with "fatal error: out of memory": KindTrap). Host functions
// see the calling guest's memory as a Memory whose Read and Write check
// bounds; on wasmtime that is the memory the guest exports as "memory".
//
// # Deadlines
//
// With a call timeout configured, each Func.Call runs under a deadline, and
// the caller's context is watched too: the guest is stopped mid-loop and the
// call returns KindTimeout. wazero does this by closing the instance when the
// context is done (it checks in loops and function entries); wasmtime by
// epoch interruption, a ticker that advances the engine's epoch every
// millisecond and a per-call epoch deadline. wasmtime-go has no way to stop
// one store from another goroutine other than its epoch deadline, so on
// wasmtime a cancellation without a deadline stops the guest only at the
// call timeout (and is then reported as the cancellation it was). A zero
// timeout turns the checks off altogether, for trusted modules: a guest then
// stops only by returning.
//
// # After an error, discard the instance
//
// Any error returned by Func.Call leaves the instance unusable: the guest
// may have been stopped half-way through an update of its own memory, and
// wazero closes the instance on a timeout. Each Instance therefore remembers
// its first failure and refuses further calls with an error wrapping it.
// Callers replace it with a fresh instance from the same Module: no
// recompilation, but a Go guest's instantiation and _initialize cost about
// 1 ms on wasmtime and several ms on wazero, which copies the guest's
// initial memory image.
//
// # Closing
//
// Engine.Close closes every module, Module.Close every instance of the
// module. Closing an instance while a call runs on it is safe: wazero stops
// the guest (the call returns an error matching ErrClosed), wasmtime waits
// for the call to end (the call timeout bounds the wait).
package runtime
