package state

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// mountTmpfs mounts a tmpfs of the given size ("4m") on a new directory and
// unmounts it when the test ends, also when it fails. It skips the test
// where mounting is not allowed (not root, no tmpfs).
func mountTmpfs(t *testing.T, size string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "tmpfs")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mount("tmpfs", dir, "tmpfs", 0, "size="+size); err != nil {
		t.Skipf("needs a tmpfs mount (run as root): mount tmpfs on %s: %v", dir, err)
	}
	// Registered after TempDir's cleanup, so it runs before it.
	t.Cleanup(func() {
		if err := syscall.Unmount(dir, 0); err != nil {
			// Busy (a child still dying): detach now, freed when unused.
			if err := syscall.Unmount(dir, syscall.MNT_DETACH); err != nil {
				t.Errorf("unmount %s: %v", dir, err)
			}
		}
	})
	return dir
}

// remount changes the options of a tmpfs mounted by mountTmpfs ("size=8m",
// "ro").
func remount(t *testing.T, dir, opts string) {
	t.Helper()
	flags := uintptr(syscall.MS_REMOUNT)
	if opts == "ro" {
		flags |= syscall.MS_RDONLY
	}
	if err := syscall.Mount("tmpfs", dir, "tmpfs", flags, opts); err != nil {
		t.Fatalf("remount %s %s: %v", dir, opts, err)
	}
}

// TestDiskFull fills a small tmpfs: the Commit that finds the disk full
// returns an error that says so and names the data directory, nothing
// panics; restarting on the full disk fails the same way within seconds,
// rather than retrying a flush for ever; with space again, the store holds
// what was committed.
func TestDiskFull(t *testing.T) {
	mnt := mountTmpfs(t, "4m")
	dir := filepath.Join(mnt, "state")
	last := lastCommitted(t, runDiskChild(t, "fill", dir))
	runDiskChild(t, "open-full", dir)
	remount(t, mnt, "size=64m")
	checkRecovered(t, dir, last)
}

// TestReadOnlyDiskAtOpen remounts a data directory's file system read-only
// while the store is closed: Open fails at once with an error naming the
// directory and the cause.
func TestReadOnlyDiskAtOpen(t *testing.T) {
	mnt := mountTmpfs(t, "4m")
	dir := filepath.Join(mnt, "state")
	s, err := Open(dir, quietOptions(8))
	if err != nil {
		t.Fatal(err)
	}
	se := s.NewSession()
	mustPut(t, se, s.Table("t"), []byte("k"), []byte("v"))
	if err := s.Commit(map[string]uint64{"src": 1}); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	remount(t, mnt, "ro")
	_, err = Open(dir, quietOptions(8))
	if !errors.Is(err, syscall.EROFS) || !strings.Contains(err.Error(), dir) {
		t.Fatalf("Open on a read-only file system: %v, want EROFS naming %s", err, dir)
	}
}

// TestStoppedDirectorySize writes 3 MB of state with the default options
// and checks the disk a stopped data directory takes: the blocks allocated
// to its files, not their lengths (Pebble used to reserve 70 MB for every
// write-ahead log file up front, so 3 MB of state took 350 MB).
func TestStoppedDirectorySize(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(dir, quietOptions(0))
	if err != nil {
		t.Fatal(err)
	}
	tab := s.Table("t")
	se := s.NewSession()
	val := make([]byte, 100)
	written := 0
	for i := range 30_000 {
		k := fmt.Appendf(nil, "key-%08d", i)
		mustPut(t, se, tab, k, val)
		written += len(k) + len(val)
		if i%1000 == 999 {
			if err := s.Commit(map[string]uint64{"src": uint64(i)}); err != nil {
				t.Fatal(err)
			}
			se.Reset()
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	var allocated int64
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		var st syscall.Stat_t
		if err := syscall.Stat(filepath.Join(dir, e.Name()), &st); err != nil {
			t.Fatal(err)
		}
		allocated += st.Blocks * 512
	}
	if allocated > 2*int64(written) {
		t.Errorf("a stopped directory holding %d bytes of state takes %d bytes on disk, want at most twice that", written, allocated)
	}
}
