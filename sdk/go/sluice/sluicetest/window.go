package sluicetest

import (
	"errors"
	"fmt"

	"github.com/sluicehq/sluice/abi"
	"github.com/sluicehq/sluice/sdk/go/sluice"
)

// ErrAccumulators: an aggregate's call gave a group no accumulator, or
// more than one (the SDK never does: its handler returned an empty one).
var ErrAccumulators = errors.New("sluicetest: accumulators emitted do not match the groups")

// Add runs an aggregate's sluice_agg_add over one group, as the host's
// plugin.Instance.AggAdd does for one key and slice: recs folded, in order,
// into acc (nil when the slice has none yet). It returns the new
// accumulator and the records the aggregate rejected (Reject.Origin is the
// record's index in recs; a rejected record is not folded). When the call
// fails (a trap, an error status, an accumulator missing or repeated), the
// records are folded again one call each, as the host does, so that only
// the failing ones become Rejects, whose Err wraps ErrTrap, ErrBatchFailed
// or ErrAccumulators. Add returns an error only when the operator cannot
// run: its configuration is refused or configuring it traps.
func (h *Harness) Add(acc []byte, recs ...sluice.Record) ([]byte, []Reject, error) {
	if err := checkInputs(recs); err != nil {
		return nil, nil, err
	}
	out, rejects, err := h.add(acc, recs)
	var se *startError
	if err == nil || errors.As(err, &se) || len(recs) == 0 {
		return out, rejects, unwrapStart(err)
	}
	if len(recs) == 1 {
		return acc, []Reject{failed(0, err)}, nil
	}
	rejects = nil
	for k := range recs {
		next, r, err := h.add(acc, recs[k:k+1])
		switch {
		case errors.As(err, &se):
			return nil, nil, se.err
		case err != nil:
			rejects = append(rejects, failed(k, err))
		case len(r) > 0:
			rejects = append(rejects, Reject{Origin: k, Message: r[0].Message})
		default:
			acc = next
		}
	}
	return acc, rejects, nil
}

// add makes one sluice_agg_add call over recs folded into acc.
func (h *Harness) add(acc []byte, recs []sluice.Record) ([]byte, []Reject, error) {
	b := abi.AppendBatchHeader(nil, 1)
	b = abi.AppendRecord(b, &abi.Record{Value: acc})
	b = abi.AppendBatchHeader(b, uint32(len(recs)))
	for i := range recs {
		r := &recs[i]
		b = abi.AppendRecord(b, &abi.Record{Origin: uint32(i), Input: uint16(r.Input), Time: r.Time, Key: r.Key, Value: r.Value, Headers: r.Headers})
	}
	outs, rejects, err := h.b.window(h.config, abi.ExportAggAdd, b, 1, len(recs))
	if err != nil {
		return nil, nil, err
	}
	if len(outs) != 1 {
		return nil, nil, fmt.Errorf("%w: %d accumulators for one group", ErrAccumulators, len(outs))
	}
	return outs[0].Value, rejects, nil
}

// Merge runs an aggregate's sluice_agg_merge over the accumulators a and b
// and returns the merged accumulator. A failed call returns an error
// wrapping ErrTrap, ErrBatchFailed or ErrAccumulators.
func (h *Harness) Merge(a, b []byte) ([]byte, error) {
	in := abi.AppendBatchHeader(nil, 2)
	in = abi.AppendRecord(in, &abi.Record{Origin: 0, Value: a})
	in = abi.AppendRecord(in, &abi.Record{Origin: 1, Value: b})
	outs, _, err := h.b.window(h.config, abi.ExportAggMerge, in, 1, 0)
	if err != nil {
		return nil, unwrapStart(err)
	}
	if len(outs) != 1 {
		return nil, fmt.Errorf("%w: %d accumulators for one pair", ErrAccumulators, len(outs))
	}
	return outs[0].Value, nil
}

// Fire runs an aggregate's sluice_agg_fire for key's window w with
// accumulator acc and returns its results, each Time w.End-1 as the host
// sets it, and whether the aggregate rejected the firing (a Reject of
// Origin 0, the results then dropped). A failed call returns an error
// wrapping ErrTrap or ErrBatchFailed.
func (h *Harness) Fire(key []byte, w sluice.Window, acc []byte) ([]Output, []Reject, error) {
	b := abi.AppendBatchHeader(nil, 1)
	b = abi.AppendRecord(b, &abi.Record{Key: key, Time: w.End - 1, Value: acc, Headers: windowHeaders(w)})
	outs, rejects, err := h.b.window(h.config, abi.ExportAggFire, b, 1, 1)
	if err != nil || len(rejects) > 0 {
		return nil, rejects, unwrapStart(err)
	}
	return atEnd(outs, w), nil, nil
}

// FireWindow runs a window function's sluice_window_fire for key's window
// w holding recs, in arrival order, and returns its results, each Time
// w.End-1 as the host sets it, and the records it rejected (Origin their
// index in recs). A failed call returns an error wrapping ErrTrap or
// ErrBatchFailed.
func (h *Harness) FireWindow(key []byte, w sluice.Window, recs ...sluice.Record) ([]Output, []Reject, error) {
	if err := checkInputs(recs); err != nil {
		return nil, nil, err
	}
	b := abi.AppendBatchHeader(nil, 1)
	b = abi.AppendRecord(b, &abi.Record{Key: key, Time: w.End - 1, Headers: windowHeaders(w)})
	b = abi.AppendBatchHeader(b, uint32(len(recs)))
	for i := range recs {
		r := &recs[i]
		b = abi.AppendRecord(b, &abi.Record{Origin: uint32(i), Input: uint16(r.Input), Time: r.Time, Key: r.Key, Value: r.Value, Headers: r.Headers})
	}
	outs, rejects, err := h.b.window(h.config, abi.ExportWindowFire, b, 1, len(recs))
	if err != nil {
		return nil, nil, unwrapStart(err)
	}
	return atEnd(outs, w), rejects, nil
}

