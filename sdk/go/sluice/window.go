package sluice

import "github.com/sluicehq/sluice/abi"

// Window is a window [Start, End) of event time, in nanoseconds since the
// Unix epoch, as it fires. The host keeps windows (their assigner, trigger
// and lateness are the pipeline's); a window function sees them only when
// they fire. The results a window function emits carry End-1 as their
// Time, set by the host, so windowed operators chain.
type Window struct {
	Start, End int64
	// Firing says why the window fires.
	Firing Firing
}

// Firing says why a window fires.
type Firing uint8

// The firings of a window.
const (
	// OnTime is the firing at the window's end.
	OnTime Firing = iota
	// Early is a firing before the window's end, from an early trigger:
	// the window fires again later.
	Early
	// Late is a firing after the window's end, when records that arrived
	// late, within the allowed lateness, changed the window: it updates a
	// result emitted before.
	Late
)

// String returns the firing as the host's sluice-firing header names it:
// "on-time", "early" or "late".
func (f Firing) String() string {
	switch f {
	case Early:
		return abi.FiringEarly
	case Late:
		return abi.FiringLate
	}
	return abi.FiringOnTime
}

// parseFiring returns the Firing the header value s names.
func parseFiring(s []byte) (Firing, bool) {
	switch string(s) {
	case abi.FiringOnTime:
		return OnTime, true
	case abi.FiringEarly:
		return Early, true
	case abi.FiringLate:
		return Late, true
	}
	return 0, false
}

// Aggregator is an aggregate operator's logic: an incremental accumulator
// per key and window, which the host keeps between calls (in its state,
// committed with the sources' positions). The guest never sees a window's
// records twice: Add folds each in once, Merge combines the accumulators of
// a window's slices (and of session windows that merge), Fire turns an
// accumulator into results.
//
// An accumulator is bytes of the aggregate's own encoding, at least one
// byte long: the host marks "none yet" with no bytes, and Add then
// receives a nil acc. A count is 8 little-endian bytes, a sum and a count
// 16.
//
// The methods must be deterministic functions of their arguments: the
// host calls them again with the same input after a failure or a
// recovery.
type Aggregator interface {
	// Add folds r into acc, nil when the window's slice has none yet, and
	// returns the new accumulator, which must not be empty. acc is valid
	// only during the call; Add may modify its bytes and return it. An
	// error dead-letters r, which is not folded: acc stays as it was.
	Add(acc []byte, r Record) ([]byte, error)
	// Merge returns the accumulator of the records of both a and b, which
	// must not be empty; a and b may be modified and returned. Merge must
	// be associative and commutative in what Fire makes of its results.
	// An error fails the host's call.
	Merge(a, b []byte) ([]byte, error)
	// Fire emits the results of key's window w from its accumulator acc
	// through out: any number, zero included. The host sets each result's
	// Time to w.End-1. An error dead-letters the firing: what Fire emitted
	// for it is discarded.
	Fire(key []byte, w Window, acc []byte, out *Emitter) error
}

// Aggregate registers a as the operator's handler, for an aggregate
// operator (kind: aggregate in the pipeline file). The host calls a's
// methods in batches, many keys and windows per guest call.
//
// Register in an init function of package main: a plugin's main function
// never runs.
func Aggregate(a Aggregator) {
	registered.set(kindAggregate, "Aggregate", a == nil)
	registered.aggregate = a
}

// WindowFunc registers fn as a window function's handler (kind: window in
// the pipeline file): when key's window w fires, fn receives all its
// records, in the order they arrived, and emits its results through out,
// for what cannot be computed incrementally (a median, a top-k with ties).
// The host sets each result's Time to w.End-1. recs and their bytes are
// valid only during the call. An error dead-letters every record of the
// window and discards what fn emitted for it.
func WindowFunc(fn func(key []byte, w Window, recs []Record, out *Emitter) error) {
	registered.set(kindWindow, "WindowFunc", fn == nil)
	registered.windowFn = fn
}

// operators returns the pipeline kind of the operators a handler of kind k
// serves, for messages.
func (k kind) operators() string {
	switch k {
	case kindAggregate:
		return "aggregate"
	case kindWindow:
		return "window"
	case kindJoin:
		return "join"
	case kindTxn:
		return "transactional"
	}
	return "map, filter, flatmap or keyed"
}
