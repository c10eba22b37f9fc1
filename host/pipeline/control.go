package pipeline

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
)

// Control is the control plane's section (docs/control.md): every period
// a management round measures the job's operators and workers, and its
// policies, in the order of their priority, may change an operator's
// worker count or move key groups between its workers, and diagnose what
// no action fixes. A transactional operator is never touched.
//
// Validate fills in the defaults of every key the file does not give,
// whether or not the section is present.
type Control struct {
	// Present is set when the file has a control: section (even an
	// empty one).
	Present bool `yaml:"-"`
	// Enabled is set when the control plane runs: the section is present
	// and its enabled key is not false.
	Enabled bool `yaml:"enabled"`
	// Period is the time between management rounds. Default 1s; at
	// least 100ms.
	Period time.Duration `yaml:"period"`
	// Lock is how long no decision is applied after one. Default 5s.
	Lock time.Duration `yaml:"lock"`
	// Settle is how long after a decision its effect is checked (and the
	// decision rolled back if it made things worse). Default 10s; at
	// least Period.
	Settle time.Duration `yaml:"settle"`
	// Window is the span rates and delays are measured over. Default 2s.
	Window time.Duration `yaml:"window"`
	// Policies are the policies that run, highest priority first: latency,
	// ds2, straggler and doctor. Default: all four in that order. An
	// empty list runs none (the rounds still measure the workers).
	Policies []string `yaml:"policies"`
	// Workers bound the worker count of every resizable operator.
	Workers ControlWorkers `yaml:"workers"`
	// Latency tunes the latency guarantor.
	Latency LatencyPolicy `yaml:"latency"`
	// DS2 tunes the scaler that sizes each operator to its input rate.
	DS2 DS2Policy `yaml:"ds2"`
	// Straggler tunes the detection of slow workers.
	Straggler StragglerPolicy `yaml:"straggler"`
	// Doctor tunes the job doctor's diagnoses.
	Doctor DoctorPolicy `yaml:"doctor"`
	// Hosts is the cluster-level scaling decision: taking pool hosts into
	// service and giving them back (docs/control.md). Off unless the
	// section gives a hosts: key.
	Hosts ControlHosts `yaml:"hosts"`
}

// ControlHosts configures the cluster-level scaling decision, made by the
// coordinator of a pipeline spread over hosts: scale out (take a pool
// host into service, or run Request when the pool is empty) when every
// active host is saturated for Span, scale in (give the emptiest host
// back to the pool, then run Release) when the load fits on one host
// fewer for Span.
type ControlHosts struct {
	// Enabled is set when the decision runs: the control section gives a
	// hosts: key whose enabled key is not false, and the control plane
	// is enabled.
	Enabled bool `yaml:"enabled"`
	// Min and Max bound the number of active hosts. Defaults 1 and 4;
	// Min at least 1, Max at least Min.
	Min int `yaml:"min"`
	Max int `yaml:"max"`
	// Request is a shell command (run with sh -c) that asks for one more
	// host, run when a scale-out finds the pool empty, at most once per
	// control.lock. Default "": none.
	Request string `yaml:"request"`
	// Release is a shell command run once a host given back to the pool
	// holds no key group, with the host's id in SLUICE_HOST_ID. Default
	// "": none.
	Release string `yaml:"release"`
	// Timeout bounds each run of Request or Release. Default 1m.
	Timeout time.Duration `yaml:"timeout"`
	// Span is how long a condition must hold before a decision: every
	// active host saturated (scale out) or the load fitting on one host
	// fewer (scale in). Default 30s.
	Span time.Duration `yaml:"span"`
	// ScaleOutAbove: a host whose workers' utilisation is at least this,
	// or whose controller wants more workers than workers.max, is
	// saturated. Default 0.9; more than ScaleInBelow, at most 1.
	ScaleOutAbove float64 `yaml:"scale_out_above"`
	// ScaleInBelow: the load fits on one host fewer when the active
	// hosts' mean utilisation times n/(n-1) is under this. Default 0.6;
	// more than 0.
	ScaleInBelow float64 `yaml:"scale_in_below"`
}

// ControlWorkers bound an operator's worker count.
type ControlWorkers struct {
	// Min is the fewest workers. Default 1; at least 1.
	Min int `yaml:"min"`
	// Max is the most workers. Default 8; at least Min.
	Max int `yaml:"max"`
}

