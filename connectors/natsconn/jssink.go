package natsconn

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"sync"
	"syscall"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/sluicehq/sluice/connectors"
)

// JetStreamSinkConfig configures a JetStreamSink.
type JetStreamSinkConfig struct {
	// Subject to publish to; a stream must capture it. Required.
	Subject string
	// KeyGroups, when above 0, partitions the output by key group: each
	// record is published to "<Subject>.<kg>", kg being
	// KeyGroup(key, KeyGroups) (a record without a key is in the
	// group of the empty key), so that a PartitionedSource can read the
	// groups one by one. Subject must then have no wildcard, and a stream
	// the sink creates captures "<Subject>.*" (CreateStream.Subjects, when
	// set, must capture every group's subject). 0: Subject as it is.
	KeyGroups int
	// KeyGroup is the partition function of a sink with KeyGroups: the
	// key group of a key among groups groups. The host gives its state's
	// (state.KeyGroup), so that a record's subject is the group its key's
	// state lives in. Required with KeyGroups.
	KeyGroup func(key []byte, groups int) int
	// Stream, when set, is checked to exist when the sink is created (and
	// created from CreateStream when missing and CreateStream is set).
	Stream string
	// CreateStream creates Stream when it does not exist.
	CreateStream *StreamSpec
	// Mapping says what is published besides the value.
	Mapping Mapping
	// MaxInFlight bounds the messages published and not yet acknowledged;
	// Write waits when it is reached. 0: 4096.
	MaxInFlight int
	// AckTimeout is how long the sink waits for the acknowledgement of one
	// message before it publishes it again, and how long Close waits for
	// what is outstanding; 0: 10 seconds.
	AckTimeout time.Duration
	// NotReplayed lists the id prefixes ("<pipeline>/<source>") of sources
	// that do not replay their input after a crash (core NATS): a restart
	// gives new input the positions of what was lost, so Rewind does not
	// skip their ids.
	NotReplayed []string
	// Name overrides the sink's name; empty: "jetstream:" + Subject.
	Name string
	// Logger receives the sink's warnings; nil: slog.Default().
	Logger *slog.Logger
}

// JetStreamSink publishes records to a JetStream stream asynchronously,
// with Nats-Msg-Id set to Out.ID.
//
// Write publishes without waiting for acknowledgements, keeping at most
// MaxInFlight unacknowledged; Flush waits until every message written has
// been acknowledged. A message whose publication fails for a passing
// reason (the connection is lost or reconnecting, JetStream is not
// answering yet, no acknowledgement within AckTimeout) is published again,
// with the same id, until it is acknowledged or the context of Flush ends:
// a server that goes away and comes back loses nothing, and the duplicate
// window keeps a message that was stored twice from appearing twice. Other
// failures (the stream rejects the message) are reported by the next
// Flush.
//
// The messages keep the order they were written in across such failures.
// At the first passing failure the sink stops publishing, waits until
// every message in flight is acknowledged or failed, then publishes again
// from the first message not acknowledged, in order: the first alone,
// then, once it is acknowledged, the rest pipelined. (The NATS client's
// own retry on "no responders", which republishes from timers in no
// particular order, is turned off.) What this cannot order are failures
// the sink learns of too late: when the connection to the server is lost,
// the client sends what it had buffered and not yet written once it has
// reconnected, before the sink can publish again the messages lost with
// the connection; and a stream leader that becomes able to store in the
// middle of a burst stores the burst's end while its start fails. Those
// messages are stored once each, out of order, and the sink, which checks
// the sequences of the acknowledgements against the order written, logs a
// warning naming the first of them (and counts the others at the next
// Flush).
//
// The sink is a connectors.Rewindable, which makes a replay after a crash
// exactly once whatever the time since the crash, without the duplicate
// window: Offset is the stream sequence of the sink's last acknowledged
// message, which the host commits with the state; Rewind, on restart,
// reads the ids of the sink's messages that the stream holds after the
// committed sequence (those the crashed run published after its last
// commit) and Write then drops the outputs that carry them. The check
// costs nothing once they are replayed.
type JetStreamSink struct {
	nc      *nats.Conn
	js      jetstream.JetStream
	cfg     JetStreamSinkConfig
	name    string
	log     *slog.Logger
	stream  jetstream.Stream // the stream capturing Subject; nil if none was found
	groups  []string         // with KeyGroups: the subject of each key group
	pubOpts []jetstream.PublishOpt

	mu sync.Mutex
	// The window: what was written and is not yet acknowledged, in write
	// order, is win[head:]; settled messages are trimmed from its front.
	win       []flight
	head      int
	next      int       // no message of win[head:next] waits to be published
	unsettled int       // messages of the window not settled
	sent      int       // in flight: published, neither acknowledged nor failed
	halted    time.Time // when a passing failure stopped the publishing; zero: publishing
	probe     bool      // publish one message alone and wait for its acknowledgement
	order     struct {  // the last message trimmed from the window in the order written
		seq uint64
		m   *nats.Msg
	}
	outOfOrder int   // messages found stored out of order since the last Flush
	failure    error // first lasting failure since the last Flush
	passing    error // last passing failure, to explain a Flush that times out
	closed     bool
	acked      uint64        // highest stream sequence acknowledged to this sink
	changed    chan struct{} // capacity 1: the window changed

	// Recovery, used by the writing goroutine only (jsrecover.go).
	wrote   bool              // Write was called
	base    uint64            // the offset before this run's messages
	skip    map[string]uint64 // ids already in the stream -> their sequence
	matched uint64            // highest sequence of a skipped id
	written map[string]uint64 // while skipping: id prefix -> highest position written
}

