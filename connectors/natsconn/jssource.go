package natsconn

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/sluicehq/sluice/connectors"
)

// JetStreamSourceConfig configures a JetStreamSource.
type JetStreamSourceConfig struct {
	// Stream to read. Required.
	Stream string
	// Durable is the name of the durable pull consumer the source reads
	// through; it is created when missing. Required. One host reads
	// through a durable consumer at a time.
	Durable string
	// FilterSubject restricts the consumer to matching subjects; empty:
	// the whole stream.
	FilterSubject string
	// CreateStream, when set, creates the stream with this spec if it does
	// not exist; nil: the stream must exist.
	CreateStream *StreamSpec
	// AckWait is how long the server waits for an acknowledgement before
	// it redelivers; 0: 5 minutes. Redeliveries of messages already
	// returned are dropped, so a short AckWait only costs bandwidth.
	AckWait time.Duration
	// MaxAckPending bounds the messages delivered but not acknowledged;
	// 0: 65536. It must exceed what the host holds uncommitted, or reading
	// stalls until the next Ack.
	MaxAckPending int
	// Batch is the number of messages asked for per pull request and held
	// for Read; 0: 512.
	Batch int
	// PullExpiry is how long one pull request lives; 0: 5 seconds. The
	// client asks again when it expires, and notices a lost connection or
	// consumer within about this time.
	PullExpiry time.Duration
	// SyncAck makes Ack wait until the server confirms the
	// acknowledgement; off: Ack sends it and returns.
	SyncAck bool
	// Name overrides the source's name; empty: "jetstream:STREAM/DURABLE".
	Name string
	// Logger receives the source's warnings; nil: slog.Default().
	Logger *slog.Logger
}

// JetStreamSource reads records from a JetStream stream through a durable
// pull consumer with AckPolicy AckAll.
//
// Positions are stream sequences. Ack(pos) acknowledges the message with
// the highest sequence at or below pos, which under AckAll acknowledges
// every earlier one too: one acknowledgement per committed batch.
//
// Open(after) resets the consumer to deliver from sequence after+1 (see
// Open), so a restarted host continues exactly after its last commit: what
// it committed is not delivered again, what it had read but not committed
// is. Messages at or before after that arrive anyway are acknowledged and
// skipped; redeliveries of messages already returned by this source (after
// AckWait) are dropped, so Read never returns a sequence twice.
//
// Messages are received on the NATS client's goroutine and handed to Read
// through a channel of Batch messages. The source survives reconnections:
// the client asks for messages again once it is back.
type JetStreamSource struct {
	nc   *nats.Conn
	cfg  JetStreamSourceConfig
	name string
	log  *slog.Logger

	msgs chan jetstream.Msg
	done chan struct{} // closed by Close

	mu          sync.Mutex
	state       sourceState
	cc          jetstream.ConsumeContext
	stopped     <-chan struct{}  // closed when consumption stops
	reconnected chan nats.Status // CONNECTED events: the client reconnected
	unacked     []pendingAck     // returned, not acknowledged, by sequence
	lastErr     error            // last error reported by the consume loop
	acked       atomic.Uint64    // highest position acknowledged or skipped
	// pending is the consumer's pending count that came with the last
	// message delivered (messages in the stream not delivered yet); -1
	// before any.
	pending atomic.Int64

	// Read's goroutine only (set up by Open).
	js         jetstream.JetStream
	readPend   []pendingAck
	after      uint64 // skip sequences at or below
	maxSeq     uint64 // highest sequence returned
	lastDseq   uint64 // delivery sequence of the last message; 0: unknown
	needReset  bool   // deliveries were lost: reset the consumer to maxSeq+1
	awaitReset bool   // reset done: drop deliveries made before it
	canReset   bool   // the server supports consumer resets
	startSeq   uint64 // the consumer's configured start sequence, if any
	floorReset bool   // the consumer's policy allows resets to its ack floor only
}

type pendingAck struct {
	seq uint64
	msg jetstream.Msg
}

var (
	_ connectors.Source     = (*JetStreamSource)(nil)
	_ connectors.Backlogged = (*JetStreamSource)(nil)
)

