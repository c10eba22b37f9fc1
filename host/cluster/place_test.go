package cluster

import (
	"slices"
	"strings"
	"testing"

	"pgregory.net/rapid"
)

// contains reports whether s holds sub.
func contains(s, sub string) bool { return strings.Contains(s, sub) }

// counts returns how many groups each of hosts owns in owners.
func counts(owners []string, hosts []string) map[string]int {
	c := make(map[string]int, len(hosts))
	for _, h := range hosts {
		c[h] = 0
	}
	for _, h := range owners {
		if _, ok := c[h]; ok {
			c[h]++
		}
	}
	return c
}

// balanced reports whether every group is owned by one of hosts and the
// hosts' counts are within one of each other.
func balanced(owners []string, hosts []string) bool {
	c := counts(owners, hosts)
	lo, hi := len(owners), 0
	total := 0
	for _, n := range c {
		lo, hi = min(lo, n), max(hi, n)
		total += n
	}
	return total == len(owners) && hi-lo <= 1
}

// drawHosts draws a non-empty set of live hosts.
func drawHosts(rt *rapid.T) []string {
	hs := rapid.SliceOfNDistinct(rapid.SampledFrom(hostNames[1:]), 1, len(hostNames)-1, rapid.ID[string]).Draw(rt, "hosts")
	slices.Sort(hs)
	return hs
}

func TestSpreadBalanced(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		n := rapid.IntRange(0, 300).Draw(rt, "groups")
		hosts := drawHosts(rt)
		owners := Spread(n, hosts)
		if len(owners) != n || !balanced(owners, hosts) {
			rt.Fatalf("Spread(%d, %v) = %v", n, hosts, owners)
		}
		for g, h := range owners {
			if h != hosts[g%len(hosts)] {
				rt.Fatalf("group %d on %q, not round robin", g, h)
			}
		}
	})
}

// minMoves is the fewest groups that must move to balance owners over
// hosts, found by trying every choice of the hosts that get the larger
// share: each host keeps at most its share of what it holds.
func minMoves(owners []string, hosts []string) int {
	c := counts(owners, hosts)
	q, r := len(owners)/len(hosts), len(owners)%len(hosts)
	best := -1
	for mask := 0; mask < 1<<len(hosts); mask++ {
		bigger := 0
		for i := range hosts {
			if mask&(1<<i) != 0 {
				bigger++
			}
		}
		if bigger != r {
			continue
		}
		kept := 0
		for i, h := range hosts {
			share := q
			if mask&(1<<i) != 0 {
				share++
			}
			kept += min(c[h], share)
		}
		best = max(best, kept)
	}
	return len(owners) - best
}

func TestRebalanceMinimal(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		n := rapid.IntRange(0, 60).Draw(rt, "groups")
		owners := drawTable(rt, n, "owners")
		before := slices.Clone(owners)
		hosts := drawHosts(rt)
		out := Rebalance(owners, hosts)
		if !slices.Equal(owners, before) {
			rt.Fatal("Rebalance changed its input")
		}
		if !balanced(out, hosts) {
			rt.Fatalf("Rebalance(%v, %v) = %v: not balanced", owners, hosts, out)
		}
		moved := 0
		for g := range out {
			if out[g] != owners[g] {
				moved++
			}
		}
		if want := minMoves(owners, hosts); moved != want {
			rt.Fatalf("Rebalance(%v, %v) = %v moves %d groups, the fewest is %d", owners, hosts, out, moved, want)
		}
		// A balanced table stays as it is.
		if again := Rebalance(out, hosts); !slices.Equal(again, out) {
			rt.Fatalf("Rebalance of a balanced table moved groups: %v -> %v", out, again)
		}
	})
}

func TestRebalanceJoinLeave(t *testing.T) {
	owners := Spread(12, []string{"a", "b"})
	joined := Rebalance(owners, []string{"a", "b", "c"})
	if c := counts(joined, []string{"a", "b", "c"}); c["a"] != 4 || c["b"] != 4 || c["c"] != 4 {
		t.Fatalf("after c joins: %v", c)
	}
	left := Rebalance(joined, []string{"a", "c"})
	if c := counts(left, []string{"a", "c"}); c["a"] != 6 || c["c"] != 6 {
		t.Fatalf("after b leaves: %v", c)
	}
	for g := range left {
		if joined[g] != "b" && left[g] != joined[g] {
			t.Errorf("group %d moved from %q to %q though its host stayed", g, joined[g], left[g])
		}
	}
	if none := Rebalance(left, nil); !slices.Equal(none, make([]string, 12)) {
		t.Errorf("with no hosts: %v", none)
	}
}

// TestBalancedWhole checks a Whole table's rebalance: every group stays
// with its owner while it is live, and goes to one live host, in one valid
// step, when it is not; a table that is not Whole is Rebalance's.
func TestBalancedWhole(t *testing.T) {
	a := NewAssignment(8)
	a.Owners = Spread(8, []string{"b"})
	if got, want := a.Balanced([]string{"a", "b", "c"}), Rebalance(a.Owners, []string{"a", "b", "c"}); !slices.Equal(got, want) || slices.Equal(got, a.Owners) {
		t.Errorf("not whole: %v, want Rebalance's %v", got, want)
	}
	a.Whole = true
	if got := a.Balanced([]string{"c", "a", "b"}); !slices.Equal(got, a.Owners) {
		t.Errorf("owner live: %v, want every group kept on b", got)
	}
	target := a.Balanced([]string{"d", "c"})
	if want := Spread(8, []string{"c"}); !slices.Equal(target, want) {
		t.Fatalf("owner gone: %v, want every group on c", target)
	}
	if got := a.Balanced(nil); !slices.Equal(got, make([]string, 8)) {
		t.Errorf("no live host: %v, want every group unassigned", got)
	}
	steps, err := Plan(a.Owners, target, AllAtOnce(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Begin("m", steps); err != nil {
		t.Fatal(err)
	}
	if err := a.Validate([]string{"b", "c"}); err != nil {
		t.Errorf("a whole move in one step: %v", err)
	}
}
