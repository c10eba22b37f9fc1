// Command failguest is a module without the SDK whose sluice_process always
// logs an error and returns abi.StatusError, for the harness's test of how
// the host handles a failed status.
package main

import (
	"unsafe"

	"github.com/sluicehq/sluice/abi"
)

func main() {}

var buf [1 << 16]byte

//go:wasmimport sluice log
func hostLog(level int32, ptr unsafe.Pointer, n uint32)

//go:wasmexport sluice_abi_version
func version() int32 { return abi.Version }

//go:wasmexport sluice_alloc
func alloc(n int32) unsafe.Pointer {
	if n > int32(len(buf)) {
		return nil
	}
	return unsafe.Pointer(&buf[0])
}

//go:wasmexport sluice_process
func process(unsafe.Pointer, uint32) int32 {
	msg := []byte("cannot process anything")
	hostLog(abi.LogError, unsafe.Pointer(&msg[0]), uint32(len(msg)))
	return abi.StatusError
}
