package state

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"strings"
	"syscall"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"
)

// DefaultMemTableSize is the memtable size Open uses when
// Options.MemTableSize is zero.
//
// Reads are served from memory, so the memtable only buffers writes before
// they are flushed to tables; a larger one absorbs more repeated updates of
// hot keys before they reach disk and cuts compaction work. It also sets
// the disk the write-ahead log takes: one log file per memtable, holding up
// to about the memtable's size, and Pebble keeps the current log, those of
// memtables not yet flushed and up to three recycled ones. 8 MiB keeps that
// to a few tens of megabytes; keyed counting over 1M keys wrote 1.4 times
// the bytes to disk that a 64 MiB memtable did, for about the same CPU time.
const DefaultMemTableSize = 8 << 20

// L0 thresholds of the Pebble store: compact level 0 when it holds
// l0CompactionThreshold sublevels (Pebble's default: 4), stop writes at
// l0StopWritesThreshold (default 12).
//
// Reads are served from memory, and Pebble is read only by Open, Scan and
// Read, so the read amplification of a deep level 0 costs little, while
// every compaction of level 0 rewrites the key ranges it overlaps: with
// updates spread over the whole key space (a transactional workload's),
// each one rewrites the whole table. Compacting every 16 sublevels instead
// of 4 cut the CPU time of the commit path, Pebble's background work
// included, from 131 to 83 ms a batch (BenchmarkTransactionalCommits:
// 230,400 keys, batches of 32,000 updates, 120 batches, medians of 6).
// The price is disk, and Open's read of the state: up to 16 flushed
// memtables of superseded values wait in level 0.
const (
	l0CompactionThreshold = 16
	l0StopWritesThreshold = 48
)

// Bounds of Options.MemTableSize.
const (
	MinMemTableSize = 256 << 10
	MaxMemTableSize = 1 << 30
)

// pebbleConfig is what openPebble needs besides the directory.
type pebbleConfig struct {
	log      *slog.Logger
	health   *health
	readOnly bool
	sync     bool // fsync the write-ahead log; see walFS
	memTable int  // memtable size; 0: DefaultMemTableSize
	fs       vfs.FS
}

// openPebble locks dir and opens the Pebble store in it. A failure Pebble
// reports while opening (Fatalf, or background work that keeps failing) is
// recorded in c.health; openPebble then returns that failure, or, if
// Pebble's Open is stuck on a parked goroutine, never returns: callers wait
// for it on another goroutine (see Open).
func openPebble(dir string, c pebbleConfig) (_ *pebble.DB, _ *pebble.Lock, err error) {
	base := c.fs
	if base == nil {
		base = vfs.Default
	}
	lock, err := pebble.LockDirectory(dir, base)
	if err != nil && c.readOnly && errors.Is(err, syscall.EROFS) {
		// A read-only file system: the LOCK file cannot be created (or
		// opened for the lock), and no process writes the directory
		// through this mount. Read without the lock.
		lock, err = pebble.LockDirectory(dir, noLockFS{base})
	}
	if err != nil {
		return nil, nil, lockError(dir, err)
	}
	memTable := c.memTable
	if memTable == 0 {
		memTable = DefaultMemTableSize
	}
	opts := &pebble.Options{
		Lock:          lock,
		Logger:        pebbleLogger{c.log, c.health},
		EventListener: c.health.listener(),
		ReadOnly:      c.readOnly,
		MemTableSize:  uint64(memTable),
		FS:            walFS{base, !c.sync},

		L0CompactionThreshold: l0CompactionThreshold,
		L0StopWritesThreshold: l0StopWritesThreshold,
	}
	if !c.readOnly {
		opts.FormatMajorVersion = pebble.FormatNewest
	}
	defer func() {
		if err != nil && c.health.Err() == nil {
			_ = lock.Close()
		}
	}()
	defer c.health.recoverFatal(&err, true)
	db, err := pebble.Open(dir, opts)
	if err != nil {
		return nil, nil, fmt.Errorf("state: open Pebble store in %s: %w", dir, err)
	}
	return db, lock, nil
}

// noLockFS is a file system whose Lock takes no lock and creates no file,
// for reading a directory on a read-only file system.
type noLockFS struct{ vfs.FS }

// Lock implements vfs.FS.
func (noLockFS) Lock(string) (io.Closer, error) { return noLock{}, nil }

// noLock is the lock noLockFS returns.
type noLock struct{}

// Close implements io.Closer.
func (noLock) Close() error { return nil }

// lockError turns a failure to take Pebble's directory lock into an error
// that says what happened.
func lockError(dir string, err error) error {
	var pathErr *fs.PathError
	switch {
	case errors.As(err, &pathErr):
		// Creating the LOCK file failed: permissions, missing directory.
		return fmt.Errorf("state: lock data directory %s: %w", dir, err)
	case errors.Is(err, syscall.EAGAIN), errors.Is(err, syscall.EACCES), errors.Is(err, syscall.EWOULDBLOCK):
		return newError(ErrLocked, err, "state: data directory %s is in use by another sluice process", dir)
	case strings.Contains(err.Error(), "held by current process"):
		return newError(ErrLocked, err, "state: data directory %s is already open in this process", dir)
	}
	return fmt.Errorf("state: lock data directory %s: %w", dir, err)
}

