package natsconn

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
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
	// Name is the server name. Empty: "sluice" for a single server; for a
	// cluster member, the name kept in the file server-name under Dir,
	// made up at the member's first start ("sluice-" and 8 random
	// characters). Members of a cluster need names of their own, the same
	// across restarts: JetStream knows a member by its name.
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
	// Cluster makes the server a member of a NATS cluster, with JetStream
	// clustered; nil: a single server.
	Cluster *ClusterOptions
	// Logger receives the server's log. Notices, debug and trace lines go
	// out at debug level, so a default logger stays quiet; warnings and
	// errors keep their levels. Nil: slog.Default().
	Logger *slog.Logger
}

// ClusterOptions makes an embedded server a member of a NATS cluster, with
// JetStream clustered: streams and key-value buckets with replicas are
// spread over the members. A member joins the cluster through the routes
// it is given and learns the other members from them.
type ClusterOptions struct {
	// Name is the cluster's name, the same on every member. Required.
	Name string
	// Host is the interface the route listener listens on; empty:
	// Options.Host.
	Host string
	// Port is the route port: 0 means 6222, the NATS default; -1 picks a
	// free port (read it back from RouteURL).
	Port int
	// Routes are the route URLs of members to connect to, such as
	// nats-route://10.0.0.2:6222; at least one. A member's own route is
	// allowed and ignored, so every member can be given the same list.
	Routes []string
}

// ErrInvalidOptions is the error of StartEmbedded, matched with errors.Is,
// when its Options cannot describe a server; the message names the field.
var ErrInvalidOptions = errors.New("invalid options")

// ErrPortInUse is the error of StartEmbedded, matched with errors.Is, when
// the port it is to listen on is taken (by another process, or another
// pipeline's embedded server).
var ErrPortInUse = errors.New("port in use")

