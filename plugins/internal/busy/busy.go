package busy

// ItersPerMicro is the number of iterations of Spin's loop per microsecond
// asked: one iteration costs about 1.7 ns on the reference machine.
const ItersPerMicro = 600

// Spin works for about ns nanoseconds, deterministically, and returns a
// value computed by the work. The function is never inlined, so its loop
// runs whether or not the caller uses the value (`_ = busy.Spin(ns)`).
// Spin(0) returns at once.
//
//go:noinline
func Spin(ns uint32) uint64 {
	n := uint64(ns) * ItersPerMicro / 1000
	h := uint64(ns) | 1
	for range n {
		h ^= h >> 31
		h *= 0x9e3779b97f4a7c15
	}
	return h
}
