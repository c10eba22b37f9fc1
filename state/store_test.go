package state

import (
	"bytes"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/cockroachdb/pebble/v2"
)

func key(i int) []byte { return []byte(fmt.Sprintf("key-%04d", i)) }

func mustPut(t testing.TB, se *Session, tab *Table, k, v []byte) {
	t.Helper()
	if err := se.Put(tab, k, v); err != nil {
		t.Fatal(err)
	}
}

func mustDelete(t testing.TB, se *Session, tab *Table, k []byte) {
	t.Helper()
	if err := se.Delete(tab, k); err != nil {
		t.Fatal(err)
	}
}

// fataler is what test helpers need of testing.TB and rapid.T alike.
type fataler interface {
	Helper()
	Fatal(args ...any)
}

type scanner interface {
	Scan(table string, fn func(key, value []byte) error) error
}

// scanAll returns a table's committed entries, checking that Scan yields
// them in strictly increasing key order.
func scanAll(t fataler, s scanner, table string) map[string]string {
	t.Helper()
	got := map[string]string{}
	var prev []byte
	err := s.Scan(table, func(k, v []byte) error {
		if prev != nil && bytes.Compare(prev, k) >= 0 {
			return fmt.Errorf("scan order: %q after %q", k, prev)
		}
		prev = append(prev[:0], k...)
		got[string(k)] = string(v)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return got
}

func openTest(t *testing.T, dir string, groups int) *Store {
	t.Helper()
	s, err := Open(dir, quietOptions(groups))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

func TestOpenCreatesAndReopens(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "nested", "data")
	s := openTest(t, dir, 0)
	if s.KeyGroups() != DefaultKeyGroups {
		t.Fatalf("new store has %d key groups, want %d", s.KeyGroups(), DefaultKeyGroups)
	}
	if len(s.Positions()) != 0 || len(s.Tables()) != 0 {
		t.Fatalf("new store has positions %v, tables %v", s.Positions(), s.Tables())
	}
	users, orders := s.Table("users"), s.Table("orders")
	if s.Table("users") != users {
		t.Fatal("Table returned a different table for the same name")
	}
	users.Group(KeyGroup([]byte("ann"), s.KeyGroups())).Put([]byte("ann"), []byte("1"))
	orders.Group(KeyGroup([]byte("o1"), s.KeyGroups())).Put([]byte("o1"), []byte("ann"))
	if err := s.Commit(map[string]uint64{"in": 42}); err != nil {
		t.Fatal(err)
	}
	ids := map[string]uint32{"users": users.ID(), "orders": orders.ID()}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}

	s = openTest(t, dir, DefaultKeyGroups)
	if got := s.Tables(); !slices.Equal(got, []string{"orders", "users"}) {
		t.Fatalf("tables after reopen: %v", got)
	}
	for name, id := range ids {
		if got := s.Table(name).ID(); got != id {
			t.Fatalf("table %s has id %d after reopen, was %d", name, got, id)
		}
	}
	if fresh := s.Table("fresh"); fresh.ID() == ids["users"] || fresh.ID() == ids["orders"] {
		t.Fatalf("new table reuses id %d", fresh.ID())
	}
	if got := s.Positions(); got["in"] != 42 || len(got) != 1 {
		t.Fatalf("positions after reopen: %v", got)
	}
	g := s.Table("users").Group(KeyGroup([]byte("ann"), s.KeyGroups()))
	if v, ok := g.Get([]byte("ann")); !ok || string(v) != "1" {
		t.Fatalf("users/ann after reopen = %q, %v", v, ok)
	}
	if g.Dirty() != 0 {
		t.Fatalf("loaded entries are dirty: %d", g.Dirty())
	}
}

func TestKeyGroupCountIsFixed(t *testing.T) {
	dir := t.TempDir()
	s := openTest(t, dir, 32)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	_, err := Open(dir, quietOptions(64))
	if !errors.Is(err, ErrKeyGroupMismatch) {
		t.Fatalf("reopen with 64 groups: %v, want ErrKeyGroupMismatch", err)
	}
	for _, n := range []string{"32", "64", dir} {
		if !strings.Contains(err.Error(), n) {
			t.Errorf("error %q does not name %s", err, n)
		}
	}
	s = openTest(t, dir, 0)
	if s.KeyGroups() != 32 {
		t.Fatalf("KeyGroups 0 adopted %d, want the recorded 32", s.KeyGroups())
	}
}

func TestOpenRejectsBadKeyGroupCount(t *testing.T) {
	for _, n := range []int{-1, MaxKeyGroups + 1} {
		if _, err := Open(t.TempDir(), quietOptions(n)); err == nil {
			t.Errorf("Open with %d key groups succeeded", n)
		}
	}
	s := openTest(t, t.TempDir(), MaxKeyGroups)
	tab := s.Table("t")
	tab.Group(MaxKeyGroups-1).Put([]byte("x"), []byte("y")) // wrong group on purpose: layout must hold kg 65535
	if err := s.Commit(nil); err != nil {
		t.Fatal(err)
	}
}

func TestOpenTwiceInProcessIsLocked(t *testing.T) {
	dir := t.TempDir()
	openTest(t, dir, 8)
	_, err := Open(dir, quietOptions(8))
	if !errors.Is(err, ErrLocked) || !strings.Contains(err.Error(), dir) {
		t.Fatalf("second Open: %v, want ErrLocked naming %s", err, dir)
	}
	if _, err := OpenReadOnly(dir); !errors.Is(err, ErrLocked) {
		t.Fatalf("OpenReadOnly while open: %v, want ErrLocked", err)
	}
}

func TestOpenRefusesForeignPebbleStore(t *testing.T) {
	dir := t.TempDir()
	db, err := pebble.Open(dir, &pebble.Options{Logger: pebbleLogger{quietOptions(0).Logger, newHealth(dir, quietOptions(0).Logger)}})
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Set([]byte("foreign"), []byte("x"), pebble.Sync); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(dir, quietOptions(8)); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("Open of a foreign store: %v, want ErrCorrupt", err)
	}
	if _, err := OpenReadOnly(dir); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("OpenReadOnly of a foreign store: %v, want ErrCorrupt", err)
	}
}

