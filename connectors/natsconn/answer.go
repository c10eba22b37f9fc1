package natsconn

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// Unanswered reports whether err is JetStream not answering yet, as it
// does while its cluster starts, elects leaders (a server lost) or is
// overloaded: no responders, a timeout (the client's, or a request's own
// deadline passed while ctx's has not: the JetStream client bounds each
// request it makes without a deadline), no response from a stream, or
// the service unavailable (503), except for a server (or account)
// without JetStream, which no wait mends. Asking again later may succeed.
func Unanswered(ctx context.Context, err error) bool {
	var apiErr *jetstream.APIError
	return errors.Is(err, nats.ErrNoResponders) || errors.Is(err, nats.ErrTimeout) ||
		(errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil) ||
		errors.Is(err, jetstream.ErrNoStreamResponse) ||
		(errors.As(err, &apiErr) && apiErr.Code == 503 && !noJetStream(err))
}

// noJetStream reports whether err is a NATS server's answer that it, or
// the account connected to, runs without JetStream.
func noJetStream(err error) bool {
	return errors.Is(err, jetstream.ErrJetStreamNotEnabled) || errors.Is(err, jetstream.ErrJetStreamNotEnabledForAccount)
}

// AnswerPatience bounds how long UntilAnswered asks again a JetStream
// that does not answer, and answerPause is the pause between two tries.
// answerTimeout bounds each try of untilAnsweredEach.
const (
	AnswerPatience = 30 * time.Second
	answerPause    = 250 * time.Millisecond
	answerTimeout  = 5 * time.Second
)

// UntilAnswered calls try until it succeeds, fails with an error that
// again does not accept, ctx ends or AnswerPatience has passed since the
// first call, logging each call it makes again, and returns try's last
// error; a server without JetStream ends it at once, with an error that
// says so; when ctx ends first, that error wraps ctx's too, so a caller
// stopped while it waited can tell (errors.Is(err, context.Canceled)).
// again is Unanswered, or a wider test: a host starting beside others
// also waits for a stream or bucket that another creates.
func UntilAnswered(ctx context.Context, log *slog.Logger, again func(context.Context, error) bool, try func() error) error {
	deadline := time.Now().Add(AnswerPatience)
	for {
		err := try()
		if noJetStream(err) {
			return fmt.Errorf("%w (the NATS server runs without JetStream, which Sluice needs here: start nats-server with -js, or give the URL of one that has it)", err)
		}
		if err == nil || !again(ctx, err) || time.Now().After(deadline) {
			return err
		}
		if ctx.Err() != nil {
			return stoppedWaiting(ctx, err)
		}
		log.Warn("JetStream does not answer yet; trying again", "err", err, "in", answerPause, "left", time.Until(deadline).Round(time.Second))
		select {
		case <-ctx.Done():
			return stoppedWaiting(ctx, err)
		case <-time.After(answerPause):
		}
	}
}

// untilAnsweredEach is UntilAnswered with Unanswered, each try given a
// context of its own bounded by answerTimeout: a stream or consumer that
// has no leader yet (just created, or electing one) leaves requests
// unanswered rather than refusing them, so a try bounded only by the
// caller's context could wait all of it.
func untilAnsweredEach(ctx context.Context, log *slog.Logger, try func(context.Context) error) error {
	return UntilAnswered(ctx, log, Unanswered, func() error {
		tctx, cancel := context.WithTimeout(ctx, answerTimeout)
		defer cancel()
		return try(tctx)
	})
}

// stoppedWaiting is UntilAnswered's error when ctx ends while JetStream
// has not answered: both ctx's error and the last unanswered one.
func stoppedWaiting(ctx context.Context, err error) error {
	return fmt.Errorf("%w while JetStream did not answer: %w", ctx.Err(), err)
}
