package cluster

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/sluicehq/sluice/state"
)

// Assignment is the table of key groups to hosts, as one revision of the
// bucket's assignment key holds it, with the migration in progress, if any.
//
// The table keeps these invariants, which Validate checks:
//   - len(Owners) == KeyGroups, and KeyGroups is between 1 and
//     state.MaxKeyGroups;
//   - every owner is "" (unassigned) or a host that has joined the cluster;
//   - a migration names each group at most once, and only groups of the
//     table; a move goes from one host to another;
//   - the steps before Current are done, those after it planned, and each
//     step's state is the least of its moves' states (or done once they are
//     all installed);
//   - Owners agrees with the moves: a group whose move is planned or
//     released is still owned by its source, one whose move is installed
//     by its destination;
//   - the versions record names each operator's module by a SHA-256, with
//     an epoch no later than the record's (see Versions);
//   - the workers record gives each operator a count between 1 and
//     MaxWorkers, on every host or on hosts that have joined, with an
//     epoch no later than the record's (see Workers);
//   - the pool names hosts that have joined, sorted, each once, and no
//     move that is not installed brings a group to a pool host (see
//     Pool);
//   - a Whole table gives every group to one host (or none), and its
//     migration moves them all together: one step, every group, from
//     one host to one other.
type Assignment struct {
	// KeyGroups is the number of key groups, fixed for the pipeline.
	KeyGroups int `json:"key_groups"`
	// Owners holds the host id of each key group; "" is unassigned.
	Owners []string `json:"owners"`
	// Migration is the migration in progress; nil when none is.
	Migration *Migration `json:"migration,omitempty"`
	// Versions is the module each swapped operator runs on every host;
	// nil until the first swap or rollback (see Versions).
	Versions *Versions `json:"versions,omitempty"`
	// Workers is the number of workers each scaled operator runs on the
	// hosts; nil until the first scale (see Workers).
	Workers *Workers `json:"workers,omitempty"`
	// Pool is the host pool: hosts that joined and are given no key
	// groups; nil until the first host joins the pool (see Pool).
	Pool *Pool `json:"pool,omitempty"`
	// Whole keeps the key groups together on one host: the pipeline's
	// state is not partitioned by its input's key groups (a transactional
	// operator's transaction routed by one group's key writes keys of
	// others, and its scheduler is one host's), so its groups move only
	// all at once. The hosts set it when they join.
	Whole bool `json:"whole,omitempty"`
	// Placed is the host every key group was placed on (sluice cluster
	// place: the pipeline's operators, or a stage's, run there): while it
	// is live and active, a rebalance leaves the groups on it (Balanced).
	// "" when the groups are spread. A move or a rebalance asked for by
	// a person forgets it.
	Placed string `json:"placed,omitempty"`
	// Revision is the bucket revision the table was read at (0: the
	// bucket has no table yet). It is not part of the stored value.
	Revision uint64 `json:"-"`
}

// Migration is a move of key groups between hosts, cut into steps that run
// one after the other.
type Migration struct {
	// ID names the migration in logs and in the table.
	ID string `json:"id"`
	// Steps are the steps, in the order they run.
	Steps []Step `json:"steps"`
	// Current is the index of the step running now.
	Current int `json:"current"`
}

// Step is one step of a migration: the moves it makes at once, and how far
// it has come.
type Step struct {
	// Moves are the key groups the step moves.
	Moves []Move `json:"moves"`
	// State is how far the step has come: the least of its moves' states
	// until the step is done.
	State StepState `json:"state"`
}

// Move is one key group moving from one host to another.
type Move struct {
	// Group is the key group.
	Group int `json:"group"`
	// From is the host that owns the group before the move ("" if none).
	From string `json:"from"`
	// To is the host that owns the group after the move.
	To string `json:"to"`
	// Replicated marks a group whose state the destination keeps a warm
	// copy of ahead of the move (Spacker's replication), so its move ships
	// only what changed since that copy.
	Replicated bool `json:"replicated,omitempty"`
	// State is how far the move has come: planned, released or installed.
	State StepState `json:"state"`
}

