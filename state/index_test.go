package state

import (
	"errors"
	"fmt"
	"testing"

	"pgregory.net/rapid"
)

// TestKeyIndexAgainstMap checks keyIndex against a Go map under random
// inserts and removals. Hashes are drawn from a small set, so that keys
// share hashes and homes, runs wrap around the end of the table, and a
// removal has words to move back.
func TestKeyIndexAgainstMap(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		var (
			x       keyIndex
			entries []entry
			hashes  []uint32
			want    = map[string]int32{}
		)
		hashOf := rapid.Uint32Range(0, 40).Draw(t, "hash spread")
		for step := range rapid.IntRange(1, 400).Draw(t, "steps") {
			key := fmt.Sprint("k", rapid.IntRange(0, 60).Draw(t, "key"))
			h := uint32(len(key)) * 2654435761 % (hashOf + 1)
			if rapid.Bool().Draw(t, "spread high bits") {
				h |= uint32(len(key)) << 28
			}
			// One hash per key, whatever was drawn before.
			for s, e := range entries {
				if e.key == key {
					h = hashes[s]
				}
			}
			slot, ok := x.find(entries, []byte(key), h)
			wslot, wok := want[key]
			if ok != wok || ok && slot != wslot {
				t.Fatalf("step %d: find(%q) = %d, %v; want %d, %v", step, key, slot, ok, wslot, wok)
			}
			if ok {
				x.remove(h, slot)
				delete(want, key)
				entries[slot].key = ""
				continue
			}
			slot = int32(len(entries))
			entries = append(entries, entry{key: key})
			hashes = append(hashes, h)
			x.insert(h, slot)
			want[key] = slot
		}
		if x.len() != len(want) {
			t.Fatalf("len %d, want %d", x.len(), len(want))
		}
		for key, slot := range want {
			if got, ok := x.find(entries, []byte(key), hashes[slot]); !ok || got != slot {
				t.Fatalf("at the end: find(%q) = %d, %v; want %d", key, got, ok, slot)
			}
		}
	})
}

// TestGetAllAsGet checks Session.GetAll against Get, one key after the
// other, over two tables with keys present, deleted and never written,
// runs longer and shorter than lookupRun, and a key group the session
// does not own.
func TestGetAllAsGet(t *testing.T) {
	s := openTest(t, t.TempDir(), 8)
	tabs := []*Table{s.Table("a"), s.Table("b")}
	se := s.NewSession()
	rapid.Check(t, func(t *rapid.T) {
		for range rapid.IntRange(0, 300).Draw(t, "writes") {
			tab := tabs[rapid.IntRange(0, 1).Draw(t, "table")]
			key := []byte(fmt.Sprint("k", rapid.IntRange(0, 200).Draw(t, "key")))
			var err error
			if rapid.IntRange(0, 3).Draw(t, "op") == 0 {
				err = se.Delete(tab, key)
			} else {
				err = se.Put(tab, key, []byte(fmt.Sprint("v", rapid.Int().Draw(t, "value"))))
			}
			if err != nil {
				t.Fatal(err)
			}
		}
		se.Reset()
		ls := make([]Lookup, rapid.IntRange(0, 3*lookupRun+5).Draw(t, "reads"))
		for i := range ls {
			ls[i] = Lookup{Table: tabs[rapid.IntRange(0, 1).Draw(t, "table")], Key: []byte(fmt.Sprint("k", rapid.IntRange(0, 260).Draw(t, "key")))}
		}
		if i, err := se.GetAll(ls); err != nil {
			t.Fatalf("GetAll: lookup %d: %v", i, err)
		}
		for _, l := range ls {
			v, ok, _ := se.Get(l.Table, l.Key)
			if ok != l.Found || string(v) != string(l.Value) {
				t.Fatalf("%s %q: GetAll %q, %v; Get %q, %v", l.Table.Name(), l.Key, l.Value, l.Found, v, ok)
			}
		}
		if len(ls) == 0 {
			return
		}
		// Without the key group of one of them: that lookup fails, by index.
		bad := rapid.IntRange(0, len(ls)-1).Draw(t, "not owned")
		kg := KeyGroup(ls[bad].Key, 8)
		se.SetOwned(func(g int) bool { return g != kg })
		defer se.SetOwned(nil)
		i, err := se.GetAll(ls)
		if !errors.Is(err, ErrNotOwned) || KeyGroup(ls[i].Key, 8) != kg || i > bad {
			t.Fatalf("without key group %d (lookup %d): GetAll fails at %d with %v", kg, bad, i, err)
		}
	})
}

// TestWriteAllAsUpdate checks Table.WriteAll and WriteAllParallel
// against Group.Update and Group.Delete one after the other on a twin
// table: the same values and the same dirty entries, with keys written
// twice in a run, deleted and written again (empty values too), and
// deleted while absent, with commits between batches.
func TestWriteAllAsUpdate(t *testing.T) {
	s := openTest(t, t.TempDir(), 4)
	n := 0
	rapid.Check(t, func(t *rapid.T) {
		n++
		all, one, par := s.Table(fmt.Sprint("all", n)), s.Table(fmt.Sprint("one", n)), s.Table(fmt.Sprint("par", n))
		parts := rapid.IntRange(1, 3).Draw(t, "parts")
		for range rapid.IntRange(1, 4).Draw(t, "batches") {
			size := rapid.OneOf(rapid.IntRange(0, 3*lookupRun), rapid.IntRange(parallelWrites, parallelWrites+3*lookupRun)).Draw(t, "writes")
			ws := make([]Write, size)
			for i := range ws {
				ws[i] = Write{Key: []byte(fmt.Sprint("k", rapid.IntRange(0, 40).Draw(t, "key")))}
				if rapid.IntRange(0, 3).Draw(t, "op") == 0 {
					ws[i].Delete = true
				} else {
					ws[i].Value = []byte(rapid.SampledFrom([]string{"", "v0", "v1", "v2"}).Draw(t, "value"))
				}
			}
			all.WriteAll(ws)
			par.WriteAllParallel(ws, parts)
			for _, w := range ws {
				g := one.Group(KeyGroup(w.Key, one.KeyGroups()))
				if w.Delete {
					g.Delete(w.Key)
				} else {
					g.Update(w.Key, w.Value)
				}
			}
			if all.Len() != one.Len() || all.Dirty() != one.Dirty() || par.Len() != one.Len() || par.Dirty() != one.Dirty() {
				t.Fatalf("WriteAll: %d keys, %d dirty; in %d parts: %d, %d; one by one: %d, %d",
					all.Len(), all.Dirty(), parts, par.Len(), par.Dirty(), one.Len(), one.Dirty())
			}
			for k := range 41 {
				key := []byte(fmt.Sprint("k", k))
				va, oka := all.Group(KeyGroup(key, 4)).Get(key)
				vp, okp := par.Group(KeyGroup(key, 4)).Get(key)
				vo, oko := one.Group(KeyGroup(key, 4)).Get(key)
				if oka != oko || string(va) != string(vo) || okp != oko || string(vp) != string(vo) {
					t.Fatalf("%s: WriteAll %q, %v; in %d parts %q, %v; one by one %q, %v", key, va, oka, parts, vp, okp, vo, oko)
				}
			}
			if rapid.Bool().Draw(t, "commit") {
				if err := s.Commit(nil); err != nil {
					t.Fatal(err)
				}
			}
		}
	})
}