// flight is a message of the sink's window.
type flight struct {
	m     *nats.Msg
	seq   uint64 // the stream sequence acknowledged, for the order's check; 0: none (yet)
	state flightState
	// failed once for a passing reason: a duplicate acknowledgement means
	// that the failed publication was stored after all
	again bool
}

type flightState uint8

const (
	waiting  flightState = iota // to publish, or failed and to publish again
	inFlight                    // published, no answer yet
	settled                     // acknowledged, or failed for good (the failure is kept)
)

var (
	_ connectors.IDUser     = (*JetStreamSink)(nil)
	_ connectors.Rewindable = (*JetStreamSink)(nil)
)

// NewJetStreamSink returns a sink publishing to cfg.Subject on nc, which
// stays the caller's. When cfg.Stream is set it checks that the stream
// exists, or creates it from cfg.CreateStream.
func NewJetStreamSink(ctx context.Context, nc *nats.Conn, cfg JetStreamSinkConfig) (*JetStreamSink, error) {
	if nc == nil {
		return nil, errors.New("natsconn: jetstream sink: nil connection")
	}
	if cfg.Subject == "" {
		return nil, errors.New("natsconn: jetstream sink: Subject is required")
	}
	if cfg.CreateStream != nil && cfg.Stream == "" {
		return nil, errors.New("natsconn: jetstream sink: CreateStream needs Stream")
	}
	groups, err := partitionSubjects(cfg.Subject, cfg.KeyGroups)
	if err != nil {
		return nil, fmt.Errorf("natsconn: jetstream sink: %w", err)
	}
	if groups != nil && cfg.KeyGroup == nil {
		return nil, errors.New("natsconn: jetstream sink: KeyGroups needs KeyGroup, the partition function")
	}
	if groups != nil && cfg.CreateStream != nil {
		spec := *cfg.CreateStream
		if len(spec.Subjects) == 0 {
			spec.Subjects = []string{cfg.Subject + ".*"}
		} else if err := captureAll(spec.Subjects, groups); err != nil {
			return nil, fmt.Errorf("natsconn: jetstream sink: stream %q to create: %w", cfg.Stream, err)
		}
		cfg.CreateStream = &spec
	}
	if cfg.MaxInFlight <= 0 {
		cfg.MaxInFlight = 4096
	}
	if cfg.AckTimeout <= 0 {
		cfg.AckTimeout = 10 * time.Second
	}
	name := cfg.Name
	if name == "" {
		name = "jetstream:" + cfg.Subject
	}
	log := cfg.Logger
	if log == nil {
		log = slog.Default()
	}
	s := &JetStreamSink{
		nc:      nc,
		cfg:     cfg,
		name:    name,
		log:     log.With("sink", name),
		changed: make(chan struct{}, 1),
		groups:  groups,
		// The client's retry on "no responders" republishes from
		// timers, out of order; the sink retries itself, in order.
		pubOpts: []jetstream.PublishOpt{jetstream.WithRetryAttempts(0)},
	}
	js, err := jetstream.New(nc,
		jetstream.WithPublishAsyncMaxPending(cfg.MaxInFlight),
		jetstream.WithPublishAsyncTimeout(cfg.AckTimeout),
		jetstream.WithPublishAsyncAckHandler(s.onAck),
		jetstream.WithPublishAsyncErrHandler(s.onErr))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	s.js = js
	if err := s.findStream(ctx); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return s, nil
}

