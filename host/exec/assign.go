package exec

import (
	"encoding/binary"
	"errors"
	"fmt"
	"slices"

	"github.com/sluicehq/sluice/state"
)

// assignment maps each key group of a keyed operator to the worker that
// owns it. It is versioned data, not arithmetic: a change of the worker
// count reassigns groups (only those that must move) and bumps the
// version, and the table is committed with the state, so a restart finds
// each group where the last committed batch left it.
//
// An assignment is never changed in place: a change makes a new one, so a
// session's ownership check always reads a whole table.
type assignment struct {
	version uint64
	workers int
	owners  []uint16 // owners[kg] is the worker of key group kg
}

// newAssignment spreads groups key groups over workers round-robin (group
// g to worker g mod workers).
func newAssignment(groups, workers int) *assignment {
	a := &assignment{version: 1, workers: workers, owners: make([]uint16, groups)}
	for kg := range a.owners {
		a.owners[kg] = uint16(kg % workers)
	}
	return a
}

// owner returns the worker of key group kg.
func (a *assignment) owner(kg int) int { return int(a.owners[kg]) }

// groupsOf returns the key groups worker w owns, in order.
func (a *assignment) groupsOf(w int) []int {
	var gs []int
	for kg, o := range a.owners {
		if int(o) == w {
			gs = append(gs, kg)
		}
	}
	return gs
}

// count returns how many key groups worker w owns.
func (a *assignment) count(w int) int {
	n := 0
	for _, o := range a.owners {
		if int(o) == w {
			n++
		}
	}
	return n
}

// rebalance returns the assignment over n workers that moves the fewest
// groups it can while leaving every worker within one group of the
// others: the groups of workers that go away, and those that overloaded
// workers give up, go to the least loaded workers, in key-group order.
func (a *assignment) rebalance(n int) *assignment {
	b := &assignment{version: a.version + 1, workers: n, owners: append([]uint16(nil), a.owners...)}
	groups := len(b.owners)
	load := make([]int, n)
	var free []int
	for kg, o := range b.owners {
		if int(o) >= n {
			free = append(free, kg)
			continue
		}
		load[o]++
	}
	most := (groups + n - 1) / n
	for kg := groups - 1; kg >= 0; kg-- {
		if o := int(b.owners[kg]); o < n && load[o] > most {
			load[o]--
			free = append(free, kg)
			b.owners[kg] = uint16(n) // unassigned for now
		}
	}
	least := func() int {
		w := 0
		for i := range load {
			if load[i] < load[w] {
				w = i
			}
		}
		return w
	}
	// Free groups in key-group order, so the result does not depend on
	// the order they were freed in.
	slices.Sort(free)
	for _, kg := range free {
		w := least()
		b.owners[kg] = uint16(w)
		load[w]++
	}
	// Even out what remains: from the most loaded to the least, one
	// group at a time (only when groups do not divide evenly and the
	// removed workers' groups landed unevenly).
	for {
		hi, lo := 0, least()
		for i := range load {
			if load[i] > load[hi] {
				hi = i
			}
		}
		if load[hi]-load[lo] <= 1 {
			return b
		}
		for kg := groups - 1; kg >= 0; kg-- {
			if int(b.owners[kg]) == hi {
				b.owners[kg] = uint16(lo)
				load[hi]--
				load[lo]++
				break
			}
		}
	}
}

// move returns the assignment with the groups of moves (key group ->
// worker) given to those workers, or a itself when no group changes
// owner. The caller has checked the groups and workers.
func (a *assignment) move(moves map[int]int) *assignment {
	b := &assignment{version: a.version + 1, workers: a.workers, owners: slices.Clone(a.owners)}
	changed := false
	for kg, w := range moves {
		if int(b.owners[kg]) != w {
			b.owners[kg] = uint16(w)
			changed = true
		}
	}
	if !changed {
		return a
	}
	return b
}

// assignmentMeta is the store metadata under which an operator's
// assignment is committed.
func assignmentMeta(operator string) string { return "exec/assignment/" + operator }

// encode is the committed form: version u64, workers u16, group count
// u32, then one u16 owner per group, big-endian.
func (a *assignment) encode() []byte {
	b := make([]byte, 0, 14+2*len(a.owners))
	b = binary.BigEndian.AppendUint64(b, a.version)
	b = binary.BigEndian.AppendUint16(b, uint16(a.workers))
	b = binary.BigEndian.AppendUint32(b, uint32(len(a.owners)))
	for _, o := range a.owners {
		b = binary.BigEndian.AppendUint16(b, o)
	}
	return b
}

var errBadAssignment = errors.New("exec: malformed key-group assignment")

func decodeAssignment(b []byte) (*assignment, error) {
	if len(b) < 14 {
		return nil, fmt.Errorf("%w: %d bytes", errBadAssignment, len(b))
	}
	a := &assignment{version: binary.BigEndian.Uint64(b), workers: int(binary.BigEndian.Uint16(b[8:]))}
	n := int(binary.BigEndian.Uint32(b[10:]))
	if len(b) != 14+2*n || a.workers < 1 {
		return nil, fmt.Errorf("%w: %d bytes for %d groups and %d workers", errBadAssignment, len(b), n, a.workers)
	}
	a.owners = make([]uint16, n)
	for i := range a.owners {
		a.owners[i] = binary.BigEndian.Uint16(b[14+2*i:])
		if int(a.owners[i]) >= a.workers {
			return nil, fmt.Errorf("%w: group %d owned by worker %d of %d", errBadAssignment, i, a.owners[i], a.workers)
		}
	}
	return a, nil
}

// loadAssignment returns the operator's committed assignment, rebalanced
// to workers if the pipeline file changed its parallelism, or a new one.
// The result is staged for the next commit.
func loadAssignment(store *state.Store, operator string, workers int) (*assignment, error) {
	var a *assignment
	if b, ok := store.Meta(assignmentMeta(operator)); ok {
		d, err := decodeAssignment(b)
		if err != nil {
			return nil, fmt.Errorf("exec: operator %q: %w", operator, err)
		}
		if len(d.owners) == store.KeyGroups() {
			a = d
		}
	}
	switch {
	case a == nil:
		a = newAssignment(store.KeyGroups(), workers)
	case a.workers != workers:
		a = a.rebalance(workers)
	default:
		return a, nil
	}
	a.save(store, operator)
	return a, nil
}

// save stages a for the store's next commit.
func (a *assignment) save(store *state.Store, operator string) {
	store.SetMeta(assignmentMeta(operator), a.encode())
}
