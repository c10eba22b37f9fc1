package natsconn

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/sluicehq/sluice/connectors"
)

// maxKeyGroups is the most key groups a stream is partitioned into: a
// host's state has at most that many (its layout stores a group in 16
// bits).
const maxKeyGroups = 1 << 16

// PartitionedSourceConfig configures a PartitionedSource.
type PartitionedSourceConfig struct {
	// Stream to read. Required.
	Stream string
	// Prefix of the partition subjects: the records of key group kg are
	// on "<Prefix>.<kg>", as a JetStreamSink with KeyGroups publishes
	// them. Required; no wildcards.
	Prefix string
	// KeyGroups is the number of key groups the input is partitioned
	// into, the sink's KeyGroups. Required: 1 to 65536.
	KeyGroups int
	// CreateStream, when set, creates the stream with this spec if it does
	// not exist (no subjects: "<Prefix>.*"); nil: the stream must exist.
	CreateStream *StreamSpec
	// MaxFilters is the most key groups the source reads through a
	// consumer filtered to their subjects. Reading more, it filters on
	// "<Prefix>.*" and drops the other groups' records itself: the server
	// delivers a consumer with several filters much more slowly per
	// message (the more so the more subjects the stream has), so above a
	// few groups receiving every record costs less. 0: KeyGroups/64, at
	// least 1.
	MaxFilters int
	// Batch is the number of messages asked for per pull request and held
	// for Read; 0: 512.
	Batch int
	// PullExpiry is how long one pull request lives; 0: 5 seconds.
	PullExpiry time.Duration
	// StallTimeout is how long the consumer may receive nothing, with no
	// message waiting for Read, while the server holds messages for it
	// (or does not answer about it), before the source replaces it with a
	// new one from the last message Read took; 0: 30 seconds.
	StallTimeout time.Duration
	// Name overrides the source's name; empty:
	// "jetstream-partitioned:STREAM".
	Name string
	// Logger receives the source's warnings; nil: slog.Default().
	Logger *slog.Logger
}

// PartitionedSource reads a stream partitioned by key group, whose
// subjects are "<Prefix>.<kg>", as a connectors.Partitioned: only the
// groups it is given, each after its own floor.
//
// It reads through an ordered consumer (ephemeral, in memory, without
// acknowledgements) filtered to the subjects of the groups it reads
// (to "<Prefix>.*" when they are more than MaxFilters), from the lowest
// floor + 1, and drops each record of a group it does not read or at or
// below its group's floor. The ordered consumer
// recreates itself after the last sequence it delivered when it is lost
// (a server restart, a reconnection, missed heartbeats), so the source
// survives them; one that stays stuck for StallTimeout (its re-creation
// failing: a consumer placed on a server that was lost; or none under way
// and nothing delivered while the server holds messages for it) is
// replaced by the source's own watchdog, which starts a new consumer
// after the last message Read took, without changing the groups read or
// their GroupSet. SetGroups replaces the consumer (new filter, new start)
// and the floors. Nothing is acknowledged: the floors the host commits
// are the only position, so Ack does nothing.
//
// Positions are stream sequences; Message.Group is the key group parsed
// from the subject's last token. A message whose subject does not end in
// a group number below KeyGroups is a malformed message of group 0, whose
// floor applies to it; only a source that reads group 0 through the
// filter "<Prefix>.*" receives one.
type PartitionedSource struct {
	nc      *nats.Conn
	cfg     PartitionedSourceConfig
	name    string
	log     *slog.Logger
	filters []string // the subject of each key group
	msgs    chan partDelivery
	done    chan struct{} // closed by Close
	changed chan struct{} // capacity 1: the session was replaced
	cur     atomic.Pointer[partSession]
	setMu   sync.Mutex // serializes OpenGroups, SetGroups and the watchdog's replacements
	sets    uint64     // SetGroups calls that succeeded, under setMu
	// readMu is held by Read while it takes deliveries and by replace
	// while it replaces the current session, so that a replacement knows
	// the last message Read took from the session it replaces.
	readMu    sync.Mutex
	js        jetstream.JetStream
	stopWatch context.CancelFunc // ends the watchdog; nil before open
	watched   chan struct{}      // closed when the watchdog has ended
	mu        sync.Mutex
	srcState  sourceState
}

