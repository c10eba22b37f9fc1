// Package wire holds the primitives the benchmark event codecs share: the
// fixed-width decimal key format, unsigned varints, little-endian fixed-width
// integers, and a Reader that names the field at fault when an input is
// malformed.
//
// It imports only errors and strconv, and strconv only on the error path,
// so that the event packages built on it stay cheap to link into a Wasm
// guest (GOOS=wasip1): no fmt, no reflection, no allocation on success.
package wire
