// Command version2 is a raw test guest that is well formed in every way but
// declares ABI version 2, which the host must refuse at load time.
package main

func main() {}

var buf [64]byte

//go:wasmexport sluice_abi_version
func abiVersion() int32 { return 2 }

//go:wasmexport sluice_alloc
func alloc(size uint32) uint32 { panic("sluice_alloc must not be called on a refused module") }

//go:wasmexport sluice_process
func process(ptr, n uint32) int32 { panic("sluice_process must not be called on a refused module") }