// StepState is how far a step or a move of a migration has come. The states
// are ordered: planned, released, installed, done.
type StepState string

// The states of a step, in order. A move goes from StepPlanned to
// StepReleased to StepInstalled; a step's state is the least of its moves'
// until Advance marks it StepDone.
const (
	// StepPlanned: the source still reads the group.
	StepPlanned StepState = "planned"
	// StepReleased: the source has stopped reading the group, committed,
	// and shipped its state with its floors.
	StepReleased StepState = "released"
	// StepInstalled: the destination has installed the group's state and
	// reads it from its floors; it owns the group.
	StepInstalled StepState = "installed"
	// StepDone: every move of the step is installed and the step is over.
	StepDone StepState = "done"
)

// rank orders the states; 0 is not a state.
func (s StepState) rank() int {
	switch s {
	case StepPlanned:
		return 1
	case StepReleased:
		return 2
	case StepInstalled:
		return 3
	case StepDone:
		return 4
	}
	return 0
}

// ErrInvalidAssignment is matched, with errors.Is, by the error of a table
// that breaks one of Assignment's invariants: an entry edited by hand into
// a state the hosts cannot apply, or a change that would write one.
var ErrInvalidAssignment = errors.New("invalid assignment")

// ErrMigration is matched, with errors.Is, by the error of a migration
// change that does not fit the table: a migration begun while another is in
// progress, a move marked out of order, a step advanced before its moves are
// installed.
var ErrMigration = errors.New("migration change refused")

// InvalidError is the error of a table that breaks an invariant. It
// matches ErrInvalidAssignment.
type InvalidError struct {
	// Key is the bucket and key the table was read from, or "" for a table
	// that was not read from a bucket.
	Key string
	// Field is the field at fault, as the JSON spells it, e.g.
	// "owners[5]" or "migration.steps[1].moves[0].group".
	Field string
	// Msg says what is wrong.
	Msg string
}

// Error implements error.
func (e *InvalidError) Error() string {
	var b strings.Builder
	b.WriteString("cluster: invalid assignment")
	if e.Key != "" {
		b.WriteString(" in " + e.Key)
	}
	if e.Field != "" {
		b.WriteString(": " + e.Field)
	}
	b.WriteString(": " + e.Msg)
	return b.String()
}

// Unwrap returns ErrInvalidAssignment.
func (e *InvalidError) Unwrap() error { return ErrInvalidAssignment }

func invalid(field, format string, args ...any) error {
	return &InvalidError{Field: field, Msg: fmt.Sprintf(format, args...)}
}

// NewAssignment returns a table of groups key groups, every one unassigned.
func NewAssignment(groups int) *Assignment {
	return &Assignment{KeyGroups: groups, Owners: make([]string, groups)}
}

// Clone returns a deep copy of a.
func (a *Assignment) Clone() *Assignment {
	c := *a
	c.Owners = slices.Clone(a.Owners)
	c.Versions = a.Versions.clone()
	c.Workers = a.Workers.clone()
	c.Pool = a.Pool.clone()
	if a.Migration != nil {
		m := *a.Migration
		m.Steps = make([]Step, len(a.Migration.Steps))
		for i, s := range a.Migration.Steps {
			m.Steps[i] = Step{Moves: slices.Clone(s.Moves), State: s.State}
		}
		c.Migration = &m
	}
	return &c
}