// partSession is one consumer of the groups read and their floors; it is
// not changed once installed.
type partSession struct {
	set     uint64   // the GroupSet of its records
	floor   []uint64 // per key group
	read    []bool   // per key group
	cons    jetstream.Consumer
	cc      jetstream.ConsumeContext // nil when no group is read
	stopped <-chan struct{}          // closed when consumption stops; nil without cc
	stop    chan struct{}            // closed when the session is replaced or the source closed
	// installed is closed when the session becomes the source's current
	// one. Its consumer delivers from Consume on, before that: Read, which
	// drops a delivery of any session but the current one, must not see
	// those deliveries before it is current, or they would be lost.
	installed chan struct{}
	// delivered is the stream sequence of the last message Read took
	// from this session's consumer (returned or dropped), or the lowest
	// floor before it took any: every read group is complete up to it.
	delivered atomic.Uint64
	// pending is the consumer's pending count that came with the last
	// message Read took from it; -1 before any.
	pending atomic.Int64
	// received counts the messages the consumer handed to the session,
	// whether Read took them or not: the watchdog's sign of life.
	received atomic.Uint64

	mu      sync.Mutex
	lastErr error // last error reported by the consumer
}

type partDelivery struct {
	sess *partSession
	msg  jetstream.Msg
}

var (
	_ connectors.Partitioned = (*PartitionedSource)(nil)
	_ connectors.Backlogged  = (*PartitionedSource)(nil)
)

// NewPartitionedSource returns a source for cfg on nc; OpenGroups does the
// I/O. nc stays the caller's.
func NewPartitionedSource(nc *nats.Conn, cfg PartitionedSourceConfig) (*PartitionedSource, error) {
	if nc == nil {
		return nil, errors.New("natsconn: partitioned source: nil connection")
	}
	if cfg.Stream == "" || cfg.Prefix == "" {
		return nil, errors.New("natsconn: partitioned source: Stream and Prefix are required")
	}
	if cfg.KeyGroups <= 0 {
		return nil, fmt.Errorf("natsconn: partitioned source: KeyGroups %d out of range: 1 to %d", cfg.KeyGroups, maxKeyGroups)
	}
	filters, err := partitionSubjects(cfg.Prefix, cfg.KeyGroups)
	if err != nil {
		return nil, fmt.Errorf("natsconn: partitioned source: %w", err)
	}
	if cfg.CreateStream != nil {
		spec := *cfg.CreateStream
		if len(spec.Subjects) == 0 {
			spec.Subjects = []string{cfg.Prefix + ".*"}
		} else if err := captureAll(spec.Subjects, filters); err != nil {
			return nil, fmt.Errorf("natsconn: partitioned source: stream %q to create: %w", cfg.Stream, err)
		}
		cfg.CreateStream = &spec
	}
	if cfg.MaxFilters <= 0 {
		cfg.MaxFilters = max(1, cfg.KeyGroups/64)
	}
	if cfg.Batch <= 0 {
		cfg.Batch = 512
	}
	if cfg.PullExpiry <= 0 {
		cfg.PullExpiry = 5 * time.Second
	}
	if cfg.StallTimeout <= 0 {
		cfg.StallTimeout = 30 * time.Second
	}
	name := cfg.Name
	if name == "" {
		name = "jetstream-partitioned:" + cfg.Stream
	}
	log := cfg.Logger
	if log == nil {
		log = slog.Default()
	}
	return &PartitionedSource{
		nc:      nc,
		cfg:     cfg,
		name:    name,
		log:     log.With("source", name),
		filters: filters,
		msgs:    make(chan partDelivery, cfg.Batch),
		done:    make(chan struct{}),
		changed: make(chan struct{}, 1),
	}, nil
}

// Name returns the source's name.
func (s *PartitionedSource) Name() string { return s.name }

// Resumable returns true: the host's floors are honoured across restarts.
func (s *PartitionedSource) Resumable() bool { return true }

// KeyGroups returns the number of key groups the input is partitioned
// into.
func (s *PartitionedSource) KeyGroups() int { return s.cfg.KeyGroups }

// Open reads every key group after stream sequence after: OpenGroups with
// every group at floor after.
func (s *PartitionedSource) Open(ctx context.Context, after uint64) error {
	floors := make(map[int]uint64, s.cfg.KeyGroups)
	for kg := range s.cfg.KeyGroups {
		floors[kg] = after
	}
	return s.OpenGroups(ctx, floors)
}

