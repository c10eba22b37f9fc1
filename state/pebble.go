package state

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"strings"
	"syscall"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"
)

// memTableSize is Pebble's memtable budget. Reads are served from memory,
// so the memtable only buffers writes before they are flushed to tables; a
// large one absorbs repeated updates of hot keys before they reach disk and
// cuts compaction work, which competes with the workers for the CPU.
// Keyed counting over 1M keys went from about 300K to 700K writes/s on two
// cores when raising it from Pebble's 4 MiB default.
const memTableSize = 64 << 20

// openPebble locks dir and opens the Pebble store in it. sync selects real
// fsyncs of the write-ahead log; without it, see processSafeFS.
func openPebble(dir string, logger *slog.Logger, readOnly, sync bool) (*pebble.DB, *pebble.Lock, error) {
	lock, err := pebble.LockDirectory(dir, vfs.Default)
	if err != nil {
		return nil, nil, lockError(dir, err)
	}
	opts := &pebble.Options{
		Lock:         lock,
		Logger:       pebbleLogger{logger},
		ReadOnly:     readOnly,
		MemTableSize: memTableSize,
	}
	if !readOnly {
		opts.FormatMajorVersion = pebble.FormatNewest
	}
	if !sync {
		opts.FS = processSafeFS{vfs.Default}
	}
	db, err := pebble.Open(dir, opts)
	if err != nil {
		_ = lock.Close()
		return nil, nil, fmt.Errorf("state: open Pebble store in %s: %w", dir, err)
	}
	return db, lock, nil
}

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

// processSafeFS is the file system Pebble runs on when Options.Sync is
// false. Every Commit still asks Pebble for a synced write, so Pebble writes
// the commit's log record to the WAL file with write(2) before Commit
// returns; this file system then skips the fsync of WAL files. A commit
// thus survives the crash of the process (the kernel holds the data) but
// not of the machine, at the cost of one write(2) per Commit instead of one
// fsync. Pebble's own NoSync mode would leave up to a 32 KiB log block in
// process memory, so a killed process would lose commits whose input had
// already been acknowledged.
//
// A WAL file is still fsynced when it is closed (log rotation, Close): a
// log that is not the newest must be complete for Pebble to open the store
// after a machine crash. Other files (tables, manifest) keep real fsyncs;
// they are written in the background.
type processSafeFS struct{ vfs.FS }

func isWAL(name string) bool { return strings.HasSuffix(name, ".log") }

// Create implements vfs.FS.
func (p processSafeFS) Create(name string, category vfs.DiskWriteCategory) (vfs.File, error) {
	f, err := p.FS.Create(name, category)
	if err != nil || !isWAL(name) {
		return f, err
	}
	return walFile{f}, nil
}

// ReuseForWrite implements vfs.FS (Pebble recycles WAL files).
func (p processSafeFS) ReuseForWrite(oldname, newname string, category vfs.DiskWriteCategory) (vfs.File, error) {
	f, err := p.FS.ReuseForWrite(oldname, newname, category)
	if err != nil || !isWAL(newname) {
		return f, err
	}
	return walFile{f}, nil
}

// Unwrap implements vfs.FS.
func (p processSafeFS) Unwrap() vfs.FS { return p.FS }

// walFile skips fsync while the file is written and syncs it on Close.
type walFile struct{ vfs.File }

func (w walFile) Sync() error                       { return nil }
func (w walFile) SyncData() error                   { return nil }
func (w walFile) SyncTo(length int64) (bool, error) { return false, nil }

func (w walFile) Close() error {
	return errors.Join(w.File.Sync(), w.File.Close())
}

// pebbleLogger sends Pebble's log lines to slog: its informational lines
// at Debug, its errors at Error.
type pebbleLogger struct{ l *slog.Logger }

func (p pebbleLogger) Infof(format string, args ...any) {
	if p.l.Enabled(context.Background(), slog.LevelDebug) {
		p.l.Debug(fmt.Sprintf(format, args...), "component", "pebble")
	}
}

func (p pebbleLogger) Errorf(format string, args ...any) {
	p.l.Error(fmt.Sprintf(format, args...), "component", "pebble")
}

// Fatalf is called by Pebble on an invariant violation it cannot continue
// from (corruption); it must not return.
func (p pebbleLogger) Fatalf(format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	p.l.Error(msg, "component", "pebble")
	panic("state: pebble: " + msg)
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
