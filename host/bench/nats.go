package bench

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/sluicehq/sluice/connectors"
	"github.com/sluicehq/sluice/connectors/natsconn"
	"github.com/sluicehq/sluice/host/exec"
	"github.com/sluicehq/sluice/host/pipeline"
	"github.com/sluicehq/sluice/host/plugin"
	"github.com/sluicehq/sluice/state"
)

// NATSResult holds the nats suite's figures.
type NATSResult struct {
	Messages    int `json:"messages_per_round"`
	Window      int `json:"window"`
	Rounds      int `json:"rounds"`
	Parallelism int `json:"parallelism"`
	BatchSize   int `json:"batch_size"`
	// CallTimeout says whether the map ran on an engine with the default
	// call timeout (as `sluice run` does unless told otherwise).
	CallTimeout bool       `json:"call_timeout"`
	Sizes       []NATSSize `json:"sizes"`
}

// NATSSize holds the rates for one message size: medians over the rounds,
// and the rounds themselves, in messages per second from the first publish
// to the last arrival.
type NATSSize struct {
	Size int `json:"message_size_bytes"`
	// RawRate is NATS publish -> subscribe alone.
	RawRate float64 `json:"raw_msgs_per_second"`
	// RelayRate is NATS -> a subscription that publishes each message
	// again, as it arrives -> NATS: what two crossings of the server cost
	// with nothing between them, the ceiling of any pipeline from NATS to
	// NATS on the machine.
	RelayRate float64 `json:"relay_msgs_per_second"`
	// PipelineRate is NATS -> exec.Job (upper map) -> NATS.
	PipelineRate float64 `json:"pipeline_msgs_per_second"`
	// Ratio is the median of the per-round ratios: each pipeline round
	// over the raw round run just before it.
	Ratio float64 `json:"pipeline_to_raw"`
	// RelayRatio is the median of the per-round ratios of the relay
	// round over the raw round.
	RelayRatio float64 `json:"relay_to_raw"`

	RawRounds      []float64 `json:"raw_rounds_msgs_per_second"`
	RelayRounds    []float64 `json:"relay_rounds_msgs_per_second"`
	PipelineRounds []float64 `json:"pipeline_rounds_msgs_per_second"`

	// Page holds the pipeline with a dashboard page open and closed, with
	// NATSConfig.Dashboard; PipelineRate and PipelineRounds are then the
	// rounds with the page closed.
	Page *NATSPage `json:"dashboard,omitempty"`
}

// NATSPage compares the pipeline's rounds with the job's event stream
// (GET /api/v1/events) served on 127.0.0.1 and read by a client as the
// dashboard's page reads it (open) against rounds with the stream served
// and nobody reading (closed), interleaved.
type NATSPage struct {
	// OpenRate and ClosedRate are the medians of the rounds.
	OpenRate   float64 `json:"open_msgs_per_second"`
	ClosedRate float64 `json:"closed_msgs_per_second"`
	// Ratio is the median of the per-round ratios, open over closed.
	Ratio        float64   `json:"open_to_closed"`
	OpenRounds   []float64 `json:"open_rounds_msgs_per_second"`
	ClosedRounds []float64 `json:"closed_rounds_msgs_per_second"`
	// Events is the number of events the reader decoded, all rounds
	// together.
	Events int64 `json:"events_read"`
}

// defaultStall is how long a round waits without any arrival before it
// declares the missing messages lost.
const defaultStall = 10 * time.Second