// OpenGroups makes sure the stream exists, creating it when configured
// to, and starts reading the key groups in floors, each after its own
// floor. An empty floors reads nothing until SetGroups. When OpenGroups
// fails the source is closed.
func (s *PartitionedSource) OpenGroups(ctx context.Context, floors map[int]uint64) error {
	s.setMu.Lock()
	defer s.setMu.Unlock()
	s.mu.Lock()
	switch s.srcState {
	case stateOpen:
		s.mu.Unlock()
		return fmt.Errorf("%s: already open", s.name)
	case stateClosed:
		s.mu.Unlock()
		return fmt.Errorf("%s: open: %w", s.name, connectors.ErrClosed)
	}
	s.srcState = stateOpen
	s.mu.Unlock()
	if err := s.open(ctx, floors); err != nil {
		_ = s.Close()
		return fmt.Errorf("%s: open: %w", s.name, err)
	}
	return nil
}

func (s *PartitionedSource) open(ctx context.Context, floors map[int]uint64) error {
	if err := s.checkFloors(floors); err != nil {
		return err
	}
	js, err := jetstream.New(s.nc)
	if err != nil {
		return err
	}
	if _, err := ensureStream(ctx, s.log, js, s.cfg.Stream, s.cfg.CreateStream); err != nil {
		return err
	}
	s.js = js
	ss, err := s.start(ctx, floors)
	if err != nil {
		return err
	}
	if err := s.install(ctx, ss); err != nil {
		return err
	}
	watchCtx, stop := context.WithCancel(context.Background())
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.srcState == stateClosed {
		stop()
		return connectors.ErrClosed
	}
	s.stopWatch, s.watched = stop, make(chan struct{})
	go s.watch(watchCtx)
	return nil
}

// SetGroups changes the key groups read and their floors: it starts a
// consumer filtered to the new groups from the new lowest floor + 1, then
// stops the previous one. Messages of the previous consumer not yet
// returned are dropped; those returned are not taken back. When SetGroups
// fails, the groups read and their floors are unchanged.
func (s *PartitionedSource) SetGroups(ctx context.Context, floors map[int]uint64) error {
	s.setMu.Lock()
	defer s.setMu.Unlock()
	s.mu.Lock()
	st := s.srcState
	s.mu.Unlock()
	switch st {
	case stateNew:
		return fmt.Errorf("%s: set groups: %w", s.name, connectors.ErrNotOpen)
	case stateClosed:
		return fmt.Errorf("%s: set groups: %w", s.name, connectors.ErrClosed)
	}
	if err := s.checkFloors(floors); err != nil {
		return fmt.Errorf("%s: set groups: %w", s.name, err)
	}
	ss, err := s.start(ctx, floors)
	if err != nil {
		return fmt.Errorf("%s: set groups: %w", s.name, err)
	}
	ss.set = s.sets + 1
	if err := s.install(ctx, ss); err != nil {
		return fmt.Errorf("%s: set groups: %w", s.name, err)
	}
	s.sets++
	return nil
}

// checkFloors returns an error naming the first key group of floors out of
// range.
func (s *PartitionedSource) checkFloors(floors map[int]uint64) error {
	for kg := range floors {
		if kg < 0 || kg >= s.cfg.KeyGroups {
			return fmt.Errorf("key group %d out of range: the input has %d key groups (0 to %d)", kg, s.cfg.KeyGroups, s.cfg.KeyGroups-1)
		}
	}
	return nil
}

// start creates and starts a session reading floors.
func (s *PartitionedSource) start(ctx context.Context, floors map[int]uint64) (*partSession, error) {
	k := s.cfg.KeyGroups
	ss := &partSession{floor: make([]uint64, k), read: make([]bool, k), stop: make(chan struct{}), installed: make(chan struct{})}
	ss.pending.Store(-1)
	if len(floors) == 0 {
		return ss, nil
	}
	low := uint64(0)
	first := true
	var filter []string
	for kg, f := range floors {
		ss.floor[kg], ss.read[kg] = f, true
		if first || f < low {
			low, first = f, false
		}
		filter = append(filter, s.filters[kg])
	}
	ss.delivered.Store(low)
	if len(floors) > s.cfg.MaxFilters {
		filter = []string{s.cfg.Prefix + ".*"}
	} else {
		slices.Sort(filter)
	}
	// A consumer whose creation fails is tried again under a new name
	// until ctx ends: after a server's loss, the first name can stay
	// unusable until that server returns.
	for attempt := 1; ; attempt++ {
		err := s.consume(ctx, ss, filter, low)
		if err == nil {
			return ss, nil
		}
		if ctx.Err() != nil {
			return nil, err
		}
		pause := min(time.Duration(attempt)*time.Second, maxConsumePause)
		s.log.Warn("creating the consumer failed; trying again", "attempt", attempt, "err", err, "in", pause)
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("%w (stopped trying: %w)", err, ctx.Err())
		case <-s.done:
			return nil, fmt.Errorf("%w (stopped trying: %w)", err, connectors.ErrClosed)
		case <-time.After(pause):
		}
	}
}