func TestCommitWritesOnlyDirtyEntries(t *testing.T) {
	s := openTest(t, t.TempDir(), 8)
	tab := s.Table("t")
	se := s.NewSession()
	for i := range 10 {
		mustPut(t, se, tab, key(i), []byte("v"))
	}
	if got := tab.Dirty(); got != 10 {
		t.Fatalf("dirty = %d, want 10", got)
	}
	if err := s.Commit(nil); err != nil {
		t.Fatal(err)
	}
	se.Reset()
	if st := s.Stats(); st.LastCommit.Entries != 10 || st.Tables[0].Dirty != 0 || st.Tables[0].Entries != 10 {
		t.Fatalf("stats after first commit: %+v", st)
	}
	mustPut(t, se, tab, key(1), []byte("w"))
	mustPut(t, se, tab, key(1), []byte("x")) // same key twice: one entry
	mustDelete(t, se, tab, key(2))
	mustDelete(t, se, tab, key(99)) // absent: nothing to commit
	if err := s.Commit(map[string]uint64{"a": 1}); err != nil {
		t.Fatal(err)
	}
	st := s.Stats()
	if st.LastCommit.Entries != 2 || st.LastCommit.Positions != 1 || st.LastCommit.Bytes == 0 {
		t.Fatalf("last commit: %+v", st.LastCommit)
	}
	if st.Total.Commits != 2 || st.Total.Entries != 12 {
		t.Fatalf("total: %+v", st.Total)
	}
	if st.Tables[0].Entries != 9 {
		t.Fatalf("entries = %d, want 9", st.Tables[0].Entries)
	}
	got := scanAll(t, s, "t")
	if len(got) != 9 || got[string(key(1))] != "x" {
		t.Fatalf("scan: %v", got)
	}
	if _, ok := got[string(key(2))]; ok {
		t.Fatal("deleted key survived the commit")
	}
	// An empty commit changes nothing and succeeds.
	if err := s.Commit(nil); err != nil {
		t.Fatal(err)
	}
	if s.Stats().LastCommit.Entries != 0 {
		t.Fatal("empty commit counted entries")
	}
}

