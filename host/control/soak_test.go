package control

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"slices"
	"testing"
	"time"

	"github.com/sluicehq/sluice/host/api/schema"
)

func TestControllerFollowsLoadWithoutOscillating(t *testing.T) {
	// A keyed operator of 16 key groups on four workers of 1000 records/s,
	// both policies (latency first, then DS2, with their defaults), six
	// minutes of a load that changes every 90s:
	//
	//   0-90s:    100/s a group (1600/s): two workers are enough
	//   90-180s:  200/s a group (3200/s): four workers
	//   180-270s: the same total, the hot groups now on one worker
	//             (600, 300, 100 and 100/s; 170/s each elsewhere): moving
	//             groups fixes it, no worker is added
	//   270-360s: 50/s a group (800/s): one worker
	//
	// No decision is rolled back or undone within a minute.
	sim := newKeyedSim(slices.Repeat([]float64{100}, 16), []float64{1000, 1000, 1000, 1000})
	clock := &fakeClock{t: epoch}
	l, _ := NewLatency(LatencyConfig{})
	d, _ := NewDS2(DS2Config{})
	c, err := New(Config{
		Policies: []Policy{l, d},
		Actuator: sim,
		Now:      clock.Now,
		Logger:   slog.New(slog.NewTextHandler(io.Discard, nil)),
		Sample:   sampler(clock, sim.step),
	})
	if err != nil {
		t.Fatal(err)
	}
	workers := func() int {
		sim.mu.Lock()
		defer sim.mu.Unlock()
		return len(sim.service)
	}
	phases := map[int]int{89: 2, 179: 4, 269: 4, 359: 1} // round -> workers at its end
	for i := range 360 {
		sim.mu.Lock()
		switch i {
		case 90:
			sim.groups = slices.Repeat([]float64{200}, 16)
		case 180:
			hot := []float64{600, 300, 100, 100}
			x := sim.owners[0]
			for kg, o := range sim.owners {
				if o == x && len(hot) > 0 {
					sim.groups[kg], hot = hot[0], hot[1:]
				} else {
					sim.groups[kg] = 170
				}
			}
		case 270:
			sim.groups = slices.Repeat([]float64{50}, 16)
		}
		sim.mu.Unlock()
		if _, err := c.Round(context.Background(), ""); err != nil {
			t.Fatal(err)
		}
		// The status is GET /api/v1/control's document: it must encode
		// (no infinite delay in it, saturated workers included).
		if _, err := json.Marshal(c.Status()); err != nil {
			t.Fatalf("the status at %ds does not encode: %v", i, err)
		}
		if want, ok := phases[i]; ok && workers() != want {
			t.Errorf("%d workers at %ds, want %d", workers(), i, want)
		}
	}
	st := c.Status()
	decisions := slices.Clone(st.Decisions)
	slices.Reverse(decisions)
	for _, dec := range decisions {
		t.Logf("%v %s %s %s: %s", dec.Time.Sub(epoch), dec.Policy, Describe(dec.Action), dec.Outcome, dec.Reason)
	}
	moved := false
	for i, dec := range decisions {
		if dec.Outcome != OutcomeKept {
			t.Errorf("decision %d (%s) %s, want kept", dec.ID, Describe(dec.Action), dec.Outcome)
		}
		at := dec.Time.Sub(epoch)
		if at >= 180*time.Second && at < 270*time.Second {
			if dec.Action.Kind != "move-groups" {
				t.Errorf("decision %d (%s) on the hot-key shift, want only moves of key groups", dec.ID, Describe(dec.Action))
			}
			moved = true
		}
		for _, later := range decisions[i+1:] {
			if later.Time.Sub(dec.Time) < time.Minute && undoes(later.Action, dec.Action) {
				t.Errorf("decision %d (%s) undone by %d (%s) within a minute", dec.ID, Describe(dec.Action), later.ID, Describe(later.Action))
			}
		}
	}
	if !moved {
		t.Error("the hot-key shift moved no key group")
	}
}

// undoes reports whether b reverses a: worker counts changed the other
// way, or a key group moved back.
func undoes(b, a schema.Action) bool {
	if a.Operator != b.Operator {
		return false
	}
	if a.Kind == "set-workers" && b.Kind == "set-workers" {
		return (a.To > a.From) != (b.To > b.From)
	}
	for _, m := range a.Moves {
		for _, n := range b.Moves {
			if m.Group == n.Group && n.ToWorker == m.FromWorker {
				return true
			}
		}
	}
	return false
}
