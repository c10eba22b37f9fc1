package state

import (
	"bytes"
	"errors"
	"fmt"
	"maps"
	"testing"

	"github.com/RaduBerinde/btreemap"
)

// groupContent is everything a store holds in one key group: entries by
// table and key, and timers, as read through a Session.
func groupContent(t *testing.T, s *Store, kg int) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, name := range s.Tables() {
		tab := s.Table(name)
		tab.Group(kg).Range(func(k, v []byte) bool {
			out[fmt.Sprintf("%s %s", name, Key{Route: k})] = string(v)
			return true
		})
		g := tab.Group(kg)
		if g.ord != nil {
			for enc := range g.ord.tree.Ascend(btreemap.Min[string](), btreemap.Max[string]()) {
				k, _ := decodeKey([]byte(enc))
				v, _ := g.getOrd([]byte(enc))
				out[fmt.Sprintf("%s %s", name, k)] = string(v)
			}
		}
	}
	se := s.NewSession()
	for _, d := range []TimeDomain{EventTime, ProcessingTime} {
		if err := se.Timers(kg, d, 1<<63-1, func(tm Timer) bool {
			out[fmt.Sprintf("timer %v %d %q %q %q", tm.Domain, tm.Time, tm.Route, tm.Namespace, tm.Name)] = ""
			return true
		}); err != nil {
			t.Fatal(err)
		}
	}
	return out
}

