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
// allocation per call. NewWasmtime, behind the
// "wasmtime" build tag, runs the same modules on wasmtime-go: Cranelift code
// needs no bounds check on guest memory (guard pages) and is often faster
// inside guest loops, but every call crosses cgo and wasmtime-go's value
// boxing, microseconds, which per-batch calls can afford and per-record
// calls cannot. Both engines pass the same test suite.
//
// New makes the engine a name asks for, and CheckEngine says whether this
// build holds it: the host calls New with an operator's engine key (wazero
// by default), and sluice bench and sluice plugin check with their
// --engine flag; a build without the tag refuses wasmtime with
// ErrEngineNotBuilt, saying how to get a build that holds it.
// docs/engines.md says when to pick which.
//
// # Isolation
//
// A guest gets WASI preview 1 (Go's wasip1 port needs it) with no
// arguments, no environment, no files and no sockets, and clocks and a
// random source that answer from its instance's CallEnv, which the host
// sets before each unit of work (Instance.SetCallEnv): the realtime clock
// reads CallEnv.Time (the event's time) and does not advance; the
// monotonic clock reads MonotonicOrigin and advances only by what the
// guest sleeps (a sleep returns at once); random_get reads a PCG stream
// seeded by CallEnv.Seed, restarted by each SetCallEnv (predictable by
// design: no secrets may come from it), or by the seed a CallEnv.Seeder
// computes at the first random read, so that calls that read none (most
// transactional applies) do not pay for hashing their event. Why: Sluice
// runs a guest operation again after an abort, a failure, a recovery or a
// rollback, on any instance, and must get the same result; a guest's
// readings must depend on the unit of work alone, not on when it runs or
// on what the instance did before (a Go guest's garbage collector reads
// the monotonic clock, so that clock cannot carry the event time without
// making time.Now depend on the heap). Both engines implement these
// clocks and streams alike, byte for byte. A fresh instance starts with
// the zero CallEnv: the Unix epoch and seed zero, also what a Go guest's
// runtime is seeded with in _initialize (so its map seeds and its
// math/rand global source are the same in every instance, but advance
// with the instance's history: a guest that needs random numbers it can
// reproduce seeds its own generator from random_get within the call).
//
// Config.WithGrants opens the sandbox where a pipeline asks (Grants): the
// host's clocks (and real sleeps), the host's entropy, environment
// variables (sorted by name), and host directories preopened read-only or
// read-write. Each grant gives up determinism for what it reaches. A guest
// that opens a file outside every granted directory gets an error (a Go
// guest's os.Open returns EBADF: no preopened directory holds the path),
// never a host crash. Paths inside a granted directory resolve beneath it,
// symbolic links and ".." included: on wazero through package grantfs (an
// os.Root per directory, where wazero's own mount follows links out), on
// wasmtime through its WASI's own confinement.
// On wasmtime, granting directories leaves fd_write to wasmtime so that
// files can be written: stdout and stderr are then discarded and
// Error.Stderr stays empty.
//
// Stdout is discarded; up to Config.StderrLimit bytes
// of each call's stderr are kept. Memory is capped per instance
// (Config.MemoryLimitPages); a guest that grows past the cap sees
// memory.grow fail, and what it does then is the guest's business (a Go
// guest dies with "fatal error: out of memory": KindTrap). Tables are
// capped too (Config.WithTableLimit, 2^20 entries by default): a table lives
// in host memory outside the memory cap, and wazero bounds table.grow only
// at 2^32 entries, so one table.grow of 2^26 entries would add 512 MiB to
// the host's heap and one of 2^31 crash it. Past the cap table.grow
// returns -1, and a module that declares a larger table does not compile.
// On wazero the instrumenter (below) rewrites each table.grow into a call
// of a bounding function it adds, whether or not the call timeout is on; a
// module without table.grow (every Go guest: Go's runtime never grows its
// table) runs exactly as compiled, and pays only a scan of its code at
// compile time (about 30 ms for a 2.5 MB Go guest). A module the
// instrumenter cannot read and wazero accepts would run unbounded, so it
// is refused instead (KindCompile); the instrumenter reads every feature
// wazero enables, so this is a safeguard. On wasmtime its store limiter
// enforces the cap. Host functions
// see the calling guest's memory as a Memory whose Read and Write check
// bounds; on wasmtime that is the memory the guest exports as "memory".
//
// # Deadlines
//
// With a call timeout configured, each Func.Call runs under a deadline, and
// the caller's context is watched too: the guest is stopped mid-loop and the
// call returns KindTimeout. A zero timeout turns the checks off altogether,
// for trusted modules: a guest then stops only by returning.
//
// On wazero, modules are instrumented at compile time (package
// runtime/internal/interrupt, which reads modules with package
// runtime/wasmbin, as the plugin loader does): each instance gets an interrupt flag, a
// global of its own that one watchdog goroutine per engine raises at the
// deadline, or when the caller's context is done, and the guest counts its
// loop iterations and calls, and every 1024 of either yields to Go and
// traps with unreachable if its flag is up (reported as KindTimeout, since
// the flag was raised). Why: wazero's own mechanism, WithCloseOnContextDone,
// leaves the compiled code at every loop header, which made a Go guest's
// batched map three to five times slower; the instrumented checks cost it
// about 5 %, and a call arms and disarms its deadline in about 35 ns
// without allocating (a timer per call would cost 100 to 300 ns). The yield is not
// optional: Go cannot preempt a goroutine in compiled guest code, so a
// stop-the-world of the garbage collector waits for the guest to leave it;
// a guest that only tested its flag would spin forever once the world
// started to stop, the watchdog being stopped too. The deadline counts in
// watchdog ticks of timeout/16 (1 to 50 ms): a call is stopped between its
// timeout and its timeout plus two ticks, later if the process is starved
// of CPU, never earlier; a cancelled context stops it within a tick and a
// few microseconds. What is not interrupted: a host function (the guest
// stops at its next check after the host function returns), and the
// module's instantiation itself (data segments; the start function, though,
// runs under the deadline right after it). Modules the instrumenter refuses
// (proposals it does not decode, such as exceptions or tail calls, or a
// guest export named "sluice:interrupt") run on a second wazero runtime
// with WithCloseOnContextDone, as before, and allocate a context per call.
// DWARF sections of instrumented modules are dropped (their code offsets
// move), so wazero's stack traces lose source lines; the function names
// remain, and so does a Go guest's own panic trace on stderr.
//
// On wazero the instrumenter also threads jumps, with or without a call
// timeout: a Go guest's jumps forward, which Go's WebAssembly code sends
// back through a jump table at the head of each function, become direct
// branches (interrupt.Options.ThreadJumps, "Jumps" in that package's
// documentation). Should wazero reject the rewritten copy of a module it
// accepts (an instrumenter bug), the module runs as it is, under a call
// timeout with wazero's slower deadline.
//
// On wasmtime, the deadline is epoch interruption, native to wasmtime: a
// ticker advances the engine's epoch every millisecond and each call sets
// an epoch deadline. wasmtime-go has no way to stop one store from another
// goroutine other than its epoch deadline, so on wasmtime a cancellation
// without a deadline stops the guest only at the call timeout (and is then
// reported as the cancellation it was).
//
// An instantiation whose start function or _initialize fails is a
// KindLink *Error whose cause is the call's own *Error: errors.Is(err,
// ErrTimeout) holds for an _initialize that ran past its deadline, and
// errors.As reaches the inner *Error.
//
// # After an error, discard the instance
//
// Any error returned by Func.Call leaves the instance unusable: the guest
// may have been stopped half-way through an update of its own memory (and
// wazero's own mechanism closes the instance on a timeout). Each Instance
// therefore remembers its first failure and refuses further calls with an
// error wrapping it. Callers replace it with a fresh instance from the
// same Module: no
// recompilation, but a Go guest's instantiation and _initialize cost about
// 1 ms on wasmtime and several ms on wazero, which copies the guest's
// initial memory image.
//
// # Guest memory
//
// On Linux, wazero instances keep their linear memories outside the Go
// heap: each is an anonymous mapping reserved at the memory's maximum (the
// configured limit) and backed by pages only as the guest touches them,
// so a memory grows in place, without a copy, and instances made while a
// pipeline runs (a swap's) do not push the garbage collector into a cycle
// the pipeline pays for. The Go runtime's memory statistics and
// GOMEMLIMIT therefore leave guest memory out; the process's resident
// size counts it. Elsewhere, and on wasmtime (whose memories were never on
// the Go heap), nothing changes.
//
// # Compiling elsewhere
//
// Compiling a large guest takes a second or more of CPU. A Config with a
// Compiler (Config.WithCompiler) and a cache directory has the Compiler
// compile each module new to the engine into the cache first; the
// engine's own compile then only loads the cached code. ProcessCompiler
// runs the compile in a child process (the sluice binary, which serves it
// with ServeCompile when ChildCompileEnv is set) at the lowest CPU
// priority on Linux, so that a module compiled while a pipeline runs does
// not take the pipeline's CPU. The child configures its engine from the
// parent's Config (cache, memory and table limits, call timeout: what
// decides the compiled code and its cache key), not its host modules or
// grants, which matter only when a module is instantiated. A Compiler that
// fails is logged and the engine compiles the module itself, so the
// module's errors are the engine's either way.
//
// # Closing
//
// Engine.Close closes every module, Module.Close every instance of the
// module. Closing an instance while a call runs on it is safe: with a call
// timeout, wazero stops the guest at its next check (the call returns an
// error matching ErrClosed), and without one the guest runs on until it
// returns; wasmtime waits for the call to end (the call timeout bounds the
// wait).
package runtime