func runNATS(ctx context.Context, e *env, code []byte, cfg NATSConfig) (*NATSResult, error) {
	if len(cfg.Sizes) == 0 || cfg.Messages <= 0 || cfg.Window <= 0 || cfg.Rounds <= 0 {
		return nil, fmt.Errorf("bench: nats suite: sizes, messages, window and rounds must be set (got %+v)", cfg)
	}
	if cfg.Stall <= 0 {
		cfg.Stall = defaultStall
	}
	par := parallelism(cfg.Parallelism)
	e.step("nats: starting the embedded NATS server; compiling the upper plugin (%s)", timeoutWords(!e.noTimeout))
	p, err := e.load(ctx, "upper", code, plugin.KindMap, !e.noTimeout)
	if err != nil {
		return nil, err
	}
	srv, err := natsconn.StartEmbedded(ctx, natsconn.Options{Dir: filepath.Join(e.dir, "nats"), Port: -1, Logger: e.log})
	if err != nil {
		return nil, fmt.Errorf("bench: nats suite: %w", err)
	}
	defer srv.Shutdown(context.WithoutCancel(ctx))
	url := srv.ClientURL()

	res := &NATSResult{Messages: cfg.Messages, Window: cfg.Window, Rounds: cfg.Rounds, Parallelism: par, BatchSize: pipeline.DefaultBatchSize, CallTimeout: !e.noTimeout}
	for _, size := range cfg.Sizes {
		s := NATSSize{Size: size}
		var ratios, relayRatios []float64
		for r := range cfg.Rounds {
			e.step("nats: %d-byte messages, round %d/%d: raw publish -> subscribe, %d messages", size, r+1, cfg.Rounds, cfg.Messages)
			raw, err := rawRound(ctx, e, url, size, r, cfg)
			if err != nil {
				return nil, err
			}
			e.step("nats: %d-byte messages, round %d/%d: NATS -> relay -> NATS, %d messages", size, r+1, cfg.Rounds, cfg.Messages)
			relay, err := relayRound(ctx, e, url, size, r, cfg)
			if err != nil {
				return nil, err
			}
			var pipe float64
			if cfg.Dashboard {
				if pipe, err = pageRounds(ctx, e, url, p, size, r, par, cfg, &s); err != nil {
					return nil, err
				}
			} else {
				e.step("nats: %d-byte messages, round %d/%d: NATS -> upper map (%d workers) -> NATS, %d messages", size, r+1, cfg.Rounds, par, cfg.Messages)
				if pipe, _, err = pipelineRound(ctx, e, url, p, size, r, par, pageNone, cfg); err != nil {
					return nil, err
				}
			}
			s.RawRounds = append(s.RawRounds, raw)
			s.RelayRounds = append(s.RelayRounds, relay)
			s.PipelineRounds = append(s.PipelineRounds, pipe)
			ratios = append(ratios, pipe/raw)
			relayRatios = append(relayRatios, relay/raw)
		}
		s.RawRate, s.PipelineRate, s.Ratio = median(s.RawRounds), median(s.PipelineRounds), median(ratios)
		s.RelayRate, s.RelayRatio = median(s.RelayRounds), median(relayRatios)
		if pg := s.Page; pg != nil {
			var pr []float64
			for i := range pg.OpenRounds {
				pr = append(pr, pg.OpenRounds[i]/pg.ClosedRounds[i])
			}
			pg.OpenRate, pg.ClosedRate, pg.Ratio = median(pg.OpenRounds), median(pg.ClosedRounds), median(pr)
		}
		res.Sizes = append(res.Sizes, s)
	}
	return res, nil
}

// asyncErrs keeps the first asynchronous error reported on any of a
// round's connections (a slow consumer, a permissions violation).
type asyncErrs struct {
	mu  sync.Mutex
	err error
}

func (a *asyncErrs) handler(_ *nats.Conn, sub *nats.Subscription, err error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.err != nil {
		return
	}
	if sub != nil {
		a.err = fmt.Errorf("nats asynchronous error on subject %s: %w", sub.Subject, err)
	} else {
		a.err = fmt.Errorf("nats asynchronous error: %w", err)
	}
}

func (a *asyncErrs) get() error {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.err
}

func connect(ctx context.Context, e *env, url, name string, errs *asyncErrs) (*nats.Conn, error) {
	nc, err := natsconn.Connect(ctx, url, name, natsconn.WithLogger(e.log),
		natsconn.WithNATSOptions(nats.ErrorHandler(errs.handler)))
	if err != nil {
		return nil, fmt.Errorf("bench: %w", err)
	}
	return nc, nil
}

