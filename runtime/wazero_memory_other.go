//go:build !linux

package runtime

import "context"

// withGuestMemory returns ctx: outside Linux, guests' linear memories are
// wazero's own, on the Go heap.
func withGuestMemory(ctx context.Context) context.Context { return ctx }