// Validate checks a's invariants (see Assignment) with hosts as the hosts
// that may own groups, and returns an *InvalidError, matching
// ErrInvalidAssignment, naming the first field at fault.
func (a *Assignment) Validate(hosts []string) error {
	if a.KeyGroups < 1 || a.KeyGroups > state.MaxKeyGroups {
		return invalid("key_groups", "%d is not between 1 and %d", a.KeyGroups, state.MaxKeyGroups)
	}
	if len(a.Owners) != a.KeyGroups {
		return invalid("owners", "%d entries for %d key groups", len(a.Owners), a.KeyGroups)
	}
	known := func(h string) bool { return slices.Contains(hosts, h) }
	for g, h := range a.Owners {
		if h != "" && !known(h) {
			return invalid(fmt.Sprintf("owners[%d]", g), "host %q has never joined the cluster (hosts: %s)", h, hostList(hosts))
		}
	}
	if a.Placed != "" && !known(a.Placed) {
		return invalid("placed", "host %q has never joined the cluster (hosts: %s)", a.Placed, hostList(hosts))
	}
	if err := a.Versions.validate(); err != nil {
		return err
	}
	if err := a.Workers.validate(hosts); err != nil {
		return err
	}
	if err := a.validatePool(hosts); err != nil {
		return err
	}
	if err := a.validateWhole(); err != nil {
		return err
	}
	m := a.Migration
	if m == nil {
		return nil
	}
	if m.ID == "" {
		return invalid("migration.id", "empty")
	}
	if len(m.Steps) == 0 {
		return invalid("migration.steps", "a migration has at least one step")
	}
	if m.Current < 0 || m.Current >= len(m.Steps) {
		return invalid("migration.current", "%d is not a step (0 to %d)", m.Current, len(m.Steps)-1)
	}
	seen := make(map[int]string)
	for i, s := range m.Steps {
		sf := fmt.Sprintf("migration.steps[%d]", i)
		if len(s.Moves) == 0 {
			return invalid(sf+".moves", "a step moves at least one group")
		}
		least := StepDone
		for j, mv := range s.Moves {
			f := fmt.Sprintf("%s.moves[%d]", sf, j)
			if mv.Group < 0 || mv.Group >= a.KeyGroups {
				return invalid(f+".group", "%d is not a key group of the table (0 to %d)", mv.Group, a.KeyGroups-1)
			}
			if prev, ok := seen[mv.Group]; ok {
				return invalid(f+".group", "group %d is named twice (also by %s)", mv.Group, prev)
			}
			seen[mv.Group] = f
			if mv.To == "" {
				return invalid(f+".to", "empty: a move needs a destination host")
			}
			if !known(mv.To) {
				return invalid(f+".to", "host %q has never joined the cluster (hosts: %s)", mv.To, hostList(hosts))
			}
			if mv.From != "" && !known(mv.From) {
				return invalid(f+".from", "host %q has never joined the cluster (hosts: %s)", mv.From, hostList(hosts))
			}
			if mv.From == mv.To {
				return invalid(f, "moves group %d from %q to itself", mv.Group, mv.To)
			}
			switch mv.State {
			case StepPlanned, StepReleased:
				if a.Owners[mv.Group] != mv.From {
					return invalid(fmt.Sprintf("owners[%d]", mv.Group), "%q, but %s is %s, so its source %q still owns the group", a.Owners[mv.Group], f, mv.State, mv.From)
				}
			case StepInstalled:
				if a.Owners[mv.Group] != mv.To {
					return invalid(fmt.Sprintf("owners[%d]", mv.Group), "%q, but %s is installed, so its destination %q owns the group", a.Owners[mv.Group], f, mv.To)
				}
			default:
				return invalid(f+".state", "%q is not a move state (planned, released, installed)", mv.State)
			}
			if mv.State.rank() < least.rank() {
				least = mv.State
			}
		}
		if s.State.rank() == 0 {
			return invalid(sf+".state", "%q is not a step state (planned, released, installed, done)", s.State)
		}
		want := least
		if least == StepInstalled && s.State == StepDone {
			want = StepDone
		}
		if s.State != want {
			return invalid(sf+".state", "%s, but its moves say %s", s.State, want)
		}
		switch {
		case i < m.Current && s.State != StepDone:
			return invalid(sf+".state", "%s, but the step is before the current one (%d), so it is done", s.State, m.Current)
		case i > m.Current && s.State != StepPlanned:
			return invalid(sf+".state", "%s, but the step is after the current one (%d), so it is planned", s.State, m.Current)
		}
	}
	return nil
}

