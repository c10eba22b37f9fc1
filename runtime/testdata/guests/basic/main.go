// Command basic is a test guest without host imports: plain exports, traps,
// Go panics, an endless loop, memory growth and per-instance state.
package main

import (
	"crypto/rand"
	"encoding/binary"
	"os"
	"time"
	"unsafe"
)

func main() {}

var (
	counter uint64
	state   int64
	buf     [256]byte
	hoard   [][]byte
)

//go:wasmexport noop
func noop() {}

//go:wasmexport add
func add(a, b int32) int32 { return a + b }

//go:wasmexport add64
func add64(a, b int64) int64 { return a + b }

// spin never returns; only the engine's deadline stops it.
//
//go:wasmexport spin
func spin() {
	for {
		counter++
	}
}

// index_panic indexes buf at i: i >= len(buf) is a Go panic, which the Go
// runtime prints to stderr before exiting with code 2.
//
//go:wasmexport index_panic
func indexPanic(i int32) int32 { return int32(buf[i]) }

// oob_load reads linear memory far past its end: a WebAssembly trap.
//
//go:wasmexport oob_load
func oobLoad() int32 {
	p := (*int32)(unsafe.Pointer(uintptr(0xFFFFFFF0)))
	return *p
}

// grow keeps mib MiB allocated, in 1 MiB pieces, and returns how many it holds.
//
//go:wasmexport grow
func grow(mib int32) int32 {
	for i := int32(0); i < mib; i++ {
		b := make([]byte, 1<<20)
		b[len(b)-1] = 1
		hoard = append(hoard, b)
	}
	return int32(len(hoard))
}

//go:wasmexport set_state
func setState(v int64) { state = v }

//go:wasmexport get_state
func getState() int64 { return state }

// buf_ptr returns the address of a 256-byte buffer the host may fill.
//
//go:wasmexport buf_ptr
func bufPtr() int32 { return int32(uintptr(unsafe.Pointer(&buf[0]))) }

// buf_sum sums the first n bytes of the buffer.
//
//go:wasmexport buf_sum
func bufSum(n int32) int64 {
	var s int64
	for _, b := range buf[:n] {
		s += int64(b)
	}
	return s
}

// say writes a line to stderr and returns normally.
//
//go:wasmexport say
func say() { os.Stderr.WriteString("hello from the guest\n") }

// exit_with exits the guest with code.
//
//go:wasmexport exit_with
func exitWith(code int32) { os.Exit(int(code)) }

// now_unix_milli reads the guest's wall clock.
//
//go:wasmexport now_unix_milli
func nowUnixMilli() int64 { return time.Now().UnixMilli() }

// random_u64 reads 8 bytes of the guest's entropy.
//
//go:wasmexport random_u64
func randomU64() int64 {
	var b [8]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic(err)
	}
	return int64(binary.LittleEndian.Uint64(b[:]))
}

// mix runs n iterations of a loop of integer arithmetic and returns the
// result: a guest that computes, for the deadline's benchmarks.
//
//go:wasmexport mix
func mix(n int32) int64 {
	var h uint64 = 14695981039346656037
	for i := int32(0); i < n; i++ {
		h ^= uint64(i)
		h *= 1099511628211
	}
	return int64(h)
}
