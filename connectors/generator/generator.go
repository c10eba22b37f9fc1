package generator

import (
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"math/rand/v2"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sluicehq/sluice/abi"
	"github.com/sluicehq/sluice/connectors"
)

// Mode selects what a generator produces.
type Mode string

// The modes; see the package documentation.
const (
	// Words generates sentences from a skewed vocabulary.
	Words Mode = "words"
	// Sequence generates the decimal position as value.
	Sequence Mode = "sequence"
	// Bytes generates Size pseudo-random bytes.
	Bytes Mode = "bytes"
	// Txn generates the events of a transactional benchmark workload
	// (Config.Workload).
	Txn Mode = "txn"
)

// Events is the workload of Txn mode: a deterministic sequence of events.
// The benchmark workloads of package txn/apps/workload implement it; the
// generator is given one rather than building it, so that connectors do
// not depend on the scheduler's packages.
type Events interface {
	// Name returns the workload's short name, for the source's name.
	Name() string
	// Event appends the record of event i (counting from 0) to dst, its
	// key then its value, and returns both; key's capacity ends where
	// value begins, and value's capacity runs to the end of the buffer.
	// Event i depends only on i and the workload's configuration.
	Event(i uint64, dst []byte) (key, value []byte)
}

// Config configures a Source.
type Config struct {
	// Mode of generation; empty: Words.
	Mode Mode
	// Count is the number of records, after which Read returns io.EOF;
	// 0: unbounded.
	Count uint64
	// Rate is the pace in records per second; 0: as fast as Read is
	// called.
	Rate float64
	// Size is the payload size of Bytes mode; 0: 64.
	Size int
	// Keys is the number of distinct keys; 0: records have no key. Not
	// used in Txn mode, whose workload has its own keys.
	Keys uint64
	// Seed selects the stream; the same seed gives the same records. Not
	// used in Txn mode, whose workload has its own seed.
	Seed uint64
	// Start is the event time of position 1; zero: one Step after the
	// Unix epoch (a time of 0 means "none" to the windows of event time).
	Start time.Time
	// Step is the event time between consecutive positions; 0: 1/Rate
	// when Rate is set, else 1 millisecond.
	Step time.Duration
	// Name overrides the source's name; empty: "generator:" + Mode, and
	// "generator:txn/" + the workload's name in Txn mode.
	Name string

	// Workload is the workload of Txn mode, which requires one, built by
	// the caller (a workload.App of package txn/apps/workload, which the
	// caller may share, to load its initial state); Keys and Seed must
	// then be zero.
	Workload Events
}

// Source generates records deterministically from a seed and a position.
// Positions count from 1.
type Source struct {
	cfg   Config
	name  string
	app   Events // Txn mode
	words []string
	cum   []float64 // cumulative word weights
	start int64     // event time of position 1, ns
	step  int64     // ns

	mu    sync.Mutex // guards state, opened and after, so that Close may interrupt Read
	state int        // 0 new, 1 open, 2 closed
	done  chan struct{}
	// opened is when Open was called and after the position it was given:
	// set by Open, read by Read and Backlog.
	opened time.Time
	after  uint64
	// emitted counts the records returned since Open: written by Read,
	// read by Backlog too.
	emitted atomic.Uint64

	// Read's goroutine only.
	next    uint64 // position of the next record
	txnSize int    // Txn mode: bytes to reserve per record
	timer   *time.Timer
}

var _ connectors.Backlogged = (*Source)(nil)

var _ connectors.Source = (*Source)(nil)