// connectAll connects once per name, all reporting to errs, and returns
// the connections in the order of names and a function that closes them.
// On failure it closes those already made.
func connectAll(ctx context.Context, e *env, url string, errs *asyncErrs, names ...string) ([]*nats.Conn, func(), error) {
	conns := make([]*nats.Conn, 0, len(names))
	closeAll := func() {
		for _, nc := range conns {
			nc.Close()
		}
	}
	for _, name := range names {
		nc, err := connect(ctx, e, url, name, errs)
		if err != nil {
			closeAll()
			return nil, nil, err
		}
		conns = append(conns, nc)
	}
	return conns, closeAll, nil
}

// counter counts the messages that arrive on a subscription and checks
// each with ok.
type counter struct {
	want int64
	ok   func([]byte) bool
	got  atomic.Int64
	bad  atomic.Int64
	wake chan struct{} // capacity 1: an arrival since the publisher last looked
	done chan struct{} // closed when the want-th message arrives
	last time.Time     // arrival of the want-th message; written before done is closed
}

func newCounter(want int, ok func([]byte) bool) *counter {
	return &counter{want: int64(want), ok: ok, wake: make(chan struct{}, 1), done: make(chan struct{})}
}

// handle runs on the subscription's delivery goroutine.
func (c *counter) handle(m *nats.Msg) {
	if !c.ok(m.Data) {
		c.bad.Add(1)
	}
	n := c.got.Add(1)
	select {
	case c.wake <- struct{}{}:
	default:
	}
	if n == c.want {
		c.last = time.Now()
		close(c.done)
	}
}

// publishAndWait publishes n copies of payload to subject, never more than
// window ahead of the arrivals c counts, and waits for the last arrival.
// It returns the time of the first publish. A stall of cfg.Stall without
// any arrival means the missing messages were lost.
func publishAndWait(ctx context.Context, nc *nats.Conn, subject string, payload []byte, c *counter, errs *asyncErrs, cfg NATSConfig) (time.Time, error) {
	window := int64(cfg.Window)
	timer := time.NewTimer(cfg.Stall)
	defer timer.Stop()
	lost := func(published int64) error {
		return fmt.Errorf("bench: %d of %d messages published to %s, %d arrived, none for %s: messages were lost",
			published, c.want, subject, c.got.Load(), cfg.Stall)
	}
	// wait blocks until an arrival (true) and fails on a stall, an
	// asynchronous NATS error or ctx.
	wait := func(published int64) error {
		timer.Reset(cfg.Stall)
		select {
		case <-c.wake:
		case <-c.done:
		case <-timer.C:
			if err := errs.get(); err != nil {
				return fmt.Errorf("bench: %w", err)
			}
			return lost(published)
		case <-ctx.Done():
			return fmt.Errorf("bench: %w", ctx.Err())
		}
		if err := errs.get(); err != nil {
			return fmt.Errorf("bench: %w", err)
		}
		return nil
	}
	start := time.Now()
	for i := range c.want {
		for i-c.got.Load() > window {
			if err := wait(i); err != nil {
				return start, err
			}
		}
		if err := nc.Publish(subject, payload); err != nil {
			return start, fmt.Errorf("bench: publish to %s: %w", subject, err)
		}
	}
	for {
		select {
		case <-c.done:
			return start, nil
		default:
		}
		if err := wait(c.want); err != nil {
			return start, err
		}
	}
}

// lowerPayload returns size bytes of lower-case letters.
func lowerPayload(size int) []byte {
	b := make([]byte, size)
	for i := range b {
		b[i] = 'a' + byte(i%26)
	}
	return b
}

func isLower(c byte) bool { return 'a' <= c && c <= 'z' }
func isUpper(c byte) bool { return 'A' <= c && c <= 'Z' }

