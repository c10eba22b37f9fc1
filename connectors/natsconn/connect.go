package natsconn

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net"
	"net/url"
	"os"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/nats-io/nats.go"
)

// ConnectOption adjusts Connect.
type ConnectOption func(*connectConfig)

type connectConfig struct {
	logger  *slog.Logger
	timeout time.Duration
	extra   []nats.Option
	onAsync func(error)
}

// WithLogger sets the logger that reports disconnections, reconnections and
// asynchronous errors such as slow consumers. Default: slog.Default().
func WithLogger(l *slog.Logger) ConnectOption {
	return func(c *connectConfig) { c.logger = l }
}

// WithAsyncErrors calls f with each asynchronous error the client reports
// (a slow consumer: nats.ErrSlowConsumer), after logging it. f runs on the
// client's goroutine and must not block.
func WithAsyncErrors(f func(error)) ConnectOption {
	return func(c *connectConfig) { c.onAsync = f }
}

// WithDialTimeout bounds each attempt to open a TCP connection; default 2s.
// A deadline on Connect's context bounds the first connection as a whole.
func WithDialTimeout(d time.Duration) ConnectOption {
	return func(c *connectConfig) { c.timeout = d }
}

// WithNATSOptions passes options to the NATS client (credentials, TLS and
// the like). They are applied after Connect's own, so they can override the
// reconnect policy too.
func WithNATSOptions(opts ...nats.Option) ConnectOption {
	return func(c *connectConfig) { c.extra = append(c.extra, opts...) }
}

// Reconnect backoff: the first retry waits reconnectBase, each next one
// twice as long, up to reconnectMax, with up to 25% jitter so that many
// clients do not reconnect in step.
const (
	reconnectBase = 100 * time.Millisecond
	reconnectMax  = 5 * time.Second
)

// Connect connects to the NATS server(s) at url (comma-separated for
// several) under the client name name.
//
// Once connected the client reconnects forever with exponential backoff,
// buffering publishes meanwhile, and logs disconnections and
// reconnections. The first connection is not retried: a server that is down
// at start is reported at once as a *ConnectError, whose message reads like
//
//	nats: cannot connect to nats://127.0.0.1:4222: connection refused (is the server running?)
func Connect(ctx context.Context, url, name string, opts ...ConnectOption) (*nats.Conn, error) {
	cfg := connectConfig{timeout: 2 * time.Second}
	for _, o := range opts {
		o(&cfg)
	}
	if cfg.logger == nil {
		cfg.logger = slog.Default()
	}
	log := cfg.logger.With("nats_client", name, "url", redactURLs(url))
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("nats: connect to %s: %w", redactURLs(url), err)
	}
	d := &dialer{ctx: ctx, timeout: cfg.timeout}
	nopts := []nats.Option{
		nats.Name(name),
		nats.SetCustomDialer(d),
		nats.RetryOnFailedConnect(false),
		nats.MaxReconnects(-1),
		nats.CustomReconnectDelay(reconnectDelay),
		nats.DisconnectErrHandler(func(nc *nats.Conn, err error) {
			if err != nil {
				log.Warn("nats disconnected", "err", err)
			} else {
				log.Debug("nats disconnected")
			}
		}),
		nats.ReconnectHandler(func(nc *nats.Conn) {
			log.Info("nats reconnected", "server", nc.ConnectedUrlRedacted(), "reconnects", nc.Stats().Reconnects)
		}),
		nats.ClosedHandler(func(*nats.Conn) { log.Debug("nats connection closed") }),
		nats.ErrorHandler(func(_ *nats.Conn, sub *nats.Subscription, err error) {
			if sub != nil {
				log.Warn("nats asynchronous error", "subject", sub.Subject, "err", err)
			} else {
				log.Warn("nats asynchronous error", "err", err)
			}
			if cfg.onAsync != nil {
				cfg.onAsync(err)
			}
		}),
	}
	nopts = append(nopts, cfg.extra...)
	nc, err := nats.Connect(url, nopts...)
	d.firstDone()
	if err != nil {
		if cerr := ctx.Err(); cerr != nil {
			return nil, &ConnectError{URL: redactURLs(url), Err: cerr}
		}
		if errors.Is(err, nats.ErrNoServers) {
			if dialErr := d.lastErr(); dialErr != nil {
				return nil, &ConnectError{URL: redactURLs(url), Err: dialErr}
			}
		}
		return nil, &ConnectError{URL: redactURLs(url), Err: err}
	}
	return nc, nil
}

