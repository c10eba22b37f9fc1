package state

import (
	"encoding/binary"
	"fmt"

	"github.com/RaduBerinde/btreemap"
)

// TimeDomain says which clock a timer follows.
type TimeDomain uint8

// The time domains of timers.
const (
	// EventTime timers fire when the watermark passes their time.
	EventTime TimeDomain = iota
	// ProcessingTime timers fire when the host's clock passes their time.
	ProcessingTime
)

// String returns "event" or "processing".
func (d TimeDomain) String() string {
	switch d {
	case EventTime:
		return "event"
	case ProcessingTime:
		return "processing"
	}
	return fmt.Sprintf("TimeDomain(%d)", uint8(d))
}

// Timer is a timer of one routing key: it is identified by its domain,
// time, routing key, namespace and name, and lives in the key group of its
// routing key. Timers are state: they are undone by RollbackTo, persisted
// by Commit, restored by Open, and exported, imported and dropped with
// their key group.
type Timer struct {
	Domain    TimeDomain
	Time      int64 // in the domain's unit, as the caller chooses (Unix milliseconds, say)
	Route     []byte
	Namespace []byte
	Name      []byte
}

// timerTableName is the name the timer index gives in errors.
const timerTableName = "(timers)"

// appendTimerKey appends the encoding of a timer: domain, time with its
// sign bit flipped (so that byte order is numeric order), then the key
// encoding of (route, namespace, name). Byte order is (domain, time, route,
// namespace, name) order.
func appendTimerKey(dst []byte, tm *Timer) []byte {
	dst = appendTimerBound(dst, tm.Domain, tm.Time)
	return appendKey(dst, tm.Route, tm.Namespace, tm.Name)
}

// appendTimerBound appends the prefix of every timer of domain at time t.
func appendTimerBound(dst []byte, d TimeDomain, t int64) []byte {
	dst = append(dst, byte(d))
	return binary.BigEndian.AppendUint64(dst, uint64(t)^(1<<63))
}

// timerHeaderLen is the length of a timer key's domain and time.
const timerHeaderLen = 1 + 8

// decodeTimer decodes a timer key; the parts alias enc unless they hold
// escaped bytes.
func decodeTimer(enc []byte) (Timer, error) {
	if len(enc) < timerHeaderLen+minTuple {
		return Timer{}, fmt.Errorf("timer key %x: %w", enc, errBadKey)
	}
	k, err := decodeKey(enc[timerHeaderLen:])
	if err != nil {
		return Timer{}, fmt.Errorf("timer key: %w", err)
	}
	d := TimeDomain(enc[0])
	if d > ProcessingTime {
		return Timer{}, fmt.Errorf("timer key %x: unknown time domain %d", enc, enc[0])
	}
	return Timer{
		Domain:    d,
		Time:      int64(binary.BigEndian.Uint64(enc[1:9]) ^ (1 << 63)),
		Route:     k.Route,
		Namespace: k.Namespace,
		Name:      k.User,
	}, nil
}

// timerGroup returns the timer group of key group kg after checking
// ownership.
func (se *Session) timerGroup(kg int) (*Group, error) {
	if kg < 0 || kg >= se.store.groups {
		return nil, fmt.Errorf("state: key group %d out of range 0..%d", kg, se.store.groups-1)
	}
	if se.owned != nil && !se.owned(kg) {
		return nil, &NotOwnedError{Table: timerTableName, KeyGroup: kg}
	}
	return &se.store.timers.groups[kg], nil
}

// SetTimer registers tm in the key group of tm.Route; registering a timer
// that exists does nothing. Ownership is checked on that key group, and
// the write is undone by RollbackTo.
func (se *Session) SetTimer(tm Timer) error {
	if tm.Domain > ProcessingTime {
		return fmt.Errorf("state: set timer %q: unknown time domain %d", tm.Name, tm.Domain)
	}
	g, err := se.timerGroup(KeyGroup(tm.Route, se.store.groups))
	if err != nil {
		return err
	}
	se.enc = appendTimerKey(se.enc[:0], &tm)
	if _, ok := g.getOrd(se.enc); ok {
		return nil
	}
	se.putOrd(g, se.enc, nil)
	return nil
}

// DeleteTimer removes tm if it is registered, as SetTimer writes.
func (se *Session) DeleteTimer(tm Timer) error {
	_, err := se.RemoveTimer(tm)
	return err
}

// RemoveTimer is DeleteTimer that reports whether tm was registered, so
// that a caller holding a list of due timers can tell one deleted since it
// was listed without keeping an index of its own.
func (se *Session) RemoveTimer(tm Timer) (bool, error) {
	g, err := se.timerGroup(KeyGroup(tm.Route, se.store.groups))
	if err != nil {
		return false, err
	}
	se.enc = appendTimerKey(se.enc[:0], &tm)
	return se.delOrd(g, se.enc), nil
}

// Timers calls fn for each timer of key group kg in domain whose time is
// at most upTo, in (time, route, namespace, name) order, until fn returns
// false. fn must not set or delete timers of kg; the Timer's slices are
// valid only during the call.
func (se *Session) Timers(kg int, domain TimeDomain, upTo int64, fn func(Timer) bool) error {
	g, err := se.timerGroup(kg)
	if err != nil {
		return err
	}
	if g.ord == nil {
		return nil
	}
	lo, hi := timerRange(domain, upTo)
	for enc := range g.ord.tree.Ascend(lo, hi) {
		if !fn(mustDecodeTimer(enc)) {
			break
		}
	}
	return nil
}

// PopTimers removes the timers of key group kg in domain whose time is at
// most upTo, earliest first in the order of Timers, calling fn with each
// after removing it, until fn returns false or none is left. fn may set and
// delete timers, of kg too: a timer it sets at or before upTo is popped in
// turn. The removals are undone by RollbackTo like any write.
func (se *Session) PopTimers(kg int, domain TimeDomain, upTo int64, fn func(Timer) bool) error {
	g, err := se.timerGroup(kg)
	if err != nil {
		return err
	}
	lo, hi := timerRange(domain, upTo)
	var key []byte
	for g.ord != nil {
		found := false
		for enc := range g.ord.tree.Ascend(lo, hi) {
			key = append(key[:0], enc...)
			found = true
			break
		}
		if !found {
			return nil
		}
		se.delOrd(g, key)
		tm, err := decodeTimer(key)
		if err != nil {
			panic(fmt.Sprintf("state: PopTimers: %v", err)) // encoded by this package
		}
		if !fn(tm) {
			return nil
		}
		key = nil // tm aliases it
	}
	return nil
}

// timerRange returns the bounds of the timer keys of domain up to upTo.
// Event-time timers sort first, so their lower bound is the tree's first
// key: the search for it descends the tree without comparing keys.
func timerRange(domain TimeDomain, upTo int64) (btreemap.LowerBound[string], btreemap.UpperBound[string]) {
	lo := btreemap.Min[string]()
	if domain != EventTime {
		lo = btreemap.GE(string(appendTimerBound(nil, domain, -1<<63)))
	}
	if upTo == 1<<63-1 {
		return lo, btreemap.LT(string([]byte{byte(domain) + 1}))
	}
	return lo, btreemap.LT(string(appendTimerBound(nil, domain, upTo+1)))
}

func mustDecodeTimer(enc string) Timer {
	tm, err := decodeTimer(bytesOf(enc))
	if err != nil {
		panic(fmt.Sprintf("state: %v", err)) // encoded by this package
	}
	return tm
}
