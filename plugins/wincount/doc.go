// Command wincount is a Sluice aggregate operator (kind: aggregate): per
// key and window, the number of records and the sum of their values, each
// value a decimal integer (an optional '-', then digits, within int64). A
// record whose value is not one is dead-lettered and not counted. When a
// window fires, the operator emits one record with the key and the value
// "count,sum" in decimal, which the host stamps with the window's end - 1.
//
// The accumulator is 16 bytes: the count and the sum, each a little-endian
// 64-bit integer (the sum wraps around on overflow, as in every SDK's
// version of this operator in plugins/conformance).
//
// Build: sluice plugin build plugins/wincount
package main
