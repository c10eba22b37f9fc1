package control

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sluicehq/sluice/host/api/schema"
)

// stubPolicy proposes what propose returns and records what it is told.
type stubPolicy struct {
	name     string
	propose  func(v *View) *Proposal
	findings func(v *View) []schema.Finding

	mu       sync.Mutex
	rounds   int
	outcomes []schema.Decision
}

func (s *stubPolicy) Name() string { return s.name }

func (s *stubPolicy) Propose(v *View) (*Proposal, []schema.Finding) {
	s.mu.Lock()
	s.rounds++
	s.mu.Unlock()
	var p *Proposal
	var fs []schema.Finding
	if s.propose != nil {
		p = s.propose(v)
	}
	if s.findings != nil {
		fs = s.findings(v)
	}
	return p, fs
}

func (s *stubPolicy) Outcome(d schema.Decision) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.outcomes = append(s.outcomes, d)
}

func (s *stubPolicy) lastOutcome() (schema.Decision, int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.outcomes) == 0 {
		return schema.Decision{}, 0
	}
	return s.outcomes[len(s.outcomes)-1], len(s.outcomes)
}

// always proposes a on every round.
func always(a schema.Action) func(*View) *Proposal {
	return func(*View) *Proposal { return &Proposal{Action: a, Reason: "because"} }
}

// fakeActuator records the calls it gets and fails them with err.
type fakeActuator struct {
	mu    sync.Mutex
	calls []string
	err   error
	next  Actuator // applies the calls too when set
}

func (f *fakeActuator) MoveGroups(ctx context.Context, op string, moves map[int]int) error {
	f.mu.Lock()
	f.calls = append(f.calls, fmt.Sprintf("move %s %v", op, moves))
	f.mu.Unlock()
	if f.err != nil {
		return f.err
	}
	if f.next != nil {
		return f.next.MoveGroups(ctx, op, moves)
	}
	return nil
}

func (f *fakeActuator) SetWorkers(ctx context.Context, op string, n int) error {
	f.mu.Lock()
	f.calls = append(f.calls, fmt.Sprintf("set %s %d", op, n))
	f.mu.Unlock()
	if f.err != nil {
		return f.err
	}
	if f.next != nil {
		return f.next.SetWorkers(ctx, op, n)
	}
	return nil
}

func (f *fakeActuator) Calls() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.calls...)
}

// testController returns a controller over sim's samples on a fake clock
// that each round moves on by a second (the sim's period).
type testRig struct {
	c     *Controller
	sim   *keyedSim
	clock *fakeClock
	act   *fakeActuator
}

func newRig(t *testing.T, cfg Config, policies ...Policy) *testRig {
	t.Helper()
	r := &testRig{sim: newKeyedSim([]float64{100, 100, 100, 100}, []float64{1000, 1000}), clock: &fakeClock{t: epoch}}
	r.act = &fakeActuator{next: r.sim}
	first := true
	cfg.Sample = func() Sample {
		if first {
			first = false
			return r.sim.step(0)
		}
		r.clock.Advance(time.Second)
		return r.sim.step(time.Second)
	}
	cfg.Now = r.clock.Now
	cfg.Actuator = r.act
	cfg.Policies = policies
	cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	c, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	r.c = c
	return r
}

// rounds runs n rounds and returns the decisions they applied.
func (r *testRig) rounds(t *testing.T, n int) []*schema.Decision {
	t.Helper()
	var ds []*schema.Decision
	for range n {
		d, err := r.c.Round(context.Background(), "")
		if err != nil {
			t.Fatal(err)
		}
		ds = append(ds, d)
	}
	return ds
}

