// Package abi is the contract between the Sluice host and a guest operator
// compiled to WebAssembly: the names of the host functions a guest may import
// and of the exports a guest must provide, the status codes they exchange, the
// ABI version, and the binary encoding of records and batches.
//
// ABI.md in this directory is the specification a guest SDK is written from;
// this package is its executable form and is imported by both the host and
// the Go guest SDK, so it must stay free of dependencies and must build for
// GOOS=wasip1 GOARCH=wasm.
//
// The encoding is little-endian and length-prefixed. Decoding never copies:
// a decoded Record's byte slices alias the buffer it was decoded from, so the
// host can read a guest's output straight out of guest memory and the guest
// can read its input straight out of the buffer the host wrote.
package abi
