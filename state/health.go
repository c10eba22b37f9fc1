package state

import (
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"reflect"
	"runtime"
	"runtime/debug"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/cockroachdb/pebble/v2"
)

// Background errors: Pebble retries a failed flush at once and for ever
// (on a full disk, hundreds of times a second). The store waits between
// retries, from backoffMin doubling to backoffMax, and fails once
// maxBackgroundErrors background operations in a row have failed (about
// three seconds of retries); a flush or compaction that succeeds starts the
// count again.
const (
	maxBackgroundErrors = 8
	backoffMin          = 25 * time.Millisecond
	backoffMax          = time.Second
)

// health records the failure of one Pebble instance: an error Pebble
// cannot continue from (it calls Logger.Fatalf, or panics with an I/O
// error while committing), or background work that keeps failing.
//
// Once failed, a store refuses Commits with the failure, and the Pebble
// goroutines that report further errors are parked for good, so that
// Pebble stops retrying and goes no further past an error it cannot
// handle. Pebble is not closed after a failure (its Close could wait on a
// parked goroutine), so the directory stays locked until the process
// exits; what was committed is recovered from the write-ahead log at the
// next Open.
type health struct {
	dir string
	log *slog.Logger

	once   sync.Once
	failed chan struct{} // closed when err is set
	err    error

	mu     sync.Mutex
	bgErrs int // background errors since the last successful flush or compaction

	// closing is set before Pebble is closed, which waits for a running
	// flush: one that fails then is not retried and must not be parked.
	closing atomic.Bool
}

func newHealth(dir string, log *slog.Logger) *health {
	return &health{dir: dir, log: log, failed: make(chan struct{})}
}

// fail records cause as the failure, unless one is recorded already.
func (h *health) fail(cause error) {
	h.once.Do(func() {
		h.err = newError(ErrFailed, cause, "state: data directory %s", h.dir)
		h.log.Error("state store failed: no further commits; committed state is kept and recovered at the next start once the problem is fixed",
			"component", "state", "dir", h.dir, "err", cause.Error())
		close(h.failed)
	})
}

// Err returns the failure, or nil.
func (h *health) Err() error {
	select {
	case <-h.failed:
		return h.err
	default:
		return nil
	}
}

// parkForever blocks the calling Pebble goroutine for the life of the
// process. It is used after a failure, where returning would let Pebble
// retry or continue past an error it declared fatal.
func (h *health) parkForever() {
	select {}
}

// backgroundError is Pebble's EventListener.BackgroundError. It waits
// before Pebble retries, and fails the store after maxBackgroundErrors in
// a row.
func (h *health) backgroundError(err error) {
	if h.Err() != nil {
		h.parkForever()
	}
	if h.closing.Load() {
		h.log.Error("state: background work failed while closing", "component", "pebble", "dir", h.dir, "err", err.Error())
		return
	}
	h.mu.Lock()
	h.bgErrs++
	n := h.bgErrs
	h.mu.Unlock()
	h.log.Error("state: background work failed; retrying", "component", "pebble", "dir", h.dir,
		"failures_in_a_row", n, "err", err.Error())
	if n >= maxBackgroundErrors {
		h.fail(fmt.Errorf("%d background writes in a row failed, the last: %w", n, err))
		h.parkForever()
	}
	time.Sleep(min(backoffMin<<(n-1), backoffMax))
}

// backgroundOK resets the count of background errors after a flush or
// compaction that succeeded.
func (h *health) backgroundOK(err error) {
	if err != nil {
		return
	}
	h.mu.Lock()
	h.bgErrs = 0
	h.mu.Unlock()
}

// listener returns Pebble's event listener for this store.
func (h *health) listener() *pebble.EventListener {
	return &pebble.EventListener{
		BackgroundError: h.backgroundError,
		FlushEnd:        func(i pebble.FlushInfo) { h.backgroundOK(i.Err) },
		CompactionEnd:   func(i pebble.CompactionInfo) { h.backgroundOK(i.Err) },
		LowDiskSpace: func(i pebble.LowDiskSpaceInfo) {
			h.log.Warn("state: disk space low", "component", "pebble", "dir", h.dir,
				"available_bytes", i.AvailBytes, "total_bytes", i.TotalBytes)
		},
	}
}

// fatal is Pebble's Logger.Fatalf: Pebble cannot continue (a write to the
// write-ahead log or the manifest failed, corruption). It records the
// failure and does not return. If Pebble was called by this package on the
// calling goroutine (Commit, Open, Scan), it panics with fatalPanic, which
// that call recovers (recoverFatal) and returns as an error; on Pebble's
// own goroutines it parks the goroutine.
func (h *health) fatal(format string, args ...any) {
	e := &fatalError{msg: fmt.Sprintf(format, args...)}
	for _, a := range args {
		if err, ok := a.(error); ok {
			e.err = err
			break
		}
	}
	h.fail(e)
	if calledFromPackage() {
		panic(fatalPanic{h.Err()})
	}
	h.parkForever()
}

// fatalError is the message Pebble gave Fatalf, wrapping the error among
// its arguments, so that the failure matches syscall.ENOSPC and the like.
type fatalError struct {
	msg string
	err error
}

func (e *fatalError) Error() string { return e.msg }
func (e *fatalError) Unwrap() error { return e.err }

// fatalPanic unwinds a goroutine of this package from Pebble after a fatal
// error, up to recoverFatal; it holds the failure.
type fatalPanic struct{ err error }

func (p fatalPanic) Error() string { return p.err.Error() }

// recoverFatal, deferred by every method that calls Pebble on its own
// goroutine, turns a fatalPanic into the store's failure, stored in *errp.
// With ioPanics (writes), so does a panic of Pebble's with an I/O error:
// it panics when it cannot write or create a write-ahead log. Other panics
// go on.
func (h *health) recoverFatal(errp *error, ioPanics bool) {
	r := recover()
	if r == nil {
		return
	}
	if _, ok := r.(fatalPanic); !ok {
		err, ok := r.(error)
		if !ok || !ioPanics || !isIOError(err) {
			panic(r)
		}
		h.log.Debug("state: pebble panicked", "component", "state", "dir", h.dir, "err", err.Error(), "stack", string(debug.Stack()))
		h.fail(err)
	}
	*errp = h.Err()
}

// isIOError reports whether err comes from the operating system.
func isIOError(err error) bool {
	var errno syscall.Errno
	var pathErr *fs.PathError
	return errors.As(err, &errno) || errors.As(err, &pathErr)
}

// calledFromPackage reports whether the calling goroutine entered Pebble
// from this package: a frame of this package lies beyond the first frame of
// another package (Pebble's).
func calledFromPackage() bool {
	// The prefix of this package's function names, taken from one of them.
	prefix := strings.TrimSuffix(runtime.FuncForPC(reflect.ValueOf(Open).Pointer()).Name(), "Open")
	pcs := make([]uintptr, 128)
	frames := runtime.CallersFrames(pcs[:runtime.Callers(2, pcs)])
	outside := false
	for {
		f, more := frames.Next()
		switch ours := strings.HasPrefix(f.Function, prefix); {
		case !ours:
			outside = true
		case outside:
			return true
		}
		if !more {
			return false
		}
	}
}