func TestControllerAppliesHighestPriorityProposal(t *testing.T) {
	first := &stubPolicy{name: "first", propose: always(schema.Action{Kind: "set-workers", Operator: "count", To: 3})}
	second := &stubPolicy{name: "second", propose: always(schema.Action{Kind: "move-groups", Operator: "count", Moves: []schema.GroupMove{{Group: 1, FromWorker: 1, ToWorker: 0}}})}
	idle := &stubPolicy{name: "idle"}
	r := newRig(t, Config{}, idle, first, second)
	ds := r.rounds(t, 1)
	d := ds[0]
	if d == nil || d.Policy != "first" || d.Action.Kind != "set-workers" || d.Action.From != 2 || d.Action.To != 3 || d.Outcome != OutcomeApplied {
		t.Fatalf("decision = %+v, want first's set-workers 2 -> 3, applied", d)
	}
	if len(d.Others) != 1 || !strings.HasPrefix(d.Others[0], "second: move-groups count: key groups 1 from worker 1 to 0") {
		t.Fatalf("others = %q, want second's proposal", d.Others)
	}
	if got := r.act.Calls(); len(got) != 1 || got[0] != "set count 3" {
		t.Fatalf("actuator calls %q, want [set count 3]", got)
	}
	if o, n := first.lastOutcome(); n != 1 || o.Outcome != OutcomeApplied || o.ID != d.ID {
		t.Fatalf("first was told %+v (%d times), want the applied decision", o, n)
	}
	r.rounds(t, 3)
	for _, p := range []*stubPolicy{idle, first, second} {
		if p.rounds != 4 {
			t.Errorf("policy %s asked %d times in 4 rounds, want 4", p.name, p.rounds)
		}
	}
	st := r.c.Status()
	if st.Rounds != 4 || len(st.Decisions) != 1 || strings.Join(st.Policies, ",") != "idle,first,second" {
		t.Fatalf("status = %+v", st)
	}
}

func TestControllerLock(t *testing.T) {
	// Lock 5s, settle 1s (checked, and kept, at the round after): the
	// next decision comes 5s after the first.
	p := &stubPolicy{name: "p", propose: always(schema.Action{Kind: "move-groups", Operator: "count", Moves: []schema.GroupMove{{Group: 1, FromWorker: 1, ToWorker: 0}}})}
	r := newRig(t, Config{Lock: 5 * time.Second, Settle: time.Second}, p)
	var at []int
	for i, d := range r.rounds(t, 12) {
		if d != nil {
			at = append(at, i)
		}
	}
	if fmt.Sprint(at) != "[0 5 10]" {
		t.Fatalf("decisions at rounds %v, want [0 5 10]", at)
	}
	if st := r.c.Status(); st.Decisions[1].Outcome != OutcomeKept || !st.LockedUntil.Equal(epoch.Add(15*time.Second)) {
		t.Fatalf("status: second decision %q, locked until %v; want kept, until 15s", st.Decisions[1].Outcome, st.LockedUntil)
	}

	// A decision awaiting its check (settle 10s) holds the next back
	// past a 1s lock.
	r = newRig(t, Config{Lock: time.Second, Settle: 10 * time.Second}, p)
	at = nil
	for i, d := range r.rounds(t, 12) {
		if d != nil {
			at = append(at, i)
		}
	}
	if fmt.Sprint(at) != "[0 10]" {
		t.Fatalf("decisions at rounds %v, want [0 10]", at)
	}
}