// walFS is the file system Pebble runs on. It changes how write-ahead log
// files are written (walFile); other files (tables, manifest) pass through.
//
// Without Options.Sync (processSafe), it skips the fsync of log files.
// Every Commit still asks Pebble for a synced write, so Pebble writes the
// commit's log record to the log file with write(2) before Commit returns;
// a commit thus survives the crash of the process (the kernel holds the
// data) but not of the machine, at the cost of one write(2) per Commit
// instead of one fsync. Pebble's own NoSync mode would leave up to a 32 KiB
// log block in process memory, so a killed process would lose commits
// whose input had already been acknowledged. A log file is still fsynced
// when it is closed (log rotation, Close): a log that is not the newest
// must be complete for Pebble to open the store after a machine crash.
// Tables and the manifest keep real fsyncs; they are written in the
// background.
type walFS struct {
	vfs.FS
	processSafe bool
}

func isWAL(name string) bool { return strings.HasSuffix(name, ".log") }

// Create implements vfs.FS.
func (w walFS) Create(name string, category vfs.DiskWriteCategory) (vfs.File, error) {
	f, err := w.FS.Create(name, category)
	if err != nil || !isWAL(name) {
		return f, err
	}
	return walFile{f, w.processSafe}, nil
}

// ReuseForWrite implements vfs.FS (Pebble recycles log files).
func (w walFS) ReuseForWrite(oldname, newname string, category vfs.DiskWriteCategory) (vfs.File, error) {
	f, err := w.FS.ReuseForWrite(oldname, newname, category)
	if err != nil || !isWAL(newname) {
		return f, err
	}
	return walFile{f, w.processSafe}, nil
}

// Unwrap implements vfs.FS.
func (w walFS) Unwrap() vfs.FS { return w.FS }

// walFile is a write-ahead log file being written. With processSafe it
// skips fsync while the file is written and syncs it on Close.
type walFile struct {
	vfs.File
	processSafe bool
}

// Preallocate implements vfs.File. It allocates nothing: Pebble would
// reserve 110% of the memtable size for every log file up front
// (fallocate), whatever the log then holds, so that a stopped directory of
// a few megabytes of state took hundreds. A log file takes the space of
// what is written to it; commit latency with Options.Sync measured the
// same either way.
func (w walFile) Preallocate(off, n int64) error { return nil }

// Sync implements vfs.File.
func (w walFile) Sync() error {
	if w.processSafe {
		return nil
	}
	return w.File.Sync()
}

// SyncData implements vfs.File.
func (w walFile) SyncData() error {
	if w.processSafe {
		return nil
	}
	return w.File.SyncData()
}

// SyncTo implements vfs.File.
func (w walFile) SyncTo(length int64) (bool, error) {
	if w.processSafe {
		return false, nil
	}
	return w.File.SyncTo(length)
}

// Close implements vfs.File.
func (w walFile) Close() error {
	if w.processSafe {
		return errors.Join(w.File.Sync(), w.File.Close())
	}
	return w.File.Close()
}

// pebbleLogger sends Pebble's log lines to slog: its informational lines
// at Debug, its errors at Error. Its fatal errors fail the store (health).
type pebbleLogger struct {
	l *slog.Logger
	h *health
}

func (p pebbleLogger) Infof(format string, args ...any) {
	if p.l.Enabled(context.Background(), slog.LevelDebug) {
		p.l.Debug(fmt.Sprintf(format, args...), "component", "pebble")
	}
}

func (p pebbleLogger) Errorf(format string, args ...any) {
	p.l.Error(fmt.Sprintf(format, args...), "component", "pebble")
}

// Fatalf is called by Pebble on an error it cannot continue from: a failed
// write of the write-ahead log or the manifest, corruption, an invariant
// violation. It must not return; see health.fatal.
func (p pebbleLogger) Fatalf(format string, args ...any) {
	p.l.Error(fmt.Sprintf(format, args...), "component", "pebble")
	p.h.fatal(format, args...)
}

// forEach calls fn for every key in [lower, upper) of r, in key order.
func forEach(r pebble.Reader, lower, upper []byte, fn func(k, v []byte) error) error {
	it, err := r.NewIter(&pebble.IterOptions{LowerBound: lower, UpperBound: upper})
	if err != nil {
		return err
	}
	for valid := it.First(); valid; valid = it.Next() {
		v, err := it.ValueAndErr()
		if err != nil {
			_ = it.Close()
			return err
		}
		if err := fn(it.Key(), v); err != nil {
			_ = it.Close()
			return err
		}
	}
	return it.Close()
}
