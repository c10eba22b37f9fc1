package runner

import (
	"context"
	"errors"
	"fmt"
	"math"
	"runtime/debug"
	"runtime/metrics"

	"github.com/sluicehq/sluice/host/api/schema"
	"github.com/sluicehq/sluice/host/control"
	"github.com/sluicehq/sluice/host/pipeline"
)

// newController makes the control plane the pipeline's control: section
// asks for (package control), over the host's job; nil when the section
// is absent or turned off.
func (h *Host) newController() (*control.Controller, error) {
	c := h.p.Control
	if !c.Enabled {
		return nil, nil
	}
	policies, err := controlPolicies(c)
	if err != nil {
		return nil, fmt.Errorf("%s: control: %w", h.p.File, err)
	}
	ctrl, err := control.New(control.Config{
		Period: c.Period, Lock: c.Lock, Settle: c.Settle, Window: c.Window,
		MinWorkers: c.Workers.Min, MaxWorkers: c.Workers.Max,
		Policies: policies,
		Sample:   h.controlSample,
		Actuator: h.job,
		Logger:   h.log.With("component", "control"),
	})
	if err != nil {
		return nil, fmt.Errorf("%s: control: %w", h.p.File, err)
	}
	return ctrl, nil
}

// controlPolicies makes c's policies, in its order (their priority).
func controlPolicies(c pipeline.Control) ([]control.Policy, error) {
	var ps []control.Policy
	for _, name := range c.Policies {
		var (
			p   control.Policy
			err error
		)
		switch name {
		case pipeline.ControlLatency:
			p, err = control.NewLatency(control.LatencyConfig{Lreq: c.Latency.LReq, Low: c.Latency.LLow, High: c.Latency.LHigh})
		case pipeline.ControlDS2:
			p, err = control.NewDS2(control.DS2Config{Interval: c.DS2.Interval, WarmUp: c.DS2.WarmUp, Activation: c.DS2.Activation,
				DeadBand: c.DS2.DeadBand, ScalingFactor: c.DS2.ScalingFactor})
		case pipeline.ControlStraggler:
			p, err = control.NewStraggler(control.StragglerConfig{Ratio: c.Straggler.Ratio, MinRecords: c.Straggler.MinRecords, Window: c.Window})
		case pipeline.ControlDoctor:
			p, err = control.NewDoctor(control.DoctorConfig{SlowCommit: c.Doctor.SlowCommit, SlowVersionRatio: c.Doctor.SlowVersionRatio,
				HeapRatio: c.Doctor.HeapRatio, Window: c.Window})
		default:
			err = fmt.Errorf("unknown policy %q", name)
		}
		if err != nil {
			return nil, fmt.Errorf("policy %s: %w", name, err)
		}
		ps = append(ps, p)
	}
	return ps, nil
}

// controlSample measures the job, and the process around it: the
// garbage collector's pauses, the heap against the memory limit, the NATS
// client's slow-consumer errors, and whether key groups are moving
// between hosts.
func (h *Host) controlSample() control.Sample {
	s := h.job.Measure()
	ms := []metrics.Sample{{Name: "/gc/pauses:seconds"}, {Name: "/memory/classes/heap/objects:bytes"}}
	metrics.Read(ms)
	if ms[0].Value.Kind() == metrics.KindFloat64Histogram {
		s.GCPauseSeconds = histogramSum(ms[0].Value.Float64Histogram())
	}
	if ms[1].Value.Kind() == metrics.KindUint64 {
		s.HeapBytes = ms[1].Value.Uint64()
	}
	if limit := debug.SetMemoryLimit(-1); limit > 0 && limit < math.MaxInt64 {
		s.HeapLimit = uint64(limit)
	}
	s.SlowConsumers = h.slowConsumers.Load()
	if h.cluster != nil {
		s.Migrating = h.cluster.migrating()
	}
	return s
}

// histogramSum estimates the sum of a runtime/metrics histogram's values
// from its buckets (each counted at its lower bound, the upper for the
// first).
func histogramSum(hist *metrics.Float64Histogram) float64 {
	var sum float64
	for i, n := range hist.Counts {
		if n == 0 {
			continue
		}
		lo, hi := hist.Buckets[i], hist.Buckets[i+1]
		v := lo
		if math.IsInf(lo, -1) {
			v = hi
		}
		if math.IsInf(v, 0) {
			continue
		}
		sum += v * float64(n)
	}
	return sum
}

// controlDocument answers GET /api/v1/control.
func (h *Host) controlDocument() schema.Control {
	return h.ctrl.Status()
}

// controlRound answers POST /api/v1/control/round.
func (h *Host) controlRound(ctx context.Context, reason string) (*schema.Decision, error) {
	trigger := "request"
	if reason != "" {
		trigger += ": " + reason
	}
	d, err := h.ctrl.Round(ctx, trigger)
	if errors.Is(err, context.Canceled) && ctx.Err() != nil {
		return nil, ctx.Err()
	}
	return d, err
}
