package control

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"testing"
	"time"

	"github.com/sluicehq/sluice/host/api/schema"
)

var t0 = time.Date(2026, 12, 3, 8, 0, 0, 0, time.UTC)

// figures returns a round's figures at t0+at: one active host per
// utilisation, h1, h2, ..., with 10 key groups each, and pool hosts.
func figures(at time.Duration, pool []string, utilisation ...float64) ClusterFigures {
	f := ClusterFigures{At: t0.Add(at), Pool: pool}
	for i, u := range utilisation {
		f.Active = append(f.Active, HostFigures{Host: fmt.Sprintf("h%d", i+1), Utilisation: u, Groups: 10})
	}
	return f
}

func newHosts(t *testing.T, cfg HostsConfig) *Hosts {
	t.Helper()
	h, err := NewHosts(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// TestHostsScaleOut: every active host saturated for the span takes the
// first pool host into service; before the span, or with one host not
// saturated, nothing.
func TestHostsScaleOut(t *testing.T) {
	h := newHosts(t, HostsConfig{Span: 10 * time.Second})
	pool := []string{"p1", "p2"}
	for s := time.Duration(0); s < 10*time.Second; s += time.Second {
		if p := h.Decide(figures(s, pool, 0.95, 0.92)); p != nil {
			t.Fatalf("at %v, before the span: %+v", s, p.Action)
		}
	}
	if p := h.Decide(figures(10*time.Second, pool, 0.95, 0.5)); p != nil {
		t.Fatalf("one host not saturated: %+v", p.Action)
	}
	// The span starts again from here.
	for s := 11 * time.Second; s < 21*time.Second; s += time.Second {
		if p := h.Decide(figures(s, pool, 0.95, 0.92)); p != nil {
			t.Fatalf("at %v, before the span began again: %+v", s, p.Action)
		}
	}
	p := h.Decide(figures(21*time.Second, pool, 0.95, 0.92))
	if p == nil || p.Action.Kind != ActionActivateHost || p.Action.Host != "p1" || p.Policy != HostsPolicy {
		t.Fatalf("after the span: %+v, want activate-host p1", p)
	}
	if len(p.Evidence) == 0 || len(p.Predicted) == 0 || p.Predicted[0].Value >= 0.935 {
		t.Errorf("evidence %v, predicted %v: want the mean utilisation predicted lower", p.Evidence, p.Predicted)
	}
}

// TestHostsSaturatedController: a host whose controller wants more
// workers than workers.max is saturated whatever its utilisation, and
// holds off a scale-in.
func TestHostsSaturatedController(t *testing.T) {
	h := newHosts(t, HostsConfig{Span: time.Second})
	var got []string
	for s := range 3 {
		f := figures(time.Duration(s)*time.Second, []string{"p1"}, 0.2, 0.2)
		for i := range f.Active {
			f.Active[i].Saturated = true
		}
		if p := h.Decide(f); p != nil {
			got = append(got, p.Action.Kind)
			h.Done(f.At, true)
		}
	}
	if len(got) != 1 || got[0] != ActionActivateHost {
		t.Errorf("decisions %v, want one activate-host", got)
	}
}

// TestHostsScaleIn: a load that fits on one host fewer for the span gives
// the host with the fewest key groups back to the pool.
func TestHostsScaleIn(t *testing.T) {
	h := newHosts(t, HostsConfig{Span: 5 * time.Second})
	var p *Proposal
	for s := time.Duration(0); s <= 5*time.Second && p == nil; s += time.Second {
		f := figures(s, nil, 0.3, 0.35, 0.3)
		f.Active[1].Groups = 4
		p = h.Decide(f)
		if p != nil && s < 5*time.Second {
			t.Fatalf("at %v, before the span: %+v", s, p.Action)
		}
	}
	if p == nil || p.Action.Kind != ActionReleaseHost || p.Action.Host != "h2" {
		t.Fatalf("%+v, want release-host h2 (fewest groups)", p)
	}
	// The same load with one host behind (a source's backlog growing,
	// its reader slower than the arrivals while its workers are idle):
	// no host is given back.
	h = newHosts(t, HostsConfig{Span: time.Second})
	for s := range 10 {
		f := figures(time.Duration(s)*time.Second, nil, 0.3, 0.35, 0.3)
		f.Active[2].Behind = true
		if p := h.Decide(f); p != nil {
			t.Fatalf("a host behind: %+v", p.Action)
		}
	}
	// 0.5 on 2 hosts would be 1.0 on one: it does not fit.
	h = newHosts(t, HostsConfig{Span: time.Second})
	for s := range 10 {
		if p := h.Decide(figures(time.Duration(s)*time.Second, nil, 0.5, 0.5)); p != nil {
			t.Fatalf("a load that does not fit on one host: %+v", p.Action)
		}
	}
}

// TestHostsBounds: under min scales out and over max scales in whatever
// the load; at max a saturated cluster asks for nothing, at min an idle
// one gives nothing back.
func TestHostsBounds(t *testing.T) {
	h := newHosts(t, HostsConfig{Min: 2, Max: 3, Span: time.Second, Request: true})
	if p := h.Decide(figures(0, []string{"p1"}, 0.1)); p == nil || p.Action.Kind != ActionActivateHost {
		t.Errorf("1 host under min 2: %+v, want activate-host", p)
	}
	h = newHosts(t, HostsConfig{Min: 2, Max: 3, Span: time.Second})
	if p := h.Decide(figures(0, nil, 0.99, 0.99, 0.99, 0.99)); p == nil || p.Action.Kind != ActionReleaseHost {
		t.Errorf("4 hosts over max 3: %+v, want release-host", p)
	}
	h = newHosts(t, HostsConfig{Min: 2, Max: 3, Span: time.Second, Request: true})
	for s := range 10 {
		if p := h.Decide(figures(time.Duration(s)*time.Second, []string{"p1"}, 0.99, 0.99, 0.99)); p != nil {
			t.Fatalf("saturated at max: %+v", p.Action)
		}
	}
	h = newHosts(t, HostsConfig{Min: 2, Max: 3, Span: time.Second})
	for s := range 10 {
		if p := h.Decide(figures(time.Duration(s)*time.Second, nil, 0.01, 0.01)); p != nil {
			t.Fatalf("idle at min: %+v", p.Action)
		}
	}
}

// TestHostsEmptyPool: a scale-out that finds the pool empty runs the
// request command when one is configured, and nothing otherwise.
func TestHostsEmptyPool(t *testing.T) {
	for _, request := range []bool{false, true} {
		h := newHosts(t, HostsConfig{Span: time.Second, Request: request})
		var p *Proposal
		for s := 0; s < 5 && p == nil; s++ {
			p = h.Decide(figures(time.Duration(s)*time.Second, nil, 0.95))
		}
		switch {
		case request && (p == nil || p.Action.Kind != ActionRequestHost):
			t.Errorf("with a request command: %+v, want request-host", p)
		case !request && p != nil:
			t.Errorf("without a request command: %+v, want none", p.Action)
		}
	}
}

// TestHostsFailingRequest: a request whose command fails is not run
// every round: at most once per lock, and only after another span of
// saturation.
func TestHostsFailingRequest(t *testing.T) {
	span, lock := 3*time.Second, 10*time.Second
	h := newHosts(t, HostsConfig{Span: span, Lock: lock, Request: true})
	var at []time.Duration
	for s := time.Duration(0); s < 2*time.Minute; s += time.Second {
		f := figures(s, nil, 0.99, 0.99)
		if p := h.Decide(f); p != nil {
			if p.Action.Kind != ActionRequestHost {
				t.Fatalf("at %v: %+v", s, p.Action)
			}
			at = append(at, s)
			h.Done(f.At, false) // the command failed: still done
		}
	}
	if len(at) < 2 {
		t.Fatalf("requests at %v: want them repeated while saturated", at)
	}
	for i := 1; i < len(at); i++ {
		if gap := at[i] - at[i-1]; gap < lock {
			t.Errorf("requests at %v and %v: %v apart, under the lock %v", at[i-1], at[i], gap, lock)
		}
	}
}

// TestHostsNoDecisionWhileMigrating: no decision while key groups move,
// while a host is being released, or while a report is missing; each
// starts the span afresh.
func TestHostsNoDecisionWhileMigrating(t *testing.T) {
	for name, set := range map[string]func(*ClusterFigures){
		"migrating": func(f *ClusterFigures) { f.Migrating = true },
		"releasing": func(f *ClusterFigures) { f.Releasing = "h3" },
		"missing":   func(f *ClusterFigures) { f.Missing = []string{"h3"} },
	} {
		h := newHosts(t, HostsConfig{Span: 5 * time.Second})
		for s := range 5 {
			h.Decide(figures(time.Duration(s)*time.Second, []string{"p1"}, 0.99, 0.99))
		}
		f := figures(5*time.Second, []string{"p1"}, 0.99, 0.99)
		set(&f)
		if p := h.Decide(f); p != nil {
			t.Fatalf("%s: %+v", name, p.Action)
		}
		for s := 6; s < 11; s++ {
			if p := h.Decide(figures(time.Duration(s)*time.Second, []string{"p1"}, 0.99, 0.99)); p != nil {
				t.Fatalf("%s: at %ds, before a whole span after it: %+v", name, s, p.Action)
			}
		}
		if p := h.Decide(figures(11*time.Second, []string{"p1"}, 0.99, 0.99)); p == nil {
			t.Errorf("%s: no decision a span after it ended", name)
		}
	}
}

// TestHostsFlatLoad: on a flat load (total work in hosts' worth, spread
// evenly over the active hosts), the decision scales out to what the
// load needs and then stays: never a scale-in after a scale-out or the
// other way round.
func TestHostsFlatLoad(t *testing.T) {
	for _, load := range []float64{0.1, 0.5, 0.59, 0.9, 1.0, 1.7, 2.5, 3.2, 6} {
		for start := 1; start <= 4; start++ {
			h := newHosts(t, HostsConfig{Max: 4, Span: 5 * time.Second, Lock: 3 * time.Second})
			n, pool := start, 8-start
			var kinds []string
			for s := time.Duration(0); s < 10*time.Minute; s += time.Second {
				f := ClusterFigures{At: t0.Add(s)}
				for i := range n {
					f.Active = append(f.Active, HostFigures{Host: fmt.Sprintf("h%d", i+1), Utilisation: load / float64(n), Groups: 64 / n})
				}
				for i := range pool {
					f.Pool = append(f.Pool, fmt.Sprintf("p%d", i+1))
				}
				p := h.Decide(f)
				if p == nil {
					continue
				}
				switch p.Action.Kind {
				case ActionActivateHost:
					n, pool = n+1, pool-1
				case ActionReleaseHost:
					n, pool = n-1, pool+1
				default:
					t.Fatalf("load %g: %+v", load, p.Action)
				}
				kinds = append(kinds, p.Action.Kind)
				h.Done(f.At, true)
			}
			for i := 1; i < len(kinds); i++ {
				if kinds[i] != kinds[0] {
					t.Errorf("load %g from %d hosts: decisions %v: a flat load went both ways", load, start, kinds)
					break
				}
			}
			switch {
			case n < 1 || n > 4:
				t.Errorf("load %g from %d hosts: ended on %d hosts, outside 1 to 4", load, start, n)
			case n < 4 && load/float64(n) >= 0.9:
				t.Errorf("load %g from %d hosts: ended saturated on %d hosts (decisions %v)", load, start, n, kinds)
			case n > 1 && load/float64(n-1) < 0.6:
				t.Errorf("load %g from %d hosts: ended on %d hosts, though it fits on %d (decisions %v)", load, start, n, n-1, kinds)
			}
		}
	}
}

// TestNewHostsRefusals: bad configurations are refused by name.
func TestNewHostsRefusals(t *testing.T) {
	for _, cfg := range []HostsConfig{
		{Min: -1}, {Min: 3, Max: 2}, {Span: -time.Second},
		{ScaleInBelow: 0.9, ScaleOutAbove: 0.8}, {ScaleOutAbove: 1.5},
	} {
		if _, err := NewHosts(cfg); !errors.Is(err, ErrBadConfig) {
			t.Errorf("%+v: %v, want ErrBadConfig", cfg, err)
		}
	}
}

// runRounds makes a controller of cfg, quiet, and runs n rounds.
func runRounds(t *testing.T, cfg Config, n int) *Controller {
	t.Helper()
	cfg.Logger = slog.New(slog.DiscardHandler)
	c, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	for range n {
		if _, err := c.Round(context.Background(), ""); err != nil {
			t.Fatal(err)
		}
	}
	return c
}

// TestControllerLoadBehind: a host whose source's backlog grows reports
// itself behind, whatever its workers' utilisation (here a quarter: the
// source's reader, not the workers, falls behind).
func TestControllerLoadBehind(t *testing.T) {
	for _, readMax := range []float64{5000, 0} {
		sim := newChainSim(6000, &chainOp{name: "count", workers: 4, rate: 5000, selectivity: 1})
		sim.readMax = readMax
		clock := &fakeClock{t: epoch}
		c := runRounds(t, Config{Actuator: sim, Now: clock.Now, MaxWorkers: 4, Sample: sampler(clock, sim.step)}, 4)
		if got, want := c.Load().Behind, readMax > 0; got != want {
			t.Errorf("source read at most %g records/s of 6000: load %+v, want behind %v", readMax, c.Load(), want)
		}
	}
}

// TestControllerLoadSaturated: a host whose DS2 needs more workers than
// workers.max for an operator that runs that many reports itself
// saturated, through the controller's Load, for the cluster-level
// decision; below the bound it does not.
func TestControllerLoadSaturated(t *testing.T) {
	for _, tc := range []struct {
		rate      float64
		saturated bool
	}{
		{10000, true}, // parse needs 4 workers, count 3: over max 2
		{3000, false}, // parse needs 1, count 1
	} {
		sim := parseAndCount(tc.rate, 2, 2)
		clock := &fakeClock{t: epoch}
		d, _ := NewDS2(DS2Config{Interval: time.Millisecond, WarmUp: time.Millisecond, Activation: 1})
		c := runRounds(t, Config{Policies: []Policy{d}, Actuator: sim, Now: clock.Now, MaxWorkers: 2, Sample: sampler(clock, sim.step)}, 5)
		if got := c.Load(); got.Saturated != tc.saturated || got.InputRate <= 0 {
			t.Errorf("rate %g on 2 workers each, max 2: load %+v, want saturated %v and an input rate", tc.rate, got, tc.saturated)
		}
		if got := d.OverMax(); (len(got) > 0) != tc.saturated {
			t.Errorf("rate %g: DS2's OverMax %v", tc.rate, got)
		}
	}
}

// TestControllerRecord: a decision recorded from outside the rounds gets
// the next id and shows in the status, newest first.
func TestControllerRecord(t *testing.T) {
	sim := parseAndCount(1000, 1, 1)
	clock := &fakeClock{t: epoch}
	c, err := New(Config{Actuator: sim, Now: clock.Now, Logger: slog.New(slog.DiscardHandler), Sample: sampler(clock, sim.step)})
	if err != nil {
		t.Fatal(err)
	}
	a := c.Record(schema.Decision{Policy: HostsPolicy, Action: schema.Action{Kind: ActionActivateHost, Host: "p1"}, Outcome: OutcomeApplied})
	b := c.Record(schema.Decision{Policy: HostsPolicy, Action: schema.Action{Kind: ActionRequestHost}, Outcome: OutcomeFailed, Error: "exit status 3"})
	st := c.Status()
	if a.ID != 1 || b.ID != 2 || len(st.Decisions) != 2 || st.Decisions[0].ID != 2 || st.Decisions[1].Action.Host != "p1" || a.Time.IsZero() {
		t.Errorf("recorded %+v and %+v; status %+v", a, b, st.Decisions)
	}
	if Describe(a.Action) != "activate pool host p1" {
		t.Errorf("Describe = %q", Describe(a.Action))
	}
}

// withRate spreads an input rate of r records/s over the active hosts.
func withRate(f ClusterFigures, r float64) ClusterFigures {
	for i := range f.Active {
		f.Active[i].InputRate = r / float64(len(f.Active))
	}
	return f
}

// TestHostsCheckScaleInWorse: a host given back that leaves every other
// host saturated at the same load is taken into service again; at a
// higher load, or with the hosts not saturated, the decision is kept.
func TestHostsCheckScaleInWorse(t *testing.T) {
	for _, tc := range []struct {
		name       string
		after      []float64
		rate       float64
		migrating  bool
		pool       []string
		worse      bool
		undo       string
		checkAfter time.Duration
	}{
		{name: "saturated at the same load", after: []float64{0.97, 0.95}, rate: 330, pool: []string{"h3"}, worse: true, undo: "h3"},
		{name: "saturated, the host gone from the pool", after: []float64{0.97, 0.95}, rate: 300, worse: true},
		{name: "saturated at a higher load", after: []float64{0.97, 0.95}, rate: 400, pool: []string{"h3"}},
		{name: "not saturated", after: []float64{0.7, 0.95}, rate: 300, pool: []string{"h3"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHosts(t, HostsConfig{Span: 10 * time.Second})
			var p *Proposal
			for s := time.Duration(0); p == nil && s <= 10*time.Second; s += time.Second {
				p = h.Decide(withRate(figures(s, nil, 0.3, 0.3, 0.3), 300))
			}
			if p == nil || p.Action.Kind != ActionReleaseHost || p.Action.Host != "h3" {
				t.Fatalf("scale-in: %+v, want release-host h3", p)
			}
			h.Done(t0.Add(10*time.Second), true)
			if !h.Checking("h3") || h.Checking("h1") {
				t.Errorf("Checking h3 %v, h1 %v: want h3 only, its release waiting for the check", h.Checking("h3"), h.Checking("h1"))
			}
			after := withRate(figures(15*time.Second, tc.pool, tc.after...), tc.rate)
			after.Releasing = "h3" // given back, not released: the check goes on
			if c := h.Check(after); c != nil {
				t.Fatalf("checked before the span: %+v", c)
			}
			after.At = t0.Add(20 * time.Second)
			after.Migrating = true
			if c := h.Check(after); c != nil {
				t.Fatalf("checked while groups migrate: %+v", c)
			}
			after.Migrating = false
			c := h.Check(after)
			if c == nil || c.Action.Host != "h3" || c.Worse != tc.worse || len(c.Observed) == 0 {
				t.Fatalf("check: %+v, want worse %v", c, tc.worse)
			}
			switch {
			case tc.undo == "" && c.Undo != nil:
				t.Errorf("undo %+v, want none", c.Undo.Action)
			case tc.undo != "" && (c.Undo == nil || c.Undo.Action.Kind != ActionActivateHost || c.Undo.Action.Host != tc.undo):
				t.Errorf("undo %+v, want activate-host %s", c.Undo, tc.undo)
			}
			if c := h.Check(after); c != nil {
				t.Errorf("checked twice: %+v", c)
			}
			if h.Checking("h3") {
				t.Error("h3's release still waits after the check")
			}
		})
	}
}

// TestHostsCheckScaleOutWorse: a host taken into service after which the
// mean utilisation rose over 1.5 times at the same load is given back; a
// mean that fell is kept, and a proposal that failed is not checked.
func TestHostsCheckScaleOutWorse(t *testing.T) {
	decide := func(t *testing.T, h *Hosts) {
		t.Helper()
		var p *Proposal
		for s := time.Duration(0); p == nil && s <= 10*time.Second; s += time.Second {
			p = h.Decide(withRate(figures(s, []string{"p1"}, 0.5, 0.5), 200))
		}
		if p == nil || p.Action.Kind != ActionActivateHost || p.Action.Host != "p1" {
			t.Fatalf("scale-out under hosts.min: %+v, want activate-host p1", p)
		}
	}
	h := newHosts(t, HostsConfig{Span: 10 * time.Second, Min: 3})
	decide(t, h)
	h.Done(t0.Add(10*time.Second), true)
	after := withRate(figures(20*time.Second, nil, 0.9, 0.9, 0.9), 200)
	after.Active[2].Host = "p1"
	c := h.Check(after)
	if c == nil || !c.Worse || c.Undo != nil {
		t.Fatalf("worse, but with hosts.min 3 active hosts: %+v, want worse and no undo", c)
	}

	h = newHosts(t, HostsConfig{Span: 10 * time.Second, Min: 3})
	decide(t, h)
	h.Done(t0.Add(10*time.Second), true)
	h.cfg.Min = 2 // the undo is allowed
	c = h.Check(after)
	if c == nil || !c.Worse || c.Undo == nil || c.Undo.Action.Kind != ActionReleaseHost || c.Undo.Action.Host != "p1" {
		t.Fatalf("worse: %+v, want release-host p1", c)
	}

	h = newHosts(t, HostsConfig{Span: 10 * time.Second, Min: 3})
	decide(t, h)
	h.Done(t0.Add(10*time.Second), true)
	better := withRate(figures(20*time.Second, nil, 0.35, 0.35, 0.35), 200)
	if c := h.Check(better); c == nil || c.Worse || c.Undo != nil {
		t.Fatalf("better: %+v, want kept", c)
	}

	h = newHosts(t, HostsConfig{Span: 10 * time.Second, Min: 3})
	decide(t, h)
	h.Done(t0.Add(10*time.Second), false)
	if c := h.Check(after); c != nil {
		t.Fatalf("a failed proposal checked: %+v", c)
	}
}
