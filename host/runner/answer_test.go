package runner

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"testing"

	"github.com/nats-io/nats.go"
)

// TestUntilAnswered checks a starting host's patience with JetStream:
// "no responders" and timeouts are tried again until an answer, any other
// error (an invalid assignment, say) ends the start at once, and a
// cancelled start stops trying.
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
		}
		return nil
	})
	if err != nil || calls != 3 {
		t.Errorf("no responders, a timeout, then an answer: %v after %d tries; want nil after 3", err, calls)
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
}
