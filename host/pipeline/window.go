package pipeline

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/sluicehq/sluice/host/join"
	"github.com/sluicehq/sluice/host/window"
)

// Operator kinds of windows and joins.
const (
	// KindAggregate folds each key's records of a window into an
	// accumulator the host keeps: a plugin's (sluice_agg_add, merge and
	// fire), or a built-in function (function: count, sum, min, max,
	// mean) with no plugin.
	KindAggregate = "aggregate"
	// KindWindow hands a plugin all of a key's records of a window when
	// it fires (sluice_window_fire).
	KindWindow = "window"
	// KindJoin joins two inputs by key within windows or intervals.
	KindJoin = "join"
)

// Built-in window functions, for kind aggregate without a plugin.
var builtinFunctions = []string{"count", "sum", "min", "max", "mean"}

// Window says how a windowed operator (kinds aggregate, window and join)
// groups its records by time. Times are the records' event times unless
// Time is "processing".
type Window struct {
	// Type is tumbling, sliding, session or global.
	Type string `yaml:"type"`
	// Size of a tumbling or sliding window.
	Size Duration `yaml:"size"`
	// Slide is how far apart sliding windows start.
	Slide Duration `yaml:"slide"`
	// Offset shifts tumbling and sliding windows from the epoch (a day's
	// windows starting at 06:00, say).
	Offset Duration `yaml:"offset"`
	// Gap closes a session window after that long without a record.
	Gap Duration `yaml:"gap"`
	// Time is event (the default: records' event times and the sources'
	// watermarks) or processing (the host's clock when a record arrives).
	Time string `yaml:"time"`
	// Trigger says what fires an event-time window at its end: time (the
	// default: the watermark passing its end - 1) or processing (the
	// host's clock passing its end - 1, whatever the watermark; tumbling
	// and session windows). A count trigger is set with Count.
	Trigger string `yaml:"trigger"`
	// Count fires a window every Count records instead of at its end; a
	// global window needs it, and is emptied at each firing.
	Count int `yaml:"count"`
	// EarlyEvery fires a window early, with what it holds so far, every
	// EarlyEvery records; it fires again at its end.
	EarlyEvery int `yaml:"early_every"`
	// EarlyInterval fires a window early every EarlyInterval of the host's
	// clock.
	EarlyInterval Duration `yaml:"early_interval"`
	// AllowedLateness keeps a window's state that long past its end: a
	// record that arrives in that span is added and fires the window again
	// (a late firing). Later records go to the late destination.
	AllowedLateness Duration `yaml:"allowed_lateness"`
}

// Window types.
const (
	WindowTumbling = "tumbling"
	WindowSliding  = "sliding"
	WindowSession  = "session"
	WindowGlobal   = "global"
)

// Watermark says how far a source's event time has come: the largest
// event time read minus OutOfOrderness (0: the times only grow).
type Watermark struct {
	// OutOfOrderness is how late, in event time, a record may arrive
	// after a later one and still count as on time. Default 0.
	OutOfOrderness Duration `yaml:"out_of_orderness"`
	// Idle leaves a source out of the watermark once it has delivered
	// nothing for that long, so a quiet source does not hold time back.
	// Default 0: never.
	Idle Duration `yaml:"idle"`
}

// Join configures an operator of kind join: its two inputs (the operator's
// inputs, left first) are joined on equal keys, within the operator's
// window or within an interval of event time.
type Join struct {
	// Type is inner (the default), left, right or full.
	Type string `yaml:"type"`
	// Interval joins each left record with the right records of the same
	// key whose time lies in [left + lower, left + upper], instead of a
	// window.
	Interval *Interval `yaml:"interval"`
	// Algorithm is the join kernel: auto (the default) or one of npj,
	// prj, mway, mpass, shj-jm, shj-jb, pmj-jm, pmj-jb.
	Algorithm string `yaml:"algorithm"`
	// Objective is what algorithm auto optimises: throughput (the
	// default), latency or progressiveness (docs/joins.md).
	Objective string `yaml:"objective"`
}

