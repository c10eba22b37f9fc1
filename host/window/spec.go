package window

import (
	"errors"
	"fmt"
	"math"
	"time"
)

// ErrCorrupt marks state this package cannot decode.
var ErrCorrupt = errors.New("corrupt window state")

// SpecError is a window or watermark configuration that cannot work. Key
// is the pipeline file's key at fault (window.slide, window.gap, ...); the
// pipeline loader adds the file and line.
type SpecError struct {
	Key    string
	Reason string
}

// Error returns the key and the reason.
func (e *SpecError) Error() string { return e.Key + ": " + e.Reason }

// Window is the time interval [Start, End) of a window, in nanoseconds
// since the Unix epoch.
type Window struct {
	Start, End int64
}

// MaxTime returns the largest time in the window, End-1: the time its
// results carry, so that windowed operators chain.
func (w Window) MaxTime() int64 { return w.End - 1 }

// String returns the window as "[start,end)".
func (w Window) String() string { return fmt.Sprintf("[%d,%d)", w.Start, w.End) }

// globalWindow is the one window of the global assigner.
var globalWindow = Window{Start: math.MinInt64, End: math.MaxInt64}

// Assigner is the kind of a window assigner.
type Assigner uint8

// The window assigners.
const (
	// Tumbling windows of Size, aligned on Offset, do not overlap.
	Tumbling Assigner = iota
	// Sliding windows of Size start every Slide (aligned on Offset) and
	// overlap when Slide < Size.
	Sliding
	// Session windows hold the records of a key that are less than Gap
	// apart; they merge as records fill the gaps between them.
	Session
	// Global is one window per key for all time; it needs a count
	// trigger.
	Global
)

// String returns the assigner as the pipeline file spells it.
func (a Assigner) String() string {
	switch a {
	case Tumbling:
		return "tumbling"
	case Sliding:
		return "sliding"
	case Session:
		return "session"
	case Global:
		return "global"
	}
	return fmt.Sprintf("Assigner(%d)", uint8(a))
}

// Domain is the time a window follows.
type Domain uint8

// The time domains.
const (
	// EventTime assigns records by their time and fires windows when the
	// watermark passes them.
	EventTime Domain = iota
	// ProcessingTime assigns records by the processing time at which they
	// are added and fires windows when processing time passes them.
	ProcessingTime
)

// String returns "event" or "processing".
func (d Domain) String() string {
	switch d {
	case EventTime:
		return "event"
	case ProcessingTime:
		return "processing"
	}
	return fmt.Sprintf("Domain(%d)", uint8(d))
}

// Trigger is the kind of a window's main trigger.
type Trigger uint8

// The triggers.
const (
	// OnTime fires a window once when its domain's time passes its
	// MaxTime (the watermark for event time): the default.
	OnTime Trigger = iota
	// Count fires a window every Count records; for the global window it
	// also purges it. A counted window that is not global never fires on
	// time: its state is dropped when time passes its end plus lateness.
	Count
	// ProcessingTimeTrigger fires an event-time window when processing
	// time passes its MaxTime.
	ProcessingTimeTrigger
)

// String returns the trigger as the pipeline file spells it.
func (t Trigger) String() string {
	switch t {
	case OnTime:
		return "time"
	case Count:
		return "count"
	case ProcessingTimeTrigger:
		return "processing"
	}
	return fmt.Sprintf("Trigger(%d)", uint8(t))
}

// Spec describes a window: its assigner, time domain, trigger, early
// firings and allowed lateness. Durations are in nanoseconds, like
// abi.Record.Time.
type Spec struct {
	Assigner Assigner
	// Size is the length of tumbling and sliding windows.
	Size time.Duration
	// Slide is how often a sliding window starts.
	Slide time.Duration
	// Offset shifts the alignment of tumbling and sliding windows (from
	// the Unix epoch): 0 <= Offset < Slide (Size for tumbling).
	Offset time.Duration
	// Gap is the inactivity that closes a session.
	Gap time.Duration
	// Domain is the time the assigner and the default trigger follow.
	Domain Domain
	// Trigger is the main trigger; Count is its record count.
	Trigger Trigger
	Count   int
	// EarlyCount, when positive, fires a window early every EarlyCount
	// records (tumbling and global windows), emitting it so far and
	// keeping it.
	EarlyCount int
	// EarlyInterval, when positive, fires every open window of a key
	// early every EarlyInterval of processing time.
	EarlyInterval time.Duration
	// Lateness is how long after a window's end (in event time) its state
	// is kept: a record arriving in that span is added and fires the
	// window again (a late firing).
	Lateness time.Duration
}

