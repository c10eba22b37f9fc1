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
	kindTxn
	kindAggregate
	kindWindow
	kindJoin
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
	case kindTxn:
		return "Transactional"
	case kindAggregate:
		return "Aggregate"
	case kindWindow:
		return "WindowFunc"
	case kindJoin:
		return "JoinFunc"
	}
	return "none"
}

// handlers is what a plugin registered: one record handler and optionally a
// configuration handler.
type handlers struct {
	kind kind
	name string // the function that registered the record handler, for messages
	// Exactly one of the record handlers is set, the one of kind: for
	// kindMap, mapFn or mapInPlaceFn.
	mapFn        func(Record) (Record, error)
	mapInPlaceFn func(*Record) error
	filterFn     func(Record) (bool, error)
	flatMapFn    func(Record, *Emitter) error
	keyedFn      func(Record, *State, *Emitter) error
	txn          *Txn
	aggregate    Aggregator
	windowFn     func(key []byte, w Window, recs []Record, out *Emitter) error
	joinFn       func(key []byte, w *Window, left, right *Record, out *Emitter) error
	configure    func([]byte) error
	// sealed is set when the first batch or configuration arrives; handlers
	// registered later would be a bug in the plugin.
	sealed bool
}

// registered holds the handlers of this module. A module is one operator,
// so there is exactly one set, filled by the plugin's init functions, before
// the host makes any call; it is deliberately process-wide state.
var registered handlers

// set records that name (Map, MapInPlace, ...) registers a handler of kind
// k, after checking that it may.
func (h *handlers) set(k kind, name string, fnNil bool) {
	if fnNil {
		panic(fmt.Sprintf("sluice: %s called with a nil function", name))
	}
	if h.sealed {
		panic(fmt.Sprintf("sluice: %s called after the operator started; register handlers in an init function", name))
	}
	if h.kind != kindNone {
		panic(fmt.Sprintf("sluice: %s called, but a %s handler is already registered; a plugin registers exactly one handler", name, h.name))
	}
	h.kind, h.name = k, name
}

// Map registers fn as the operator's handler: for each input record, fn
// returns the one output record. An error dead-letters the input record
// with the error's text and processing goes on with the next record. An
// output that is the input record, its bytes changed in place or not, is
// forwarded without being encoded again. MapInPlace is the faster form of
// the same handler in WebAssembly.
//
// Register in an init function of package main: a plugin's main function
// never runs (see the package documentation).
func Map(fn func(r Record) (Record, error)) {
	registered.set(kindMap, "Map", fn == nil)
	registered.mapFn = fn
}

// MapInPlace registers fn as the operator's handler, like Map, for a
// handler that changes the record it is given instead of returning a new
// one: fn receives a pointer to the input record and may change any of its
// fields, and the bytes they point to, as Map's handler may; what *r holds
// when fn returns is the output record. Any map can be written either way.
// An error dead-letters the input record with the error's text and
// processing goes on with the next record.
//
// MapInPlace is Map's faster form in WebAssembly, where passing a Record
// by value and returning one costs about 60 ns per record (Go's WebAssembly
// code zeroes, copies and copies back its 80 bytes through calls to
// memmove); natively the two cost the same. r and the bytes it points to
// are valid only during the call, as for every handler; the SDK reuses *r
// for the next record.
//
// A record whose Key, Value and Headers slices fn leaves where they point,
// and whose Time it leaves alone, is forwarded without being encoded again,
// whatever fn did to the bytes (see the package documentation).
func MapInPlace(fn func(r *Record) error) {
	registered.set(kindMap, "MapInPlace", fn == nil)
	registered.mapInPlaceFn = fn
}

// Filter registers fn as the operator's handler: an input record is
// forwarded unchanged when fn returns true and dropped when it returns
// false. An error dead-letters the input record.
func Filter(fn func(r Record) (bool, error)) {
	registered.set(kindFilter, "Filter", fn == nil)
	registered.filterFn = fn
}

// FlatMap registers fn as the operator's handler: for each input record, fn
// emits any number of output records through out. An error dead-letters the
// input record and discards what fn emitted for it.
func FlatMap(fn func(r Record, out *Emitter) error) {
	registered.set(kindFlatMap, "FlatMap", fn == nil)
	registered.flatMapFn = fn
}

// Keyed registers fn as a keyed operator's handler: for each input record,
// st reads and writes the state of the record's key, and out emits output
// records. An error dead-letters the input record and leaves no trace of
// it: what fn emitted for it is discarded, and the host undoes the state
// changes fn made for it (running the rest of the batch again, one record
// per call, to tell them apart: fn must be deterministic).
func Keyed(fn func(r Record, st *State, out *Emitter) error) {
	registered.set(kindKeyed, "Keyed", fn == nil)
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
