package state

import (
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"pgregory.net/rapid"
)

// genModel is the specification of key group generations: the keys and
// timers present, which of them carry a dirty mark, the key groups
// dropped or imported since the last commit, and each group's count of
// commits that changed it.
type genModel struct {
	groups           int
	cur, committed   map[string]bool // "t/key" or "timer/route": present
	dirty            map[string]bool // the same names: marked dirty
	dropped          map[int]bool
	gens, gensCommit []uint64
	savepoints       []genSavepoint
}

type genSavepoint struct {
	sp         int
	cur, dirty map[string]bool
}

var genRoutes = []string{"a", "b", "c", "d", "e", "f", "g", "h", "i", "j", "k", "l"}

// group returns the key group of a model name.
func (m *genModel) group(name string) int {
	_, route, _ := cutSlash(name)
	return KeyGroup([]byte(route), m.groups)
}

func cutSlash(s string) (string, string, bool) {
	for i := range len(s) {
		if s[i] == '/' {
			return s[:i], s[i+1:], true
		}
	}
	return s, "", false
}

// changed returns the key groups the next commit changes, in order.
func (m *genModel) changed() []int {
	set := maps.Clone(m.dropped)
	for name := range m.dirty {
		set[m.group(name)] = true
	}
	return slices.Sorted(maps.Keys(set))
}

// forget removes every model name of key group kg from names.
func (m *genModel) forget(names map[string]bool, kg int) {
	maps.DeleteFunc(names, func(name string, _ bool) bool { return m.group(name) == kg })
}

// TestGenerationsMatchModel runs random writes, timers, rollbacks, drops,
// imports, commits and reopenings against a model, and checks after every
// commit that exactly the key groups written since the previous one
// changed generation, and after reopening that generations survived.
func TestGenerationsMatchModel(t *testing.T) {
	templates := map[int]string{}
	for _, groups := range []int{1, 3, 8} {
		templates[groups] = filepath.Join(t.TempDir(), fmt.Sprint(groups))
		s, err := Open(templates[groups], quietOptions(groups))
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
	}
	rapid.Check(t, func(rt *rapid.T) {
		base, err := os.MkdirTemp("", "sluice-state-gen-")
		if err != nil {
			rt.Fatal(err)
		}
		defer os.RemoveAll(base)
		dir := filepath.Join(base, "0")
		groups := rapid.SampledFrom([]int{1, 3, 8}).Draw(rt, "groups")
		if err := os.CopyFS(dir, os.DirFS(templates[groups])); err != nil {
			rt.Fatal(err)
		}
		s, err := Open(dir, quietOptions(groups))
		if err != nil {
			rt.Fatal(err)
		}
		defer func() { _ = s.Close() }()
		se := s.NewSession()
		m := &genModel{groups: groups, cur: map[string]bool{}, committed: map[string]bool{},
			dirty: map[string]bool{}, dropped: map[int]bool{},
			gens: make([]uint64, groups), gensCommit: make([]uint64, groups)}
		before := s.Generations()
		exports := map[int][]byte{} // the last committed export of a group

		check := func(rt *rapid.T, what string) {
			if got := s.Generations(); !slices.Equal(got, m.gens) {
				rt.Fatalf("%s: generations %v, model %v", what, got, m.gens)
			}
			for kg := range groups {
				if got := s.Generation(kg); got != m.gens[kg] {
					rt.Fatalf("%s: Generation(%d) = %d, model %d", what, kg, got, m.gens[kg])
				}
			}
		}
		// endEpoch is what a drop or an import does to the sessions.
		endEpoch := func() {
			se.Reset()
			m.savepoints = nil
		}

		rt.Repeat(map[string]func(*rapid.T){
			"put": func(rt *rapid.T) {
				tab := rapid.SampledFrom([]string{"t", "u"}).Draw(rt, "table")
				route := rapid.SampledFrom(genRoutes).Draw(rt, "route")
				if err := se.Put(s.Table(tab), []byte(route), []byte("v")); err != nil {
					rt.Fatal(err)
				}
				m.cur[tab+"/"+route] = true
				m.dirty[tab+"/"+route] = true
			},
			"delete": func(rt *rapid.T) {
				tab := rapid.SampledFrom([]string{"t", "u"}).Draw(rt, "table")
				route := rapid.SampledFrom(genRoutes).Draw(rt, "route")
				if err := se.Delete(s.Table(tab), []byte(route)); err != nil {
					rt.Fatal(err)
				}
				if m.cur[tab+"/"+route] {
					delete(m.cur, tab+"/"+route)
					m.dirty[tab+"/"+route] = true
				}
			},
			"timer": func(rt *rapid.T) {
				route := rapid.SampledFrom(genRoutes).Draw(rt, "route")
				tm := Timer{Time: 1, Route: []byte(route), Name: []byte("n")}
				name := "timer/" + route
				if rapid.Bool().Draw(rt, "set") {
					if err := se.SetTimer(tm); err != nil {
						rt.Fatal(err)
					}
					if !m.cur[name] {
						m.cur[name] = true
						m.dirty[name] = true
					}
					return
				}
				if err := se.DeleteTimer(tm); err != nil {
					rt.Fatal(err)
				}
				if m.cur[name] {
					delete(m.cur, name)
					m.dirty[name] = true
				}
			},
			"savepoint": func(rt *rapid.T) {
				m.savepoints = append(m.savepoints, genSavepoint{se.Savepoint(), maps.Clone(m.cur), maps.Clone(m.dirty)})
			},
			"rollback": func(rt *rapid.T) {
				if len(m.savepoints) == 0 {
					rt.Skip("no savepoint")
				}
				i := rapid.IntRange(0, len(m.savepoints)-1).Draw(rt, "savepoint")
				sp := m.savepoints[i]
				se.RollbackTo(sp.sp)
				m.cur, m.dirty = maps.Clone(sp.cur), maps.Clone(sp.dirty)
				m.savepoints = m.savepoints[:i+1]
			},
			"drop": func(rt *rapid.T) {
				kg := rapid.IntRange(0, groups-1).Draw(rt, "group")
				if err := s.DropKeyGroup(kg); err != nil {
					rt.Fatal(err)
				}
				endEpoch()
				m.forget(m.cur, kg)
				m.forget(m.dirty, kg)
				m.dropped[kg] = true
			},
			"import": func(rt *rapid.T) {
				// Import a group's last committed export back, which leaves
				// its content as committed and counts as a change.
				kg := rapid.IntRange(0, groups-1).Draw(rt, "group")
				data, ok := exports[kg]
				if !ok {
					rt.Skip("no export of this group")
				}
				if err := s.ImportKeyGroup(kg, data); err != nil {
					rt.Fatal(err)
				}
				endEpoch()
				m.forget(m.cur, kg)
				m.forget(m.dirty, kg)
				for name := range m.committed {
					if m.group(name) == kg {
						m.cur[name] = true
					}
				}
				m.dropped[kg] = true
			},
			"commit": func(rt *rapid.T) {
				want := m.changed()
				if err := s.Commit(nil); err != nil {
					rt.Fatal(err)
				}
				se.Reset()
				for _, kg := range want {
					m.gens[kg]++
				}
				if got := s.ChangedSince(before); !slices.Equal(got, want) {
					rt.Fatalf("changed since the last commit: %v, model %v", got, want)
				}
				check(rt, "after commit")
				before = s.Generations()
				m.committed = maps.Clone(m.cur)
				m.gensCommit = slices.Clone(m.gens)
				clear(m.dirty)
				clear(m.dropped)
				m.savepoints = nil
				for kg := range groups {
					data, err := s.ExportKeyGroup(kg)
					if err != nil {
						rt.Fatal(err)
					}
					exports[kg] = data
				}
			},
			"reopen": func(rt *rapid.T) {
				// Close without committing: what was not committed, and
				// the generations it would have bumped, are gone.
				if rapid.IntRange(0, 2).Draw(rt, "rare") != 0 {
					rt.Skip("not this time")
				}
				if err := s.Close(); err != nil {
					rt.Fatal(err)
				}
				if s, err = Open(dir, quietOptions(0)); err != nil {
					rt.Fatal(err)
				}
				se = s.NewSession()
				m.cur = maps.Clone(m.committed)
				m.gens = slices.Clone(m.gensCommit)
				clear(m.dirty)
				clear(m.dropped)
				m.savepoints = nil
				check(rt, "after reopening")
				before = s.Generations()
			},
			"": func(rt *rapid.T) {
				// Generations change only at commits.
				check(rt, "between commits")
				if got := s.ChangedSince(before); len(got) != 0 {
					rt.Fatalf("changed before a commit: %v", got)
				}
			},
		})
	})
}

