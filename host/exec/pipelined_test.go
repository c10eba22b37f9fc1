package exec

import (
	"context"
	"slices"
	"testing"

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
