package cluster

import (
	"errors"
	"maps"
	"slices"
	"testing"

	"pgregory.net/rapid"
)

// hostNames are the host ids the properties draw from; "" is unassigned.
var hostNames = []string{"", "a", "b", "c", "d"}

// drawTable draws a table of n groups over hostNames.
func drawTable(rt *rapid.T, n int, label string) []string {
	return rapid.SliceOfN(rapid.SampledFrom(hostNames), n, n).Draw(rt, label)
}

func TestPlanProperties(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		n := rapid.IntRange(1, 40).Draw(rt, "groups")
		old := drawTable(rt, n, "old")
		// The new table assigns every group old assigns.
		next := slices.Clone(old)
		for g := range next {
			if rapid.Bool().Draw(rt, "change") {
				next[g] = rapid.SampledFrom(hostNames[1:]).Draw(rt, "to")
			}
		}
		k := Knobs{
			Order:     rapid.SampledFrom([]Order{"", OrderKeyGroup, OrderReverse, OrderRandom, OrderHottest}).Draw(rt, "order"),
			Seed:      rapid.Uint64().Draw(rt, "seed"),
			Batch:     rapid.IntRange(0, 5).Draw(rt, "batch"),
			Global:    rapid.Bool().Draw(rt, "global"),
			Replicate: rapid.IntRange(0, 4).Draw(rt, "replicate"),
		}
		load := make(map[int]float64)
		for g := range n {
			if rapid.Bool().Draw(rt, "loaded") {
				load[g] = float64(rapid.IntRange(0, 3).Draw(rt, "load")) // ties on purpose
			}
		}
		steps, err := Plan(old, next, k, load)
		if err != nil {
			rt.Fatal(err)
		}

		// The steps partition exactly the groups whose owner differs, with
		// the right ends and replication marks.
		want := make(map[int]bool)
		for g := range old {
			if old[g] != next[g] {
				want[g] = true
			}
		}
		got := make(map[int]bool)
		perSource := make(map[string][]int) // each source's groups, in plan order
		var all []int                       // every group, in plan order
		for i, s := range steps {
			if len(s.Moves) == 0 || s.State != StepPlanned {
				rt.Fatalf("step %d: %d moves, state %s", i, len(s.Moves), s.State)
			}
			count := make(map[string]int)
			for _, mv := range s.Moves {
				if got[mv.Group] {
					rt.Fatalf("group %d moves twice", mv.Group)
				}
				got[mv.Group] = true
				if mv.From != old[mv.Group] || mv.To != next[mv.Group] {
					rt.Fatalf("group %d: move %q -> %q, tables %q -> %q", mv.Group, mv.From, mv.To, old[mv.Group], next[mv.Group])
				}
				if repl := k.Replicate > 0 && mv.Group%k.Replicate == 0; mv.Replicated != repl {
					rt.Fatalf("group %d: replicated %v with filter %d", mv.Group, mv.Replicated, k.Replicate)
				}
				count[mv.From]++
				perSource[mv.From] = append(perSource[mv.From], mv.Group)
				all = append(all, mv.Group)
			}
			// Batch per source host (or per step, with Global).
			if k.Batch > 0 {
				if k.Global && len(s.Moves) > k.Batch {
					rt.Fatalf("step %d moves %d groups, batch %d (global)", i, len(s.Moves), k.Batch)
				}
				for src, c := range count {
					if c > k.Batch {
						rt.Fatalf("step %d moves %d groups of %q, batch %d", i, c, src, k.Batch)
					}
				}
			} else if len(steps) != 1 {
				rt.Fatalf("batch 0 made %d steps", len(steps))
			}
			// Only the last step of a source (or of all, with Global) may
			// be short; no step is needed that a fuller one could absorb.
			if k.Batch > 0 && i < len(steps)-1 && k.Global && len(s.Moves) != k.Batch {
				rt.Fatalf("step %d of %d moves %d groups, batch %d (global)", i, len(steps), len(s.Moves), k.Batch)
			}
		}
		if !maps.Equal(got, want) {
			rt.Fatalf("plan moves %v, tables differ at %v", got, want)
		}

		// Within a source host (or over all, with Global) the order is the
		// knob's.
		ordered := func(gs []int) bool {
			return slices.IsSortedFunc(gs, func(a, b int) int { return k.compare(a, b, load) })
		}
		if k.Global {
			if !ordered(all) {
				rt.Fatalf("order %s: plan order %v", k.Order, all)
			}
		} else {
			for src, gs := range perSource {
				if !ordered(gs) {
					rt.Fatalf("order %s: source %q moves %v", k.Order, src, gs)
				}
				// Each source moves Batch groups per step until it has
				// none left: it is in the first ceil(len/Batch) steps.
				if k.Batch > 0 {
					if want := (len(gs) + k.Batch - 1) / k.Batch; lastStepOf(steps, src)+1 != want {
						rt.Fatalf("source %q: %d groups, batch %d, last step %d", src, len(gs), k.Batch, lastStepOf(steps, src))
					}
				}
			}
		}

		// The same knobs make the same plan.
		again, err := Plan(old, next, k, load)
		if err != nil || !slices.EqualFunc(steps, again, func(a, b Step) bool { return slices.Equal(a.Moves, b.Moves) }) {
			rt.Fatalf("a second plan differs: %v", err)
		}
	})
}

