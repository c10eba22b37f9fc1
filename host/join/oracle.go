package join

import (
	"cmp"
	"slices"
)

// NestedLoop joins r and s by comparing every pair: the oracle the kernels
// are tested against, quadratic, for small inputs. The matches come in r's
// order, then s's.
func NestedLoop(r, s []Tuple) []Match {
	var ms []Match
	for i := range r {
		for j := range s {
			if r[i].Key == s[j].Key {
				ms = append(ms, Match{R: r[i].Ref, S: s[j].Ref, TS: max(r[i].TS, s[j].TS)})
			}
		}
	}
	return ms
}

// CountMatches returns the number of matches of r and s without forming
// them: the sum over keys of |R_k| * |S_k|, from a count of each key of
// r. The independent count large inputs are checked against.
func CountMatches(r, s []Tuple) uint64 {
	counts := make(map[uint64]uint64, len(r))
	for i := range r {
		counts[r[i].Key]++
	}
	var n uint64
	for i := range s {
		n += counts[s[i].Key]
	}
	return n
}

// SortMatches sorts ms by R, then S, then TS: two joins' outputs are equal
// as multisets when they are equal sorted.
func SortMatches(ms []Match) {
	slices.SortFunc(ms, func(a, b Match) int {
		if c := cmp.Compare(a.R, b.R); c != 0 {
			return c
		}
		if c := cmp.Compare(a.S, b.S); c != 0 {
			return c
		}
		return cmp.Compare(a.TS, b.TS)
	})
}
