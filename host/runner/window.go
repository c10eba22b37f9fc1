package runner

import (
	"fmt"
	"path/filepath"
	"runtime"
	"time"

	"github.com/sluicehq/sluice/connectors"
	"github.com/sluicehq/sluice/connectors/file"
	"github.com/sluicehq/sluice/connectors/natsconn"
	"github.com/sluicehq/sluice/host/exec"
	"github.com/sluicehq/sluice/host/join"
	"github.com/sluicehq/sluice/host/pipeline"
	"github.com/sluicehq/sluice/host/plugin"
	"github.com/sluicehq/sluice/host/window"
)

// watermark returns a source's watermark strategy.
func watermark(s *pipeline.Source) *window.WatermarkStrategy {
	w := s.Watermark
	if w == nil {
		return nil
	}
	ws := &window.WatermarkStrategy{Kind: window.Monotonous, Idle: time.Duration(w.Idle)}
	if w.OutOfOrderness > 0 {
		ws.Kind, ws.Bound = window.BoundedOutOfOrder, time.Duration(w.OutOfOrderness)
	}
	return ws
}

// spec returns operator i's window as the window manager takes it; the
// pipeline's validation refused one that cannot work, with its line.
func (h *Host) spec(i int, o *pipeline.Operator) (window.Spec, error) {
	s, err := o.Window.Spec()
	if err != nil {
		return s, h.p.ErrorAt(err.Error(), "operators", i, "window")
	}
	return s, nil
}

// window returns the exec.Window of a windowed operator (nil for others),
// with fn making its native function (nil: the plugin's).
func (h *Host) window(i int, o *pipeline.Operator, fn func() window.Function) (*exec.Window, error) {
	if o.Kind != pipeline.KindAggregate && o.Kind != pipeline.KindWindow {
		return nil, nil
	}
	s, err := h.spec(i, o)
	if err != nil {
		return nil, err
	}
	return &exec.Window{Spec: s, Function: fn}, nil
}

// nativeOperator makes an operator that runs no plugin: an aggregate with
// a built-in function, or a join.
func (h *Host) nativeOperator(i int, o *pipeline.Operator) (exec.Operator, error) {
	if o.Kind == pipeline.KindJoin {
		return h.joinOperator(i, o)
	}
	if o.Kind != pipeline.KindAggregate {
		return exec.Operator{}, h.p.ErrorAt(fmt.Sprintf("a %s operator needs a plugin", o.Kind), "operators", i, "plugin")
	}
	if _, err := window.Builtin(o.Function, o.Field); err != nil {
		return exec.Operator{}, h.p.ErrorAt(err.Error(), "operators", i, "field")
	}
	win, err := h.window(i, o, func() window.Function {
		fn, _ := window.Builtin(o.Function, o.Field)
		return fn
	})
	if err != nil {
		return exec.Operator{}, err
	}
	par := o.Parallelism
	if par == 0 {
		par = runtime.GOMAXPROCS(0)
	}
	return exec.Operator{
		Name: o.Name, Inputs: o.Inputs, Kind: plugin.KindAggregate, Parallelism: par,
		StopOnError: o.OnError == pipeline.PolicyStop, MaxRecordBytes: int(o.Limits.MaxRecordBytes),
		Version: "built-in " + o.Function, Window: win,
	}, nil
}

// joinOperator makes the operator of a join: a window join (tumbling,
// sliding or session windows) or an interval join.
func (h *Host) joinOperator(i int, o *pipeline.Operator) (exec.Operator, error) {
	par := o.Parallelism
	if par == 0 {
		par = runtime.GOMAXPROCS(0)
	}
	op := exec.Operator{
		Name: o.Name, Inputs: o.Inputs, Kind: exec.KindJoin, Parallelism: par,
		StopOnError: o.OnError == pipeline.PolicyStop, MaxRecordBytes: int(o.Limits.MaxRecordBytes),
		Version: "built-in join",
	}
	j := o.Join
	if iv := j.Interval; iv != nil {
		op.Interval = &exec.Interval{Lower: time.Duration(iv.Lower), Upper: time.Duration(iv.Upper)}
		return op, nil
	}
	s, err := h.spec(i, o)
	if err != nil {
		return op, err
	}
	typ := map[string]exec.JoinType{pipeline.JoinInner: exec.InnerJoin, pipeline.JoinLeft: exec.LeftJoin,
		pipeline.JoinRight: exec.RightJoin, pipeline.JoinFull: exec.FullJoin}[j.Type]
	obj, err := join.ParseObjective(j.Objective) // validated by the pipeline's parse
	if err != nil {
		return op, fmt.Errorf("operator %q: join.objective: %w", o.Name, err)
	}
	op.Join = &exec.Join{Type: typ, Window: s, Algorithm: j.Algorithm, Objective: obj}
	return op, nil
}

// lateSink makes the sink of the late records: the configured subject or
// file, by default DefaultLateFile in the data directory.
func (h *Host) lateSink(dataDir string) (connectors.Sink, error) {
	if s := h.p.Late.Subject; s != "" {
		return natsconn.NewCoreSink(h.nc, natsconn.CoreSinkConfig{Subject: s, Name: "late"})
	}
	path := h.p.Late.Path
	if path == "" {
		path = filepath.Join(dataDir, pipeline.DefaultLateFile)
	}
	s, err := file.NewSink(file.SinkConfig{Path: path, Name: "late"})
	if err != nil {
		return nil, err
	}
	return deadLetterFile{Sink: s, path: path, log: h.log}, nil
}
