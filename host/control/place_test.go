package control

import (
	"context"
	"io"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/host/api/schema"
)

// stragglerSim is the bench's straggler phase: 16 key groups of 500
// records/s (8,000/s) on two workers run in lockstep, worker 0 a
// straggler at 1,667/s and worker 1 at 5,000/s. No placement on two
// workers serves it (they run 6,667/s at most); a worker added runs
// 5,000/s.
func stragglerSim() *keyedSim {
	sim := newKeyedSim(slices.Repeat([]float64{500}, 16), []float64{1667, 5000})
	sim.lockstep, sim.added = true, 5000
	return sim
}

// TestLatencyPlacesGroupsWhenScalingOutPastAStraggler: the executor's
// even spread over three workers would give the straggler a third of the
// groups (2,500-3,000/s, over its 1,667/s); the guarantor grows to three
// workers and places the groups off the straggler in the same decision,
// a placement that serves every worker under lreq.
func TestLatencyPlacesGroupsWhenScalingOutPastAStraggler(t *testing.T) {
	sim := stragglerSim()
	l, _ := NewLatency(LatencyConfig{})
	p := proposeBounded(l, sim, 3, 4)
	if p == nil || p.Action.Kind != "set-workers" || p.Action.From != 2 || p.Action.To != 3 || len(p.Action.Moves) == 0 {
		t.Fatalf("proposal %+v, want set-workers 2 -> 3 with key groups placed", p)
	}
	if !strings.Contains(p.Reason, "placed off the busiest workers") {
		t.Errorf("reason %q does not say the groups are placed", p.Reason)
	}
	// The placement, applied the way the controller applies it.
	if err := sim.SetWorkers(context.Background(), "count", 3); err != nil {
		t.Fatal(err)
	}
	moves := map[int]int{}
	for _, m := range p.Action.Moves {
		moves[m.Group] = m.ToWorker
	}
	if err := sim.MoveGroups(context.Background(), "count", moves); err != nil {
		t.Fatal(err)
	}
	for w, mu := range sim.service {
		if a := sim.workerArrival(w); a >= mu || 1/(mu-a) > 1 {
			t.Errorf("worker %d: %v records/s arrive for %v/s, want it under lreq", w, a, mu)
		}
	}
}

// TestLatencyTakesNoScaleOutThatOverloadsASlowerWorker: when the groups
// cannot be placed (the operator's groups do not move) and the
// executor's spread over one worker more gives a slower worker more than
// the busiest one has now, the guarantor proposes nothing rather than a
// scale-out that would be rolled back.
func TestLatencyTakesNoScaleOutThatOverloadsASlowerWorker(t *testing.T) {
	sim := stragglerSim()
	sim.movable = false
	// The straggler has two groups (1,000/s of its 1,667/s), worker 1
	// the other fourteen (7,000/s of 5,000/s: 1.4 times its rate).
	for kg := range sim.owners {
		sim.owners[kg] = 1
	}
	sim.owners[0], sim.owners[1] = 0, 0
	l, _ := NewLatency(LatencyConfig{})
	samples := []Sample{sim.step(0)}
	for i := range 4 {
		samples = append(samples, sim.step(time.Second))
		v := viewOf(samples, 3)
		v.MaxWorkers = 3
		if p, _ := l.Propose(v); p != nil {
			t.Fatalf("round %d: proposal %+v, want none (three workers evenly spread give the straggler 5-6 groups, over 1.6 times its rate)", i, p.Action)
		}
	}
	// With a peer as fast as the others instead, one worker more is the
	// fix.
	sim = newKeyedSim(slices.Repeat([]float64{500}, 16), []float64{5000, 5000})
	sim.movable, sim.lockstep = false, true
	for kg := range sim.owners {
		sim.owners[kg] = 1
	}
	sim.owners[0], sim.owners[1] = 0, 0
	l, _ = NewLatency(LatencyConfig{})
	p := proposeBounded(l, sim, 4, 3)
	if p == nil || p.Action.Kind != "set-workers" || p.Action.To != 3 {
		t.Fatalf("proposal %+v, want set-workers 2 -> 3", p)
	}
}

