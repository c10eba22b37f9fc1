package exec

import (
	"bytes"
	"context"
	"io"
	"sync"
	"time"

	"github.com/sluicehq/sluice/abi"
	"github.com/sluicehq/sluice/connectors"
)

// sliceSource is a finite, resumable source over records in memory;
// positions are 1-based indexes.
type sliceSource struct {
	recs  []abi.Record
	next  int
	chunk int // most records per Read; 0: len(buf)

	mu    sync.Mutex
	acked uint64
	// block makes Read wait for ctx after the records run out, like an
	// unbounded source, instead of returning io.EOF.
	block bool
}

func (s *sliceSource) Name() string { return "slice" }
func (s *sliceSource) Open(_ context.Context, after uint64) error {
	s.next = int(after)
	return nil
}
func (s *sliceSource) Read(ctx context.Context, buf []connectors.Message) (int, error) {
	if s.next >= len(s.recs) {
		if s.block {
			<-ctx.Done()
			return 0, ctx.Err()
		}
		return 0, io.EOF
	}
	n := len(buf)
	if s.chunk > 0 && s.chunk < n {
		n = s.chunk
	}
	i := 0
	for ; i < n && s.next < len(s.recs); i++ {
		buf[i] = connectors.Message{Record: s.recs[s.next], Position: uint64(s.next + 1)}
		s.next++
	}
	return i, nil
}
func (s *sliceSource) Ack(_ context.Context, pos uint64) error {
	s.mu.Lock()
	s.acked = pos
	s.mu.Unlock()
	return nil
}
func (s *sliceSource) Resumable() bool { return true }
func (s *sliceSource) Close() error    { return nil }

// memSink keeps copies of what it is written; flushed marks what Flush saw.
type memSink struct {
	mu      sync.Mutex
	out     []connectors.Out
	flushed int
	writes  []time.Time // when each Write came
}

func (s *memSink) Name() string { return "mem" }

// UsesIDs returns true, so that the tests see the ids the host derives.
func (s *memSink) UsesIDs() bool { return true }
func (s *memSink) Write(_ context.Context, out []connectors.Out) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.writes = append(s.writes, time.Now())
	for _, o := range out {
		r := o.Record
		c := abi.Record{Time: r.Time, Key: bytes.Clone(r.Key), Value: bytes.Clone(r.Value)}
		for _, h := range r.Headers {
			c.Headers = append(c.Headers, abi.Header{Name: bytes.Clone(h.Name), Value: bytes.Clone(h.Value)})
		}
		s.out = append(s.out, connectors.Out{Record: c, ID: o.ID})
	}
	return nil
}
func (s *memSink) Flush(context.Context) error {
	s.mu.Lock()
	s.flushed = len(s.out)
	s.mu.Unlock()
	return nil
}
func (s *memSink) Close() error { return nil }

func (s *memSink) records() []connectors.Out {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]connectors.Out(nil), s.out...)
}

// gap is the time d between two consecutive writes, the second at at.
type gap struct {
	at time.Time
	d  time.Duration
}

// gaps returns the times between consecutive writes.
func (s *memSink) gaps() []gap {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []gap
	for i := 1; i < len(s.writes); i++ {
		out = append(out, gap{at: s.writes[i], d: s.writes[i].Sub(s.writes[i-1])})
	}
	return out
}
