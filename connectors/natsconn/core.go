package natsconn

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/sluicehq/sluice/connectors"
)

// CoreSourceConfig configures a CoreSource.
type CoreSourceConfig struct {
	// Subject to subscribe to; wildcards allowed. Required.
	Subject string
	// Queue, when set, joins the queue group of that name, so that
	// several hosts share the subject's messages.
	Queue string
	// Buffer is the number of received messages the source holds for Read;
	// 0: 16384. When it is full, delivery pauses and the client buffers up
	// to the pending limits below.
	Buffer int
	// PendingMsgs and PendingBytes are the client's limits on messages
	// received but not yet taken into Buffer; past them the client drops
	// messages and reports a slow consumer. 0: 1,048,576 messages and
	// 256 MiB.
	PendingMsgs, PendingBytes int
	// Name overrides the source's name; empty: "nats:" + Subject.
	Name string
}

// CoreSource reads records from a core NATS subject.
//
// Core NATS keeps no history, so the source is not resumable: messages
// published while no host is subscribed, or held in memory when a host
// stops, are lost (at-most-once). Positions are a counter that starts after
// the position given to Open, so ids that the host derives from them never
// repeat across restarts. Ack does nothing.
//
// Messages are received by the NATS client's delivery goroutine, which
// appends them to a bounded ring; Read takes everything the ring holds, up
// to len(buf), under one lock.
type CoreSource struct {
	nc   *nats.Conn
	cfg  CoreSourceConfig
	name string

	mu      sync.Mutex
	notFull sync.Cond // signalled when Read frees space; uses mu
	ring    []coreEntry
	head    int // index of the oldest entry
	count   int // entries held
	waiters int // delivery callbacks blocked on a full ring
	next    uint64
	sub     *nats.Subscription
	state   sourceState

	clock arrivalClock // receipt times; deliver's goroutine only

	notEmpty chan struct{} // capacity 1: a pending wake-up for Read
	done     chan struct{} // closed by Close
	scratch  []coreEntry   // Read's copy of taken entries; Read's goroutine only
}

// arrivalRebase is how long an arrivalClock advances the wall clock it
// read by the monotonic clock before it reads the wall clock again.
const arrivalRebase = time.Second

// arrivalClock gives receipt times, in Unix nanoseconds, with one clock
// reading each: the wall clock read at most every arrivalRebase, advanced
// by the monotonic clock since (time.Now reads both clocks, which costs
// about twice as much, and a source takes a time for every message). A
// wall clock set back or forward shows within arrivalRebase. Not safe for
// concurrent use.
type arrivalClock struct {
	base time.Time // holds a monotonic reading; zero until the first call
	wall int64     // base in Unix nanoseconds
}

// now returns the current time in Unix nanoseconds.
func (c *arrivalClock) now() int64 {
	if !c.base.IsZero() {
		if d := time.Since(c.base); d >= 0 && d < arrivalRebase {
			return c.wall + int64(d)
		}
	}
	c.base = time.Now()
	c.wall = c.base.UnixNano()
	return c.wall
}

type coreEntry struct {
	msg  *nats.Msg
	pos  uint64
	time int64 // receipt time, ns
}

type sourceState uint8

const (
	stateNew sourceState = iota
	stateOpen
	stateClosed
)

var _ connectors.Source = (*CoreSource)(nil)

// NewCoreSource returns a source for cfg.Subject on nc; it subscribes in
// Open. nc stays the caller's.
func NewCoreSource(nc *nats.Conn, cfg CoreSourceConfig) (*CoreSource, error) {
	if nc == nil {
		return nil, errors.New("natsconn: core source: nil connection")
	}
	if cfg.Subject == "" {
		return nil, errors.New("natsconn: core source: Subject is required")
	}
	if cfg.Buffer <= 0 {
		cfg.Buffer = 16384
	}
	if cfg.PendingMsgs <= 0 {
		cfg.PendingMsgs = 1 << 20
	}
	if cfg.PendingBytes <= 0 {
		cfg.PendingBytes = 256 << 20
	}
	name := cfg.Name
	if name == "" {
		name = "nats:" + cfg.Subject
	}
	s := &CoreSource{
		nc:       nc,
		cfg:      cfg,
		name:     name,
		ring:     make([]coreEntry, cfg.Buffer),
		notEmpty: make(chan struct{}, 1),
		done:     make(chan struct{}),
	}
	s.notFull.L = &s.mu
	return s, nil
}

// Name returns the source's name.
func (s *CoreSource) Name() string { return s.name }

// Resumable returns false: core NATS is at-most-once.
func (s *CoreSource) Resumable() bool { return false }

