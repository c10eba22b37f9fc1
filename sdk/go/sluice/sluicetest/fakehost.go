package sluicetest

import (
	"errors"
	"fmt"
	"maps"

	"github.com/sluicehq/sluice/abi"
	"github.com/sluicehq/sluice/sdk/go/sluice"
)

// trap is what the fake host panics with when the guest misuses a host
// function; the transport turns it into an error wrapping ErrTrap.
type trap struct {
	fn     string
	reason string
}

func (t *trap) Error() string { return fmt.Sprintf("host function %s: %s", t.fn, t.reason) }

func trapf(fn, format string, args ...any) {
	panic(&trap{fn: fn, reason: fmt.Sprintf(format, args...)})
}

// fakeHost implements the host functions of ABI version 1 over in-memory
// tables, checking what the real host checks.
type fakeHost struct {
	tables []string
	ids    map[string]int32
	state  []map[string][]byte
	logs   []LogEntry

	configuring bool
	inBatch     bool
	batchLen    int
	outs        []Output
	rejects     []Reject
}

func newFakeHost() *fakeHost { return &fakeHost{ids: map[string]int32{}} }

// table returns the named table's map; "" is the default table. It panics
// when the table is not declared: a mistake in the test.
func (f *fakeHost) table(name string) map[string][]byte {
	if name == "" {
		if len(f.state) == 0 {
			panic("sluicetest: no table is declared; call Declare first")
		}
		return f.state[0]
	}
	id, ok := f.ids[name]
	if !ok {
		panic(fmt.Sprintf("sluicetest: table %q is not declared; call Declare first", name))
	}
	return f.state[id]
}

// snapshot returns a copy of the state tables to restore after a failed
// batch. Stored values are never modified in place, so copying the maps is
// enough.
func (f *fakeHost) snapshot() []map[string][]byte {
	s := make([]map[string][]byte, len(f.state))
	for i, m := range f.state {
		s[i] = maps.Clone(m)
	}
	return s
}

func (f *fakeHost) restore(s []map[string][]byte) { f.state = s }

func (f *fakeHost) begin(n int) {
	f.inBatch, f.batchLen, f.outs, f.rejects = true, n, nil, nil
}

func (f *fakeHost) end() ([]Output, []Reject) {
	outs, rejects := f.outs, f.rejects
	f.inBatch, f.outs, f.rejects = false, nil, nil
	return outs, rejects
}

// lastError returns the last message logged at LevelError, which the host
// reports as the reason of a failed call.
func (f *fakeHost) lastError() string {
	for i := len(f.logs) - 1; i >= 0; i-- {
		if f.logs[i].Level == sluice.LevelError {
			return f.logs[i].Message
		}
	}
	return "(the guest logged no error)"
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
	var r abi.Record
	for d.Next(&r) {
		if int(r.Origin) >= f.batchLen {
			trapf(abi.FuncEmit, "output origin %d is outside the input batch of %d records", r.Origin, f.batchLen)
		}
		out := sluice.Record{Key: r.Key, Value: r.Value, Time: r.Time, Headers: r.Headers}
		f.outs = append(f.outs, Output{Origin: int(r.Origin), Record: out.Clone()})
	}
	if err := d.Err(); err != nil {
		trapf(abi.FuncEmit, "%v", err)
	}
}

func (f *fakeHost) Reject(origin uint32, msg string) {
	f.mustBatch(abi.FuncReject)
	if int(origin) >= f.batchLen {
		trapf(abi.FuncReject, "origin %d is outside the input batch of %d records", origin, f.batchLen)
	}
	f.rejects = append(f.rejects, Reject{Origin: int(origin), Message: msg})
}

func (f *fakeHost) TableID(name string) int32 {
	if len(f.tables) == 0 {
		trapf(abi.FuncTableID, "the operator has no state tables (a stateless operator)")
	}
	if id, ok := f.ids[name]; ok {
		return id
	}
	return abi.StatusNotFound
}

// tableFor checks a state call's table handle and returns its map.
func (f *fakeHost) tableFor(fn string, table int32) map[string][]byte {
	f.mustBatch(fn)
	if len(f.state) == 0 {
		trapf(fn, "the operator has no state tables (a stateless operator)")
	}
	if table < 0 || int(table) >= len(f.state) {
		trapf(fn, "table handle %d is not declared (%d tables)", table, len(f.state))
	}
	return f.state[table]
}

func (f *fakeHost) StateGet(table int32, key, buf []byte) int32 {
	v, ok := f.tableFor(abi.FuncStateGet, table)[string(key)]
	if !ok {
		return abi.StatusNotFound
	}
	if len(v) <= len(buf) {
		copy(buf, v)
	}
	return int32(len(v))
}

func (f *fakeHost) StatePut(table int32, key, value []byte) {
	f.tableFor(abi.FuncStatePut, table)[string(key)] = append(make([]byte, 0, len(value)), value...)
}

func (f *fakeHost) StateDelete(table int32, key []byte) {
	delete(f.tableFor(abi.FuncStateDelete, table), string(key))
}

func (f *fakeHost) Log(level int32, msg string) {
	if level < abi.LogDebug || level > abi.LogError {
		trapf(abi.FuncLog, "unknown level %d", level)
	}
	f.logs = append(f.logs, LogEntry{Level: sluice.Level(level), Message: msg})
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
