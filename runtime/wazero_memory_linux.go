package runtime

import (
	"context"
	"syscall"

	"github.com/tetratelabs/wazero/experimental"
)

// withGuestMemory returns ctx with the allocator of the guests' linear
// memories: on Linux, each memory is its own anonymous mapping, outside
// the Go heap, reserved at the memory's maximum (the configured limit) and
// backed by pages only as the guest touches them. A memory then grows
// without being copied, and neither an instance's memory nor its growth
// counts toward the host's heap: instances made while a pipeline runs (a
// swap) do not make the garbage collector run a cycle that the pipeline
// pays for. A mapping that cannot be made falls back to wazero's own
// allocation, on the Go heap.
func withGuestMemory(ctx context.Context) context.Context {
	return experimental.WithMemoryAllocator(ctx, experimental.MemoryAllocatorFunc(allocateGuestMemory))
}

func allocateGuestMemory(capacity, maximum uint64) experimental.LinearMemory {
	const maxMapping = 1 << 34 // the 4 GiB of a 32-bit memory, with room
	if maximum == 0 || maximum > maxMapping {
		return &heapMemory{}
	}
	b, err := syscall.Mmap(-1, 0, int(maximum), syscall.PROT_READ|syscall.PROT_WRITE,
		syscall.MAP_PRIVATE|syscall.MAP_ANONYMOUS|syscall.MAP_NORESERVE)
	if err != nil {
		return &heapMemory{}
	}
	return &mappedMemory{b: b}
}

// mappedMemory is a linear memory in a mapping reserved at its maximum:
// growing it lengthens the slice (new pages read as zero until written).
type mappedMemory struct{ b []byte }

func (m *mappedMemory) Reallocate(size uint64) []byte {
	if m.b == nil || size > uint64(cap(m.b)) {
		return nil
	}
	return m.b[:size]
}

func (m *mappedMemory) Free() {
	if m.b != nil {
		_ = syscall.Munmap(m.b[:cap(m.b)])
		m.b = nil
	}
}

// heapMemory is a linear memory on the Go heap, grown by copying, as
// wazero's own.
type heapMemory struct{ b []byte }

func (m *heapMemory) Reallocate(size uint64) []byte {
	if size <= uint64(cap(m.b)) {
		m.b = m.b[:size]
		return m.b
	}
	nb := make([]byte, size, size+size/4)
	copy(nb, m.b)
	m.b = nb
	return m.b
}

func (m *heapMemory) Free() { m.b = nil }