func TestControllerRollsBackDecisionThatMadeThingsWorse(t *testing.T) {
	once := false
	p := &stubPolicy{name: "p", propose: func(v *View) *Proposal {
		if once || len(v.Samples) < 2 {
			return nil
		}
		once = true
		return &Proposal{Action: schema.Action{Kind: "move-groups", Operator: "count", Moves: []schema.GroupMove{{Group: 3, FromWorker: 1, ToWorker: 0}}}}
	}}
	r := newRig(t, Config{Lock: time.Second, Settle: 5 * time.Second}, p)
	r.rounds(t, 3) // a decision at the second round; delays 1/800s
	if o, _ := p.lastOutcome(); o.Outcome != OutcomeApplied {
		t.Fatalf("outcome %q, want applied", o.Outcome)
	}
	r.sim.mu.Lock()
	r.sim.delay[0] = 0.5 // worker 0 now slow: the move made it worse
	r.sim.mu.Unlock()
	r.rounds(t, 4) // checked at 6s, 5s after the decision
	d, n := p.lastOutcome()
	if n != 2 || d.Outcome != OutcomeRolledBack {
		t.Fatalf("policy told %+v (%d outcomes), want rolled back", d, n)
	}
	if e := findEvidence(d.Observed, "worst delay of count after"); e == nil || e.Value != 0.5 {
		t.Fatalf("observed %+v, want the delay after at 0.5s", d.Observed)
	}
	calls := r.act.Calls()
	if len(calls) != 2 || calls[1] != "move count map[3:1]" {
		t.Fatalf("actuator calls %q, want the move and its inverse", calls)
	}
	if st := r.c.Status(); st.Decisions[0].Outcome != OutcomeRolledBack {
		t.Fatalf("status outcome %q, want rolled back", st.Decisions[0].Outcome)
	}
}

func TestControllerKeepsDecisionThatHelped(t *testing.T) {
	// The latency guarantor moves the hot groups; the delays fall, and
	// the decision is kept.
	l, _ := NewLatency(LatencyConfig{})
	r := newRig(t, Config{Lock: time.Second, Settle: 3 * time.Second}, l)
	r.sim.groups = skewed()
	r.sim.owners = []int{0, 1, 0, 1, 0, 1, 0, 1}
	r.sim.arrived, r.sim.processed = make([]float64, 8), make([]float64, 8)
	var d *schema.Decision
	for _, x := range r.rounds(t, 3) {
		if x != nil {
			d = x
		}
	}
	if d == nil || d.Action.Kind != "move-groups" || d.Policy != "latency" || len(d.Predicted) == 0 || len(d.Evidence) == 0 {
		t.Fatalf("decision %+v, want the guarantor's move with its evidence and prediction", d)
	}
	r.rounds(t, 4)
	st := r.c.Status()
	if st.Decisions[len(st.Decisions)-1].Outcome != OutcomeKept {
		t.Fatalf("outcome %q, want kept", st.Decisions[len(st.Decisions)-1].Outcome)
	}
	for _, h := range st.Workers {
		if h.Operator != "count" || h.State == "" {
			t.Errorf("worker health %+v", h)
		}
	}
	if len(st.Workers) != 2 {
		t.Errorf("%d workers in the status, want 2", len(st.Workers))
	}
}

func TestControllerActuatorErrorFails(t *testing.T) {
	p := &stubPolicy{name: "p", propose: always(schema.Action{Kind: "set-workers", Operator: "count", To: 3})}
	r := newRig(t, Config{}, p)
	r.act.err = errors.New("no room")
	d := r.rounds(t, 1)[0]
	if d == nil || d.Outcome != OutcomeFailed || d.Error != "no room" {
		t.Fatalf("decision %+v, want failed with the actuator's error", d)
	}
	if o, _ := p.lastOutcome(); o.Outcome != OutcomeFailed {
		t.Fatalf("policy told %q, want failed", o.Outcome)
	}
	// A failure neither locks nor awaits a check: the next round tries
	// again.
	if d := r.rounds(t, 1)[0]; d == nil || d.ID != 2 {
		t.Fatalf("next round decided %+v, want a second try", d)
	}
	if !r.c.Status().LockedUntil.IsZero() {
		t.Fatal("a failed decision locked the controller")
	}
}

func TestControllerAppliesNothingWhileMigrating(t *testing.T) {
	p := &stubPolicy{name: "p", propose: always(schema.Action{Kind: "set-workers", Operator: "count", To: 3})}
	r := newRig(t, Config{}, p)
	r.sim.migrating = true
	for i, d := range r.rounds(t, 3) {
		if d != nil {
			t.Fatalf("round %d decided %+v during a migration", i, d)
		}
	}
	if p.rounds != 3 || len(r.act.Calls()) != 0 {
		t.Fatalf("policy asked %d times, actuator called %q; want 3 and none", p.rounds, r.act.Calls())
	}
	r.sim.migrating = false
	if d := r.rounds(t, 1)[0]; d == nil {
		t.Fatal("no decision once the migration ended")
	}
}

