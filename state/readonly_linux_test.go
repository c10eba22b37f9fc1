package state

import (
	"os"
	"path/filepath"
	"testing"
)

// TestOpenReadOnlyOnReadOnlyDisk opens a stopped data directory on a file
// system mounted read-only: Pebble cannot create or open its LOCK file
// there, and OpenReadOnly reads the committed state without it.
func TestOpenReadOnlyOnReadOnlyDisk(t *testing.T) {
	mnt := mountTmpfs(t, "4m")
	dir := filepath.Join(mnt, "state")
	s, err := Open(dir, quietOptions(8))
	if err != nil {
		t.Fatal(err)
	}
	mustPut(t, s.NewSession(), s.Table("t"), []byte("k"), []byte("v"))
	if err := s.Commit(map[string]uint64{"src": 1}); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	remount(t, mnt, "ro")
	if err := os.WriteFile(filepath.Join(mnt, "probe"), nil, 0o600); err == nil {
		t.Fatal("the remount left the file system writable")
	}
	r, err := OpenReadOnly(dir)
	if err != nil {
		t.Fatalf("OpenReadOnly on a read-only file system: %v", err)
	}
	p, err := r.Read(Query{KeyGroup: -1, Limit: 10})
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Entries) != 1 || string(p.Entries[0].Key) != "k" || string(p.Entries[0].Value) != "v" {
		t.Errorf("read %+v, want k=v", p.Entries)
	}
	if got := r.Positions()["src"]; got != 1 {
		t.Errorf("position %d, want 1", got)
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
}
