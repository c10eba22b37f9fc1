package cluster

import (
	"cmp"
	"slices"
)

// Spread returns a table of groups key groups spread round robin over
// hosts in sorted order: group g goes to the (g mod n)-th host. Every host
// gets groups/n or groups/n+1 groups. With no hosts every group is
// unassigned. Duplicate and empty host ids are ignored.
func Spread(groups int, hosts []string) []string {
	hs := hostSet(hosts)
	owners := make([]string, groups)
	if len(hs) == 0 {
		return owners
	}
	for g := range owners {
		owners[g] = hs[g%len(hs)]
	}
	return owners
}

// hostSet returns hosts sorted, without duplicates or empty ids.
func hostSet(hosts []string) []string {
	hs := slices.Clone(hosts)
	slices.Sort(hs)
	hs = slices.Compact(hs)
	if len(hs) > 0 && hs[0] == "" {
		hs = hs[1:]
	}
	return hs
}

// Rebalance returns a new table for owners over the live hosts: every host
// ends within one group of every other, and the fewest groups move that can
// get there. Groups of hosts not in hosts (and unassigned ones) must move,
// and go first; then each host over its share gives up its highest groups,
// and hosts under their share take them, in host order and group order. A
// host that joins takes its share, a host that leaves gives its groups
// away. With no hosts every group is unassigned. owners is not changed.
//
// The shares: with n groups over h hosts, r = n mod h hosts hold n/h+1
// groups and the others n/h. The larger shares go to the hosts that hold the
// most groups now (ties by host id), which keeps the most groups in place.
func Rebalance(owners []string, hosts []string) []string {
	hs := hostSet(hosts)
	out := make([]string, len(owners))
	if len(hs) == 0 {
		return out
	}
	held := make(map[string][]int, len(hs))
	for _, h := range hs {
		held[h] = nil
	}
	var free []int // groups that must move: their host is gone, or none
	for g, h := range owners {
		if _, ok := held[h]; ok {
			held[h] = append(held[h], g)
		} else {
			free = append(free, g)
		}
	}
	// The larger shares go to the hosts that hold the most.
	byHeld := slices.Clone(hs)
	slices.SortStableFunc(byHeld, func(a, b string) int { return cmp.Compare(len(held[b]), len(held[a])) })
	q, r := len(owners)/len(hs), len(owners)%len(hs)
	share := make(map[string]int, len(hs))
	for i, h := range byHeld {
		share[h] = q
		if i < r {
			share[h] = q + 1
		}
	}
	// Hosts over their share give up their highest groups, which are
	// placed after those that must move.
	var excess []int
	for _, h := range hs {
		gs := held[h]
		if len(gs) > share[h] {
			excess = append(excess, gs[share[h]:]...)
			held[h] = gs[:share[h]]
		}
		for _, g := range held[h] {
			out[g] = h
		}
	}
	slices.Sort(excess)
	free = append(free, excess...)
	// Hosts under their share take the free groups.
	for _, h := range hs {
		for n := len(held[h]); n < share[h]; n++ {
			out[free[0]] = h
			free = free[1:]
		}
	}
	return out
}
