package sluicetest

import (
	"bytes"
	"errors"
	"fmt"
	"sync"

	"github.com/sluicehq/sluice/abi"
	"github.com/sluicehq/sluice/sdk/go/sluice"
)

// Errors returned by Harness methods, matched with errors.Is.
var (
	// ErrTrap: the guest trapped: it panicked, exited, or misused a host
	// function (the message says which). The harness then replaces the
	// instance with a fresh one, as the host does; state is kept.
	ErrTrap = errors.New("sluicetest: guest trapped")
	// ErrBatchFailed: sluice_process returned abi.StatusError; the message
	// carries the guest's last error log. The batch's outputs are discarded.
	ErrBatchFailed = errors.New("sluicetest: guest failed the batch")
	// ErrBadConfig: sluice_configure returned abi.StatusBadConfig; the
	// message carries the guest's reason.
	ErrBadConfig = errors.New("sluicetest: configuration rejected")
	// ErrVersion: the module declares an ABI version other than
	// abi.Version; the host refuses such a module at load time.
	ErrVersion = errors.New("sluicetest: module built for another ABI version")
)

// Output is a record the operator emitted, with the index of the input
// record it came from. Its bytes are copies owned by the caller.
type Output struct {
	Origin int
	sluice.Record
}

// Reject is an input record the operator dead-lettered, with its message.
type Reject struct {
	Origin  int
	Message string
}

// LogEntry is a message the operator logged.
type LogEntry struct {
	Level   sluice.Level
	Message string
}

// KV returns a record with the given key and value, for brevity in tests.
func KV(key, value string) sluice.Record {
	return sluice.Record{Key: []byte(key), Value: []byte(value)}
}

// transport is a way of reaching an operator instance: the SDK's guest core
// in this process, or a WebAssembly instance. Calls that trap return an
// error, after which the transport is closed and replaced.
type transport interface {
	configure(config []byte) (int32, error)
	process(batch []byte) (int32, error)
	close()
	// sharesGlobals says whether instances share package variables (the
	// native transport), so that a harness must re-apply its configuration
	// after another harness configured the plugin.
	sharesGlobals() bool
}

// Every native harness drives the one handler the test binary registered,
// whose package variables (typically its parsed configuration) are shared:
// calls are serialised process-wide, and lastConfigured remembers whose
// configuration those variables hold.
var (
	runMu          sync.Mutex
	lastConfigured *Harness
)

// Harness runs a plugin's handler against an in-memory fake host. It plays
// the host's part in full: it encodes input batches into guest memory
// obtained from sluice_alloc, calls sluice_configure and sluice_process,
// decodes what the guest emits, and serves state from in-memory tables. A
// Harness is not safe for concurrent use; separate harnesses may be used
// from parallel tests, their calls are serialised.
type Harness struct {
	open func(*fakeHost) (transport, error)
	host *fakeHost
	t    transport

	config     []byte
	configured bool // whether t has been configured with config
}

func newHarness(open func(*fakeHost) (transport, error)) *Harness {
	return &Harness{open: open, host: newFakeHost()}
}

// Declare declares state tables for the operator, in order: the first table
// ever declared is the default table (handle 0). It panics on an empty or
// repeated name. Without a declared table, state calls trap, as they do for
// a stateless operator in the host. It returns h for chaining.
func (h *Harness) Declare(tables ...string) *Harness {
	runMu.Lock()
	defer runMu.Unlock()
	for _, name := range tables {
		if name == "" {
			panic("sluicetest: Declare: empty table name")
		}
		if _, dup := h.host.ids[name]; dup {
			panic(fmt.Sprintf("sluicetest: Declare: table %q declared twice", name))
		}
		h.host.ids[name] = int32(len(h.host.tables))
		h.host.tables = append(h.host.tables, name)
		h.host.state = append(h.host.state, map[string][]byte{})
	}
	return h
}

// Configure gives the operator config, its configuration as JSON, as the
// host does from the pipeline's `config`. It starts a fresh instance (state
// is kept) and configures it at once. Without a call to Configure the
// operator is configured before its first batch with no bytes, as the host
// does for an operator without config (the SDK hands its Configure handler
// null).
func (h *Harness) Configure(config []byte) error {
	runMu.Lock()
	defer runMu.Unlock()
	h.config = bytes.Clone(config)
	h.reset()
	return h.ready()
}

