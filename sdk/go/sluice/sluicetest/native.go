package sluicetest

import (
	"fmt"

	"github.com/sluicehq/sluice/sdk/go/sluice/internal/bridge"
)

// New returns a harness that runs the handler the test binary registered
// (the plugin package's init functions register it when its tests run)
// through the SDK's own guest core: the same allocator, batch decoding and
// output encoding the WebAssembly exports use, with this harness as host.
func New() *Harness {
	return newHarness(func(f *fakeHost) (transport, error) {
		if bridge.NewGuest == nil {
			return nil, fmt.Errorf("%w: package sluice did not install its native guest (a WebAssembly build?)", ErrTrap)
		}
		return &nativeTransport{g: bridge.NewGuest(f)}, nil
	})
}

// nativeTransport calls the guest core in this process.
type nativeTransport struct{ g bridge.Guest }

func (n *nativeTransport) configure(config []byte) (status int32, err error) {
	return n.call(config, n.g.Configure)
}

func (n *nativeTransport) process(batch []byte) (int32, error) {
	return n.call(batch, n.g.Process)
}

// call copies data into a region the guest allocated, as the host writes
// into guest memory, and calls fn on it, turning a panic into a trap.
func (n *nativeTransport) call(data []byte, fn func([]byte) int32) (status int32, err error) {
	defer func() {
		if v := recover(); v != nil {
			status, err = 0, asTrap(v)
		}
	}()
	region := n.g.Alloc(int32(len(data)))
	if region == nil || len(region) != len(data) {
		return 0, fmt.Errorf("%w: sluice_alloc(%d) failed", ErrTrap, len(data))
	}
	copy(region, data)
	return fn(region), nil
}

func (n *nativeTransport) close() {}

func (n *nativeTransport) sharesGlobals() bool { return true }
