// Command upper is a raw test guest: a map operator that upper-cases the
// value of every record, emitting the whole batch with one host call. It is
// the guest of the batch benchmarks, so it allocates nothing in steady state.
package main

import (
	"unsafe"

	"github.com/sluicehq/sluice/abi"
)

func main() {}

//go:wasmimport sluice emit
func emit(ptr, n uint32)

var (
	inBuf   []byte
	outBuf  []byte
	scratch []byte
	dec     abi.Decoder
)

func addr(b []byte) uint32 { return uint32(uintptr(unsafe.Pointer(unsafe.SliceData(b)))) }

//go:wasmexport sluice_abi_version
func abiVersion() int32 { return abi.Version }

//go:wasmexport sluice_alloc
func alloc(size uint32) uint32 {
	if uint32(cap(inBuf)) < size {
		inBuf = make([]byte, size)
	}
	return addr(inBuf)
}

//go:wasmexport sluice_process
func process(ptr, n uint32) int32 {
	in := unsafe.Slice((*byte)(unsafe.Pointer(uintptr(ptr))), n)
	if dec.Reset(in) != nil {
		return abi.StatusError
	}
	outBuf = abi.AppendBatchHeader(outBuf[:0], uint32(dec.Count()))
	var r abi.Record
	for dec.Next(&r) {
		scratch = append(scratch[:0], r.Value...)
		for i, c := range scratch {
			if 'a' <= c && c <= 'z' {
				scratch[i] = c - 'a' + 'A'
			}
		}
		r.Value = scratch
		outBuf = abi.AppendRecord(outBuf, &r)
	}
	if dec.Err() != nil {
		return abi.StatusError
	}
	emit(addr(outBuf), uint32(len(outBuf)))
	return abi.StatusOK
}
