package cluster

import (
	"errors"
	"slices"
	"testing"

	"pgregory.net/rapid"
)

// invalidTables are tables a person could edit the bucket into, each with
// the field and words its error must name. Every one is over 4 groups and
// hosts a and b; valid() is the table they start from.
var invalidTables = []struct {
	name   string
	json   string
	field  string
	reason string
}{
	{"group count", `{"key_groups":5,"owners":["a","a","b","b","a"]}`, "key_groups", "pipeline"},
	{"owners length", `{"key_groups":4,"owners":["a","a","b"]}`, "owners", "3 entries for 4 key groups"},
	{"unknown host", `{"key_groups":4,"owners":["a","a","zed","b"]}`, "owners[2]", `"zed" has never joined`},
	{"placed on an unknown host", `{"key_groups":4,"owners":["a","a","a","a"],"placed":"zed"}`, "placed", `"zed" has never joined`},
	{"unknown field", `{"key_groups":4,"owners":["a","a","b","b"],"owner":"a"}`, "", `unknown field "owner"`},
	{"trailing data", `{"key_groups":4,"owners":["a","a","b","b"]} {}`, "", "data after the JSON value"},
	{"not json", `key_groups: 4`, "", "not a table this build reads"},
	{"group named twice", `{"key_groups":4,"owners":["a","a","b","b"],"migration":{"id":"m","current":0,"steps":[
		{"state":"planned","moves":[{"group":1,"from":"a","to":"b","state":"planned"}]},
		{"state":"planned","moves":[{"group":1,"from":"a","to":"b","state":"planned"}]}]}}`,
		"migration.steps[1].moves[0].group", "group 1 is named twice (also by migration.steps[0].moves[0])"},
	{"group not in table", `{"key_groups":4,"owners":["a","a","b","b"],"migration":{"id":"m","current":0,"steps":[
		{"state":"planned","moves":[{"group":4,"from":"a","to":"b","state":"planned"}]}]}}`,
		"migration.steps[0].moves[0].group", "4 is not a key group of the table (0 to 3)"},
	{"step after current not planned", `{"key_groups":4,"owners":["a","a","b","b"],"migration":{"id":"m","current":0,"steps":[
		{"state":"planned","moves":[{"group":0,"from":"a","to":"b","state":"planned"}]},
		{"state":"released","moves":[{"group":1,"from":"a","to":"b","state":"released"}]}]}}`,
		"migration.steps[1].state", "after the current one (0)"},
	{"step before current not done", `{"key_groups":4,"owners":["b","a","b","b"],"migration":{"id":"m","current":1,"steps":[
		{"state":"installed","moves":[{"group":0,"from":"a","to":"b","state":"installed"}]},
		{"state":"planned","moves":[{"group":1,"from":"a","to":"b","state":"planned"}]}]}}`,
		"migration.steps[0].state", "before the current one (1)"},
	{"step state ahead of its moves", `{"key_groups":4,"owners":["a","a","b","b"],"migration":{"id":"m","current":0,"steps":[
		{"state":"installed","moves":[{"group":0,"from":"a","to":"b","state":"released"}]}]}}`,
		"migration.steps[0].state", "installed, but its moves say released"},
	{"installed but owner is the source", `{"key_groups":4,"owners":["a","a","b","b"],"migration":{"id":"m","current":0,"steps":[
		{"state":"installed","moves":[{"group":0,"from":"a","to":"b","state":"installed"}]}]}}`,
		"owners[0]", `its destination "b" owns the group`},
	{"unknown state", `{"key_groups":4,"owners":["a","a","b","b"],"migration":{"id":"m","current":0,"steps":[
		{"state":"planned","moves":[{"group":0,"from":"a","to":"b","state":"moving"}]}]}}`,
		"migration.steps[0].moves[0].state", `"moving" is not a move state`},
	{"current out of range", `{"key_groups":4,"owners":["a","a","b","b"],"migration":{"id":"m","current":3,"steps":[
		{"state":"planned","moves":[{"group":0,"from":"a","to":"b","state":"planned"}]}]}}`,
		"migration.current", "3 is not a step (0 to 0)"},
	{"move to itself", `{"key_groups":4,"owners":["a","a","b","b"],"migration":{"id":"m","current":0,"steps":[
		{"state":"planned","moves":[{"group":0,"from":"a","to":"a","state":"planned"}]}]}}`,
		"migration.steps[0].moves[0]", `from "a" to itself`},
	{"pool host unknown", `{"key_groups":4,"owners":["a","a","a","a"],"pool":{"hosts":["zed"],"epoch":1}}`,
		"pool.hosts[0]", `"zed" has never joined`},
	{"pool hosts unsorted", `{"key_groups":4,"owners":["a","a","a","a"],"pool":{"hosts":["b","a"],"epoch":2}}`,
		"pool.hosts[1]", "sorted and each named once"},
	{"pool without epoch", `{"key_groups":4,"owners":["a","a","a","a"],"pool":{"hosts":["b"],"epoch":0}}`,
		"pool.epoch", "each change counts"},
	{"move to a pool host", `{"key_groups":4,"owners":["a","a","b","b"],"pool":{"hosts":["b"],"epoch":1},"migration":{"id":"m","current":0,"steps":[
		{"state":"planned","moves":[{"group":0,"from":"a","to":"b","state":"planned"}]}]}}`,
		"migration.steps[0].moves[0].to", `"b" is a pool host`},
	{"version hash not a sha256", `{"key_groups":4,"owners":["a","a","b","b"],"versions":{"epoch":1,"operators":{"count":
		{"sha256":"abc","name":"count.wasm","epoch":1,"reason":"swap","host":"a"}}}}`,
		`versions.operators["count"].sha256`, `"abc" is not a SHA-256`},
	{"version epoch ahead of the record", `{"key_groups":4,"owners":["a","a","b","b"],"versions":{"epoch":1,"operators":{"count":
		{"sha256":"` + testHash + `","name":"count.wasm","epoch":2,"reason":"swap","host":"a"}}}}`,
		`versions.operators["count"].epoch`, "2 is not between 1 and the record's epoch 1"},
	{"version reason unknown", `{"key_groups":4,"owners":["a","a","b","b"],"versions":{"epoch":1,"operators":{"count":
		{"sha256":"` + testHash + `","name":"count.wasm","epoch":1,"reason":"upgrade","host":"a"}}}}`,
		`versions.operators["count"].reason`, `"upgrade" is not swap or rollback`},
	{"workers count zero", `{"key_groups":4,"owners":["a","a","b","b"],"workers":{"epoch":1,"operators":{"count":
		{"count":0,"epoch":1,"by":"cli"}}}}`,
		`workers.operators["count"].count`, "0 and no host's count"},
	{"workers count negative", `{"key_groups":4,"owners":["a","a","b","b"],"workers":{"epoch":1,"operators":{"count":
		{"count":-2,"epoch":1,"by":"cli"}}}}`,
		`workers.operators["count"].count`, "-2 is not between 1 and 65536"},
	{"workers count too high", `{"key_groups":4,"owners":["a","a","b","b"],"workers":{"epoch":1,"operators":{"count":
		{"count":65537,"epoch":1,"by":"cli"}}}}`,
		`workers.operators["count"].count`, "65537 is not between 1 and 65536"},
	{"workers of an unknown host", `{"key_groups":4,"owners":["a","a","b","b"],"workers":{"epoch":1,"operators":{"count":
		{"count":2,"hosts":{"zed":3},"epoch":1,"by":"cli"}}}}`,
		`workers.operators["count"].hosts["zed"]`, `host "zed" has never joined`},
	{"workers of a host zero", `{"key_groups":4,"owners":["a","a","b","b"],"workers":{"epoch":1,"operators":{"count":
		{"hosts":{"b":0},"epoch":1,"by":"cli"}}}}`,
		`workers.operators["count"].hosts["b"]`, "0 is not between 1 and 65536"},
	{"workers epoch ahead of the record", `{"key_groups":4,"owners":["a","a","b","b"],"workers":{"epoch":1,"operators":{"count":
		{"count":2,"epoch":3,"by":"cli"}}}}`,
		`workers.operators["count"].epoch`, "3 is not between 1 and the record's epoch 1"},
	{"workers operator unnamed", `{"key_groups":4,"owners":["a","a","b","b"],"workers":{"epoch":1,"operators":{"":
		{"count":2,"epoch":1,"by":"cli"}}}}`,
		`workers.operators[""]`, "an operator has a name"},
	{"whole split", `{"key_groups":4,"owners":["a","a","b","a"],"whole":true}`,
		"owners[2]", `"b", but owners[0] is "a": the key groups live on one host together`},
	{"whole in steps", `{"key_groups":4,"owners":["a","a","a","a"],"whole":true,"migration":{"id":"m","current":0,"steps":[
		{"state":"planned","moves":[{"group":0,"from":"a","to":"b","state":"planned"},{"group":1,"from":"a","to":"b","state":"planned"}]},
		{"state":"planned","moves":[{"group":2,"from":"a","to":"b","state":"planned"},{"group":3,"from":"a","to":"b","state":"planned"}]}]}}`,
		"migration.steps", "2 steps"},
	{"whole moving some", `{"key_groups":4,"owners":["a","a","a","a"],"whole":true,"migration":{"id":"m","current":0,"steps":[
		{"state":"planned","moves":[{"group":0,"from":"a","to":"b","state":"planned"}]}]}}`,
		"migration.steps[0].moves", "1 moves of 4 key groups"},
	{"whole moving apart", `{"key_groups":4,"owners":["a","a","a","a"],"whole":true,"migration":{"id":"m","current":0,"steps":[
		{"state":"planned","moves":[{"group":0,"from":"a","to":"b","state":"planned"},{"group":1,"from":"a","to":"b","state":"planned"},
		{"group":2,"from":"a","to":"c","state":"planned"},{"group":3,"from":"a","to":"b","state":"planned"}]}]}}`,
		"migration.steps[0].moves[2]", `moves group 2 from "a" to "c"`},
	{"workers unknown field", `{"key_groups":4,"owners":["a","a","b","b"],"workers":{"epoch":1,"operators":{"count":
		{"workers":2,"epoch":1,"by":"cli"}}}}`,
		"", `unknown field "workers"`},
}

