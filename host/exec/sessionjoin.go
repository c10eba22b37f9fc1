package exec

import (
	"context"
	"log/slog"
	"strconv"

	"github.com/sluicehq/sluice/abi"
	"github.com/sluicehq/sluice/host/window"
	"github.com/sluicehq/sluice/state"
)

// A join over session windows runs as a windowed stage: sessions are per
// key, so each holds the records of one key from both sides, and every
// left record of a session matches every right one. The window operator
// keeps each session's records, with the input each came on (a collecting
// function).

func newSessionJoinStage(ctx context.Context, op *Operator, store *state.Store, om *opMetrics, log *slog.Logger) (*windowStage, error) {
	typ := op.Join.Type
	op.Window = &Window{Spec: op.Join.Window, Function: func() window.Function { return &sessionJoin{typ: typ} }}
	return newWindowStage(ctx, op, store, om, log)
}

// sessionJoin is the collecting function of a session join.
type sessionJoin struct {
	typ  JoinType
	side [2][]int
}

func (f *sessionJoin) Fire(_ context.Context, fires []window.Fire, emit func(i int, r abi.Record)) error {
	for i, fi := range fires {
		f.side[0], f.side[1] = f.side[0][:0], f.side[1][:0]
		for k := range fi.Recs {
			s := min(int(fi.Recs[k].Input), 1)
			f.side[s] = append(f.side[s], k)
		}
		out := func(l, r *abi.Record) {
			v := append([]byte(nil), `{"key":`...)
			v = appendJSON(v, fi.Key)
			for s, x := range []*abi.Record{l, r} {
				v = append(v, []string{`,"left":`, `,"right":`}[s]...)
				if x == nil {
					v = append(v, "null"...)
				} else {
					v = appendJSON(v, x.Value)
				}
			}
			v = append(v, `,"window_start":`...)
			v = strconv.AppendInt(v, fi.Window.Start, 10)
			v = append(v, `,"window_end":`...)
			v = strconv.AppendInt(v, fi.Window.End, 10)
			v = append(v, '}')
			emit(i, abi.Record{Key: fi.Key, Value: v})
		}
		for _, a := range f.side[0] {
			for _, b := range f.side[1] {
				out(&fi.Recs[a], &fi.Recs[b])
			}
		}
		if len(f.side[1]) == 0 && (f.typ == LeftJoin || f.typ == FullJoin) {
			for _, a := range f.side[0] {
				out(&fi.Recs[a], nil)
			}
		}
		if len(f.side[0]) == 0 && (f.typ == RightJoin || f.typ == FullJoin) {
			for _, b := range f.side[1] {
				out(nil, &fi.Recs[b])
			}
		}
	}
	return nil
}