// Interval bounds an interval join: a right record b joins a left record a
// when a.time + Lower <= b.time <= a.time + Upper.
type Interval struct {
	Lower SignedDuration `yaml:"lower"`
	Upper SignedDuration `yaml:"upper"`
}

// Join types.
const (
	JoinInner = "inner"
	JoinLeft  = "left"
	JoinRight = "right"
	JoinFull  = "full"
)

// joinAlgorithms are the names join.algorithm takes.
var joinAlgorithms = []string{"auto", "npj", "prj", "mway", "mpass", "shj-jm", "shj-jb", "pmj-jm", "pmj-jb"}

// SignedDuration is a duration that may be negative: "-5s".
type SignedDuration time.Duration

// UnmarshalYAML parses a duration string.
func (d *SignedDuration) UnmarshalYAML(n *yaml.Node) error {
	v, err := time.ParseDuration(n.Value)
	if err != nil {
		return &yaml.TypeError{Errors: []string{fmt.Sprintf("line %d: %q is not a duration (write it like -5s, 250ms or 1m)", n.Line, n.Value)}}
	}
	*d = SignedDuration(v)
	return nil
}

// Late says where records that arrive after their window has closed
// (later than allowed_lateness) go. With neither Subject nor Path set,
// they go to the JSON Lines file DefaultLateFile in the data directory.
type Late struct {
	// Subject publishes late records to this NATS subject instead.
	Subject string `yaml:"subject"`
	// Path writes late records to this JSON Lines file.
	Path string `yaml:"path"`
}

// DefaultLateFile is the file, in the data directory, that late records go
// to when late names no subject and no path.
const DefaultLateFile = "late-records.jsonl"

// Windowed reports whether the operator's kind groups records by window.
func (o *Operator) Windowed() bool {
	return o.Kind == KindAggregate || o.Kind == KindWindow || o.Kind == KindJoin
}

// Windowed reports whether any operator of the pipeline is windowed.
func (p *Pipeline) Windowed() bool {
	for i := range p.Operators {
		if p.Operators[i].Windowed() {
			return true
		}
	}
	return false
}

// validateWindowed checks the keys of the window, aggregate and join
// kinds, and refuses them on other kinds.
func (p *Pipeline) validateWindowed(i int, o *Operator) []error {
	var errs []error
	at := func(msg string, key ...any) {
		errs = append(errs, p.errAt(msg, append([]any{"operators", i}, key...)...))
	}
	if !o.Windowed() {
		for _, k := range []string{"window", "function", "field", "join"} {
			if p.has("operators", i, k) {
				at(fmt.Sprintf("%s is a key of the windowed kinds (aggregate, window, join), not of a %s operator", k, o.Kind), k)
			}
		}
		return errs
	}
	switch o.Kind {
	case KindAggregate:
		switch {
		case o.Function != "" && o.Plugin != "":
			at("set function (a built-in aggregate) or plugin, not both", "function")
		case o.Function == "" && o.Plugin == "":
			at(fmt.Sprintf("an aggregate operator needs a plugin (the path of a .wasm module) or a built-in function (%s)", strings.Join(builtinFunctions, ", ")), "plugin")
		case o.Function != "" && !slices.Contains(builtinFunctions, o.Function):
			msg := fmt.Sprintf("unknown function %q (want %s)", o.Function, strings.Join(builtinFunctions, ", "))
			at(msg, "function")
		}
		if o.Field != "" && o.Function == "" {
			at("field applies to a built-in function only (a plugin reads the records itself)", "field")
		}
		if o.Function == "count" && o.Field != "" {
			at("count counts records and reads no field", "field")
		}
	case KindWindow:
		if o.Plugin == "" {
			at("a window operator needs a plugin (the path of a .wasm module) that gets each window's records", "plugin")
		}
		for _, k := range []string{"function", "field"} {
			if p.has("operators", i, k) {
				at(fmt.Sprintf("%s is a key of aggregate operators (built-in functions)", k), k)
			}
		}
	case KindJoin:
		for _, k := range []string{"function", "field"} {
			if p.has("operators", i, k) {
				at(fmt.Sprintf("%s is a key of aggregate operators (built-in functions)", k), k)
			}
		}
		errs = append(errs, p.validateJoin(i, o)...)
	}
	if len(o.State) > 0 {
		at(fmt.Sprintf("a %s operator keeps its windows in state of its own: state lists a keyed operator's tables", o.Kind), "state")
	}
	if o.Window == nil {
		if o.Kind != KindJoin || o.Join == nil || o.Join.Interval == nil {
			at(fmt.Sprintf("a %s operator needs a window (type: tumbling, sliding, session or global)", o.Kind), "window")
		}
		return errs
	}
	if o.Kind == KindJoin && o.Join != nil && o.Join.Interval != nil {
		at("an interval join has no window: set window or join.interval, not both", "window")
	}
	errs = append(errs, p.validateWindow(i, o.Window)...)
	if o.Kind == KindJoin {
		w := o.Window
		if w.Type == WindowGlobal {
			at("a join's window is tumbling, sliding or session: a global window never ends, so its join never would", "window", "type")
		}
		if w.Time == "processing" {
			at("a join's windows are of event time", "window", "time")
		}
		for _, k := range []string{"trigger", "count", "early_every", "early_interval", "allowed_lateness"} {
			if p.has("operators", i, "window", k) {
				at(fmt.Sprintf("%s is not a key of a join's window: a join fires each window once, at its end", k), "window", k)
			}
		}
	}
	return errs
}

