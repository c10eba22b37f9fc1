package workload

import (
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
)

// Phase is one phase of a dynamic workload: its name, its length in events
// and the knobs its events are drawn with.
type Phase struct {
	Name   string
	Events int
	Knobs  Knobs
}

// ErrBadPhases is wrapped by the errors of ParsePhases and NewDynamic.
var ErrBadPhases = errors.New("bad dynamic workload")

// ParsePhases parses a dynamic workload of application app: the name of a
// preset (Presets), or phases separated by ";", each a comma-separated
// list of knob=value (AppKnobs), events=N (the phase's length) and
// name=TEXT. Each phase starts from the knobs of the one before it, the
// first from base, so a phase names only what changes; a phase without
// events= is as long as the one before it, the first defaultEvents long.
// For example "events=102400;skew=0.9;abort-ratio=0.2" is three phases of
// 102,400 events: base, then skewed, then skewed with aborts.
func ParsePhases(app, spec string, base Knobs, defaultEvents int) ([]Phase, error) {
	names, err := AppKnobs(app)
	if err != nil {
		return nil, err
	}
	spec = strings.TrimSpace(spec)
	if spec == "" {
		return nil, fmt.Errorf("workload: %w: no phases", ErrBadPhases)
	}
	if !strings.ContainsAny(spec, "=;,") {
		return preset(app, spec, base, defaultEvents)
	}
	var phases []Phase
	knobs, events := base, defaultEvents
	for i, text := range strings.Split(spec, ";") {
		p := Phase{Knobs: knobs, Events: events}
		for _, item := range strings.Split(text, ",") {
			item = strings.TrimSpace(item)
			if item == "" {
				continue
			}
			name, value, ok := strings.Cut(item, "=")
			name, value = strings.TrimSpace(name), strings.TrimSpace(value)
			switch {
			case !ok:
				return nil, fmt.Errorf("workload: %w: phase %d: %q is not name=value", ErrBadPhases, i+1, item)
			case name == "events":
				n, err := strconv.Atoi(strings.ReplaceAll(value, "_", ""))
				if err != nil || n < 1 {
					return nil, fmt.Errorf("workload: %w: phase %d: events=%q: want a whole number at least 1", ErrBadPhases, i+1, value)
				}
				p.Events = n
			case name == "name":
				p.Name = value
			case !contains(names, name):
				return nil, fmt.Errorf("workload: %w: phase %d: knob %q: application %s reads only %s (and events, name)", ErrBadPhases, i+1, name, app, strings.Join(names, ", "))
			default:
				if err := p.Knobs.Set(name, value); err != nil {
					return nil, fmt.Errorf("workload: %w: phase %d: %w", ErrBadPhases, i+1, err)
				}
			}
		}
		if p.Events < 1 {
			return nil, fmt.Errorf("workload: %w: phase %d: no length (give events=N)", ErrBadPhases, i+1)
		}
		if p.Name == "" {
			p.Name = phaseName(i, base, p.Knobs, names)
		}
		phases = append(phases, p)
		knobs, events = p.Knobs, p.Events
	}
	return phases, nil
}

func contains(names []string, s string) bool {
	for _, n := range names {
		if n == s {
			return true
		}
	}
	return false
}

// phaseName names phase i by the knobs in which it differs from base.
func phaseName(i int, base, k Knobs, names []string) string {
	var diff []string
	for _, n := range names {
		a, _ := base.Get(n)
		b, _ := k.Get(n)
		if a != b {
			diff = append(diff, n+"="+b)
		}
	}
	if len(diff) == 0 {
		return fmt.Sprintf("%d base", i+1)
	}
	return fmt.Sprintf("%d %s", i+1, strings.Join(diff, " "))
}

// Dynamic is a workload whose knobs change from phase to phase: event i is
// drawn by the phase whose range holds it (after the last phase, by the
// last). Every phase has the same key space and seed, so the initial state
// is the first phase's. A Dynamic is immutable and safe for concurrent use.
type Dynamic struct {
	apps   []App
	phases []Phase
	starts []uint64 // starts[p]: the first event of phase p
}

// NewDynamic returns the dynamic workload of application app with the
// given phases. Building each phase's Zipf table costs O(Keys) time and
// memory per phase with a skew.
func NewDynamic(app string, phases []Phase) (*Dynamic, error) {
	if len(phases) == 0 {
		return nil, fmt.Errorf("workload: %w: no phases", ErrBadPhases)
	}
	d := &Dynamic{phases: phases}
	var at uint64
	for i, p := range phases {
		if p.Events < 1 {
			return nil, fmt.Errorf("workload: %w: phase %d (%s): %d events, want at least 1", ErrBadPhases, i+1, p.Name, p.Events)
		}
		if p.Knobs.Keys != phases[0].Knobs.Keys || p.Knobs.Seed != phases[0].Knobs.Seed {
			return nil, fmt.Errorf("workload: %w: phase %d (%s): keys %d and seed %d differ from the first phase's %d and %d (the initial state is shared)",
				ErrBadPhases, i+1, p.Name, p.Knobs.Keys, p.Knobs.Seed, phases[0].Knobs.Keys, phases[0].Knobs.Seed)
		}
		a, err := New(app, p.Knobs)
		if err != nil {
			return nil, fmt.Errorf("workload: %w: phase %d (%s): %w", ErrBadPhases, i+1, p.Name, err)
		}
		d.apps = append(d.apps, a)
		d.starts = append(d.starts, at)
		at += uint64(p.Events)
	}
	return d, nil
}

// Name returns the application's name.
func (d *Dynamic) Name() string { return d.apps[0].Name() }

// Tables returns the application's tables.
func (d *Dynamic) Tables() []string { return d.apps[0].Tables() }

// Initial calls fn with the initial state, the first phase's.
func (d *Dynamic) Initial(fn func(table int, key, value []byte) error) error {
	return d.apps[0].Initial(fn)
}

// Event appends event i, drawn by its phase, to dst (App.Event).
func (d *Dynamic) Event(i uint64, dst []byte) (key, value []byte) {
	return d.apps[d.PhaseOf(i)].Event(i, dst)
}

// Phases returns the phases.
func (d *Dynamic) Phases() []Phase { return d.phases }

// Events returns the total length of the phases.
func (d *Dynamic) Events() int {
	last := len(d.phases) - 1
	return int(d.starts[last]) + d.phases[last].Events
}

// PhaseOf returns the index of the phase event i belongs to.
func (d *Dynamic) PhaseOf(i uint64) int {
	return sort.Search(len(d.starts), func(p int) bool { return d.starts[p] > i }) - 1
}
