package control

import (
	"errors"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/host/api/schema"
)

// sdKeyed describes a keyed operator's steady load for the straggler
// and doctor tests: each key group's arrival rate and owner, and each
// worker's service rate.
type sdKeyed struct {
	name    string
	rates   []float64 // records/s per key group
	owner   []int     // key group -> worker id
	service []float64 // worker id -> records per busy second
	hosts   []string  // worker id -> host; nil: one host
	movable bool
}

// at returns the operator's cumulative counters after secs seconds.
func (k sdKeyed) at(secs float64) OperatorSample {
	op := OperatorSample{Name: k.name, Kind: "keyed", Version: "v1", Resizable: true, Movable: k.movable, Groups: make([]GroupSample, len(k.rates))}
	ws := make([]WorkerSample, len(k.service))
	for i := range ws {
		ws[i].ID = i
		ws[i].Groups = []int{}
		if k.hosts != nil {
			ws[i].Host = k.hosts[i]
		}
	}
	for kg, r := range k.rates {
		n := uint64(r * secs)
		op.Groups[kg] = GroupSample{Arrived: n, Processed: n}
		w := &ws[k.owner[kg]]
		w.Groups = append(w.Groups, kg)
		w.Records += n
		w.Out += n
		op.In += n
		op.Out += n
	}
	for i := range ws {
		ws[i].BusySeconds = float64(ws[i].Records) / k.service[i]
	}
	op.Workers = ws
	return op
}

// sdStart is the time of the tests' first sample.
var sdStart = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// sdView returns n samples a second apart, the first at sdStart plus
// from seconds; sample i is at(from+i).
func sdView(from, n int, at func(secs float64) Sample) *View {
	v := &View{Trigger: "period", MinWorkers: 1, MaxWorkers: 8}
	for i := range n {
		t := from + i
		s := at(float64(t))
		s.At = sdStart.Add(time.Duration(t) * time.Second)
		v.Samples = append(v.Samples, s)
	}
	return v
}

// sdOne returns a View of 3 samples a second apart of operator k alone.
func sdOne(k sdKeyed) *View {
	return sdView(0, 3, func(secs float64) Sample { return Sample{Operators: []OperatorSample{k.at(secs)}} })
}

// sdEight is 8 key groups of 400 records/s, two per worker of 4.
func sdEight(service ...float64) sdKeyed {
	return sdKeyed{
		name:    "count",
		rates:   []float64{400, 400, 400, 400, 400, 400, 400, 400},
		owner:   []int{0, 0, 1, 1, 2, 2, 3, 3},
		service: service,
		movable: true,
	}
}

