// Command badversion is a module that declares ABI version 2, for the
// harness's test of the refuse-at-load rule. It does not use the SDK.
package main

import "unsafe"

func main() {}

var buf [64]byte

//go:wasmexport sluice_abi_version
func version() int32 { return 2 }

//go:wasmexport sluice_alloc
func alloc(int32) unsafe.Pointer { return unsafe.Pointer(&buf[0]) }

//go:wasmexport sluice_process
func process(unsafe.Pointer, uint32) int32 { return 0 }
