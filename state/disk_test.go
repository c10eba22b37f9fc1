package state

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
)

// The disk tests run the store in a child process (runChild): a failed
// store leaves Pebble's goroutines parked, and a panic or a hang must fail
// the test, not end the test binary.

// childTimeout bounds a child of the disk tests; they take seconds.
const childTimeout = 2 * time.Minute

// runDiskChild runs the test binary in a helper mode on dir, which must
// exit 0 without a panic, and returns its standard output.
func runDiskChild(t *testing.T, mode, dir string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), childTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), childEnv+"="+mode, "SLUICE_STATE_TEST_DIR="+dir)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	logs := tail(stderr.String(), 4000)
	switch {
	case ctx.Err() != nil:
		t.Fatalf("%s: the child did not exit within %v; its log ends:\n%s", mode, childTimeout, logs)
	case strings.Contains(stderr.String(), "panic") || strings.Contains(stderr.String(), "goroutine "):
		t.Fatalf("%s: the child panicked (%v); its log ends:\n%s", mode, err, logs)
	case err != nil:
		t.Fatalf("%s: child: %v; output ends:\n%s\nlog ends:\n%s", mode, err, tail(stdout.String(), 1000), logs)
	}
	return stdout.String()
}

func tail(s string, n int) string {
	if len(s) > n {
		return "..." + s[len(s)-n:]
	}
	return s
}

// lastCommitted returns the number of the last "committed N" line of a
// child's output.
func lastCommitted(t *testing.T, out string) uint64 {
	t.Helper()
	var last uint64
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		if n, ok := strings.CutPrefix(sc.Text(), "committed "); ok {
			v, err := strconv.ParseUint(n, 10, 64)
			if err != nil {
				t.Fatalf("child printed %q", sc.Text())
			}
			last = v
		}
	}
	if last == 0 {
		t.Fatalf("the child committed nothing; it printed:\n%s", out)
	}
	return last
}

// checkRecovered opens dir and checks that it holds the state and position
// of commit last of a diskChild writer, or of the commit after it (the one
// that failed may have reached the log whole).
func checkRecovered(t *testing.T, dir string, last uint64) {
	t.Helper()
	s, err := Open(dir, quietOptions(0))
	if err != nil {
		t.Fatalf("reopening after the failure: %v", err)
	}
	defer func() {
		if err := s.Close(); err != nil {
			t.Error(err)
		}
	}()
	pos := s.Positions()["src"]
	if pos != last && pos != last+1 {
		t.Fatalf("recovered position %d; the last commit to return was %d", pos, last)
	}
	if n, want := s.Table("t").Len(), diskChildKeys*int(pos); n != want {
		t.Fatalf("recovered %d entries at position %d, want %d", n, pos, want)
	}
}

// Writes of the diskChild writers: each commit adds diskChildKeys entries
// of valueSize incompressible bytes.
const diskChildKeys = 10

// diskChild runs a helper mode of the disk tests, if mode is one, and
// returns its exit status: 0 when the store behaved. It reports on stdout
// each commit that returned ("committed N") and on stderr what went wrong.
func diskChild(mode, dir string) (code int, ok bool) {
	opts := Options{KeyGroups: 8, Logger: slog.New(slog.NewTextHandler(os.Stderr, nil))}
	switch mode {
	case "fill":
		// Commit until the disk is full.
		return writeUntilFailure(dir, opts, 10_000, nil, syscall.ENOSPC, false), true
	case "open-full":
		// Open a directory on a full disk whose log needs a flush.
		s, err := Open(dir, opts)
		if err == nil {
			_ = s.Close()
			fmt.Fprintln(os.Stderr, "Open succeeded on a full disk")
			return 3, true
		}
		fmt.Println("error:", err)
		if err := checkFailure(err, dir, syscall.ENOSPC); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 3, true
		}
		return 0, true
	case "read-only", "read-only-async":
		// The file system turns read-only after a few commits, which are
		// written by a PendingCommit on another goroutine in the async mode.
		ffs := &faultFS{FS: vfs.Default, errno: syscall.EROFS}
		opts.fs = ffs
		return writeUntilFailure(dir, opts, 10_000, func(i uint64) {
			if i == 3 {
				ffs.failFiles(func(string) bool { return true })
			}
		}, syscall.EROFS, mode == "read-only-async"), true
	case "flush-fails":
		// Tables cannot be written, the log can: flushes fail in the
		// background while commits go on, then stall.
		ffs := &faultFS{FS: vfs.Default, errno: syscall.ENOSPC}
		ffs.failFiles(func(name string) bool { return strings.HasSuffix(name, ".sst") })
		opts.fs = ffs
		opts.MemTableSize = MinMemTableSize
		return writeUntilFailure(dir, opts, 100_000, nil, syscall.ENOSPC, false), true
	}
	return 0, false
}

