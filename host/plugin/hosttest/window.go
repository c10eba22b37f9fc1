package hosttest

import (
	"errors"
	"fmt"

	"github.com/sluicehq/sluice/abi"
	"github.com/sluicehq/sluice/host/plugin"
	"github.com/sluicehq/sluice/runtime"
	"github.com/sluicehq/sluice/sdk/go/sluice"
	"github.com/sluicehq/sluice/sdk/go/sluice/sluicetest"
)

// The window functions of ABI.md section 13, through the host's
// plugin.Instance.AggAdd, AggMerge, AggFire and WindowFire, with the
// methods and results of sluicetest.Harness.

// Add runs an aggregate module's sluice_agg_add over one group with
// (*plugin.Instance).AggAdd: recs folded, in order, into acc (nil when
// none yet). It returns the new accumulator and the rejected records
// (Origin their index in recs), as sluicetest.Harness.Add does; a failed
// call is run again record by record by the host, and a record whose own
// call fails is a Reject whose Err wraps sluicetest.ErrTrap,
// sluicetest.ErrBatchFailed or sluicetest.ErrAccumulators.
func (h *Harness) Add(acc []byte, recs ...sluice.Record) ([]byte, []sluicetest.Reject, error) {
	w := h.b
	if err := w.ready(h.config); err != nil {
		return nil, nil, err
	}
	g := []plugin.AddGroup{{Acc: acc, Recs: w.records(recs)}}
	if len(recs) > 0 {
		g[0].Key, g[0].Time = recs[0].Key, recs[len(recs)-1].Time
	}
	w.out.Reset()
	err := w.inst.AggAdd(w.ctx(), g, &w.out)
	clear(w.in)
	if err != nil {
		w.close()
		return nil, nil, startError(err)
	}
	var rejects []sluicetest.Reject
	for _, r := range w.out.Rejects {
		rejects = append(rejects, hostReject(r))
	}
	return append([]byte(nil), w.out.Records[0].Value...), rejects, nil
}

// Merge runs an aggregate module's sluice_agg_merge over accumulators a
// and b with (*plugin.Instance).AggMerge and returns the merged
// accumulator. A failed call's error wraps sluicetest.ErrTrap,
// sluicetest.ErrBatchFailed or sluicetest.ErrAccumulators, and the host's
// *plugin.WindowError.
func (h *Harness) Merge(a, b []byte) ([]byte, error) {
	w := h.b
	if err := w.ready(h.config); err != nil {
		return nil, err
	}
	w.out.Reset()
	if err := w.inst.AggMerge(w.ctx(), []plugin.MergePair{{A: a, B: b}}, &w.out); err != nil {
		return nil, w.callError(err)
	}
	return append([]byte(nil), w.out.Records[0].Value...), nil
}

// Fire runs an aggregate module's sluice_agg_fire for key's window with
// accumulator acc, with (*plugin.Instance).AggFire, and returns its results
// (Time w.End-1) and whether the firing was rejected, as
// sluicetest.Harness.Fire does. A failed call's error is Merge's.
func (h *Harness) Fire(key []byte, win sluice.Window, acc []byte) ([]sluicetest.Output, []sluicetest.Reject, error) {
	w := h.b
	if err := w.ready(h.config); err != nil {
		return nil, nil, err
	}
	w.out.Reset()
	if err := w.inst.AggFire(w.ctx(), []plugin.Fire{{Key: key, Window: hostWindow(win), Acc: acc}}, &w.out); err != nil {
		return nil, nil, w.callError(err)
	}
	return w.results()
}

// FireWindow runs a window function module's sluice_window_fire for key's
// window holding recs, with (*plugin.Instance).WindowFire, and returns its
// results (Time w.End-1) and the rejected records, as
// sluicetest.Harness.FireWindow does. A failed call's error is Merge's.
func (h *Harness) FireWindow(key []byte, win sluice.Window, recs ...sluice.Record) ([]sluicetest.Output, []sluicetest.Reject, error) {
	w := h.b
	if err := w.ready(h.config); err != nil {
		return nil, nil, err
	}
	w.out.Reset()
	err := w.inst.WindowFire(w.ctx(), []plugin.FireContents{{Key: key, Window: hostWindow(win), Recs: w.records(recs)}}, &w.out)
	clear(w.in)
	if err != nil {
		return nil, nil, w.callError(err)
	}
	return w.results()
}

