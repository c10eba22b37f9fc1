package natsconn

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// Recovery of a JetStreamSink after a crash.
//
// The host commits Offset, the stream sequence of the sink's last
// acknowledged message, with the state of each batch, so every message of
// the sink that the stream holds after the committed sequence was
// published by a batch that was not committed. On restart Rewind reads the
// ids of those messages (headers only, through a short-lived consumer
// filtered on the sink's subject) and Write drops the outputs that carry
// them: they are the replay of the crashed batch, already stored.
//
// Until every id found is replayed, Offset stays below the lowest of them,
// so that a second crash finds them again. An id that the replay never
// writes (an operator whose output changed since the crash) would keep it
// there; the host's ids, "<prefix>/<position>/<n>", tell when such an id
// can no longer come: once a batch has written an id of the same prefix at
// its position or a later one, every input up to that position has been
// processed, and the id is forgotten at the next Offset.

// findStream finds the stream that captures the sink's subject (checking
// or creating cfg.Stream when it is set), takes its last sequence as the
// offset before the sink's first message, and warns when the stream may
// discard what recovery reads. A subject no stream captures is not an
// error here: publishing to it fails, and there is nothing to recover.
func (s *JetStreamSink) findStream(ctx context.Context) error {
	var (
		st  jetstream.Stream
		err error
	)
	if s.cfg.Stream != "" {
		if st, err = ensureStream(ctx, s.log, s.js, s.cfg.Stream, s.cfg.CreateStream); err != nil {
			return err
		}
	} else {
		name, err := s.js.StreamNameBySubject(ctx, s.filter())
		if errors.Is(err, jetstream.ErrStreamNotFound) {
			return nil
		}
		if err == nil {
			st, err = s.js.Stream(ctx, name)
		}
		if err != nil {
			return fmt.Errorf("jetstream stream of subject %q: %w", s.filter(), err)
		}
	}
	s.stream = st
	info := st.CachedInfo()
	s.base = info.State.LastSeq
	if info.Config.Retention != jetstream.LimitsPolicy {
		s.log.Warn("the sink's stream removes messages once they are consumed: after a crash, outputs of the uncommitted batch that were consumed before the restart are published again, unless within the stream's duplicate window",
			"stream", info.Config.Name, "retention", info.Config.Retention.String(), "duplicate_window", info.Config.Duplicates)
	}
	if info.Config.MaxMsgsPerSubject > 0 {
		s.log.Warn("the sink's stream keeps a limited number of messages per subject: after a crash, outputs of the uncommitted batch that it discarded before the restart are published again, unless within the stream's duplicate window",
			"stream", info.Config.Name, "max_msgs_per_subject", info.Config.MaxMsgsPerSubject, "duplicate_window", info.Config.Duplicates)
	}
	return nil
}

// Offset returns the stream sequence up to which the sink's messages are
// all from committed batches, when called after a Flush as the host does
// before each commit: the sequence of the last message acknowledged to
// the sink, or, while the replay of a crashed batch goes on, the sequence
// before the first of its messages not yet replayed.
func (s *JetStreamSink) Offset() uint64 {
	if len(s.skip) > 0 {
		s.retire()
	}
	if len(s.skip) > 0 {
		low := uint64(0)
		for _, seq := range s.skip {
			if low == 0 || seq < low {
				low = seq
			}
		}
		return low - 1
	}
	s.mu.Lock()
	acked := s.acked
	s.mu.Unlock()
	return max(s.base, acked, s.matched)
}

// rewindPatience is how long Rewind retries the errors a NATS cluster
// answers while it elects a stream leader or the client reconnects.
const rewindPatience = time.Minute

