package state

import "slices"

// Generation returns the generation of key group kg: the number of
// Prepares (Commits) that changed the group since the data directory was
// created. A Prepare changes a group when it finds a dirty entry of the
// group in any table, a dirty timer of it, or its import or drop (an
// entry written and rolled back is not dirty). Generations are written in
// the same Pebble batch as the changes they count, so after Open a
// group's generation is that of the committed state Open found.
//
// The generation counts the Prepares of one data directory: equal
// generations of one group in one store mean equal committed content, but
// generations of different stores are unrelated. Generation changes at
// Prepare, so it describes the group's state in memory, which the
// PendingCommit makes durable. kg must be in 0..KeyGroups()-1.
func (s *Store) Generation(kg int) uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.gens[kg]
}

// Generations returns a copy of every key group's generation, indexed by
// key group; ChangedSince takes it back.
func (s *Store) Generations() []uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.gens)
}

// ChangedSince returns, in increasing order, the key groups whose
// generation differs from gens[kg]: those changed since gens was taken
// with Generations. A key group beyond the end of gens is compared with 0,
// so ChangedSince(nil) returns every group ever changed; entries of gens
// beyond KeyGroups are ignored.
func (s *Store) ChangedSince(gens []uint64) []int {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []int
	for kg, g := range s.gens {
		var was uint64
		if kg < len(gens) {
			was = gens[kg]
		}
		if g != was {
			out = append(out, kg)
		}
	}
	return out
}