// straggleRig runs a controller with policies over sim on a fake clock, a
// round a second, with the bench's settings (lock and settle 5s, rates
// over 2s, 1 to 4 workers).
func straggleRig(t *testing.T, sim *keyedSim, policies ...Policy) (*Controller, func(n int)) {
	t.Helper()
	clock := &fakeClock{t: epoch}
	c, err := New(Config{
		Period: time.Second, Lock: 5 * time.Second, Settle: 5 * time.Second, Window: 2 * time.Second,
		MinWorkers: 1, MaxWorkers: 4,
		Policies: policies,
		Actuator: sim,
		Now:      clock.Now,
		Logger:   slog.New(slog.NewTextHandler(io.Discard, nil)),
		Sample:   sampler(clock, sim.step),
	})
	if err != nil {
		t.Fatal(err)
	}
	return c, func(n int) {
		for range n {
			if _, err := c.Round(context.Background(), ""); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// TestControllerResolvesAStragglerNoTwoWorkersServe: the bench's
// straggler phase under every policy (straggler, DS2, latency, in that
// priority). The straggler detector moves what worker 1 has room for,
// the latency guarantor grows to three workers with the groups placed
// off the straggler, and DS2 does not scale back in (its even spread
// would give the straggler half the groups): no decision is rolled back
// or undone, and the backlog stops growing.
func TestControllerResolvesAStragglerNoTwoWorkersServe(t *testing.T) {
	sim := stragglerSim()
	st, _ := NewStraggler(StragglerConfig{Ratio: 1.5, MinRecords: 1000})
	d, _ := NewDS2(DS2Config{Interval: 5 * time.Second, WarmUp: 5 * time.Second, Activation: 1})
	l, _ := NewLatency(LatencyConfig{})
	c, rounds := straggleRig(t, sim, st, d, l)
	rounds(90)
	backlog := func() float64 {
		sim.mu.Lock()
		defer sim.mu.Unlock()
		return sim.backlog
	}
	before := backlog()
	rounds(10)
	if grew := backlog() - before; grew > 100 {
		t.Errorf("the backlog grew by %.0f records over the last 10 s, want it served", grew)
	}
	decisions := slices.Clone(c.Status().Decisions)
	slices.Reverse(decisions)
	scaled := false
	for i, dec := range decisions {
		t.Logf("%v %s %s %s: %s", dec.Time.Sub(epoch), dec.Policy, Describe(dec.Action), dec.Outcome, dec.Reason)
		if dec.Outcome != OutcomeKept {
			t.Errorf("decision %d (%s) %s, want kept", dec.ID, Describe(dec.Action), dec.Outcome)
		}
		if dec.Action.Kind == "set-workers" {
			scaled = true
		}
		// A move of the groups a scale-out placed is the straggler
		// detector taking the rest of the straggler's groups, not an
		// undoing: worker counts reversed and groups moved back by
		// moves are.
		for _, later := range decisions[i+1:] {
			if later.Time.Sub(dec.Time) < time.Minute && later.Action.Kind == dec.Action.Kind && undoes(later.Action, dec.Action) {
				t.Errorf("decision %d (%s) undone by %d (%s) within a minute", dec.ID, Describe(dec.Action), later.ID, Describe(later.Action))
			}
		}
	}
	if !scaled {
		t.Error("no worker was added: two workers cannot serve the load")
	}
}

// TestControllerRollsBackAScaleOutThatOverloadsAStraggler: the effect
// check still rolls back a decision that truly made things worse. A
// scale-out with the executor's even spread gives the straggler (here at
// 1,250/s, with two groups, 1,000/s) five groups of sixteen: the job,
// whose workers run in lockstep, reads 4,000/s instead of 5,714/s, and
// the backlog grows faster.
func TestControllerRollsBackAScaleOutThatOverloadsAStraggler(t *testing.T) {
	sim := stragglerSim()
	sim.service[0] = 1250
	for kg := range sim.owners {
		sim.owners[kg] = 1
	}
	sim.owners[0], sim.owners[1] = 0, 0
	once := false
	p := &stubPolicy{name: "p", propose: func(v *View) *Proposal {
		if once || len(v.Samples) < 3 {
			return nil
		}
		once = true
		return &Proposal{Action: schema.Action{Kind: "set-workers", Operator: "count", To: 3}}
	}}
	_, rounds := straggleRig(t, sim, p)
	rounds(10)
	dec, n := p.lastOutcome()
	if n != 2 || dec.Outcome != OutcomeRolledBack {
		t.Fatalf("the scale-out's outcome %q (%d outcomes), want rolled back", dec.Outcome, n)
	}
	if e := findEvidence(dec.Observed, "backlog growth after"); e == nil || e.Value <= 0 {
		t.Errorf("observed %+v, want the backlog's faster growth", dec.Observed)
	}
	if got := len(sim.service); got != 2 {
		t.Errorf("%d workers after the rollback, want 2", got)
	}
}

// TestControllerPlacesGroupsAfterSetWorkers: a set-workers action that
// carries moves sets the count, then moves the groups; its inverse sets
// the count back.
func TestControllerPlacesGroupsAfterSetWorkers(t *testing.T) {
	a := schema.Action{Kind: "set-workers", Operator: "count", To: 3, Moves: []schema.GroupMove{{Group: 1, FromWorker: 1, ToWorker: 2}}}
	p := &stubPolicy{name: "p", propose: always(a)}
	r := newRig(t, Config{}, p)
	d := r.rounds(t, 1)[0]
	if d == nil || d.Outcome != OutcomeApplied {
		t.Fatalf("decision %+v, want applied", d)
	}
	if got := r.act.Calls(); len(got) != 2 || got[0] != "set count 3" || got[1] != "move count map[1:2]" {
		t.Fatalf("actuator calls %q, want the count, then the placement", got)
	}
	if got := Describe(d.Action); got != "set-workers count 2 -> 3, 1 key group placed" {
		t.Errorf("Describe = %q", got)
	}
	if inv := Inverse(d.Action); inv.Kind != "set-workers" || inv.From != 3 || inv.To != 2 || inv.Moves != nil {
		t.Errorf("Inverse = %+v, want set-workers 3 -> 2 without moves", inv)
	}
}