// checkArrivals verifies a finished round: exactly the messages published
// arrived, all as expected, with no asynchronous error.
func checkArrivals(what string, c *counter, errs *asyncErrs) error {
	if err := errs.get(); err != nil {
		return fmt.Errorf("bench: %s: %w", what, err)
	}
	if got := c.got.Load(); got != c.want {
		return fmt.Errorf("bench: %s: %d messages arrived, %d were published", what, got, c.want)
	}
	if bad := c.bad.Load(); bad > 0 {
		return fmt.Errorf("bench: %s: %d of %d messages arrived with the wrong content", what, bad, c.want)
	}
	return nil
}

// rawRound measures publish -> subscribe alone and returns messages per
// second.
func rawRound(ctx context.Context, e *env, url string, size, round int, cfg NATSConfig) (rate float64, err error) {
	errs := &asyncErrs{}
	conns, closeAll, err := connectAll(ctx, e, url, errs, "bench-raw-pub", "bench-raw-sub")
	if err != nil {
		return 0, err
	}
	defer closeAll()
	pub, sub := conns[0], conns[1]
	subject := fmt.Sprintf("bench.raw.%d.%d", size, round)
	c := newCounter(cfg.Messages, func(b []byte) bool { return len(b) == size && isLower(b[0]) && isLower(b[size-1]) })
	s, err := subscribe(ctx, sub, subject, c.handle)
	if err != nil {
		return 0, err
	}
	defer s.Unsubscribe()
	return measureArrivals(ctx, pub, sub, subject, size, c, errs, cfg, fmt.Sprintf("raw publish -> subscribe, %d-byte messages", size))
}

// subscribe subscribes handle to subject on nc and waits until the server
// has the subscription.
func subscribe(ctx context.Context, nc *nats.Conn, subject string, handle nats.MsgHandler) (*nats.Subscription, error) {
	s, err := nc.Subscribe(subject, handle)
	if err != nil {
		return nil, fmt.Errorf("bench: subscribe to %s: %w", subject, err)
	}
	if err := flush(ctx, nc); err != nil {
		_ = s.Unsubscribe()
		return nil, fmt.Errorf("bench: subscribe to %s: %w", subject, err)
	}
	return s, nil
}

// measureArrivals publishes c.want lower-case messages of size bytes to
// subject on pub, waits for c to count them on sub, checks them and
// returns messages per second from the first publish to the last arrival.
func measureArrivals(ctx context.Context, pub, sub *nats.Conn, subject string, size int, c *counter, errs *asyncErrs, cfg NATSConfig, what string) (float64, error) {
	start, err := publishAndWait(ctx, pub, subject, lowerPayload(size), c, errs, cfg)
	if err != nil {
		return 0, fmt.Errorf("%w (%s)", err, what)
	}
	// Anything beyond the count would arrive with the ping's reply.
	if err := flush(ctx, sub); err != nil {
		return 0, fmt.Errorf("bench: %w", err)
	}
	if err := checkArrivals(what, c, errs); err != nil {
		return 0, err
	}
	return float64(c.want) / c.last.Sub(start).Seconds(), nil
}

// relayRound measures publish -> relay -> subscribe and returns messages
// per second. The relay is a subscription on its own connection that
// publishes each message's data to the output subject as it arrives, on
// that connection, as the pipeline's host does with its output: the
// pipeline's NATS traffic without the pipeline.
func relayRound(ctx context.Context, e *env, url string, size, round int, cfg NATSConfig) (rate float64, err error) {
	what := fmt.Sprintf("NATS -> relay -> NATS, %d-byte messages", size)
	errs := &asyncErrs{}
	conns, closeAll, err := connectAll(ctx, e, url, errs, "bench-relay", "bench-relay-pub", "bench-relay-sub")
	if err != nil {
		return 0, err
	}
	defer closeAll()
	relay, pub, sub := conns[0], conns[1], conns[2]
	in, out := fmt.Sprintf("bench.relay.in.%d.%d", size, round), fmt.Sprintf("bench.relay.out.%d.%d", size, round)
	c := newCounter(cfg.Messages, func(b []byte) bool { return len(b) == size && isLower(b[0]) && isLower(b[size-1]) })
	s, err := subscribe(ctx, sub, out, c.handle)
	if err != nil {
		return 0, err
	}
	defer s.Unsubscribe()
	rs, err := subscribe(ctx, relay, in, func(m *nats.Msg) {
		if err := relay.Publish(out, m.Data); err != nil {
			errs.handler(relay, nil, fmt.Errorf("relay publish to %s: %w", out, err))
		}
	})
	if err != nil {
		return 0, err
	}
	defer rs.Unsubscribe()
	return measureArrivals(ctx, pub, sub, in, size, c, errs, cfg, what)
}

