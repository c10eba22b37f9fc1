package plugin

// State is the keyed state a keyed operator reads and writes through the
// state host functions, provided by the executor for each Process call.
// Stateless operators get none.
//
// Keys and values passed to State alias guest memory and are valid only
// during the method call: an implementation that keeps them must copy them.
// Errors (an undeclared table handle, a key outside the worker's key groups)
// fail the guest call; the host wraps them, so errors.Is works on the
// Reject's error.
type State interface {
	// TableID resolves a table declared for the operator to its handle.
	TableID(name string) (int32, bool)
	// Get returns the value of key in table, and whether there is one. The
	// returned slice is copied into guest memory before the next State call.
	Get(table int32, key []byte) ([]byte, bool, error)
	// Put sets the value of key in table.
	Put(table int32, key, value []byte) error
	// Delete removes key from table.
	Delete(table int32, key []byte) error
	// Savepoint marks the current state; RollbackTo(sp) undoes every change
	// made after it. Savepoints nest: rolling back to one discards the later
	// ones.
	Savepoint() int
	// RollbackTo undoes every change made since Savepoint returned sp.
	RollbackTo(sp int)
}
