package pipeline

import (
	"reflect"
	"strings"
	"testing"
	"time"
)

const controlBase = `name: orders
sources:
  - {name: in, type: generator}
operators:
  - {name: count, plugin: p.wasm, kind: keyed}
sinks:
  - {name: out, type: stdout}
`

// TestControlSection: every key of a full control section is read into
// Control as written.
func TestControlSection(t *testing.T) {
	p, err := Parse("p.yaml", t.TempDir(), []byte(controlBase+`control:
  enabled: true
  period: 500ms
  lock: 3s
  settle: 4s
  window: 1500ms
  policies: [ds2, latency]
  workers: {min: 2, max: 16}
  latency: {lreq: 2s, l_low: 20ms, l_high: 200ms}
  ds2: {interval: 20s, warm_up: 15s, activation: 3, dead_band: 0, scaling_factor: 0.25}
  straggler: {ratio: 2, min_records: 50}
  doctor: {commit_seconds: 250ms, slow_version_ratio: 1.5, heap_ratio: 0.8}
`))
	if err != nil {
		t.Fatal(err)
	}
	want := Control{
		Present: true, Enabled: true,
		Period: 500 * time.Millisecond, Lock: 3 * time.Second, Settle: 4 * time.Second, Window: 1500 * time.Millisecond,
		Policies:  []string{"ds2", "latency"},
		Workers:   ControlWorkers{Min: 2, Max: 16},
		Latency:   LatencyPolicy{LReq: 2 * time.Second, LLow: 20 * time.Millisecond, LHigh: 200 * time.Millisecond},
		DS2:       DS2Policy{Interval: 20 * time.Second, WarmUp: 15 * time.Second, Activation: 3, DeadBand: 0, ScalingFactor: 0.25},
		Straggler: StragglerPolicy{Ratio: 2, MinRecords: 50},
		Doctor:    DoctorPolicy{SlowCommit: 250 * time.Millisecond, SlowVersionRatio: 1.5, HeapRatio: 0.8},
		Hosts:     DefaultControl().Hosts,
	}
	if !reflect.DeepEqual(p.Control, want) {
		t.Errorf("control\n%+v\nwant\n%+v", p.Control, want)
	}
}

