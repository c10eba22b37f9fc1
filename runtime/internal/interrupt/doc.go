// Package interrupt instruments WebAssembly modules so that a running guest
// can be stopped cheaply from another goroutine: epoch interruption done by
// rewriting the binary, as wasmtime does it in its compiler.
//
// # Why
//
// wazero stops a guest when its context is done (WithCloseOnContextDone)
// by calling out of the compiled code, at every loop header, into a
// trampoline that checks whether the module was closed: tens of
// nanoseconds per loop iteration, about a microsecond per record in a Go
// guest. Instrument adds an interrupt flag (a mutable i32 global, exported
// as FlagExport) that the embedder raises from another goroutine, and
// checks that the guest runs at loop headers and function entries.
//
// # Two jobs for one check
//
// The check cannot be a mere test of the flag. Go cannot preempt a
// goroutine that runs compiled guest code: a stop-the-world (the garbage
// collector needs two per cycle) waits until the guest leaves its code. A
// guest that only tested the flag would then spin forever once the world
// started to stop, since the goroutine that raises the flag is stopped too.
// So the guest counts, and every Interval loop iterations or calls it
// yields: it grows a table of its own by nothing, which takes it into the
// engine's Go code, where the scheduler can stop it; and only then it
// tests the flag, and executes unreachable when it is up. Loop iterations
// count in a local (a register), calls in a global; the code between two
// checks is bounded by the module's size, so the time between two yields
// is bounded too (see Interval). The layout of the check was chosen with
// wazero's compiler in view: a loop's check leaves the loop by a branch and
// re-enters it after the yield, so that the loop itself holds no call or
// if, which cost a register allocator dear (see newCode). On a Go guest the
// checks cost a few percent; wazero's trampoline multiplies the time of
// loop-heavy code several times over.
//
// # What it refuses
//
// The decoder knows the MVP, the 0xfc prefix (saturating truncation, bulk
// memory, tables), sign extension, multi-value block types, reference
// types, fixed-width SIMD (0xfd), threads (0xfe), multi-memory and memory64
// immediates. Anything else (exceptions, tail calls, relaxed SIMD, GC and
// typed function references) is ErrUnsupported, as is a module that already
// uses one of the reserved export names; a module it cannot read is
// ErrMalformed. The embedder then runs the module uninstrumented with its
// engine's own mechanism. Instrument never panics on any input (fuzzed).
//
// # The table limit
//
// A table lives in the embedder's memory, outside the guest's memory
// limit, and wazero lets table.grow reach 2^32 entries. With
// Options.TableLimit, InstrumentWith rewrites each table.grow into a call
// of a function it appends (one per table grown, after the module's own
// functions, with its type after the module's types, so no index moves)
// that returns -1 where the table would grow past the limit and grows it
// otherwise. That rewrite does not depend on the interrupt checks: without
// Options.Deadline, only table.grow changes, and a module without it is
// returned as it is, so that it costs nothing at run time. Result.Tables
// gives the declared minimums, for the embedder to refuse a table larger
// than the limit from the start.
//
// # Jumps
//
// Go compiles every function to WebAssembly as a loop that opens with a
// jump table (a br_table on a local, the resume point; see dispatch), so
// that a goroutine can be suspended and the function re-entered where it
// stopped. A jump inside the function sets the local and branches back to
// the loop's head, through the table, even when it goes forward to a
// block that encloses it. Under wazero that costs a Go guest dearly: the
// loop's head merges every jump of the function, and its compiler keeps
// the function's values in the stack across it. With Options.ThreadJumps,
// each such forward jump becomes a branch straight to its target; the
// local is still set, so the code that follows sees what it would have.
// Nothing else changes, and the program is the same: the table would only
// have read the local and branched there. Jumps backward (a Go loop's
// back edge) still go through the table, and still pass the loop check of
// the table's loop, while a jump forward has no check to pass: it cannot
// repeat without a jump backward. On the Go guests of Sluice's benchmarks
// this takes 4 to 12 % off a batched map per record (BenchmarkThreadJumps)
// and about a tenth off a transactional operator (BENCHMARKS.md, "Threaded
// jumps").
//
// # What else changes
//
// Function, global, table and type indices do not move: the flag, the call
// count and the table are appended after the module's own, a function's
// loop count after its locals. With the interrupt checks (Options.Deadline,
// which Instrument sets), a start section is removed and its function
// exported as StartExport, for the embedder to call under a deadline right
// after instantiation (a start function could loop forever too, and the
// flag is out of reach until instantiation returns). DWARF custom sections
// are dropped, since the code offsets they describe move, and so is a
// malformed name section, which a decoder might read past its end into the
// sections that changed. The name section and other custom sections are
// kept.
package interrupt

//go:generate sh testdata/build.sh
