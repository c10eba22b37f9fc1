package natsconn

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/nats-io/nats-server/v2/server"
)

// Options configures an embedded NATS server. The zero value of every field
// but Dir is usable.
type Options struct {
	// Dir is the directory JetStream stores streams under. Required.
	Dir string
	// Name is the server name; empty: "sluice".
	Name string
	// Host is the interface to listen on; empty: "127.0.0.1", so the
	// server is not reachable from other machines unless asked for.
	Host string
	// Port is the client port: 0 means 4222, the NATS default; -1 picks a
	// free port (read it back from ClientURL).
	Port int
	// ReadyTimeout bounds the wait for the server to accept connections;
	// 0: 10 seconds.
	ReadyTimeout time.Duration
	// MaxMemory and MaxStore cap JetStream's memory and file storage in
	// bytes; 0: the server's defaults (a share of the machine).
	MaxMemory, MaxStore int64
	// Logger receives the server's log. Notices, debug and trace lines go
	// out at debug level, so a default logger stays quiet; warnings and
	// errors keep their levels. Nil: slog.Default().
	Logger *slog.Logger
}

// ErrPortInUse is the error of StartEmbedded, matched with errors.Is, when
// the port it is to listen on is taken (by another process, or another
// pipeline's embedded server).
var ErrPortInUse = errors.New("port in use")

// Embedded is a NATS server with JetStream running inside this process.
type Embedded struct {
	srv *server.Server
}

// StartEmbedded starts a NATS server in this process with JetStream enabled
// and stored under opts.Dir, and returns when it accepts connections. It
// fails, with the server's last error in the message, when the server is
// not ready within opts.ReadyTimeout or before ctx is done.
func StartEmbedded(ctx context.Context, opts Options) (*Embedded, error) {
	if opts.Dir == "" {
		return nil, errors.New("natsconn: embedded NATS server: Options.Dir is required (JetStream stores streams there)")
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("natsconn: embedded NATS server: %w", err)
	}
	if opts.Name == "" {
		opts.Name = "sluice"
	}
	if opts.Host == "" {
		opts.Host = "127.0.0.1"
	}
	if opts.ReadyTimeout <= 0 {
		opts.ReadyTimeout = 10 * time.Second
	}
	logger := opts.Logger
	if logger == nil {
		logger = slog.Default()
	}
	if opts.Port > 0 {
		// The server would report a port in use only in its log, after
		// which the wait below would last ReadyTimeout.
		hp := net.JoinHostPort(opts.Host, strconv.Itoa(opts.Port))
		ln, err := net.Listen("tcp", hp)
		if err != nil {
			if errors.Is(err, syscall.EADDRINUSE) {
				return nil, fmt.Errorf("natsconn: embedded NATS server on %s: %w: %w", hp, ErrPortInUse, err)
			}
			return nil, fmt.Errorf("natsconn: embedded NATS server on %s: %w", hp, err)
		}
		if err := ln.Close(); err != nil {
			return nil, fmt.Errorf("natsconn: embedded NATS server on %s: %w", hp, err)
		}
	}
	sopts := &server.Options{
		ServerName:             opts.Name,
		Host:                   opts.Host,
		Port:                   opts.Port,
		JetStream:              true,
		StoreDir:               opts.Dir,
		JetStreamMaxMemory:     opts.MaxMemory,
		JetStreamMaxStore:      opts.MaxStore,
		NoSigs:                 true,
		DisableJetStreamBanner: true,
	}
	srv, err := server.NewServer(sopts)
	if err != nil {
		return nil, fmt.Errorf("natsconn: embedded NATS server: %w", err)
	}
	sl := &serverLogger{log: logger.With("component", "nats-server")}
	srv.SetLoggerV2(sl, logger.Enabled(ctx, slog.LevelDebug), false, false)
	srv.Start()

	deadline := time.Now().Add(opts.ReadyTimeout)
	for !srv.ReadyForConnections(50 * time.Millisecond) {
		if fatal := sl.fatalError(); fatal != "" {
			// The server gave up (its listener failed): it will not be
			// ready however long this waits.
			srv.Shutdown()
			srv.WaitForShutdown()
			return nil, fmt.Errorf("natsconn: embedded NATS server on %s:%d: %s", opts.Host, opts.Port, fatal)
		}
		if err := ctx.Err(); err != nil {
			srv.Shutdown()
			srv.WaitForShutdown()
			return nil, fmt.Errorf("natsconn: embedded NATS server on %s:%d: %w", opts.Host, opts.Port, err)
		}
		if time.Now().After(deadline) {
			srv.Shutdown()
			srv.WaitForShutdown()
			msg := fmt.Sprintf("natsconn: embedded NATS server on %s:%d not ready for connections after %s", opts.Host, opts.Port, opts.ReadyTimeout)
			if last := sl.lastError(); last != "" {
				msg += ": " + last
			}
			return nil, errors.New(msg)
		}
	}
	if !srv.JetStreamEnabled() {
		srv.Shutdown()
		srv.WaitForShutdown()
		msg := "natsconn: embedded NATS server started without JetStream"
		if last := sl.lastError(); last != "" {
			msg += ": " + last
		}
		return nil, errors.New(msg)
	}
	return &Embedded{srv: srv}, nil
}