// maxConsumePause bounds the pause between two attempts to create a
// consumer: a second after the first, two after the second, and so on.
const maxConsumePause = 10 * time.Second

// consume creates ss's consumer, reading filter from stream sequence low
// + 1, and starts it.
func (s *PartitionedSource) consume(ctx context.Context, ss *partSession, filter []string, low uint64) error {
	cons, err := s.js.OrderedConsumer(ctx, s.cfg.Stream, jetstream.OrderedConsumerConfig{
		FilterSubjects: filter,
		DeliverPolicy:  jetstream.DeliverByStartSequencePolicy,
		OptStartSeq:    low + 1,
		// Bounded, so that a re-creation that keeps failing is reported
		// (the error handler hears of it only when the attempts run out)
		// and the next one is tried under a new name; unbounded, it
		// retries one name for ever.
		MaxResetAttempts: resetAttempts,
	})
	if err != nil {
		return fmt.Errorf("ordered consumer on stream %q from sequence %d: %w", s.cfg.Stream, low+1, err)
	}
	deliver := func(m jetstream.Msg) {
		ss.received.Add(1)
		select {
		case <-ss.installed:
		case <-ss.stop:
			return
		case <-s.done:
			return
		}
		select {
		case s.msgs <- partDelivery{sess: ss, msg: m}:
		case <-ss.stop:
		case <-s.done:
		}
	}
	cc, err := cons.Consume(deliver,
		jetstream.PullMaxMessages(s.cfg.Batch),
		jetstream.PullExpiry(s.cfg.PullExpiry),
		jetstream.ConsumeErrHandler(func(_ jetstream.ConsumeContext, err error) {
			s.log.Warn("jetstream consumer", "err", err)
			ss.mu.Lock()
			ss.lastErr = err
			ss.mu.Unlock()
		}))
	if err != nil {
		s.deleteConsumer(cons)
		return fmt.Errorf("consume stream %q from sequence %d: %w", s.cfg.Stream, low+1, err)
	}
	ss.cons, ss.cc, ss.stopped = cons, cc, cc.Closed()
	return nil
}

// install makes ss the session read, and stops the previous one.
func (s *PartitionedSource) install(ctx context.Context, ss *partSession) error {
	return s.replace(ctx, ss, nil)
}

// replace makes ss the session read, and stops the previous one; before
// it does, while Read takes no delivery, it calls adjust (when not nil)
// with the previous session, which adjust may read: Read takes nothing
// more from it.
func (s *PartitionedSource) replace(ctx context.Context, ss *partSession, adjust func(old *partSession)) error {
	s.readMu.Lock()
	s.mu.Lock()
	if s.srcState == stateClosed { // closed meanwhile
		s.mu.Unlock()
		s.readMu.Unlock()
		_ = s.stopSession(ctx, ss)
		return connectors.ErrClosed
	}
	if adjust != nil {
		adjust(s.cur.Load())
	}
	old := s.cur.Swap(ss)
	close(ss.installed)
	s.mu.Unlock()
	s.readMu.Unlock()
	select {
	case s.changed <- struct{}{}:
	default:
	}
	if old != nil {
		if err := s.stopSession(ctx, old); err != nil {
			s.log.Warn("stopping the previous consumer", "err", err)
		}
	}
	return nil
}

// stopSession stops ss's consumer, waits until it has stopped, and deletes
// it from the server when connected (the server would otherwise remove it
// once inactive).
func (s *PartitionedSource) stopSession(ctx context.Context, ss *partSession) error {
	close(ss.stop)
	if ss.cc == nil {
		return nil
	}
	ss.cc.Stop()
	t := time.NewTimer(closeTimeout)
	defer t.Stop()
	select {
	case <-ss.stopped:
	case <-t.C:
		return fmt.Errorf("consumer did not stop within %s", closeTimeout)
	case <-ctx.Done():
		return ctx.Err()
	}
	s.deleteConsumer(ss.cons)
	return nil
}