// New returns a generator for cfg.
func New(cfg Config) (*Source, error) {
	switch cfg.Mode {
	case "":
		cfg.Mode = Words
	case Words, Sequence, Bytes, Txn:
	default:
		return nil, fmt.Errorf("generator: unknown mode %q (want %q, %q, %q or %q)", string(cfg.Mode), Words, Sequence, Bytes, Txn)
	}
	if cfg.Rate < 0 {
		return nil, fmt.Errorf("generator: negative rate %v", cfg.Rate)
	}
	if cfg.Size < 0 || cfg.Size > abi.MaxRecordSize {
		return nil, fmt.Errorf("generator: size %d out of range [0, %d]", cfg.Size, abi.MaxRecordSize)
	}
	if cfg.Size == 0 {
		cfg.Size = 64
	}
	s := &Source{cfg: cfg, name: cfg.Name, done: make(chan struct{}), txnSize: 32}
	if cfg.Mode == Txn {
		switch {
		case cfg.Workload == nil:
			return nil, fmt.Errorf("generator: mode %q needs a workload", Txn)
		case cfg.Keys != 0 || cfg.Seed != 0:
			return nil, fmt.Errorf("generator: a txn source takes no keys or seed: its workload %q has its own", cfg.Workload.Name())
		}
		s.app = cfg.Workload
		if s.name == "" {
			s.name = "generator:txn/" + s.app.Name()
		}
	} else if cfg.Workload != nil {
		return nil, fmt.Errorf("generator: a workload applies to mode %q only, not %q", Txn, cfg.Mode)
	}
	if s.name == "" {
		s.name = "generator:" + string(cfg.Mode)
	}
	if !cfg.Start.IsZero() {
		s.start = cfg.Start.UnixNano()
	}
	switch {
	case cfg.Step > 0:
		s.step = int64(cfg.Step)
	case cfg.Rate > 0:
		s.step = max(int64(float64(time.Second)/cfg.Rate), 1)
	default:
		s.step = int64(time.Millisecond)
	}
	if cfg.Start.IsZero() {
		s.start = s.step
	}
	if cfg.Mode == Words {
		s.words = strings.Fields(vocabulary)
		s.cum = make([]float64, len(s.words))
		total := 0.0
		for i := range s.words {
			total += 1 / float64(i+1)
			s.cum[i] = total
		}
	}
	return s, nil
}

// Workload returns the workload of a Txn-mode source, nil in other modes.
func (s *Source) Workload() Events { return s.app }

// Name returns the source's name.
func (s *Source) Name() string { return s.name }

// Resumable returns true: records depend only on the seed and position.
func (s *Source) Resumable() bool { return true }

// Open starts the stream after position after; with a Rate, the pace is
// measured from now.
func (s *Source) Open(_ context.Context, after uint64) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch s.state {
	case 1:
		return fmt.Errorf("%s: already open", s.name)
	case 2:
		return fmt.Errorf("%s: open: %w", s.name, connectors.ErrClosed)
	}
	s.state = 1
	s.next = after + 1
	s.opened, s.after = time.Now(), after
	return nil
}

// Read generates up to len(buf) records: all of them without a Rate, those
// due by now with one, waiting for the next when none is due.
func (s *Source) Read(ctx context.Context, buf []connectors.Message) (int, error) {
	s.mu.Lock()
	state, opened := s.state, s.opened
	s.mu.Unlock()
	switch state {
	case 0:
		return 0, fmt.Errorf("%s: read: %w", s.name, connectors.ErrNotOpen)
	case 2:
		return 0, fmt.Errorf("%s: read: %w", s.name, connectors.ErrClosed)
	}
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	n := uint64(len(buf))
	if s.cfg.Count > 0 {
		if s.next > s.cfg.Count {
			return 0, io.EOF
		}
		n = min(n, s.cfg.Count-s.next+1)
	}
	if n == 0 {
		return 0, nil
	}
	if s.cfg.Rate > 0 {
		due, err := s.due(ctx, opened)
		if err != nil {
			return 0, err
		}
		n = min(n, due)
	}
	s.fill(buf[:n])
	s.emitted.Add(n)
	return int(n), nil
}

// dueBy returns how many records are due elapsed after Open: record k
// (counting from 0 since Open) is due at k/Rate seconds.
func (s *Source) dueBy(elapsed time.Duration) uint64 {
	return uint64(elapsed.Seconds()*s.cfg.Rate) + 1
}

// due waits until at least one record is due and returns how many are.
func (s *Source) due(ctx context.Context, opened time.Time) (uint64, error) {
	for {
		elapsed := time.Since(opened)
		emitted := s.emitted.Load()
		if due := s.dueBy(elapsed); due > emitted {
			return due - emitted, nil
		}
		at := time.Duration(float64(emitted) / s.cfg.Rate * float64(time.Second))
		wait := max(at-elapsed, time.Microsecond)
		if s.timer == nil {
			s.timer = time.NewTimer(wait)
		} else {
			s.timer.Reset(wait)
		}
		select {
		case <-s.timer.C:
		case <-ctx.Done():
			s.timer.Stop()
			return 0, ctx.Err()
		case <-s.done:
			s.timer.Stop()
			return 0, fmt.Errorf("%s: read: %w", s.name, connectors.ErrClosed)
		}
	}
}