// NewJetStreamSource returns a source for cfg on nc; Open does the I/O. nc
// stays the caller's.
func NewJetStreamSource(nc *nats.Conn, cfg JetStreamSourceConfig) (*JetStreamSource, error) {
	if nc == nil {
		return nil, errors.New("natsconn: jetstream source: nil connection")
	}
	if cfg.Stream == "" || cfg.Durable == "" {
		return nil, errors.New("natsconn: jetstream source: Stream and Durable are required")
	}
	if cfg.AckWait <= 0 {
		cfg.AckWait = 5 * time.Minute
	}
	if cfg.MaxAckPending <= 0 {
		cfg.MaxAckPending = 65536
	}
	if cfg.Batch <= 0 {
		cfg.Batch = 512
	}
	if cfg.PullExpiry <= 0 {
		cfg.PullExpiry = 5 * time.Second
	}
	name := cfg.Name
	if name == "" {
		name = "jetstream:" + cfg.Stream + "/" + cfg.Durable
	}
	log := cfg.Logger
	if log == nil {
		log = slog.Default()
	}
	s := &JetStreamSource{
		nc:   nc,
		cfg:  cfg,
		name: name,
		log:  log.With("source", name),
		msgs: make(chan jetstream.Msg, cfg.Batch),
		done: make(chan struct{}),
	}
	s.pending.Store(-1)
	return s, nil
}

// Name returns the source's name.
func (s *JetStreamSource) Name() string { return s.name }

// Resumable returns true.
func (s *JetStreamSource) Resumable() bool { return true }

// Open makes sure the stream and the durable consumer exist, creating them
// when configured to, and starts consuming after stream sequence after.
//
// The consumer, created with deliver policy "all" when missing, is reset to
// deliver from after+1 (the JetStream consumer reset API, NATS 2.14 and
// later), which also forgets its pending deliveries, so a restart does not
// wait AckWait for what the previous run had read but not committed. An
// existing consumer with deliver policy "by start sequence" is reset to no
// earlier than its start; one with another policy ("new", "last", "by start
// time") to its acknowledgement floor. When the server cannot reset, Open
// logs a warning and goes on: messages at or before after are skipped (and
// acknowledged), and unacknowledged ones come back after AckWait.
//
// An existing consumer must use AckPolicy AckAll; its AckWait,
// MaxAckPending and filter subject are updated to the configured ones.
func (s *JetStreamSource) Open(ctx context.Context, after uint64) error {
	s.mu.Lock()
	switch s.state {
	case stateOpen:
		s.mu.Unlock()
		return fmt.Errorf("%s: already open", s.name)
	case stateClosed:
		s.mu.Unlock()
		return fmt.Errorf("%s: open: %w", s.name, connectors.ErrClosed)
	}
	s.state = stateOpen
	s.mu.Unlock()
	if err := s.open(ctx, after); err != nil {
		_ = s.Close()
		return fmt.Errorf("%s: open: %w", s.name, err)
	}
	return nil
}