// fillGroups writes plain and namespaced keys and timers for routes
// route-0..n-1 with values tagged by tag, and commits.
func fillGroups(t *testing.T, s *Store, n int, tag string) {
	t.Helper()
	se := s.NewSession()
	for i := range n {
		r := []byte(fmt.Sprint("route-", i))
		for _, tab := range []string{"a", "b"} {
			mustPut(t, se, s.Table(tab), r, []byte(tag+"-plain"))
			if err := se.PutKey(s.Table(tab), Key{r, []byte("win\x00"), []byte{byte(i)}}, []byte(tag+"-ns")); err != nil {
				t.Fatal(err)
			}
		}
		if err := se.SetTimer(Timer{Domain: EventTime, Time: int64(i), Route: r, Name: []byte(tag)}); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Commit(nil); err != nil {
		t.Fatal(err)
	}
}

// TestExportImportDropKeyGroup moves one key group from store A to store B
// and drops it from A: B's group then equals A's, in memory and after a
// reopen, B's other groups are unchanged, and A's group is empty after a
// reopen.
func TestExportImportDropKeyGroup(t *testing.T) {
	const groups = 4
	dirA, dirB := t.TempDir(), t.TempDir()
	a := openTest(t, dirA, groups)
	b := openTest(t, dirB, groups)
	fillGroups(t, a, 20, "A")
	fillGroups(t, b, 20, "B")
	b.Table("only-b") // a table the export does not name

	const kg = 1
	wantA := groupContent(t, a, kg)
	if len(wantA) == 0 {
		t.Fatal("key group 1 is empty: the test needs content")
	}
	otherB := map[int]map[string]string{}
	for g := range groups {
		if g != kg {
			otherB[g] = groupContent(t, b, g)
		}
	}
	data, err := a.ExportKeyGroup(kg)
	if err != nil {
		t.Fatal(err)
	}
	if err := b.ImportKeyGroup(kg, data); err != nil {
		t.Fatal(err)
	}
	check := func(when string, b *Store) {
		t.Helper()
		if got := groupContent(t, b, kg); !maps.Equal(got, wantA) {
			t.Fatalf("%s: B's key group %d:\n got %v\nwant %v", when, kg, got, wantA)
		}
		for g, want := range otherB {
			if got := groupContent(t, b, g); !maps.Equal(got, want) {
				t.Fatalf("%s: B's key group %d changed", when, g)
			}
		}
	}
	check("after import", b)
	if err := b.Commit(nil); err != nil {
		t.Fatal(err)
	}
	// B's export now equals A's, byte for byte, but for the table only B has.
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	b = openTest(t, dirB, 0)
	check("after commit and reopen", b)

	if err := a.DropKeyGroup(kg); err != nil {
		t.Fatal(err)
	}
	if got := groupContent(t, a, kg); len(got) != 0 {
		t.Fatalf("after drop: %v", got)
	}
	if err := a.Commit(nil); err != nil {
		t.Fatal(err)
	}
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	a = openTest(t, dirA, 0)
	if got := groupContent(t, a, kg); len(got) != 0 {
		t.Fatalf("after drop and reopen: %v", got)
	}
	if got := groupContent(t, a, 0); len(got) == 0 {
		t.Fatal("the drop emptied key group 0 too")
	}
}

// TestImportThenWriteInOneCommit: writes after an import (or drop) in the
// same batch survive the range deletion the Commit writes.
func TestImportThenWriteInOneCommit(t *testing.T) {
	dir := t.TempDir()
	s := openTest(t, dir, 2)
	fillGroups(t, s, 6, "old")
	r := []byte("route-0")
	kg := KeyGroup(r, 2)
	if err := s.DropKeyGroup(kg); err != nil {
		t.Fatal(err)
	}
	se := s.NewSession()
	mustPut(t, se, s.Table("a"), r, []byte("new"))
	if err := s.Commit(nil); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = openTest(t, dir, 0)
	got := groupContent(t, s, kg)
	want := map[string]string{"a " + Key{Route: r}.String(): "new"}
	if !maps.Equal(got, want) {
		t.Fatalf("got %v, want %v", got, want)
	}
}

// TestExportRefusals: uncommitted changes and bad imports are refused.
func TestExportRefusals(t *testing.T) {
	s := openTest(t, t.TempDir(), 4)
	fillGroups(t, s, 8, "x")
	r := []byte("route-1")
	kg := KeyGroup(r, 4)
	se := s.NewSession()
	mustPut(t, se, s.Table("a"), r, []byte("dirty"))
	if _, err := s.ExportKeyGroup(kg); !errors.Is(err, ErrUncommitted) {
		t.Fatalf("export of a dirty group: %v", err)
	}
	p, err := s.Prepare()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.ExportKeyGroup(kg); !errors.Is(err, ErrUncommitted) {
		t.Fatalf("export while a prepared commit is pending: %v", err)
	}
	if err := p.Commit(t.Context(), nil); err != nil {
		t.Fatal(err)
	}
	data, err := s.ExportKeyGroup(kg)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.ExportKeyGroup(4); err == nil {
		t.Fatal("export of key group 4 of 4: no error")
	}

	other := openTest(t, t.TempDir(), 8)
	bad := map[string]struct {
		s    *Store
		kg   int
		data []byte
	}{
		"other key group":       {s, (kg + 1) % 4, data},
		"other key group count": {other, kg, data},
		"damaged":               {s, kg, flipByte(data, len(data)/2)},
		"truncated":             {s, kg, data[:len(data)/2]},
		"not an export":         {s, kg, []byte("hello")},
	}
	for name, c := range bad {
		before := groupContent(t, c.s, c.kg)
		if err := c.s.ImportKeyGroup(c.kg, c.data); !errors.Is(err, ErrBadExport) {
			t.Errorf("%s: %v", name, err)
		}
		if after := groupContent(t, c.s, c.kg); !maps.Equal(before, after) {
			t.Errorf("%s: a refused import changed the group", name)
		}
	}
}

// flipByte returns a copy of b with one bit of b[i] flipped.
func flipByte(b []byte, i int) []byte {
	b = bytes.Clone(b)
	b[i] ^= 1
	return b
}

// TestExportedKeyGroup reads the header of an export and refuses a
// damaged one.
func TestExportedKeyGroup(t *testing.T) {
	s := openTest(t, t.TempDir(), 4)
	se := s.NewSession()
	k := []byte("key")
	kg := KeyGroup(k, 4)
	if err := se.Put(s.Table("t"), k, []byte("v")); err != nil {
		t.Fatal(err)
	}
	if err := s.Commit(nil); err != nil {
		t.Fatal(err)
	}
	data, err := s.ExportKeyGroup(kg)
	if err != nil {
		t.Fatal(err)
	}
	if g, n, err := ExportedKeyGroup(data); err != nil || g != kg || n != 4 {
		t.Fatalf("ExportedKeyGroup = %d, %d, %v; want %d, 4", g, n, err, kg)
	}
	bad := append([]byte(nil), data...)
	bad[len(bad)-6] ^= 1
	for _, d := range [][]byte{nil, []byte("SLUICEKG"), bad, data[:len(data)-1]} {
		if _, _, err := ExportedKeyGroup(d); !errors.Is(err, ErrBadExport) {
			t.Errorf("ExportedKeyGroup(%q): %v, want ErrBadExport", d, err)
		}
	}
}