// Open subscribes, and returns once the server has registered the
// subscription. Positions start at after+1. When Open fails the source is
// closed.
func (s *CoreSource) Open(ctx context.Context, after uint64) error {
	s.mu.Lock()
	if s.state != stateNew {
		st := s.state
		s.mu.Unlock()
		if st == stateClosed {
			return fmt.Errorf("%s: open: %w", s.name, connectors.ErrClosed)
		}
		return fmt.Errorf("%s: already open", s.name)
	}
	s.next = after + 1
	s.state = stateOpen
	s.mu.Unlock()

	var sub *nats.Subscription
	var err error
	if s.cfg.Queue != "" {
		sub, err = s.nc.QueueSubscribe(s.cfg.Subject, s.cfg.Queue, s.deliver)
	} else {
		sub, err = s.nc.Subscribe(s.cfg.Subject, s.deliver)
	}
	if err != nil {
		_ = s.Close()
		return fmt.Errorf("%s: subscribe: %w", s.name, err)
	}
	s.mu.Lock()
	if s.state == stateClosed { // closed while subscribing
		s.mu.Unlock()
		_ = sub.Unsubscribe()
		return fmt.Errorf("%s: open: %w", s.name, connectors.ErrClosed)
	}
	s.sub = sub
	s.mu.Unlock()
	if err := sub.SetPendingLimits(s.cfg.PendingMsgs, s.cfg.PendingBytes); err != nil {
		_ = s.Close()
		return fmt.Errorf("%s: pending limits: %w", s.name, err)
	}
	if err := flush(ctx, s.nc); err != nil {
		_ = s.Close()
		return fmt.Errorf("%s: subscribe: %w", s.name, err)
	}
	return nil
}

// deliver runs on the client's delivery goroutine for each message, one
// at a time: the client calls a subscription's handler in turn.
func (s *CoreSource) deliver(m *nats.Msg) {
	var t int64
	if m.Header == nil || m.Header[HeaderTime] == nil {
		t = s.clock.now()
	}
	s.mu.Lock()
	for s.count == len(s.ring) && s.state == stateOpen {
		s.waiters++
		s.notFull.Wait()
		s.waiters--
	}
	if s.state != stateOpen {
		s.mu.Unlock()
		return
	}
	i := s.head + s.count
	if i >= len(s.ring) {
		i -= len(s.ring)
	}
	s.ring[i] = coreEntry{msg: m, pos: s.next, time: t}
	s.next++
	s.count++
	wake := s.count == 1
	s.mu.Unlock()
	if wake {
		select {
		case s.notEmpty <- struct{}{}:
		default:
		}
	}
}

// Read returns the messages received since the last Read, up to len(buf),
// waiting for one when there are none.
func (s *CoreSource) Read(ctx context.Context, buf []connectors.Message) (int, error) {
	if len(buf) == 0 {
		return 0, nil
	}
	for {
		s.mu.Lock()
		switch s.state {
		case stateNew:
			s.mu.Unlock()
			return 0, fmt.Errorf("%s: read: %w", s.name, connectors.ErrNotOpen)
		case stateClosed:
			s.mu.Unlock()
			return 0, fmt.Errorf("%s: read: %w", s.name, connectors.ErrClosed)
		}
		if s.count > 0 {
			n := s.take(len(buf))
			s.mu.Unlock()
			s.decode(buf[:n])
			return n, nil
		}
		s.mu.Unlock()
		select {
		case <-s.notEmpty:
		case <-s.done:
		case <-ctx.Done():
			return 0, ctx.Err()
		}
	}
}

// take moves up to max entries from the ring to s.scratch. s.mu is held.
func (s *CoreSource) take(max int) int {
	n := min(max, s.count)
	s.scratch = s.scratch[:0]
	first := min(n, len(s.ring)-s.head)
	s.scratch = append(s.scratch, s.ring[s.head:s.head+first]...)
	clear(s.ring[s.head : s.head+first])
	if rest := n - first; rest > 0 {
		s.scratch = append(s.scratch, s.ring[:rest]...)
		clear(s.ring[:rest])
	}
	s.head += n
	if s.head >= len(s.ring) {
		s.head -= len(s.ring)
	}
	s.count -= n
	if s.waiters > 0 {
		s.notFull.Broadcast()
	}
	return n
}

func (s *CoreSource) decode(buf []connectors.Message) {
	for i := range buf {
		e := &s.scratch[i]
		m := &buf[i]
		m.Position = e.pos
		m.Err = nil
		if err := decodeMsg(e.msg.Data, e.msg.Header, e.time, &m.Record); err != nil {
			m.Err = fmt.Errorf("%s: message %d on %s: %w", s.name, e.pos, e.msg.Subject, err)
		}
		e.msg = nil
	}
}

// Ack does nothing: core NATS has no acknowledgements.
func (s *CoreSource) Ack(context.Context, uint64) error { return nil }