// flush waits for a ping round trip to the server, at most 10 seconds (the
// NATS client requires a deadline).
func flush(ctx context.Context, nc *nats.Conn) error {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	return nc.FlushWithContext(ctx)
}

// discardSink counts what it is given and keeps nothing.
type discardSink struct {
	name    string
	records uint64
}

var _ connectors.Sink = (*discardSink)(nil)

func (d *discardSink) Name() string { return d.name }

func (d *discardSink) Write(_ context.Context, out []connectors.Out) error {
	d.records += uint64(len(out))
	return nil
}

func (d *discardSink) Flush(context.Context) error { return nil }
func (d *discardSink) Close() error                { return nil }

// pageRounds runs round r's two pipeline rounds with the event stream
// served, one with a page open and one without, in an order that
// alternates from round to round, adds them to s.Page and returns the
// closed round's rate.
func pageRounds(ctx context.Context, e *env, url string, p *plugin.Plugin, size, r, par int, cfg NATSConfig, s *NATSSize) (closed float64, err error) {
	if s.Page == nil {
		s.Page = &NATSPage{}
	}
	modes := []pageMode{pageClosed, pageOpen}
	if r%2 == 1 {
		modes = []pageMode{pageOpen, pageClosed}
	}
	var open float64
	for _, m := range modes {
		words := "closed"
		if m == pageOpen {
			words = "open"
		}
		e.step("nats: %d-byte messages, round %d/%d: NATS -> upper map (%d workers) -> NATS, dashboard page %s, %d messages", size, r+1, cfg.Rounds, par, words, cfg.Messages)
		rate, events, err := pipelineRound(ctx, e, url, p, size, 2*r+int(m)-1, par, m, cfg)
		if err != nil {
			return 0, err
		}
		if m == pageOpen {
			open = rate
			s.Page.Events += events
		} else {
			closed = rate
		}
	}
	s.Page.OpenRounds = append(s.Page.OpenRounds, open)
	s.Page.ClosedRounds = append(s.Page.ClosedRounds, closed)
	return closed, nil
}

