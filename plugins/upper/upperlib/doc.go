// Package upperlib holds the logic of the upper plugin as plain Go
// functions, so that a host-side benchmark can run the very same code
// natively and compare it with the plugin running in WebAssembly.
//
// Upper and UpperInPlace work eight bytes at a time (SWAR: SIMD within a
// register), which Go compiles to plain 64-bit integer operations on every
// platform, WebAssembly included, four words per loop iteration. The
// in-place form reads and writes one slice: in Go's WebAssembly code under
// wazero each value a loop keeps and each iteration costs several times
// what it does natively, and the one-slice loop is about a third cheaper
// there for a 64-byte value.
package upperlib