// LatencyPolicy tunes the latency guarantor, which keeps every worker's
// predicted delay under a bound by moving key groups off the workers that
// cannot keep it.
type LatencyPolicy struct {
	// LReq bounds the predicted (long-term) delay L of a worker. Default
	// 1s.
	LReq time.Duration `yaml:"lreq"`
	// LLow is the instantaneous delay under which a worker is good.
	// Default 50ms; at most LHigh.
	LLow time.Duration `yaml:"l_low"`
	// LHigh is the instantaneous delay over which a worker whose L is
	// over LReq is severe. Default 100ms.
	LHigh time.Duration `yaml:"l_high"`
}

// DS2Policy tunes the scaler that computes each operator's worker count
// from its input rate and its workers' true processing rate.
type DS2Policy struct {
	// Interval is the least time between two of its decisions. Default
	// 10s.
	Interval time.Duration `yaml:"interval"`
	// WarmUp is how long after any change of worker count it decides
	// nothing. Default 10s.
	WarmUp time.Duration `yaml:"warm_up"`
	// Activation is the number of consecutive rounds, a window apart,
	// that must propose the same count before it acts. Default 2; at
	// least 1.
	Activation int `yaml:"activation"`
	// DeadBand ignores changes of at most this many workers. Default 1;
	// at least 0.
	DeadBand int `yaml:"dead_band"`
	// ScalingFactor is headroom: the computed count is multiplied by
	// 1 + ScalingFactor. Default 0; at least 0.
	ScalingFactor float64 `yaml:"scaling_factor"`
}

// StragglerPolicy tunes the detection of slow workers.
type StragglerPolicy struct {
	// Ratio: a worker whose service rate is under its peers' median
	// divided by Ratio is slow. Default 1.5; more than 1.
	Ratio float64 `yaml:"ratio"`
	// MinRecords is the number of records a worker must have run in the
	// window to be judged. Default 1000.
	MinRecords uint64 `yaml:"min_records"`
}

// DoctorPolicy tunes the job doctor's diagnoses.
type DoctorPolicy struct {
	// SlowCommit (key commit_seconds): a mean commit time above it is slow.
	// Default 100ms.
	SlowCommit time.Duration `yaml:"commit_seconds"`
	// SlowVersionRatio: a plugin version whose cost per record is this
	// much over the previous version's is slow. Default 1.3; more than 1.
	SlowVersionRatio float64 `yaml:"slow_version_ratio"`
	// HeapRatio: a live heap over this fraction of the memory limit
	// (GOMEMLIMIT) is memory pressure. Default 0.9; more than 0, at most
	// 1.
	HeapRatio float64 `yaml:"heap_ratio"`
}

// The control plane's policies, in their default order of priority.
const (
	ControlLatency   = "latency"
	ControlDS2       = "ds2"
	ControlStraggler = "straggler"
	ControlDoctor    = "doctor"
)

// MinControlPeriod is the shortest period of the control plane's rounds.
const MinControlPeriod = 100 * time.Millisecond

// DefaultControl returns the control section's defaults, not enabled (the
// file has no control: section).
func DefaultControl() Control {
	return Control{
		Period:    time.Second,
		Lock:      5 * time.Second,
		Settle:    10 * time.Second,
		Window:    2 * time.Second,
		Policies:  []string{ControlLatency, ControlDS2, ControlStraggler, ControlDoctor},
		Workers:   ControlWorkers{Min: 1, Max: 8},
		Latency:   LatencyPolicy{LReq: time.Second, LLow: 50 * time.Millisecond, LHigh: 100 * time.Millisecond},
		DS2:       DS2Policy{Interval: 10 * time.Second, WarmUp: 10 * time.Second, Activation: 2, DeadBand: 1},
		Straggler: StragglerPolicy{Ratio: 1.5, MinRecords: 1000},
		Doctor:    DoctorPolicy{SlowCommit: 100 * time.Millisecond, SlowVersionRatio: 1.3, HeapRatio: 0.9},
		Hosts:     ControlHosts{Min: 1, Max: 4, Timeout: time.Minute, Span: 30 * time.Second, ScaleOutAbove: 0.9, ScaleInBelow: 0.6},
	}
}

