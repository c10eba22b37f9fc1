package state

import (
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"testing"

	"pgregory.net/rapid"
)

// model is the specification the store is checked against: a map per
// table for the current state, the set of keys written since the last
// commit (the dirty marks), the last committed snapshot and positions, and
// the model state at each savepoint.
type model struct {
	cur, committed map[string]map[string]string
	dirty          map[string]map[string]bool
	positions      map[string]uint64
	savepoints     []modelSavepoint
}

type modelSavepoint struct {
	sp    int
	cur   map[string]map[string]string
	dirty map[string]map[string]bool
}

var (
	propTables = []string{"a", "b"}
	propKeys   = []string{"", "k1", "k2", "k3", "k4", "k5", "k6", "k7", "longer-key-8", "\x00\xff"}
)

func cloneNested[V any](m map[string]map[string]V) map[string]map[string]V {
	out := make(map[string]map[string]V, len(m))
	for k, v := range m {
		out[k] = maps.Clone(v)
	}
	return out
}

func emptyTables[V any]() map[string]map[string]V {
	out := map[string]map[string]V{}
	for _, t := range propTables {
		out[t] = map[string]V{}
	}
	return out
}

// TestStoreMatchesModel runs random sequences of Put, Delete, Savepoint,
// RollbackTo, Commit and crash-and-reopen against the store and the model.
func TestStoreMatchesModel(t *testing.T) {
	// Creating a Pebble store costs tens of fsyncs; each case starts from a
	// copy of an empty store made once per key group count.
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
		base, err := os.MkdirTemp("", "sluice-state-prop-")
		if err != nil {
			rt.Fatal(err)
		}
		defer os.RemoveAll(base)
		dir := filepath.Join(base, "0")
		groups := rapid.SampledFrom([]int{1, 3, 8}).Draw(rt, "groups")
		if err := os.CopyFS(dir, os.DirFS(templates[groups])); err != nil {
			rt.Fatal(err)
		}
		opts := quietOptions(groups)
		opts.Sync = rapid.IntRange(0, 3).Draw(rt, "sync") == 0
		s, err := Open(dir, opts)
		if err != nil {
			rt.Fatal(err)
		}
		defer func() { _ = s.Close() }()
		se := s.NewSession()
		m := &model{cur: emptyTables[string](), committed: emptyTables[string](),
			dirty: emptyTables[bool](), positions: map[string]uint64{}}
		images := 0

		reopen := func(rt *rapid.T, from string) {
			var err error
			s, err = Open(from, quietOptions(0))
			if err != nil {
				rt.Fatal(err)
			}
			dir = from
			se = s.NewSession()
			m.cur = cloneNested(m.committed)
			m.dirty = emptyTables[bool]()
			m.savepoints = nil
		}

		rt.Repeat(map[string]func(*rapid.T){
			"put": func(rt *rapid.T) {
				tab := rapid.SampledFrom(propTables).Draw(rt, "table")
				k := rapid.SampledFrom(propKeys).Draw(rt, "key")
				v := rapid.SliceOfN(rapid.Byte(), 0, 24).Draw(rt, "value")
				if err := se.Put(s.Table(tab), []byte(k), v); err != nil {
					rt.Fatal(err)
				}
				m.cur[tab][k] = string(v)
				m.dirty[tab][k] = true
			},
			"delete": func(rt *rapid.T) {
				tab := rapid.SampledFrom(propTables).Draw(rt, "table")
				k := rapid.SampledFrom(propKeys).Draw(rt, "key")
				if err := se.Delete(s.Table(tab), []byte(k)); err != nil {
					rt.Fatal(err)
				}
				if _, ok := m.cur[tab][k]; ok {
					delete(m.cur[tab], k)
					m.dirty[tab][k] = true
				}
			},
			"savepoint": func(rt *rapid.T) {
				m.savepoints = append(m.savepoints, modelSavepoint{
					sp: se.Savepoint(), cur: cloneNested(m.cur), dirty: cloneNested(m.dirty)})
			},
			"rollback": func(rt *rapid.T) {
				if len(m.savepoints) == 0 {
					rt.Skip("no savepoint")
				}
				i := rapid.IntRange(0, len(m.savepoints)-1).Draw(rt, "savepoint")
				sp := m.savepoints[i]
				se.RollbackTo(sp.sp)
				m.cur, m.dirty = cloneNested(sp.cur), cloneNested(sp.dirty)
				m.savepoints = m.savepoints[:i+1]
			},
			"commit": func(rt *rapid.T) {
				pos := map[string]uint64{}
				for _, src := range rapid.SliceOfN(rapid.SampledFrom([]string{"s1", "s2", "s3"}), 0, 2).Draw(rt, "sources") {
					pos[src] = rapid.Uint64().Draw(rt, "position")
				}
				if err := s.Commit(pos); err != nil {
					rt.Fatal(err)
				}
				if rapid.Bool().Draw(rt, "reset") {
					se.Reset()
				}
				maps.Copy(m.positions, pos)
				m.committed = cloneNested(m.cur)
				m.dirty = emptyTables[bool]()
				m.savepoints = nil
				for _, tab := range propTables {
					if got := scanAll(rt, s, tab); !maps.Equal(got, m.committed[tab]) {
						rt.Fatalf("table %s after commit: scan %v, model %v", tab, got, m.committed[tab])
					}
				}
			},
			"crash-and-reopen": func(rt *rapid.T) {
				// Reopening costs several fsyncs: make it a third as likely as
				// the other actions.
				if rapid.IntRange(0, 2).Draw(rt, "rare") != 0 {
					rt.Skip("not this time")
				}
				if rapid.Bool().Draw(rt, "image") {
					// Take an image of the live store, as a crash right now
					// would leave it, and continue from the image. A plain
					// copy of the directory races with Pebble's background
					// work; Pebble's checkpoint copies the log as written.
					images++
					image := filepath.Join(base, fmt.Sprint(images))
					if err := s.db.Checkpoint(image); err != nil {
						rt.Fatal(err)
					}
					if err := s.Close(); err != nil {
						rt.Fatal(err)
					}
					reopen(rt, image)
					return
				}
				// Close without committing.
				if err := s.Close(); err != nil {
					rt.Fatal(err)
				}
				reopen(rt, dir)
			},
			"": func(rt *rapid.T) {
				if got := s.Positions(); !maps.Equal(got, m.positions) {
					rt.Fatalf("positions %v, model %v", got, m.positions)
				}
				for _, name := range propTables {
					tab := s.Table(name)
					for _, k := range propKeys {
						v, ok, err := se.Get(tab, []byte(k))
						if err != nil {
							rt.Fatal(err)
						}
						want, wok := m.cur[name][k]
						if ok != wok || string(v) != want {
							rt.Fatalf("%s/%q = %q %v, model %q %v", name, k, v, ok, want, wok)
						}
					}
					if tab.Len() != len(m.cur[name]) || tab.Dirty() != len(m.dirty[name]) {
						rt.Fatalf("table %s: %d entries %d dirty, model %d and %d",
							name, tab.Len(), tab.Dirty(), len(m.cur[name]), len(m.dirty[name]))
					}
				}
			},
		})
	})
}
