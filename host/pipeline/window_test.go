package pipeline

import (
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/host/window"
)

const windowFile = `name: w
sources:
  - name: clicks
    type: file
    path: c.json
    format: json
    time_field: ts
    watermark: {out_of_orderness: 2s, idle: 1m}
operators:
  - name: counts
    kind: aggregate
    function: count
    window:
      type: sliding
      size: 1m
      slide: 10s
      allowed_lateness: 5s
sinks:
  - {name: out, type: file, path: out.txt}
late: {path: late.jsonl}
`

func TestParseWindow(t *testing.T) {
	p, err := Parse("p.yaml", "/pipes", []byte(windowFile))
	if err != nil {
		t.Fatal(err)
	}
	o := p.Operators[0]
	if o.Kind != KindAggregate || o.Function != "count" || o.Window == nil {
		t.Fatalf("operator %+v", o)
	}
	w := o.Window
	if w.Type != WindowSliding || time.Duration(w.Size) != time.Minute || time.Duration(w.Slide) != 10*time.Second ||
		time.Duration(w.AllowedLateness) != 5*time.Second || w.Time != "event" {
		t.Errorf("window %+v", w)
	}
	if wm := p.Sources[0].Watermark; wm == nil || time.Duration(wm.OutOfOrderness) != 2*time.Second || time.Duration(wm.Idle) != time.Minute {
		t.Errorf("watermark %+v", wm)
	}
	if p.Late.Path != "/pipes/late.jsonl" {
		t.Errorf("late %+v", p.Late)
	}
}

const joinFile = `name: j
sources:
  - {name: orders, type: file, path: o.txt}
  - {name: payments, type: file, path: p.txt}
operators:
  - name: paid
    kind: join
    inputs: [orders, payments]
    join:
      interval: {lower: -5s, upper: 10s}
sinks:
  - {name: out, type: file, path: out.txt}
`

func TestParseJoin(t *testing.T) {
	p, err := Parse("p.yaml", "/pipes", []byte(joinFile))
	if err != nil {
		t.Fatal(err)
	}
	j := p.Operators[0].Join
	if j.Type != JoinInner || j.Algorithm != "auto" || time.Duration(j.Interval.Lower) != -5*time.Second || time.Duration(j.Interval.Upper) != 10*time.Second {
		t.Errorf("join %+v %+v", j, j.Interval)
	}
}

// TestParseProcessingTrigger reads trigger: processing into the window's
// spec: an event-time window fired by the host's clock.
func TestParseProcessingTrigger(t *testing.T) {
	yaml := strings.Replace(strings.Replace(strings.Replace(windowFile, "allowed_lateness: 5s", "trigger: processing", 1),
		"type: sliding", "type: tumbling", 1), "      slide: 10s\n", "", 1)
	p, err := Parse("p.yaml", "/pipes", []byte(yaml))
	if err != nil {
		t.Fatal(err)
	}
	s, err := p.Operators[0].Window.Spec()
	if err != nil {
		t.Fatal(err)
	}
	if s.Trigger != window.ProcessingTimeTrigger || s.Domain != window.EventTime || s.Assigner != window.Tumbling {
		t.Errorf("spec %+v: want an event-time tumbling window with the processing-time trigger", s)
	}
	p, err = Parse("p.yaml", "/pipes", []byte(windowFile))
	if err != nil {
		t.Fatal(err)
	}
	if s, _ := p.Operators[0].Window.Spec(); s.Trigger != window.OnTime {
		t.Errorf("no trigger key: trigger %v, want on time", s.Trigger)
	}
}

