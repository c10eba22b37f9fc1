package control

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"
)

// epoch is the synthetic traces' start.
var epoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// keyedSim is a synthetic keyed operator fed by one source: each key
// group gets records at a fixed rate, each worker runs its groups' records
// up to its service rate, and a worker's mean delay is M/M/1's 1/(μ-λ)
// (5s when saturated) unless delay overrides it. step advances the clock
// and returns the cumulative sample.
type keyedSim struct {
	mu        sync.Mutex
	at        time.Time
	name      string
	kind      string
	movable   bool
	resizable bool
	groups    []float64       // arrival rate of each key group
	owners    []int           // worker of each key group
	service   []float64       // service rate of each worker
	delay     map[int]float64 // overridden mean delays
	migrating bool
	// lockstep runs the workers as the executor runs a batch's workers:
	// together, every one at the pace of the most utilized, so that a
	// saturated worker slows them all.
	lockstep bool
	// added is the service rate of a worker SetWorkers adds (0: worker
	// 0's).
	added float64

	arrived, processed   []float64
	recs, busy, delaySum map[int]float64
	in                   float64
	backlog              float64
	// unread is a rate of records that arrive at the source and are not
	// read (the reader falls behind, not the workers): the backlog grows
	// by it whatever the workers do.
	unread float64
}

// newKeyedSim returns a keyed operator "count" with len(groups) key
// groups spread round-robin over len(service) workers.
func newKeyedSim(groups, service []float64) *keyedSim {
	k := &keyedSim{
		at: epoch, name: "count", kind: "keyed", movable: true, resizable: true,
		groups: groups, service: service, owners: make([]int, len(groups)),
		arrived: make([]float64, len(groups)), processed: make([]float64, len(groups)),
		recs: map[int]float64{}, busy: map[int]float64{}, delaySum: map[int]float64{}, delay: map[int]float64{},
	}
	for kg := range k.owners {
		k.owners[kg] = kg % len(service)
	}
	return k
}

// workerArrival returns the arrival rate of worker w's groups.
func (k *keyedSim) workerArrival(w int) float64 {
	var a float64
	for kg, o := range k.owners {
		if o == w {
			a += k.groups[kg]
		}
	}
	return a
}

// sampler returns a Config.Sample over a simulation's step: the first
// sample as the simulation stands, then each later one a second on,
// advancing clock by that second.
func sampler(clock *fakeClock, step func(time.Duration) Sample) func() Sample {
	started := false
	return func() Sample {
		if !started {
			started = true
			return step(0)
		}
		clock.Advance(time.Second)
		return step(time.Second)
	}
}

// step advances the trace by d and returns its sample.
func (k *keyedSim) step(d time.Duration) Sample {
	k.mu.Lock()
	defer k.mu.Unlock()
	secs := d.Seconds()
	k.at = k.at.Add(d)
	pace := 1.0 // the share of its arrivals each worker runs in lockstep
	if k.lockstep {
		for w, mu := range k.service {
			if lambda := k.workerArrival(w); lambda > mu {
				pace = min(pace, mu/lambda)
			}
		}
	}
	for w, mu := range k.service {
		lambda := k.workerArrival(w)
		ran := min(lambda, mu) * secs
		if k.lockstep {
			ran = lambda * pace * secs
		}
		delay := 5.0
		if mu > lambda && pace == 1 {
			delay = 1 / (mu - lambda)
		}
		if o, ok := k.delay[w]; ok {
			delay = o
		}
		k.recs[w] += ran
		k.busy[w] += ran / mu
		k.delaySum[w] += ran * delay
		k.backlog += (lambda*secs - ran)
		for kg, o := range k.owners {
			if o == w {
				k.arrived[kg] += k.groups[kg] * secs
				if lambda > 0 {
					k.processed[kg] += k.groups[kg] * secs * ran / (lambda * secs)
				}
			}
		}
		k.in += ran
	}
	k.backlog += k.unread * secs
	op := OperatorSample{Name: k.name, Kind: k.kind, Inputs: []string{"in"}, Movable: k.movable, Resizable: k.resizable, In: uint64(k.in), Out: uint64(k.in)}
	for w := range k.service {
		ws := WorkerSample{ID: w, Records: uint64(k.recs[w]), Out: uint64(k.recs[w]), BusySeconds: k.busy[w], DelaySeconds: k.delaySum[w], Delayed: uint64(k.recs[w])}
		for kg, o := range k.owners {
			if o == w {
				ws.Groups = append(ws.Groups, kg)
			}
		}
		op.Workers = append(op.Workers, ws)
	}
	for kg := range k.groups {
		op.Groups = append(op.Groups, GroupSample{Arrived: uint64(k.arrived[kg]), Processed: uint64(k.processed[kg])})
	}
	return Sample{At: k.at, Operators: []OperatorSample{op}, Sources: []SourceSample{{Name: "in", Read: uint64(k.in), Backlog: int64(k.backlog)}}, Migrating: k.migrating}
}