// Validate reports a Spec that cannot work as a *SpecError naming the
// pipeline key at fault.
func (s *Spec) Validate() error {
	bad := func(key, format string, args ...any) error {
		return &SpecError{Key: key, Reason: fmt.Sprintf(format, args...)}
	}
	switch s.Assigner {
	case Tumbling:
		if s.Size <= 0 {
			return bad("window.size", "must be positive, not %v", s.Size)
		}
		if s.Slide != 0 {
			return bad("window.slide", "tumbling windows have no slide (use type sliding)")
		}
		if s.Offset < 0 || s.Offset >= s.Size {
			return bad("window.offset", "%v is outside [0, size %v)", s.Offset, s.Size)
		}
	case Sliding:
		if s.Size <= 0 {
			return bad("window.size", "must be positive, not %v", s.Size)
		}
		if s.Slide <= 0 {
			return bad("window.slide", "must be positive, not %v", s.Slide)
		}
		if s.Slide > s.Size {
			return bad("window.slide", "%v is larger than the size %v: records between windows would be lost", s.Slide, s.Size)
		}
		if s.Offset < 0 || s.Offset >= s.Slide {
			return bad("window.offset", "%v is outside [0, slide %v)", s.Offset, s.Slide)
		}
	case Session:
		if s.Gap <= 0 {
			return bad("window.gap", "must be positive, not %v", s.Gap)
		}
	case Global:
		if s.Trigger != Count {
			return bad("window.trigger", "a global window never ends: it needs a count trigger")
		}
	default:
		return bad("window.type", "unknown assigner %d", s.Assigner)
	}
	if s.Assigner != Session && s.Gap != 0 {
		return bad("window.gap", "only session windows have a gap")
	}
	if s.Assigner != Tumbling && s.Assigner != Sliding {
		if s.Size != 0 {
			return bad("window.size", "%s windows have no size", s.Assigner)
		}
		if s.Offset != 0 {
			return bad("window.offset", "%s windows have no offset", s.Assigner)
		}
	}
	if s.Domain > ProcessingTime {
		return bad("window.time", "unknown time domain %d (event or processing)", s.Domain)
	}
	switch s.Trigger {
	case OnTime, ProcessingTimeTrigger:
		if s.Count != 0 {
			return bad("window.count", "only a count trigger has a count")
		}
	case Count:
		if s.Count <= 0 {
			return bad("window.count", "must be positive, not %d", s.Count)
		}
		if s.Assigner != Tumbling && s.Assigner != Global {
			return bad("window.trigger", "a count trigger needs tumbling or global windows, not %s", s.Assigner)
		}
	default:
		return bad("window.trigger", "unknown trigger %d", s.Trigger)
	}
	if s.Trigger == ProcessingTimeTrigger && s.Domain == ProcessingTime {
		return bad("window.trigger", "processing-time windows already fire on processing time")
	}
	if s.Trigger == ProcessingTimeTrigger && s.Assigner == Sliding {
		// Sliding windows share slices: a record for a window that
		// expired but has not fired yet would be counted in it.
		return bad("window.trigger", "a processing-time trigger needs tumbling or session windows (or time: processing)")
	}
	if s.EarlyCount < 0 {
		return bad("window.early.count", "must not be negative, not %d", s.EarlyCount)
	}
	if s.EarlyCount > 0 && s.Assigner != Tumbling && s.Assigner != Global {
		return bad("window.early.count", "early firings by count need tumbling or global windows, not %s", s.Assigner)
	}
	if s.EarlyCount > 0 && s.Trigger == Count {
		return bad("window.early.count", "a count trigger already fires by count")
	}
	if s.EarlyInterval < 0 {
		return bad("window.early.interval", "must not be negative, not %v", s.EarlyInterval)
	}
	if s.Lateness < 0 {
		return bad("window.lateness", "must not be negative, not %v", s.Lateness)
	}
	if s.Lateness > 0 && s.Domain == ProcessingTime {
		return bad("window.lateness", "processing-time windows have no late records")
	}
	if s.Lateness > 0 && s.Assigner == Global {
		return bad("window.lateness", "a global window never ends, so nothing is late")
	}
	return nil
}