func TestParseWindowErrors(t *testing.T) {
	for _, tc := range []struct {
		name, yaml string
		want       []string
	}{
		{"slide on tumbling", strings.Replace(windowFile, "type: sliding", "type: tumbling", 1),
			[]string{"p.yaml:16:", "operators[0].window.slide", "slide is not a key of a tumbling window (its keys: size, offset)"}},
		{"unknown type", strings.Replace(windowFile, "type: sliding", "type: slidng", 1),
			[]string{"p.yaml:14:", "operators[0].window.type", `unknown window type "slidng"`}},
		{"no window", strings.Replace(windowFile, "    window:\n", "    windo:\n", 1),
			[]string{"operators[0].windo", `did you mean "window"?`}},
		{"unknown function", strings.Replace(windowFile, "function: count", "function: median", 1),
			[]string{"p.yaml:12:", "operators[0].function", `unknown function "median" (want count, sum, min, max, mean)`}},
		{"function and plugin", strings.Replace(windowFile, "function: count", "function: sum\n    plugin: /a.wasm", 1),
			[]string{"operators[0].function", "set function (a built-in aggregate) or plugin, not both"}},
		{"neither", strings.Replace(windowFile, "function: count", "", 1),
			[]string{"operators[0].plugin", "an aggregate operator needs a plugin"}},
		{"count reads no field", strings.Replace(windowFile, "function: count", "function: count\n    field: price", 1),
			[]string{"operators[0].field", "count counts records and reads no field"}},
		{"window on a map", strings.Replace(windowFile, "kind: aggregate\n    function: count", "kind: map\n    plugin: /m.wasm", 1),
			[]string{"operators[0].window", "window is a key of the windowed kinds"}},
		{"negative duration", strings.Replace(windowFile, "size: 1m", "size: -1m", 1),
			[]string{"p.yaml:15:", `"-1m" is not a duration`}},
		{"count trigger on sliding windows", strings.Replace(windowFile, "allowed_lateness: 5s", "count: 10", 1),
			[]string{"operators[0].window.count", "a count trigger needs tumbling or global windows"}},
		{"slide over size", strings.Replace(windowFile, "slide: 10s", "slide: 2m", 1),
			[]string{"p.yaml:16:", "operators[0].window.slide"}},
		{"global without count", strings.Replace(strings.Replace(strings.Replace(windowFile, "type: sliding", "type: global", 1), "      size: 1m\n", "", 1), "      slide: 10s\n", "", 1),
			[]string{"operators[0].window.count", "a global window never ends"}},
		{"late both", strings.Replace(windowFile, "late: {path: late.jsonl}", "late: {path: late.jsonl, subject: late}", 1),
			[]string{"late", "set subject or path, not both"}},
		{"join with one input", strings.Replace(joinFile, "inputs: [orders, payments]", "inputs: [orders]", 1),
			[]string{"p.yaml:8:", "operators[0].inputs", "a join reads two inputs, left then right: inputs names 1"}},
		{"empty interval", strings.Replace(joinFile, "lower: -5s, upper: 10s", "lower: 5s, upper: 1s", 1),
			[]string{"operators[0].join.interval.lower", "lower 5s is after upper 1s"}},
		{"outer interval join", strings.Replace(joinFile, "join:\n", "join:\n      type: left\n", 1),
			[]string{"operators[0].join.type", "an interval join is inner"}},
		{"join without window", strings.Replace(joinFile, "      interval: {lower: -5s, upper: 10s}\n", "      type: full\n", 1),
			[]string{"operators[0].window", "a join operator needs a window"}},
		{"unknown algorithm", strings.Replace(joinFile, "join:\n", "join:\n      algorithm: hash\n", 1),
			[]string{"operators[0].join.algorithm", `unknown join algorithm "hash"`}},
		{"unknown objective", strings.Replace(joinFile, "      interval: {lower: -5s, upper: 10s}\n", "      objective: speed\n    window: {type: tumbling, size: 1m}\n", 1),
			[]string{"operators[0].join.objective", `unknown objective "speed" (want throughput, latency or progressiveness)`}},
		{"objective of a forced algorithm", strings.Replace(joinFile, "      interval: {lower: -5s, upper: 10s}\n", "      algorithm: npj\n      objective: latency\n    window: {type: tumbling, size: 1m}\n", 1),
			[]string{"p.yaml:11:", "operators[0].join.objective", "objective is what algorithm auto optimises; algorithm npj is forced"}},
		{"processing trigger on sliding windows", strings.Replace(windowFile, "allowed_lateness: 5s", "trigger: processing", 1),
			[]string{"p.yaml:17:", "operators[0].window.trigger", "a processing-time trigger needs tumbling or session windows"}},
		{"processing trigger on processing time", strings.Replace(strings.Replace(strings.Replace(windowFile, "allowed_lateness: 5s", "trigger: processing\n      time: processing", 1), "type: sliding", "type: tumbling", 1), "      slide: 10s\n", "", 1),
			[]string{"operators[0].window.trigger", "processing-time windows already fire on processing time"}},
		{"processing trigger and count", strings.Replace(strings.Replace(strings.Replace(windowFile, "allowed_lateness: 5s", "trigger: processing\n      count: 3", 1), "type: sliding", "type: tumbling", 1), "      slide: 10s\n", "", 1),
			[]string{"p.yaml:16:", "operators[0].window.trigger", "count and trigger: processing are two main triggers"}},
		{"count as a trigger", strings.Replace(windowFile, "allowed_lateness: 5s", "trigger: count", 1),
			[]string{"operators[0].window.trigger", "a count trigger is set with count: N"}},
		{"unknown trigger", strings.Replace(windowFile, "allowed_lateness: 5s", "trigger: watermark", 1),
			[]string{"p.yaml:17:", "operators[0].window.trigger", `unknown trigger "watermark"`}},
		{"trigger on a join's window", strings.Replace(joinFile, "      interval: {lower: -5s, upper: 10s}\n", "      type: inner\n    window: {type: tumbling, size: 1m, trigger: processing}\n", 1),
			[]string{"operators[0].window.trigger", "trigger is not a key of a join's window"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse("p.yaml", "/pipes", []byte(tc.yaml))
			if err == nil {
				t.Fatal("no error")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
		})
	}
}
