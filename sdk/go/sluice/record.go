package sluice

import (
	"bytes"

	"github.com/sluicehq/sluice/abi"
)

// Header is one name/value pair carried with a record, like a NATS message
// header. It is the abi package's type, so headers pass between the SDK and
// the wire encoding without conversion.
type Header = abi.Header

// Record is one event as an operator sees it.
//
// A Record handed to a handler aliases the batch the host wrote into guest
// memory: Key, Value, header names and values are valid only until the
// handler returns, and the SDK reuses that memory for the next batch. Copy
// what must outlive the call (Clone does). A handler may modify the bytes in
// place (for example to upper-case Value) and may re-slice or replace the
// fields freely.
type Record struct {
	// Key is the record's key; keyed operators partition and keep state by it.
	Key []byte
	// Value is the record's payload.
	Value []byte
	// Time is the event time in nanoseconds since the Unix epoch.
	Time int64
	// Headers are the record's headers, in order. Names may repeat.
	Headers []Header
	// Input is the position, in the operator's inputs list of the
	// pipeline file, of the input the record arrived on: 0 for an operator
	// with one input. A join tells its sides apart by it. It is set on
	// the records the SDK hands a handler, and ignored on the records a
	// handler returns or emits: the host gives an output its input when
	// it feeds it to the next operator.
	Input int
}

// Header returns the value of the first header called name (compared
// byte for byte, case-sensitively) and whether there is one.
func (r *Record) Header(name string) ([]byte, bool) {
	for i := range r.Headers {
		if string(r.Headers[i].Name) == name {
			return r.Headers[i].Value, true
		}
	}
	return nil, false
}

// SetHeader sets the value of the first header called name, or appends a
// header when there is none. value is not copied. Appending allocates the
// header's name and a new Headers slice, so it never overwrites the headers
// of another record that shares r's backing array.
func (r *Record) SetHeader(name string, value []byte) {
	for i := range r.Headers {
		if string(r.Headers[i].Name) == name {
			r.Headers[i].Value = value
			return
		}
	}
	hs := make([]Header, len(r.Headers), len(r.Headers)+1)
	copy(hs, r.Headers)
	r.Headers = append(hs, Header{Name: []byte(name), Value: value})
}

// Clone returns a deep copy of r that owns all its bytes, for keeping a
// record after the handler returns.
func (r *Record) Clone() Record {
	c := Record{Key: bytes.Clone(r.Key), Value: bytes.Clone(r.Value), Time: r.Time, Input: r.Input}
	if r.Headers != nil {
		c.Headers = make([]Header, len(r.Headers))
		for i, h := range r.Headers {
			c.Headers[i] = Header{Name: bytes.Clone(h.Name), Value: bytes.Clone(h.Value)}
		}
	}
	return c
}