// deleteConsumer deletes cons from the server, if connected; a failure
// only leaves it to the server's inactivity threshold.
func (s *PartitionedSource) deleteConsumer(cons jetstream.Consumer) {
	if !s.nc.IsConnected() {
		return
	}
	info := cons.CachedInfo()
	if info == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if err := s.js.DeleteConsumer(ctx, s.cfg.Stream, info.Name); err != nil && !errors.Is(err, jetstream.ErrConsumerNotFound) {
		s.log.Debug("deleting a consumer failed; the server removes it once inactive", "consumer", info.Name, "err", err)
	}
}

// Read returns the messages received, up to len(buf), waiting for one
// when there are none.
func (s *PartitionedSource) Read(ctx context.Context, buf []connectors.Message) (int, error) {
	if len(buf) == 0 {
		return 0, nil
	}
	s.mu.Lock()
	st := s.srcState
	s.mu.Unlock()
	switch st {
	case stateNew:
		return 0, fmt.Errorf("%s: read: %w", s.name, connectors.ErrNotOpen)
	case stateClosed:
		return 0, fmt.Errorf("%s: read: %w", s.name, connectors.ErrClosed)
	}
	n := 0
	for n == 0 {
		ss := s.cur.Load()
		var stopped <-chan struct{}
		if ss != nil {
			stopped = ss.stopped
		}
		select {
		case d := <-s.msgs:
			s.readMu.Lock()
			n = s.accept(d, buf, n)
			n = s.drain(buf, n)
			s.readMu.Unlock()
		case <-s.changed:
			continue
		case <-ctx.Done():
			return 0, ctx.Err()
		case <-s.done:
			return 0, fmt.Errorf("%s: read: %w", s.name, connectors.ErrClosed)
		case <-stopped:
			select {
			case <-s.done:
				return 0, fmt.Errorf("%s: read: %w", s.name, connectors.ErrClosed)
			default:
			}
			if s.cur.Load() != ss {
				continue // replaced by SetGroups
			}
			ss.mu.Lock()
			err := ss.lastErr
			ss.mu.Unlock()
			if err == nil {
				err = errors.New("consumption stopped")
			}
			return 0, fmt.Errorf("%s: read: %w", s.name, err)
		}
	}
	return n, nil
}

// drain accepts the deliveries waiting, until buf is full, and returns
// the new count.
func (s *PartitionedSource) drain(buf []connectors.Message, n int) int {
	for n < len(buf) {
		select {
		case d := <-s.msgs:
			n = s.accept(d, buf, n)
		default:
			return n
		}
	}
	return n
}

// accept puts d into buf[n] unless it is to be dropped (a delivery of a
// replaced consumer, a group not read, a record at or below its group's
// floor), and returns the new count.
func (s *PartitionedSource) accept(d partDelivery, buf []connectors.Message, n int) int {
	ss := d.sess
	if ss != s.cur.Load() {
		return n
	}
	m := d.msg
	meta, err := m.Metadata()
	if err != nil {
		s.log.Warn("dropping a message without jetstream metadata", "subject", m.Subject(), "err", err)
		return n
	}
	seq := meta.Sequence.Stream
	if seq > ss.delivered.Load() { // in stream order, from at most the lowest floor + 1
		ss.delivered.Store(seq)
	}
	ss.pending.Store(int64(min(meta.NumPending, math.MaxInt64)))
	kg, ok := parseGroup(m.Subject(), s.cfg.Prefix, s.cfg.KeyGroups)
	if !ok {
		kg = 0
	}
	if !ss.read[kg] || seq <= ss.floor[kg] {
		return n
	}
	msg := &buf[n]
	msg.Position, msg.Group, msg.GroupSet, msg.Err = seq, kg, ss.set, nil
	err = decodeMsg(m.Data(), m.Headers(), meta.Timestamp.UnixNano(), &msg.Record)
	if !ok {
		err = fmt.Errorf("subject is not %s.<key group below %d>: %w", s.cfg.Prefix, s.cfg.KeyGroups, connectors.ErrMalformed)
	}
	if err != nil {
		msg.Err = fmt.Errorf("%s: stream sequence %d on %s: %w", s.name, seq, m.Subject(), err)
	}
	return n + 1
}