// ready makes sure the backend has an instance.
func (w *wasmBackend) ready(config []byte) error {
	if w.inst == nil {
		return w.configure(config)
	}
	return nil
}

// records returns recs as the host's records, in w.in.
func (w *wasmBackend) records(recs []sluice.Record) []abi.Record {
	w.in = w.in[:0]
	for i := range recs {
		r := &recs[i]
		w.in = append(w.in, abi.Record{Input: uint16(r.Input), Time: r.Time, Key: r.Key, Value: r.Value, Headers: r.Headers})
	}
	return w.in
}

// results returns the outputs and rejects of the last call.
func (w *wasmBackend) results() ([]sluicetest.Output, []sluicetest.Reject, error) {
	var outs []sluicetest.Output
	for _, r := range w.out.Records {
		rec := sluice.Record{Key: r.Key, Value: r.Value, Time: r.Time, Headers: r.Headers}
		outs = append(outs, sluicetest.Output{Origin: int(r.Origin), Record: rec.Clone()})
	}
	var rejects []sluicetest.Reject
	for _, r := range w.out.Rejects {
		rejects = append(rejects, hostReject(r))
	}
	return outs, rejects, nil
}

// callError classifies the error of a failed window call as the SDK's
// harness does.
func (w *wasmBackend) callError(err error) error {
	var we *plugin.WindowError
	if !errors.As(err, &we) {
		w.close()
		return startError(err)
	}
	var se *plugin.StatusError
	var re *runtime.Error
	switch {
	case errors.Is(err, plugin.ErrAccumulators):
		return fmt.Errorf("%w: %w", sluicetest.ErrAccumulators, err)
	case errors.As(err, &se):
		return fmt.Errorf("%w: %w", sluicetest.ErrBatchFailed, err)
	case errors.As(err, &re):
		return fmt.Errorf("%w: %w", sluicetest.ErrTrap, err)
	}
	return fmt.Errorf("hosttest: %w", err)
}

// hostWindow returns the host's form of w.
func hostWindow(w sluice.Window) plugin.Window {
	f := plugin.FiringOnTime
	switch w.Firing {
	case sluice.Early:
		f = plugin.FiringEarly
	case sluice.Late:
		f = plugin.FiringLate
	}
	return plugin.Window{Start: w.Start, End: w.End, Firing: f}
}

// Join runs a join module's sluice_join for one pair of key's records with
// (*plugin.Instance).Join, and returns its results and whether the pair
// was rejected, as sluicetest.Harness.Join does. A call that fails is a
// Reject whose Err wraps sluicetest.ErrTrap or sluicetest.ErrBatchFailed,
// as the host turns it into one.
func (h *Harness) Join(key []byte, win *sluice.Window, left, right *sluice.Record) ([]sluicetest.Output, []sluicetest.Reject, error) {
	w := h.b
	if err := w.ready(h.config); err != nil {
		return nil, nil, err
	}
	p := plugin.JoinPair{Key: key, Time: sluicetest.JoinTime(win, left, right)}
	if win != nil {
		hw := hostWindow(*win)
		p.Window = &hw
	}
	var recs []sluice.Record
	for _, r := range []*sluice.Record{left, right} {
		if r != nil {
			recs = append(recs, *r)
		}
	}
	in := w.records(recs)
	if left != nil {
		p.Left = &in[0]
	}
	if right != nil {
		p.Right = &in[len(in)-1]
	}
	w.out.Reset()
	err := w.inst.Join(w.ctx(), []plugin.JoinPair{p}, &w.out)
	clear(w.in)
	if err != nil {
		w.close()
		return nil, nil, startError(err)
	}
	return w.results()
}