func TestControllerNeverActsOnTransactionalOperators(t *testing.T) {
	p := &stubPolicy{name: "p", propose: always(schema.Action{Kind: "set-workers", Operator: "count", To: 3})}
	r := newRig(t, Config{}, p)
	r.sim.kind = "transactional"
	for i, d := range r.rounds(t, 3) {
		if d != nil {
			t.Fatalf("round %d decided %+v on a transactional operator", i, d)
		}
	}
	if calls := r.act.Calls(); len(calls) != 0 {
		t.Fatalf("actuator calls %q, want none", calls)
	}
}

func TestControllerClampsWorkerCounts(t *testing.T) {
	for _, c := range []struct {
		to   int
		want string
	}{{20, "set count 4"}, {0, "set count 1"}, {-3, "set count 1"}} {
		p := &stubPolicy{name: "p", propose: always(schema.Action{Kind: "set-workers", Operator: "count", To: c.to})}
		r := newRig(t, Config{MinWorkers: 1, MaxWorkers: 4}, p)
		d := r.rounds(t, 1)[0]
		if calls := r.act.Calls(); len(calls) != 1 || calls[0] != c.want || d.Action.From != 2 {
			t.Errorf("to %d: calls %q, decision %+v; want %s from 2", c.to, calls, d.Action, c.want)
		}
	}
	// Clamped to the current count: nothing to do, the next proposal
	// wins.
	p := &stubPolicy{name: "p", propose: always(schema.Action{Kind: "set-workers", Operator: "count", To: 9})}
	q := &stubPolicy{name: "q", propose: always(schema.Action{Kind: "move-groups", Operator: "count", Moves: []schema.GroupMove{{Group: 1, FromWorker: 1, ToWorker: 0}}})}
	r := newRig(t, Config{MinWorkers: 1, MaxWorkers: 2}, p, q)
	if d := r.rounds(t, 1)[0]; d == nil || d.Policy != "q" || len(d.Others) != 0 {
		t.Fatalf("decision %+v, want q's move alone", d)
	}
}

func TestControllerStatusFromAnotherGoroutine(t *testing.T) {
	p := &stubPolicy{name: "p", propose: always(schema.Action{Kind: "move-groups", Operator: "count", Moves: []schema.GroupMove{{Group: 1, FromWorker: 1, ToWorker: 0}}}),
		findings: func(v *View) []schema.Finding {
			return []schema.Finding{{Cause: "backlog", Subject: "in", Evidence: []schema.Evidence{{Name: "x", Value: 1}}}}
		}}
	r := newRig(t, Config{Lock: time.Second, Settle: time.Second}, p)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var wg sync.WaitGroup
	wg.Go(func() {
		for ctx.Err() == nil {
			st := r.c.Status()
			for _, d := range st.Decisions {
				_ = d.Outcome
				_ = len(d.Action.Moves)
			}
			for _, f := range st.Findings {
				_ = len(f.Evidence)
			}
		}
	})
	r.rounds(t, 30)
	cancel()
	wg.Wait()
	if st := r.c.Status(); st.Rounds != 30 || len(st.Decisions) < 10 {
		t.Fatalf("status after 30 rounds: %d rounds, %d decisions", st.Rounds, len(st.Decisions))
	}
}