// Name returns the sink's name.
func (s *JetStreamSink) Name() string { return s.name }

// UsesIDs returns true: every message carries its Out.ID as Nats-Msg-Id.
func (s *JetStreamSink) UsesIDs() bool { return true }

func (s *JetStreamSink) onAck(_ jetstream.JetStream, m *nats.Msg, ack *jetstream.PubAck) {
	s.mu.Lock()
	if i := s.find(m); i >= 0 {
		s.sent--
		s.probe = false
		if ack != nil && (!ack.Duplicate || s.win[i].again) {
			// A duplicate of a message written again (not published
			// again) was stored by an earlier write: not in this order.
			s.win[i].seq = ack.Sequence
		}
		s.settle(i)
	}
	if ack != nil && ack.Sequence > s.acked {
		s.acked = ack.Sequence
	}
	s.mu.Unlock()
	s.signal()
}

func (s *JetStreamSink) onErr(_ jetstream.JetStream, m *nats.Msg, err error) {
	s.mu.Lock()
	if i := s.find(m); i >= 0 {
		s.sent--
		s.failed(i, err)
	}
	s.mu.Unlock()
	s.signal()
}

// find returns the index in win of m, in flight, or -1. The answers come
// mostly in order, so m is mostly the first in flight.
func (s *JetStreamSink) find(m *nats.Msg) int {
	for i := s.head; i < len(s.win); i++ {
		if s.win[i].m == m && s.win[i].state == inFlight {
			return i
		}
	}
	return -1
}

// add appends m to the window, waiting to be published.
func (s *JetStreamSink) add(m *nats.Msg) {
	if len(s.win) == cap(s.win) && s.head > 0 {
		// Move the window to the front of the array rather than grow it.
		n := copy(s.win, s.win[s.head:])
		clear(s.win[n:])
		s.win = s.win[:n]
		s.next -= s.head
		s.head = 0
	}
	s.win = append(s.win, flight{m: m})
	s.unsettled++
}

// failed records the failure of win[i], which is no longer in
// flight: a passing one halts the publishing and makes it wait to be
// published again; another settles it and is kept for Flush.
func (s *JetStreamSink) failed(i int, err error) {
	switch {
	case retriable(err):
		s.win[i].state, s.win[i].again = waiting, true
		s.next = min(s.next, i)
		s.passing = err
		s.halted = time.Now()
		return
	case errors.Is(err, jetstream.ErrJetStreamPublisherClosed):
		// The sink is closing.
	case s.failure == nil:
		m := s.win[i].m
		s.failure = fmt.Errorf("%s: publish (Nats-Msg-Id %q): %w", s.name, m.Header.Get(jetstream.MsgIDHeader), err)
	}
	s.settle(i)
}

// settle marks win[i] settled and trims the settled messages from the
// front of the window, checking that the stream stored them in the order
// written.
func (s *JetStreamSink) settle(i int) {
	s.win[i].state = settled
	s.unsettled--
	for s.head < len(s.win) && s.win[s.head].state == settled {
		f := &s.win[s.head]
		if f.seq != 0 {
			if f.seq < s.order.seq {
				s.reordered(f)
			} else {
				s.order.seq, s.order.m = f.seq, f.m
			}
		}
		*f = flight{}
		s.head++
	}
	s.next = max(s.next, s.head)
	if s.head == len(s.win) {
		s.win, s.head, s.next = s.win[:0], 0, 0
	}
}

