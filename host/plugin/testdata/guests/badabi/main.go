// Command badabi is a raw test guest with several ABI problems at once, all of
// which the host must list: sluice_process is missing, sluice_alloc has the
// wrong signature, it imports a module the host does not provide, a sluice
// function the host does not have, and a sluice function with the wrong
// signature.
package main

func main() {}

//go:wasmimport env clock
func clock() int64

//go:wasmimport sluice emit
func emit(ptr uint32)

//go:wasmimport sluice teleport
func teleport(ptr, n uint32) int32

//go:wasmexport sluice_abi_version
func abiVersion() int32 { return 1 }

//go:wasmexport sluice_alloc
func alloc(size uint64) uint32 {
	emit(uint32(clock()))
	return uint32(teleport(0, 0))
}
