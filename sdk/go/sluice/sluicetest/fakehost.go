package sluicetest

import (
	"errors"
	"fmt"

	"github.com/sluicehq/sluice/abi"
	"github.com/sluicehq/sluice/sdk/go/sluice"
)

// trap is what the fake host panics with when the guest misuses a host
// function; the native transport turns it into an error wrapping ErrTrap.
type trap struct {
	fn     string
	reason string
}

func (t *trap) Error() string { return fmt.Sprintf("host function %s: %s", t.fn, t.reason) }

func trapf(fn, format string, args ...any) {
	panic(&trap{fn: fn, reason: fmt.Sprintf(format, args...)})
}

// fakeHost implements the host functions of ABI version 1 for the SDK's
// guest core running in this process, over the harness's tables and log,
// checking what the real host checks. One guest call at a time: begin
// starts collecting a sluice_process call's outputs and rejects, end hands
// them over.
type fakeHost struct {
	st   *Tables
	logs *[]LogEntry

	inBatch  bool
	batchLen int // records in the call's input batch: the bound of an output's origin
	rejectN  int // the bound of a rejected origin: batchLen, but for the window exports
	base     int // index, in the harness's batch, of the call's record 0
	outs     []Output
	rejects  []Reject
	lastErr  string // the last LevelError message of the call
}

func newFakeHost(st *Tables, logs *[]LogEntry) *fakeHost {
	return &fakeHost{st: st, logs: logs}
}

// begin prepares a guest call; n is the number of records it is given, base
// the index of its first record in the harness's batch (0 for configure).
func (f *fakeHost) begin(process bool, n, base int) {
	f.inBatch, f.batchLen, f.rejectN, f.base = process, n, n, base
	f.outs, f.rejects, f.lastErr = nil, nil, ""
}

// end finishes a guest call and returns what it emitted and rejected.
func (f *fakeHost) end() ([]Output, []Reject) {
	outs, rejects := f.outs, f.rejects
	f.inBatch, f.outs, f.rejects = false, nil, nil
	return outs, rejects
}

// reason returns the guest's last error message of the call, which the
// host reports as the reason of a failed call.
func (f *fakeHost) reason() string { return reason(f.lastErr) }

// reason renders a guest's error message for an error.
func reason(msg string) string {
	if msg == "" {
		return "(the guest logged no error)"
	}
	return msg
}

func (f *fakeHost) mustBatch(fn string) {
	if !f.inBatch {
		trapf(fn, "called outside sluice_process")
	}
}

func (f *fakeHost) Emit(batch []byte) {
	f.mustBatch(abi.FuncEmit)
	d, err := abi.NewDecoder(batch)
	if err != nil {
		trapf(abi.FuncEmit, "%v", err)
	}
	// The SDK declares abi.FeatureInputs: a forwarded input keeps its
	// input in its flags, which the host accepts and ignores.
	d.AllowInputs(true)
	var r abi.Record
	for d.Next(&r) {
		if int(r.Origin) >= f.batchLen {
			trapf(abi.FuncEmit, "output origin %d is outside the input batch of %d records", r.Origin, f.batchLen)
		}
		out := sluice.Record{Key: r.Key, Value: r.Value, Time: r.Time, Headers: r.Headers}
		f.outs = append(f.outs, Output{Origin: f.base + int(r.Origin), Record: out.Clone()})
	}
	if err := d.Err(); err != nil {
		trapf(abi.FuncEmit, "%v", err)
	}
}

func (f *fakeHost) Reject(origin uint32, msg string) {
	f.mustBatch(abi.FuncReject)
	if int(origin) >= f.rejectN {
		trapf(abi.FuncReject, "origin %d is outside the input batch of %d records", origin, f.rejectN)
	}
	f.rejects = append(f.rejects, Reject{Origin: f.base + int(origin), Message: msg})
}

func (f *fakeHost) TableID(name string) int32 {
	f.mustBatch(abi.FuncTableID)
	if !f.st.Declared() {
		trapf(abi.FuncTableID, "%v", errNoTables)
	}
	if id, ok := f.st.TableID(name); ok {
		return id
	}
	return abi.StatusNotFound
}

func (f *fakeHost) StateGet(table int32, key, buf []byte) int32 {
	f.mustBatch(abi.FuncStateGet)
	v, ok, err := f.st.Get(table, key)
	if err != nil {
		trapf(abi.FuncStateGet, "%v", err)
	}
	if !ok {
		return abi.StatusNotFound
	}
	if len(v) <= len(buf) {
		copy(buf, v)
	}
	return int32(len(v))
}

func (f *fakeHost) StatePut(table int32, key, value []byte) {
	f.mustBatch(abi.FuncStatePut)
	if err := f.st.Put(table, key, value); err != nil {
		trapf(abi.FuncStatePut, "%v", err)
	}
}

func (f *fakeHost) StateDelete(table int32, key []byte) {
	f.mustBatch(abi.FuncStateDelete)
	if err := f.st.Delete(table, key); err != nil {
		trapf(abi.FuncStateDelete, "%v", err)
	}
}

func (f *fakeHost) Log(level int32, msg string) {
	if level < abi.LogDebug || level > abi.LogError {
		trapf(abi.FuncLog, "unknown level %d", level)
	}
	if level == abi.LogError {
		f.lastErr = msg
	}
	*f.logs = append(*f.logs, LogEntry{Level: sluice.Level(level), Message: msg})
}

// asTrap turns a value recovered from a panic in guest code or in a fake
// host function into an error wrapping ErrTrap.
func asTrap(v any) error {
	var t *trap
	if err, ok := v.(error); ok && errors.As(err, &t) {
		return fmt.Errorf("%w: %s", ErrTrap, t.Error())
	}
	return fmt.Errorf("%w: panic: %v", ErrTrap, v)
}