// reordered reports f, acknowledged at a sequence below that of a
// message written before it: the stream stored it first. The first such
// message since the last Flush is logged with both ids, the others
// counted and logged by Flush.
func (s *JetStreamSink) reordered(f *flight) {
	if s.outOfOrder == 0 {
		s.log.Warn("the stream stored a message before one written before it (a connection lost while publishing)",
			"id", f.m.Header.Get(jetstream.MsgIDHeader), "sequence", f.seq, "written after id", s.order.m.Header.Get(jetstream.MsgIDHeader), "at sequence", s.order.seq)
	}
	s.outOfOrder++
}

func (s *JetStreamSink) signal() {
	select {
	case s.changed <- struct{}{}:
	default:
	}
}

// retriable reports whether a publication that failed with err may succeed
// when published again.
func retriable(err error) bool {
	if errors.Is(err, nats.ErrDisconnected) || errors.Is(err, nats.ErrConnectionReconnecting) ||
		errors.Is(err, nats.ErrReconnectBufExceeded) || errors.Is(err, nats.ErrTimeout) ||
		errors.Is(err, nats.ErrNoResponders) || errors.Is(err, jetstream.ErrNoStreamResponse) ||
		errors.Is(err, jetstream.ErrAsyncPublishTimeout) || errors.Is(err, jetstream.ErrTooManyStalledMsgs) {
		return true
	}
	// The connection broke while the client wrote: it reconnects.
	var netErr net.Error
	if errors.As(err, &netErr) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE) {
		return true
	}
	var apiErr *jetstream.APIError
	return errors.As(err, &apiErr) && apiErr.Code == 503 // JetStream temporarily unavailable
}

// Write publishes out, waiting while MaxInFlight messages are
// unacknowledged. With KeyGroups, each record goes to the subject of its
// key's group. The values are copied: out may be reused when Write
// returns. After Rewind, a record whose ID the stream already holds is
// not published again.
func (s *JetStreamSink) Write(ctx context.Context, out []connectors.Out) error {
	s.wrote = true
	if len(out) == 0 {
		return nil
	}
	recovering := len(s.skip) > 0
	// One allocation holds the values of the whole call; it lives until
	// the last of them is acknowledged.
	size := 0
	for i := range out {
		size += len(out[i].Record.Value)
	}
	slab := make([]byte, 0, size)
	for i := range out {
		if recovering && s.stored(out[i].ID) {
			continue
		}
		rec := &out[i].Record
		start := len(slab)
		slab = append(slab, rec.Value...)
		subject := s.cfg.Subject
		if s.groups != nil {
			subject = s.groups[s.cfg.KeyGroup(rec.Key, len(s.groups))]
		}
		m := &nats.Msg{Subject: subject, Data: slab[start:len(slab):len(slab)], Header: s.cfg.Mapping.header(rec)}
		if id := out[i].ID; id != "" {
			if m.Header == nil {
				m.Header = make(nats.Header, 1)
			}
			m.Header[jetstream.MsgIDHeader] = []string{id}
		}
		if err := s.enqueue(ctx, m); err != nil {
			return err
		}
	}
	return s.pump()
}

// enqueue adds m to the window once it has room, publishing meanwhile.
func (s *JetStreamSink) enqueue(ctx context.Context, m *nats.Msg) error {
	for {
		s.mu.Lock()
		if s.closed {
			s.mu.Unlock()
			return fmt.Errorf("%s: write: %w", s.name, connectors.ErrClosed)
		}
		if s.unsettled < s.cfg.MaxInFlight {
			s.add(m)
			s.mu.Unlock()
			return nil
		}
		s.mu.Unlock()
		if err := s.pump(); err != nil {
			return err
		}
		if err := s.wait(ctx); err != nil {
			return err
		}
	}
}