// lastStepOf returns the last step that moves a group of src.
func lastStepOf(steps []Step, src string) int {
	last := -1
	for i, s := range steps {
		if slices.ContainsFunc(s.Moves, func(mv Move) bool { return mv.From == src }) {
			last = i
		}
	}
	return last
}

func TestPlanOrders(t *testing.T) {
	old := []string{"a", "a", "a", "a", "b", "b"}
	next := []string{"c", "c", "c", "c", "c", "c"}
	load := map[int]float64{1: 5, 2: 9, 5: 1}
	groups := func(steps []Step) [][]int {
		var out [][]int
		for _, s := range steps {
			var gs []int
			for _, mv := range s.Moves {
				gs = append(gs, mv.Group)
			}
			out = append(out, gs)
		}
		return out
	}
	for _, tc := range []struct {
		name string
		k    Knobs
		want [][]int
	}{
		{"all at once", AllAtOnce(), [][]int{{0, 1, 2, 3, 4, 5}}},
		{"fluid", Fluid(), [][]int{{0}, {1}, {2}, {3}, {4}, {5}}},
		{"keygroup batch 2", Knobs{Batch: 2}, [][]int{{0, 1, 4, 5}, {2, 3}}},
		{"reverse batch 3", Knobs{Order: OrderReverse, Batch: 3}, [][]int{{3, 2, 1, 5, 4}, {0}}},
		{"hottest batch 1", Knobs{Order: OrderHottest, Batch: 1}, [][]int{{2, 5}, {1, 4}, {0}, {3}}},
		{"hottest global 2", Knobs{Order: OrderHottest, Batch: 2, Global: true}, [][]int{{2, 1}, {5, 0}, {3, 4}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			steps, err := Plan(old, next, tc.k, load)
			if err != nil {
				t.Fatal(err)
			}
			if got := groups(steps); !slices.EqualFunc(got, tc.want, slices.Equal) {
				t.Errorf("steps %v, want %v", got, tc.want)
			}
		})
	}
}

func TestPlanReplicate(t *testing.T) {
	old := []string{"a", "a", "a", "a", "a", "a", "a", "a"}
	next := []string{"b", "b", "b", "b", "b", "b", "b", "b"}
	for _, tc := range []struct{ filter, want int }{{0, 0}, {1, 8}, {2, 4}, {4, 2}} {
		steps, err := Plan(old, next, Knobs{Replicate: tc.filter}, nil)
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, mv := range steps[0].Moves {
			if mv.Replicated {
				n++
			}
		}
		if n != tc.want {
			t.Errorf("filter %d: %d replicated, want %d", tc.filter, n, tc.want)
		}
	}
}

func TestPlanBadInput(t *testing.T) {
	for _, tc := range []struct {
		name     string
		old, new []string
		k        Knobs
		in       string
	}{
		{"order", []string{"a"}, []string{"b"}, Knobs{Order: "coldest"}, `order "coldest"`},
		{"batch", []string{"a"}, []string{"b"}, Knobs{Batch: -1}, "batch -1"},
		{"replicate", []string{"a"}, []string{"b"}, Knobs{Replicate: -2}, "replicate -2"},
		{"lengths", []string{"a"}, []string{"b", "b"}, Knobs{}, "1 key groups, the new one 2"},
		{"unassigned", []string{"a", "a"}, []string{"a", ""}, Knobs{}, "group 1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Plan(tc.old, tc.new, tc.k, nil)
			if !errors.Is(err, ErrBadPlan) || !contains(err.Error(), tc.in) {
				t.Fatalf("error %v, want ErrBadPlan naming %q", err, tc.in)
			}
		})
	}
}
