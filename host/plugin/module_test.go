package plugin

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// TestReadModule checks that ReadModule reads a regular file, through a
// symbolic link too, and refuses what is not one, and a file over the
// limit, with errors that name the path.
func TestReadModule(t *testing.T) {
	dir := t.TempDir()
	mod := filepath.Join(dir, "m.wasm")
	want := bytes.Repeat([]byte("\x00asm"), 25)
	if err := os.WriteFile(mod, want, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{mod, filepath.Join(dir, "link.wasm")} {
		_ = os.Symlink(mod, filepath.Join(dir, "link.wasm"))
		if got, err := ReadModule(p, 100); err != nil || !bytes.Equal(got, want) {
			t.Errorf("ReadModule(%s) = %d bytes, %v; want the %d bytes of the file", p, len(got), err, len(want))
		}
	}
	if _, err := ReadModule(mod, 99); !errors.Is(err, ErrModuleTooLarge) || !strings.Contains(err.Error(), mod) {
		t.Errorf("a module of 100 bytes with a limit of 99: %v, want ErrModuleTooLarge naming the file", err)
	}
	if _, err := ReadModule(filepath.Join(dir, "none.wasm"), 0); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a missing file: %v", err)
	}

	fifo := filepath.Join(dir, "fifo.wasm")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"/dev/zero", fifo, dir} {
		if _, err := os.Stat(p); err != nil {
			t.Logf("%s: %v", p, err)
			continue
		}
		_, err := ReadModule(p, 0)
		if !errors.Is(err, ErrNotRegularFile) || !strings.Contains(err.Error(), p) {
			t.Errorf("ReadModule(%s): %v, want ErrNotRegularFile naming the path", p, err)
		}
	}
}

// TestReadModuleStopsAtTheLimit reads a file whose size says nothing of
// its content, as /proc files do, past the limit: reading stops one byte
// over the limit.
func TestReadModuleStopsAtTheLimit(t *testing.T) {
	const p = "/proc/self/status" // size 0 in its stat, some hundreds of bytes read
	if _, err := os.Stat(p); err != nil {
		t.Skip(err)
	}
	if _, err := ReadModule(p, 10); !errors.Is(err, ErrModuleTooLarge) {
		t.Errorf("ReadModule(%s, 10): %v, want ErrModuleTooLarge", p, err)
	}
	if b, err := ReadModule(p, 1<<20); err != nil || len(b) == 0 {
		t.Errorf("ReadModule(%s): %d bytes, %v", p, len(b), err)
	}
}