// startError is the error of an operator that could not be started or
// configured before a window call, which no retry helps.
type startError struct{ err error }

func (e *startError) Error() string { return e.err.Error() }
func (e *startError) Unwrap() error { return e.err }

// unwrapStart returns err, the cause of a *startError.
func unwrapStart(err error) error {
	if se, ok := err.(*startError); ok {
		return se.err
	}
	return err
}

// windowHeaders returns the headers the host gives a firing window.
func windowHeaders(w sluice.Window) []abi.Header {
	return []abi.Header{
		{Name: []byte(abi.HeaderWindowStart), Value: abi.AppendWindowTime(nil, w.Start)},
		{Name: []byte(abi.HeaderWindowEnd), Value: abi.AppendWindowTime(nil, w.End)},
		{Name: []byte(abi.HeaderFiring), Value: []byte(w.Firing.String())},
	}
}

// atEnd sets the results' Time to the window's last instant, as the host
// does.
func atEnd(outs []Output, w sluice.Window) []Output {
	for i := range outs {
		outs[i].Time = w.End - 1
	}
	return outs
}

// window makes one call of a window export over its encoded input, whose
// outputs' origins are below outputs and whose rejects' below rejects.
func (n *nativeBackend) window(config []byte, export string, input []byte, outputs, rejects int) ([]Output, []Reject, error) {
	runMu.Lock()
	defer runMu.Unlock()
	if err := n.ready(config); err != nil {
		return nil, nil, &startError{err}
	}
	var fn func([]byte) int32
	switch export {
	case abi.ExportAggAdd:
		fn = n.g.AggAdd
	case abi.ExportAggMerge:
		fn = n.g.AggMerge
	case abi.ExportAggFire:
		fn = n.g.AggFire
	case abi.ExportJoin:
		fn = n.g.Join
	default:
		fn = n.g.WindowFire
	}
	n.host.begin(true, outputs, 0)
	n.host.rejectN = rejects
	status, err := n.call(input, fn)
	outs, rej := n.host.end()
	switch {
	case err != nil:
		n.reset()
		return nil, nil, err
	case status != abi.StatusOK:
		return nil, nil, fmt.Errorf("%w: %s returned status %d: %s", ErrBatchFailed, export, status, n.host.reason())
	}
	return outs, rej, nil
}

// Join runs a join function's sluice_join for one pair of key's records,
// as the host's join does: left or right is nil for an outer join's record
// that matched nothing, w nil for an interval join. It returns the pair's
// results, each Time the pair's as the host sets it (w.End-1, or the later
// of the two records' times without a window), and whether the function
// rejected the pair (a Reject of Origin 0, its results then dropped). A
// failed call returns an error wrapping ErrTrap or ErrBatchFailed.
func (h *Harness) Join(key []byte, w *sluice.Window, left, right *sluice.Record) ([]Output, []Reject, error) {
	var members []*sluice.Record
	var sides byte
	for k, r := range []*sluice.Record{left, right} {
		if r != nil {
			members = append(members, r)
			sides |= []byte{abi.JoinLeft, abi.JoinRight}[k]
		}
	}
	if len(members) == 0 {
		return nil, nil, errors.New("sluicetest: Join needs a left or a right record")
	}
	if err := checkInputs(derefs(members)); err != nil {
		return nil, nil, err
	}
	t := JoinTime(w, left, right)
	head := &abi.Record{Key: key, Time: t, Value: []byte{sides}}
	if w != nil {
		head.Headers = windowHeaders(*w)
	}
	b := abi.AppendBatchHeader(nil, 1)
	b = abi.AppendRecord(b, head)
	b = abi.AppendBatchHeader(b, uint32(len(members)))
	for i, r := range members {
		b = abi.AppendRecord(b, &abi.Record{Origin: uint32(i), Input: uint16(r.Input), Time: r.Time, Key: r.Key, Value: r.Value, Headers: r.Headers})
	}
	outs, rejects, err := h.b.window(h.config, abi.ExportJoin, b, 1, 1)
	if err != nil || len(rejects) > 0 {
		return nil, rejects, unwrapStart(err)
	}
	for i := range outs {
		outs[i].Time = t
	}
	return outs, nil, nil
}

// JoinTime returns the time the host gives a join pair's results: w.End-1
// for a window join, the later of the records' times for an interval join
// (w nil).
func JoinTime(w *sluice.Window, left, right *sluice.Record) int64 {
	if w != nil {
		return w.End - 1
	}
	switch {
	case left == nil:
		return right.Time
	case right == nil:
		return left.Time
	}
	return max(left.Time, right.Time)
}

// derefs returns the records rs point to.
func derefs(rs []*sluice.Record) []sluice.Record {
	out := make([]sluice.Record, len(rs))
	for i, r := range rs {
		out[i] = *r
	}
	return out
}
