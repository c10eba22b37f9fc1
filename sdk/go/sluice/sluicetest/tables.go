package sluicetest

import (
	"errors"
	"fmt"

	"github.com/sluicehq/sluice/abi"
)

// errNoTables is the error of a state call on a harness without tables.
var errNoTables = errors.New("the operator has no state tables (a stateless operator): declare them with Harness.Declare")

// Tables is a harness's keyed state: named in-memory tables, the first
// declared being the default table (handle abi.DefaultTable), with an undo
// log of the writes since the batch in progress began.
//
// Its methods TableID, Get, Put, Delete, Savepoint and RollbackTo are the
// host's plugin.State method set: the native harness's fake host reads and
// writes state through them, and the host's Wasm harness (package
// host/plugin/hosttest of the host's module) hands the same Tables to the
// real host. Invariants: stored values are never modified in place (Put
// stores a copy), so a value handed out by Get, or kept in the undo log,
// stays as it was; undo holds, oldest first, each write's table, key and
// the value it replaced, and is emptied by Commit between batches.
type Tables struct {
	names []string
	ids   map[string]int32
	data  []map[string][]byte
	undo  []undoEntry
}

// undoEntry is the state of one key before one write.
type undoEntry struct {
	table   int32
	key     string
	old     []byte
	existed bool
}

// NewTables returns Tables with no table declared.
func NewTables() *Tables { return &Tables{ids: map[string]int32{}} }

// Declare adds a table named name. It panics on an empty or repeated name: a
// mistake in the test.
func (t *Tables) Declare(name string) {
	if name == "" {
		panic("sluicetest: Declare: empty table name")
	}
	if _, dup := t.ids[name]; dup {
		panic(fmt.Sprintf("sluicetest: Declare: table %q declared twice", name))
	}
	t.ids[name] = int32(len(t.names))
	t.names = append(t.names, name)
	t.data = append(t.data, map[string][]byte{})
}

// Declared reports whether any table is declared: whether the operator is
// keyed.
func (t *Tables) Declared() bool { return len(t.names) > 0 }

// Contents returns the named table's map; "" is the default table. It panics
// when the table is not declared: a mistake in the test.
func (t *Tables) Contents(name string) map[string][]byte {
	if name == "" {
		if len(t.data) == 0 {
			panic("sluicetest: no table is declared; call Declare first")
		}
		return t.data[abi.DefaultTable]
	}
	id, ok := t.ids[name]
	if !ok {
		panic(fmt.Sprintf("sluicetest: table %q is not declared; call Declare first", name))
	}
	return t.data[id]
}

// table returns the map of handle id, or an error naming the fault.
func (t *Tables) table(id int32) (map[string][]byte, error) {
	if len(t.data) == 0 {
		return nil, errNoTables
	}
	if id < 0 || int(id) >= len(t.data) {
		return nil, fmt.Errorf("table handle %d is not declared (%d tables: %v)", id, len(t.data), t.names)
	}
	return t.data[id], nil
}

// TableID returns the handle of the table named name.
func (t *Tables) TableID(name string) (int32, bool) {
	id, ok := t.ids[name]
	return id, ok
}

// Get returns the value of key in table.
func (t *Tables) Get(table int32, key []byte) ([]byte, bool, error) {
	m, err := t.table(table)
	if err != nil {
		return nil, false, err
	}
	v, ok := m[string(key)]
	return v, ok, nil
}

// Put sets the value of key in table. It copies key and value, which alias guest
// memory.
func (t *Tables) Put(table int32, key, value []byte) error {
	m, err := t.table(table)
	if err != nil {
		return err
	}
	k := string(key)
	t.log(table, m, k)
	m[k] = append(make([]byte, 0, len(value)), value...)
	return nil
}

// Delete removes key from table.
func (t *Tables) Delete(table int32, key []byte) error {
	m, err := t.table(table)
	if err != nil {
		return err
	}
	k := string(key)
	if _, ok := m[k]; !ok {
		return nil
	}
	t.log(table, m, k)
	delete(m, k)
	return nil
}

// log records the value key has before a write.
func (t *Tables) log(table int32, m map[string][]byte, key string) {
	old, existed := m[key]
	t.undo = append(t.undo, undoEntry{table: table, key: key, old: old, existed: existed})
}

// Savepoint returns the undo log's position, for RollbackTo.
func (t *Tables) Savepoint() int { return len(t.undo) }

// RollbackTo undoes the writes made since
// Savepoint returned sp, newest first.
func (t *Tables) RollbackTo(sp int) {
	if sp < 0 || sp > len(t.undo) {
		panic(fmt.Sprintf("sluicetest: RollbackTo(%d): not a savepoint of the undo log (%d entries)", sp, len(t.undo)))
	}
	for i := len(t.undo) - 1; i >= sp; i-- {
		e := t.undo[i]
		if e.existed {
			t.data[e.table][e.key] = e.old
		} else {
			delete(t.data[e.table], e.key)
		}
	}
	clear(t.undo[sp:])
	t.undo = t.undo[:sp]
}

// Commit makes the writes so far permanent: it empties the undo log. The
// harness calls it between batches, when no savepoint is outstanding.
func (t *Tables) Commit() {
	clear(t.undo)
	t.undo = t.undo[:0]
}

// Set stores value for key in the named table outside any batch, as if an
// earlier run had left it; a nil value deletes the key.
func (t *Tables) Set(name, key string, value []byte) {
	m := t.Contents(name)
	if value == nil {
		delete(m, key)
		return
	}
	m[key] = append(make([]byte, 0, len(value)), value...)
}
