package state

import (
	"bytes"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"testing"
)

// fillQueryStore commits 40 keys to table a and 5 to table b, then puts a
// key in a without committing it.
func fillQueryStore(t *testing.T, dir string) *Store {
	t.Helper()
	s, err := Open(dir, quietOptions(4))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	se := s.NewSession()
	a, b := s.Table("a"), s.Table("b")
	for i := range 40 {
		p := "x"
		if i%2 == 1 {
			p = "y"
		}
		mustPut(t, se, a, fmt.Appendf(nil, "%s-%02d", p, i), fmt.Appendf(nil, "v%d", i))
	}
	for i := range 5 {
		mustPut(t, se, b, fmt.Appendf(nil, "b-%d", i), []byte{0xff, byte(i)})
	}
	if err := s.Commit(map[string]uint64{"src": 1}); err != nil {
		t.Fatal(err)
	}
	mustPut(t, s.NewSession(), a, []byte("x-uncommitted"), []byte("u"))
	return s
}

type reader interface {
	Read(Query) (Page, error)
}

// readAll pages through q with limit and returns every entry.
func readAll(t *testing.T, r reader, q Query) (all []Entry, pages int) {
	t.Helper()
	for {
		p, err := r.Read(q)
		if err != nil {
			t.Fatal(err)
		}
		pages++
		if len(p.Entries) > q.Limit {
			t.Fatalf("page of %d entries, limit %d", len(p.Entries), q.Limit)
		}
		all = append(all, p.Entries...)
		if p.Next == "" {
			return all, pages
		}
		if len(p.Entries) == 0 {
			t.Fatal("an empty page with a next cursor")
		}
		q.After = p.Next
		if pages > 1000 {
			t.Fatal("paging does not end")
		}
	}
}

// TestRead reads committed entries in pages, filtered by table, prefix and
// key group, from a Store and a Reader of the same directory: every page
// together holds each committed entry once, in storage order, and nothing
// uncommitted.
func TestRead(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "state")
	s := fillQueryStore(t, dir)
	check := func(t *testing.T, r reader) {
		all, pages := readAll(t, r, Query{KeyGroup: -1, Limit: 7})
		if len(all) != 45 || pages != 7 {
			t.Fatalf("%d entries in %d pages, want 45 in 7", len(all), pages)
		}
		seen := map[string]bool{}
		for i, e := range all {
			if e.KeyGroup != KeyGroup(e.Key, 4) {
				t.Errorf("%s: key group %d, want %d", e.Key, e.KeyGroup, KeyGroup(e.Key, 4))
			}
			if seen[e.Table+"/"+string(e.Key)] {
				t.Errorf("%s/%s twice", e.Table, e.Key)
			}
			seen[e.Table+"/"+string(e.Key)] = true
			if bytes.Equal(e.Key, []byte("x-uncommitted")) {
				t.Error("an uncommitted key was read")
			}
			if i > 0 {
				p := all[i-1]
				if p.Table == e.Table && (p.KeyGroup > e.KeyGroup || p.KeyGroup == e.KeyGroup && bytes.Compare(p.Key, e.Key) >= 0) {
					t.Errorf("%s after %s: not in storage order", e.Key, p.Key)
				}
			}
		}
		if all[0].Table != "a" || all[44].Table != "b" || !bytes.Equal(all[44].Value[:1], []byte{0xff}) {
			t.Errorf("first %+v, last %+v", all[0], all[44])
		}

		b, _ := readAll(t, r, Query{Table: "b", KeyGroup: -1, Limit: 100})
		if len(b) != 5 {
			t.Errorf("table b: %d entries, want 5", len(b))
		}
		y, _ := readAll(t, r, Query{Table: "a", Prefix: []byte("y-"), KeyGroup: -1, Limit: 3})
		if len(y) != 20 {
			t.Errorf("prefix y-: %d entries, want 20", len(y))
		}
		for kg := range 4 {
			g, _ := readAll(t, r, Query{KeyGroup: kg, Limit: 2})
			for _, e := range g {
				if e.KeyGroup != kg {
					t.Errorf("key group %d: read %s of group %d", kg, e.Key, e.KeyGroup)
				}
			}
			want := 0
			for _, e := range all {
				if e.KeyGroup == kg {
					want++
				}
			}
			if len(g) != want {
				t.Errorf("key group %d: %d entries, want %d", kg, len(g), want)
			}
		}
		exact, _ := readAll(t, r, Query{Limit: 45, KeyGroup: -1})
		if p, _ := r.Read(Query{Limit: 45, KeyGroup: -1}); p.Next != "" || len(exact) != 45 {
			t.Errorf("a page holding everything has next %q", p.Next)
		}

		for _, q := range []Query{
			{KeyGroup: -1},
			{KeyGroup: -1, Limit: MaxQueryLimit + 1},
			{KeyGroup: 4, Limit: 1},
			{KeyGroup: -2, Limit: 1},
			{KeyGroup: -1, Limit: 1, After: "!!"},
			{KeyGroup: -1, Limit: 1, After: "AAAA"},
		} {
			if _, err := r.Read(q); !errors.Is(err, ErrBadQuery) {
				t.Errorf("%+v: %v, want ErrBadQuery", q, err)
			}
		}
		if _, err := r.Read(Query{Table: "nope", KeyGroup: -1, Limit: 1}); !errors.Is(err, ErrUnknownTable) {
			t.Errorf("unknown table: %v, want ErrUnknownTable", err)
		}
	}
	t.Run("store", func(t *testing.T) { check(t, s) })
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	r, err := OpenReadOnly(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	t.Run("reader", func(t *testing.T) { check(t, r) })
	if got := r.Tables(); !slices.Equal(got, []string{"a", "b"}) {
		t.Errorf("tables %v", got)
	}
}