func TestControllerRun(t *testing.T) {
	var mu sync.Mutex
	n := 0
	c, err := New(Config{
		Period: 100 * time.Millisecond,
		Sample: func() Sample {
			mu.Lock()
			defer mu.Unlock()
			n++
			return Sample{At: epoch.Add(time.Duration(n) * time.Second)}
		},
		Actuator: &fakeActuator{},
		Policies: []Policy{&stubPolicy{name: "p"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx) }()
	deadline := time.Now().Add(30 * time.Second)
	for c.Status().Rounds < 3 {
		if time.Now().After(deadline) {
			t.Fatal("fewer than 3 rounds in 30s")
		}
		time.Sleep(10 * time.Millisecond)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Run = %v, want nil when its context ends", err)
	}
}

func TestControllerFindingsKeepTheirSince(t *testing.T) {
	round := 0
	p := &stubPolicy{name: "doctor", findings: func(*View) []schema.Finding {
		round++
		fs := []schema.Finding{{Cause: "backlog", Subject: "in"}, {Cause: "backlog", Subject: "in"}}
		if round >= 2 {
			fs = append(fs, schema.Finding{Cause: "hot-key", Subject: "count"})
		}
		return fs
	}}
	r := newRig(t, Config{}, p)
	r.rounds(t, 3)
	st := r.c.Status()
	if len(st.Findings) != 2 {
		t.Fatalf("findings %+v, want two (deduplicated)", st.Findings)
	}
	if !st.Findings[0].Since.Equal(epoch) || !st.Findings[1].Since.Equal(epoch.Add(time.Second)) {
		t.Fatalf("since %v and %v, want the rounds that first found them (0s, 1s)", st.Findings[0].Since, st.Findings[1].Since)
	}
}

func TestControllerConditionTrigger(t *testing.T) {
	// Two groups of 1200/s on one worker of 1000/s: the backlog grows.
	var triggers []string
	p := &stubPolicy{name: "p", propose: func(v *View) *Proposal {
		triggers = append(triggers, v.Trigger)
		return nil
	}}
	r := newRig(t, Config{}, p)
	r.sim.groups = []float64{600, 600}
	r.sim.owners = []int{0, 0}
	r.sim.service = []float64{1000}
	r.sim.arrived, r.sim.processed = make([]float64, 2), make([]float64, 2)
	r.rounds(t, 2)
	if _, err := r.c.Round(context.Background(), "request: by hand"); err != nil {
		t.Fatal(err)
	}
	if want := []string{"period", "condition: backlog growing on source in", "request: by hand"}; !slices.Equal(triggers, want) {
		t.Fatalf("triggers %q, want %q", triggers, want)
	}

	// A worker's delay over l_high.
	triggers = nil
	r = newRig(t, Config{}, p)
	r.sim.delay[1] = 0.2
	r.rounds(t, 2)
	if want := []string{"period", "condition: delay over bound on count/1"}; !slices.Equal(triggers, want) {
		t.Fatalf("triggers %q, want %q", triggers, want)
	}
}

func TestWorse(t *testing.T) {
	const low = 0.05
	for _, c := range []struct {
		before, after Effect
		want          bool
	}{
		{Effect{Delay: 0.1}, Effect{Delay: 0.15}, false},                                                                                                                              // 1.5x is not over 1.5x
		{Effect{Delay: 0.1}, Effect{Delay: 0.16}, true},                                                                                                                               // over 1.5x and l_low
		{Effect{Delay: 0.002}, Effect{Delay: 0.04}, false},                                                                                                                            // 20x, but under l_low
		{Effect{Delay: 0.2}, Effect{Delay: 0.1}, false},                                                                                                                               // better
		{Effect{ReadRate: 1000}, Effect{BacklogGrowth: 40, ReadRate: 1000}, false},                                                                                                    // under 5% of the read rate
		{Effect{ReadRate: 1000}, Effect{BacklogGrowth: 60, ReadRate: 940}, true},                                                                                                      // a backlog now growing: the job reads less
		{Effect{BacklogGrowth: 100}, Effect{BacklogGrowth: 140, ReadRate: 1000}, false},                                                                                               // growing as before
		{Effect{BacklogGrowth: 100, ReadRate: 1000}, Effect{BacklogGrowth: 160, ReadRate: 940}, true},                                                                                 // growing faster: the job reads less
		{Effect{BacklogGrowth: 100, ReadRate: 1000}, Effect{BacklogGrowth: 160, ReadRate: 1000}, false},                                                                               // growing faster as records arrive faster, read as before
		{Effect{BacklogGrowth: 1965, ReadRate: 12080}, Effect{BacklogGrowth: 3787, ReadRate: 12213}, false},                                                                           // a scale-out as a step up goes on (14% more): the job reads more
		{Effect{BacklogGrowth: 1871, ReadRate: 6129}, Effect{BacklogGrowth: 3883, ReadRate: 4117}, true},                                                                              // a scale-out that slowed the job: it reads a third less
		{Effect{Delay: 0.1, ReadRate: 1000}, Effect{Delay: 5, ReadRate: 1000, BacklogGrowth: 300}, false},                                                                             // the load rose 30%
		{Effect{Delay: 0.1, ReadRate: 1000}, Effect{Delay: 5, ReadRate: 1000, BacklogGrowth: 200}, true},                                                                              // the load rose 20%
		{Effect{Delay: 0.1, ReadRate: 1000, Busy: 0.97}, Effect{Delay: 5, ReadRate: 990, BacklogGrowth: 110}, false},                                                                  // at capacity before, as fast after: the load rose 11%
		{Effect{Delay: 0.1, ReadRate: 1000, Busy: 0.97}, Effect{Delay: 5, ReadRate: 950, BacklogGrowth: 110}, true},                                                                   // at capacity before, and slower after
		{Effect{Delay: 0.1, ReadRate: 1000, Busy: 0.8}, Effect{Delay: 5, ReadRate: 1000, BacklogGrowth: 110}, true},                                                                   // under capacity before: the decision may have taken it
		{Effect{Delay: 0.1, ReadRate: 1000, Busy: 0.97}, Effect{Delay: 5, ReadRate: 1000, BacklogGrowth: 10}, true},                                                                   // at capacity, no backlog growing: the delay is the decision's
		{Effect{Delay: 0.114, ReadRate: 9821, BacklogGrowth: -219, Busy: 0.998}, Effect{Delay: 0.319, ReadRate: 10537, BacklogGrowth: -41}, false},                                    // at capacity, the load rose 9% and the job reads more: a soak's move, rolled back before
		{Effect{Delay: 0.5, ReadRate: 1000, BacklogGrowth: 200}, Effect{Delay: 2, ReadRate: 1100, BacklogGrowth: 100}, false},                                                         // a growing backlog's delay rose; the growth slowed
		{Effect{Delay: 0.5, ReadRate: 1000, BacklogGrowth: 100}, Effect{Delay: 2, ReadRate: 900, BacklogGrowth: 200}, true},                                                           // it grows faster, the job reading less
		{Effect{Delay: 0.214, ReadRate: 7980, BacklogGrowth: 21}, Effect{Delay: 0.49, ReadRate: 8436, BacklogGrowth: -436}, false},                                                    // the delay rose as the job works off its backlog
		{Effect{Delay: 1.33, ReadRate: 5117, BacklogGrowth: -3117}, Effect{Delay: 0.043, ReadRate: 1834, BacklogGrowth: 166}, false},                                                  // the backlog drained: it reads what arrives (a bench run's scale-out, rolled back before)
		{Effect{Delay: 1.33, ReadRate: 5117, BacklogGrowth: -3117}, Effect{Delay: 0.043, ReadRate: 1000, BacklogGrowth: 1000}, true},                                                  // it reads half of what arrives
		{Effect{Delay: 0.1, ReadRate: 1000, Version: "v1"}, Effect{Delay: 5, ReadRate: 1000, Version: "v2"}, false},                                                                   // the plugin was swapped between the windows
		{Effect{Delay: 0.1, ReadRate: 1000, Version: "v2", Swapped: true}, Effect{Delay: 5, ReadRate: 1000, Version: "v2"}, false},                                                    // ... or within the window before
		{Effect{Delay: 0.1, ReadRate: 1000, Service: map[int]float64{0: 3000, 1: 4960}}, Effect{Delay: 5, ReadRate: 1000, Service: map[int]float64{0: 1650, 1: 4950}}, false},         // worker 0 slowed alone: a straggler
		{Effect{Delay: 0.1, ReadRate: 1000, Service: map[int]float64{0: 4960, 1: 4960}}, Effect{Delay: 5, ReadRate: 1000, Service: map[int]float64{0: 3000, 1: 3000, 2: 3000}}, true}, // every worker slowed: a scale-out past the cores
		{Effect{Delay: 0.214, ReadRate: 7980, BacklogGrowth: 21}, Effect{Delay: 0.49, ReadRate: 7990, BacklogGrowth: 10}, true},                                                       // the delay rose, the backlog as before
	} {
		if got, why := Worse(c.before, c.after, low); got != c.want || (got && why == "") {
			t.Errorf("Worse(%+v, %+v) = %v %q, want %v", c.before, c.after, got, why, c.want)
		}
	}
}

// TestDescribeSummarisesMoves: a move of many key groups is told as a
// count per pair of workers, a few as their ids.
func TestDescribeSummarisesMoves(t *testing.T) {
	a := schema.Action{Kind: "move-groups", Operator: "count"}
	for g := range 10 {
		a.Moves = append(a.Moves, schema.GroupMove{Group: g, FromWorker: 1, ToWorker: 0})
	}
	a.Moves = append(a.Moves, schema.GroupMove{Group: 20, FromWorker: 2, ToWorker: 0})
	if got, want := Describe(a), "move-groups count: 10 key groups from worker 1 to 0; key groups 20 from worker 2 to 0"; got != want {
		t.Errorf("Describe = %q, want %q", got, want)
	}
}

func TestInverse(t *testing.T) {
	a := schema.Action{Kind: "move-groups", Operator: "count", Moves: []schema.GroupMove{{Group: 3, FromWorker: 1, ToWorker: 0}}}
	if inv := Inverse(a); inv.Moves[0] != (schema.GroupMove{Group: 3, FromWorker: 0, ToWorker: 1}) {
		t.Fatalf("Inverse(%+v) = %+v", a, inv)
	}
	if inv := Inverse(schema.Action{Kind: "set-workers", Operator: "count", From: 2, To: 5}); inv.From != 5 || inv.To != 2 {
		t.Fatalf("Inverse(set-workers 2 -> 5) = %+v", inv)
	}
}

func TestNewRefusesBadConfig(t *testing.T) {
	ok := Config{Sample: func() Sample { return Sample{} }, Actuator: &fakeActuator{}}
	for _, c := range []struct {
		edit func(*Config)
		want string
	}{
		{func(c *Config) { c.Period = 50 * time.Millisecond }, "period"},
		{func(c *Config) { c.Lock = -time.Second }, "lock"},
		{func(c *Config) { c.Period, c.Settle = 2*time.Second, time.Second }, "settle"},
		{func(c *Config) { c.MinWorkers = -1 }, "min"},
		{func(c *Config) { c.MinWorkers, c.MaxWorkers = 5, 4 }, "min 5 is over max 4"},
		{func(c *Config) { c.Sample = nil }, "Sample"},
		{func(c *Config) { c.Actuator = nil }, "Actuator"},
		{func(c *Config) { c.Policies = []Policy{&stubPolicy{name: "a"}, &stubPolicy{name: "a"}} }, `"a" is listed twice`},
	} {
		cfg := ok
		c.edit(&cfg)
		_, err := New(cfg)
		if !errors.Is(err, ErrBadConfig) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("New = %v, want an ErrBadConfig naming %s", err, c.want)
		}
	}
	if _, err := New(ok); err != nil {
		t.Fatalf("New(defaults) = %v", err)
	}
}