// TestChangedSince checks ChangedSince's reading of a short or nil slice.
func TestChangedSince(t *testing.T) {
	s := openTest(t, t.TempDir(), 4)
	se := s.NewSession()
	tab := s.Table("t")
	var key [3][]byte // keys of key groups 0, 1 and 3
	for i := 0; key[0] == nil || key[1] == nil || key[2] == nil; i++ {
		k := []byte(fmt.Sprint(i))
		switch KeyGroup(k, 4) {
		case 0:
			key[0] = k
		case 1:
			key[1] = k
		case 3:
			key[2] = k
		}
	}
	if got := s.ChangedSince(nil); len(got) != 0 {
		t.Fatalf("a new store: changed %v", got)
	}
	for _, k := range key {
		if err := se.Put(tab, k, []byte("v")); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Commit(nil); err != nil {
		t.Fatal(err)
	}
	if got, want := s.ChangedSince(nil), []int{0, 1, 3}; !slices.Equal(got, want) {
		t.Fatalf("ChangedSince(nil) = %v, want %v", got, want)
	}
	if got, want := s.ChangedSince([]uint64{1}), []int{1, 3}; !slices.Equal(got, want) {
		t.Fatalf("ChangedSince([1]) = %v, want %v", got, want)
	}
	if got := s.ChangedSince([]uint64{1, 1, 0, 1, 7}); len(got) != 0 {
		t.Fatalf("ChangedSince of the generations and one more = %v, want none", got)
	}
	if err := s.Commit(nil); err != nil { // changes nothing
		t.Fatal(err)
	}
	if got := s.Generations(); !slices.Equal(got, []uint64{1, 1, 0, 1}) {
		t.Fatalf("after an empty commit: generations %v", got)
	}
	if err := s.DropKeyGroup(2); err != nil { // an empty group: still a change
		t.Fatal(err)
	}
	if err := s.Commit(nil); err != nil {
		t.Fatal(err)
	}
	if got := s.Generations(); !slices.Equal(got, []uint64{1, 1, 1, 1}) {
		t.Fatalf("after dropping group 2: generations %v", got)
	}
}
