package natsconn

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// StreamSpec describes a JetStream stream that a source or sink creates when
// it does not exist. An existing stream is used as it is, never changed.
type StreamSpec struct {
	// Subjects the stream captures. Required.
	Subjects []string
	// Memory keeps the stream in memory instead of files. Faster, lost
	// when the server stops.
	Memory bool
	// MaxAge, MaxBytes and MaxMsgs limit what the stream retains; 0: no
	// limit.
	MaxAge   time.Duration
	MaxBytes int64
	MaxMsgs  int64
	// Replicas is the number of copies in a cluster; 0: 1.
	Replicas int
	// Duplicates is the de-duplication window: a message whose Nats-Msg-Id
	// the stream has seen within this window is acknowledged but not
	// stored again. A JetStreamSink relies on it for a message published
	// again after a passing failure; after a crash it reads the ids from
	// the stream instead, and the window matters only for messages the
	// stream no longer holds. 0: the server's default, 2 minutes.
	Duplicates time.Duration
}

func (s *StreamSpec) config(name string) jetstream.StreamConfig {
	cfg := jetstream.StreamConfig{
		Name:        name,
		Description: "created by sluice",
		Subjects:    s.Subjects,
		Storage:     jetstream.FileStorage,
		MaxAge:      s.MaxAge,
		MaxBytes:    s.MaxBytes,
		MaxMsgs:     s.MaxMsgs,
		Replicas:    s.Replicas,
		Duplicates:  s.Duplicates,
	}
	if s.Memory {
		cfg.Storage = jetstream.MemoryStorage
	}
	if cfg.MaxBytes == 0 {
		cfg.MaxBytes = -1
	}
	if cfg.MaxMsgs == 0 {
		cfg.MaxMsgs = -1
	}
	return cfg
}

// ensureStream returns the stream called name, creating it from spec when
// it does not exist and spec is not nil. A JetStream that does not answer
// yet (a cluster electing leaders) is asked again (UntilAnswered).
func ensureStream(ctx context.Context, log *slog.Logger, js jetstream.JetStream, name string, spec *StreamSpec) (jetstream.Stream, error) {
	var st jetstream.Stream
	err := untilAnsweredEach(ctx, log, func(ctx context.Context) error {
		var err error
		st, err = ensureStreamOnce(ctx, js, name, spec)
		return err
	})
	return st, err
}

// ensureStreamOnce is one try of ensureStream.
func ensureStreamOnce(ctx context.Context, js jetstream.JetStream, name string, spec *StreamSpec) (jetstream.Stream, error) {
	st, err := js.Stream(ctx, name)
	if err == nil {
		return st, nil
	}
	if !errors.Is(err, jetstream.ErrStreamNotFound) {
		return nil, fmt.Errorf("jetstream stream %q: %w", name, err)
	}
	if spec == nil {
		return nil, fmt.Errorf("jetstream stream %q does not exist (create it, or configure its subjects so that sluice creates it): %w", name, err)
	}
	if len(spec.Subjects) == 0 {
		return nil, fmt.Errorf("jetstream stream %q: cannot create it without subjects", name)
	}
	st, err = js.CreateStream(ctx, spec.config(name))
	if errors.Is(err, jetstream.ErrStreamNameAlreadyInUse) {
		// Created meanwhile by someone else: use theirs.
		st, err = js.Stream(ctx, name)
	}
	if err != nil {
		return nil, fmt.Errorf("jetstream stream %q: create: %w", name, err)
	}
	return st, nil
}
