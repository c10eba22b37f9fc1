package window

import (
	"encoding/binary"
	"fmt"
	"math"
	"time"
)

// MinWatermark is the watermark of an input that has seen no record yet: it
// holds every event-time window open.
const MinWatermark = math.MinInt64

// WatermarkKind is the kind of a watermark generator.
type WatermarkKind uint8

// The watermark generators.
const (
	// Monotonous is for inputs whose event times never decrease: the
	// watermark is the largest time seen minus one (Flink's
	// forMonotonousTimestamps).
	Monotonous WatermarkKind = iota
	// BoundedOutOfOrder is for inputs whose records arrive at most Bound
	// later than a record with a larger time: the watermark is the largest
	// time seen minus Bound minus one (Flink's forBoundedOutOfOrderness).
	BoundedOutOfOrder
)

// String returns the kind as the pipeline file spells it.
func (k WatermarkKind) String() string {
	switch k {
	case Monotonous:
		return "monotonous"
	case BoundedOutOfOrder:
		return "bounded"
	}
	return fmt.Sprintf("WatermarkKind(%d)", uint8(k))
}

// WatermarkStrategy says how an input's watermark follows the event times
// of its records.
type WatermarkStrategy struct {
	Kind WatermarkKind
	// Bound is the out-of-orderness a BoundedOutOfOrder generator allows.
	Bound time.Duration
	// Idle, when positive, marks an input idle once it has had no record
	// for that long in processing time: Min leaves it out, so that a quiet
	// input does not hold event time back.
	Idle time.Duration
}

// Validate reports a strategy that cannot work, as a *SpecError naming the
// pipeline key at fault.
func (s WatermarkStrategy) Validate() error {
	switch s.Kind {
	case Monotonous:
		if s.Bound != 0 {
			return &SpecError{Key: "watermark.bound", Reason: "a monotonous watermark has no bound (use kind bounded)"}
		}
	case BoundedOutOfOrder:
		if s.Bound < 0 {
			return &SpecError{Key: "watermark.bound", Reason: fmt.Sprintf("%v is negative", s.Bound)}
		}
	default:
		return &SpecError{Key: "watermark.kind", Reason: fmt.Sprintf("unknown kind %d (monotonous or bounded)", s.Kind)}
	}
	if s.Idle < 0 {
		return &SpecError{Key: "watermark.idle", Reason: fmt.Sprintf("%v is negative", s.Idle)}
	}
	return nil
}

// Generator follows the watermark of one input: it observes the event
// times of the input's records and the processing time at which they
// arrive. Its state is small and serialisable (MarshalBinary), so that it
// is committed with the state and source positions and a restart resumes
// with the same watermark. A Generator is not safe for concurrent use.
type Generator struct {
	strategy WatermarkStrategy
	max      int64 // the largest event time seen
	seen     bool  // whether a record was seen
	last     int64 // processing time of the last record, or of the start
}

// NewGenerator returns a generator for an input that starts at processing
// time now with no record seen.
func (s WatermarkStrategy) NewGenerator(now int64) *Generator {
	return &Generator{strategy: s, max: math.MinInt64, last: now}
}

// Observe records a record of event time t arriving at processing time now.
func (g *Generator) Observe(t, now int64) {
	if !g.seen || t > g.max {
		g.max = t
	}
	g.seen = true
	if now > g.last {
		g.last = now
	}
}

// Watermark returns the input's watermark: no record with a time at or
// before it is expected any more. It is MinWatermark before any record.
func (g *Generator) Watermark() int64 {
	if !g.seen {
		return MinWatermark
	}
	bound := int64(0)
	if g.strategy.Kind == BoundedOutOfOrder {
		bound = int64(g.strategy.Bound)
	}
	if g.max < math.MinInt64+bound+1 {
		return MinWatermark
	}
	return g.max - bound - 1
}

// Idle reports whether the input has had no record for the strategy's Idle
// duration at processing time now. Without an Idle duration an input is
// never idle.
func (g *Generator) Idle(now int64) bool {
	return g.strategy.Idle > 0 && now-g.last >= int64(g.strategy.Idle)
}

// generatorStateVersion is the first byte of a marshalled Generator.
const generatorStateVersion = 1

// generatorStateSize is the length of a marshalled Generator.
const generatorStateSize = 1 + 1 + 8 + 8

// MarshalBinary returns the generator's state: the largest time seen and
// the processing time of the last record (18 bytes). The strategy is not
// part of it: it comes from the pipeline.
func (g *Generator) MarshalBinary() ([]byte, error) {
	b := make([]byte, 0, generatorStateSize)
	b = append(b, generatorStateVersion)
	if g.seen {
		b = append(b, 1)
	} else {
		b = append(b, 0)
	}
	b = binary.BigEndian.AppendUint64(b, uint64(g.max))
	return binary.BigEndian.AppendUint64(b, uint64(g.last)), nil
}

// UnmarshalBinary restores a state returned by MarshalBinary, keeping the
// generator's strategy.
func (g *Generator) UnmarshalBinary(b []byte) error {
	if len(b) != generatorStateSize || b[0] != generatorStateVersion || b[1] > 1 {
		return fmt.Errorf("window: watermark generator state %x: %w", b, ErrCorrupt)
	}
	g.seen = b[1] == 1
	g.max = int64(binary.BigEndian.Uint64(b[2:]))
	g.last = int64(binary.BigEndian.Uint64(b[10:]))
	return nil
}

// Combined is the watermark of an operator with several inputs.
type Combined struct {
	// Watermark is the minimum of the watermarks of the inputs that are
	// not idle; when every input is idle, the maximum of them, so that
	// time still advances to what every input has reached.
	Watermark int64
	// Holding is the index of the input whose watermark is Watermark (the
	// first such one), which holds event time back; -1 with no input.
	Holding int
	// AllIdle reports that every input is idle.
	AllIdle bool
}

// Min combines the watermarks of an operator's inputs at processing time
// now (Flink's rule: an operator's event time is the minimum over its
// inputs, idle inputs left out).
func Min(now int64, inputs ...*Generator) Combined {
	c := Combined{Watermark: MinWatermark, Holding: -1, AllIdle: len(inputs) > 0}
	for i, g := range inputs {
		if g.Idle(now) {
			continue
		}
		if wm := g.Watermark(); c.AllIdle || wm < c.Watermark {
			c.Watermark, c.Holding = wm, i
		}
		c.AllIdle = false
	}
	if !c.AllIdle {
		return c
	}
	for i, g := range inputs {
		if wm := g.Watermark(); c.Holding < 0 || wm > c.Watermark {
			c.Watermark, c.Holding = wm, i
		}
	}
	return c
}
