package hosttest

import (
	"bytes"

	"github.com/sluicehq/sluice/sdk/go/sluice"
	"github.com/sluicehq/sluice/sdk/go/sluice/sluicetest"
)

// Harness runs a compiled plugin module's operator in the real host,
// against in-memory state: it configures the operator, hands it batches of
// records, and collects what it emits, rejects and logs. WasmModule.New
// makes one. Its methods are those of sluicetest.Harness, the SDK's native
// harness, and report outputs, rejects and errors with the same types and
// sentinels (sluicetest.ErrTrap, sluicetest.ErrBatchFailed,
// sluicetest.ErrBadConfig), so a test runs one case both ways and compares.
// A Harness is not safe for concurrent use; separate harnesses may be used
// from parallel tests.
type Harness struct {
	b      *wasmBackend
	st     *sluicetest.Tables
	logs   []sluicetest.LogEntry
	config []byte
	// statelessKind is set for a module of a stateless kind, whose
	// operator the host grants no state: Declare refuses tables.
	statelessKind string
}

// Declare declares state tables for the operator, in order: the first table
// ever declared is the default table (handle 0), as the first of a keyed
// operator's `state:` list in a pipeline. It panics on an empty or repeated
// name, and when the module was loaded as a stateless kind. It returns h
// for chaining.
func (h *Harness) Declare(tables ...string) *Harness {
	if h.statelessKind != "" && len(tables) > 0 {
		panic("hosttest: Declare: the module was loaded as a " + h.statelessKind + " operator, which has no state; load it as plugin.KindKeyed")
	}
	for _, name := range tables {
		h.st.Declare(name)
	}
	return h
}

// Configure gives the operator config, its configuration as JSON, as the
// host does from the pipeline's `config`. It starts a fresh instance (state
// is kept) and configures it at once; a refusal wraps
// sluicetest.ErrBadConfig. Without a call to Configure the operator is
// configured before its first batch with no bytes, as the host does for an
// operator without config.
func (h *Harness) Configure(config []byte) error {
	h.config = bytes.Clone(config)
	return h.b.configure(h.config)
}

// Process runs one batch of records through the operator's instance with
// (*plugin.Instance).Process and returns what it emitted and rejected.
// Input record i has origin i; its Time is passed through as given. The
// host's rules apply, as sluicetest.Harness.Process describes them: a
// rejected or failed record leaves no trace, a failed batch is run again
// record by record, a trap replaces the instance with a fresh,
// reconfigured one. A Reject's Err wraps sluicetest.ErrTrap or
// sluicetest.ErrBatchFailed and the host's *plugin.RecordError (so
// errors.Is(err, runtime.ErrTimeout) and the like work).
//
// Process returns an error only when the operator cannot run: its
// configuration is refused (sluicetest.ErrBadConfig) or configuring it
// traps (sluicetest.ErrTrap). The batch then has no effect.
func (h *Harness) Process(records ...sluice.Record) ([]sluicetest.Output, []sluicetest.Reject, error) {
	outs, rejects, err := h.b.process(h.config, records)
	h.st.Commit()
	return outs, rejects, err
}

// State returns the value the operator stored for key in table, and whether
// there is one. The empty table name means the default table. The value is
// a copy. It panics when the table is not declared.
func (h *Harness) State(table, key string) ([]byte, bool) {
	v, ok := h.st.Contents(table)[key]
	return bytes.Clone(v), ok
}

// SetState stores value for key in table before a batch, as if an earlier
// run had left it; a nil value deletes the key. The empty table name means
// the default table. It panics when the table is not declared.
func (h *Harness) SetState(table, key string, value []byte) {
	h.st.Set(table, key, value)
}

// Logs returns the messages the operator has logged so far, oldest first.
func (h *Harness) Logs() []sluicetest.LogEntry {
	return append([]sluicetest.LogEntry(nil), h.logs...)
}

// Close releases the harness's instance. Using the harness afterwards starts
// a fresh one.
func (h *Harness) Close() { h.b.close() }