// writeUntilFailure opens dir and commits until a Commit fails, at most
// max times, calling before (if not nil) before each Commit. The failure
// must be the store's, caused by errno. With async, each commit is a
// Prepare followed by PendingCommit.Commit on another goroutine.
func writeUntilFailure(dir string, opts Options, max uint64, before func(uint64), errno syscall.Errno, async bool) int {
	s, err := Open(dir, opts)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	tab := s.Table("t")
	se := s.NewSession()
	rng := rand.New(rand.NewPCG(1, 2))
	val := make([]byte, 1000)
	for i := uint64(1); i <= max; i++ {
		for j := range diskChildKeys {
			for k := range val {
				val[k] = byte(rng.Uint32())
			}
			if err := se.Put(tab, fmt.Appendf(nil, "%08d-%02d", i, j), val); err != nil {
				fmt.Fprintln(os.Stderr, err)
				return 2
			}
		}
		if before != nil {
			before(i)
		}
		positions := map[string]uint64{"src": i}
		var err error
		if async {
			var p *PendingCommit
			if p, err = s.Prepare(); err == nil {
				done := make(chan error, 1)
				go func() { done <- p.Commit(context.Background(), positions) }()
				err = <-done
			}
		} else {
			err = s.Commit(positions)
		}
		if err == nil {
			se.Reset()
			fmt.Println("committed", i)
			continue
		}
		fmt.Println("error:", err)
		if err := checkFailed(s, err, dir, errno); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 3
		}
		return 0
	}
	fmt.Fprintf(os.Stderr, "%d commits and no failure\n", max)
	return 3
}

// checkFailure checks an error of a failed store: it matches ErrFailed and
// errno and names the data directory.
func checkFailure(err error, dir string, errno syscall.Errno) error {
	if !errors.Is(err, ErrFailed) || !errors.Is(err, errno) || !strings.Contains(err.Error(), "state: data directory "+dir+": ") {
		return fmt.Errorf("error %q: want ErrFailed, %v, naming %s", err, errno, dir)
	}
	return nil
}

// checkFailed checks a store after a Commit failed with err.
func checkFailed(s *Store, err error, dir string, errno syscall.Errno) error {
	if err := checkFailure(err, dir, errno); err != nil {
		return err
	}
	select {
	case <-s.Failed():
	default:
		return errors.New("Failed() is not closed after a failure")
	}
	if serr := s.Err(); serr == nil || serr.Error() != err.Error() {
		return fmt.Errorf("Err() = %v after Commit failed with %v", serr, err)
	}
	if again := s.Commit(nil); again == nil || again.Error() != err.Error() {
		return fmt.Errorf("Commit after the failure: %v, want %v", again, err)
	}
	if cerr := s.Close(); cerr == nil || cerr.Error() != err.Error() {
		return fmt.Errorf("Close after the failure: %v, want %v", cerr, err)
	}
	return nil
}

// faultFS fails, once told which files (failFiles), the creation of those
// files and writes and syncs to them, with errno.
type faultFS struct {
	vfs.FS
	errno syscall.Errno
	match atomic.Pointer[func(name string) bool]
}

func (f *faultFS) failFiles(match func(name string) bool) { f.match.Store(&match) }

func (f *faultFS) fails(op, name string) error {
	if m := f.match.Load(); m != nil && (*m)(name) {
		return &fs.PathError{Op: op, Path: name, Err: f.errno}
	}
	return nil
}

func (f *faultFS) Create(name string, category vfs.DiskWriteCategory) (vfs.File, error) {
	if err := f.fails("open", name); err != nil {
		return nil, err
	}
	file, err := f.FS.Create(name, category)
	if err != nil {
		return nil, err
	}
	return faultFile{file, f, name}, nil
}

func (f *faultFS) ReuseForWrite(oldname, newname string, category vfs.DiskWriteCategory) (vfs.File, error) {
	if err := f.fails("open", newname); err != nil {
		return nil, err
	}
	file, err := f.FS.ReuseForWrite(oldname, newname, category)
	if err != nil {
		return nil, err
	}
	return faultFile{file, f, newname}, nil
}

type faultFile struct {
	vfs.File
	fs   *faultFS
	name string
}

func (f faultFile) Write(p []byte) (int, error) {
	if err := f.fs.fails("write", f.name); err != nil {
		return 0, err
	}
	return f.File.Write(p)
}

func (f faultFile) Sync() error {
	if err := f.fs.fails("sync", f.name); err != nil {
		return err
	}
	return f.File.Sync()
}

func (f faultFile) SyncData() error {
	if err := f.fs.fails("sync", f.name); err != nil {
		return err
	}
	return f.File.SyncData()
}

// TestReadOnlyDiskMidCommit makes the file system fail writes with EROFS
// between two commits: the Commit returns an error that says so and names
// the data directory, the store refuses further commits, nothing panics,
// and the committed state is intact.
func TestReadOnlyDiskMidCommit(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "state")
	out := runDiskChild(t, "read-only", dir)
	if last := lastCommitted(t, out); last != 2 {
		t.Fatalf("the child committed up to %d; the file system failed from the third commit", last)
	}
	checkRecovered(t, dir, 2)
}

// TestReadOnlyDiskMidPendingCommit is TestReadOnlyDiskMidCommit with the
// commits written by PendingCommits on another goroutine.
func TestReadOnlyDiskMidPendingCommit(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "state")
	out := runDiskChild(t, "read-only-async", dir)
	if last := lastCommitted(t, out); last != 2 {
		t.Fatalf("the child committed up to %d; the file system failed from the third commit", last)
	}
	checkRecovered(t, dir, 2)
}

// TestBackgroundFailureStopsCommits makes flushes fail while the log can
// still be written: Pebble retries them in the background, commits fill
// the memtables and then stall. The store must fail after a bounded number
// of failed flushes, and the stalled Commit return that failure.
func TestBackgroundFailureStopsCommits(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "state")
	out := runDiskChild(t, "flush-fails", dir)
	checkRecovered(t, dir, lastCommitted(t, out))
}