// pipelineRound measures NATS -> upper map -> NATS through exec.Job and
// returns messages per second; with page, the job's event stream is served
// meanwhile (and read, pageOpen), and events is what the reader decoded.
func pipelineRound(ctx context.Context, e *env, url string, p *plugin.Plugin, size, round, par int, page pageMode, cfg NATSConfig) (rate float64, events int64, err error) {
	what := fmt.Sprintf("NATS -> upper map -> NATS, %d-byte messages", size)
	if page != pageNone {
		what += ", dashboard page closed"
		if page == pageOpen {
			what = strings.Replace(what, "closed", "open", 1)
		}
	}
	errs := &asyncErrs{}
	var closers []func() error
	defer func() {
		for i := len(closers) - 1; i >= 0; i-- {
			if cerr := closers[i](); cerr != nil && err == nil {
				err = fmt.Errorf("bench: %s: %w", what, cerr)
			}
		}
	}()
	conns, closeAll, err := connectAll(ctx, e, url, errs, "bench-host", "bench-pub", "bench-sub")
	if err != nil {
		return 0, 0, err
	}
	closers = append(closers, func() error { closeAll(); return nil })
	host, pub, sub := conns[0], conns[1], conns[2]
	in, out := fmt.Sprintf("bench.in.%d.%d", size, round), fmt.Sprintf("bench.out.%d.%d", size, round)

	c := newCounter(cfg.Messages, func(b []byte) bool { return len(b) == size && isUpper(b[0]) && isUpper(b[size-1]) })
	s, err := subscribe(ctx, sub, out, c.handle)
	if err != nil {
		return 0, 0, err
	}
	closers = append(closers, func() error { _ = s.Unsubscribe(); return nil })

	src, err := natsconn.NewCoreSource(host, natsconn.CoreSourceConfig{Subject: in})
	if err != nil {
		return 0, 0, fmt.Errorf("bench: %w", err)
	}
	closers = append(closers, src.Close)
	sink, err := natsconn.NewCoreSink(host, natsconn.CoreSinkConfig{Subject: out})
	if err != nil {
		return 0, 0, fmt.Errorf("bench: %w", err)
	}
	closers = append(closers, sink.Close)
	store, err := state.Open(filepath.Join(e.dir, "nats-state", fmt.Sprintf("%d-%d", size, round)),
		state.Options{KeyGroups: pipeline.DefaultKeyGroups, Logger: e.log})
	if err != nil {
		return 0, 0, fmt.Errorf("bench: %w", err)
	}
	closers = append(closers, store.Close)
	dead := &discardSink{name: "dead-letters"}
	job, err := exec.New(ctx, exec.Config{
		Name:       "bench",
		Sources:    []exec.Input{{Name: "in", Source: src}},
		Operators:  []exec.Operator{{Name: "upper", Kind: plugin.KindMap, Plugin: p, Parallelism: par}},
		Sinks:      []exec.Output{{Name: "out", Sink: sink}},
		DeadLetter: dead,
		Store:      store,
		BatchSize:  pipeline.DefaultBatchSize,
		Linger:     pipeline.DefaultLinger,
		Logger:     e.log,
	})
	if err != nil {
		return 0, 0, fmt.Errorf("bench: %w", err)
	}
	runCtx, stop := context.WithCancel(ctx)
	runErr := make(chan error, 1)
	go func() { runErr <- job.Run(runCtx) }()
	var reader *pageReader
	stopReader := func() {}
	if page != pageNone {
		srv, err := pageServer(e, job)
		if err != nil {
			stop()
			return 0, 0, errors.Join(err, <-runErr)
		}
		closers = append(closers, func() error {
			cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
			defer cancel()
			return srv.Close(cctx)
		})
		if page == pageOpen {
			rctx, cancel := context.WithCancel(ctx)
			reader = openPage(rctx, srv.Addr())
			stopReader = cancel
			if err := reader.attached(ctx); err != nil {
				cancel()
				stop()
				return 0, 0, errors.Join(err, <-reader.done, <-runErr)
			}
		}
	}
	start, perr := publishAndWait(ctx, pub, in, lowerPayload(size), c, errs, cfg)
	var rerr error
	if reader != nil {
		stopReader()
		if rerr = <-reader.done; rerr != nil {
			rerr = fmt.Errorf("bench: dashboard reader: %w", rerr)
		}
		events = reader.events.Load()
	}
	stop()
	jerr := <-runErr
	if err := errors.Join(perr, jerr, rerr); err != nil {
		return 0, 0, fmt.Errorf("%w (%s)", err, what)
	}
	if err := flush(ctx, sub); err != nil {
		return 0, 0, fmt.Errorf("bench: %w", err)
	}
	if err := checkArrivals(what, c, errs); err != nil {
		return 0, 0, err
	}
	st := job.Status()
	if st.RecordsIn != uint64(cfg.Messages) || st.Outputs != uint64(cfg.Messages) || st.Dead != 0 || dead.records != 0 {
		return 0, 0, fmt.Errorf("bench: %s: the job read %d records, wrote %d and dead-lettered %d; %d were published",
			what, st.RecordsIn, st.Outputs, st.Dead, cfg.Messages)
	}
	return float64(c.want) / c.last.Sub(start).Seconds(), events, nil
}
