package control

import (
	"math"
	"testing"
	"time"
)

// TestRatesScaleCountsToDemand: a job that reads only what it runs counts
// a key group's records as they are read; when the source's backlog grows
// the group's true arrival rate is its count's rate times the demand. A
// count that already holds the arrivals is kept, and a source that cannot
// tell its backlog leaves the counts as they are.
func TestRatesScaleCountsToDemand(t *testing.T) {
	t0 := time.Unix(1000, 0)
	sample := func(at time.Duration, read uint64, backlog int64, in uint64, arrived ...uint64) *Sample {
		op := OperatorSample{Name: "count", In: in, Workers: []WorkerSample{{ID: 0, Groups: []int{0, 1}, Records: in}}}
		for _, a := range arrived {
			op.Groups = append(op.Groups, GroupSample{Arrived: a, Processed: a})
		}
		return &Sample{At: t0.Add(at), Operators: []OperatorSample{op}, Sources: []SourceSample{{Name: "in", Read: read, Backlog: backlog}}}
	}
	for _, c := range []struct {
		name       string
		a, b       *Sample
		demand     float64
		groups     []float64
		workerRate float64
	}{
		{"falling behind", sample(0, 1000, 0, 1000, 500, 500), sample(time.Second, 2000, 500, 2000, 1000, 1000), 1.5, []float64{750, 750}, 1500},
		{"keeping up", sample(0, 1000, 10, 1000, 500, 500), sample(time.Second, 2000, 10, 2000, 1000, 1000), 1, []float64{500, 500}, 1000},
		{"counts hold the arrivals", sample(0, 1000, 0, 1000, 750, 750), sample(time.Second, 2000, 500, 2000, 1500, 1500), 1.5, []float64{750, 750}, 1500},
		{"backlog unknown", sample(0, 1000, -1, 1000, 500, 500), sample(time.Second, 2000, -1, 2000, 1000, 1000), 1, []float64{500, 500}, 1000},
		{"working off a backlog", sample(0, 1000, 500, 1000, 500, 500), sample(time.Second, 2000, 0, 2000, 1000, 1000), 0.5, []float64{500, 500}, 1000},
	} {
		r, ok := Rates(c.a, c.b, "count")
		if !ok {
			t.Fatalf("%s: no rates", c.name)
		}
		if math.Abs(r.Demand-c.demand) > 1e-9 {
			t.Errorf("%s: demand %v, want %v", c.name, r.Demand, c.demand)
		}
		for kg, want := range c.groups {
			if math.Abs(r.GroupArrival[kg]-want) > 1e-9 {
				t.Errorf("%s: group %d arrives at %v/s, want %v", c.name, kg, r.GroupArrival[kg], want)
			}
		}
		if math.Abs(r.Workers[0].Arrival-c.workerRate) > 1e-9 {
			t.Errorf("%s: worker arrival %v/s, want %v", c.name, r.Workers[0].Arrival, c.workerRate)
		}
	}
}
