package state

import (
	"errors"
	"fmt"
	"sync"
	"testing"
)

func TestSessionRollbackRestoresValuesAbsencesAndDirtyMarks(t *testing.T) {
	s := openTest(t, t.TempDir(), 4)
	tab := s.Table("t")
	se := s.NewSession()
	mustPut(t, se, tab, []byte("clean"), []byte("c0"))
	mustPut(t, se, tab, []byte("gone"), []byte("g0"))
	if err := s.Commit(nil); err != nil {
		t.Fatal(err)
	}
	se.Reset()
	mustPut(t, se, tab, []byte("dirty"), []byte("d0")) // dirty before the savepoint

	sp := se.Savepoint()
	mustPut(t, se, tab, []byte("clean"), []byte("c1"))
	mustPut(t, se, tab, []byte("dirty"), []byte("d1"))
	mustPut(t, se, tab, []byte("new"), []byte("n1"))
	mustDelete(t, se, tab, []byte("gone"))
	inner := se.Savepoint()
	mustPut(t, se, tab, []byte("gone"), []byte("g2"))
	mustPut(t, se, tab, []byte("new"), []byte("n2"))
	mustDelete(t, se, tab, []byte("clean"))

	se.RollbackTo(inner)
	check := func(k, want string) {
		t.Helper()
		v, ok, err := se.Get(tab, []byte(k))
		if err != nil {
			t.Fatal(err)
		}
		if got := map[bool]string{true: string(v), false: "<absent>"}[ok]; got != want {
			t.Fatalf("%s = %s, want %s", k, got, want)
		}
	}
	check("gone", "<absent>")
	check("new", "n1")
	check("clean", "c1")

	se.RollbackTo(sp)
	check("clean", "c0")
	check("dirty", "d0")
	check("gone", "g0")
	check("new", "<absent>")
	if got := tab.Dirty(); got != 1 {
		t.Fatalf("dirty entries after rollback = %d, want 1 (only the write before the savepoint)", got)
	}
	if got := tab.Len(); got != 3 {
		t.Fatalf("entries after rollback = %d, want 3", got)
	}
	if se.Len() != sp {
		t.Fatalf("undo log has %d records, want %d", se.Len(), sp)
	}
	kg := KeyGroup([]byte("new"), s.KeyGroups())
	if _, ok := tab.Group(kg).index.find(tab.Group(kg).entries, []byte("new"), keyHash([]byte("new"))); ok {
		t.Fatal("a key inserted and rolled back is still in the index")
	}

	if err := s.Commit(nil); err != nil {
		t.Fatal(err)
	}
	if got := s.Stats().LastCommit.Entries; got != 1 {
		t.Fatalf("commit after rollback wrote %d entries, want 1", got)
	}
	se.RollbackTo(0) // across the commit, to zero: allowed, a no-op
	check("dirty", "d0")
}

func TestSessionRollbackWithDirectGroupWrites(t *testing.T) {
	s := openTest(t, t.TempDir(), 1)
	tab := s.Table("t")
	g := tab.Group(0)
	se := s.NewSession()
	mustPut(t, se, tab, []byte("a"), []byte("1"))
	g.Put([]byte("b"), []byte("2")) // not undoable
	mustPut(t, se, tab, []byte("c"), []byte("3"))
	se.RollbackTo(0)
	if _, ok := g.Get([]byte("a")); ok {
		t.Fatal("a survived the rollback")
	}
	if v, ok := g.Get([]byte("b")); !ok || string(v) != "2" || g.Dirty() != 1 {
		t.Fatalf("direct write: %q %v, dirty %d", v, ok, g.Dirty())
	}
	if err := s.Commit(nil); err != nil {
		t.Fatal(err)
	}
	if got := scanAll(t, s, "t"); len(got) != 1 || got["b"] != "2" {
		t.Fatalf("committed: %v", got)
	}
}