// MoveGroups moves the sim's groups (an Actuator).
func (k *keyedSim) MoveGroups(_ context.Context, _ string, moves map[int]int) error {
	k.mu.Lock()
	defer k.mu.Unlock()
	for kg, w := range moves {
		k.owners[kg] = w
	}
	return nil
}

// SetWorkers changes the sim's worker count, spreading its groups as the
// executor does; a new worker runs at added, or as fast as worker 0 (an
// Actuator).
func (k *keyedSim) SetWorkers(_ context.Context, _ string, n int) error {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.owners = rebalance(k.owners, n)
	for len(k.service) < n {
		mu := k.added
		if mu == 0 {
			mu = k.service[0]
		}
		k.service = append(k.service, mu)
	}
	k.service = k.service[:n]
	return nil
}

// chainOp is one operator of a chainSim.
type chainOp struct {
	name        string
	workers     int
	rate        float64 // true processing rate per worker
	selectivity float64
	recs, busy  map[int]float64
	in, out     float64
}

// chainSim is a synthetic chain of stateless operators after a source
// that makes records at a fixed rate: the pipeline runs at its slowest
// operator's capacity (its workers' true rates), and what it cannot take
// stays in the source's backlog.
type chainSim struct {
	mu          sync.Mutex
	at          time.Time
	rate        float64
	ops         []*chainOp
	read        float64
	backlog     float64
	noBacklog   bool    // the source cannot tell its backlog
	readMax     float64 // the most the source is read per second, whatever the operators take (0: no bound)
	transaction string
}

// newChainSim returns a chain after source "in" making rate records/s.
func newChainSim(rate float64, ops ...*chainOp) *chainSim {
	for _, o := range ops {
		o.recs, o.busy = map[int]float64{}, map[int]float64{}
	}
	return &chainSim{at: epoch, rate: rate, ops: ops}
}

// throughput returns the records/s the chain takes from its source.
func (c *chainSim) throughput() float64 {
	t, sel := c.rate, 1.0
	for _, o := range c.ops {
		t = min(t, float64(o.workers)*o.rate/sel)
		sel *= o.selectivity
	}
	if c.readMax > 0 {
		t = min(t, c.readMax)
	}
	return t
}

// step advances the trace by d and returns its sample.
func (c *chainSim) step(d time.Duration) Sample {
	c.mu.Lock()
	defer c.mu.Unlock()
	secs := d.Seconds()
	c.at = c.at.Add(d)
	t := c.throughput()
	c.read += t * secs
	c.backlog += (c.rate - t) * secs
	s := Sample{At: c.at}
	backlog := int64(c.backlog)
	if c.noBacklog {
		backlog = -1
	}
	s.Sources = []SourceSample{{Name: "in", Read: uint64(c.read), Backlog: backlog}}
	flow, input := t, "in"
	for _, o := range c.ops {
		o.in += flow * secs
		o.out += flow * o.selectivity * secs
		op := OperatorSample{Name: o.name, Kind: "map", Inputs: []string{input}, Resizable: true, In: uint64(o.in), Out: uint64(o.out)}
		if o.name == c.transaction {
			op.Kind = "transactional"
		}
		for w := range o.workers {
			o.recs[w] += flow / float64(o.workers) * secs
			o.busy[w] += flow / float64(o.workers) * secs / o.rate
			op.Workers = append(op.Workers, WorkerSample{ID: w, Records: uint64(o.recs[w]), Out: uint64(o.recs[w] * o.selectivity), BusySeconds: o.busy[w]})
		}
		s.Operators = append(s.Operators, op)
		flow *= o.selectivity
		input = o.name
	}
	return s
}

// MoveGroups fails: a chain has no key groups (an Actuator).
func (c *chainSim) MoveGroups(_ context.Context, op string, _ map[int]int) error {
	return fmt.Errorf("chain operator %q has no key groups", op)
}

// SetWorkers changes an operator's worker count (an Actuator).
func (c *chainSim) SetWorkers(_ context.Context, name string, n int) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, o := range c.ops {
		if o.name == name {
			o.workers = n
		}
	}
	return nil
}

// workers returns each operator's worker count.
func (c *chainSim) workers() []int {
	c.mu.Lock()
	defer c.mu.Unlock()
	var ns []int
	for _, o := range c.ops {
		ns = append(ns, o.workers)
	}
	return ns
}

// viewOf returns a view of the last samples of trace (at most n), with
// bounds 1..8.
func viewOf(samples []Sample, n int) *View {
	if len(samples) > n {
		samples = samples[len(samples)-n:]
	}
	return &View{Samples: slices.Clone(samples), Trigger: "period", MinWorkers: 1, MaxWorkers: 8}
}

// fakeClock is a clock tests move by hand.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (f *fakeClock) Now() time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.t
}

func (f *fakeClock) Advance(d time.Duration) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.t = f.t.Add(d)
}
