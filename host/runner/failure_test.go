package runner

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"testing"
	"time"

	"github.com/sluicehq/sluice/state"
)

// failingStore fails when fail is called, like a state.Store whose disk
// fills.
type failingStore struct {
	failed chan struct{}
	err    error
}

func (s *failingStore) Failed() <-chan struct{} { return s.failed }

func (s *failingStore) Err() error {
	select {
	case <-s.failed:
		return s.err
	default:
		return nil
	}
}

func (s *failingStore) fail() {
	s.err = fmt.Errorf("state: data directory /x: %w", state.ErrFailed)
	close(s.failed)
}

// TestRunStopsWhenTheStoreFails checks that a job with nothing to do stops
// when the state store fails in the background, and that the run then
// returns the store's failure, once.
func TestRunStopsWhenTheStoreFails(t *testing.T) {
	log := slog.New(slog.DiscardHandler)

	// Idle: the job waits for input until its context ends, which must be
	// the store's failure, long before the deadline.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s := &failingStore{failed: make(chan struct{})}
	var stoppedBy error
	idle := func(ctx context.Context) error {
		s.fail()
		<-ctx.Done()
		stoppedBy = ctx.Err()
		return nil
	}
	if err := runUntilFailed(ctx, s, log, idle); !errors.Is(err, state.ErrFailed) || err.Error() != s.err.Error() {
		t.Errorf("idle job: %v, want the store's failure %v", err, s.err)
	}
	if stoppedBy != context.Canceled {
		t.Errorf("idle job stopped by %v, want cancelled on the store's failure", stoppedBy)
	}

	// Committing: the job's drain fails with the failure itself.
	s = &failingStore{failed: make(chan struct{})}
	committing := func(ctx context.Context) error {
		s.fail()
		<-ctx.Done()
		return fmt.Errorf("exec: commit: %w", s.Err())
	}
	if err := runUntilFailed(ctx, s, log, committing); err.Error() != "exec: commit: "+s.err.Error() {
		t.Errorf("committing job: %v, want the commit's error alone", err)
	}

	// Healthy: the run's own result.
	s = &failingStore{failed: make(chan struct{})}
	ends := errors.New("source failed")
	if err := runUntilFailed(ctx, s, log, func(context.Context) error { return ends }); err != ends {
		t.Errorf("healthy store: %v, want %v", err, ends)
	}
}