func (s *JetStreamSource) open(ctx context.Context, after uint64) error {
	js, err := jetstream.New(s.nc)
	if err != nil {
		return err
	}
	if _, err := ensureStream(ctx, s.log, js, s.cfg.Stream, s.cfg.CreateStream); err != nil {
		return err
	}
	s.js = js
	var cons jetstream.Consumer
	err = untilAnsweredEach(ctx, s.log, func(ctx context.Context) error {
		var err error
		cons, err = s.consumer(ctx, js, after)
		return err
	})
	if err != nil {
		return err
	}
	s.after, s.maxSeq = after, after
	s.acked.Store(after)
	reconnected := s.nc.StatusChanged(nats.CONNECTED)
	cc, err := cons.Consume(s.deliver,
		jetstream.PullMaxMessages(s.cfg.Batch),
		jetstream.PullExpiry(s.cfg.PullExpiry),
		jetstream.ConsumeErrHandler(s.consumeError))
	if err != nil {
		s.nc.RemoveStatusListener(reconnected)
		return fmt.Errorf("consume: %w", err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.state == stateClosed { // closed while opening
		cc.Stop()
		s.nc.RemoveStatusListener(reconnected)
		return connectors.ErrClosed
	}
	s.cc, s.stopped, s.reconnected = cc, cc.Closed(), reconnected
	return nil
}

// consumer returns the durable consumer, created or reset to start after
// sequence after.
func (s *JetStreamSource) consumer(ctx context.Context, js jetstream.JetStream, after uint64) (jetstream.Consumer, error) {
	stream, durable := s.cfg.Stream, s.cfg.Durable
	cons, err := js.Consumer(ctx, stream, durable)
	if errors.Is(err, jetstream.ErrConsumerNotFound) {
		cfg := jetstream.ConsumerConfig{
			Durable:       durable,
			Description:   "sluice source",
			DeliverPolicy: jetstream.DeliverAllPolicy,
			AckPolicy:     jetstream.AckAllPolicy,
			AckWait:       s.cfg.AckWait,
			MaxDeliver:    -1,
			MaxAckPending: s.cfg.MaxAckPending,
			FilterSubject: s.cfg.FilterSubject,
		}
		// Deliver policy "all", so that a later Open can reset it to any
		// position; the reset below starts this one after `after`.
		cons, err = js.CreateConsumer(ctx, stream, cfg)
		if errors.Is(err, jetstream.ErrConsumerExists) {
			// Created meanwhile: treat it as an existing one.
			cons, err = js.Consumer(ctx, stream, durable)
		} else if err != nil {
			return nil, fmt.Errorf("create consumer %q on stream %q: %w", durable, stream, err)
		}
	}
	if err != nil {
		return nil, fmt.Errorf("consumer %q on stream %q: %w", durable, stream, err)
	}

	cfg := cons.CachedInfo().Config
	if cfg.AckPolicy != jetstream.AckAllPolicy {
		return nil, fmt.Errorf("consumer %q on stream %q has ack policy %s; sluice needs %s: delete it or choose another durable name",
			durable, stream, cfg.AckPolicy, jetstream.AckAllPolicy)
	}
	if cfg.AckWait != s.cfg.AckWait || cfg.MaxAckPending != s.cfg.MaxAckPending || cfg.FilterSubject != s.cfg.FilterSubject {
		cfg.AckWait, cfg.MaxAckPending, cfg.FilterSubject = s.cfg.AckWait, s.cfg.MaxAckPending, s.cfg.FilterSubject
		if cons, err = js.UpdateConsumer(ctx, stream, cfg); err != nil {
			return nil, fmt.Errorf("update consumer %q on stream %q: %w", durable, stream, err)
		}
	}
	// The reset also tells whether the server supports resets, which the
	// recovery from lost deliveries relies on; on a new consumer it
	// changes nothing.

	switch cfg.DeliverPolicy {
	case jetstream.DeliverAllPolicy:
	case jetstream.DeliverByStartSequencePolicy:
		s.startSeq = cfg.OptStartSeq
	default:
		s.floorReset = true
	}
	s.canReset = true
	if err := s.reset(ctx, after); err != nil {
		if ctx.Err() != nil {
			return nil, fmt.Errorf("reset consumer %q on stream %q: %w", durable, stream, ctx.Err())
		}
		s.canReset = false
		s.log.Warn("cannot reset the jetstream consumer; messages read but not acknowledged before will be redelivered after AckWait",
			"stream", stream, "consumer", durable, "sequence", after+1, "err", err)
	}
	return cons, nil
}

// reset makes the consumer deliver from sequence after+1 on, forgetting its
// pending deliveries: from its configured start sequence if that is later,
// from its acknowledgement floor if its policy allows nothing else.
func (s *JetStreamSource) reset(ctx context.Context, after uint64) error {
	var err error
	if s.floorReset {
		_, err = s.js.ResetConsumer(ctx, s.cfg.Stream, s.cfg.Durable)
	} else {
		_, err = s.js.ResetConsumerToSequence(ctx, s.cfg.Stream, s.cfg.Durable, max(after+1, s.startSeq))
	}
	return err
}

// recover resets the consumer after deliveries were lost (a gap in the
// delivery sequence, or a reconnection that may have dropped messages in
// transit), so that they come again rather than being acknowledged
// unseen by a later AckAll. Deliveries made before the reset are dropped
// until the first one after it, whose delivery sequence is 1.
func (s *JetStreamSource) recover(ctx context.Context) error {
	if !s.canReset {
		s.needReset = false
		return nil
	}
	if err := s.reset(ctx, s.maxSeq); err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		s.log.Warn("resetting the jetstream consumer after lost deliveries; will retry", "sequence", s.maxSeq+1, "err", err)
		return nil
	}
	s.needReset, s.awaitReset = false, true
	s.log.Info("jetstream consumer reset after lost deliveries", "sequence", s.maxSeq+1)
	return nil
}

// deliver runs on the client's goroutine for each message.
func (s *JetStreamSource) deliver(m jetstream.Msg) {
	select {
	case s.msgs <- m:
	case <-s.done:
	}
}

func (s *JetStreamSource) consumeError(_ jetstream.ConsumeContext, err error) {
	s.log.Warn("jetstream consumer", "err", err)
	s.mu.Lock()
	s.lastErr = err
	s.mu.Unlock()
}

// Read returns the messages received, up to len(buf), waiting for one when
// there are none.
func (s *JetStreamSource) Read(ctx context.Context, buf []connectors.Message) (int, error) {
	if len(buf) == 0 {
		return 0, nil
	}
	s.mu.Lock()
	state, stopped, reconnected := s.state, s.stopped, s.reconnected
	s.mu.Unlock()
	switch state {
	case stateNew:
		return 0, fmt.Errorf("%s: read: %w", s.name, connectors.ErrNotOpen)
	case stateClosed:
		return 0, fmt.Errorf("%s: read: %w", s.name, connectors.ErrClosed)
	}
	var retryTimer *time.Timer
	defer func() {
		if retryTimer != nil {
			retryTimer.Stop()
		}
	}()
	n := 0
	for n == 0 {
		if s.needReset {
			if err := s.recover(ctx); err != nil {
				return 0, err
			}
		}
		var retry <-chan time.Time
		if s.needReset { // the reset failed: try again soon
			if retryTimer == nil {
				retryTimer = time.NewTimer(retryWait)
			} else {
				retryTimer.Reset(retryWait)
			}
			retry = retryTimer.C
		}
		var skipped jetstream.Msg
		select {
		case m := <-s.msgs:
			n = s.accept(m, buf, n, &skipped)
		case _, ok := <-reconnected:
			if !ok { // removed by Close
				return 0, fmt.Errorf("%s: read: %w", s.name, connectors.ErrClosed)
			}
			// Messages in transit when the connection dropped are lost
			// but pending on the server: have them delivered again.
			s.needReset = true
			continue
		case <-retry:
			continue
		case <-ctx.Done():
			return 0, ctx.Err()
		case <-s.done:
			return 0, fmt.Errorf("%s: read: %w", s.name, connectors.ErrClosed)
		case <-stopped:
			s.mu.Lock()
			err := s.lastErr
			s.mu.Unlock()
			if err == nil {
				err = errors.New("consumption stopped")
			}
			return 0, fmt.Errorf("%s: read: %w", s.name, err)
		}
	drain:
		for n < len(buf) {
			select {
			case m := <-s.msgs:
				n = s.accept(m, buf, n, &skipped)
			default:
				break drain
			}
		}
		if skipped != nil {
			// Under AckAll this acknowledges every skipped message.
			if err := skipped.Ack(); err != nil {
				s.log.Warn("acknowledging skipped messages", "err", err)
			}
		}
	}
	s.mu.Lock()
	s.unacked = append(s.unacked, s.readPend...)
	s.mu.Unlock()
	clear(s.readPend)
	s.readPend = s.readPend[:0]
	return n, nil
}

// accept puts m into buf[n] unless it is to be skipped or dropped, and
// returns the new count.
func (s *JetStreamSource) accept(m jetstream.Msg, buf []connectors.Message, n int, skipped *jetstream.Msg) int {
	meta, err := m.Metadata()
	if err != nil {
		s.log.Warn("dropping a message without jetstream metadata", "subject", m.Subject(), "err", err)
		return n
	}
	seq, dseq := meta.Sequence.Stream, meta.Sequence.Consumer
	s.pending.Store(int64(min(meta.NumPending, math.MaxInt64)))
	switch {
	case s.needReset:
		// Dropped: the reset to come delivers it again.
		return n
	case s.awaitReset:
		if dseq != 1 {
			return n // delivered before the reset, which delivers it again
		}
		s.awaitReset = false
	case s.lastDseq != 0 && dseq != s.lastDseq+1 && s.canReset:
		s.log.Warn("deliveries lost in transit; resetting the consumer", "expected_delivery", s.lastDseq+1, "delivery", dseq, "sequence", s.maxSeq+1)
		s.needReset = true
		return n
	}
	s.lastDseq = dseq
	if seq <= s.after {
		*skipped = m
		return n
	}
	if seq <= s.maxSeq {
		// A redelivery of a message this source returned already. If it
		// was acknowledged the acknowledgement was lost: send it again.
		if seq <= s.acked.Load() {
			_ = m.Ack()
		}
		return n
	}
	s.maxSeq = seq
	msg := &buf[n]
	msg.Position = seq
	msg.Err = nil
	if err := decodeMsg(m.Data(), m.Headers(), meta.Timestamp.UnixNano(), &msg.Record); err != nil {
		msg.Err = fmt.Errorf("%s: stream sequence %d on %s: %w", s.name, seq, m.Subject(), err)
	}
	s.readPend = append(s.readPend, pendingAck{seq: seq, msg: m})
	return n + 1
}

// Backlog returns the consumer's pending count as the server sent it with
// the last message delivered: the messages of the stream (under the
// filter) not delivered yet, which includes those the client holds and
// Read has not returned. It is -1 before the first message. It makes no
// request, so it lags what was published since that message.
func (s *JetStreamSource) Backlog() int64 { return s.pending.Load() }

// Ack acknowledges every message up to and including position pos.
func (s *JetStreamSource) Ack(ctx context.Context, pos uint64) error {
	s.mu.Lock()
	switch s.state {
	case stateNew:
		s.mu.Unlock()
		return fmt.Errorf("%s: ack: %w", s.name, connectors.ErrNotOpen)
	case stateClosed:
		s.mu.Unlock()
		return fmt.Errorf("%s: ack: %w", s.name, connectors.ErrClosed)
	}
	i := sort.Search(len(s.unacked), func(i int) bool { return s.unacked[i].seq > pos })
	var m jetstream.Msg
	if i > 0 {
		m = s.unacked[i-1].msg
		clear(s.unacked[:i])
		s.unacked = s.unacked[i:]
	}
	if pos > s.acked.Load() {
		s.acked.Store(pos)
	}
	s.mu.Unlock()
	if m == nil {
		return nil
	}
	var err error
	if s.cfg.SyncAck {
		err = m.DoubleAck(ctx)
	} else {
		err = m.Ack()
	}
	if err != nil {
		return fmt.Errorf("%s: ack %d: %w", s.name, pos, err)
	}
	return nil
}

// Close stops consuming. Messages read but not acknowledged are delivered
// again to the next reader of the consumer.
func (s *JetStreamSource) Close() error {
	s.mu.Lock()
	if s.state == stateClosed {
		s.mu.Unlock()
		return nil
	}
	s.state = stateClosed
	cc, stopped := s.cc, s.stopped
	if s.reconnected != nil {
		s.nc.RemoveStatusListener(s.reconnected)
	}
	s.unacked = nil
	close(s.done)
	s.mu.Unlock()
	if cc != nil {
		cc.Stop()
		t := time.NewTimer(closeTimeout)
		defer t.Stop()
		select {
		case <-stopped:
		case <-t.C:
			return fmt.Errorf("%s: close: consumer did not stop within %s", s.name, closeTimeout)
		}
	}
	return nil
}
