// Command hostcall is a test guest that calls the host functions of the
// "test" host module the runtime tests define.
package main

import "unsafe"

func main() {}

//go:wasmimport test sum
func hostSum(ptr, n uint32) int64

//go:wasmimport test fill
func hostFill(ptr, n, b uint32)

//go:wasmimport test ctx_value
func hostCtxValue() int64

//go:wasmimport test fail
func hostFail()

//go:wasmimport test fail_plain
func hostFailPlain()

//go:wasmimport test nop
func hostNop()

var buf [256]byte

// sum_buf fills buf[:n] with 1..n and asks the host to sum it.
//
//go:wasmexport sum_buf
func sumBuf(n int32) int64 {
	for i := range buf[:n] {
		buf[i] = byte(i + 1)
	}
	return hostSum(uint32(uintptr(unsafe.Pointer(&buf[0]))), uint32(n))
}

// sum_at asks the host to sum any range, valid or not.
//
//go:wasmexport sum_at
func sumAt(ptr, n int32) int64 { return hostSum(uint32(ptr), uint32(n)) }

// fill_buf asks the host to write b into buf[:n] and sums it guest-side.
//
//go:wasmexport fill_buf
func fillBuf(n, b int32) int64 {
	hostFill(uint32(uintptr(unsafe.Pointer(&buf[0]))), uint32(n), uint32(b))
	var s int64
	for _, v := range buf[:n] {
		s += int64(v)
	}
	return s
}

//go:wasmexport ctx_value
func ctxValue() int64 { return hostCtxValue() }

//go:wasmexport host_fail
func hostFailExport() { hostFail() }

//go:wasmexport host_fail_plain
func hostFailPlainExport() { hostFailPlain() }

//go:wasmexport call_host
func callHost() { hostNop() }

//go:wasmexport noop
func noop() {}
