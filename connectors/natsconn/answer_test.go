package natsconn

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"testing"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

func TestUnanswered(t *testing.T) {
	live := context.Background()
	done, cancel := context.WithTimeout(context.Background(), 0)
	defer cancel()
	for _, tc := range []struct {
		name string
		ctx  context.Context
		err  error
		want bool
	}{
		{"no responders", live, fmt.Errorf("x: %w", nats.ErrNoResponders), true},
		{"timeout", live, nats.ErrTimeout, true},
		{"a request's own deadline", live, fmt.Errorf("jetstream stream %q: %w", "S", context.DeadlineExceeded), true},
		{"the caller's deadline", done, context.DeadlineExceeded, false},
		{"no response from stream", live, fmt.Errorf("lease: %w", jetstream.ErrNoStreamResponse), true},
		{"503", live, &jetstream.APIError{Code: 503, Description: "JetStream system temporarily unavailable"}, true},
		{"JetStream not enabled (503 too)", live, &jetstream.APIError{Code: 503, ErrorCode: jetstream.JSErrCodeJetStreamNotEnabled, Description: "jetstream not enabled"}, false},
		{"JetStream not enabled for the account", live, fmt.Errorf("bucket: %w", jetstream.ErrJetStreamNotEnabledForAccount), false},
		{"stream not found", live, jetstream.ErrStreamNotFound, false},
		{"another error", live, errors.New("invalid config"), false},
		{"nil", live, nil, false},
	} {
		if got := Unanswered(tc.ctx, tc.err); got != tc.want {
			t.Errorf("%s: Unanswered(%v) = %v, want %v", tc.name, tc.err, got, tc.want)
		}
	}
}

// TestUntilAnswered checks the loop every start waits on JetStream with:
// what again accepts is tried again until an answer, any other error ends
// it at once, and a cancelled or timed-out caller stops trying.
func TestUntilAnswered(t *testing.T) {
	log := slog.New(slog.DiscardHandler)
	ctx := context.Background()
	calls := 0
	err := UntilAnswered(ctx, log, Unanswered, func() error {
		calls++
		switch calls {
		case 1:
			return fmt.Errorf("reading the assignment: %w", nats.ErrNoResponders)
		case 2:
			return nats.ErrTimeout
		case 3:
			return &jetstream.APIError{Code: 503, Description: "JetStream system temporarily unavailable"}
		}
		return nil
	})
	if err != nil || calls != 4 {
		t.Errorf("no responders, a timeout, 503, then an answer: %v after %d tries; want nil after 4", err, calls)
	}
	calls = 0
	notFoundToo := func(ctx context.Context, err error) bool {
		return Unanswered(ctx, err) || errors.Is(err, jetstream.ErrStreamNotFound)
	}
	err = UntilAnswered(ctx, log, notFoundToo, func() error {
		if calls++; calls == 1 {
			return jetstream.ErrStreamNotFound
		}
		return nil
	})
	if err != nil || calls != 2 {
		t.Errorf("a wider again: %v after %d tries; want nil after 2", err, calls)
	}
	bad := errors.New("assignment: invalid")
	calls = 0
	if err := UntilAnswered(ctx, log, Unanswered, func() error { calls++; return bad }); !errors.Is(err, bad) || calls != 1 {
		t.Errorf("another error: %v after %d tries; want it after 1", err, calls)
	}
	cctx, cancel := context.WithCancel(ctx)
	calls = 0
	err = UntilAnswered(cctx, log, Unanswered, func() error { calls++; cancel(); return nats.ErrNoResponders })
	if !errors.Is(err, nats.ErrNoResponders) || !errors.Is(err, context.Canceled) || calls != 1 {
		t.Errorf("cancelled while waiting: %v after %d tries; want no responders and cancelled after 1", err, calls)
	}
	tctx, tcancel := context.WithTimeout(ctx, 0)
	defer tcancel()
	calls = 0
	err = UntilAnswered(tctx, log, Unanswered, func() error { calls++; return tctx.Err() })
	if !errors.Is(err, context.DeadlineExceeded) || calls != 1 {
		t.Errorf("the caller's own deadline passed: %v after %d tries; want it after 1", err, calls)
	}
}