func TestSessionOwnership(t *testing.T) {
	s := openTest(t, t.TempDir(), 8)
	tab := s.Table("t")
	se := s.NewSession()
	mine := func(kg int) bool { return kg%2 == 0 }
	se.SetOwned(mine)
	var owned, foreign []byte
	for i := 0; owned == nil || foreign == nil; i++ {
		k := []byte(fmt.Sprint(i))
		if mine(KeyGroup(k, 8)) {
			owned = k
		} else {
			foreign = k
		}
	}
	mustPut(t, se, tab, owned, []byte("v"))
	if _, ok, err := se.Get(tab, owned); err != nil || !ok {
		t.Fatalf("owned Get: %v %v", ok, err)
	}
	kg := KeyGroup(foreign, 8)
	for name, op := range map[string]func() error{
		"Get":    func() error { _, _, err := se.Get(tab, foreign); return err },
		"Put":    func() error { return se.Put(tab, foreign, []byte("v")) },
		"Delete": func() error { return se.Delete(tab, foreign) },
	} {
		err := op()
		var ne *NotOwnedError
		if !errors.Is(err, ErrNotOwned) || !errors.As(err, &ne) || ne.KeyGroup != kg || ne.Table != "t" {
			t.Errorf("%s of a foreign key: %v", name, err)
		}
	}
	if se.Len() != 1 || tab.Len() != 1 {
		t.Fatalf("refused writes were recorded: log %d, entries %d", se.Len(), tab.Len())
	}
	se.SetOwned(nil)
	mustPut(t, se, tab, foreign, []byte("v"))
}

func TestSessionAfterCommitWithoutReset(t *testing.T) {
	s := openTest(t, t.TempDir(), 4)
	tab := s.Table("t")
	se := s.NewSession()
	mustPut(t, se, tab, []byte("a"), []byte("1"))
	stale := se.Savepoint()
	mustPut(t, se, tab, []byte("a"), []byte("2"))
	if err := s.Commit(nil); err != nil {
		t.Fatal(err)
	}
	func() {
		defer func() {
			if recover() == nil {
				t.Error("RollbackTo a savepoint from before the commit did not panic")
			}
		}()
		se.RollbackTo(stale)
	}()
	mustPut(t, se, tab, []byte("a"), []byte("3"))
	if se.Len() != 1 {
		t.Fatalf("undo log not restarted after the commit: %d records", se.Len())
	}
	se.RollbackTo(0)
	if v, _, _ := se.Get(tab, []byte("a")); string(v) != "2" {
		t.Fatalf("rollback after commit restored %q, want the committed 2", v)
	}
}

func TestSessionRollbackToBadSavepointPanics(t *testing.T) {
	s := openTest(t, t.TempDir(), 4)
	se := s.NewSession()
	mustPut(t, se, s.Table("t"), []byte("a"), []byte("1"))
	for _, sp := range []int{-1, 2} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("RollbackTo(%d) did not panic", sp)
				}
			}()
			se.RollbackTo(sp)
		}()
	}
}

func TestSessionSteadyStateDoesNotAllocate(t *testing.T) {
	s := openTest(t, t.TempDir(), 16)
	tab := s.Table("t")
	se := s.NewSession()
	keys := make([][]byte, 64)
	for i := range keys {
		keys[i] = key(i)
		mustPut(t, se, tab, keys[i], []byte("initial value"))
	}
	val := []byte("next value!!")
	round := func() {
		sp := se.Savepoint()
		for _, k := range keys {
			_ = se.Put(tab, k, val)
			_, _, _ = se.Get(tab, k)
		}
		_ = se.Delete(tab, keys[0])
		se.RollbackTo(sp)
		for _, k := range keys[:8] {
			_ = se.Put(tab, k, val)
		}
		se.Reset()
	}
	round() // grow the log and arena once
	if n := testing.AllocsPerRun(50, round); n != 0 {
		t.Fatalf("a steady-state round allocates %v times", n)
	}
}

