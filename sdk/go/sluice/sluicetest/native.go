package sluicetest

import (
	"fmt"
	"sync"

	"github.com/sluicehq/sluice/abi"
	"github.com/sluicehq/sluice/sdk/go/sluice"
	"github.com/sluicehq/sluice/sdk/go/sluice/internal/bridge"
)

// Every native harness drives the one handler the test binary registered,
// whose package variables (typically its parsed configuration) are shared:
// guest calls are serialised process-wide, and lastConfigured remembers
// whose configuration those variables hold.
var (
	runMu          sync.Mutex
	lastConfigured *nativeBackend
)

// New returns a harness that runs the handler the test binary registered
// (the plugin package's init functions register it when its tests run)
// through the SDK's own guest core: the same allocator, batch decoding and
// output encoding the WebAssembly exports use, with an in-memory fake host
// that checks what the real host checks and recovers from failures as it
// does.
func New() *Harness {
	h := &Harness{st: NewTables()}
	h.b = &nativeBackend{host: newFakeHost(h.st, &h.logs)}
	return h
}

// nativeBackend runs the registered handler in this process. It mirrors
// plugin.Instance.Process: the same batch call, the same recovery.
type nativeBackend struct {
	host       *fakeHost
	g          bridge.Guest // nil when there is no instance
	configured bool         // whether g was configured with the harness's config
	batch      []byte       // encoded input, reused
}

// configure replaces the operator instance, if any, with a fresh one
// configured with config.
func (n *nativeBackend) configure(config []byte) error {
	runMu.Lock()
	defer runMu.Unlock()
	n.reset()
	return n.ready(config)
}

// close drops the instance; the next process starts a fresh one.
func (n *nativeBackend) close() {
	runMu.Lock()
	defer runMu.Unlock()
	n.reset()
}

// reset drops the instance. runMu is held.
func (n *nativeBackend) reset() {
	n.g, n.configured = nil, false
	if lastConfigured == n {
		lastConfigured = nil
	}
}

// ready makes sure there is an instance configured with config: a fresh
// one when there is none, and the handler reconfigured when another
// harness configured it since. runMu is held.
func (n *nativeBackend) ready(config []byte) error {
	if n.g == nil {
		if bridge.NewGuest == nil {
			return fmt.Errorf("%w: package sluice did not install its native guest (a WebAssembly build?)", ErrTrap)
		}
		n.g = bridge.NewGuest(n.host)
	}
	if n.configured && lastConfigured == n {
		return nil
	}
	n.host.begin(false, 0, 0)
	status, err := n.call(config, n.g.Configure)
	n.host.end()
	switch {
	case err != nil:
		n.reset()
		return err
	case status == abi.StatusOK:
		n.configured = true
		lastConfigured = n
		return nil
	case status == abi.StatusBadConfig:
		n.reset()
		return fmt.Errorf("%w: %s", ErrBadConfig, n.host.reason())
	}
	n.reset()
	return fmt.Errorf("%w: %s returned the unknown status %d: %s", ErrTrap, abi.ExportConfigure, status, n.host.reason())
}

// process runs one batch with the host's semantics (see Harness.Process),
// with the algorithm of the host's plugin.Instance.Process, first starting
// an instance configured with config when there is none. It leaves the
// tables as the batch left them, with the undo log still holding the
// batch's writes.
func (n *nativeBackend) process(config []byte, in []sluice.Record) ([]Output, []Reject, error) {
	runMu.Lock()
	defer runMu.Unlock()
	if err := n.ready(config); err != nil {
		return nil, nil, err
	}
	if len(in) == 0 {
		return nil, nil, nil
	}
	st := n.host.st
	keyed := st.Declared()
	sp := st.Savepoint()
	outs, rejects, err := n.run(in, 0)
	if err == nil {
		switch {
		case len(rejects) == 0:
			return outs, nil, nil
		case !keyed:
			return withoutRejected(outs, rejects), rejects, nil
		case len(in) == 1:
			st.RollbackTo(sp)
			return nil, rejects, nil
		}
		// The rejected records' writes are interleaved with the others':
		// undo the batch and run it record by record to tell them apart.
		st.RollbackTo(sp)
	} else {
		st.RollbackTo(sp)
		if len(in) == 1 {
			return nil, []Reject{failed(0, err)}, nil
		}
	}
	outs, rejects = nil, nil
	for k := range in {
		if err := n.ready(config); err != nil {
			st.RollbackTo(sp)
			return nil, nil, err
		}
		spk := st.Savepoint()
		o, r, err := n.run(in[k:k+1], k)
		switch {
		case err != nil:
			st.RollbackTo(spk)
			rejects = append(rejects, failed(k, err))
		case len(r) > 0:
			st.RollbackTo(spk)
			rejects = append(rejects, r...)
		default:
			outs = append(outs, o...)
		}
	}
	return outs, rejects, nil
}

// failed returns the Reject of record k, whose own call failed with err.
func failed(k int, err error) Reject {
	return Reject{Origin: k, Message: err.Error(), Err: err}
}

// run makes one sluice_process call over in, whose first record is record
// base of the harness's batch, and returns its outputs and rejects, or the
// error that failed it. A trap drops the instance. runMu is held.
func (n *nativeBackend) run(in []sluice.Record, base int) ([]Output, []Reject, error) {
	n.batch = appendBatch(n.batch[:0], in)
	n.host.begin(true, len(in), base)
	status, err := n.call(n.batch, n.g.Process)
	outs, rejects := n.host.end()
	switch {
	case err != nil:
		n.reset()
		return nil, nil, err
	case status != abi.StatusOK:
		// The guest returned normally: it keeps its instance, as in the
		// host.
		return nil, nil, fmt.Errorf("%w: %s returned status %d: %s", ErrBatchFailed, abi.ExportProcess, status, n.host.reason())
	}
	return outs, rejects, nil
}

// call copies data into a region the guest allocated, as the host writes
// into guest memory, and calls fn on it, turning a panic into a trap.
func (n *nativeBackend) call(data []byte, fn func([]byte) int32) (status int32, err error) {
	defer func() {
		if v := recover(); v != nil {
			status, err = 0, asTrap(v)
		}
	}()
	region := n.g.Alloc(int32(len(data)))
	if region == nil || len(region) != len(data) {
		return 0, fmt.Errorf("%w: %s(%d) failed", ErrTrap, abi.ExportAlloc, len(data))
	}
	copy(region, data)
	return fn(region), nil
}