func TestPositionsMerge(t *testing.T) {
	dir := t.TempDir()
	s := openTest(t, dir, 4)
	if err := s.Commit(map[string]uint64{"a": 1, "b": 2}); err != nil {
		t.Fatal(err)
	}
	if err := s.Commit(map[string]uint64{"b": 5}); err != nil {
		t.Fatal(err)
	}
	p := s.Positions()
	p["a"] = 100 // a copy: must not change the store
	if got := s.Positions(); got["a"] != 1 || got["b"] != 5 {
		t.Fatalf("positions: %v", got)
	}
	_ = s.Close()
	s = openTest(t, dir, 4)
	if got := s.Positions(); len(got) != 2 || got["a"] != 1 || got["b"] != 5 {
		t.Fatalf("positions after reopen: %v", got)
	}
}

func TestScan(t *testing.T) {
	s := openTest(t, t.TempDir(), 16)
	tab, other := s.Table("t"), s.Table("other")
	se := s.NewSession()
	var want []string
	for i := range 500 {
		k := fmt.Sprintf("%x", i*7919%1000)
		want = append(want, k)
		mustPut(t, se, tab, []byte(k), []byte("v"+k))
		mustPut(t, se, other, []byte(k), []byte("other"))
	}
	slices.Sort(want)
	if err := s.Commit(nil); err != nil {
		t.Fatal(err)
	}
	mustPut(t, se, tab, []byte("uncommitted"), []byte("x"))

	var keys []string
	err := s.Scan("t", func(k, v []byte) error {
		if string(v) != "v"+string(k) {
			return fmt.Errorf("%s = %s", k, v)
		}
		keys = append(keys, string(k))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(keys, want) {
		t.Fatalf("scan returned %d keys, want %d in order", len(keys), len(want))
	}

	stop := errors.New("stop")
	n := 0
	err = s.Scan("t", func(k, v []byte) error { n++; return stop })
	if err != stop || n != 1 {
		t.Fatalf("scan stopped with %v after %d calls", err, n)
	}
	if err := s.Scan("nope", func(k, v []byte) error { return nil }); !errors.Is(err, ErrUnknownTable) {
		t.Fatalf("scan of unknown table: %v", err)
	}
}

func TestClosedStore(t *testing.T) {
	s := openTest(t, t.TempDir(), 4)
	_ = s.Close()
	if err := s.Commit(nil); !errors.Is(err, ErrClosed) {
		t.Fatalf("Commit after Close: %v", err)
	}
	if err := s.Scan("t", nil); !errors.Is(err, ErrClosed) {
		t.Fatalf("Scan after Close: %v", err)
	}
}

func TestReader(t *testing.T) {
	dir := t.TempDir()
	s := openTest(t, dir, 8)
	se := s.NewSession()
	mustPut(t, se, s.Table("t"), []byte("b"), []byte("2"))
	mustPut(t, se, s.Table("t"), []byte("a"), []byte("1"))
	if err := s.Commit(map[string]uint64{"src": 7}); err != nil {
		t.Fatal(err)
	}
	mustPut(t, se, s.Table("t"), []byte("c"), []byte("uncommitted"))
	_ = s.Close()

	r, err := OpenReadOnly(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if r.KeyGroups() != 8 || !slices.Equal(r.Tables(), []string{"t"}) || r.Positions()["src"] != 7 {
		t.Fatalf("reader: %d groups, tables %v, positions %v", r.KeyGroups(), r.Tables(), r.Positions())
	}
	if got := scanAll(t, r, "t"); len(got) != 2 || got["a"] != "1" || got["b"] != "2" {
		t.Fatalf("reader scan: %v", got)
	}
	if err := r.Scan("nope", nil); !errors.Is(err, ErrUnknownTable) {
		t.Fatalf("reader scan of unknown table: %v", err)
	}
	if _, err := Open(dir, quietOptions(8)); !errors.Is(err, ErrLocked) {
		t.Fatalf("Open while a Reader is open: %v", err)
	}
	if _, err := OpenReadOnly(filepath.Join(dir, "missing")); err == nil {
		t.Fatal("OpenReadOnly of a missing directory succeeded")
	}
}

func TestNewTableIDCommittedWithData(t *testing.T) {
	dir := t.TempDir()
	s := openTest(t, dir, 4)
	a := s.Table("a")
	b := s.Table("b") // created, written, but never committed
	b.Group(0).Put([]byte("x"), []byte("y"))
	_ = a
	_ = s.Close()
	s = openTest(t, dir, 4)
	if got := s.Tables(); len(got) != 0 {
		t.Fatalf("uncommitted tables persisted: %v", got)
	}
}