// Process runs one batch of records through the operator and returns what it
// emitted and rejected, in order. Input record i has origin i; its Time is
// passed through as given. On a trap or a failed batch, err says why (see
// ErrTrap, ErrBatchFailed, ErrBadConfig), the batch's outputs are discarded
// and its state changes undone, as the host does. (The host then re-runs
// the batch's records one at a time to dead-letter only the failing one;
// the harness reports the failure instead, for the test to see.)
func (h *Harness) Process(records ...sluice.Record) ([]Output, []Reject, error) {
	runMu.Lock()
	defer runMu.Unlock()
	if err := h.ready(); err != nil {
		return nil, nil, err
	}
	n := abi.BatchHeaderSize
	for i := range records {
		r := &records[i]
		n += abi.EncodedSize(&abi.Record{Key: r.Key, Value: r.Value, Headers: r.Headers})
	}
	batch := abi.AppendBatchHeader(make([]byte, 0, n), uint32(len(records)))
	for i := range records {
		r := &records[i]
		batch = abi.AppendRecord(batch, &abi.Record{Origin: uint32(i), Time: r.Time, Key: r.Key, Value: r.Value, Headers: r.Headers})
	}
	saved := h.host.snapshot()
	h.host.begin(len(records))
	status, err := h.t.process(batch)
	outs, rejects := h.host.end()
	if err != nil {
		h.host.restore(saved)
		h.reset()
		return nil, nil, err
	}
	switch status {
	case abi.StatusOK:
		return outs, rejects, nil
	case abi.StatusError:
		h.host.restore(saved)
		return nil, nil, fmt.Errorf("%w: %s", ErrBatchFailed, h.host.lastError())
	}
	h.host.restore(saved)
	h.reset()
	return nil, nil, fmt.Errorf("%w: sluice_process returned the unknown status %d", ErrTrap, status)
}

// State returns the value the operator stored for key in table, and whether
// there is one. The empty table name means the default table. The value is
// a copy.
func (h *Harness) State(table, key string) ([]byte, bool) {
	runMu.Lock()
	defer runMu.Unlock()
	m := h.host.table(table)
	v, ok := m[key]
	return bytes.Clone(v), ok
}

// SetState stores value for key in table before a batch, as if an earlier
// run had left it; a nil value deletes the key. The empty table name means
// the default table.
func (h *Harness) SetState(table, key string, value []byte) {
	runMu.Lock()
	defer runMu.Unlock()
	m := h.host.table(table)
	if value == nil {
		delete(m, key)
		return
	}
	m[key] = bytes.Clone(value)
}

// Logs returns the messages the operator has logged so far, oldest first.
func (h *Harness) Logs() []LogEntry {
	runMu.Lock()
	defer runMu.Unlock()
	return append([]LogEntry(nil), h.host.logs...)
}

// Close releases the harness's instance. Using the harness afterwards starts
// a fresh one.
func (h *Harness) Close() {
	runMu.Lock()
	defer runMu.Unlock()
	h.reset()
}

// reset drops the current instance, if any.
func (h *Harness) reset() {
	if h.t != nil {
		h.t.close()
		h.t = nil
	}
	h.configured = false
	if lastConfigured == h {
		lastConfigured = nil
	}
}

// ready makes sure there is an instance configured with h.config. runMu is
// held.
func (h *Harness) ready() error {
	if h.t == nil {
		t, err := h.open(h.host)
		if err != nil {
			return err
		}
		h.t = t
	}
	if h.configured && (!h.t.sharesGlobals() || lastConfigured == h) {
		return nil
	}
	h.host.configuring = true
	status, err := h.t.configure(h.config)
	h.host.configuring = false
	if err != nil {
		h.reset()
		return err
	}
	switch status {
	case abi.StatusOK:
		h.configured = true
		lastConfigured = h
		return nil
	case abi.StatusBadConfig:
		h.reset()
		return fmt.Errorf("%w: %s", ErrBadConfig, h.host.lastError())
	}
	h.reset()
	return fmt.Errorf("%w: sluice_configure returned the unknown status %d", ErrTrap, status)
}