// validateWhole checks a Whole table: every group on one host, and a
// migration that moves them all in one step from one host to another.
func (a *Assignment) validateWhole() error {
	if !a.Whole {
		return nil
	}
	const why = "the key groups live on one host together (whole: the pipeline's transactional operator runs on one host)"
	m := a.Migration
	if m == nil {
		for g, h := range a.Owners {
			if h != a.Owners[0] {
				return invalid(fmt.Sprintf("owners[%d]", g), "%q, but owners[0] is %q: %s", h, a.Owners[0], why)
			}
		}
		return nil
	}
	if len(m.Steps) != 1 {
		return invalid("migration.steps", "%d steps: %s, so a migration moves them all in one step", len(m.Steps), why)
	}
	moves := m.Steps[0].Moves
	if len(moves) != a.KeyGroups {
		return invalid("migration.steps[0].moves", "%d moves of %d key groups: %s, so a migration moves every group", len(moves), a.KeyGroups, why)
	}
	for j, mv := range moves {
		if mv.From != moves[0].From || mv.To != moves[0].To {
			return invalid(fmt.Sprintf("migration.steps[0].moves[%d]", j), "moves group %d from %q to %q, but moves[0] from %q to %q: %s, so they move from one host to one other",
				mv.Group, mv.From, mv.To, moves[0].From, moves[0].To, why)
		}
	}
	return nil
}

// Balanced returns the owners a rebalance over the live hosts gives a's
// groups: Rebalance's; for a table whose groups were placed on a host
// (Placed) that is among hosts, every group on it; for a Whole table every
// group on one host: the present owner while it is among hosts, else the
// first of hosts in sorted order. a is not changed.
func (a *Assignment) Balanced(hosts []string) []string {
	if a.Placed != "" && slices.Contains(hosts, a.Placed) {
		return Spread(len(a.Owners), []string{a.Placed})
	}
	if !a.Whole {
		return Rebalance(a.Owners, hosts)
	}
	hs := hostSet(hosts)
	if len(hs) == 0 {
		return make([]string, len(a.Owners))
	}
	to := hs[0]
	if len(a.Owners) > 0 && slices.Contains(hs, a.Owners[0]) {
		to = a.Owners[0]
	}
	return Spread(len(a.Owners), []string{to})
}

// hostList formats hosts for an error message.
func hostList(hosts []string) string {
	if len(hosts) == 0 {
		return "none"
	}
	return strings.Join(hosts, ", ")
}

// Begin starts a migration with id and steps (as Plan returns them): every
// step and move is set planned and the first step is current. It fails,
// matching ErrMigration, while another migration is in progress or when
// steps is empty.
func (a *Assignment) Begin(id string, steps []Step) error {
	if a.Migration != nil {
		return fmt.Errorf("cluster: migration %q: %w: migration %q is in progress (step %d of %d)", id, ErrMigration, a.Migration.ID, a.Migration.Current+1, len(a.Migration.Steps))
	}
	if len(steps) == 0 {
		return fmt.Errorf("cluster: migration %q: %w: no steps (no group changes owner)", id, ErrMigration)
	}
	m := &Migration{ID: id, Steps: make([]Step, len(steps))}
	for i, s := range steps {
		moves := slices.Clone(s.Moves)
		for j := range moves {
			moves[j].State = StepPlanned
		}
		m.Steps[i] = Step{Moves: moves, State: StepPlanned}
	}
	a.Migration = m
	return nil
}

