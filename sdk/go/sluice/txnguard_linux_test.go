package sluice

import (
	"os"
	"runtime/debug"
	"syscall"
	"testing"
	"unsafe"
)

// guardedPages maps two pages, the second inaccessible, once per test
// binary: guarded copies its input to the end of the first.
var guardedPages = func() []byte {
	size := os.Getpagesize()
	m, err := syscall.Mmap(-1, 0, 2*size, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_ANON|syscall.MAP_PRIVATE)
	if err != nil {
		return nil
	}
	if err := syscall.Mprotect(m[size:], syscall.PROT_NONE); err != nil {
		return nil
	}
	return m[:size]
}()

// guarded returns a copy of b that ends where readable memory does, so
// that a decoder reading past its end faults: the SDK's decoders read
// through unsafe pointers, which no bounds check catches. Inputs longer
// than a page, or a failed mapping, get a plain copy. The copy is valid
// until the next call.
func guarded(b []byte) []byte {
	if guardedPages == nil || len(b) > len(guardedPages) {
		return append([]byte(nil), b...)
	}
	g := guardedPages[len(guardedPages)-len(b):]
	copy(g, b)
	return g
}

// guardedRoom returns a copy of b followed by room readable bytes and then
// the guard page, or a plain copy when that does not fit.
func guardedRoom(b []byte, room int) []byte {
	if guardedPages == nil || len(b)+room > len(guardedPages) {
		return append([]byte(nil), b...)
	}
	at := len(guardedPages) - room - len(b)
	g := guardedPages[at : at+len(b) : at+len(b)]
	copy(g, b)
	return g
}

// TestGuardedFaultsPastTheEnd: the guard works, so that the decoders'
// tests would catch a read past the end of their input.
func TestGuardedFaultsPastTheEnd(t *testing.T) {
	if guardedPages == nil {
		t.Skip("no guard page on this system")
	}
	g := guarded([]byte{1, 2, 3, 4})
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() {
		if recover() == nil {
			t.Error("reading past a guarded copy did not fault")
		}
	}()
	v := le32(unsafe.Add(unsafe.Pointer(unsafe.SliceData(g)), 1)) // bytes 1 to 4: one past the end
	t.Errorf("read %#x past the end", v)
}
