package control

import (
	"context"
	"errors"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/host/api/schema"
)

// parseAndCount is the two-operator chain of the DS2 tests: "parse" (true
// rate 3000 records/s per worker, writes one record for two read) then
// "count" (2000 records/s per worker).
func parseAndCount(rate float64, parse, count int) *chainSim {
	return newChainSim(rate,
		&chainOp{name: "parse", workers: parse, rate: 3000, selectivity: 0.5},
		&chainOp{name: "count", workers: count, rate: 2000, selectivity: 1})
}

// ds2Rounds runs d over rounds samples of sim, one a second, each round
// shown the last two seconds, and returns the proposals in order (nil
// where none). A proposal is applied to sim and reported to d.
func ds2Rounds(d *DS2, sim *chainSim, rounds int) []*Proposal {
	var samples []Sample
	var out []*Proposal
	samples = append(samples, sim.step(0))
	for range rounds {
		samples = append(samples, sim.step(time.Second))
		p, _ := d.Propose(viewOf(samples, 3))
		out = append(out, p)
		if p != nil {
			_ = sim.SetWorkers(context.Background(), p.Action.Operator, p.Action.To)
			d.Outcome(schema.Decision{Policy: "ds2", Action: p.Action, Outcome: OutcomeApplied})
		}
	}
	return out
}

