package runtime

import (
	"context"
	goruntime "runtime"
	"testing"
	"unsafe"
)

// A mapped memory grows in place, reads zero where it grew, refuses to grow
// past its maximum, and keeps what was written.
func TestMappedMemoryGrowsInPlace(t *testing.T) {
	const page = 64 << 10
	lm := allocateGuestMemory(page, 16*page)
	m, ok := lm.(*mappedMemory)
	if !ok {
		t.Fatalf("allocated a %T, want a mapping", lm)
	}
	defer m.Free()
	b := m.Reallocate(page)
	if len(b) != page {
		t.Fatalf("first length %d, want %d", len(b), page)
	}
	b[0], b[page-1] = 1, 2
	grown := m.Reallocate(4 * page)
	if len(grown) != 4*page || unsafe.SliceData(grown) != unsafe.SliceData(b) {
		t.Fatalf("grown to %d bytes at another address: want %d in place", len(grown), 4*page)
	}
	if grown[0] != 1 || grown[page-1] != 2 {
		t.Error("growing lost what was written")
	}
	for i := page; i < 4*page; i++ {
		if grown[i] != 0 {
			t.Fatalf("byte %d of the grown memory is %d, want 0", i, grown[i])
		}
	}
	if m.Reallocate(17*page) != nil {
		t.Error("grown past its maximum")
	}
}

// An instance's memory is not on the Go heap: making instances allocates
// on the heap far less than their memories hold.
func TestGuestMemoryOffTheHeap(t *testing.T) {
	ctx := context.Background()
	e := newEngine(t, baseConfig())
	m := compile(t, e, "basic", guests["basic"])
	instantiate(t, m) // the module's first instance warms what instances share
	var before, after goruntime.MemStats
	goruntime.ReadMemStats(&before)
	const n = 4
	var held uint64
	for range n {
		inst, err := m.Instantiate(ctx)
		if err != nil {
			t.Fatal(err)
		}
		held += uint64(inst.Memory().Size())
		defer inst.Close(ctx)
	}
	goruntime.ReadMemStats(&after)
	if allocated := after.TotalAlloc - before.TotalAlloc; allocated >= held/2 {
		t.Errorf("%d instances holding %d bytes of memory allocated %d bytes on the heap: their memories are on it", n, held, allocated)
	}
}
