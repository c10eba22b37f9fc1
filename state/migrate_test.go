package state

import (
	"bytes"
	"encoding/binary"
	"errors"
	"log/slog"
	"maps"
	"strings"
	"testing"

	"github.com/cockroachdb/pebble/v2"
)

// writeLayoutV1 writes a data directory as layout 1 stored it: state keys
// as is after the table id and key group.
func writeLayoutV1(t *testing.T, dir string, groups int, tables map[string]map[string]string) {
	t.Helper()
	db, err := pebble.Open(dir, &pebble.Options{})
	if err != nil {
		t.Fatal(err)
	}
	b := db.NewBatch()
	_ = b.Set(metaLayout, encodeU32(1), nil)
	_ = b.Set(metaKeyGroups, encodeU32(uint32(groups)), nil)
	_ = b.Set(appendPositionKey(nil, "src"), binary.BigEndian.AppendUint64(nil, 42), nil)
	id := uint32(0)
	for name, entries := range tables {
		id++
		_ = b.Set(metaTableKey(name), encodeU32(id), nil)
		for k, v := range entries {
			key := append(appendGroupPrefix(nil, id, KeyGroup([]byte(k), groups)), k...)
			_ = b.Set(key, []byte(v), nil)
		}
	}
	if err := db.Apply(b, pebble.Sync); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestOpenMigratesLayout1 opens a directory written with layout 1: Open
// rewrites every state key, logs how many, and the store then holds the
// same state; a read-only open before that is refused with advice.
func TestOpenMigratesLayout1(t *testing.T) {
	dir := t.TempDir()
	tables := map[string]map[string]string{
		"a": {"k1": "1", "k2": "2", "": "empty", "\x00\xff": "bin"},
		// A layout-1 key equal to the layout-2 key of "x".
		"b": {"x": "plain", "x\x00\x01\x00\x01": "lookalike"},
	}
	writeLayoutV1(t, dir, 4, tables)

	if _, err := OpenReadOnly(dir); !errors.Is(err, ErrLayout) || !strings.Contains(err.Error(), "migrate") {
		t.Fatalf("OpenReadOnly of layout 1: %v", err)
	}

	var logs bytes.Buffer
	s, err := Open(dir, Options{Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(logs.String(), "state layout migrated") || !strings.Contains(logs.String(), "keys=6") {
		t.Fatalf("log does not report the migration of 6 keys:\n%s", logs.String())
	}
	check := func(s interface {
		scanner
		Positions() map[string]uint64
	}) {
		t.Helper()
		for name, want := range tables {
			if got := scanAll(t, s, name); !maps.Equal(got, want) {
				t.Fatalf("table %s: %q, want %q", name, got, want)
			}
		}
		if got := s.Positions()["src"]; got != 42 {
			t.Fatalf("position %d, want 42", got)
		}
	}
	check(s)
	se := s.NewSession()
	if v, ok, _ := se.Get(s.Table("b"), []byte("x\x00\x01\x00\x01")); !ok || string(v) != "lookalike" {
		t.Fatalf("in memory: %q %v", v, ok)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	r, err := OpenReadOnly(dir)
	if err != nil {
		t.Fatal(err)
	}
	check(r)
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	s = openTest(t, dir, 4)
	check(s)
}

// TestOpenRefusesNewerLayout: a layout this build does not know is refused.
func TestOpenRefusesNewerLayout(t *testing.T) {
	dir := t.TempDir()
	db, err := pebble.Open(dir, &pebble.Options{})
	if err != nil {
		t.Fatal(err)
	}
	_ = db.Set(metaLayout, encodeU32(layoutVersion+1), pebble.Sync)
	_ = db.Set(metaKeyGroups, encodeU32(4), pebble.Sync)
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(dir, quietOptions(0)); !errors.Is(err, ErrLayout) {
		t.Fatalf("Open: %v", err)
	}
}
