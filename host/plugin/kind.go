package plugin

import (
	"errors"
	"fmt"
)

// Kind is the kind of operator a plugin serves. It decides which exports a
// module must provide and which host functions it may call.
type Kind string

// The operator kinds a plugin can serve.
const (
	// KindMap turns each input record into one output record.
	KindMap Kind = "map"
	// KindFilter passes some input records through and drops the others.
	KindFilter Kind = "filter"
	// KindFlatMap turns each input record into any number of output records.
	KindFlatMap Kind = "flatmap"
	// KindKeyed processes records partitioned by key and reads and writes the
	// state of the key it is processing.
	KindKeyed Kind = "keyed"
	// KindTransactional treats each input record as a transaction over
	// shared tables: the guest declares its operations (sluice_plan),
	// computes them when the host's scheduler runs them (sluice_apply), and
	// emits outputs from the outcomes (sluice_post). See Instance.Plan.
	KindTransactional Kind = "transactional"
)

// ErrUnknownKind is wrapped by the error ParseKind returns for a name that is
// not a kind.
var ErrUnknownKind = errors.New("unknown operator kind")

// ParseKind returns the Kind named s ("map", "filter", "flatmap", "keyed",
// "transactional").
func ParseKind(s string) (Kind, error) {
	switch k := Kind(s); k {
	case KindMap, KindFilter, KindFlatMap, KindKeyed, KindTransactional:
		return k, nil
	}
	return "", fmt.Errorf("%w %q: want map, filter, flatmap, keyed or transactional", ErrUnknownKind, s)
}

// Stateful reports whether operators of kind k have keyed state, and so may
// call the state host functions. A transactional operator reaches its
// tables through the txn_* functions instead.
func (k Kind) Stateful() bool { return k == KindKeyed }

// Transactional reports whether k is KindTransactional: its guest exports
// sluice_plan, sluice_apply and sluice_post instead of sluice_process.
func (k Kind) Transactional() bool { return k == KindTransactional }

// valid reports whether k is one of the kinds.
func (k Kind) valid() bool {
	_, err := ParseKind(string(k))
	return err == nil
}
