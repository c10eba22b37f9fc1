package plugin

import (
	"context"
	"errors"
	"log/slog"

	"github.com/sluicehq/sluice/abi"
)

// Join functions (ABI.md section 14): a join's sluice_join, which builds
// the results of the pairs of records the host's join matched.

// JoinPair is a pair of records a join matched, for Join. Left or Right
// is nil for an outer join's record that matched nothing; never both.
type JoinPair struct {
	Key []byte
	// Time is the time the pair's results take.
	Time int64
	// Window is the pair's window; nil for an interval join.
	Window      *Window
	Left, Right *abi.Record
}

// members returns the pair's records, left first, and the value of its
// head: which sides it has.
func (p *JoinPair) members() (rs [2]*abi.Record, n int, sides byte) {
	if p.Left != nil {
		rs[n], n, sides = p.Left, n+1, sides|abi.JoinLeft
	}
	if p.Right != nil {
		rs[n], n, sides = p.Right, n+1, sides|abi.JoinRight
	}
	return rs, n, sides
}

// Join runs sluice_join over pairs and appends the results the guest emits
// to out, each Origin the index of its pair and each Time its pair's. The
// pairs the guest rejects are appended to out.Rejects (Index the pair's),
// and their results dropped.
//
// A failed call (trap, timeout, host function error, error status) does
// not fail the pairs: its outputs and rejects are dropped and the pairs
// are run again one per call; a pair whose own call fails becomes a Reject
// whose *RecordError wraps the cause. An instance whose guest trapped is
// replaced before its next call.
//
// Join returns an error only when the operator cannot go on: ctx is done
// (out is then as it was), the instance or its plugin was closed, a fresh
// guest instance cannot be made, or the plugin is not a join.
func (i *Instance) Join(ctx context.Context, pairs []JoinPair, out *Output) error {
	if err := i.windowReady(ctx, KindJoin, abi.ExportJoin); err != nil {
		return err
	}
	if len(pairs) == 0 {
		return nil
	}
	m := out.mark()
	err := i.join(ctx, pairs, 0, out)
	if err == nil {
		return nil
	}
	out.truncate(m)
	if err := i.fatal(ctx, len(pairs), err); err != nil {
		return err
	}
	i.p.logger.LogAttrs(ctx, slog.LevelDebug, "plugin join call failed; running its pairs one at a time",
		slog.Int("pairs", len(pairs)), slog.Any("error", err))
	for j := range pairs {
		if err := i.ensure(ctx); err != nil {
			out.truncate(m)
			return err
		}
		mk := out.mark()
		err := i.join(ctx, pairs[j:j+1], j, out)
		if err == nil {
			continue
		}
		out.truncate(mk)
		if err := i.fatal(ctx, len(pairs), err); err != nil {
			out.truncate(m)
			return err
		}
		export := abi.ExportJoin
		var we *WindowError
		if errors.As(err, &we) {
			export, err = we.Export, we.Err
		}
		out.Rejects = append(out.Rejects, Reject{Index: j, Err: &RecordError{Plugin: i.p.name, Export: export, Index: j, Err: err}})
	}
	return nil
}

// join makes one call of sluice_join over pairs, the first of which is
// pair base of the caller's, and numbers its results and rejects from
// base.
func (i *Instance) join(ctx context.Context, pairs []JoinPair, base int, out *Output) error {
	n := abi.BatchHeaderSize
	for j := range pairs {
		rs, k, _ := pairs[j].members()
		// The head's value is one byte.
		n += headSize(pairs[j].Key, nil, pairs[j].Window) + 1 + abi.BatchHeaderSize
		for _, r := range rs[:k] {
			n += abi.EncodedSize(r)
		}
	}
	w := &i.win
	// The call's event: the first pair's first record.
	rs, _, _ := pairs[0].members()
	w.ev = *rs[0]
	cctx := i.beginWindow(ctx, abi.ExportJoin, domainJoin, out, len(pairs), len(pairs))
	defer i.c.end(ctx)
	ptr, buf, err := i.reserveInput(cctx, n)
	if err != nil {
		return i.windowError(abi.ExportAlloc, err)
	}
	inputs := i.p.ReadsInputs()
	b := abi.AppendBatchHeader(buf[:0], uint32(len(pairs)))
	member := uint32(0)
	for j := range pairs {
		p := &pairs[j]
		rs, k, sides := p.members()
		b = appendHead(b, uint32(j), p.Key, p.Time, []byte{sides}, p.Window)
		b = abi.AppendBatchHeader(b, uint32(k))
		for _, r := range rs[:k] {
			b = appendMember(b, r, member, inputs)
			member++
		}
	}
	m := out.mark()
	if err := i.callWindow(ctx, cctx, i.wf.join, abi.ExportJoin, ptr, b, n); err != nil {
		return err
	}
	if len(out.Rejects) > m.rejects {
		dropRejectedOutputs(out, m)
	}
	for k := m.records; k < len(out.Records); k++ {
		r := &out.Records[k]
		r.Time = pairs[r.Origin].Time
		r.Origin += uint32(base)
	}
	for k := m.rejects; k < len(out.Rejects); k++ {
		r := &out.Rejects[k]
		r.Index += base
		var re *RecordError
		if errors.As(r.Err, &re) {
			re.Index += base
		}
	}
	return nil
}
