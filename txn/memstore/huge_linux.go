//go:build linux

package memstore

import (
	"syscall"
	"unsafe"
)

// hugeMin is the size from which a slice is backed by huge pages.
const hugeMin = 4 << 20

// adviseHuge asks the kernel to back the memory of b with huge pages
// (transparent huge pages in madvise mode). With millions of keys every
// lookup's two cache misses would otherwise also be two TLB misses, whose
// page walks miss the caches too. A refusal is harmless: the pages stay
// small.
func adviseHuge(p unsafe.Pointer, n int) {
	if n < hugeMin {
		return
	}
	const page = 4096
	b := unsafe.Slice((*byte)(p), n)
	b = b[(page-uintptr(p)%page)%page:]
	b = b[:len(b)&^(page-1)]
	if len(b) > 0 {
		_ = syscall.Madvise(b, syscall.MADV_HUGEPAGE)
	}
}
