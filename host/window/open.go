package window

import (
	"github.com/sluicehq/sluice/state"
)

// NamespaceOf is the namespace of the windows and timers of the windowed
// operator whose table is table (a pipeline names it after the operator):
// each operator of a store needs its own (WithNamespace).
func NamespaceOf(table string) string { return DefaultNamespace + ":" + table }

// OpenSlices counts the slices (panes) of open windows that operators
// with namespace ns keep in table of store: what a restarted operator
// starts from, since Stats counts from when it was made.
func OpenSlices(store *state.Store, table, ns string) (int64, error) {
	var n int64
	err := store.ScanKeys(table, func(k state.Key, _ []byte) error {
		if string(k.Namespace) == ns+sliceSuffix {
			n++
		}
		return nil
	})
	return n, err
}