// Rewind reads the ids of the sink's messages stored after offset, an
// Offset committed by an earlier run, and makes Write skip the outputs
// that carry them, so that the replay of a crashed batch stores each
// output once, however long after the crash it runs. It must be called
// before any Write. Messages the stream no longer holds cannot be
// skipped: Rewind logs a warning saying which. An error that may pass (no
// responders while a NATS cluster elects a leader, a stream whose server
// is down, a timeout, a reconnection) is retried, with a warning, for up to a minute or until
// ctx is done.
func (s *JetStreamSink) Rewind(ctx context.Context, offset uint64) error {
	if s.wrote {
		return fmt.Errorf("%s: rewind after a write", s.name)
	}
	giveUp := time.Now().Add(rewindPatience)
	wait := 50 * time.Millisecond
	for attempt := 1; ; attempt++ {
		err := s.rewind(ctx, offset)
		// An attempt's own deadline (AckTimeout) passing is a stream
		// that did not answer: one without a leader, for now.
		passing := retriable(err) || streamOffline(err) || errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil
		if err == nil || !passing || time.Now().Add(wait).After(giveUp) {
			return err
		}
		s.log.Warn("the sink's recovery failed on an error that may pass: trying again", "attempt", attempt, "in", wait, "err", err)
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("%s: rewind: %w (after %w)", s.name, ctx.Err(), err)
		case <-t.C:
		}
		wait = min(2*wait, 2*time.Second)
	}
}

// errStreamOffline is the NATS server's code for a stream none of whose
// servers is up (JSStreamOfflineErr); nats.go names no constant for it.
const errStreamOffline jetstream.ErrorCode = 10118

// streamOffline reports whether err says that the stream's servers are
// down: a server restarting, or one that cannot be reached for now.
func streamOffline(err error) bool {
	var apiErr *jetstream.APIError
	return errors.As(err, &apiErr) && apiErr.ErrorCode == errStreamOffline
}

// rewind is one attempt of Rewind.
func (s *JetStreamSink) rewind(ctx context.Context, offset uint64) error {
	s.base, s.skip, s.matched, s.written = offset, nil, 0, nil
	if s.stream == nil {
		// No stream captured the subject at creation: look again.
		actx, cancel := context.WithTimeout(ctx, s.cfg.AckTimeout)
		err := s.findStream(actx)
		cancel()
		if err != nil {
			return fmt.Errorf("%s: rewind: %w", s.name, err)
		}
		if s.stream == nil {
			return nil // nothing was stored
		}
		s.base = offset
	}
	actx, cancel := context.WithTimeout(ctx, s.cfg.AckTimeout)
	info, err := s.stream.Info(actx)
	cancel()
	if err != nil {
		return fmt.Errorf("%s: rewind: %w", s.name, err)
	}
	first, last := info.State.FirstSeq, info.State.LastSeq
	start := offset + 1
	switch {
	case last == offset:
		return nil // a clean stop, or nothing published since
	case last < offset:
		s.log.Warn("the sink's stream ends before the sequence committed with the state (it was deleted and created again, or is another stream): the sink reads all of it for the outputs of the uncommitted batch",
			"stream", info.Config.Name, "committed", offset, "last", last)
		start, s.base = first, first-min(first, 1)
	case first > start:
		s.log.Warn("the sink's stream no longer holds messages stored after the last commit (its limits discarded them, or it was purged): outputs of the uncommitted batch among them, if any, are published again, unless within the stream's duplicate window",
			"stream", info.Config.Name, "from", start, "to", first-1, "duplicate_window", info.Config.Duplicates)
		start = first
	}
	if start == 0 || start > last {
		return nil
	}
	ids, err := s.storedAfter(ctx, start)
	if err != nil {
		return fmt.Errorf("%s: rewind: reading the stream %q from sequence %d: %w", s.name, info.Config.Name, start, err)
	}
	if len(ids) > 0 {
		s.skip, s.written = ids, map[string]uint64{}
		s.log.Info("outputs of the uncommitted batch already in the stream; the replay skips them",
			"stream", info.Config.Name, "after", offset, "messages", len(ids))
	}
	return nil
}

// filter returns the subjects the sink publishes to: Subject, or with
// KeyGroups "<Subject>.*".
func (s *JetStreamSink) filter() string {
	if s.groups != nil {
		return s.cfg.Subject + ".*"
	}
	return s.cfg.Subject
}

