package sluicetest

import (
	"bytes"
	"errors"
	"fmt"

	"github.com/sluicehq/sluice/abi"
	"github.com/sluicehq/sluice/sdk/go/sluice"
)

// Errors reported by a Harness, matched with errors.Is.
var (
	// ErrTrap: the guest trapped: it panicked, exited, ran out of time or
	// memory, or misused a host function (the message says which). A
	// record whose processing traps becomes a Reject whose Err wraps
	// ErrTrap; a trap while configuring fails Configure or Process. After a
	// trap the harness replaces the instance with a fresh, reconfigured
	// one, as the host does; state is kept.
	ErrTrap = errors.New("sluicetest: guest trapped")
	// ErrBatchFailed: sluice_process returned a status other than
	// abi.StatusOK (abi.StatusError); the message carries the guest's last
	// error log. A record whose own call fails so becomes a Reject whose
	// Err wraps ErrBatchFailed.
	ErrBatchFailed = errors.New("sluicetest: guest failed the batch")
	// ErrBadConfig: sluice_configure returned abi.StatusBadConfig; the
	// message carries the guest's reason. Configure and Process return it.
	ErrBadConfig = errors.New("sluicetest: configuration rejected")
	// ErrBadInput: Process was given a record whose Input no pipeline
	// can give: negative, or abi.MaxInputs or more.
	ErrBadInput = errors.New("sluicetest: record input out of range")
)

// Output is a record the operator emitted, with the index of the input
// record it came from. Its bytes are copies owned by the caller.
type Output struct {
	Origin int
	sluice.Record
}

// Reject is an input record that the operator dead-lettered, or whose
// processing failed. Either way it left no trace: its outputs are dropped
// and, for a keyed operator, its state changes undone.
type Reject struct {
	Origin int
	// Message is the operator's message for a record it rejected (its
	// handler's error), or Err's text for a record whose processing
	// failed.
	Message string
	// Err is nil for a record the operator rejected. For a record whose
	// guest call failed it says why: it wraps ErrTrap or ErrBatchFailed.
	Err error
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

// Harness runs a plugin's operator as the host does, against in-memory
// state: it configures the operator, hands it batches of records, and
// collects what it emits, rejects and logs. New makes one that runs the
// handler registered in the test binary. A Harness is not safe for
// concurrent use; separate harnesses may be used from parallel tests.
type Harness struct {
	b      *nativeBackend
	st     *Tables
	logs   []LogEntry
	config []byte
}

// Declare declares state tables for the operator, in order: the first table
// ever declared is the default table (handle 0), as the first of a keyed
// operator's `state:` list in a pipeline. It panics on an empty or repeated
// name. It returns h for chaining.
//
// A harness with declared tables runs its operator as a keyed one;
// without any, as a stateless one, whose state calls trap, as in the host.
func (h *Harness) Declare(tables ...string) *Harness {
	for _, name := range tables {
		h.st.Declare(name)
	}
	return h
}

// Configure gives the operator config, its configuration as JSON, as the
// host does from the pipeline's `config`. It starts a fresh instance (state
// is kept) and configures it at once; a refusal wraps ErrBadConfig. Without
// a call to Configure the operator is configured before its first batch
// with no bytes, as the host does for an operator without config (the SDK
// hands its Configure handler null).
func (h *Harness) Configure(config []byte) error {
	h.config = bytes.Clone(config)
	return h.b.configure(h.config)
}

// Process runs one batch of records through the operator and returns what
// it emitted and rejected, as the host's plugin.Instance.Process does.
// Input record i has origin i; its Time is passed through as given.
//
// A record the operator rejects (its handler returns an error), or whose
// processing fails, becomes a Reject and leaves no trace: its outputs are
// dropped and, for a keyed operator, its state writes undone. When the
// batch call fails (the guest traps or returns an error status), the
// batch's outputs are dropped and its state changes undone, and its records
// are run again one call each, so that only the failing ones are rejected,
// with Reject.Err saying why; a trap replaces the instance with a fresh,
// reconfigured one. A keyed batch in which records were rejected is also
// undone and run again record by record, to tell the rejected records'
// writes apart. So a record may be processed twice, as in the host:
// handlers must be deterministic.
//
// Process returns an error only when the operator cannot run: its
// configuration is refused (ErrBadConfig) or configuring it traps
// (ErrTrap). The batch then has no effect.
func (h *Harness) Process(records ...sluice.Record) ([]Output, []Reject, error) {
	if err := checkInputs(records); err != nil {
		return nil, nil, err
	}
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
func (h *Harness) Logs() []LogEntry {
	return append([]LogEntry(nil), h.logs...)
}

// Close releases the harness's instance. Using the harness afterwards starts
// a fresh one.
func (h *Harness) Close() { h.b.close() }

// checkInputs refuses records whose Input does not fit the encoding.
func checkInputs(records []sluice.Record) error {
	for i := range records {
		if in := records[i].Input; in < 0 || in >= abi.MaxInputs {
			return fmt.Errorf("%w: record %d has Input %d, want 0 to %d", ErrBadInput, i, in, abi.MaxInputs-1)
		}
	}
	return nil
}

// appendBatch appends the encoded batch of in to dst, origins from 0, as
// the host encodes a batch.
func appendBatch(dst []byte, in []sluice.Record) []byte {
	dst = abi.AppendBatchHeader(dst, uint32(len(in)))
	for i := range in {
		r := &in[i]
		dst = abi.AppendRecord(dst, &abi.Record{Origin: uint32(i), Input: uint16(r.Input), Time: r.Time, Key: r.Key, Value: r.Value, Headers: r.Headers})
	}
	return dst
}

// withoutRejected returns outs less the outputs of rejected records.
func withoutRejected(outs []Output, rejects []Reject) []Output {
	kept := outs[:0]
	for _, o := range outs {
		rejected := false
		for _, r := range rejects {
			if r.Origin == o.Origin {
				rejected = true
				break
			}
		}
		if !rejected {
			kept = append(kept, o)
		}
	}
	if len(kept) == 0 {
		return nil
	}
	return kept
}
