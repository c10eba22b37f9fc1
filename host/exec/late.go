package exec

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strconv"

	"github.com/sluicehq/sluice/abi"
	"github.com/sluicehq/sluice/connectors"
)

// HeaderLate is the header that says why a record sent to the late
// destination came too late.
const HeaderLate = "Sluice-Late"

// HeaderFiring marks the results of a window that fired early (before its
// end, the window going on) or late (again, for records that came within
// the allowed lateness): "early" or "late". A result of a window's one
// on-time firing has none.
const HeaderFiring = "Sluice-Firing"

// lateLetter is a record that came after its window closed.
type lateLetter struct {
	rec    abi.Record
	o      origin
	stage  int
	reason string
}

// marks sets n.wms to the watermark of node n, which reads the sources up,
// at each of its input records recs (by their batch inputs idx), and
// returns its watermark at the batch's end.
func (j *Job) marks(b *batch, n *node, up []int, idx []int32) int64 {
	wms, end := j.clock.marks(b, up, n.batchWMs)
	n.batchWMs = wms
	n.wms = n.wms[:0]
	for _, i := range idx {
		if int(i) < len(b.in) {
			n.wms = append(n.wms, wms[i])
		} else {
			n.wms = append(n.wms, b.made[b.prov[i].pos].wm)
		}
	}
	return end
}

// where names where an input came from: its source and position, or,
// for an input made at a batch boundary, no source and its id.
func (j *Job) where(b *batch, o origin) (source, position string) {
	if o.src < 0 {
		return "", b.made[o.pos].id
	}
	return j.cfg.Sources[o.src].Name, strconv.FormatUint(o.pos, 10)
}

// describe names an input in messages.
func (j *Job) describe(b *batch, o origin) string {
	src, pos := j.where(b, o)
	if src == "" {
		return fmt.Sprintf("record %s (made by a window)", pos)
	}
	return fmt.Sprintf("record %s of source %q", pos, src)
}

// lateLetters makes the batch's late records, their bytes copied, with
// the reason and where they came from in headers, and counts them.
func (j *Job) lateLetters(b *batch) []connectors.Out {
	if len(b.late) == 0 {
		return nil
	}
	slices.SortStableFunc(b.late, func(x, y lateLetter) int {
		return cmp.Or(cmp.Compare(x.o.src, y.o.src), cmp.Compare(x.o.pos, y.o.pos))
	})
	outs := make([]connectors.Out, 0, len(b.late))
	for i, l := range b.late {
		r := copyRecord(l.rec)
		r.Origin, r.Input = 0, 0
		n := j.nodes[l.stage]
		n.m.late.Inc()
		n.late++
		src, pos := j.where(b, l.o)
		r.Headers = append(r.Headers,
			abi.Header{Name: []byte(HeaderLate), Value: []byte(l.reason)},
			abi.Header{Name: []byte(HeaderOperator), Value: []byte(n.op.Name)},
			abi.Header{Name: []byte(HeaderSource), Value: []byte(src)},
			abi.Header{Name: []byte(HeaderPosition), Value: []byte(pos)},
		)
		outs = append(outs, connectors.Out{Record: r, ID: j.cfg.Name + "/late/" + src + "/" + pos + "/" + strconv.Itoa(i)})
	}
	return outs
}

// writeLate writes and flushes late records.
func (j *Job) writeLate(ctx context.Context, outs []connectors.Out) error {
	if len(outs) == 0 {
		return nil
	}
	if j.cfg.Late == nil {
		return fmt.Errorf("exec: %d records came after their windows closed and the job has no late destination: %s", len(outs), header(outs[0].Record, HeaderLate))
	}
	if err := j.cfg.Late.Write(ctx, outs); err != nil {
		return fmt.Errorf("exec: late destination: %w", err)
	}
	if err := j.cfg.Late.Flush(ctx); err != nil {
		return fmt.Errorf("exec: late destination: flush: %w", err)
	}
	return nil
}
