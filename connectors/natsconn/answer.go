package natsconn

import (
	"context"
	"errors"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// Unanswered reports whether err is JetStream not answering yet, as it
// does while its cluster starts, elects leaders (a server lost) or is
// overloaded: no responders, a timeout (the client's, or a request's own
// deadline passed while ctx's has not: the JetStream client bounds each
// request it makes without a deadline), no response from a stream, or
// the service unavailable (503). Asking again later may succeed.
func Unanswered(ctx context.Context, err error) bool {
	var apiErr *jetstream.APIError
	return errors.Is(err, nats.ErrNoResponders) || errors.Is(err, nats.ErrTimeout) ||
		(errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil) ||
		errors.Is(err, jetstream.ErrNoStreamResponse) ||
		(errors.As(err, &apiErr) && apiErr.Code == 503)
}

// answerPatience bounds how long ensureStream asks again a JetStream that
// does not answer, and answerPause is the pause between two tries.
const (
	answerPatience = 30 * time.Second
	answerPause    = 250 * time.Millisecond
)
