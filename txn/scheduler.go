package txn

import (
	"context"
	"fmt"
	"log/slog"
	"runtime/pprof"
	"sync"
)

// Config configures a Scheduler.
type Config struct {
	// Workers is the number of worker goroutines (at least 1).
	Workers int
	// Partitions is the number of partitions of the S-Store baseline
	// (default 8 per worker).
	Partitions int
	// Logger receives debug logs of each batch (default: slog.Default()).
	Logger *slog.Logger
	// Analyze makes every batch count the cycles between chains
	// (Counts.Cycles, CyclicChains) whatever its strategy, for a decision
	// model: one pass over the parametric edges and a strongly connected
	// components search over the chains. Without it only the strategies
	// with chain units count them.
	Analyze bool
}

// Scheduler executes batches of transactions on a fixed pool of workers,
// started by New and stopped by Close. One Run executes at a time; Run and
// Close are safe to call from several goroutines.
type Scheduler struct {
	n       int
	parts   int
	log     *slog.Logger
	analyze bool

	mu         sync.Mutex // serialises Run and Close, guards buf and serialKeys
	buf        *planBuf
	serialKeys map[Key]int // serialCounts' map, kept from batch to batch
	closed     bool
	work       []chan task
	exited     sync.WaitGroup
	sample     sampler         // a request for a sample and the last one (sample.go)
	runCtx     context.Context // the context of the Run in progress
}

// task is a function a worker runs for the Run in progress; ctx is that
// Run's context, whose profiler labels the worker takes while it runs f.
type task struct {
	f    func(w int)
	done *sync.WaitGroup
	ctx  context.Context
}

// New starts a Scheduler's workers.
func New(cfg Config) (*Scheduler, error) {
	if cfg.Workers < 1 {
		return nil, fmt.Errorf("txn: config: Workers is %d, want at least 1", cfg.Workers)
	}
	if cfg.Partitions < 0 {
		return nil, fmt.Errorf("txn: config: Partitions is %d, want at least 0", cfg.Partitions)
	}
	s := &Scheduler{n: cfg.Workers, parts: cfg.Partitions, log: cfg.Logger, analyze: cfg.Analyze, runCtx: context.Background()}
	if s.parts == 0 {
		s.parts = 8 * s.n
	}
	if s.log == nil {
		s.log = slog.Default()
	}
	s.work = make([]chan task, s.n)
	for i := range s.work {
		s.work[i] = make(chan task, 1)
		s.exited.Add(1)
		go s.worker(i, s.work[i])
	}
	return s, nil
}

func (s *Scheduler) worker(id int, ch chan task) {
	defer s.exited.Done()
	for t := range ch {
		// A CPU profile then counts the worker's time under the labels
		// of the caller of Run (pprof.Do), as if Run's goroutine ran it.
		pprof.SetGoroutineLabels(t.ctx)
		t.f(id)
		t.done.Done()
	}
}

// SetAnalyze changes Config.Analyze from the next Run on.
func (s *Scheduler) SetAnalyze(on bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.analyze = on
}

// Workers returns the number of workers.
func (s *Scheduler) Workers() int { return s.n }

// dispatch runs f on every worker and waits for all of them.
func (s *Scheduler) dispatch(f func(w int)) {
	var wg sync.WaitGroup
	wg.Add(s.n)
	for _, ch := range s.work {
		ch <- task{f: f, done: &wg, ctx: s.runCtx}
	}
	wg.Wait()
}

// Close stops the workers and waits for them to exit. It is idempotent.
func (s *Scheduler) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil
	}
	s.closed = true
	for _, ch := range s.work {
		close(ch)
	}
	s.exited.Wait()
	return nil
}

// Run executes a batch with strategy st and returns the outcome, which equals
// the serial executor's: the same change set, the same committed or aborted
// outcome per transaction and the same values read per operation.
//
// An Apply error, or an access outside an operation's declaration, fails the
// batch with an *OpError for the earliest such operation that the serial
// executor reaches; the caller decides what to do with the batch. A Store
// error fails the batch too, with an error wrapping a *StoreError (and the
// Store's error): never is a key that could not be read taken for absent.
// Which keys a strategy reads from the Store differs (TPG strategies load
// every declared key before executing, the serial executor and S-Store a
// key when an operation first reads it), so an error on a key that only
// operations the serial executor never reaches declare fails the batch
// under some strategies and not under others. Run returns ctx's error if
// ctx ends first. The Result's slices alias the
// values Apply returned and the Store's values.
func (s *Scheduler) Run(ctx context.Context, st Strategy, batch []Txn, store Store, apply Apply) (*Result, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, ErrClosed
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("txn: run cancelled: %w", err)
	}
	s.runCtx = ctx
	defer func() { s.runCtx = context.Background() }()
	var res *Result
	var err error
	switch st.Kind {
	case Serial:
		res, err = s.runSerial(ctx, batch, store, apply)
	case SStore:
		res, err = s.runSStore(ctx, batch, store, apply)
	case Adaptive:
		return nil, ErrAdaptive
	default:
		res, err = s.runTPG(ctx, st, batch, store, apply)
	}
	if err != nil {
		return nil, err
	}
	if s.log.Enabled(ctx, slog.LevelDebug) {
		s.log.DebugContext(ctx, "txn batch", "strategy", st.String(), "txns", len(batch),
			"aborted", res.Stats.Aborted, "passes", res.Stats.Passes, "wall", res.Stats.Wall)
	}
	return res, nil
}

// runSerial runs a batch serially. When batches are analysed, the
// dependency counts a decision model reads are computed meanwhile on
// another goroutine: the serial run keeps one core busy and leaves the
// others idle, so with two workers or more the analysis adds no time.
func (s *Scheduler) runSerial(ctx context.Context, batch []Txn, store Store, apply Apply) (*Result, error) {
	if !s.analyze {
		return runSerial(ctx, batch, store, apply)
	}
	if s.serialKeys == nil {
		s.serialKeys = make(map[Key]int)
	}
	var deps Counts
	counted := make(chan struct{})
	if s.n == 1 {
		deps = serialCounts(batch, s.serialKeys)
		close(counted)
	} else {
		go func() {
			defer close(counted)
			deps = serialCounts(batch, s.serialKeys)
		}()
	}
	res, err := runSerial(ctx, batch, store, apply)
	<-counted // on an error too: the counting reads the batch
	if err != nil {
		return nil, err
	}
	c := &res.Stats.Counts
	c.Keys, c.Temporal, c.Parametric, c.Logical = deps.Keys, deps.Temporal, deps.Parametric, deps.Logical
	c.Chains, c.MaxChain = deps.Chains, deps.MaxChain
	return res, nil
}