// validateWindow checks a window's keys against its type.
func (p *Pipeline) validateWindow(i int, w *Window) []error {
	var errs []error
	at := func(msg string, key ...any) {
		errs = append(errs, p.errAt(msg, append([]any{"operators", i, "window"}, key...)...))
	}
	uses := map[string][]string{
		WindowTumbling: {"size", "offset"},
		WindowSliding:  {"size", "slide", "offset"},
		WindowSession:  {"gap"},
		WindowGlobal:   {},
	}
	keys, ok := uses[w.Type]
	switch {
	case w.Type == "":
		at("a window needs a type (tumbling, sliding, session or global)", "type")
		return errs
	case !ok:
		at(fmt.Sprintf("unknown window type %q (want tumbling, sliding, session or global)", w.Type), "type")
		return errs
	}
	for _, k := range []string{"size", "slide", "offset", "gap"} {
		if p.has("operators", i, "window", k) && !slices.Contains(keys, k) {
			at(fmt.Sprintf("%s is not a key of a %s window (its keys: %s)", k, w.Type, strings.Join(keys, ", ")), k)
		}
	}
	switch w.Time {
	case "":
		w.Time = "event"
	case "event", "processing":
	default:
		at(fmt.Sprintf("unknown time %q (want event: the records' times and the sources' watermarks; or processing: the host's clock)", w.Time), "time")
	}
	switch w.Trigger {
	case "", "time":
	case "processing":
		if w.Count != 0 {
			at("count and trigger: processing are two main triggers: set one", "trigger")
		}
	case "count":
		at("a count trigger is set with count: N (the records between firings)", "trigger")
	default:
		at(fmt.Sprintf("unknown trigger %q (want time: the watermark fires a window at its end; or processing: the host's clock does; a count trigger is set with count)", w.Trigger), "trigger")
	}
	if w.Count < 0 {
		at(fmt.Sprintf("count %d: want 1 or more", w.Count), "count")
	}
	if w.EarlyEvery < 0 {
		at(fmt.Sprintf("early_every %d: want 1 or more", w.EarlyEvery), "early_every")
	}
	if len(errs) == 0 {
		if _, err := w.Spec(); err != nil {
			var se *window.SpecError
			if errors.As(err, &se) {
				at(se.Reason, se.Key)
			} else {
				at(err.Error())
			}
		}
	}
	return errs
}