// ClientURL returns the URL clients connect to, e.g. nats://127.0.0.1:4222.
func (e *Embedded) ClientURL() string { return e.srv.ClientURL() }

// Server returns the underlying nats-server, for what this type does not
// cover (monitoring, in-process connections).
func (e *Embedded) Server() *server.Server { return e.srv }

// Shutdown stops the server, closing client connections, and waits until it
// has stopped and flushed its stores. When ctx ends first it returns
// ctx.Err() and the shutdown completes in the background.
func (e *Embedded) Shutdown(ctx context.Context) error {
	done := make(chan struct{})
	go func() {
		e.srv.Shutdown()
		e.srv.WaitForShutdown()
		close(done)
	}()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("natsconn: embedded NATS server shutdown: %w", ctx.Err())
	}
}

// serverLogger adapts the server's logger interface to slog and remembers
// the last error, to explain a failed start.
type serverLogger struct {
	log   *slog.Logger
	mu    sync.Mutex
	last  string
	fatal string // the last fatal error: the server stopped
}

var _ server.Logger = (*serverLogger)(nil)

func (l *serverLogger) Noticef(format string, v ...any) { l.emit(slog.LevelDebug, format, v) }
func (l *serverLogger) Debugf(format string, v ...any)  { l.emit(slog.LevelDebug, format, v) }
func (l *serverLogger) Tracef(format string, v ...any)  { l.emit(slog.LevelDebug, format, v) }
func (l *serverLogger) Warnf(format string, v ...any)   { l.emit(slog.LevelWarn, format, v) }
func (l *serverLogger) Errorf(format string, v ...any)  { _ = l.emitError(format, v) }
func (l *serverLogger) Fatalf(format string, v ...any) {
	msg := l.emitError(format, v)
	l.mu.Lock()
	l.fatal = msg
	l.mu.Unlock()
}

func (l *serverLogger) emit(level slog.Level, format string, v []any) {
	ctx := context.Background()
	if l.log.Enabled(ctx, level) {
		l.log.Log(ctx, level, fmt.Sprintf(format, v...))
	}
}

// emitError logs an error, remembers it as the last one and returns it.
func (l *serverLogger) emitError(format string, v []any) string {
	msg := fmt.Sprintf(format, v...)
	l.mu.Lock()
	l.last = msg
	l.mu.Unlock()
	l.log.Error(msg)
	return msg
}

func (l *serverLogger) fatalError() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.fatal
}

func (l *serverLogger) lastError() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.last
}