// Mark moves group's move in the current step on to state: StepReleased
// once its source has released it, StepInstalled once its destination has
// installed it (which makes the destination its owner). A move goes one
// state at a time; anything else fails, matching ErrMigration.
func (a *Assignment) Mark(group int, to StepState) error {
	m := a.Migration
	if m == nil {
		return fmt.Errorf("cluster: group %d: %w: no migration in progress", group, ErrMigration)
	}
	s := &m.Steps[m.Current]
	i := slices.IndexFunc(s.Moves, func(mv Move) bool { return mv.Group == group })
	if i < 0 {
		return fmt.Errorf("cluster: migration %q: %w: group %d does not move in step %d", m.ID, ErrMigration, group, m.Current)
	}
	mv := &s.Moves[i]
	if to != StepReleased && to != StepInstalled || to.rank() != mv.State.rank()+1 {
		return fmt.Errorf("cluster: migration %q: group %d: %w: %s cannot follow %s", m.ID, group, ErrMigration, to, mv.State)
	}
	mv.State = to
	if to == StepInstalled {
		a.Owners[group] = mv.To
	}
	s.State = leastState(s.Moves)
	return nil
}

// Cancel takes group's move out of the migration in progress, in whichever
// step it is, unless the move is installed: the group stays with the move's
// source, which owns it in the table throughout a move. A source that had
// released the group takes it back from the state it released (see
// migrate.Host.Step). A step left with no move is removed; when that was
// the current step, the next one becomes current, and when it was the
// last, the migration is over and removed from the table, and Cancel
// reports true. The current step's state is recomputed from the moves
// left, so a step whose other moves are all installed can be advanced.
// Cancel fails, matching ErrMigration, when no migration is in progress,
// no step moves group, or its move is installed.
func (a *Assignment) Cancel(group int) (finished bool, err error) {
	m := a.Migration
	if m == nil {
		return false, fmt.Errorf("cluster: group %d: %w: no migration in progress", group, ErrMigration)
	}
	for i := range m.Steps {
		s := &m.Steps[i]
		j := slices.IndexFunc(s.Moves, func(mv Move) bool { return mv.Group == group })
		if j < 0 {
			continue
		}
		if s.Moves[j].State == StepInstalled {
			return false, fmt.Errorf("cluster: migration %q: group %d: %w: its move is installed", m.ID, group, ErrMigration)
		}
		s.Moves = slices.Delete(s.Moves, j, j+1)
		if len(s.Moves) > 0 {
			if i == m.Current {
				s.State = leastState(s.Moves)
			}
			return false, nil
		}
		m.Steps = slices.Delete(m.Steps, i, i+1)
		switch {
		case len(m.Steps) == 0:
			a.Migration = nil
			return true, nil
		case i < m.Current:
			m.Current--
		case i == m.Current && m.Current == len(m.Steps):
			// The last step went, and every step before it is done.
			a.Migration = nil
			return true, nil
		}
		return false, nil
	}
	return false, fmt.Errorf("cluster: migration %q: %w: group %d does not move", m.ID, ErrMigration, group)
}

// leastState is the state of a step whose moves are moves: the least of
// theirs.
func leastState(moves []Move) StepState {
	least := StepInstalled
	for _, mv := range moves {
		if mv.State.rank() < least.rank() {
			least = mv.State
		}
	}
	return least
}

// Advance marks the current step done, once all its moves are installed,
// and makes the next one current; after the last step the migration is
// over and removed from the table, and Advance reports true.
func (a *Assignment) Advance() (finished bool, err error) {
	m := a.Migration
	if m == nil {
		return false, fmt.Errorf("cluster: %w: no migration in progress", ErrMigration)
	}
	s := &m.Steps[m.Current]
	if s.State != StepInstalled {
		return false, fmt.Errorf("cluster: migration %q: %w: step %d is %s, not installed", m.ID, ErrMigration, m.Current, s.State)
	}
	s.State = StepDone
	if m.Current == len(m.Steps)-1 {
		a.Migration = nil
		return true, nil
	}
	m.Current++
	return false, nil
}

// decodeAssignment reads a table as the bucket stores it, refusing unknown
// fields and anything after the JSON value.
func decodeAssignment(data []byte) (*Assignment, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var a Assignment
	if err := dec.Decode(&a); err != nil {
		return nil, &InvalidError{Msg: fmt.Sprintf("not a table this build reads: %v", err)}
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, &InvalidError{Msg: "data after the JSON value"}
	}
	return &a, nil
}
