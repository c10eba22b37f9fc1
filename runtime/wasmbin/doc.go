// Package wasmbin reads the WebAssembly binary format: the one reader of
// module bytes that Sluice's host uses before a module reaches an engine.
//
// # What it owns
//
// Reader decodes the format's primitives (bytes, LEB128 integers, names)
// from a byte slice and never panics: every failure is an error wrapping
// ErrMalformed that names the offset. On top of it, CustomSections lists a
// module's custom sections (the plugin loader reads sluice.kinds,
// sluice.version and the producers section from them), and CheckBounds
// walks a module's sections, imports, exports and code far enough to check
// every count and length it declares against the bytes that follow. The
// instrumenter of package runtime/internal/interrupt decodes and rewrites
// function bodies with the same Reader.
//
// # Why one package
//
// The loader and the instrumenter read the same format; two readers would
// disagree on some malformed module, one of them accepting what the other
// refuses, and the fuzzers of each would test half of the code that reads
// untrusted bytes. The package is exported, not internal, because the
// loader (host/plugin) lives outside package runtime.
package wasmbin
