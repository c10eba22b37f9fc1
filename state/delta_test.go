package state

import (
	"bytes"
	"errors"
	"fmt"
	"testing"

	"pgregory.net/rapid"
)

// TestExportDeltaMakesTheNextExport changes a store at random between two
// exports of each group, and checks that the delta of the second against
// the index of the first, applied to the first, makes the second byte for
// byte: plain and namespaced entries put, changed and deleted, timers set
// and removed, a table that the first export does not have.
func TestExportDeltaMakesTheNextExport(t *testing.T) {
	const groups = 4
	s := openTest(t, t.TempDir(), groups)
	s.Table("a")
	s.Table("b")
	se := s.NewSession()
	exports := make([][]byte, groups)
	exportAll := func(t *rapid.T) [][]byte {
		out := make([][]byte, groups)
		for kg := range groups {
			data, err := s.ExportKeyGroup(kg)
			if err != nil {
				t.Fatal(err)
			}
			out[kg] = data
		}
		return out
	}
	rapid.Check(t, func(t *rapid.T) {
		if exports[0] == nil {
			exports = exportAll(t)
		}
		route := func() []byte { return fmt.Appendf(nil, "r%d", rapid.IntRange(0, 40).Draw(t, "route")) }
		table := func() *Table { return s.Table(rapid.SampledFrom([]string{"a", "b", "c"}).Draw(t, "table")) }
		ns := func() Key {
			return Key{Route: route(), Namespace: []byte("w"), User: []byte{byte(rapid.IntRange(0, 3).Draw(t, "sub"))}}
		}
		value := func() []byte { return rapid.SliceOfN(rapid.Byte(), 0, 12).Draw(t, "value") }
		timer := func() Timer {
			return Timer{Domain: EventTime, Time: int64(rapid.IntRange(0, 5).Draw(t, "time")), Route: route(), Name: []byte("t")}
		}
		for range rapid.IntRange(0, 30).Draw(t, "changes") {
			var err error
			switch rapid.IntRange(0, 5).Draw(t, "change") {
			case 0:
				err = se.Put(table(), route(), value())
			case 1:
				err = se.Delete(table(), route())
			case 2:
				err = se.PutKey(table(), ns(), value())
			case 3:
				err = se.DeleteKey(table(), ns())
			case 4:
				err = se.SetTimer(timer())
			case 5:
				_, err = se.RemoveTimer(timer())
			}
			if err != nil {
				t.Fatal(err)
			}
		}
		if err := s.Commit(nil); err != nil {
			t.Fatal(err)
		}
		se.Reset()
		next := exportAll(t)
		for kg := range groups {
			x, err := IndexExport(exports[kg])
			if err != nil {
				t.Fatal(err)
			}
			d, err := ExportDelta(x, next[kg])
			if err != nil {
				t.Fatal(err)
			}
			got, err := ApplyExportDelta(exports[kg], d)
			if err != nil {
				t.Fatalf("key group %d: %v", kg, err)
			}
			if !bytes.Equal(got, next[kg]) {
				t.Fatalf("key group %d: the delta made %d bytes that are not the %d-byte export", kg, len(got), len(next[kg]))
			}
		}
		exports = next
	})
}

// TestExportDeltaIsWhatChanged checks that a delta carries what changed
// and not the rest: one value changed and one key deleted among 200 make
// a delta of a few dozen bytes, and no change a delta with no entry.
func TestExportDeltaIsWhatChanged(t *testing.T) {
	s := openTest(t, t.TempDir(), 1)
	tab := s.Table("a")
	se := s.NewSession()
	for i := range 200 {
		mustPut(t, se, tab, fmt.Appendf(nil, "key-%03d", i), bytes.Repeat([]byte{'v'}, 100))
	}
	if err := s.Commit(nil); err != nil {
		t.Fatal(err)
	}
	base, err := s.ExportKeyGroup(0)
	if err != nil {
		t.Fatal(err)
	}
	x, err := IndexExport(base)
	if err != nil {
		t.Fatal(err)
	}
	same, err := ExportDelta(x, base)
	if err != nil {
		t.Fatal(err)
	}
	mustPut(t, se, tab, []byte("key-007"), []byte("changed"))
	if err := se.Delete(tab, []byte("key-100")); err != nil {
		t.Fatal(err)
	}
	if err := s.Commit(nil); err != nil {
		t.Fatal(err)
	}
	next, err := s.ExportKeyGroup(0)
	if err != nil {
		t.Fatal(err)
	}
	d, err := ExportDelta(x, next)
	if err != nil {
		t.Fatal(err)
	}
	// The delta of no change is its header, two sections (the table's and
	// the timers') with nothing in them, and its checksum.
	empty := len(deltaMagic) + 1 + 16 + (1 + 1 + len("a") + 1 + 1) + (1 + 1 + 1) + 1 + 4
	if len(same) != empty {
		t.Errorf("the delta of an export against itself is %d bytes, want %d (no entry)", len(same), empty)
	}
	if !bytes.Contains(d, []byte("changed")) || bytes.Contains(d, bytes.Repeat([]byte{'v'}, 100)) {
		t.Errorf("the delta does not hold the changed value alone: %q", d)
	}
	if len(d) > empty+8+30 {
		t.Errorf("the delta of one change and one delete is %d bytes (the export %d)", len(d), len(next))
	}
	got, err := ApplyExportDelta(base, d)
	if err != nil || !bytes.Equal(got, next) {
		t.Fatalf("applied: %v, equal to the export: %v", err, bytes.Equal(got, next))
	}
}

// TestApplyExportDeltaRefuses checks that a delta applied to another base,
// a damaged delta and a delta that is not one are refused, naming the
// fault, with an error matching ErrBadExport.
func TestApplyExportDeltaRefuses(t *testing.T) {
	s := openTest(t, t.TempDir(), 2)
	tab := s.Table("a")
	se := s.NewSession()
	for i := range 20 {
		mustPut(t, se, tab, fmt.Appendf(nil, "key-%d", i), []byte("one"))
	}
	if err := s.Commit(nil); err != nil {
		t.Fatal(err)
	}
	export := func(kg int) []byte {
		data, err := s.ExportKeyGroup(kg)
		if err != nil {
			t.Fatal(err)
		}
		return data
	}
	base, other := export(0), export(1)
	x, err := IndexExport(base)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 20 {
		mustPut(t, se, tab, fmt.Appendf(nil, "key-%d", i), []byte("two"))
	}
	if err := s.Commit(nil); err != nil {
		t.Fatal(err)
	}
	next := export(0)
	d, err := ExportDelta(x, next)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ExportDelta(x, export(1)); !errors.Is(err, ErrBadExport) {
		t.Errorf("a delta against another group's index: %v, want ErrBadExport", err)
	}
	damaged := bytes.Clone(d)
	damaged[len(damaged)/2] ^= 1
	for _, c := range []struct {
		name        string
		base, delta []byte
		want        string
	}{
		{"another group's export", other, d, "key group 0 of 2, the base of 1 of 2"},
		{"a later export of the group", next, d, "made against another export of the group"},
		{"a damaged delta", base, damaged, "the delta is damaged"},
		{"an export for a delta", base, next, "not a key group delta"},
		{"a delta for a base", d, d, "its base: not a key group export"},
	} {
		_, err := ApplyExportDelta(c.base, c.delta)
		if !errors.Is(err, ErrBadExport) || err == nil || !bytes.Contains([]byte(err.Error()), []byte(c.want)) {
			t.Errorf("%s: %v, want ErrBadExport saying %q", c.name, err, c.want)
		}
	}
}