// validateJoin checks an operator of kind join: two inputs, a type, an
// algorithm, an interval that is not empty.
func (p *Pipeline) validateJoin(i int, o *Operator) []error {
	var errs []error
	at := func(msg string, key ...any) {
		errs = append(errs, p.errAt(msg, append([]any{"operators", i}, key...)...))
	}
	if len(o.Inputs) != 2 {
		at(fmt.Sprintf("a join reads two inputs, left then right: inputs names %d", len(o.Inputs)), "inputs")
	}
	if o.Join == nil {
		o.Join = &Join{}
	}
	j := o.Join
	switch j.Type {
	case "":
		j.Type = JoinInner
	case JoinInner, JoinLeft, JoinRight, JoinFull:
	default:
		at(fmt.Sprintf("unknown join type %q (want inner, left, right or full)", j.Type), "join", "type")
	}
	switch {
	case j.Algorithm == "":
		j.Algorithm = "auto"
	case !slices.Contains(joinAlgorithms, j.Algorithm):
		at(fmt.Sprintf("unknown join algorithm %q (want %s)", j.Algorithm, strings.Join(joinAlgorithms, ", ")), "join", "algorithm")
	}
	switch {
	case j.Objective == "":
		j.Objective = join.Throughput.String()
	case j.Algorithm != "auto":
		at(fmt.Sprintf("objective is what algorithm auto optimises; algorithm %s is forced", j.Algorithm), "join", "objective")
	default:
		if _, err := join.ParseObjective(j.Objective); err != nil {
			at(fmt.Sprintf("unknown objective %q (want throughput, latency or progressiveness)", j.Objective), "join", "objective")
		}
	}
	if iv := j.Interval; iv != nil {
		if iv.Lower > iv.Upper {
			at(fmt.Sprintf("lower %v is after upper %v: the interval holds no time", time.Duration(iv.Lower), time.Duration(iv.Upper)), "join", "interval", "lower")
		}
		if j.Type != JoinInner {
			at("an interval join is inner: left, right and full joins need a window", "join", "type")
		}
	}
	return errs
}

// Spec returns the window as the window manager takes it, or why it
// cannot work: a *window.SpecError whose Key is the pipeline key at fault
// below window (size, slide, count, early_every, allowed_lateness...).
func (w *Window) Spec() (window.Spec, error) {
	s := window.Spec{
		Size: time.Duration(w.Size), Slide: time.Duration(w.Slide), Offset: time.Duration(w.Offset),
		Gap: time.Duration(w.Gap), Count: w.Count, EarlyCount: w.EarlyEvery,
		EarlyInterval: time.Duration(w.EarlyInterval), Lateness: time.Duration(w.AllowedLateness),
	}
	switch w.Type {
	case WindowTumbling:
		s.Assigner = window.Tumbling
	case WindowSliding:
		s.Assigner = window.Sliding
	case WindowSession:
		s.Assigner = window.Session
	case WindowGlobal:
		s.Assigner = window.Global
	}
	if w.Time == "processing" {
		s.Domain = window.ProcessingTime
	}
	if w.Trigger == "processing" {
		s.Trigger = window.ProcessingTimeTrigger
	}
	if w.Count > 0 {
		s.Trigger = window.Count
	}
	if err := s.Validate(); err != nil {
		var se *window.SpecError
		if errors.As(err, &se) {
			key := specKey(se.Key)
			if se.Key == "window.trigger" && s.Trigger == window.ProcessingTimeTrigger {
				key = "trigger" // the trigger key set it, not count
			}
			return s, &window.SpecError{Key: key, Reason: se.Reason}
		}
		return s, err
	}
	return s, nil
}

// specKey names, as the pipeline file spells it below window, the key of
// a window.SpecError.
func specKey(key string) string {
	key = strings.TrimPrefix(key, "window.")
	if k, ok := map[string]string{"early.count": "early_every", "early.interval": "early_interval",
		"lateness": "allowed_lateness", "trigger": "count"}[key]; ok {
		return k
	}
	return key
}