// Delivered returns the stream sequence up to which every group read has
// been returned by Read (or dropped at or below its floor) since the last
// OpenGroups or SetGroups: that of the last message Read took from the
// current consumer, or the lowest floor before it took any.
func (s *PartitionedSource) Delivered() uint64 {
	if ss := s.cur.Load(); ss != nil {
		return ss.delivered.Load()
	}
	return 0
}

// Backlog returns the pending count the server sent with the last message
// Read took from the current consumer: the messages under its filter not
// delivered yet. That is the groups read, when they are at most
// MaxFilters; reading more, the consumer's filter is "<Prefix>.*" and the
// count includes the records of every group. It is -1 before the first
// message since the last OpenGroups or SetGroups. It makes no request, so
// it lags what was published since that message.
func (s *PartitionedSource) Backlog() int64 {
	if ss := s.cur.Load(); ss != nil {
		return ss.pending.Load()
	}
	return -1
}

// Ack does nothing: the source reads through a consumer without
// acknowledgements, and the floors the host commits are its position.
func (s *PartitionedSource) Ack(_ context.Context, _ uint64) error {
	s.mu.Lock()
	st := s.srcState
	s.mu.Unlock()
	switch st {
	case stateNew:
		return fmt.Errorf("%s: ack: %w", s.name, connectors.ErrNotOpen)
	case stateClosed:
		return fmt.Errorf("%s: ack: %w", s.name, connectors.ErrClosed)
	}
	return nil
}

// Close stops reading and deletes the consumer.
func (s *PartitionedSource) Close() error {
	s.mu.Lock()
	if s.srcState == stateClosed {
		s.mu.Unlock()
		return nil
	}
	s.srcState = stateClosed
	close(s.done)
	ss := s.cur.Load()
	stopWatch, watched := s.stopWatch, s.watched
	s.mu.Unlock()
	if stopWatch != nil {
		stopWatch()
		<-watched
	}
	if ss == nil {
		return nil
	}
	if err := s.stopSession(context.Background(), ss); err != nil {
		return fmt.Errorf("%s: close: %w", s.name, err)
	}
	return nil
}

// parseGroup returns the key group of subject "<prefix>.<kg>": kg in
// canonical decimal (no sign, no leading zero) and below groups.
func parseGroup(subject, prefix string, groups int) (int, bool) {
	if len(subject) < len(prefix)+2 || subject[len(prefix)] != '.' || subject[:len(prefix)] != prefix {
		return 0, false
	}
	tok := subject[len(prefix)+1:]
	if (len(tok) > 1 && tok[0] == '0') || len(tok) > 5 {
		return 0, false
	}
	kg := 0
	for i := 0; i < len(tok); i++ {
		c := tok[i]
		if c < '0' || c > '9' {
			return 0, false
		}
		kg = kg*10 + int(c-'0')
	}
	return kg, kg < groups
}

// partitionSubjects returns the subject of each of groups key groups under
// prefix, "<prefix>.<kg>", or nil when groups is 0.
func partitionSubjects(prefix string, groups int) ([]string, error) {
	if groups == 0 {
		return nil, nil
	}
	if groups < 0 || groups > maxKeyGroups {
		return nil, fmt.Errorf("KeyGroups %d out of range: 1 to %d (0: not partitioned)", groups, maxKeyGroups)
	}
	for tok := range strings.SplitSeq(prefix, ".") {
		if tok == "" || tok == "*" || tok == ">" || strings.ContainsAny(tok, " \t\r\n") {
			return nil, fmt.Errorf("subject %q cannot be partitioned by key group: it must be a literal subject (no wildcards, empty tokens or spaces)", prefix)
		}
	}
	out := make([]string, groups)
	for kg := range out {
		out[kg] = prefix + "." + strconv.Itoa(kg)
	}
	return out, nil
}

// captureAll returns an error naming the first of subjects that none of
// patterns matches.
func captureAll(patterns, subjects []string) error {
	for kg, subj := range subjects {
		if !slices.ContainsFunc(patterns, func(p string) bool { return subjectMatches(p, subj) }) {
			return fmt.Errorf("subjects %q do not capture %q, the subject of key group %d", patterns, subj, kg)
		}
	}
	return nil
}