// testHash is a well-formed SHA-256 for the versions records of the tests.
const testHash = "8c2a0e3b2a1f0d9e8c7b6a5f4e3d2c1b0a9f8e7d6c5b4a3f2e1d0c9b8a7f6e5d"

func TestValidateRefuses(t *testing.T) {
	for _, tc := range invalidTables {
		t.Run(tc.name, func(t *testing.T) {
			a, err := decodeAssignment([]byte(tc.json))
			if err == nil {
				err = (&Cluster{cfg: Config{Pipeline: "p", KeyGroups: 4}}).validate(a, []string{"a", "b", "c"})
			}
			var ie *InvalidError
			if !errors.Is(err, ErrInvalidAssignment) || !errors.As(err, &ie) {
				t.Fatalf("error %v, want an *InvalidError", err)
			}
			if ie.Field != tc.field || !contains(ie.Msg, tc.reason) {
				t.Errorf("error %q: field %q, want %q; message %q, want it to hold %q", err, ie.Field, tc.field, ie.Msg, tc.reason)
			}
		})
	}
}

func TestMigrationLifecycle(t *testing.T) {
	hosts := []string{"a", "b", "c"}
	a := NewAssignment(6)
	a.Owners = Spread(6, []string{"a", "b"})
	next := Rebalance(a.Owners, hosts)
	steps, err := Plan(a.Owners, next, Knobs{Batch: 1}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Begin("m1", steps); err != nil {
		t.Fatal(err)
	}
	if err := a.Begin("m2", steps); !errors.Is(err, ErrMigration) {
		t.Fatalf("a second migration: %v, want ErrMigration", err)
	}
	check := func() {
		t.Helper()
		if err := a.Validate(hosts); err != nil {
			t.Fatal(err)
		}
	}
	check()
	for !func() bool {
		s := a.Migration.Steps[a.Migration.Current]
		if _, err := a.Advance(); !errors.Is(err, ErrMigration) {
			t.Fatalf("advance before the moves are installed: %v, want ErrMigration", err)
		}
		for _, mv := range s.Moves {
			if err := a.Mark(mv.Group, StepInstalled); !errors.Is(err, ErrMigration) {
				t.Fatalf("installed before released: %v, want ErrMigration", err)
			}
			if err := a.Mark(mv.Group, StepReleased); err != nil {
				t.Fatal(err)
			}
			check()
			if err := a.Mark(mv.Group, StepInstalled); err != nil {
				t.Fatal(err)
			}
			check()
		}
		done, err := a.Advance()
		if err != nil {
			t.Fatal(err)
		}
		if !done {
			check()
		}
		return done
	}() {
	}
	if a.Migration != nil {
		t.Fatal("the migration is still in the table")
	}
	for g := range next {
		if a.Owners[g] != next[g] {
			t.Fatalf("after the migration owners %v, want %v", a.Owners, next)
		}
	}
}

// TestCancelKeepsTheTableValid runs random migrations in which moves are
// released, installed and cancelled in random order, advancing whenever a
// step is installed: the table stays valid after every change, and when the
// migration is over each group is owned by its destination if its move was
// installed and by its first owner if the move was cancelled.
func TestCancelKeepsTheTableValid(t *testing.T) {
	hosts := []string{"a", "b", "c", "d"}
	cancelled, ended := 0, 0
	rapid.Check(t, func(rt *rapid.T) {
		groups := rapid.IntRange(1, 24).Draw(rt, "groups")
		a := NewAssignment(groups)
		a.Owners = Spread(groups, hosts[:rapid.IntRange(1, 3).Draw(rt, "hosts before")])
		first := slices.Clone(a.Owners)
		target := Rebalance(a.Owners, hosts)
		steps, err := Plan(a.Owners, target, Knobs{Batch: rapid.IntRange(0, 4).Draw(rt, "batch")}, nil)
		if err != nil || len(steps) == 0 {
			return // nothing moves
		}
		if err := a.Begin("m", steps); err != nil {
			rt.Fatal(err)
		}
		want := slices.Clone(target)
		for a.Migration != nil {
			m := a.Migration
			s := m.Steps[m.Current]
			if s.State == StepInstalled {
				if _, err := a.Advance(); err != nil {
					rt.Fatal(err)
				}
			} else {
				// A move of any step: the current one's may be marked.
				si := rapid.IntRange(m.Current, len(m.Steps)-1).Draw(rt, "step")
				mv := m.Steps[si].Moves[rapid.IntRange(0, len(m.Steps[si].Moves)-1).Draw(rt, "move")]
				switch {
				case mv.State == StepInstalled:
					if _, err := a.Cancel(mv.Group); !errors.Is(err, ErrMigration) {
						rt.Fatalf("cancel of an installed move: %v, want ErrMigration", err)
					}
				case rapid.Bool().Draw(rt, "cancel"):
					if _, err := a.Cancel(mv.Group); err != nil {
						rt.Fatal(err)
					}
					want[mv.Group] = first[mv.Group]
					cancelled++
				case si == m.Current && mv.State == StepPlanned:
					if err := a.Mark(mv.Group, StepReleased); err != nil {
						rt.Fatal(err)
					}
				case si == m.Current:
					if err := a.Mark(mv.Group, StepInstalled); err != nil {
						rt.Fatal(err)
					}
				}
			}
			if err := a.Validate(hosts); err != nil {
				rt.Fatalf("after a change: %v\n%+v", err, a.Migration)
			}
		}
		if !slices.Equal(a.Owners, want) {
			rt.Fatalf("owners %v, want %v", a.Owners, want)
		}
		ended++
	})
	if cancelled == 0 || ended == 0 {
		t.Errorf("%d moves cancelled in %d migrations: the test tests too little", cancelled, ended)
	}
}

func TestCancelRefuses(t *testing.T) {
	a := NewAssignment(4)
	a.Owners = Spread(4, []string{"a"})
	if _, err := a.Cancel(0); !errors.Is(err, ErrMigration) {
		t.Fatalf("cancel without a migration: %v, want ErrMigration", err)
	}
	steps, err := Plan(a.Owners, []string{"a", "a", "b", "b"}, Knobs{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Begin("m", steps); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Cancel(0); !errors.Is(err, ErrMigration) {
		t.Fatalf("cancel of a group that does not move: %v, want ErrMigration", err)
	}
	if finished, err := a.Cancel(2); err != nil || finished {
		t.Fatalf("cancel of group 2: %v, %v; want the migration to go on", finished, err)
	}
	if finished, err := a.Cancel(3); err != nil || !finished || a.Migration != nil {
		t.Fatalf("cancel of the last move: %v, %v, migration %+v; want it over", finished, err, a.Migration)
	}
	if !slices.Equal(a.Owners, []string{"a", "a", "a", "a"}) {
		t.Errorf("owners %v, want every group still a's", a.Owners)
	}
}
