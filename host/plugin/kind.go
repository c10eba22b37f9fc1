package plugin

import (
	"errors"
	"fmt"
	"strings"

	"github.com/sluicehq/sluice/abi"
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
	// KindAggregate folds the records of each key and window into an
	// accumulator the host keeps (sluice_agg_add), merges accumulators
	// (sluice_agg_merge) and turns an accumulator into results when its
	// window fires (sluice_agg_fire). See Instance.AggAdd.
	KindAggregate Kind = "aggregate"
	// KindWindow receives all of a key's records of a window when it
	// fires (sluice_window_fire). See Instance.WindowFire.
	KindWindow Kind = "window"
	// KindJoin builds the results of a join of two inputs from each pair
	// of records the host's join matched (sluice_join). See
	// Instance.Join.
	KindJoin Kind = "join"
)

// ErrUnknownKind is wrapped by the error ParseKind returns for a name that is
// not a kind.
var ErrUnknownKind = errors.New("unknown operator kind")

// ParseKind returns the Kind named s ("map", "filter", "flatmap", "keyed",
// "transactional", "aggregate", "window", "join").
func ParseKind(s string) (Kind, error) {
	switch k := Kind(s); k {
	case KindMap, KindFilter, KindFlatMap, KindKeyed, KindTransactional, KindAggregate, KindWindow, KindJoin:
		return k, nil
	}
	return "", fmt.Errorf("%w %q: want map, filter, flatmap, keyed, transactional, aggregate, window or join", ErrUnknownKind, s)
}

// Stateful reports whether operators of kind k have keyed state, and so may
// call the state host functions. A transactional operator reaches its
// tables through the txn_* functions instead.
func (k Kind) Stateful() bool { return k == KindKeyed }

// Transactional reports whether k is KindTransactional: its guest exports
// sluice_plan, sluice_apply and sluice_post instead of sluice_process.
func (k Kind) Transactional() bool { return k == KindTransactional }

// Windowed reports whether k is KindAggregate, KindWindow or KindJoin: its
// guest exports the window or join functions of ABI.md sections 13 and 14
// instead of sluice_process, and the host keeps its windows.
func (k Kind) Windowed() bool { return k == KindAggregate || k == KindWindow || k == KindJoin }

// batch reports whether operators of kind k process batches through
// sluice_process.
func (k Kind) batch() bool { return !k.Transactional() && !k.Windowed() }

// valid reports whether k is one of the kinds.
func (k Kind) valid() bool {
	_, err := ParseKind(string(k))
	return err == nil
}

// kinds returns every operator kind, in the order reports list them.
func kinds() []Kind {
	return []Kind{KindMap, KindFilter, KindFlatMap, KindKeyed, KindTransactional, KindAggregate, KindWindow, KindJoin}
}

// bit returns k's bit in the result of the sluice_kinds export.
func (k Kind) bit() int32 {
	switch k {
	case KindMap:
		return abi.KindBitMap
	case KindFilter:
		return abi.KindBitFilter
	case KindFlatMap:
		return abi.KindBitFlatMap
	case KindKeyed:
		return abi.KindBitKeyed
	case KindTransactional:
		return abi.KindBitTransactional
	case KindAggregate:
		return abi.KindBitAggregate
	case KindWindow:
		return abi.KindBitWindow
	case KindJoin:
		return abi.KindBitJoin
	}
	return 0
}

// kindsOf returns the kinds whose bits are set in bits, in order; bits of
// no kind are ignored.
func kindsOf(bits int32) []Kind {
	var ks []Kind
	for _, k := range kinds() {
		if bits&k.bit() != 0 {
			ks = append(ks, k)
		}
	}
	return ks
}

// orList joins kinds for messages: "map", "map or keyed", "map, filter
// or flatmap".
func orList(ks []Kind) string {
	s := make([]string, len(ks))
	for i, k := range ks {
		s[i] = string(k)
	}
	if len(s) < 2 {
		return strings.Join(s, "")
	}
	return strings.Join(s[:len(s)-1], ", ") + " or " + s[len(s)-1]
}
