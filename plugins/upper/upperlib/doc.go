// Package upperlib holds the logic of the upper plugin as a plain Go
// function, so that a host-side benchmark can run the very same code
// natively and compare it with the plugin running in WebAssembly.
//
// Upper works eight bytes at a time (SWAR: SIMD within a register), which
// Go compiles to plain 64-bit integer operations on every platform,
// WebAssembly included.
package upperlib
