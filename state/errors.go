package state

import (
	"errors"
	"fmt"
)

// Errors a caller may test for with errors.Is. The errors this package
// returns wrap them with the directory, table or key group at fault.
var (
	// ErrLocked: the data directory is held by another open Store or Reader,
	// in this process or another one.
	ErrLocked = errors.New("data directory in use")
	// ErrKeyGroupMismatch: the data directory was created with a different
	// number of key groups than Options.KeyGroups asks for.
	ErrKeyGroupMismatch = errors.New("key group count mismatch")
	// ErrNotOwned: a Session touched a key whose key group it does not own.
	ErrNotOwned = errors.New("key group not owned")
	// ErrUnknownTable: no table of that name exists.
	ErrUnknownTable = errors.New("unknown table")
	// ErrCorrupt: the data directory holds data this package did not write
	// or cannot read.
	ErrCorrupt = errors.New("corrupt state")
	// ErrLayout: the data directory uses a layout version this build does
	// not read (written by a newer build), or an old one that only a
	// writable Open migrates (OpenReadOnly refuses it).
	ErrLayout = errors.New("unsupported state layout")
	// ErrUncommitted: a key group cannot be exported because it has writes
	// not yet committed.
	ErrUncommitted = errors.New("uncommitted state")
	// ErrBadExport: data given to ImportKeyGroup is not an export this
	// build reads, or not one of the key group and key group count asked.
	ErrBadExport = errors.New("bad key group export")
	// ErrClosed: the Store or Reader was closed.
	ErrClosed = errors.New("store closed")
	// ErrFailed: Pebble cannot write to the data directory (a full or
	// read-only disk, an I/O error) or hit an error it cannot continue
	// from; see Store.Err.
	ErrFailed = errors.New("state store failed")
)

// stateError carries a complete message plus the sentinel kind and the
// underlying cause, both reachable with errors.Is and errors.As.
type stateError struct {
	msg   string
	kind  error
	cause error
}

func (e *stateError) Error() string {
	if e.cause == nil {
		return e.msg
	}
	return e.msg + ": " + e.cause.Error()
}

func (e *stateError) Unwrap() []error {
	if e.cause == nil {
		return []error{e.kind}
	}
	return []error{e.kind, e.cause}
}

func newError(kind, cause error, format string, args ...any) error {
	return &stateError{msg: fmt.Sprintf(format, args...), kind: kind, cause: cause}
}

// NotOwnedError reports an access by a Session to a key of a key group the
// session's ownership predicate rejects. It matches ErrNotOwned with
// errors.Is; the state host functions turn it into a trap of the guest.
type NotOwnedError struct {
	Table    string // the table accessed
	KeyGroup int    // the key group of the key
}

func (e *NotOwnedError) Error() string {
	return fmt.Sprintf("state: table %q: key group %d is not owned by this worker", e.Table, e.KeyGroup)
}

// Unwrap returns ErrNotOwned.
func (e *NotOwnedError) Unwrap() error { return ErrNotOwned }
