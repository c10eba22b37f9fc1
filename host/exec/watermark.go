package exec

import (
	"fmt"
	"math"
	"time"

	"github.com/sluicehq/sluice/host/api/schema"

	"github.com/sluicehq/sluice/host/window"
)

// Event time.
//
// Each source has a watermark generator (window.Generator) that observes
// the event time of every record it delivers, in the order delivered. The
// executor records, for each record of a batch, its source's watermark
// after it, so that an operator's watermark is known at every record: the
// minimum over the sources it reads, directly or through other operators,
// of their watermarks there (sources idle for their idle time left out).
// A windowed stage judges each record against the watermark at that
// record, not at the batch's end, so what is late and what a window holds
// when it fires depend on the order of the records only, not on where
// batches are cut: a replay after a crash, cut elsewhere, decides the
// same. The generators' states are committed with each batch
// (exec/watermark/<source>), so a restart resumes with the same
// watermarks and the same windows open.

// watermarkMeta is the name under which a source's watermark generator is
// committed with the state.
func watermarkMeta(source string) string { return "exec/watermark/" + source }

// clock is the job's event time: a watermark generator per source.
type clock struct {
	gens []*window.Generator
	// start is each source's watermark before the batch in hand.
	start []int64
	// idle is whether each source was idle at the batch's processing time
	// (had nothing in the batch and nothing for its idle time before).
	idle []bool
}

// newClock makes the sources' generators, restored from what the store
// committed.
func newClock(j *Job, now int64) (*clock, error) {
	c := &clock{start: make([]int64, len(j.cfg.Sources)), idle: make([]bool, len(j.cfg.Sources))}
	for _, in := range j.cfg.Sources {
		s := window.WatermarkStrategy{}
		if in.Watermark != nil {
			s = *in.Watermark
		}
		g := s.NewGenerator(now)
		if b, ok := j.cfg.Store.Meta(watermarkMeta(in.Name)); ok {
			if err := g.UnmarshalBinary(b); err != nil {
				return nil, fmt.Errorf("exec: source %q: %w", in.Name, err)
			}
		}
		c.gens = append(c.gens, g)
	}
	return c, nil
}

// begin marks the start of a batch at processing time now.
func (c *clock) begin(b *batch, now int64) {
	b.now = now
	b.after = b.after[:0]
	for s, g := range c.gens {
		c.start[s] = g.Watermark()
	}
}

// observe notes a record of source src added to the batch.
func (c *clock) observe(b *batch, src int, t int64) {
	g := c.gens[src]
	g.Observe(t, b.now)
	b.after = append(b.after, g.Watermark())
}

// end marks the batch complete: which sources are idle, and the
// generators' states to commit with it.
func (c *clock) end(j *Job, b *batch) {
	for s, g := range c.gens {
		c.idle[s] = !b.touched[s] && g.Idle(b.now)
		if v, err := g.MarshalBinary(); err == nil {
			j.cfg.Store.SetMeta(watermarkMeta(j.cfg.Sources[s].Name), v)
		}
		if wm := g.Watermark(); wm != window.MinWatermark {
			j.m.watermarkLag.WithLabelValues(j.cfg.Sources[s].Name).Set(float64(b.now-wm) / 1e9)
		}
	}
}

// status returns the sources' event time at processing time now.
func (c *clock) status(j *Job, now int64) []schema.SourceStatus {
	ss := make([]schema.SourceStatus, len(c.gens))
	for s, g := range c.gens {
		ss[s] = schema.SourceStatus{Name: j.cfg.Sources[s].Name, Idle: c.idle[s]}
		if wm := g.Watermark(); wm != window.MinWatermark {
			ss[s].Watermark = wmTime(wm)
			ss[s].LagSeconds = float64(now-wm) / 1e9
		}
	}
	return ss
}

// wmTime returns watermark wm as a time, nil for none (before any record)
// or the end of event time.
func wmTime(wm int64) *time.Time {
	if wm == window.MinWatermark || wm == math.MaxInt64 {
		return nil
	}
	t := time.Unix(0, wm).UTC()
	return &t
}

// marks returns, for node n, its watermark at each batch input (the
// watermark when that input arrived, before it) in wms (reused), and its
// watermark at the batch's end.
func (c *clock) marks(b *batch, up []int, wms []int64) ([]int64, int64) {
	cur := make([]int64, len(c.gens))
	copy(cur, c.start)
	wms = wms[:0]
	for i := range b.in {
		wms = append(wms, c.min(up, cur))
		cur[b.prov[i].src] = b.after[i]
	}
	return wms, c.min(up, cur)
}

// min returns the minimum of the watermarks cur of the sources up that are
// not idle; when all are idle, the largest of theirs (time goes on to what
// every source reached).
func (c *clock) min(up []int, cur []int64) int64 {
	wm, busy := int64(math.MaxInt64), false
	for _, s := range up {
		if !c.idle[s] {
			wm, busy = min(wm, cur[s]), true
		}
	}
	if busy {
		return wm
	}
	wm = window.MinWatermark
	for _, s := range up {
		wm = max(wm, cur[s])
	}
	return wm
}

// upstream returns, for each node, the sources it reads, directly or
// through other operators.
func upstream(nodes []*node, sources int) [][]int {
	ups := make([][]int, len(nodes))
	var visit func(i int) []int
	seen := make([]bool, len(nodes))
	visit = func(i int) []int {
		if seen[i] {
			return ups[i]
		}
		seen[i] = true
		set := make([]bool, sources)
		for _, r := range nodes[i].inputs {
			if r.op >= 0 {
				for _, s := range visit(r.op) {
					set[s] = true
				}
			} else {
				set[r.src] = true
			}
		}
		for s, ok := range set {
			if ok {
				ups[i] = append(ups[i], s)
			}
		}
		return ups[i]
	}
	for i := range nodes {
		visit(i)
	}
	return ups
}
