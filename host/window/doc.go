// Package window is Sluice's window manager: event time and watermarks,
// window assigners, triggers and allowed lateness with Flink's semantics,
// and the window operator that keeps window state in keyed state. It is
// native Go; user logic arrives through the Function interface (a Wasm
// guest behind it, or a built-in aggregate from Builtin).
//
// # Time
//
// Times are nanoseconds since the Unix epoch, like abi.Record.Time.
// Processing time is always passed in by the caller (now), never read
// from a clock here, so that the package is deterministic and a replay
// after a crash computes the same. A Generator per input follows its
// watermark (monotonous, or bounded out-of-orderness: the largest time
// seen minus the bound minus one) and says when the input is idle; Min
// combines an operator's inputs. A Generator's state is 18 bytes, to be
// committed with the state and the source positions.
//
// # Windows and slices
//
// A window is [Start, End); its results carry End-1 (MaxTime). The
// operator does not keep state per window but per slice (general stream
// slicing): every record falls into exactly one slice, and a window is
// the union of the slices it covers. Tumbling windows are their own
// slices; sliding windows are cut at every window start and end (at most
// two slices per slide); a session is one slice, and sessions merge as
// records fill the gaps between them; the global window is one slice. A
// record therefore costs one state update whatever the ratio of size to
// slide; a window's firing merges its slices' accumulators (Accumulator's
// Merge) or concatenates their records.
//
// # State
//
// An Operator holds scratch buffers only. Everything else is keyed state
// under the record's key, in the caller's state.Session (see encode.go
// for the layout): a slice's record count and accumulator or records, a
// window's firing count (so that every firing has a sequence number a
// replay reproduces), the count firings waiting to be emitted, and
// timers: a window's firing, its purge after the allowed lateness, the
// key's next early firing. It is committed with the source positions,
// restored after a crash, rolled back with a savepoint, and moves with
// its key group; it is purged when the watermark passes a window's end
// plus the allowed lateness, so it is bounded by the open windows.
//
// # Decisions, and why
//
//   - Add groups a batch by (key, slice) before touching state: one read
//     and one write per group, and one Function call per batch, so that
//     a Wasm guest is entered once per batch.
//   - Add finds a batch's (key, slice) groups by a hash of the pair and
//     each group's state entry once (state.Session.GetKeyRef, PutRef), so
//     that adding a record allocates nothing of its own.
//   - Advance sorts the timers due when it starts once, and keeps only
//     those that its firings set and that are due at once in a heap; a
//     listed timer deleted since (or listed twice) is skipped because
//     state.Session.RemoveTimer finds it gone, so no index of the due
//     timers is kept. Event-time windows with no early interval set no
//     processing-time timers, and Advance stops looking for any in a key
//     group once it has found none there: timers left by the same window
//     run on processing time before a restart (or on the host a group
//     came from) still fire when processing time passes them.
//   - A firing's slices and merged accumulators are copied into chunks of
//     one arena per Advance, not one allocation each; so a Result is
//     valid only during the emit call that gets it.
//   - Sliding windows set one firing timer per new slice (its first
//     window); each on-time firing sets the timer of the next window of
//     the key that holds a slice (a chain), so that a record does not set
//     a timer per overlapping window. When a window fires once and is
//     then purged (no lateness, no early or count trigger), the windows
//     of the chain that are due as well fire with it from one scan of
//     the key's slices, without a timer each; Advance then sorts the
//     firings back into the order of their timers.
//   - Add does not emit: a count firing is stored with its accumulator
//     and a timer that is due at once, and emitted by the next Advance,
//     so that results leave in one place, in a deterministic order.
//   - Collected records reach Fire in event-time order, ties in arrival
//     order: slices are disjoint in time, so this needs no sequence
//     number, and it is the same after a restart.
package window
