package sluicetest

import (
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"syscall"
	"time"
)

// Nemesis runs a random schedule of faults on a Spread's hosts and NATS
// servers (a small Jepsen-style nemesis): hosts killed with SIGKILL,
// stopped with SIGTERM and started again, a NATS server killed and
// started again, and the test's own operations (a move, a swap). One
// host and all but one server run throughout. Its schedule comes from a
// seed, logged, that SLUICE_NEMESIS_SEED repeats. Call its methods from
// the test's goroutine.
type Nemesis struct {
	s    *Spread
	ids  []string
	up   map[string]bool
	down int // the NATS server killed, or -1
	// Rand draws the schedule; the test's operations may draw from it
	// too, so that the seed repeats them.
	Rand *rand.Rand
}

// NewNemesis starts the hosts ids and returns the nemesis that hits
// them, its seed taken from SLUICE_NEMESIS_SEED or the clock.
func (s *Spread) NewNemesis(ids ...string) *Nemesis {
	t := s.t
	t.Helper()
	seed := uint64(time.Now().UnixNano())
	if v := os.Getenv("SLUICE_NEMESIS_SEED"); v != "" {
		n, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			t.Fatalf("SLUICE_NEMESIS_SEED: %v", err)
		}
		seed = n
	}
	t.Logf("schedule seed %d (SLUICE_NEMESIS_SEED=%d repeats it)", seed, seed)
	n := &Nemesis{s: s, ids: ids, up: map[string]bool{}, down: -1, Rand: rand.New(rand.NewPCG(seed, 0))}
	for _, id := range ids {
		s.Start(id)
		n.up[id] = true
	}
	return n
}

// Pick returns a host of the nemesis that runs (isUp) or does not, drawn
// at random; "" when there is none.
func (n *Nemesis) Pick(isUp bool) string {
	var c []string
	for _, id := range n.ids {
		if n.up[id] == isUp {
			c = append(c, id)
		}
	}
	if len(c) == 0 {
		return ""
	}
	return c[n.Rand.IntN(len(c))]
}

// Step makes step number step: one fault drawn from those possible now
// and the test's own operations (by name, each called when drawn), then
// waits until done reports true (the pipeline went on: more outputs, or
// all of them), half a second at least.
func (n *Nemesis) Step(step int, own map[string]func(step int), done func() bool) {
	s, t := n.s, n.s.t
	t.Helper()
	var ops []string
	for name := range own {
		ops = append(ops, name)
	}
	running := 0
	for _, id := range n.ids {
		if n.up[id] {
			running++
		}
	}
	if running >= 2 {
		ops = append(ops, "kill", "stop")
	}
	if running < len(n.ids) {
		ops = append(ops, "start")
	}
	if n.down < 0 {
		ops = append(ops, "kill-nats")
	} else {
		ops = append(ops, "start-nats")
	}
	// The map's order is random: sort the test's operations first, so
	// the seed repeats the schedule.
	slices.Sort(ops[:len(own)])
	switch op := ops[n.Rand.IntN(len(ops))]; op {
	case "kill-nats":
		n.down = n.Rand.IntN(s.NATS.Len())
		t.Logf("step %d: SIGKILL NATS server %s", step, s.NATS.Name(n.down))
		s.NATS.Kill(n.down)
	case "start-nats":
		t.Logf("step %d: start NATS server %s", step, s.NATS.Name(n.down))
		s.NATS.Restart(n.down)
		n.down = -1
	case "kill":
		id := n.Pick(true)
		t.Logf("step %d: SIGKILL %s", step, id)
		if err := s.Hosts[id].Process.Signal(syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		_ = s.Hosts[id].Wait()
		n.up[id] = false
	case "stop":
		id := n.Pick(true)
		t.Logf("step %d: SIGTERM %s", step, id)
		s.Stop(id)
		n.up[id] = false
	case "start":
		id := n.Pick(false)
		n.startAgain(id)
		t.Logf("step %d: started %s", step, id)
	default:
		own[op](step)
	}
	// Let the fault play out a little.
	time.Sleep(500 * time.Millisecond)
	s.Wait(fmt.Sprintf("step %d: the pipeline goes on", step), done)
}

// Heal starts the NATS server and the hosts that are down.
func (n *Nemesis) Heal() {
	n.s.t.Helper()
	if n.down >= 0 {
		n.s.NATS.Restart(n.down)
		n.down = -1
	}
	for _, id := range n.ids {
		if !n.up[id] {
			n.startAgain(id)
		}
	}
}

// startAgain starts host id once its lease is seen gone: a host killed
// keeps its lease until it expires, and started before that it would be
// refused as a host already live.
func (n *Nemesis) startAgain(id string) {
	n.s.t.Helper()
	n.s.Wait(id+"'s lease gone", func() bool { return n.s.LeaseGone(id) })
	n.s.Start(id)
	n.up[id] = true
}