// newStraggler returns a detector that judges on one round (Rounds 1),
// for the tests of one round's logic.
func newStraggler(t *testing.T) *Straggler {
	t.Helper()
	s, err := NewStraggler(StragglerConfig{Rounds: 1})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestStragglerMovesGroupsOffSlowWorker(t *testing.T) {
	s := newStraggler(t)
	// Worker 3 runs a record in 1 ms, its peers in 0.25 ms, on the same
	// load (800 records/s each).
	p, fs := s.Propose(sdOne(sdEight(4000, 4000, 4000, 1000)))
	if p == nil {
		t.Fatalf("no proposal; findings %+v", fs)
	}
	want := schema.Action{Kind: "move-groups", Operator: "count", Moves: []schema.GroupMove{
		{Group: 6, FromWorker: 3, ToWorker: 0}, // equal spare: the lowest id first
		{Group: 7, FromWorker: 3, ToWorker: 1}, // worker 0 has less spare now
	}}
	if !actionEqual(p.Action, want) {
		t.Errorf("action %+v, want %+v", p.Action, want)
	}
	if p.Policy != "straggler" || !strings.Contains(p.Reason, "count/3") || !strings.Contains(p.Reason, "4.0x") {
		t.Errorf("policy %q, reason %q: want the straggler naming count/3 and 4.0x", p.Policy, p.Reason)
	}
	if v := evidence(p.Evidence, "service rate of count/3"); v != 1000 {
		t.Errorf("evidence of μ %v, want 1000 (all: %+v)", v, p.Evidence)
	}
	if v := evidence(p.Evidence, "median service rate of the peers of count/3"); v != 4000 {
		t.Errorf("evidence of the peers' median %v, want 4000", v)
	}
	if v := evidence(p.Predicted, "arrival rate of count/3"); v != 0 {
		t.Errorf("predicted arrival of count/3 %v, want 0", v)
	}
	if len(fs) != 1 || fs[0].Cause != "straggler" || fs[0].Subject != "count/3" || fs[0].Recommendation == "" {
		t.Errorf("findings %+v, want one straggler count/3", fs)
	}
	if strings.Contains(fs[0].Summary, "host") {
		t.Errorf("summary %q names a host on one host", fs[0].Summary)
	}
}

func TestStragglerIsNotSkew(t *testing.T) {
	s := newStraggler(t)
	// Worker 3 has four times the records of each peer (its groups are
	// hot) and runs them as fast: skew, not a straggler.
	k := sdEight(4000, 4000, 4000, 4000)
	k.rates[6], k.rates[7] = 1600, 1600
	if p, fs := s.Propose(sdOne(k)); p != nil || len(fs) != 0 {
		t.Errorf("proposal %+v, findings %+v on a skewed load; want none", p, fs)
	}
}

func TestStragglerNoneWhenAllEquallySlow(t *testing.T) {
	s := newStraggler(t)
	if p, fs := s.Propose(sdOne(sdEight(1000, 1000, 1000, 1000))); p != nil || len(fs) != 0 {
		t.Errorf("proposal %+v, findings %+v; want none", p, fs)
	}
	// Just under Ratio: not a straggler.
	if p, fs := s.Propose(sdOne(sdEight(1500, 1500, 1500, 1001))); p != nil || len(fs) != 0 {
		t.Errorf("proposal %+v, findings %+v at 1.5x less a little; want none", p, fs)
	}
}

func TestStragglerNamesHost(t *testing.T) {
	s := newStraggler(t)
	k := sdEight(4000, 4000, 1000, 1000)
	k.hosts = []string{"a", "a", "b", "b"}
	p, fs := s.Propose(sdOne(k))
	if len(fs) != 2 {
		t.Fatalf("findings %+v, want workers 2 and 3", fs)
	}
	for _, f := range fs {
		if !strings.Contains(f.Summary, "on host b") || !strings.Contains(f.Summary, "host b is slow") || !strings.Contains(f.Recommendation, "host b") {
			t.Errorf("finding %+v does not name host b as slow", f)
		}
	}
	if p == nil {
		t.Fatal("no proposal")
	}
	for _, m := range p.Action.Moves {
		if m.ToWorker >= 2 {
			t.Errorf("move %+v to a straggler", m)
		}
	}
	if !strings.Contains(p.Reason, "on host b") {
		t.Errorf("reason %q does not name host b", p.Reason)
	}
	// One slow worker of two on host b: the worker is, not the host.
	k = sdEight(4000, 4000, 4000, 1000)
	k.hosts = []string{"a", "a", "b", "b"}
	_, fs = s.Propose(sdOne(k))
	if len(fs) != 1 || !strings.Contains(fs[0].Summary, "on host b") || strings.Contains(fs[0].Summary, "host b is slow") {
		t.Errorf("findings %+v, want count/3 on host b, the host not slow", fs)
	}
}

func TestStragglerNeedsMinRecords(t *testing.T) {
	s := newStraggler(t)
	k := sdEight(4000, 4000, 4000, 1000)
	k.rates[6], k.rates[7] = 100, 100 // 400 records in the window: not judged
	if p, fs := s.Propose(sdOne(k)); p != nil || len(fs) != 0 {
		t.Errorf("proposal %+v, findings %+v on a worker under MinRecords; want none", p, fs)
	}
	// Only one worker judged: no peers.
	k = sdEight(4000, 1000, 4000, 4000)
	k.rates = []float64{100, 100, 400, 400, 100, 100, 100, 100}
	if p, fs := s.Propose(sdOne(k)); p != nil || len(fs) != 0 {
		t.Errorf("proposal %+v, findings %+v with one judged worker; want none", p, fs)
	}
}

func TestStragglerMovesOnlyWhatPeersHaveRoomFor(t *testing.T) {
	s := newStraggler(t)
	// Worker 0: μ 1000, λ 900 (spare 100). Worker 1, slow: μ 300,
	// groups of 50 and 600 records/s (the second saturates it).
	k := sdKeyed{name: "count", rates: []float64{450, 450, 600, 50}, owner: []int{0, 0, 1, 1}, service: []float64{1000, 300}, movable: true}
	p, _ := s.Propose(sdOne(k))
	if p == nil {
		t.Fatal("no proposal")
	}
	want := []schema.GroupMove{{Group: 3, FromWorker: 1, ToWorker: 0}}
	if !slices.Equal(p.Action.Moves, want) {
		t.Errorf("moves %+v, want %+v", p.Action.Moves, want)
	}
	if !strings.Contains(p.Reason, "no spare capacity for the other 1") {
		t.Errorf("reason %q does not say a group stays", p.Reason)
	}
	// Nothing fits: no proposal, the finding stays.
	k.rates[0], k.rates[1] = 500, 500
	p, fs := s.Propose(sdOne(k))
	if p != nil || len(fs) != 1 {
		t.Errorf("proposal %+v, findings %+v; want no proposal and a finding", p, fs)
	}
}

func TestStragglerOfStatelessOperatorIsFindingOnly(t *testing.T) {
	s := newStraggler(t)
	v := sdView(0, 3, func(secs float64) Sample {
		op := OperatorSample{Name: "parse", Kind: "map", Resizable: true}
		for id, mu := range []float64{4000, 4000, 1000} {
			n := uint64(800 * secs)
			op.Workers = append(op.Workers, WorkerSample{ID: id, Records: n, Out: n, BusySeconds: float64(n) / mu})
		}
		return Sample{Operators: []OperatorSample{op}}
	})
	p, fs := s.Propose(v)
	if p != nil {
		t.Errorf("proposal %+v for an operator without key groups", p)
	}
	if len(fs) != 1 || fs[0].Subject != "parse/2" || !strings.Contains(fs[0].Recommendation, "cannot be moved") {
		t.Errorf("findings %+v, want parse/2 that cannot be moved", fs)
	}
}

func TestStragglerHoldsOffAfterRollback(t *testing.T) {
	s := newStraggler(t)
	k := sdEight(4000, 4000, 4000, 1000)
	at := func(secs float64) Sample { return Sample{Operators: []OperatorSample{k.at(secs)}} }
	p, _ := s.Propose(sdView(0, 3, at))
	if p == nil {
		t.Fatal("no proposal")
	}
	s.Outcome(schema.Decision{Time: sdStart.Add(2 * time.Second), Policy: "straggler", Action: p.Action, Outcome: "rolled back"})
	p, fs := s.Propose(sdView(10, 3, at))
	if p != nil || len(fs) != 1 {
		t.Errorf("proposal %+v, findings %+v 10s after a rollback; want the finding only", p, fs)
	}
	if p, _ = s.Propose(sdView(70, 3, at)); p == nil {
		t.Fatal("no proposal a minute after the rollback")
	}
	// A kept decision holds nothing off.
	s.Outcome(schema.Decision{Time: sdStart.Add(72 * time.Second), Policy: "straggler", Action: p.Action, Outcome: "kept"})
	if p, _ := s.Propose(sdView(73, 3, at)); p == nil {
		t.Error("no proposal after a kept decision")
	}
}

func TestStragglerNeedsTwoSamples(t *testing.T) {
	s := newStraggler(t)
	if p, fs := s.Propose(&View{}); p != nil || fs != nil {
		t.Errorf("proposal %+v, findings %+v on an empty view", p, fs)
	}
}

// TestStragglerNeedsRoundsInARow: a worker is a straggler only once it
// was slow for Rounds rounds in a row; a round in which it keeps up
// starts the count again.
func TestStragglerNeedsRoundsInARow(t *testing.T) {
	s, err := NewStraggler(StragglerConfig{})
	if err != nil {
		t.Fatal(err)
	}
	slow, fine := sdOne(sdEight(4000, 4000, 4000, 1000)), sdOne(sdEight(4000, 4000, 4000, 4000))
	for i, c := range []struct {
		view *View
		want bool
	}{{slow, false}, {slow, false}, {fine, false}, {slow, false}, {slow, false}, {slow, true}} {
		p, fs := s.Propose(c.view)
		if got := p != nil && len(fs) > 0; got != c.want {
			t.Errorf("round %d: proposal %v, findings %d; want a straggler: %v", i+1, p != nil, len(fs), c.want)
		}
	}
}

func TestNewStragglerRefusesBadSettings(t *testing.T) {
	for _, cfg := range []StragglerConfig{
		{Ratio: 1},
		{Ratio: 0.5},
		{Ratio: -2},
		{Ratio: math.NaN()},
		{Ratio: math.Inf(1)},
		{Window: -time.Second},
		{Rounds: -1},
	} {
		if _, err := NewStraggler(cfg); !errors.Is(err, ErrStragglerConfig) {
			t.Errorf("NewStraggler(%+v): %v, want ErrStragglerConfig", cfg, err)
		}
	}
	s, err := NewStraggler(StragglerConfig{})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := s.Config(), (StragglerConfig{Ratio: 1.5, MinRecords: 1000, Window: 2 * time.Second, Rounds: 3}); got != want {
		t.Errorf("defaults %+v, want %+v", got, want)
	}
	if s.Name() != "straggler" {
		t.Errorf("name %q", s.Name())
	}
}

// actionEqual reports whether a and b are the same action.
func actionEqual(a, b schema.Action) bool {
	return a.Kind == b.Kind && a.Operator == b.Operator && a.From == b.From && a.To == b.To && slices.Equal(a.Moves, b.Moves)
}

// evidence returns the value of the evidence named name, NaN when there
// is none.
func evidence(ev []schema.Evidence, name string) float64 {
	for _, e := range ev {
		if e.Name == name {
			return e.Value
		}
	}
	return math.NaN()
}
