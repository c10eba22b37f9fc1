package sluice

import (
	"fmt"

	"github.com/sluicehq/sluice/abi"
)

// State reads and writes one key of a keyed operator's state: the key of the
// record being handled, in one declared table. The SDK passes a State bound
// to the operator's default table (the first table the pipeline declares for
// it); Table reaches the others.
//
// A State is valid only during the handler call it was passed to (or, for
// the result of Table, the call in which Table was called): the SDK rebinds
// it to the next record's key.
type State struct {
	g     *guest
	table int32
	key   []byte
}

// Key returns the key this State reads and writes: the record's key.
func (s *State) Key() []byte { return s.key }

// Get returns the value stored for the key and whether there is one.
//
// The value is copied into a buffer the SDK reuses: it is valid until the
// next Get on any State of the operator. Copy it to keep it, or convert it
// (strconv, json.Unmarshal) before the next Get.
func (s *State) Get() ([]byte, bool) {
	g := s.mustGuest()
	for attempt := 0; ; attempt++ {
		buf := g.scratch[:cap(g.scratch)]
		n := g.host.StateGet(s.table, s.key, buf)
		switch {
		case n == abi.StatusNotFound:
			return nil, false
		case n < 0:
			panic(fmt.Sprintf("sluice: state_get returned the unknown status %d", n))
		case int(n) <= len(buf):
			return buf[:n], true
		case attempt > 0:
			panic(fmt.Sprintf("sluice: state_get reported %d bytes after a retry with a %d-byte buffer", n, len(buf)))
		}
		// The value is larger than the buffer: grow with headroom and
		// ask again.
		g.scratch = make([]byte, int(n)+int(n)/4)
	}
}

// Put stores v as the key's value. The host copies v during the call.
func (s *State) Put(v []byte) {
	g := s.mustGuest()
	g.host.StatePut(s.table, s.key, v)
}

// Delete removes the key's value; Get then reports none.
func (s *State) Delete() {
	g := s.mustGuest()
	g.host.StateDelete(s.table, s.key)
}

// Table returns a State for the same key in the table called name, which the
// pipeline must declare for this operator. It panics, naming the table, when
// the table is not declared: the panic traps the guest call, and the host
// dead-letters the record with the message from the guest's stderr. The
// table's handle is resolved once per instance and cached.
func (s *State) Table(name string) *State {
	g := s.mustGuest()
	t, ok := g.tables[name]
	if !ok {
		id := g.host.TableID(name)
		if id < 0 {
			panic(fmt.Sprintf("sluice: state table %q is not declared for this operator; declare it in the operator's state tables in the pipeline", name))
		}
		if g.tables == nil {
			g.tables = make(map[string]*State)
		}
		t = &State{g: g, table: id}
		g.tables[name] = t
	}
	t.key = s.key
	return t
}

func (s *State) mustGuest() *guest {
	if s == nil || s.g == nil {
		panic("sluice: State used outside a Keyed handler")
	}
	return s.g
}
