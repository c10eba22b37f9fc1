package exec

import (
	"context"
	"log/slog"

	"github.com/sluicehq/sluice/abi"
	"github.com/sluicehq/sluice/host/plugin"
	"github.com/sluicehq/sluice/host/window"
	"github.com/sluicehq/sluice/state"
)

// A join over session windows runs as a windowed stage: sessions are per
// key, so each holds the records of one key from both sides, and every
// left record of a session matches every right one. The window operator
// keeps each session's records, with the input each came on (a collecting
// function).

func newSessionJoinStage(ctx context.Context, op *Operator, store *state.Store, om *opMetrics, log *slog.Logger) (*windowStage, error) {
	op.Window = &Window{Spec: op.Join.Window}
	return newWindowStage(ctx, op, store, om, log)
}

// sessionJoin is the collecting function of a session join, on one
// worker of its stage.
type sessionJoin struct {
	st     *windowStage
	worker int
	side   [2][]int
	// Pairs for the plugin: fireOf[k] is the firing of pairs[k].
	pairs  []plugin.JoinPair
	wins   []plugin.Window
	fireOf []int
	out    plugin.Output
}

func (f *sessionJoin) Fire(ctx context.Context, fires []window.Fire, emit func(i int, r abi.Record)) error {
	typ := f.st.op.Join.Type
	inst := f.st.workers[f.worker].inst
	for i, fi := range fires {
		f.side[0], f.side[1] = f.side[0][:0], f.side[1][:0]
		for k := range fi.Recs {
			s := min(int(fi.Recs[k].Input), 1)
			f.side[s] = append(f.side[s], k)
		}
		out := func(l, r *abi.Record) {
			if inst == nil {
				emit(i, abi.Record{Key: fi.Key, Value: appendJoined(nil, fi.Key, l, r, &fi.Window)})
				return
			}
			f.pairs = append(f.pairs, plugin.JoinPair{Key: fi.Key, Time: fi.Window.MaxTime(), Left: l, Right: r})
			f.wins = append(f.wins, guestWindow(fi))
			f.fireOf = append(f.fireOf, i)
		}
		for _, a := range f.side[0] {
			for _, b := range f.side[1] {
				out(&fi.Recs[a], &fi.Recs[b])
			}
		}
		if len(f.side[1]) == 0 && (typ == LeftJoin || typ == FullJoin) {
			for _, a := range f.side[0] {
				out(&fi.Recs[a], nil)
			}
		}
		if len(f.side[0]) == 0 && (typ == RightJoin || typ == FullJoin) {
			for _, b := range f.side[1] {
				out(nil, &fi.Recs[b])
			}
		}
	}
	if len(f.pairs) == 0 {
		return nil
	}
	for k := range f.pairs {
		f.pairs[k].Window = &f.wins[k]
	}
	f.out.Reset()
	err := chunked(len(f.pairs), func(lo, hi, _ int) error {
		m, rm := len(f.out.Records), len(f.out.Rejects)
		if err := inst.Join(ctx, f.pairs[lo:hi], &f.out); err != nil {
			return err
		}
		for _, r := range f.out.Records[m:] {
			emit(f.fireOf[lo+int(r.Origin)], r)
		}
		for _, rj := range f.out.Rejects[rm:] {
			p := &f.pairs[lo+rj.Index]
			fi := &fires[f.fireOf[lo+rj.Index]]
			f.st.fail(fi, abi.Record{Key: p.Key, Value: appendJoined(nil, p.Key, p.Left, p.Right, &fi.Window), Time: p.Time}, rj.Err)
		}
		return nil
	})
	clear(f.pairs)
	f.pairs, f.wins, f.fireOf = f.pairs[:0], f.wins[:0], f.fireOf[:0]
	return err
}
