package runner

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"testing"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// TestUntilAnswered checks a starting host's patience with JetStream:
// "no responders", timeouts (the client's, or a request's deadline the
// JetStream client set), no response from a stream, 503 and a stream
// another host creates meanwhile are tried again until an answer, any other error
// (an invalid assignment, say) ends the start at once, and a cancelled or
// timed-out start stops trying.
func TestUntilAnswered(t *testing.T) {
	log := slog.New(slog.DiscardHandler)
	calls := 0
	err := untilAnswered(context.Background(), log, func() error {
		calls++
		switch calls {
		case 1:
			return fmt.Errorf("reading the assignment: %w", nats.ErrNoResponders)
		case 2:
			return nats.ErrTimeout
		case 3:
			return fmt.Errorf("cluster: bucket b: reading from its leader only: %w", context.DeadlineExceeded)
		case 4:
			return fmt.Errorf("cluster: bucket b: %w", &jetstream.APIError{Code: 404, ErrorCode: jetstream.JSErrCodeStreamNotFound, Description: "stream not found"})
		case 5:
			return fmt.Errorf("cluster: creating the lease of host h1: %w", jetstream.ErrNoStreamResponse)
		case 6:
			return &jetstream.APIError{Code: 503, Description: "JetStream system temporarily unavailable"}
		}
		return nil
	})
	if err != nil || calls != 7 {
		t.Errorf("no responders, a timeout, a request's deadline, a stream not found yet, no response from a stream, 503, then an answer: %v after %d tries; want nil after 7", err, calls)
	}
	bad := errors.New("assignment: invalid")
	calls = 0
	if err := untilAnswered(context.Background(), log, func() error { calls++; return bad }); !errors.Is(err, bad) || calls != 1 {
		t.Errorf("another error: %v after %d tries; want it after 1", err, calls)
	}
	ctx, cancel := context.WithCancel(context.Background())
	calls = 0
	err = untilAnswered(ctx, log, func() error { calls++; cancel(); return nats.ErrNoResponders })
	if !errors.Is(err, nats.ErrNoResponders) || calls != 1 {
		t.Errorf("cancelled while waiting: %v after %d tries; want no responders after 1", err, calls)
	}
	ctx, cancel = context.WithTimeout(context.Background(), 0)
	defer cancel()
	calls = 0
	err = untilAnswered(ctx, log, func() error { calls++; return ctx.Err() })
	if !errors.Is(err, context.DeadlineExceeded) || calls != 1 {
		t.Errorf("the start's own deadline passed: %v after %d tries; want it after 1", err, calls)
	}
}