// TestConcurrentSessions runs one Session per worker, each owning a quarter
// of the key groups, writing at the same time between commits, as the
// executor does. Run with -race.
func TestConcurrentSessions(t *testing.T) {
	const workers, rounds, keys = 4, 5, 400
	dir := t.TempDir()
	s := openTest(t, dir, 16)
	sessions := make([]*Session, workers)
	for w := range sessions {
		sessions[w] = s.NewSession()
		sessions[w].SetOwned(func(kg int) bool { return kg%workers == w })
	}
	for round := range rounds {
		var wg sync.WaitGroup
		for w, se := range sessions {
			wg.Add(1)
			go func() {
				defer wg.Done()
				tab := s.Table(fmt.Sprint("t", round%2)) // tables resolved concurrently
				for i := range keys {
					k := key(i)
					if KeyGroup(k, 16)%workers != w {
						if err := se.Put(tab, k, nil); !errors.Is(err, ErrNotOwned) {
							t.Errorf("worker %d wrote a foreign key: %v", w, err)
						}
						continue
					}
					sp := se.Savepoint()
					_ = se.Put(tab, k, []byte(fmt.Sprint(round)))
					if i%3 == 0 {
						se.RollbackTo(sp)
					}
				}
			}()
		}
		wg.Wait()
		if err := s.Commit(map[string]uint64{"src": uint64(round)}); err != nil {
			t.Fatal(err)
		}
		for _, se := range sessions {
			se.Reset()
		}
	}
	want := 0 // keys never rolled back
	for i := range keys {
		if i%3 != 0 {
			want++
		}
	}
	for _, name := range []string{"t0", "t1"} {
		if got := scanAll(t, s, name); len(got) != want {
			t.Fatalf("table %s: %d keys, want %d", name, len(got), want)
		}
	}
	if got := scanAll(t, s, "t0"); got[string(key(1))] != "4" {
		t.Fatalf("t0 key 1 = %q, want the last even round 4", got[string(key(1))])
	}
}

func TestSessionPutRefIsAPutKeyThatRollsBack(t *testing.T) {
	s := openTest(t, t.TempDir(), 4)
	tab := s.Table("t")
	se := s.NewSession()
	k := Key{Route: []byte("r"), Namespace: []byte("ns"), User: []byte("u")}
	if _, _, ok, err := se.GetKeyRef(tab, k); err != nil || ok {
		t.Fatalf("GetKeyRef of an absent key = %v, %v; want false, nil", ok, err)
	}
	if err := se.PutKey(tab, k, []byte("v0")); err != nil {
		t.Fatal(err)
	}
	if err := s.Commit(nil); err != nil {
		t.Fatal(err)
	}
	se.Reset()
	sp := se.Savepoint()
	v, ref, ok, err := se.GetKeyRef(tab, k)
	if err != nil || !ok || string(v) != "v0" {
		t.Fatalf("GetKeyRef = %q, %v, %v; want v0, true, nil", v, ok, err)
	}
	se.PutRef(ref, []byte("v1"))
	if v, ok, _ := se.GetKey(tab, k); !ok || string(v) != "v1" {
		t.Fatalf("after PutRef: %q, %v; want v1", v, ok)
	}
	if got := tab.Dirty(); got != 1 {
		t.Fatalf("dirty entries after PutRef = %d, want 1", got)
	}
	se.RollbackTo(sp)
	if v, ok, _ := se.GetKey(tab, k); !ok || string(v) != "v0" {
		t.Fatalf("after rollback: %q, %v; want v0", v, ok)
	}
	if got := tab.Dirty(); got != 0 {
		t.Fatalf("dirty entries after rollback = %d, want 0", got)
	}
	plain := Key{Route: []byte("p")}
	if err := se.PutKey(tab, plain, []byte("p0")); err != nil {
		t.Fatal(err)
	}
	_, ref, ok, err = se.GetKeyRef(tab, plain)
	if err != nil || !ok {
		t.Fatalf("GetKeyRef of a plain key = %v, %v", ok, err)
	}
	se.PutRef(ref, []byte("p1"))
	if v, _, _ := se.Get(tab, []byte("p")); string(v) != "p1" {
		t.Fatalf("plain key after PutRef = %q, want p1", v)
	}
}
