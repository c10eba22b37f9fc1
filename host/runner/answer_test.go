package runner

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// TestUnanswered checks what a starting host waits out: JetStream not
// answering yet (natsconn.Unanswered) and a stream or bucket that another
// host's start creates meanwhile; any other error (an invalid assignment,
// say) ends the start at once.
func TestUnanswered(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		err  error
		want bool
	}{
		{fmt.Errorf("reading the assignment: %w", nats.ErrNoResponders), true},
		{fmt.Errorf("cluster: bucket b: %w", &jetstream.APIError{Code: 404, ErrorCode: jetstream.JSErrCodeStreamNotFound, Description: "stream not found"}), true},
		{fmt.Errorf("checkpoint: %w", jetstream.ErrBucketNotFound), true},
		{&jetstream.APIError{Code: 503, Description: "JetStream system temporarily unavailable"}, true},
		{errors.New("assignment: invalid"), false},
	} {
		if got := unanswered(ctx, tc.err); got != tc.want {
			t.Errorf("unanswered(%v) = %v; want %v", tc.err, got, tc.want)
		}
	}
}