// Embedded is a NATS server with JetStream running inside this process.
type Embedded struct {
	srv       *server.Server
	routeHost string // the route listener's host; empty: not a cluster member
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
	if opts.Host == "" {
		opts.Host = "127.0.0.1"
	}
	var routes []*url.URL
	if c := opts.Cluster; c != nil {
		var err error
		if routes, err = c.routes(); err != nil {
			return nil, fmt.Errorf("natsconn: embedded NATS server: %w", err)
		}
		c2 := *c
		if c2.Host == "" {
			c2.Host = opts.Host
		}
		if c2.Port == 0 {
			c2.Port = 6222 // the NATS default
		}
		opts.Cluster = &c2
	}
	if opts.Name == "" {
		name, err := defaultName(opts)
		if err != nil {
			return nil, fmt.Errorf("natsconn: embedded NATS server: %w", err)
		}
		opts.Name = name
	}
	if opts.ReadyTimeout <= 0 {
		opts.ReadyTimeout = 10 * time.Second
	}
	logger := opts.Logger
	if logger == nil {
		logger = slog.Default()
	}
	// The server would report a port in use only in its log, after which
	// the wait below would last ReadyTimeout.
	if err := checkPort("embedded NATS server", opts.Host, opts.Port); err != nil {
		return nil, err
	}
	if c := opts.Cluster; c != nil {
		if err := checkPort("embedded NATS server's route listener", c.Host, c.Port); err != nil {
			return nil, err
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
	routeHost := ""
	if c := opts.Cluster; c != nil {
		sopts.Cluster = server.ClusterOpts{Name: c.Name, Host: c.Host, Port: c.Port}
		sopts.Routes = routes
		routeHost = c.Host
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
		if fatal := sl.fatalError(); fatal != nil {
			// The server gave up (its listener failed): it will not be
			// ready however long this waits.
			srv.Shutdown()
			srv.WaitForShutdown()
			if errors.Is(fatal, syscall.EADDRINUSE) {
				return nil, fmt.Errorf("natsconn: embedded NATS server on %s:%d: %w: %w", opts.Host, opts.Port, ErrPortInUse, fatal)
			}
			return nil, fmt.Errorf("natsconn: embedded NATS server on %s:%d: %w", opts.Host, opts.Port, fatal)
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
	return &Embedded{srv: srv, routeHost: routeHost}, nil
}

// checkPort returns ErrPortInUse, with the cause, when port on host is
// taken; it checks nothing for port 0 or -1. what names the listener.
func checkPort(what, host string, port int) error {
	if port <= 0 {
		return nil
	}
	hp := net.JoinHostPort(host, strconv.Itoa(port))
	ln, err := net.Listen("tcp", hp)
	if err != nil {
		if errors.Is(err, syscall.EADDRINUSE) {
			return fmt.Errorf("natsconn: %s on %s: %w: %w", what, hp, ErrPortInUse, err)
		}
		return fmt.Errorf("natsconn: %s on %s: %w", what, hp, err)
	}
	if err := ln.Close(); err != nil {
		return fmt.Errorf("natsconn: %s on %s: %w", what, hp, err)
	}
	return nil
}

// routes validates c and returns its routes parsed.
func (c *ClusterOptions) routes() ([]*url.URL, error) {
	if strings.TrimSpace(c.Name) == "" {
		return nil, fmt.Errorf("%w: Options.Cluster.Name is required (every member of a cluster has the same)", ErrInvalidOptions)
	}
	if strings.ContainsAny(c.Name, " \t\r\n") {
		return nil, fmt.Errorf("%w: Options.Cluster.Name %q has white space", ErrInvalidOptions, c.Name)
	}
	if c.Port < -1 {
		return nil, fmt.Errorf("%w: Options.Cluster.Port %d: want a port, 0 (6222) or -1 (a free one)", ErrInvalidOptions, c.Port)
	}
	if len(c.Routes) == 0 {
		return nil, fmt.Errorf("%w: Options.Cluster.Routes is empty: a member needs the route of at least one member (its own will do)", ErrInvalidOptions)
	}
	urls := make([]*url.URL, 0, len(c.Routes))
	for i, r := range c.Routes {
		u, err := url.Parse(r)
		if err != nil {
			return nil, fmt.Errorf("%w: Options.Cluster.Routes[%d] %q: %w", ErrInvalidOptions, i, r, err)
		}
		switch {
		case u.Scheme != "nats-route" && u.Scheme != "nats" && u.Scheme != "tls":
			return nil, fmt.Errorf("%w: Options.Cluster.Routes[%d] %q: want a URL such as nats-route://host:6222", ErrInvalidOptions, i, r)
		case u.Hostname() == "" || u.Port() == "":
			return nil, fmt.Errorf("%w: Options.Cluster.Routes[%d] %q: want a host and a port, as in nats-route://host:6222", ErrInvalidOptions, i, r)
		}
		if p, err := strconv.Atoi(u.Port()); err != nil || p <= 0 || p > 65535 {
			return nil, fmt.Errorf("%w: Options.Cluster.Routes[%d] %q: port %q out of range", ErrInvalidOptions, i, r, u.Port())
		}
		urls = append(urls, u)
	}
	return urls, nil
}

// nameFile is the file under Options.Dir that keeps a cluster member's
// server name.
const nameFile = "server-name"

// defaultName returns the server name of opts when Name is empty: "sluice"
// for a single server; for a cluster member, the name kept under Dir, made
// up and kept there at the first start.
func defaultName(opts Options) (string, error) {
	if opts.Cluster == nil {
		return "sluice", nil
	}
	path := filepath.Join(opts.Dir, nameFile)
	b, err := os.ReadFile(path)
	switch {
	case err == nil:
		name := strings.TrimSpace(string(b))
		if name == "" || strings.ContainsAny(name, " \t\r\n") {
			return "", fmt.Errorf("%w: the server name in %s, %q, is not a name (remove the file to make up a new one, or set Options.Name)", ErrInvalidOptions, path, name)
		}
		return name, nil
	case !errors.Is(err, fs.ErrNotExist):
		return "", fmt.Errorf("server name: %w", err)
	}
	name := "sluice-" + strings.ToLower(rand.Text()[:8])
	if err := os.MkdirAll(opts.Dir, 0o755); err != nil {
		return "", fmt.Errorf("server name: %w", err)
	}
	if err := os.WriteFile(path, []byte(name+"\n"), 0o644); err != nil {
		return "", fmt.Errorf("server name: %w", err)
	}
	return name, nil
}

// ClientURL returns the URL clients connect to, e.g. nats://127.0.0.1:4222.
func (e *Embedded) ClientURL() string { return e.srv.ClientURL() }

// RouteURL returns the URL other cluster members route to, e.g.
// nats-route://127.0.0.1:6222, or "" when the server is not a cluster
// member.
func (e *Embedded) RouteURL() string {
	addr := e.srv.ClusterAddr()
	if e.routeHost == "" || addr == nil {
		return ""
	}
	u := url.URL{Scheme: "nats-route", Host: net.JoinHostPort(e.routeHost, strconv.Itoa(addr.Port))}
	return u.String()
}

// Name returns the server's name (see Options.Name).
func (e *Embedded) Name() string { return e.srv.Name() }

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
	fatal error // the last fatal error: the server stopped
}

var _ server.Logger = (*serverLogger)(nil)

func (l *serverLogger) Noticef(format string, v ...any) { l.emit(slog.LevelDebug, format, v) }
func (l *serverLogger) Debugf(format string, v ...any)  { l.emit(slog.LevelDebug, format, v) }
func (l *serverLogger) Tracef(format string, v ...any)  { l.emit(slog.LevelDebug, format, v) }
func (l *serverLogger) Warnf(format string, v ...any)   { l.emit(slog.LevelWarn, format, v) }
func (l *serverLogger) Errorf(format string, v ...any)  { _ = l.emitError(format, v) }
func (l *serverLogger) Fatalf(format string, v ...any) {
	err := &serverError{msg: l.emitError(format, v)}
	for _, a := range v {
		if cause, ok := a.(error); ok {
			err.cause = cause
		}
	}
	l.mu.Lock()
	l.fatal = err
	l.mu.Unlock()
}

// serverError is an error the server logged, unwrapping to the error
// among the log line's arguments, if any (a listener's, for one).
type serverError struct {
	msg   string
	cause error
}

func (e *serverError) Error() string { return e.msg }
func (e *serverError) Unwrap() error { return e.cause }

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

func (l *serverLogger) fatalError() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.fatal
}

func (l *serverLogger) lastError() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.last
}
