package sluice

import "fmt"

// kind is the sort of operator a handler makes.
type kind uint8

const (
	kindNone kind = iota
	kindMap
	kindFilter
	kindFlatMap
	kindKeyed
)

func (k kind) String() string {
	switch k {
	case kindMap:
		return "Map"
	case kindFilter:
		return "Filter"
	case kindFlatMap:
		return "FlatMap"
	case kindKeyed:
		return "Keyed"
	}
	return "none"
}

// handlers is what a plugin registered: one record handler and optionally a
// configuration handler.
type handlers struct {
	kind      kind
	mapFn     func(Record) (Record, error)
	filterFn  func(Record) (bool, error)
	flatMapFn func(Record, *Emitter) error
	keyedFn   func(Record, *State, *Emitter) error
	configure func([]byte) error
	// sealed is set when the first batch or configuration arrives; handlers
	// registered later would be a bug in the plugin.
	sealed bool
}

// registered holds the handlers of this module. A module is one operator,
// so there is exactly one set, filled by the plugin's init functions, before
// the host makes any call; it is deliberately process-wide state.
var registered handlers

func (h *handlers) set(k kind, fnNil bool) {
	if fnNil {
		panic(fmt.Sprintf("sluice: %s called with a nil function", k))
	}
	if h.sealed {
		panic(fmt.Sprintf("sluice: %s called after the operator started; register handlers in an init function", k))
	}
	if h.kind != kindNone {
		panic(fmt.Sprintf("sluice: %s called, but a %s handler is already registered; a plugin registers exactly one handler", k, h.kind))
	}
	h.kind = k
}

// Map registers fn as the operator's handler: for each input record, fn
// returns the one output record. An error dead-letters the input record
// with the error's text and processing goes on with the next record.
//
// Register in an init function of package main: a plugin's main function
// never runs (see the package documentation).
func Map(fn func(r Record) (Record, error)) {
	registered.set(kindMap, fn == nil)
	registered.mapFn = fn
}

// Filter registers fn as the operator's handler: an input record is
// forwarded unchanged when fn returns true and dropped when it returns
// false. An error dead-letters the input record.
func Filter(fn func(r Record) (bool, error)) {
	registered.set(kindFilter, fn == nil)
	registered.filterFn = fn
}

// FlatMap registers fn as the operator's handler: for each input record, fn
// emits any number of output records through out. An error dead-letters the
// input record and discards what fn emitted for it.
func FlatMap(fn func(r Record, out *Emitter) error) {
	registered.set(kindFlatMap, fn == nil)
	registered.flatMapFn = fn
}

// Keyed registers fn as a keyed operator's handler: for each input record,
// st reads and writes the state of the record's key, and out emits output
// records. An error dead-letters the input record and leaves no trace of
// it: what fn emitted for it is discarded, and the host undoes the state
// changes fn made for it (running the rest of the batch again, one record
// per call, to tell them apart: fn must be deterministic).
func Keyed(fn func(r Record, st *State, out *Emitter) error) {
	registered.set(kindKeyed, fn == nil)
	registered.keyedFn = fn
}

// Configure registers fn to receive the operator's `config` from the
// pipeline file, encoded as JSON, once per instance before the first record.
// When the pipeline gives no config, fn receives the JSON text null, so that
// json.Unmarshal into a struct of defaults just works. An error rejects the configuration:
// the host refuses to start the operator and reports the error's text.
// config is valid only during the call.
//
// Without a Configure handler the operator accepts only an absent or empty
// configuration (null or {}).
func Configure(fn func(config []byte) error) {
	if fn == nil {
		panic("sluice: Configure called with a nil function")
	}
	if registered.sealed {
		panic("sluice: Configure called after the operator started; register handlers in an init function")
	}
	if registered.configure != nil {
		panic("sluice: Configure called twice; a plugin registers at most one configuration handler")
	}
	registered.configure = fn
}
