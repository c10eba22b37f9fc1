package cluster

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
)

// Order is the order in which a migration moves each source host's key
// groups (Spacker's prioritization).
type Order string

// The orders Plan knows.
const (
	// OrderKeyGroup moves groups in ascending group order (the default).
	OrderKeyGroup Order = "keygroup"
	// OrderReverse moves groups in descending group order.
	OrderReverse Order = "reverse"
	// OrderRandom moves groups in an order drawn from Knobs.Seed: the same
	// seed gives the same order, on every host and every run.
	OrderRandom Order = "random"
	// OrderHottest moves the groups with the most load first (ties in
	// group order).
	OrderHottest Order = "hottest"
)

// Knobs are the migration planner's settings: Spacker's three knobs
// (order, batch size, replication) and the scope of a batch.
type Knobs struct {
	// Order is the order each source host's groups move in; "" is
	// OrderKeyGroup.
	Order Order
	// Seed draws the order of OrderRandom.
	Seed uint64
	// Batch is the number of groups each source host moves per step;
	// 0 moves them all in one step. Each source host's ordered groups are
	// cut into chunks of Batch, and step i moves every source host's i-th
	// chunk, so source hosts migrate in parallel and steps in sequence.
	Batch int
	// Global makes Batch count the groups of a step over all source hosts
	// instead of per source host: the moving groups, ordered over all of
	// them, are cut into chunks of Batch, one per step.
	Global bool
	// Replicate selects the groups replicated ahead of their move: group g
	// is replicated iff Replicate > 0 and g % Replicate == 0 (1: all,
	// 2: half, 0: none).
	Replicate int
}

// AllAtOnce returns the knobs of the all-at-once baseline: one step moves
// every group (what a stop-and-restart rescale does).
func AllAtOnce() Knobs { return Knobs{Order: OrderKeyGroup} }

// Fluid returns the knobs of the fluid baseline: one group per step over
// all hosts (Megaphone's fluid migration).
func Fluid() Knobs { return Knobs{Order: OrderKeyGroup, Batch: 1, Global: true} }

// ErrBadPlan is matched, with errors.Is, by Plan's errors: knobs out of
// range, or tables that do not fit together.
var ErrBadPlan = errors.New("bad migration plan")

// Validate checks the knobs and names the one at fault.
func (k Knobs) Validate() error {
	switch k.Order {
	case "", OrderKeyGroup, OrderReverse, OrderRandom, OrderHottest:
	default:
		return fmt.Errorf("cluster: %w: order %q is not one of keygroup, reverse, random, hottest", ErrBadPlan, k.Order)
	}
	if k.Batch < 0 {
		return fmt.Errorf("cluster: %w: batch %d is negative (0 moves all groups at once)", ErrBadPlan, k.Batch)
	}
	if k.Replicate < 0 {
		return fmt.Errorf("cluster: %w: replicate %d is negative (0 replicates none)", ErrBadPlan, k.Replicate)
	}
	return nil
}

// Plan turns the change from table old to table new into the steps of a
// migration (Spacker's planner): the groups whose owner differs are the
// moves; each source host's moves are ordered by k.Order and cut into
// chunks of k.Batch, and step i is the union of every source host's i-th
// chunk (source hosts in id order). With k.Global the moves are ordered and
// cut over all source hosts at once. load is each group's measured load,
// read by OrderHottest (a group missing from it has none). A move is marked
// replicated by k.Replicate. Tables that do not change give no steps.
//
// Plan fails, matching ErrBadPlan, on knobs out of range, tables of
// different lengths, or a group that new leaves unassigned while old
// assigns it.
func Plan(old, new []string, k Knobs, load map[int]float64) ([]Step, error) {
	if err := k.Validate(); err != nil {
		return nil, err
	}
	if len(old) != len(new) {
		return nil, fmt.Errorf("cluster: %w: the old table has %d key groups, the new one %d", ErrBadPlan, len(old), len(new))
	}
	var moves []Move
	for g := range old {
		if old[g] == new[g] {
			continue
		}
		if new[g] == "" {
			return nil, fmt.Errorf("cluster: %w: group %d: the new table leaves it unassigned (old owner %q)", ErrBadPlan, g, old[g])
		}
		moves = append(moves, Move{Group: g, From: old[g], To: new[g], Replicated: k.Replicate > 0 && g%k.Replicate == 0, State: StepPlanned})
	}
	if len(moves) == 0 {
		return nil, nil
	}
	slices.SortStableFunc(moves, func(a, b Move) int { return k.compare(a.Group, b.Group, load) })
	var chunks [][][]Move // per source host, its chunks
	if k.Global {
		chunks = [][][]Move{cut(moves, k.Batch)}
	} else {
		bySource := make(map[string][]Move)
		var sources []string
		for _, mv := range moves {
			if _, ok := bySource[mv.From]; !ok {
				sources = append(sources, mv.From)
			}
			bySource[mv.From] = append(bySource[mv.From], mv)
		}
		slices.Sort(sources)
		for _, src := range sources {
			chunks = append(chunks, cut(bySource[src], k.Batch))
		}
	}
	var steps []Step
	for i := 0; ; i++ {
		var s Step
		for _, c := range chunks {
			if i < len(c) {
				s.Moves = append(s.Moves, c[i]...)
			}
		}
		if len(s.Moves) == 0 {
			return steps, nil
		}
		s.State = StepPlanned
		steps = append(steps, s)
	}
}

// cut cuts moves into chunks of n (0: one chunk).
func cut(moves []Move, n int) [][]Move {
	if n == 0 {
		return [][]Move{moves}
	}
	var out [][]Move
	for len(moves) > n {
		out = append(out, moves[:n:n])
		moves = moves[n:]
	}
	return append(out, moves)
}

// compare orders groups a and b by the knobs' order.
func (k Knobs) compare(a, b int, load map[int]float64) int {
	switch k.Order {
	case OrderReverse:
		return cmp.Compare(b, a)
	case OrderRandom:
		if c := cmp.Compare(RandomRank(k.Seed, a), RandomRank(k.Seed, b)); c != 0 {
			return c
		}
	case OrderHottest:
		if c := cmp.Compare(load[b], load[a]); c != 0 {
			return c
		}
	}
	return cmp.Compare(a, b)
}

// RandomRank is the rank of group under OrderRandom with seed: groups move
// in ascending rank (ties in group order). It is a fixed function of its
// arguments (SplitMix64), so a plan is the same wherever it is made.
func RandomRank(seed uint64, group int) uint64 {
	z := seed + uint64(group+1)*0x9e3779b97f4a7c15
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}