// given reports whether the file gives the key at path with a value other
// than null (has, but for an empty value, which decodes to the zero value).
func (p *Pipeline) given(path ...any) bool {
	n := p.node(path...)
	return n != nil && !(n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null")
}

// validateControl fills in the control section's defaults, each where
// the file does not give the key, and checks the values the file gives.
func (p *Pipeline) validateControl() []error {
	c, def := &p.Control, DefaultControl()
	c.Present = p.node("control") != nil
	c.Enabled = c.Present && (!p.given("control", "enabled") || c.Enabled)
	var errs []error
	at := func(msg string, keys ...any) { errs = append(errs, p.errAt(msg, append([]any{"control"}, keys...)...)) }
	durations := []struct {
		v    *time.Duration
		def  time.Duration
		keys []any
	}{
		{&c.Period, def.Period, []any{"period"}},
		{&c.Lock, def.Lock, []any{"lock"}},
		{&c.Settle, def.Settle, []any{"settle"}},
		{&c.Window, def.Window, []any{"window"}},
		{&c.Latency.LReq, def.Latency.LReq, []any{"latency", "lreq"}},
		{&c.Latency.LLow, def.Latency.LLow, []any{"latency", "l_low"}},
		{&c.Latency.LHigh, def.Latency.LHigh, []any{"latency", "l_high"}},
		{&c.DS2.Interval, def.DS2.Interval, []any{"ds2", "interval"}},
		{&c.DS2.WarmUp, def.DS2.WarmUp, []any{"ds2", "warm_up"}},
		{&c.Doctor.SlowCommit, def.Doctor.SlowCommit, []any{"doctor", "commit_seconds"}},
		{&c.Hosts.Timeout, def.Hosts.Timeout, []any{"hosts", "timeout"}},
		{&c.Hosts.Span, def.Hosts.Span, []any{"hosts", "span"}},
	}
	for _, d := range durations {
		switch {
		case !p.given(append([]any{"control"}, d.keys...)...):
			*d.v = d.def
		case *d.v <= 0:
			at(fmt.Sprintf("%s %s: want a positive duration", d.keys[len(d.keys)-1], *d.v), d.keys...)
		}
	}
	controlDefault(p, &c.Workers.Min, def.Workers.Min, "workers", "min")
	controlDefault(p, &c.Workers.Max, def.Workers.Max, "workers", "max")
	controlDefault(p, &c.DS2.Activation, def.DS2.Activation, "ds2", "activation")
	controlDefault(p, &c.DS2.DeadBand, def.DS2.DeadBand, "ds2", "dead_band")
	controlDefault(p, &c.DS2.ScalingFactor, def.DS2.ScalingFactor, "ds2", "scaling_factor")
	controlDefault(p, &c.Straggler.Ratio, def.Straggler.Ratio, "straggler", "ratio")
	controlDefault(p, &c.Straggler.MinRecords, def.Straggler.MinRecords, "straggler", "min_records")
	controlDefault(p, &c.Doctor.SlowVersionRatio, def.Doctor.SlowVersionRatio, "doctor", "slow_version_ratio")
	controlDefault(p, &c.Doctor.HeapRatio, def.Doctor.HeapRatio, "doctor", "heap_ratio")

	// which names the key of two that the file gives, a if both or
	// neither, for a refusal of their combination.
	which := func(a, b []any) []any {
		if !p.given(append([]any{"control"}, a...)...) && p.given(append([]any{"control"}, b...)...) {
			return b
		}
		return a
	}
	if c.Period > 0 && c.Period < MinControlPeriod {
		at(fmt.Sprintf("period %s: want at least %s", c.Period, MinControlPeriod), "period")
	}
	if c.Period > 0 && c.Settle > 0 && c.Settle < c.Period {
		at(fmt.Sprintf("settle %s is shorter than period %s: a decision's effect is checked at a round, so at least one period after it", c.Settle, c.Period),
			which([]any{"settle"}, []any{"period"})...)
	}
	if c.Latency.LLow > 0 && c.Latency.LHigh > 0 && c.Latency.LLow > c.Latency.LHigh {
		at(fmt.Sprintf("l_low %s is over l_high %s: a worker under l_low is good, one over l_high severe", c.Latency.LLow, c.Latency.LHigh),
			which([]any{"latency", "l_low"}, []any{"latency", "l_high"})...)
	}
	switch {
	case c.Workers.Min < 1:
		at(fmt.Sprintf("min %d: want at least 1 worker", c.Workers.Min), "workers", "min")
	case c.Workers.Min > c.Workers.Max:
		at(fmt.Sprintf("min %d is over max %d", c.Workers.Min, c.Workers.Max), which([]any{"workers", "min"}, []any{"workers", "max"})...)
	}
	if c.DS2.Activation < 1 {
		at(fmt.Sprintf("activation %d: want at least 1 round", c.DS2.Activation), "ds2", "activation")
	}
	if c.DS2.DeadBand < 0 {
		at(fmt.Sprintf("dead_band %d: want 0 or more workers", c.DS2.DeadBand), "ds2", "dead_band")
	}
	if c.DS2.ScalingFactor < 0 {
		at(fmt.Sprintf("scaling_factor %g: want 0 or more", c.DS2.ScalingFactor), "ds2", "scaling_factor")
	}
	if c.Straggler.Ratio <= 1 {
		at(fmt.Sprintf("ratio %g: want more than 1 (a slow worker runs under its peers' median divided by ratio)", c.Straggler.Ratio), "straggler", "ratio")
	}
	if c.Doctor.SlowVersionRatio <= 1 {
		at(fmt.Sprintf("slow_version_ratio %g: want more than 1", c.Doctor.SlowVersionRatio), "doctor", "slow_version_ratio")
	}
	if c.Doctor.HeapRatio <= 0 || c.Doctor.HeapRatio > 1 {
		at(fmt.Sprintf("heap_ratio %g: want more than 0 and at most 1 (a fraction of GOMEMLIMIT)", c.Doctor.HeapRatio), "doctor", "heap_ratio")
	}

	errs = append(errs, p.validateHosts(which)...)

	if !p.given("control", "policies") {
		c.Policies = def.Policies
	} else if c.Policies == nil {
		c.Policies = []string{}
	}
	for i, name := range c.Policies {
		switch {
		case !slices.Contains(def.Policies, name):
			errs = append(errs, p.errAt(fmt.Sprintf("unknown policy %q (want %s)", name, strings.Join(def.Policies, ", ")), "control", "policies", i))
		case slices.Index(c.Policies, name) < i:
			errs = append(errs, p.errAt(fmt.Sprintf("policy %q is given twice (first as policies[%d])", name, slices.Index(c.Policies, name)), "control", "policies", i))
		}
	}
	return errs
}

// validateHosts fills in the defaults of control.hosts and checks what
// the file gives; which is validateControl's choice of the key to name.
func (p *Pipeline) validateHosts(which func(a, b []any) []any) []error {
	c, def := &p.Control, DefaultControl()
	h := &c.Hosts
	h.Enabled = c.Enabled && p.node("control", "hosts") != nil && (!p.given("control", "hosts", "enabled") || h.Enabled)
	var errs []error
	at := func(msg string, keys ...any) {
		errs = append(errs, p.errAt(msg, append([]any{"control", "hosts"}, keys...)...))
	}
	controlDefault(p, &h.Min, def.Hosts.Min, "hosts", "min")
	controlDefault(p, &h.Max, def.Hosts.Max, "hosts", "max")
	controlDefault(p, &h.ScaleOutAbove, def.Hosts.ScaleOutAbove, "hosts", "scale_out_above")
	controlDefault(p, &h.ScaleInBelow, def.Hosts.ScaleInBelow, "hosts", "scale_in_below")
	switch {
	case p.node("control", "hosts") == nil:
	case p.node("cluster") == nil:
		errs = append(errs, p.errAt("the pipeline has no cluster: section: hosts are taken into service and given back only by a pipeline spread over hosts (docs/cluster.md)", "control", "hosts"))
	case p.Whole():
		errs = append(errs, p.errAt("the pipeline has a transactional operator: its key groups live on one host together and the other hosts stand by, so more hosts share no load (docs/cluster.md)", "control", "hosts"))
	}
	switch {
	case h.Min < 1:
		at(fmt.Sprintf("min %d: want at least 1 active host", h.Min), "min")
	case h.Min > h.Max:
		at(fmt.Sprintf("min %d is over max %d", h.Min, h.Max), which([]any{"hosts", "min"}, []any{"hosts", "max"})[1:]...)
	}
	h.Request, h.Release = strings.TrimSpace(h.Request), strings.TrimSpace(h.Release) // "": none
	if h.Request != "" && h.Min == h.Max {
		at(fmt.Sprintf("request is given, but min and max are both %d: the decision never asks for a host", h.Min), "request")
	}
	if h.ScaleInBelow <= 0 {
		at(fmt.Sprintf("scale_in_below %g: want more than 0", h.ScaleInBelow), "scale_in_below")
	}
	if h.ScaleOutAbove <= 0 || h.ScaleOutAbove > 1 {
		at(fmt.Sprintf("scale_out_above %g: want more than 0 and at most 1 (a share of the workers' time)", h.ScaleOutAbove), "scale_out_above")
	} else if h.ScaleInBelow > 0 && h.ScaleInBelow >= h.ScaleOutAbove {
		at(fmt.Sprintf("scale_in_below %g is not under scale_out_above %g: a host given back would be asked for again at once", h.ScaleInBelow, h.ScaleOutAbove),
			which([]any{"hosts", "scale_in_below"}, []any{"hosts", "scale_out_above"})[1:]...)
	}
	return errs
}

// controlDefault sets *v to def when the file does not give the key of
// the control section at keys.
func controlDefault[T any](p *Pipeline, v *T, def T, keys ...any) {
	if !p.given(append([]any{"control"}, keys...)...) {
		*v = def
	}
}