// subjectMatches reports whether the literal subject matches pattern, a
// subject with the wildcards "*" (one token) and ">" (the remaining ones).
func subjectMatches(pattern, subject string) bool {
	for {
		ptok, prest, pmore := strings.Cut(pattern, ".")
		stok, srest, smore := strings.Cut(subject, ".")
		switch {
		case ptok == ">":
			return true
		case ptok != "*" && ptok != stok:
			return false
		case !pmore || !smore:
			return pmore == smore
		}
		pattern, subject = prest, srest
	}
}

// resetAttempts is how many times the ordered consumer tries to create
// its replacement, one name, before it reports the failure and tries
// again under another.
const resetAttempts = 3

// watch replaces the current session's consumer when it is stuck (see
// stuck) until ctx ends.
func (s *PartitionedSource) watch(ctx context.Context) {
	defer close(s.watched)
	tick := time.NewTicker(s.cfg.StallTimeout / 4)
	defer tick.Stop()
	var (
		ss       *partSession // the session watched
		received uint64       // its count when last seen to move
		since    time.Time    // when that was
	)
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		cur := s.cur.Load()
		if cur == nil || cur.cc == nil {
			ss = nil
			continue
		}
		if n := cur.received.Load(); cur != ss || n != received || len(s.msgs) > 0 {
			// Moving, or Read has deliveries it has not taken: the
			// consumer waits for Read, not the other way round.
			ss, received, since = cur, n, time.Now()
			continue
		}
		if time.Since(since) < s.cfg.StallTimeout {
			continue
		}
		since = time.Now() // the next look, another StallTimeout on
		why := s.stuck(ctx, ss)
		if why == nil {
			continue
		}
		from := ss.delivered.Load()
		s.log.Warn("the consumer has received nothing; replacing it", "for", s.cfg.StallTimeout, "why", why, "after_sequence", from)
		// Bounded: the replacement holds off SetGroups while it lasts.
		rctx, cancel := context.WithTimeout(ctx, s.cfg.StallTimeout)
		if err := s.restart(rctx, ss); err != nil && ctx.Err() == nil {
			s.log.Warn("replacing a stuck consumer failed; trying again later", "err", err)
		}
		cancel()
	}
}

// stuck returns why ss's consumer, which has received nothing for a
// while, is stuck, or nil when it is idle: the server answers that it
// holds no message for it. Asking takes the consumer's lock, which it
// holds while it re-creates itself: a re-creation that lasts is itself
// the answer.
func (s *PartitionedSource) stuck(ctx context.Context, ss *partSession) error {
	ctx, cancel := context.WithTimeout(ctx, s.cfg.StallTimeout/2)
	defer cancel()
	type answer struct {
		info *jetstream.ConsumerInfo
		err  error
	}
	ch := make(chan answer, 1)
	go func() {
		info, err := ss.cons.Info(ctx)
		ch <- answer{info, err}
	}()
	select {
	case a := <-ch:
		switch {
		case a.err != nil:
			return fmt.Errorf("its info: %w", a.err)
		case a.info.NumPending > 0:
			return fmt.Errorf("the server holds %d messages for it", a.info.NumPending)
		}
		return nil
	case <-ctx.Done():
		return fmt.Errorf("its info did not come within %s: it is being re-created", s.cfg.StallTimeout/2)
	}
}

// restart replaces ss, when it is still the current session, by a new one
// reading the same groups, with the same GroupSet, after the last message
// Read took from ss (or each group's floor, when higher): the new
// consumer redelivers nothing Read returned.
func (s *PartitionedSource) restart(ctx context.Context, ss *partSession) error {
	s.setMu.Lock()
	defer s.setMu.Unlock()
	if s.cur.Load() != ss {
		return nil // replaced by SetGroups meanwhile
	}
	from := ss.delivered.Load()
	floors := make(map[int]uint64)
	for kg, read := range ss.read {
		if read {
			floors[kg] = max(ss.floor[kg], from)
		}
	}
	next, err := s.start(ctx, floors)
	if err != nil {
		return err
	}
	next.set = ss.set
	return s.replace(ctx, next, func(old *partSession) {
		// Read may have taken more of old's messages since from: the new
		// consumer, which starts at from + 1, must not return them again.
		taken := old.delivered.Load()
		low := uint64(math.MaxUint64)
		for kg, read := range next.read {
			if read {
				next.floor[kg] = max(next.floor[kg], taken)
				low = min(low, next.floor[kg])
			}
		}
		next.delivered.Store(low)
	})
}
