// Package busy is the busy work of the transactional benchmark operators:
// MorphStream's "complexity" knob (the workloads' busy-ns), which stands
// for a costly user function by spinning for a given number of
// nanoseconds before an operation computes its effect.
//
// A guest has no clock (the host grants none, so that operations stay
// deterministic when re-executed), so the work is not timed: Spin runs a
// fixed number of iterations of a dependent multiply-xor chain per
// nanosecond asked, calibrated once on the reference machine (2-core Xeon,
// 2.3 GHz) where one iteration costs about 1.7 ns natively. Wazero compiles
// the same loop to the same two instructions, so the WebAssembly build
// spins about as long (BenchmarkSpin gives the native figure; the plugins'
// benchmarks with busy-ns set give the WebAssembly one). The figure is
// rough by design: what matters for a benchmark is that the work is
// proportional to the knob, the same in every build and free of side
// effects.
//
// The package imports nothing, so a WebAssembly guest can use it.
package busy