// TestReadWhileClosing reads from several goroutines while the store
// closes: each Read returns a page or ErrClosed, none reads a closed
// Pebble.
func TestReadWhileClosing(t *testing.T) {
	s := fillQueryStore(t, filepath.Join(t.TempDir(), "state"))
	errs := make(chan error, 4)
	for range 4 {
		go func() {
			for {
				if _, err := s.Read(Query{KeyGroup: -1, Limit: 50}); err != nil {
					if errors.Is(err, ErrClosed) {
						err = nil
					}
					errs <- err
					return
				}
			}
		}()
	}
	if _, err := s.Read(Query{KeyGroup: -1, Limit: 1}); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	for range 4 {
		if err := <-errs; err != nil {
			t.Errorf("Read while closing: %v", err)
		}
	}
}

// TestReadNamespacedKeys: Read gives a plain key as before (routing key,
// no namespace or user key) and a namespaced one with its parts; a prefix
// selects on the routing key.
func TestReadNamespacedKeys(t *testing.T) {
	s := openTest(t, t.TempDir(), 2)
	se := s.NewSession()
	tab := s.Table("t")
	mustPut(t, se, tab, []byte("r\x00a"), []byte("plain"))
	if err := se.PutKey(tab, Key{[]byte("r\x00a"), []byte("win"), []byte("\x00u")}, []byte("ns")); err != nil {
		t.Fatal(err)
	}
	if err := se.PutKey(tab, Key{[]byte("q"), nil, []byte("u")}, []byte("user only")); err != nil {
		t.Fatal(err)
	}
	if err := s.Commit(nil); err != nil {
		t.Fatal(err)
	}
	p, err := s.Read(Query{Table: "t", Prefix: []byte("r\x00"), KeyGroup: -1, Limit: 10})
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Entries) != 2 {
		t.Fatalf("prefix r\\x00: %d entries, want 2", len(p.Entries))
	}
	plain, ns := p.Entries[0], p.Entries[1]
	if string(plain.Key) != "r\x00a" || plain.Namespace != nil || plain.User != nil || string(plain.Value) != "plain" {
		t.Fatalf("plain entry %+v", plain)
	}
	if string(ns.Key) != "r\x00a" || string(ns.Namespace) != "win" || string(ns.User) != "\x00u" || string(ns.Value) != "ns" {
		t.Fatalf("namespaced entry %+v", ns)
	}
	p, err = s.Read(Query{Table: "t", Prefix: []byte("q"), KeyGroup: -1, Limit: 10})
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Entries) != 1 || p.Entries[0].Namespace == nil || len(p.Entries[0].Namespace) != 0 || string(p.Entries[0].User) != "u" {
		t.Fatalf("key with an empty namespace: %+v", p.Entries)
	}
}
