package plugin

import (
	"errors"
	"fmt"
	"strings"

	"github.com/sluicehq/sluice/abi"
	"github.com/sluicehq/sluice/runtime"
)

// LoadError is returned by Load for a module that cannot serve as the
// requested operator. It lists every problem found, not only the first.
type LoadError struct {
	Plugin   string   // the plugin's name, as given to Load
	Problems []string // each problem, in words a plugin author can act on

	causes []error // underlying errors (compile, link, guest call), for errors.Is/As
}

func (e *LoadError) Error() string {
	switch len(e.Problems) {
	case 0:
		return fmt.Sprintf("plugin %q: cannot be loaded", e.Plugin)
	case 1:
		return fmt.Sprintf("plugin %q: %s", e.Plugin, e.Problems[0])
	}
	return fmt.Sprintf("plugin %q: %d problems: %s", e.Plugin, len(e.Problems), strings.Join(e.Problems, "; "))
}

// Unwrap returns the underlying errors, for instance the *runtime.Error of a
// module that does not compile.
func (e *LoadError) Unwrap() []error { return e.causes }

// ErrRejected is wrapped by the error of a Reject the guest asked for by
// calling reject.
var ErrRejected = errors.New("record rejected by the operator")

// ErrAlloc is wrapped by the error of a call whose input the guest's
// sluice_alloc could not place in its memory.
var ErrAlloc = errors.New("guest allocator failed")

// StatusError reports a guest export that returned a status other than
// abi.StatusOK, with the reason the guest logged at abi.LogError during the
// call, if it logged one.
type StatusError struct {
	Plugin string
	Export string
	Status int32
	Reason string // the guest's last error log message during the call
}

func (e *StatusError) Error() string {
	s := fmt.Sprintf("plugin %q export %q returned status %d (%s)", e.Plugin, e.Export, e.Status, statusName(e.Status))
	if e.Reason != "" {
		s += ": " + e.Reason
	} else {
		s += " without logging a reason"
	}
	return s
}

func statusName(s int32) string {
	switch s {
	case abi.StatusOK:
		return "ok"
	case abi.StatusNotFound:
		return "not found"
	case abi.StatusError:
		return "error"
	case abi.StatusBadConfig:
		return "bad config"
	}
	return "unknown status"
}

// RecordError is the error of a Reject: input record Index of the batch
// given to Process failed, either because the guest rejected it (Err is
// ErrRejected, Reason the guest's message) or because the guest call that
// processed it alone failed (Err is the *runtime.Error, *StatusError or
// allocation error, so errors.Is(err, runtime.ErrTimeout) and the like work).
type RecordError struct {
	Plugin string
	Export string // the export whose call failed
	Index  int    // the record's index in the batch given to Process
	Reason string // the guest's message, for a rejected record
	Err    error
}

func (e *RecordError) Error() string {
	if errors.Is(e.Err, ErrRejected) {
		return fmt.Sprintf("plugin %q: input record %d rejected by the operator: %s", e.Plugin, e.Index, e.Reason)
	}
	var re *runtime.Error
	if errors.As(e.Err, &re) && re.Err != nil {
		// Say plugin and export once, then what the engine said.
		s := fmt.Sprintf("plugin %q export %q: input record %d: %s: %v", e.Plugin, e.Export, e.Index, re.Kind, re.Err)
		if re.Stderr != "" {
			s += " (guest stderr: " + re.Stderr + ")"
		}
		return s
	}
	return fmt.Sprintf("plugin %q export %q: input record %d: %v", e.Plugin, e.Export, e.Index, e.Err)
}

// Unwrap returns the cause.
func (e *RecordError) Unwrap() error { return e.Err }
