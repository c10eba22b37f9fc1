package window

import (
	"encoding/binary"
	"fmt"
	"strings"

	"github.com/sluicehq/sluice/state"
)

// Describe returns a readable line for a state entry that an operator
// with namespace ns writes (for sluice state dump): a slice with its
// record count and the size of its accumulator or contents, a window's
// firing count, or a count firing waiting to be emitted. It reports false
// for a key of another namespace.
func Describe(ns string, k state.Key, value []byte) (string, bool) {
	rest, ok := strings.CutPrefix(string(k.Namespace), ns)
	if !ok {
		return "", false
	}
	w, err := decodeWindow(k.User)
	if err != nil {
		return "", false
	}
	switch rest {
	case sliceSuffix:
		n, p, err := splitSlice(value)
		if err != nil {
			return fmt.Sprintf("window key %q slice %v: %v", k.Route, w, err), true
		}
		return fmt.Sprintf("window key %q slice %v: %d records, %d bytes of state", k.Route, w, n, len(p)), true
	case metaSuffix:
		m, err := decodeMeta(value)
		if err != nil {
			return fmt.Sprintf("window key %q window %v: %v", k.Route, w, err), true
		}
		return fmt.Sprintf("window key %q window %v: fired %d times, on time: %t", k.Route, w, m.seq, m.flags&metaFired != 0), true
	case pendingSuffix:
		if len(k.User) != windowLen+4 || len(value) < 1 {
			return fmt.Sprintf("window key %q window %v: %v", k.Route, w, ErrCorrupt), true
		}
		return fmt.Sprintf("window key %q window %v: %s firing %d waiting, %d bytes", k.Route, w, Firing(value[0]),
			binary.BigEndian.Uint32(k.User[windowLen:]), len(value)-1), true
	}
	return "", false
}

// DescribeTimer returns a readable line for a timer that an operator
// with namespace ns sets, and false for a timer of another namespace.
func DescribeTimer(ns string, tm state.Timer) (string, bool) {
	if string(tm.Namespace) != ns || len(tm.Name) == 0 {
		return "", false
	}
	what := ""
	switch tm.Name[0] {
	case timerEarly:
		return fmt.Sprintf("window key %q: early firing at %s time %d", tm.Route, tm.Domain, tm.Time), true
	case timerFire:
		what = "fire"
	case timerCleanup:
		what = "purge"
	case timerCount:
		what = "emit count firing of"
	default:
		return "", false
	}
	w, err := decodeWindow(tm.Name[1:])
	if err != nil {
		return "", false
	}
	return fmt.Sprintf("window key %q: %s %v at %s time %d", tm.Route, what, w, tm.Domain, tm.Time), true
}

// Describe is the package's Describe for the operator's namespace.
func (o *Operator) Describe(k state.Key, value []byte) (string, bool) {
	return Describe(string(o.ns), k, value)
}