// storedAfter returns the Nats-Msg-Id and stream sequence of every message
// on the sink's subject stored at sequence start or later.
func (s *JetStreamSink) storedAfter(ctx context.Context, start uint64) (map[string]uint64, error) {
	actx, cancel := context.WithTimeout(ctx, s.cfg.AckTimeout)
	cons, err := s.stream.CreateConsumer(actx, jetstream.ConsumerConfig{
		Description:       "sluice sink recovery",
		DeliverPolicy:     jetstream.DeliverByStartSequencePolicy,
		OptStartSeq:       start,
		FilterSubject:     s.filter(),
		AckPolicy:         jetstream.AckNonePolicy,
		HeadersOnly:       true,
		MemoryStorage:     true,
		Replicas:          1,
		InactiveThreshold: time.Minute, // removes it if this process dies now
	})
	cancel()
	if err != nil {
		return nil, err
	}
	info := cons.CachedInfo()
	defer func() {
		ctx, cancel := context.WithTimeout(context.Background(), s.cfg.AckTimeout)
		defer cancel()
		if err := s.stream.DeleteConsumer(ctx, info.Name); err != nil {
			s.log.Debug("deleting the recovery consumer failed; the server removes it after a minute", "consumer", info.Name, "err", err)
		}
	}()
	ids := map[string]uint64{}
	pending := info.NumPending
	for pending > 0 {
		actx, cancel := context.WithTimeout(ctx, s.cfg.AckTimeout)
		batch, err := cons.Fetch(int(min(pending, 4096)), jetstream.FetchContext(actx))
		if err != nil {
			cancel()
			return nil, err
		}
		n := 0
		for m := range batch.Messages() {
			n++
			md, err := m.Metadata()
			if err != nil {
				cancel()
				return nil, err
			}
			if id := m.Headers().Get(jetstream.MsgIDHeader); id != "" && s.replayed(id) {
				ids[id] = md.Sequence.Stream
			}
			pending = md.NumPending
		}
		err = batch.Error()
		cancel()
		if err != nil {
			return nil, err
		}
		if n == 0 {
			break // what was pending is gone (removed meanwhile)
		}
	}
	return ids, nil
}

// replayed reports whether the input id derives from is replayed after a
// crash, so that the replay carries id again.
func (s *JetStreamSink) replayed(id string) bool {
	prefix, _, ok := idPosition(id)
	return !ok || !slices.Contains(s.cfg.NotReplayed, prefix)
}

// stored reports whether the stream holds a message with id from before
// the restart, which Write must then not publish again, and notes the
// position the id says was written.
func (s *JetStreamSink) stored(id string) bool {
	if id == "" {
		return false
	}
	if prefix, pos, ok := idPosition(id); ok {
		if p, seen := s.written[prefix]; !seen || pos > p {
			s.written[prefix] = pos
		}
	}
	seq, ok := s.skip[id]
	if !ok {
		return false
	}
	delete(s.skip, id)
	s.matched = max(s.matched, seq)
	if len(s.skip) == 0 {
		s.log.Info("the replay of the uncommitted batch is complete")
	}
	return true
}

// retire forgets the ids that no later Write can carry: those whose
// position is at or before one a Write has carried with the same prefix.
func (s *JetStreamSink) retire() {
	dropped := 0
	for id, seq := range s.skip {
		prefix, pos, ok := idPosition(id)
		if !ok {
			continue
		}
		if p, seen := s.written[prefix]; seen && pos <= p {
			delete(s.skip, id)
			s.matched = max(s.matched, seq)
			dropped++
		}
	}
	if dropped > 0 {
		s.log.Info("ids in the stream that the replay will not write again are forgotten: outputs of batches committed before an earlier crash, or outputs an operator no longer produces",
			"messages", dropped)
	}
}

// idPosition splits an id of the form "<prefix>/<position>/<n>", as the
// host derives them, into its prefix and position.
func idPosition(id string) (prefix string, pos uint64, ok bool) {
	i := strings.LastIndexByte(id, '/')
	if i < 0 {
		return "", 0, false
	}
	if _, err := strconv.ParseUint(id[i+1:], 10, 64); err != nil {
		return "", 0, false
	}
	j := strings.LastIndexByte(id[:i], '/')
	if j < 0 {
		return "", 0, false
	}
	pos, err := strconv.ParseUint(id[j+1:i], 10, 64)
	if err != nil {
		return "", 0, false
	}
	return id[:j], pos, true
}
