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
// The sink is a connectors.Rewindable, which makes a replay after a crash
// exactly once whatever the time since the crash, without the duplicate
// window: Offset is the stream sequence of the sink's last acknowledged
// message, which the host commits with the state; Rewind, on restart,
// reads the ids of the sink's messages that the stream holds after the
// committed sequence (those the crashed run published after its last
// commit) and Write then drops the outputs that carry them. The check
// costs nothing once they are replayed.
type JetStreamSink struct {
	nc     *nats.Conn
	js     jetstream.JetStream
	cfg    JetStreamSinkConfig
	name   string
	log    *slog.Logger
	stream jetstream.Stream // the stream capturing Subject; nil if none was found
	groups []string         // with KeyGroups: the subject of each key group

	mu       sync.Mutex
	inflight int         // published, not yet acknowledged or failed
	retry    []*nats.Msg // failed for a passing reason, to publish again
	failure  error       // first lasting failure since the last Flush
	passing  error       // last passing failure, to explain a Flush that times out
	closed   bool
	acked    uint64        // highest stream sequence acknowledged to this sink
	changed  chan struct{} // capacity 1: inflight, retry or failure changed

	// Recovery, used by the writing goroutine only (jsrecover.go).
	wrote   bool              // Write was called
	base    uint64            // the offset before this run's messages
	skip    map[string]uint64 // ids already in the stream -> their sequence
	matched uint64            // highest sequence of a skipped id
	written map[string]uint64 // while skipping: id prefix -> highest position written
}

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

func (s *JetStreamSink) onAck(_ jetstream.JetStream, _ *nats.Msg, ack *jetstream.PubAck) {
	s.mu.Lock()
	s.inflight--
	if ack != nil && ack.Sequence > s.acked {
		s.acked = ack.Sequence
	}
	s.mu.Unlock()
	s.signal()
}

func (s *JetStreamSink) onErr(_ jetstream.JetStream, m *nats.Msg, err error) {
	s.mu.Lock()
	s.inflight--
	switch {
	case retriable(err):
		s.retry = append(s.retry, m)
		s.passing = err
	case errors.Is(err, jetstream.ErrJetStreamPublisherClosed):
		// The sink is closing.
	case s.failure == nil:
		s.failure = fmt.Errorf("%s: publish (Nats-Msg-Id %q): %w", s.name, m.Header.Get(jetstream.MsgIDHeader), err)
	}
	s.mu.Unlock()
	s.signal()
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
		if err := s.publish(ctx, m); err != nil {
			return err
		}
	}
	return nil
}

// publish sends m once there is room in flight and no earlier message
// waits for a retry.
func (s *JetStreamSink) publish(ctx context.Context, m *nats.Msg) error {
	for {
		s.mu.Lock()
		if s.closed {
			s.mu.Unlock()
			return fmt.Errorf("%s: write: %w", s.name, connectors.ErrClosed)
		}
		if s.inflight < s.cfg.MaxInFlight && len(s.retry) == 0 {
			s.inflight++
			s.mu.Unlock()
			return s.send(m)
		}
		retrying := len(s.retry) > 0
		s.mu.Unlock()
		if retrying {
			sent, err := s.resend(ctx)
			if err != nil {
				return err
			}
			if sent > 0 {
				continue
			}
		}
		if err := s.wait(ctx); err != nil {
			return err
		}
	}
}

// send publishes m, counted in flight by the caller.
func (s *JetStreamSink) send(m *nats.Msg) error {
	_, err := s.js.PublishMsgAsync(m)
	if err == nil {
		return nil
	}
	s.mu.Lock()
	s.inflight--
	if retriable(err) {
		s.retry = append(s.retry, m)
		s.passing = err
		s.mu.Unlock()
		return nil
	}
	s.mu.Unlock()
	return fmt.Errorf("%s: publish (Nats-Msg-Id %q): %w", s.name, m.Header.Get(jetstream.MsgIDHeader), err)
}

// resend republishes the messages waiting for a retry, while the
// connection is up and there is room in flight, and returns how many it
// republished.
func (s *JetStreamSink) resend(ctx context.Context) (int, error) {
	sent := 0
	for {
		switch s.nc.Status() {
		case nats.CONNECTED:
		case nats.CLOSED:
			return sent, fmt.Errorf("%s: %w", s.name, nats.ErrConnectionClosed)
		default:
			return sent, nil
		}
		s.mu.Lock()
		if len(s.retry) == 0 || s.inflight >= s.cfg.MaxInFlight {
			s.mu.Unlock()
			return sent, nil
		}
		if sent == 0 {
			s.log.Info("publishing again after a passing failure", "messages", len(s.retry), "err", s.passing)
		}
		m := s.retry[0]
		s.retry[0] = nil
		s.retry = s.retry[1:]
		s.inflight++
		s.mu.Unlock()
		if err := s.send(m); err != nil {
			return sent, err
		}
		sent++
		if err := ctx.Err(); err != nil {
			return sent, err
		}
	}
}

// retryWait is how long the sink waits before it looks again at a
// connection that is down, or republishes after a passing failure.
const retryWait = 250 * time.Millisecond

// wait blocks until an acknowledgement or failure arrives, or, when
// messages wait for a retry, for retryWait.
func (s *JetStreamSink) wait(ctx context.Context) error {
	s.mu.Lock()
	retrying := len(s.retry) > 0
	s.mu.Unlock()
	var timeout <-chan time.Time
	if retrying {
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
		if _, err := s.resend(ctx); err != nil {
			return err
		}
		s.mu.Lock()
		if s.closed {
			s.mu.Unlock()
			return fmt.Errorf("%s: flush: %w", s.name, connectors.ErrClosed)
		}
		if s.inflight == 0 && len(s.retry) == 0 {
			err := s.failure
			s.failure, s.passing = nil, nil
			s.mu.Unlock()
			return err
		}
		s.mu.Unlock()
		if err := s.wait(ctx); err != nil {
			s.mu.Lock()
			passing, pending := s.passing, s.inflight+len(s.retry)
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
	s.retry = nil
	s.mu.Unlock()
	s.js.CleanupPublisher()
	if err != nil {
		return fmt.Errorf("%s: close: %w", s.name, err)
	}
	return nil
}
