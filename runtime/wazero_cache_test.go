//go:build !wasmtime

package runtime

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestStaleCacheFilesAreRemoved checks that making an engine removes the
// temporary files and scratch directories that processes killed while
// writing them left in the cache, and leaves recent ones, which a running
// process may be writing.
func TestStaleCacheFilesAreRemoved(t *testing.T) {
	dir := t.TempDir()
	versioned := filepath.Join(dir, "wazero-v0-test")
	scratch := filepath.Join(dir, scratchPrefix+"1")
	for _, d := range []string{versioned, scratch} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	oldTemp, newTemp := filepath.Join(versioned, "ab.1.tmp"), filepath.Join(versioned, "ab.2.tmp")
	entry := filepath.Join(versioned, "ab")
	for _, f := range []string{oldTemp, newTemp, entry} {
		if err := os.WriteFile(f, []byte("x"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	long := time.Now().Add(-2 * staleAfter)
	for _, p := range []string{oldTemp, entry, scratch} {
		if err := os.Chtimes(p, long, long); err != nil {
			t.Fatal(err)
		}
	}
	newEngine(t, NewConfig().WithCacheDir(dir))
	for p, want := range map[string]bool{oldTemp: false, scratch: false, newTemp: true, entry: true} {
		if _, err := os.Stat(p); (err == nil) != want {
			t.Errorf("%s: present %v, want %v", p, err == nil, want)
		}
	}
}
