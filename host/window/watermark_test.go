package window

import (
	"errors"
	"testing"
	"time"
)

func TestGenerator(t *testing.T) {
	g := WatermarkStrategy{Kind: BoundedOutOfOrder, Bound: 10, Idle: 100}.NewGenerator(0)
	if wm := g.Watermark(); wm != MinWatermark {
		t.Fatalf("watermark before any record = %d", wm)
	}
	g.Observe(50, 1)
	g.Observe(40, 2) // out of order: the maximum holds
	if wm := g.Watermark(); wm != 50-10-1 {
		t.Fatalf("watermark = %d, want 39", wm)
	}
	if g.Idle(101) || !g.Idle(102) {
		t.Fatalf("idle at 101: %t, at 102: %t; want false, true", g.Idle(101), g.Idle(102))
	}
	b, err := g.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	h := WatermarkStrategy{Kind: BoundedOutOfOrder, Bound: 10, Idle: 100}.NewGenerator(500)
	if err := h.UnmarshalBinary(b); err != nil {
		t.Fatal(err)
	}
	if h.Watermark() != 39 || !h.Idle(102) {
		t.Fatalf("restored generator: watermark %d, idle %t", h.Watermark(), h.Idle(102))
	}
	if err := h.UnmarshalBinary(b[:5]); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("UnmarshalBinary of a short state = %v, want ErrCorrupt", err)
	}
	m := WatermarkStrategy{}.NewGenerator(0)
	m.Observe(7, 0)
	if m.Watermark() != 6 {
		t.Fatalf("monotonous watermark = %d, want 6", m.Watermark())
	}
}

func TestMin(t *testing.T) {
	s := WatermarkStrategy{Kind: Monotonous, Idle: 10}
	a, b, c := s.NewGenerator(0), s.NewGenerator(0), WatermarkStrategy{}.NewGenerator(0)
	a.Observe(100, 0)
	b.Observe(50, 5)
	c.Observe(70, 0)
	if got := Min(5, a, b, c); got.Watermark != 49 || got.Holding != 1 || got.AllIdle {
		t.Fatalf("Min = %+v, want 49 held by input 1", got)
	}
	// At 12 a is idle (its last record at 0), b is not, c never is.
	if got := Min(12, a, b); got.Watermark != 49 || got.Holding != 1 {
		t.Fatalf("Min with a idle = %+v, want 49 held by input 1", got)
	}
	if got := Min(20, a, b); !got.AllIdle || got.Watermark != 99 || got.Holding != 0 {
		t.Fatalf("Min with all idle = %+v, want the maximum 99 of input 0", got)
	}
	if got := Min(0); got.Watermark != MinWatermark || got.Holding != -1 {
		t.Fatalf("Min of nothing = %+v", got)
	}
}

func TestWatermarkStrategyValidate(t *testing.T) {
	for _, c := range []struct {
		s   WatermarkStrategy
		key string
	}{
		{WatermarkStrategy{Kind: Monotonous, Bound: time.Second}, "watermark.bound"},
		{WatermarkStrategy{Kind: BoundedOutOfOrder, Bound: -1}, "watermark.bound"},
		{WatermarkStrategy{Kind: 5}, "watermark.kind"},
		{WatermarkStrategy{Idle: -1}, "watermark.idle"},
	} {
		var se *SpecError
		if err := c.s.Validate(); !errors.As(err, &se) || se.Key != c.key {
			t.Errorf("Validate(%+v) = %v, want a *SpecError for %s", c.s, err, c.key)
		}
	}
	if err := (WatermarkStrategy{Kind: BoundedOutOfOrder, Bound: time.Second, Idle: time.Minute}).Validate(); err != nil {
		t.Errorf("Validate of a good strategy: %v", err)
	}
}
