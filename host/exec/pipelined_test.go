package exec

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/sluicehq/sluice/connectors"
	"github.com/sluicehq/sluice/host/plugin"
)

// gatedSink is a memSink whose first Flush waits until the test opens the
// gate, telling the test when it started waiting.
type gatedSink struct {
	memSink
	flushing chan struct{}
	gate     chan struct{}
	once     bool
}

func (s *gatedSink) Flush(ctx context.Context) error {
	if !s.once {
		s.once = true
		close(s.flushing)
		<-s.gate
	}
	return s.memSink.Flush(ctx)
}

// TestBatchesPipelined holds the first batch's sink flush and sees the
// next batch processed meanwhile; once the flush goes on, both batches
// are written and committed in order.
func TestBatchesPipelined(t *testing.T) {
	r := &liveRun{src: newChanSource(), dead: &memSink{}, done: make(chan error, 1)}
	sink := &gatedSink{flushing: make(chan struct{}), gate: make(chan struct{})}
	store := openStore(t, t.TempDir())
	defer store.Close()
	m := NewMetrics()
	job, err := New(context.Background(), Config{
		Name: "p", Sources: []Input{{Name: "in", Source: r.src}},
		Operators: []Operator{{Name: "up", Kind: plugin.KindMap, Plugin: load(t, "upper", plugin.KindMap, 0)}},
		Sinks:     []Output{{Name: "out", Sink: sink}}, DeadLetter: r.dead, Store: store, BatchSize: 2, Metrics: m,
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	r.cancel = cancel
	go func() { r.done <- job.Run(ctx) }()

	r.src.ch <- records("a", "b")
	<-sink.flushing // the first batch's flush waits
	r.src.ch <- records("c", "d")
	in := m.opIn.WithLabelValues("up")
	waitFor(t, func() bool { return testutil.ToFloat64(in) == 4 })
	if got := store.Positions()["in"]; got != 0 {
		t.Errorf("position %d committed while the first batch's flush waits", got)
	}
	close(sink.gate)
	waitFor(t, func() bool { return store.Positions()["in"] == 4 && r.src.ackedPos() == 4 })
	if err := r.stop(t); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, o := range sink.records() {
		got = append(got, string(o.Record.Value)+" "+o.ID)
	}
	want := []string{"A p/in/1/0", "B p/in/2/0", "C p/in/3/0", "D p/in/4/0"}
	if !slices.Equal(got, want) {
		t.Errorf("sink got %v, want %v", got, want)
	}
	var _ connectors.Sink = sink
}

// gatedWriteSink is a memSink whose first Write waits until the test
// opens the gate before it reads the records it was given.
type gatedWriteSink struct {
	memSink
	writing chan struct{}
	gate    chan struct{}
	once    bool
}

func (s *gatedWriteSink) Write(ctx context.Context, out []connectors.Out) error {
	if !s.once {
		s.once = true
		close(s.writing)
		<-s.gate
	}
	return s.memSink.Write(ctx, out)
}

// TestOutputsOutliveNextBatch holds the first batch's Write until the
// next batch has run through the operator: the records the sink then
// reads are still the first batch's, though the operator wrote the next
// batch's outputs meanwhile (its outputs are handed over uncopied).
func TestOutputsOutliveNextBatch(t *testing.T) {
	for _, workers := range []int{1, 2} {
		r := &liveRun{src: newChanSource(), dead: &memSink{}, done: make(chan error, 1)}
		sink := &gatedWriteSink{writing: make(chan struct{}), gate: make(chan struct{})}
		store := openStore(t, t.TempDir())
		m := NewMetrics()
		job, err := New(context.Background(), Config{
			Name: "p", Sources: []Input{{Name: "in", Source: r.src}},
			Operators: []Operator{{Name: "up", Kind: plugin.KindMap, Plugin: load(t, "upper", plugin.KindMap, 0), Parallelism: workers}},
			Sinks:     []Output{{Name: "out", Sink: sink}}, DeadLetter: r.dead, Store: store, BatchSize: 2 * minChunk, Metrics: m,
		})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		r.cancel = cancel
		go func() { r.done <- job.Run(ctx) }()

		var first, second []string
		for i := range 2 * minChunk {
			first = append(first, fmt.Sprintf("a%03d", i))
			second = append(second, fmt.Sprintf("b%03d", i))
		}
		r.src.ch <- records(first...)
		<-sink.writing // the first batch's Write waits
		r.src.ch <- records(second...)
		out := m.opOut.WithLabelValues("up")
		waitFor(t, func() bool { return testutil.ToFloat64(out) == float64(4*minChunk) })
		close(sink.gate)
		waitFor(t, func() bool { return store.Positions()["in"] == uint64(4*minChunk) })
		if err := r.stop(t); err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, o := range sink.records() {
			got = append(got, string(o.Record.Value))
		}
		want := slices.Concat(first, second)
		for i := range want {
			want[i] = strings.ToUpper(want[i])
		}
		if !slices.Equal(got, want) {
			t.Errorf("%d workers: sink got %v, want %v", workers, got, want)
		}
		store.Close()
	}
}

// startedSink is a memSink whose flushes are started (a
// connectors.FlushStarter) and end when the test says: flush i (from 0)
// ends with what is sent on results[i]. Its plain Flush waits the same
// way, so that an executor that flushed in place would stall.
type startedSink struct {
	memSink
	results []chan error
	started chan int // the outputs written when each flush started
	flushes int
}

func newStartedSink() *startedSink {
	s := &startedSink{started: make(chan int, 16)}
	for range 16 {
		s.results = append(s.results, make(chan error, 1))
	}
	return s
}

func (s *startedSink) StartFlush(context.Context) func() error {
	s.mu.Lock()
	s.started <- len(s.out)
	result := s.results[s.flushes]
	s.flushes++
	s.mu.Unlock()
	done := make(chan error, 1)
	go func() { done <- <-result }()
	return func() error { return <-done }
}

func (s *startedSink) Flush(ctx context.Context) error {
	return s.StartFlush(ctx)()
}

func (s *startedSink) written() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.out)
}