// Close unsubscribes. Messages not yet read are dropped.
func (s *CoreSource) Close() error {
	s.mu.Lock()
	if s.state == stateClosed {
		s.mu.Unlock()
		return nil
	}
	s.state = stateClosed
	sub := s.sub
	s.sub = nil
	clear(s.ring)
	s.count = 0
	s.notFull.Broadcast()
	close(s.done)
	s.mu.Unlock()
	if sub != nil {
		if err := sub.Unsubscribe(); err != nil && !errors.Is(err, nats.ErrConnectionClosed) && !errors.Is(err, nats.ErrBadSubscription) {
			return fmt.Errorf("%s: unsubscribe: %w", s.name, err)
		}
	}
	return nil
}

// CoreSinkConfig configures a CoreSink.
type CoreSinkConfig struct {
	// Subject to publish to. Required.
	Subject string
	// Mapping says what is published besides the value.
	Mapping Mapping
	// Name overrides the sink's name; empty: "nats:" + Subject.
	Name string
}

// CoreSink publishes records to a core NATS subject.
//
// Write hands messages to the client's buffered writer; Flush waits until
// the server has received everything written (a ping round trip). Core NATS
// does not acknowledge delivery to subscribers, and Out.ID is ignored.
type CoreSink struct {
	nc     *nats.Conn
	cfg    CoreSinkConfig
	name   string
	closed bool
}

var _ connectors.FlushStarter = (*CoreSink)(nil)

// NewCoreSink returns a sink publishing to cfg.Subject on nc, which stays
// the caller's.
func NewCoreSink(nc *nats.Conn, cfg CoreSinkConfig) (*CoreSink, error) {
	if nc == nil {
		return nil, errors.New("natsconn: core sink: nil connection")
	}
	if cfg.Subject == "" {
		return nil, errors.New("natsconn: core sink: Subject is required")
	}
	name := cfg.Name
	if name == "" {
		name = "nats:" + cfg.Subject
	}
	return &CoreSink{nc: nc, cfg: cfg, name: name}, nil
}

// Name returns the sink's name.
func (s *CoreSink) Name() string { return s.name }

// Write publishes out. A record with nothing but a value (or any record
// under Mapping.ValueOnly) goes out without a header block.
func (s *CoreSink) Write(ctx context.Context, out []connectors.Out) error {
	if s.closed {
		return fmt.Errorf("%s: write: %w", s.name, connectors.ErrClosed)
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	mp := s.cfg.Mapping
	for i := range out {
		rec := &out[i].Record
		var err error
		if h := mp.header(rec); h == nil {
			err = s.nc.Publish(s.cfg.Subject, rec.Value)
		} else {
			err = s.nc.PublishMsg(&nats.Msg{Subject: s.cfg.Subject, Data: rec.Value, Header: h})
		}
		if err != nil {
			return fmt.Errorf("%s: publish: %w", s.name, err)
		}
	}
	return nil
}

// Flush waits until the server has received everything written.
func (s *CoreSink) Flush(ctx context.Context) error {
	if s.closed {
		return fmt.Errorf("%s: flush: %w", s.name, connectors.ErrClosed)
	}
	if err := flush(ctx, s.nc); err != nil {
		return fmt.Errorf("%s: flush: %w", s.name, err)
	}
	return nil
}

// StartFlush starts a flush, a ping round trip to the server, that covers
// everything written so far, and returns a function that waits for it:
// the host writes the next batches while the round trip is under way
// (connectors.FlushStarter).
func (s *CoreSink) StartFlush(ctx context.Context) func() error {
	if s.closed {
		return func() error { return fmt.Errorf("%s: flush: %w", s.name, connectors.ErrClosed) }
	}
	done := make(chan error, 1)
	go func() {
		// The ping is queued behind what was written: it is answered
		// once the server has read all of it.
		err := flush(ctx, s.nc)
		if err != nil {
			err = fmt.Errorf("%s: flush: %w", s.name, err)
		}
		done <- err
	}()
	return func() error { return <-done }
}

// Close flushes, waiting up to 10 seconds, and makes further use fail.
func (s *CoreSink) Close() error {
	if s.closed {
		return nil
	}
	s.closed = true
	ctx, cancel := context.WithTimeout(context.Background(), closeTimeout)
	defer cancel()
	if err := flush(ctx, s.nc); err != nil && !errors.Is(err, nats.ErrConnectionClosed) {
		return fmt.Errorf("%s: close: %w", s.name, err)
	}
	return nil
}

// closeTimeout bounds the flush a Close does.
const closeTimeout = 10 * time.Second

// flushTimeout bounds a flush whose context has no deadline, which the NATS
// client requires.
const flushTimeout = 30 * time.Second

// flush waits for a ping round trip to the server.
func flush(ctx context.Context, nc *nats.Conn) error {
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, flushTimeout)
		defer cancel()
	}
	return nc.FlushWithContext(ctx)
}