// Backlog returns the records due by the rate's schedule and not yet
// read (at most those left of Count); -1 for a source without a Rate,
// whose records are made as fast as they are read, or one not open.
func (s *Source) Backlog() int64 {
	if s.cfg.Rate <= 0 {
		return -1
	}
	s.mu.Lock()
	state, opened, after := s.state, s.opened, s.after
	s.mu.Unlock()
	if state != 1 {
		return -1
	}
	emitted := s.emitted.Load()
	due := s.dueBy(time.Since(opened))
	if s.cfg.Count > 0 {
		due = min(due, s.cfg.Count-min(after, s.cfg.Count))
	}
	if due <= emitted {
		return 0
	}
	return int64(due - emitted)
}

// fill generates the records of the next len(buf) positions. Their bytes
// share one allocation, which no later call writes to.
func (s *Source) fill(buf []connectors.Message) {
	if s.cfg.Mode == Txn {
		s.fillTxn(buf)
		return
	}
	var slab []byte
	if s.cfg.Mode == Bytes {
		slab = make([]byte, 0, len(buf)*(s.cfg.Size+8))
	} else {
		slab = make([]byte, 0, len(buf)*48)
	}
	// cut returns slab[from:] as a slice that later appends cannot reach.
	cut := func(from int) []byte { return slab[from:len(slab):len(slab)] }
	var rng rand.PCG
	for i := range buf {
		pos := s.next
		s.next++
		rec := abi.Record{Time: s.start + int64(pos-1)*s.step}
		if s.cfg.Keys > 0 {
			from := len(slab)
			slab = strconv.AppendUint(slab, pos%s.cfg.Keys, 10)
			rec.Key = cut(from)
		}
		from := len(slab)
		switch s.cfg.Mode {
		case Sequence:
			slab = strconv.AppendUint(slab, pos, 10)
		case Bytes:
			rng.Seed(s.cfg.Seed, pos)
			slab = appendRandom(slab, &rng, s.cfg.Size)
		default:
			rng.Seed(s.cfg.Seed, pos)
			slab = s.appendSentence(slab, &rng)
		}
		rec.Value = cut(from)
		buf[i] = connectors.Message{Record: rec, Position: pos}
	}
}

// fillTxn is fill for Txn mode: the record at position p is the workload's
// event p-1, so position 1 carries event 0. The records are appended one
// after the other into slabs sized from the largest record seen so far.
func (s *Source) fillTxn(buf []connectors.Message) {
	per := s.txnSize
	var rest []byte
	for i := range buf {
		if cap(rest) < per {
			rest = make([]byte, 0, (len(buf)-i)*per)
		}
		pos := s.next
		s.next++
		k, v := s.app.Event(pos-1, rest)
		if n := len(k) + len(v); n > per {
			per = n + n/4
		}
		rest = v[len(v):]
		rec := abi.Record{Time: s.start + int64(pos-1)*s.step, Key: k, Value: v[:len(v):len(v)]}
		buf[i] = connectors.Message{Record: rec, Position: pos}
	}
	s.txnSize = per
}

// appendRandom appends n pseudo-random bytes.
func appendRandom(dst []byte, rng *rand.PCG, n int) []byte {
	var w [8]byte
	for n >= 8 {
		dst = binary.LittleEndian.AppendUint64(dst, rng.Uint64())
		n -= 8
	}
	if n > 0 {
		binary.LittleEndian.PutUint64(w[:], rng.Uint64())
		dst = append(dst, w[:n]...)
	}
	return dst
}

// appendSentence appends 3 to 12 words separated by spaces.
func (s *Source) appendSentence(dst []byte, rng *rand.PCG) []byte {
	n := 3 + rng.Uint64()%10
	total := s.cum[len(s.cum)-1]
	for i := range n {
		if i > 0 {
			dst = append(dst, ' ')
		}
		u := float64(rng.Uint64()>>11) / (1 << 53) * total
		w := sort.SearchFloat64s(s.cum, u)
		if w == len(s.cum) { // u rounded up to total
			w--
		}
		dst = append(dst, s.words[w]...)
	}
	return dst
}

// Ack does nothing: the generator keeps no state to release.
func (s *Source) Ack(context.Context, uint64) error { return nil }

// Close ends the stream. It may be called while Read waits for the next
// record, which then returns connectors.ErrClosed.
func (s *Source) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.state != 2 {
		s.state = 2
		close(s.done)
	}
	return nil
}