// TestStartedFlushesOverlapLaterBatches holds the first batch's started
// flush and sees the next batches written meanwhile, nothing committed
// until it ends; then a flush that fails fails the job at once, with no
// further input, and no batch after it is committed.
func TestStartedFlushesOverlapLaterBatches(t *testing.T) {
	r := &liveRun{src: newChanSource(), dead: &memSink{}, done: make(chan error, 1)}
	sink := newStartedSink()
	store := openStore(t, t.TempDir())
	defer store.Close()
	job, err := New(context.Background(), Config{
		Name: "p", Sources: []Input{{Name: "in", Source: r.src}},
		Operators: []Operator{{Name: "up", Kind: plugin.KindMap, Plugin: load(t, "upper", plugin.KindMap, 0)}},
		Sinks:     []Output{{Name: "out", Sink: sink}}, DeadLetter: r.dead, Store: store, BatchSize: 2,
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	r.cancel = cancel
	go func() { r.done <- job.Run(ctx) }()

	r.src.ch <- records("a", "b")
	if n := <-sink.started; n != 2 {
		t.Errorf("the first flush started after %d outputs, want 2", n)
	}
	r.src.ch <- records("c", "d")
	r.src.ch <- records("e", "f")
	waitFor(t, func() bool { return sink.written() == 6 })
	if got := store.Positions()["in"]; got != 0 {
		t.Errorf("position %d committed while the first batch's flush is under way", got)
	}
	sink.results[0] <- nil
	sink.results[1] <- nil
	waitFor(t, func() bool { return store.Positions()["in"] == 4 && r.src.ackedPos() == 4 })

	failed := errors.New("server gone")
	sink.results[2] <- failed // the third batch's
	// No more input: the executor, waiting for some, learns of the
	// failure all the same.
	select {
	case err = <-r.done:
	case <-time.After(30 * time.Second):
		t.Fatal("Run still running 30s after a flush failed")
	}
	if !errors.Is(err, failed) {
		t.Fatalf("Run returned %v, want the failed flush", err)
	}
	if got := store.Positions()["in"]; got != 4 {
		t.Errorf("position %d committed, want 4: nothing after the failed flush", got)
	}
	var got []string
	for _, o := range sink.records() {
		got = append(got, string(o.Record.Value))
	}
	if want := []string{"A", "B", "C", "D", "E", "F"}; !slices.Equal(got[:min(len(got), 6)], want) {
		t.Errorf("sink got %v, want %v first", got, want)
	}
	var _ connectors.FlushStarter = sink
}