// pump publishes, in write order, the messages of the window that wait
// and may go now: none while a passing failure holds the publishing (until
// every message in flight is answered and retryWait has passed), one alone
// after it, all of them (up to MaxInFlight in flight) otherwise; and none
// while the connection is not up.
func (s *JetStreamSink) pump() error {
	for {
		switch s.nc.Status() {
		case nats.CONNECTED:
		case nats.CLOSED:
			return fmt.Errorf("%s: %w", s.name, nats.ErrConnectionClosed)
		default:
			return nil // publishing now would fill the reconnect buffer, sent before what is lost
		}
		s.mu.Lock()
		if s.closed {
			s.mu.Unlock()
			return fmt.Errorf("%s: write: %w", s.name, connectors.ErrClosed)
		}
		if !s.halted.IsZero() {
			if s.sent > 0 || time.Since(s.halted) < retryWait {
				s.mu.Unlock()
				return nil
			}
			s.halted, s.probe = time.Time{}, true
			s.log.Info("publishing again after a passing failure", "messages", s.unsettled, "err", s.passing)
		}
		if s.sent >= s.cfg.MaxInFlight || s.probe && s.sent > 0 {
			s.mu.Unlock()
			return nil
		}
		for s.next < len(s.win) && s.win[s.next].state != waiting {
			s.next++
		}
		if s.next == len(s.win) {
			s.mu.Unlock()
			return nil
		}
		i := s.next
		m := s.win[i].m
		s.win[i].state = inFlight
		s.next++
		s.sent++
		s.mu.Unlock()
		if _, err := s.js.PublishMsgAsync(m, s.pubOpts...); err != nil {
			s.mu.Lock()
			if i := s.find(m); i >= 0 {
				s.sent--
				if !retriable(err) {
					s.settle(i)
					s.mu.Unlock()
					return fmt.Errorf("%s: publish (Nats-Msg-Id %q): %w", s.name, m.Header.Get(jetstream.MsgIDHeader), err)
				}
				s.failed(i, err)
			}
			s.mu.Unlock()
		}
	}
}

// retryWait is how long the sink waits before it looks again at a
// connection that is down, or publishes again after a passing failure.
const retryWait = 250 * time.Millisecond

// wait blocks until an acknowledgement or failure arrives, or, when
// messages wait to be published, for retryWait at most.
func (s *JetStreamSink) wait(ctx context.Context) error {
	s.mu.Lock()
	waiting := s.unsettled > s.sent
	s.mu.Unlock()
	var timeout <-chan time.Time
	if waiting {
		t := time.NewTimer(retryWait)
		defer t.Stop()
		timeout = t.C
	}
	select {
	case <-s.changed:
		return nil
	case <-timeout:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Flush waits until every message written is acknowledged, publishing
// again those that failed for a passing reason, and returns the first
// lasting failure since the previous Flush.
func (s *JetStreamSink) Flush(ctx context.Context) error {
	for {
		if err := s.pump(); err != nil {
			return err
		}
		s.mu.Lock()
		if s.closed {
			s.mu.Unlock()
			return fmt.Errorf("%s: flush: %w", s.name, connectors.ErrClosed)
		}
		if s.unsettled == 0 {
			err := s.failure
			if s.outOfOrder > 1 {
				s.log.Warn("messages stored out of the order written since the last flush", "messages", s.outOfOrder)
			}
			s.failure, s.passing, s.outOfOrder = nil, nil, 0
			s.mu.Unlock()
			return err
		}
		s.mu.Unlock()
		if err := s.wait(ctx); err != nil {
			s.mu.Lock()
			passing, pending := s.passing, s.unsettled
			s.mu.Unlock()
			if passing != nil {
				return fmt.Errorf("%s: flush: %d messages unacknowledged: %w (last failure, retried: %v)", s.name, pending, err, passing)
			}
			return fmt.Errorf("%s: flush: %d messages unacknowledged: %w", s.name, pending, err)
		}
	}
}

// Close flushes, waiting up to AckTimeout, and releases the publisher.
// Messages still unacknowledged then are reported in the error.
func (s *JetStreamSink) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), s.cfg.AckTimeout)
	defer cancel()
	err := s.Flush(ctx)
	s.mu.Lock()
	s.closed = true
	clear(s.win)
	s.win, s.head, s.next = nil, 0, 0
	s.mu.Unlock()
	s.js.CleanupPublisher()
	if err != nil {
		return fmt.Errorf("%s: close: %w", s.name, err)
	}
	return nil
}
