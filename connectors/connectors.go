package connectors

import (
	"context"
	"errors"

	"github.com/sluicehq/sluice/abi"
)

// Message is one record read from a source.
type Message struct {
	// Record is the record read. It owns its bytes: they stay valid and
	// unchanged after the next Read, so the host may keep them.
	Record abi.Record
	// Position locates the record in its source. It is source-specific and
	// strictly increasing per source: the line number for a file, the
	// sequence number for the generator, the stream sequence for JetStream,
	// a local counter for core NATS.
	Position uint64
	// Group is the key group of the record, set by a Partitioned source
	// (which reads key groups from separate subjects); other sources leave
	// it 0 and the host does not read it.
	Group int
	// GroupSet is, for a Partitioned source, the set of groups and floors
	// the record was read under: 0 for OpenGroups's, n after the nth
	// SetGroups that succeeded. A host that took a group back after
	// giving it away drops the records read before.
	GroupSet uint64
	// Err is set when the source could not decode this input (a malformed
	// JSON line, a record over the size limit). The host dead-letters the
	// message with its position; Record.Value then holds the raw bytes.
	// Err wraps ErrMalformed or ErrTooLarge.
	Err error
}

// Source is where records enter a pipeline.
//
// A Source is opened once and read by one goroutine. Ack may be called from
// another goroutine than Read, and Close may be called while Read waits,
// which then returns ErrClosed. After Close a Source cannot be opened again:
// resuming means a new Source opened with the last committed position.
type Source interface {
	// Name identifies the source in logs and errors, e.g. "file:input.jsonl".
	Name() string
	// Open starts reading after position after (0: from the beginning). For
	// resumable sources (file, generator, JetStream), records at or before
	// after are never returned.
	Open(ctx context.Context, after uint64) error
	// Read fills buf with up to len(buf) messages and returns how many. It
	// blocks until at least one is available and then returns promptly with
	// what it has: it does not wait to fill buf. It returns either n > 0 and
	// a nil error, or 0 and an error: io.EOF after the last message of a
	// finite source, ctx.Err() when ctx is done, ErrClosed after Close.
	Read(ctx context.Context, buf []Message) (int, error)
	// Ack tells the source that every message up to and including position
	// pos is committed (JetStream: acknowledge; file and generator: nothing).
	Ack(ctx context.Context, pos uint64) error
	// Resumable reports whether Open honours after across restarts. It is
	// false for core NATS, which is at-most-once.
	Resumable() bool
	// Close releases the source. It does not close connections the source
	// was given.
	Close() error
}

// Partitioned is a source whose input is partitioned by key group (the
// key group of each record's key, as state.KeyGroup computes it over
// KeyGroups groups), so that the groups a host owns can be read, paused
// and resumed each on its own: a host reads only the groups it owns, and
// a group that moves to another host is read there from the position its
// state was handed over at.
//
// Positions are still strictly increasing over the whole source (a
// JetStream stream sequence), but each group has its own floor: the
// position of the last record of that group the host has applied. A
// Partitioned source is opened with OpenGroups, not Open.
type Partitioned interface {
	Source
	// KeyGroups returns the number of key groups the input is
	// partitioned into.
	KeyGroups() int
	// OpenGroups starts reading the key groups in floors, each after its
	// own position floors[kg] (0: from the beginning). Records of other
	// groups are not returned.
	OpenGroups(ctx context.Context, floors map[int]uint64) error
	// SetGroups changes, at run time, the groups read and their floors,
	// as OpenGroups set them. It may be called while another goroutine
	// waits in Read. Records returned before the call may belong to a
	// group no longer read, and records of a group still read may be
	// returned again after it (those above the floor given): the host
	// drops both by their group and position. Records read under the new
	// groups carry the next GroupSet; one Read may return records of both.
	SetGroups(ctx context.Context, floors map[int]uint64) error
	// Delivered returns a position up to which every record of the groups
	// read, above its group's floor, has been returned by Read since the
	// last OpenGroups or SetGroups: the position of the last record the
	// source took from its stream (returned or dropped below a floor),
	// or the lowest floor before it took any. The host calls it after
	// Read, on the reading goroutine, and commits it as the position
	// from which a restart reads every group it still owns.
	Delivered() uint64
}

// Backlogged is a source that can tell how many records wait in it, not
// read yet: the control plane's measure of how far the pipeline is
// behind its input.
type Backlogged interface {
	Source
	// Backlog returns the number of records waiting, not read yet, or -1
	// when the source cannot tell (yet). It is an estimate as of the
	// source's last look (a JetStream source: the pending count the server
	// sent with the last message delivered), never a request of its own.
	// It may be called from any goroutine, while another waits in Read.
	Backlog() int64
}

// Out is one record to write to a sink.
type Out struct {
	Record abi.Record
	// ID is the de-duplication id, derived by the host from the input
	// position (JetStream: the Nats-Msg-Id header). Empty: none.
	ID string
}

// Sink is where records leave a pipeline. A Sink is used by one goroutine.
type Sink interface {
	// Name identifies the sink in logs and errors, e.g. "jetstream:OUT".
	Name() string
	// Write hands records to the sink, which may buffer them. The sink does
	// not keep out or the records' bytes after Write returns.
	Write(ctx context.Context, out []Out) error
	// Flush returns when everything written is durable or acknowledged,
	// or with the first failure since the previous Flush.
	Flush(ctx context.Context) error
	// Close flushes what it can and releases the sink. It does not close
	// connections the sink was given.
	Close() error
}

// FlushStarter is a sink whose flush can be started and waited for apart,
// while the sink is written to: the host starts a batch's flush after its
// writes and waits for it only before the batch's commit, writing the next
// batches meanwhile. A sink whose flush is a round trip (core NATS) then
// does not stall the pipeline for it.
type FlushStarter interface {
	Sink
	// StartFlush starts a flush of everything written so far and returns
	// a function that waits for it and returns what Flush would have. The
	// function may be called on another goroutine, while Write is called
	// again; a flush started by a later call covers at least what this one
	// does. A started flush ends by itself, waited for or not.
	StartFlush(ctx context.Context) (wait func() error)
}

// IDUser is a sink that uses Out.ID (to de-duplicate, or to write it out).
// The host derives ids only when some sink uses them: building one is an
// allocation per output record, wasted on sinks that ignore it.
type IDUser interface {
	Sink
	UsesIDs() bool
}

// Rewindable is a sink that can take back what it wrote after a committed
// point, which makes its output exactly once without de-duplication
// downstream. The host commits Offset after each flushed batch, with the
// state (and, for a sink with none committed yet, when the job is
// created), and on restart calls Rewind with the committed offset before
// the first Write, dropping what a crash left behind after it.
type Rewindable interface {
	Sink
	// Offset returns the sink's position after the last Flush.
	Offset() uint64
	// Rewind makes what was written after offset, an Offset of an earlier
	// run, appear once: a file drops it, a JetStream sink does not publish
	// it again when the replay writes it.
	Rewind(ctx context.Context, offset uint64) error
}

// Errors shared by connectors, checked with errors.Is.
var (
	// ErrMalformed is wrapped by Message.Err when an input could not be
	// decoded.
	ErrMalformed = errors.New("malformed input")
	// ErrTooLarge is wrapped by Message.Err when an input is over the
	// source's size limit.
	ErrTooLarge = errors.New("input too large")
	// ErrClosed is returned by a source or sink used after Close.
	ErrClosed = errors.New("connector closed")
	// ErrNotOpen is returned by Read or Ack on a source not yet opened.
	ErrNotOpen = errors.New("source not open")
)