func TestDS2ParallelismFormula(t *testing.T) {
	// The source makes 10000 records/s. With parse on 2 workers (6000/s
	// of capacity) and count on 1 (2000/s, which takes 4000/s of parse's
	// input at selectivity 0.5), the pipeline runs 4000 records/s and
	// the backlog grows by 6000/s: the source's rate is 4000 + 6000 =
	// 10000 records/s.
	//
	//   parse: π = ceil(10000 / 3000) = ceil(3.33) = 4
	//   count: target input = 10000 × 0.5 = 5000; π = ceil(5000 / 2000)
	//          = ceil(2.5) = 3
	//
	// DS2 proposes parse first (topological order).
	if got := DS2Workers(10000, 3000, 0, 1, 8); got != 4 {
		t.Fatalf("DS2Workers(10000, 3000) = %d, want 4", got)
	}
	if got := DS2Workers(5000, 2000, 0, 1, 8); got != 3 {
		t.Fatalf("DS2Workers(5000, 2000) = %d, want 3", got)
	}
	// A scaling factor of 0.25: ceil(3.33 × 1.25) = ceil(4.17) = 5; the
	// bounds clamp.
	if got := DS2Workers(10000, 3000, 0.25, 1, 8); got != 5 {
		t.Fatalf("DS2Workers(10000, 3000, 0.25) = %d, want 5", got)
	}
	if got := DS2Workers(10000, 1000, 0, 1, 8); got != 8 {
		t.Fatalf("DS2Workers(10000, 1000) = %d, want the bound 8", got)
	}

	cfg := DS2Config{Interval: time.Millisecond, WarmUp: time.Millisecond, Activation: 1}
	d, err := NewDS2(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ps := ds2Rounds(d, parseAndCount(10000, 2, 1), 1)
	p := ps[0]
	if p == nil || p.Action.Kind != "set-workers" || p.Action.Operator != "parse" || p.Action.From != 2 || p.Action.To != 4 {
		t.Fatalf("proposal = %+v, want set-workers parse 2 -> 4", p)
	}
	for name, want := range map[string]float64{
		"target input rate of parse":                          10000,
		"true processing rate per worker of parse":            3000,
		"true output rate per worker of parse":                1500,
		"selectivity of parse":                                0.5,
		"arrival rate of source in (read and backlog growth)": 10000,
	} {
		if e := findEvidence(p.Evidence, name); e == nil || math.Abs(e.Value-want) > 1e-6 {
			t.Errorf("evidence %q = %+v, want %v", name, e, want)
		}
	}

	// parse at 4: count's turn, 1 -> 3.
	d, _ = NewDS2(cfg)
	p = ds2Rounds(d, parseAndCount(10000, 4, 1), 1)[0]
	if p == nil || p.Action.Operator != "count" || p.Action.From != 1 || p.Action.To != 3 {
		t.Fatalf("proposal = %+v, want set-workers count 1 -> 3", p)
	}
	if e := findEvidence(p.Evidence, "target input rate of count"); e == nil || math.Abs(e.Value-5000) > 1e-6 {
		t.Errorf("target of count = %+v, want 5000", e)
	}
}

func TestDS2ConvergesWithinThreeDecisions(t *testing.T) {
	// The workers' true rates stay fixed as counts change; from one
	// worker each, DS2 reaches parse 4, count 3 and stays there, with
	// the defaults (interval 10s, warm-up 10s, activation 2, dead band 1).
	d, err := NewDS2(DS2Config{})
	if err != nil {
		t.Fatal(err)
	}
	sim := parseAndCount(10000, 1, 1)
	decisions := 0
	for _, p := range ds2Rounds(d, sim, 120) {
		if p != nil {
			decisions++
		}
	}
	if got := sim.workers(); got[0] != 4 || got[1] != 3 {
		t.Fatalf("workers = %v after 120 rounds, want [4 3]", got)
	}
	t.Logf("%d decisions", decisions)
	if decisions > 3 {
		t.Fatalf("%d decisions, want at most 3", decisions)
	}
}

func TestDS2DeadBand(t *testing.T) {
	// parse on 3 workers, 4 needed: within a dead band of 1.
	d, _ := NewDS2(DS2Config{Interval: time.Millisecond, WarmUp: time.Millisecond, Activation: 1, DeadBand: 1})
	for i, p := range ds2Rounds(d, parseAndCount(10000, 3, 3), 10) {
		if p != nil {
			t.Fatalf("round %d proposed %+v within the dead band", i, p.Action)
		}
	}
	d, _ = NewDS2(DS2Config{Interval: time.Millisecond, WarmUp: time.Millisecond, Activation: 1, DeadBand: 0})
	if p := ds2Rounds(d, parseAndCount(10000, 3, 3), 1)[0]; p == nil || p.Action.To != 4 {
		t.Fatalf("proposal without a dead band = %+v, want parse 3 -> 4", p)
	}
}

func TestDS2Activation(t *testing.T) {
	// Activation 3: the third round over windows that do not overlap
	// that computes parse 4 proposes it. Rounds are a second apart and
	// each sees two seconds: rounds 1, 3 and 5 count.
	d, _ := NewDS2(DS2Config{Interval: time.Millisecond, WarmUp: time.Millisecond, Activation: 3})
	ps := ds2Rounds(d, parseAndCount(10000, 1, 3), 5)
	for i, p := range ps[:4] {
		if p != nil {
			t.Fatalf("round %d proposed %+v, want nothing before round 5", i+1, p.Action)
		}
	}
	if ps[4] == nil || ps[4].Action.To != 4 {
		t.Fatalf("round 5 proposed %v, want parse -> 4", ps[4])
	}
}

// TestDS2ActivationIgnoresADip: a true rate that dips for one second (a
// pause of the machine) is seen by the two rounds whose windows hold
// that second, which compute a larger count; with activation 2 over
// windows that do not overlap, the next round counted sees the rate as
// it was, and nothing is proposed.
func TestDS2ActivationIgnoresADip(t *testing.T) {
	d, _ := NewDS2(DS2Config{Interval: time.Millisecond, WarmUp: time.Millisecond, Activation: 2})
	// Sized: parse's 4 workers at 3000/s take 10000/s, count's 3 at
	// 2000/s its 5000/s.
	sim := parseAndCount(10000, 4, 3)
	samples := []Sample{sim.step(0)}
	var got []*Proposal
	for round := range 8 {
		if round == 3 {
			sim.ops[0].rate = 2000 // one slow second: parse would need 5
		}
		samples = append(samples, sim.step(time.Second))
		sim.ops[0].rate = 3000
		p, _ := d.Propose(viewOf(samples, 3))
		got = append(got, p)
	}
	for i, p := range got {
		if p != nil {
			t.Errorf("round %d proposed %+v on one slow second", i+1, p.Action)
		}
	}
}

func TestDS2WarmUp(t *testing.T) {
	// A worker count changed by someone else (a rescale seen in the
	// samples) holds DS2 back for its warm-up: 5s here.
	d, _ := NewDS2(DS2Config{Interval: time.Millisecond, WarmUp: 5 * time.Second, Activation: 1})
	sim := parseAndCount(10000, 4, 3)
	var samples []Sample
	samples = append(samples, sim.step(0))
	for range 3 {
		samples = append(samples, sim.step(time.Second))
		if p, _ := d.Propose(viewOf(samples, 3)); p != nil {
			t.Fatalf("proposal %+v with parse and count sized right", p.Action)
		}
	}
	_ = sim.SetWorkers(context.Background(), "parse", 1) // at 13s
	var first time.Duration
	for i := range 10 {
		samples = append(samples, sim.step(time.Second))
		if p, _ := d.Propose(viewOf(samples, 3)); p != nil {
			if p.Action.Operator != "parse" || p.Action.To != 4 {
				t.Fatalf("proposal %+v, want parse 1 -> 4", p.Action)
			}
			first = time.Duration(i+1) * time.Second
			break
		}
	}
	// The change shows in the sample 1s after it; DS2 waits 5s from
	// that sample.
	if first != 6*time.Second {
		t.Fatalf("first proposal %v after the rescale, want 6s (warm-up 5s after it was seen)", first)
	}
}

func TestDS2Interval(t *testing.T) {
	// After an applied decision, DS2 waits its interval (20s) for the
	// next, even past the warm-up (1s).
	d, _ := NewDS2(DS2Config{Interval: 20 * time.Second, WarmUp: time.Second, Activation: 1, DeadBand: 0})
	var at []int
	for i, p := range ds2Rounds(d, parseAndCount(10000, 1, 1), 40) {
		if p != nil {
			at = append(at, i)
		}
	}
	if len(at) != 2 || at[1]-at[0] < 20 {
		t.Fatalf("decisions at rounds %v, want two 20 rounds apart at least", at)
	}
}

func TestDS2BacklogGrowthRaisesTarget(t *testing.T) {
	// parse alone on one worker of 3000/s under a source of 6000/s: it
	// reads 3000/s and the backlog grows 3000/s; the target is 6000, so
	// 2 workers.
	cfg := DS2Config{Interval: time.Millisecond, WarmUp: time.Millisecond, Activation: 1}
	d, _ := NewDS2(cfg)
	sim := newChainSim(6000, &chainOp{name: "parse", workers: 1, rate: 3000, selectivity: 1})
	p := ds2Rounds(d, sim, 1)[0]
	if p == nil || p.Action.To != 2 {
		t.Fatalf("proposal = %+v, want parse 1 -> 2", p)
	}
	if e := findEvidence(p.Evidence, "target input rate of parse"); e == nil || math.Abs(e.Value-6000) > 1e-6 {
		t.Errorf("target = %+v, want 6000", e)
	}
	// A source that cannot tell its backlog: only what was read counts,
	// 3000/s, and one worker is enough.
	d, _ = NewDS2(cfg)
	sim = newChainSim(6000, &chainOp{name: "parse", workers: 1, rate: 3000, selectivity: 1})
	sim.noBacklog = true
	if p := ds2Rounds(d, sim, 3); p[2] != nil {
		t.Fatalf("proposal %+v without backlog growth, want none", p[2].Action)
	}
}

func TestDS2IgnoresTransactionalOperators(t *testing.T) {
	d, _ := NewDS2(DS2Config{Interval: time.Millisecond, WarmUp: time.Millisecond, Activation: 1, DeadBand: 0})
	sim := newChainSim(6000, &chainOp{name: "parse", workers: 1, rate: 3000, selectivity: 1})
	sim.transaction = "parse"
	for _, p := range ds2Rounds(d, sim, 3) {
		if p != nil {
			t.Fatalf("proposal %+v for a transactional operator", p.Action)
		}
	}
}

func TestNewDS2RefusesBadConfig(t *testing.T) {
	for _, c := range []struct {
		cfg  DS2Config
		name string
	}{
		{DS2Config{Interval: -time.Second}, "interval"},
		{DS2Config{WarmUp: -time.Second}, "warm_up"},
		{DS2Config{Activation: -1}, "activation"},
		{DS2Config{DeadBand: -1}, "dead_band"},
		{DS2Config{ScalingFactor: -0.5}, "scaling_factor"},
	} {
		_, err := NewDS2(c.cfg)
		if !errors.Is(err, ErrBadConfig) || !strings.Contains(err.Error(), c.name) {
			t.Errorf("NewDS2(%+v) = %v, want an ErrBadConfig naming %s", c.cfg, err, c.name)
		}
	}
}

func TestDS2LeavesRolledBackCountAlone(t *testing.T) {
	d, _ := NewDS2(DS2Config{Interval: time.Millisecond, WarmUp: time.Millisecond, Activation: 1})
	sim := parseAndCount(10000, 2, 3)
	var samples []Sample
	samples = append(samples, sim.step(0))
	propose := func() *Proposal {
		samples = append(samples, sim.step(time.Second))
		p, _ := d.Propose(viewOf(samples, 3))
		return p
	}
	p := propose()
	if p == nil || p.Action.To != 4 {
		t.Fatalf("proposal %+v, want parse 2 -> 4", p)
	}
	d.Outcome(schema.Decision{Policy: "ds2", Action: p.Action, Outcome: OutcomeRolledBack})
	for range 5 {
		if q := propose(); q != nil {
			t.Fatalf("proposal %+v after parse 4 was rolled back", q.Action)
		}
	}
	// The rate changes: a new count is proposed.
	sim.rate = 20000
	var q *Proposal
	for range 3 {
		if q = propose(); q != nil {
			break
		}
	}
	if q == nil || q.Action.Operator != "parse" || q.Action.To == 4 {
		t.Fatalf("proposal %+v once the rate doubled, want a new count for parse", q)
	}
}

func TestDS2ConvergesUnderTheController(t *testing.T) {
	// The same chain driven through the controller (lock 5s, settle
	// 10s): DS2's decisions are applied, checked and kept, at most 3 of
	// them, and the counts settle at parse 4, count 3.
	sim := parseAndCount(10000, 1, 1)
	clock := &fakeClock{t: epoch}
	d, _ := NewDS2(DS2Config{})
	c := runRounds(t, Config{Policies: []Policy{d}, Actuator: sim, Now: clock.Now, Sample: sampler(clock, sim.step)}, 180)
	if got := sim.workers(); got[0] != 4 || got[1] != 3 {
		t.Fatalf("workers = %v, want [4 3]", got)
	}
	st := c.Status()
	if len(st.Decisions) > 3 {
		t.Fatalf("%d decisions, want at most 3", len(st.Decisions))
	}
	for _, dec := range st.Decisions {
		if dec.Outcome != OutcomeKept || dec.Policy != "ds2" {
			t.Errorf("decision %d (%s): %s by %s, want kept", dec.ID, Describe(dec.Action), dec.Outcome, dec.Policy)
		}
	}
}

// TestDS2SizesForWorkersAlike: one slow worker of three does not make DS2
// count every worker as slow. Two run 5,000 records per busy second and
// one 1,667 (a straggler); 7,000 records/s arrive: at the upper median,
// 5,000 per worker, two workers suffice (the pooled rate, 3,387, would
// ask for three).
func TestDS2SizesForWorkersAlike(t *testing.T) {
	t0 := time.Unix(5000, 0)
	at := func(secs float64) Sample {
		op := OperatorSample{Name: "count", Kind: "keyed", Resizable: true, Movable: true, Inputs: []string{"in"},
			In: uint64(7000 * secs), Out: uint64(7000 * secs)}
		for id, w := range []struct{ recs, busy float64 }{{2667, 0.5334}, {2667, 0.5334}, {1666, 1}} {
			op.Workers = append(op.Workers, WorkerSample{ID: id, Groups: []int{id}, Records: uint64(w.recs * secs), Out: uint64(w.recs * secs), BusySeconds: w.busy * secs})
		}
		return Sample{At: t0.Add(time.Duration(secs * float64(time.Second))), Operators: []OperatorSample{op},
			Sources: []SourceSample{{Name: "in", Read: uint64(7000 * secs), Backlog: 0}}}
	}
	d, err := NewDS2(DS2Config{Interval: time.Millisecond, WarmUp: time.Millisecond, Activation: 1, DeadBand: 0})
	if err != nil {
		t.Fatal(err)
	}
	p, _ := d.Propose(&View{Samples: []Sample{at(10), at(12)}, MinWorkers: 1, MaxWorkers: 8})
	if p == nil || p.Action.Kind != "set-workers" || p.Action.From != 3 || p.Action.To != 2 {
		t.Fatalf("proposal %+v, want set-workers 3 -> 2", p)
	}
}

// A step up in the source's rate is sized for in the first round after
// it: the latest interval holds the new rate while the view's span
// straddles the step, whose mean would size for too few workers.
func TestDS2SizesAStepUpFromTheLatestInterval(t *testing.T) {
	d, _ := NewDS2(DS2Config{Interval: time.Millisecond, WarmUp: time.Millisecond, Activation: 1, DeadBand: 0})
	sim := newChainSim(8000, &chainOp{name: "count", workers: 2, rate: 5000, selectivity: 1})
	samples := []Sample{sim.step(0)}
	for i := range 4 {
		samples = append(samples, sim.step(time.Second))
		if p, _ := d.Propose(viewOf(samples, 3)); p != nil {
			t.Fatalf("round %d at 8000 records/s on 2 workers of 5000/s proposed %+v", i, p.Action)
		}
	}
	sim.rate = 16000
	samples = append(samples, sim.step(time.Second))
	p, _ := d.Propose(viewOf(samples, 3))
	if p == nil || p.Action.From != 2 || p.Action.To != 4 {
		t.Fatalf("first round after the step to 16000 records/s = %+v, want count 2 -> 4 (the span's mean, 12000/s, asks for 3)", p)
	}
	if e := findEvidence(p.Evidence, "arrival rate of source in in the latest interval (higher: sized for)"); e == nil || math.Abs(e.Value-16000) > 1 {
		t.Errorf("evidence of the latest interval's rate = %+v, want 16000", e)
	}
}

// DS2 sizes for workers alike; it takes no scale-in whose even spread of
// the key groups would give a slower worker more than it runs. Four
// workers, worker 0 a straggler at 1,667/s whose groups were moved off it
// (it runs nothing now, and DS2 remembers its rate), the others at
// 5,000/s, 16 groups of 500/s: two workers alike would do (8,000/s), but
// the executor's spread over two would give worker 0 half the groups.
// With worker 0 as fast as the others, DS2 proposes 4 -> 2.
func TestDS2TakesNoScaleInThatOverloadsASlowerWorker(t *testing.T) {
	propose := func(straggler float64) *Proposal {
		sim := newKeyedSim(slices.Repeat([]float64{500}, 16), []float64{straggler, 5000, 5000, 5000})
		d, err := NewDS2(DS2Config{Interval: time.Second, WarmUp: time.Second, Activation: 1})
		if err != nil {
			t.Fatal(err)
		}
		samples := []Sample{sim.step(0)}
		var p *Proposal
		for i := range 6 {
			if i == 3 {
				// The straggler detector moves worker 0's groups off it.
				for kg, o := range sim.owners {
					if o == 0 {
						sim.owners[kg] = 1 + kg%3
					}
				}
			}
			samples = append(samples, sim.step(time.Second))
			v := viewOf(samples, 3)
			v.MaxWorkers = 4
			p, _ = d.Propose(v)
			if i < 3 && straggler < 5000 && p != nil {
				t.Fatalf("round %d: proposal %+v while worker 0 has more groups than it runs", i, p.Action)
			}
		}
		return p
	}
	if p := propose(1667); p != nil {
		t.Fatalf("proposal %+v with a straggler, want none", p.Action)
	}
	if p := propose(5000); p == nil || p.Action.To != 2 {
		t.Fatalf("proposal %+v with workers alike, want set-workers 4 -> 2", p)
	}
}

func TestDS2ScaleInLeavesHeadroom(t *testing.T) {
	// Four workers of 5,000 records/s, sixteen key groups. DS2's formula
	// asks for ceil(rate / 5,000) workers: at 4,800/s one, which would
	// run at 96% of its capacity; the scale-in goes to two (48%). At
	// 4,000/s one worker is 80% busy: one.
	for _, c := range []struct {
		group float64
		want  int
	}{{300, 2}, {250, 1}} {
		sim := newKeyedSim(slices.Repeat([]float64{c.group}, 16), []float64{5000, 5000, 5000, 5000})
		d, err := NewDS2(DS2Config{Interval: time.Second, WarmUp: time.Second, Activation: 1})
		if err != nil {
			t.Fatal(err)
		}
		samples := []Sample{sim.step(0)}
		var p *Proposal
		for range 3 {
			samples = append(samples, sim.step(time.Second))
			v := viewOf(samples, 3)
			v.MaxWorkers = 4
			if p, _ = d.Propose(v); p != nil {
				break
			}
		}
		if p == nil || p.Action.From != 4 || p.Action.To != c.want {
			t.Errorf("at %.0f records/s: proposal %+v, want set-workers 4 -> %d", 16*c.group, p, c.want)
		}
	}
	// A stateless operator likewise: 9,500/s at 5,000/s a worker is two
	// by the formula (95% busy), three with headroom.
	o := &ds2Operator{rate: 5000, target: 9500}
	if got := busyAfterScaleIn(o, 2, nil); math.Abs(got-0.95) > 1e-9 {
		t.Errorf("busy after a scale-in to 2 = %v, want 0.95", got)
	}
}

func TestDS2TakesNoScaleInOnASpanStraddlingAFall(t *testing.T) {
	// Four workers of 5,000/s at 16,000/s; the rate steps down to
	// 4,000/s. The first round's span (two seconds) holds a second of
	// each, 10,000/s, which would ask for 3 workers: sized for neither
	// rate, it would be followed by 3 -> 1 (a reversal of nothing but a
	// straddling window). DS2 waits until the span holds only the new
	// rate, then goes 4 -> 1 in one decision.
	d, _ := NewDS2(DS2Config{Interval: time.Millisecond, WarmUp: time.Millisecond, Activation: 1, DeadBand: 0})
	sim := newChainSim(16000, &chainOp{name: "count", workers: 4, rate: 5000, selectivity: 1})
	samples := []Sample{sim.step(0)}
	for i := range 3 {
		samples = append(samples, sim.step(time.Second))
		if p, _ := d.Propose(viewOf(samples, 3)); p != nil {
			t.Fatalf("round %d at 16000 records/s on 4 workers of 5000/s proposed %+v", i, p.Action)
		}
	}
	sim.rate = 4000
	samples = append(samples, sim.step(time.Second))
	if p, _ := d.Propose(viewOf(samples, 3)); p != nil {
		t.Fatalf("first round after the fall, on a span of 10000/s, proposed %+v; want none", p.Action)
	}
	samples = append(samples, sim.step(time.Second))
	p, _ := d.Propose(viewOf(samples, 3))
	if p == nil || p.Action.From != 4 || p.Action.To != 1 {
		t.Fatalf("once the span holds 4000/s: %+v, want count 4 -> 1", p)
	}
}

// TestDS2TakesNoScaleInWhileABacklogDrains: four workers of 5,000/s
// read 6,000 records/s from a source whose backlog shrinks by 4,000/s:
// records arrive at 2,000/s, for which one worker suffices, but the
// records that waited need the capacity. DS2 waits until the backlog is
// worked off, then scales in.
func TestDS2TakesNoScaleInWhileABacklogDrains(t *testing.T) {
	d, _ := NewDS2(DS2Config{Interval: time.Millisecond, WarmUp: time.Millisecond, Activation: 1, DeadBand: 0})
	var (
		samples       []Sample
		read, backlog float64 = 0, 30000
		recs          [4]float64
	)
	step := func(readRate float64) *Proposal {
		read += readRate
		backlog = max(backlog-(readRate-2000), 0)
		op := OperatorSample{Name: "count", Kind: "map", Inputs: []string{"in"}, Resizable: true, In: uint64(read), Out: uint64(read)}
		for w := range recs {
			recs[w] += readRate / 4
			op.Workers = append(op.Workers, WorkerSample{ID: w, Records: uint64(recs[w]), Out: uint64(recs[w]), BusySeconds: recs[w] / 5000})
		}
		samples = append(samples, Sample{
			At:        epoch.Add(time.Duration(len(samples)) * time.Second),
			Sources:   []SourceSample{{Name: "in", Read: uint64(read), Backlog: int64(backlog)}},
			Operators: []OperatorSample{op},
		})
		if len(samples) < 2 {
			return nil
		}
		p, _ := d.Propose(viewOf(samples, 3))
		return p
	}
	for i := range 6 { // 30,000 records drained at 4,000/s: 7.5 s
		if p := step(6000); p != nil {
			t.Fatalf("round %d, the backlog draining, proposed %+v; want none", i, p.Action)
		}
	}
	var p *Proposal
	for i := 0; i < 5 && p == nil; i++ {
		p = step(min(6000, backlog+2000))
	}
	if p == nil || p.Action.From != 4 || p.Action.To != 1 {
		t.Fatalf("once the backlog is worked off: %+v, want count 4 -> 1", p)
	}
}

// TestDS2TakesNoScaleInWhileABacklogGrows: four workers of 5,000/s, a
// quarter busy, while records arrive at 6,000/s and the source is read
// at 5,000/s (the reader, not the workers, falls behind: the backlog
// grows by 1,000/s). The formula asks for two workers, which the
// workers' true rates allow, but a job that does not keep up loses no
// workers. Once the source is read as fast as records arrive, DS2
// scales in.
func TestDS2TakesNoScaleInWhileABacklogGrows(t *testing.T) {
	d, _ := NewDS2(DS2Config{Interval: time.Millisecond, WarmUp: time.Millisecond, Activation: 1, DeadBand: 0})
	sim := newChainSim(6000, &chainOp{name: "count", workers: 4, rate: 5000, selectivity: 1})
	sim.readMax = 5000
	for i, p := range ds2Rounds(d, sim, 6) {
		if p != nil {
			t.Fatalf("round %d, the backlog growing by 1000/s, proposed %+v; want none", i, p.Action)
		}
	}
	sim.readMax = 0
	var p *Proposal
	for _, q := range ds2Rounds(d, sim, 6) {
		if p == nil {
			p = q
		}
	}
	if p == nil || p.Action.From != 4 || p.Action.To != 2 {
		t.Fatalf("once the source is read as fast as records arrive: %+v, want count 4 -> 2", p)
	}
}