// TestControlDefaults: a present section, even empty, is enabled with
// every default; enabled: false turns it off; no section leaves it off,
// with the defaults filled in all the same.
func TestControlDefaults(t *testing.T) {
	def := DefaultControl()
	for name, tc := range map[string]struct {
		section          string
		present, enabled bool
	}{
		"empty mapping":  {"control: {}\n", true, true},
		"no value":       {"control:\n", true, true},
		"enabled":        {"control: {enabled: true}\n", true, true},
		"disabled":       {"control: {enabled: false}\n", true, false},
		"no section":     {"", false, false},
		"policies empty": {"control: {policies: []}\n", true, true},
	} {
		p, err := Parse("p.yaml", t.TempDir(), []byte(controlBase+tc.section))
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		want := def
		want.Present, want.Enabled = tc.present, tc.enabled
		if name == "policies empty" {
			want.Policies = []string{}
		}
		if !reflect.DeepEqual(p.Control, want) {
			t.Errorf("%s: control\n%+v\nwant\n%+v", name, p.Control, want)
		}
	}
	want := Control{Period: time.Second, Lock: 5 * time.Second, Settle: 10 * time.Second, Window: 2 * time.Second,
		Policies: []string{"latency", "ds2", "straggler", "doctor"}, Workers: ControlWorkers{Min: 1, Max: 8},
		Latency:   LatencyPolicy{LReq: time.Second, LLow: 50 * time.Millisecond, LHigh: 100 * time.Millisecond},
		DS2:       DS2Policy{Interval: 10 * time.Second, WarmUp: 10 * time.Second, Activation: 2, DeadBand: 1},
		Straggler: StragglerPolicy{Ratio: 1.5, MinRecords: 1000},
		Doctor:    DoctorPolicy{SlowCommit: 100 * time.Millisecond, SlowVersionRatio: 1.3, HeapRatio: 0.9},
		Hosts:     ControlHosts{Min: 1, Max: 4, Timeout: time.Minute, Span: 30 * time.Second, ScaleOutAbove: 0.9, ScaleInBelow: 0.6}}
	if !reflect.DeepEqual(def, want) {
		t.Errorf("DefaultControl()\n%+v\nwant\n%+v", def, want)
	}
	// A key given keeps its value, the others take their defaults.
	p, err := Parse("p.yaml", t.TempDir(), []byte(controlBase+"control:\n  latency: {l_high: 300ms}\n  workers: {max: 4}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if c := p.Control; c.Latency.LHigh != 300*time.Millisecond || c.Latency.LLow != def.Latency.LLow || c.Workers != (ControlWorkers{Min: 1, Max: 4}) {
		t.Errorf("partly given: %+v", c)
	}
}

// TestControlAnchored: a control section given by an alias (its anchor
// in an operator's config, which takes any YAML) keeps the anchor's
// values, and takes the defaults of the others.
func TestControlAnchored(t *testing.T) {
	file := strings.Replace(controlBase, "kind: keyed}", "kind: keyed, config: &ctl {period: 2s, latency: {l_high: 300ms}}}", 1) + "control: *ctl\n"
	p, err := Parse("p.yaml", t.TempDir(), []byte(file))
	if err != nil {
		t.Fatal(err)
	}
	if c := p.Control; !c.Enabled || c.Period != 2*time.Second || c.Latency.LHigh != 300*time.Millisecond || c.Lock != 5*time.Second || c.Latency.LLow != 50*time.Millisecond {
		t.Errorf("an anchored control section: %+v", c)
	}
}

// TestControlRefusals: every bad value of the section is refused with the
// file, the line and the key at fault.
func TestControlRefusals(t *testing.T) {
	for name, tc := range map[string]struct{ section, want string }{
		"l_low over l_high": {"control:\n  latency: {l_low: 200ms, l_high: 100ms}\n",
			"p.yaml:9: control.latency.l_low: l_low 200ms is over l_high 100ms"},
		"l_high under the default l_low": {"control:\n  latency:\n    l_high: 10ms\n",
			"p.yaml:10: control.latency.l_high: l_low 50ms is over l_high 10ms"},
		"min over max":    {"control:\n  workers:\n    min: 4\n    max: 2\n", "p.yaml:10: control.workers.min: min 4 is over max 2"},
		"max under min":   {"control:\n  workers:\n    max: 0\n", "p.yaml:10: control.workers.max: min 1 is over max 0"},
		"min under 1":     {"control:\n  workers: {min: 0}\n", "p.yaml:9: control.workers.min: min 0: want at least 1 worker"},
		"zero period":     {"control:\n  period: 0s\n", "p.yaml:9: control.period: period 0s: want a positive duration"},
		"negative lock":   {"control:\n  lock: -1s\n", "p.yaml:9: control.lock: lock -1s: want a positive duration"},
		"zero window":     {"control: {window: 0s}\n", "control.window: window 0s: want a positive duration"},
		"zero lreq":       {"control: {latency: {lreq: 0s}}\n", "control.latency.lreq: lreq 0s: want a positive duration"},
		"zero interval":   {"control: {ds2: {interval: 0s}}\n", "control.ds2.interval: interval 0s: want a positive duration"},
		"zero warm_up":    {"control: {ds2: {warm_up: 0s}}\n", "control.ds2.warm_up: warm_up 0s: want a positive duration"},
		"zero commit":     {"control: {doctor: {commit_seconds: 0s}}\n", "control.doctor.commit_seconds: commit_seconds 0s: want a positive duration"},
		"short period":    {"control:\n  period: 50ms\n", "p.yaml:9: control.period: period 50ms: want at least 100ms"},
		"settle < period": {"control:\n  period: 2s\n  settle: 1s\n", "p.yaml:10: control.settle: settle 1s is shorter than period 2s"},
		"period > settle": {"control:\n  period: 20s\n", "p.yaml:9: control.period: settle 10s is shorter than period 20s"},
		"unknown policy": {"control:\n  policies:\n    - latency\n    - ds3\n",
			`p.yaml:11: control.policies[1]: unknown policy "ds3" (want latency, ds2, straggler, doctor)`},
		"repeated policy": {"control:\n  policies: [ds2, doctor, ds2]\n", `p.yaml:9: control.policies[2]: policy "ds2" is given twice (first as policies[0])`},
		"ratio 1":         {"control:\n  straggler: {ratio: 1}\n", "p.yaml:9: control.straggler.ratio: ratio 1: want more than 1"},
		"activation 0":    {"control:\n  ds2: {activation: 0}\n", "p.yaml:9: control.ds2.activation: activation 0: want at least 1 round"},
		"dead_band":       {"control:\n  ds2: {dead_band: -1}\n", "p.yaml:9: control.ds2.dead_band: dead_band -1: want 0 or more workers"},
		"scaling_factor":  {"control:\n  ds2: {scaling_factor: -0.5}\n", "p.yaml:9: control.ds2.scaling_factor: scaling_factor -0.5: want 0 or more"},
		"slow version":    {"control: {doctor: {slow_version_ratio: 0.5}}\n", "control.doctor.slow_version_ratio: slow_version_ratio 0.5: want more than 1"},
		"heap ratio":      {"control: {doctor: {heap_ratio: 1.5}}\n", "control.doctor.heap_ratio: heap_ratio 1.5: want more than 0 and at most 1"},
		"not a duration":  {"control:\n  settle: soon\n", `p.yaml:9: control.settle: "soon" is not a duration (write it like 250ms, 5s or 1m)`},
		"bare number":     {"control:\n  lock: 5\n", `p.yaml:9: control.lock: "5" is not a duration`},
		"unknown key":     {"control:\n  perod: 1s\n", `p.yaml:9: control.perod: unknown key "perod" in control: did you mean "period"?`},
		"negative min_records": {"control:\n  straggler: {min_records: -3}\n",
			`p.yaml:9: control.straggler.min_records: "-3" is not a whole number of 0 or more`},
		"disabled is still checked": {"control:\n  enabled: false\n  window: 0s\n", "p.yaml:10: control.window: window 0s: want a positive duration"},
	} {
		_, err := Parse("p.yaml", t.TempDir(), []byte(controlBase+tc.section))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want an error with %q", name, err, tc.want)
		}
	}
}

// TestControlBesideCluster: the control plane runs per host, so the
// section is taken beside cluster:.
func TestControlBesideCluster(t *testing.T) {
	p, err := Parse("p.yaml", t.TempDir(), []byte(clusterBase+"cluster: {host: h1}\ncontrol: {}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if !p.Control.Enabled || p.Cluster == nil {
		t.Errorf("control %+v, cluster %+v", p.Control, p.Cluster)
	}
}
