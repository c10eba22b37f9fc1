package natsconn

import (
	"context"
	"errors"
	"fmt"
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
		{"stream not found", live, jetstream.ErrStreamNotFound, false},
		{"another error", live, errors.New("invalid config"), false},
		{"nil", live, nil, false},
	} {
		if got := Unanswered(tc.ctx, tc.err); got != tc.want {
			t.Errorf("%s: Unanswered(%v) = %v, want %v", tc.name, tc.err, got, tc.want)
		}
	}
}
