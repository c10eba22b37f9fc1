package window

import (
	"context"
	"fmt"

	"github.com/sluicehq/sluice/abi"
)

// Function is the user logic of a window. Every Function fires windows;
// one that also implements Accumulator folds records into an accumulator
// as they arrive (an incremental aggregate), and one that does not is a
// collecting function: the operator keeps the records themselves and hands
// a window's records to Fire (for what cannot be incremental: medians,
// top-k). The calls are batched: one call covers every window of a batch,
// so that a Wasm guest is entered once per batch, not per record.
type Function interface {
	// Fire computes the results of the windows that fire, calling emit
	// with the index in fires of the window each result belongs to. The
	// operator sets each result's Time to its window's MaxTime, and its
	// Key to the window's key when emit leaves it empty. Fire must not
	// keep or modify the slices it is given.
	Fire(ctx context.Context, fires []Fire, emit func(i int, r abi.Record)) error
}

// Accumulator is a Function that keeps an incremental accumulator per key
// and slice.
type Accumulator interface {
	Function
	// Add folds each group's records into its accumulator (nil for a new
	// one) and sets the group's Out to the new accumulator; a record that
	// cannot be folded is listed in Rejected, with its reason, and left
	// out. Out must stay valid until the next call of the Function.
	Add(ctx context.Context, groups []Group) error
	// Merge combines two accumulators into Out (slices of a window,
	// sessions that merge), with the same validity rule.
	Merge(ctx context.Context, pairs []Pair) error
}

// Group is the records of one batch that fall into one slice of one key,
// in arrival order, given to Accumulator.Add.
type Group struct {
	Key      []byte
	Slice    Window
	Acc      []byte // nil when the slice has no accumulator yet
	Recs     []abi.Record
	Out      []byte      // the new accumulator, set by Add
	Rejected []Rejection // set by Add
}

// Rejection is a record that a function refuses, by its index in
// Group.Recs, with the reason. The operator returns it to its caller,
// which routes it to the dead-letter sink.
type Rejection struct {
	Index  int
	Reason string
}

// Pair is two accumulators of one key to merge into Out.
type Pair struct {
	Key  []byte
	A, B []byte
	Out  []byte // set by Merge
}

// Firing says why a window fires.
type Firing uint8

// The firings.
const (
	// OnTimeFiring is the firing when time passes the window's end (or
	// its count is reached, for a count trigger).
	OnTimeFiring Firing = iota
	// EarlyFiring emits a window before its end and keeps it.
	EarlyFiring
	// LateFiring emits a window again after a record arrived within the
	// allowed lateness.
	LateFiring
)

// String returns "on-time", "early" or "late".
func (f Firing) String() string {
	switch f {
	case OnTimeFiring:
		return "on-time"
	case EarlyFiring:
		return "early"
	case LateFiring:
		return "late"
	}
	return fmt.Sprintf("Firing(%d)", uint8(f))
}

// Fire is one window of one key that fires.
type Fire struct {
	Key    []byte
	Window Window
	Firing Firing
	Seq    uint32
	// Acc is the window's accumulator (an Accumulator's).
	Acc []byte
	// Recs are the window's records (a collecting function's), in event
	// time order, records of equal time in arrival order.
	Recs []abi.Record
}

// Result is one output of a window firing.
type Result struct {
	// Record is the output; its Time is Window.MaxTime().
	Record abi.Record
	Key    []byte
	Window Window
	Firing Firing
	// Seq counts the firings of the window before this one (0 for the
	// first): with Key, Window and the result's position among its
	// firing's results it makes an id that a replay reproduces.
	Seq uint32
}

// Late is a record that Add did not take: too late for every window it
// belongs to, or rejected by the function.
type Late struct {
	// Index is the record's index in Add's recs.
	Index int
	// Rejected is true when the function refused the record (a dead
	// letter), false when it came too late (for the late sink).
	Rejected bool
	Reason   string
}
