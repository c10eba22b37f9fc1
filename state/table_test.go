package state

import (
	"slices"
	"testing"
)

func TestGroupPutGetDelete(t *testing.T) {
	s := openTest(t, t.TempDir(), 4)
	g := s.Table("t").Group(2)
	if g.KeyGroup() != 2 || g.Table().Name() != "t" {
		t.Fatalf("group %d of %q", g.KeyGroup(), g.Table().Name())
	}
	if _, ok := g.Get([]byte("k")); ok {
		t.Fatal("Get of a missing key found it")
	}
	val := []byte("value")
	g.Put([]byte("k"), val)
	val[0] = 'X' // values are copied in
	if v, ok := g.Get([]byte("k")); !ok || string(v) != "value" {
		t.Fatalf("Get = %q, %v", v, ok)
	}
	g.Put([]byte("empty"), nil)
	if v, ok := g.Get([]byte("empty")); !ok || len(v) != 0 {
		t.Fatalf("empty value: %q, %v", v, ok)
	}
	if g.Len() != 2 || g.Dirty() != 2 {
		t.Fatalf("len %d dirty %d", g.Len(), g.Dirty())
	}
	g.Delete([]byte("k"))
	g.Delete([]byte("missing"))
	if _, ok := g.Get([]byte("k")); ok {
		t.Fatal("deleted key still there")
	}
	if g.Len() != 1 || g.Dirty() != 2 {
		t.Fatalf("after delete: len %d dirty %d", g.Len(), g.Dirty())
	}
	// Overwrite with a longer and a shorter value.
	g.Put([]byte("k"), []byte("a much longer value than before"))
	g.Put([]byte("k"), []byte("short"))
	if v, _ := g.Get([]byte("k")); string(v) != "short" {
		t.Fatalf("after overwrites: %q", v)
	}
	// Put of a value that aliases the stored one.
	v, _ := g.Get([]byte("k"))
	g.Put([]byte("k"), v[1:])
	if v, _ := g.Get([]byte("k")); string(v) != "hort" {
		t.Fatalf("aliased put: %q", v)
	}

	var keys []string
	g.Range(func(k, v []byte) bool { keys = append(keys, string(k)); return true })
	slices.Sort(keys)
	if !slices.Equal(keys, []string{"empty", "k"}) {
		t.Fatalf("Range: %v", keys)
	}
	n := 0
	g.Range(func(k, v []byte) bool { n++; return false })
	if n != 1 {
		t.Fatalf("Range did not stop: %d calls", n)
	}
}

func TestGroupGetDoesNotAllocate(t *testing.T) {
	s := openTest(t, t.TempDir(), 4)
	g := s.Table("t").Group(0)
	g.Put([]byte("present"), []byte("v"))
	k, missing := []byte("present"), []byte("missing")
	if n := testing.AllocsPerRun(100, func() { g.Get(k); g.Get(missing) }); n != 0 {
		t.Fatalf("Get allocates %v times", n)
	}
	if n := testing.AllocsPerRun(100, func() { g.Put(k, []byte("w")) }); n != 0 {
		t.Fatalf("Put of an existing key allocates %v times", n)
	}
}

func TestCommittedDeletionFreesSlot(t *testing.T) {
	s := openTest(t, t.TempDir(), 1)
	g := s.Table("t").Group(0)
	g.Put([]byte("a"), []byte("1"))
	if err := s.Commit(nil); err != nil {
		t.Fatal(err)
	}
	g.Delete([]byte("a"))
	if err := s.Commit(nil); err != nil {
		t.Fatal(err)
	}
	if g.index.len() != 0 || len(g.free) != 1 {
		t.Fatalf("after committed delete: index %v, free %v", g.index, g.free)
	}
	g.Put([]byte("b"), []byte("2"))
	if len(g.entries) != 1 {
		t.Fatalf("slot not reused: %d entries", len(g.entries))
	}
}

// TestGroupUpdate: Update writes a new key and a changed value, marked
// dirty and committed, and leaves an equal value alone: not dirty, so the
// next commit writes nothing for it.
func TestGroupUpdate(t *testing.T) {
	s := openTest(t, t.TempDir(), 1)
	g := s.Table("t").Group(0)
	if !g.Update([]byte("a"), []byte("1")) || !g.Update([]byte("b"), []byte("2")) {
		t.Fatal("Update of a new key reported no write")
	}
	if err := s.Commit(nil); err != nil {
		t.Fatal(err)
	}
	if g.Update([]byte("a"), []byte("1")) {
		t.Error("Update of an equal value reported a write")
	}
	if g.Dirty() != 0 {
		t.Errorf("an equal value left %d dirty entries, want 0", g.Dirty())
	}
	val := []byte("3")
	if !g.Update([]byte("b"), val) {
		t.Error("Update of a changed value reported no write")
	}
	val[0] = 'X' // values are copied in
	if err := s.Commit(nil); err != nil {
		t.Fatal(err)
	}
	if st := s.Stats().LastCommit; st.Entries != 1 {
		t.Errorf("the commit wrote %d entries, want 1 (b only)", st.Entries)
	}
	got := map[string]string{}
	if err := s.Scan("t", func(k, v []byte) error { got[string(k)] = string(v); return nil }); err != nil {
		t.Fatal(err)
	}
	if got["a"] != "1" || got["b"] != "3" || len(got) != 2 {
		t.Errorf("Pebble holds %v, want a=1 b=3", got)
	}
	g.Delete([]byte("a"))
	if !g.Update([]byte("a"), []byte("1")) {
		t.Error("Update of a deleted key reported no write")
	}
}