// ConnectError reports a failed first connection. It unwraps to the cause:
// the dial error (errors.Is(err, syscall.ECONNREFUSED) holds for a server
// that is down) or the client's error.
type ConnectError struct {
	URL string // the server URL(s), credentials redacted
	Err error
}

// Error names the URL and the cause, with a hint when the server could not
// be reached.
func (e *ConnectError) Error() string {
	var op *net.OpError
	if errors.As(e.Err, &op) {
		return fmt.Sprintf("nats: cannot connect to %s: %s (is the server running?)", e.URL, dialCause(op))
	}
	return fmt.Sprintf("nats: cannot connect to %s: %v", e.URL, e.Err)
}

// Unreachable reports whether no server at the URL could be reached (a
// dial that failed: refused, unresolved, timed out), as opposed to a
// server that answered and refused the client.
func (e *ConnectError) Unreachable() bool {
	var op *net.OpError
	return errors.As(e.Err, &op)
}

// Unwrap returns the cause.
func (e *ConnectError) Unwrap() error { return e.Err }

// dialCause returns the innermost reason of a dial error: "connection
// refused" rather than "dial tcp 127.0.0.1:4222: connect: connection
// refused", since the URL is already in the message.
func dialCause(op *net.OpError) string {
	var errno syscall.Errno
	if errors.As(op.Err, &errno) {
		return errno.Error()
	}
	var sys *os.SyscallError
	if errors.As(op.Err, &sys) {
		return sys.Err.Error()
	}
	if op.Err != nil {
		return op.Err.Error()
	}
	return op.Error()
}

// reconnectDelay is the backoff before reconnect attempt number attempts
// (counted from 1 for each server).
func reconnectDelay(attempts int) time.Duration {
	d := reconnectMax
	if attempts < 8 {
		d = min(reconnectBase<<max(attempts-1, 0), reconnectMax)
	}
	return d + rand.N(d/4+1)
}

// dialer opens TCP connections for the NATS client. During the first
// connection it honours Connect's context and remembers the dial error that
// the client would otherwise hide behind "no servers available".
type dialer struct {
	timeout time.Duration
	mu      sync.Mutex
	ctx     context.Context // Connect's context; nil after the first connection
	err     error
}

func (d *dialer) Dial(network, address string) (net.Conn, error) {
	d.mu.Lock()
	ctx := d.ctx
	d.mu.Unlock()
	if ctx == nil {
		ctx = context.Background()
	}
	nd := net.Dialer{Timeout: d.timeout}
	conn, err := nd.DialContext(ctx, network, address)
	if err != nil {
		d.mu.Lock()
		d.err = err
		d.mu.Unlock()
	}
	return conn, err
}

func (d *dialer) firstDone() {
	d.mu.Lock()
	d.ctx = nil
	d.mu.Unlock()
}

func (d *dialer) lastErr() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.err
}

// redactURLs hides credentials in a comma-separated list of server URLs:
// the password of user:password, and a lone user name, which NATS reads as
// a token.
func redactURLs(urls string) string {
	parts := strings.Split(urls, ",")
	for i, p := range parts {
		p = strings.TrimSpace(p)
		if u, err := url.Parse(p); err == nil && u.User != nil {
			if _, ok := u.User.Password(); ok {
				p = u.Redacted()
			} else {
				u.User = url.User("xxxxx")
				p = u.String()
			}
		}
		parts[i] = p
	}
	return strings.Join(parts, ",")
}
