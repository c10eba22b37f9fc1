package state

import (
	"bufio"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// startChild re-executes the test binary in a helper mode on dir.
func startChild(t *testing.T, mode, dir string) (*exec.Cmd, io.WriteCloser, *bufio.Scanner) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), childEnv+"="+mode, "SLUICE_STATE_TEST_DIR="+dir)
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	return cmd, stdin, bufio.NewScanner(stdout)
}

// TestCrashKilledDuringCommits kills a process that commits in a loop, at
// several points, and checks that reopening yields exactly one Commit, no
// older than the last one the process reported as returned. The child runs
// without Options.Sync: a Commit must survive the death of the process.
func TestCrashKilledDuringCommits(t *testing.T) {
	dir := t.TempDir()
	last := uint64(0)
	for _, killAfter := range []uint64{3, 40, 41, 150} {
		cmd, stdin, lines := startChild(t, "commit-loop", dir)
		var seen uint64
		for seen < last+killAfter && lines.Scan() {
			n, err := strconv.ParseUint(lines.Text(), 10, 64)
			if err != nil {
				t.Fatalf("child printed %q", lines.Text())
			}
			seen = n
		}
		if seen < last+killAfter {
			t.Fatalf("child stopped after commit %d: %v", seen, lines.Err())
		}
		if err := cmd.Process.Kill(); err != nil {
			t.Fatal(err)
		}
		_ = stdin.Close()
		_ = cmd.Wait()

		s, err := Open(dir, quietOptions(0))
		if err != nil {
			t.Fatal(err)
		}
		pos := s.Positions()["src"]
		if pos < seen {
			t.Fatalf("recovered position %d, but commit %d had returned before the kill", pos, seen)
		}
		want := strconv.FormatUint(pos, 10)
		for _, name := range []string{"a", "b"} {
			got := scanAll(t, s, name)
			if name == "a" {
				if v, ok := got["flip"]; (pos%2 == 0) != ok || (ok && v != want) {
					t.Fatalf("position %d: flip = %q, %v", pos, v, ok)
				}
				delete(got, "flip")
			}
			if len(got) != crashKeys {
				t.Fatalf("table %s: %d keys after recovery, want %d", name, len(got), crashKeys)
			}
			for k, v := range got {
				if v != want {
					t.Fatalf("table %s key %s = %s at position %d: a mix of commits", name, k, v, pos)
				}
			}
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		last = pos
	}
}

// TestCrashUncommittedWritesVanish commits, writes more without committing,
// then both copies the live directory (a crash image) and closes without
// committing: each reopened store has exactly the committed state and
// positions.
func TestCrashUncommittedWritesVanish(t *testing.T) {
	for _, sync := range []bool{true, false} {
		t.Run("sync="+strconv.FormatBool(sync), func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "live")
			opts := quietOptions(16)
			opts.Sync = sync
			s, err := Open(dir, opts)
			if err != nil {
				t.Fatal(err)
			}
			tab := s.Table("t")
			se := s.NewSession()
			for i := range 100 {
				mustPut(t, se, tab, key(i), []byte("committed"))
			}
			mustDelete(t, se, tab, key(7))
			if err := s.Commit(map[string]uint64{"src": 10, "other": 3}); err != nil {
				t.Fatal(err)
			}
			se.Reset()
			for i := range 200 {
				mustPut(t, se, tab, key(i), []byte("uncommitted"))
			}
			mustDelete(t, se, tab, key(3))
			_ = s.Table("never-committed")

			image := filepath.Join(t.TempDir(), "image")
			copyDir(t, dir, image)
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}

			for _, d := range []string{image, dir} {
				r, err := Open(d, quietOptions(16))
				if err != nil {
					t.Fatal(err)
				}
				if got := r.Positions(); len(got) != 2 || got["src"] != 10 || got["other"] != 3 {
					t.Fatalf("%s: positions %v", d, got)
				}
				if got := r.Tables(); len(got) != 1 || got[0] != "t" {
					t.Fatalf("%s: tables %v", d, got)
				}
				got := scanAll(t, r, "t")
				if len(got) != 99 {
					t.Fatalf("%s: %d entries, want 99", d, len(got))
				}
				for k, v := range got {
					if v != "committed" || k == string(key(7)) {
						t.Fatalf("%s: %s = %s", d, k, v)
					}
				}
				if n := r.Table("t").Len(); n != 99 {
					t.Fatalf("%s: %d entries in memory, want 99", d, n)
				}
				if err := r.Close(); err != nil {
					t.Fatal(err)
				}
			}
		})
	}
}

// TestLockedByOtherProcess checks that a directory held by another process
// is refused with a clear error, by Open and OpenReadOnly, and is usable
// once that process has closed it.
func TestLockedByOtherProcess(t *testing.T) {
	dir := t.TempDir()
	cmd, stdin, lines := startChild(t, "hold-lock", dir)
	if !lines.Scan() || lines.Text() != "ready" {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		t.Fatalf("child did not open the directory: %v", lines.Err())
	}
	_, err := Open(dir, quietOptions(8))
	if !errors.Is(err, ErrLocked) {
		t.Errorf("Open of a locked directory: %v, want ErrLocked", err)
	} else if want := "state: data directory " + dir + " is in use by another sluice process"; !strings.HasPrefix(err.Error(), want) {
		t.Errorf("error %q does not start with %q", err, want)
	}
	if _, err := OpenReadOnly(dir); !errors.Is(err, ErrLocked) {
		t.Errorf("OpenReadOnly of a locked directory: %v, want ErrLocked", err)
	}
	_ = stdin.Close()
	if err := cmd.Wait(); err != nil {
		t.Fatalf("child: %v", err)
	}
	s, err := Open(dir, quietOptions(8))
	if err != nil {
		t.Fatalf("Open after the other process closed: %v", err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
}

// copyDir copies a live data directory, as a crash would leave it. Pebble
// may delete an obsolete file while the copy runs; the copy is then retried
// from scratch.
func copyDir(t *testing.T, from, to string) {
	t.Helper()
	var err error
	for range 10 {
		if err = os.CopyFS(to, os.DirFS(from)); err == nil {
			return
		}
		if rerr := os.RemoveAll(to); rerr != nil {
			t.Fatal(rerr)
		}
	}
	t.Fatal(err)
}
