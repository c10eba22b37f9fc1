package sluice

import (
	"encoding/binary"
	"fmt"

	"github.com/sluicehq/sluice/abi"
)

// The guest core of window functions (ABI.md section 13): what the exports
// sluice_agg_add, sluice_agg_merge, sluice_agg_fire and sluice_window_fire
// call. Like process, each ends the lifetime of its input region without
// a defer; a handler that panics traps the call.

// notKind logs why export cannot run: the plugin registered no handler of
// kind k, and returns StatusError.
func (g *guest) notKind(export string, k kind) int32 {
	if g.h.kind == kindNone {
		g.host.Log(abi.LogError, noHandler)
	} else {
		g.host.Log(abi.LogError, fmt.Sprintf("%s called, but this plugin registers its handler with sluice.%s, not sluice.%s: it serves %s operators",
			export, g.h.name, k, g.h.kind.operators()))
	}
	return abi.StatusError
}

// malformed logs that the input of export is malformed and returns
// StatusError.
func (g *guest) malformed(export string) int32 {
	g.host.Log(abi.LogError, export+": malformed input")
	return abi.StatusError
}

// beginOut starts a call's output batch.
func (g *guest) beginOut() {
	g.out = abi.AppendBatchHeader(g.out[:0], 0)
	g.outCount = 0
}

// endOut hands the call's remaining outputs to the host.
func (g *guest) endOut() int32 {
	if g.outCount > 0 {
		g.flush()
	}
	if cap(g.out) > maxKeptOut {
		g.out = make([]byte, 0, initialOut)
	}
	return abi.StatusOK
}

// count reads a u32 count at batch[off:], and returns -1 for the offset
// when there is none.
func count(batch []byte, off int) (uint32, int) {
	if off < 0 || len(batch)-off < 4 {
		return 0, -1
	}
	return binary.LittleEndian.Uint32(batch[off:]), off + 4
}

// emitAcc emits accumulator acc for group (or pair) origin.
func (g *guest) emitAcc(export string, origin uint32, acc []byte) bool {
	if len(acc) == 0 {
		g.host.Log(abi.LogError, fmt.Sprintf("%s: the aggregate returned an empty accumulator for group %d: an accumulator takes at least one byte", export, origin))
		return false
	}
	g.accRec.Value = acc
	g.out = appendRecord(g.out, origin, &g.accRec)
	g.accRec.Value = nil
	g.outCount++
	if len(g.out) >= flushSize {
		g.flush()
	}
	return true
}

// aggAdd implements sluice_agg_add.
func (g *guest) aggAdd(batch []byte) int32 {
	g.h.sealed = true
	status := g.aggAddBatch(batch)
	g.consumed()
	return status
}

func (g *guest) aggAddBatch(batch []byte) int32 {
	const export = abi.ExportAggAdd
	if g.h.kind != kindAggregate {
		return g.notKind(export, kindAggregate)
	}
	a := g.h.aggregate
	groups, off := count(batch, 0)
	g.beginOut()
	r := &g.rec
	member := uint32(0)
	for gi := uint32(0); gi < groups; gi++ {
		if off = decodeRecord(batch, off, r, &g.hdrs); off < 0 {
			return g.malformed(export)
		}
		acc := r.Value
		var n uint32
		if n, off = count(batch, off); off < 0 {
			return g.malformed(export)
		}
		for range n {
			if off = decodeRecord(batch, off, r, &g.hdrs); off < 0 {
				return g.malformed(export)
			}
			next, err := a.Add(acc, *r)
			switch {
			case err != nil:
				g.host.Reject(member, err.Error())
			case len(next) == 0:
				g.host.Log(abi.LogError, fmt.Sprintf("%s: Add returned an empty accumulator for record %d: an accumulator takes at least one byte", export, member))
				return abi.StatusError
			default:
				acc = next
			}
			member++
		}
		if len(acc) == 0 {
			// Every record rejected, and no accumulator before: still none.
			g.out = appendRecord(g.out, gi, &g.accRec)
			g.outCount++
		} else if !g.emitAcc(export, gi, acc) {
			return abi.StatusError
		}
	}
	*r = Record{}
	if off != len(batch) {
		return g.malformed(export)
	}
	return g.endOut()
}

// aggMerge implements sluice_agg_merge.
func (g *guest) aggMerge(batch []byte) int32 {
	g.h.sealed = true
	status := g.aggMergeBatch(batch)
	g.consumed()
	return status
}

func (g *guest) aggMergeBatch(batch []byte) int32 {
	const export = abi.ExportAggMerge
	if g.h.kind != kindAggregate {
		return g.notKind(export, kindAggregate)
	}
	a := g.h.aggregate
	n, off := count(batch, 0)
	if n%2 != 0 {
		return g.malformed(export)
	}
	g.beginOut()
	var x, y Record
	for j := uint32(0); j < n/2; j++ {
		if off = decodeRecord(batch, off, &x, &g.hdrs); off < 0 {
			return g.malformed(export)
		}
		if off = decodeRecord(batch, off, &y, &g.hdrs); off < 0 {
			return g.malformed(export)
		}
		acc, err := a.Merge(x.Value, y.Value)
		if err != nil {
			g.host.Log(abi.LogError, fmt.Sprintf("%s: pair %d: %v", export, j, err))
			return abi.StatusError
		}
		if !g.emitAcc(export, j, acc) {
			return abi.StatusError
		}
	}
	if off != len(batch) {
		return g.malformed(export)
	}
	return g.endOut()
}

// window reads the window of a firing from r's headers.
func window(r *Record) (Window, bool) {
	s, ok1 := r.Header(abi.HeaderWindowStart)
	e, ok2 := r.Header(abi.HeaderWindowEnd)
	f, ok3 := r.Header(abi.HeaderFiring)
	start, ok4 := abi.WindowTime(s)
	end, ok5 := abi.WindowTime(e)
	firing, ok6 := parseFiring(f)
	return Window{Start: start, End: end, Firing: firing}, ok1 && ok2 && ok3 && ok4 && ok5 && ok6
}

// aggFire implements sluice_agg_fire.
func (g *guest) aggFire(batch []byte) int32 {
	g.h.sealed = true
	status := g.aggFireBatch(batch)
	g.consumed()
	return status
}

func (g *guest) aggFireBatch(batch []byte) int32 {
	const export = abi.ExportAggFire
	if g.h.kind != kindAggregate {
		return g.notKind(export, kindAggregate)
	}
	a := g.h.aggregate
	n, off := count(batch, 0)
	g.beginOut()
	r := &g.rec
	for j := uint32(0); j < n; j++ {
		if off = decodeRecord(batch, off, r, &g.hdrs); off < 0 {
			return g.malformed(export)
		}
		w, ok := window(r)
		if !ok {
			g.host.Log(abi.LogError, fmt.Sprintf("%s: firing %d lacks the window headers", export, j))
			return abi.StatusError
		}
		g.emitter.origin = j
		mark, markCount := len(g.out), g.outCount
		if err := a.Fire(r.Key, w, r.Value, &g.emitter); err != nil {
			g.out, g.outCount = g.out[:mark], markCount
			g.host.Reject(j, err.Error())
		} else if len(g.out) >= flushSize {
			g.flush()
		}
	}
	*r = Record{}
	if off != len(batch) {
		return g.malformed(export)
	}
	return g.endOut()
}

// windowFire implements sluice_window_fire.
func (g *guest) windowFire(batch []byte) int32 {
	g.h.sealed = true
	status := g.windowFireBatch(batch)
	g.consumed()
	return status
}

func (g *guest) windowFireBatch(batch []byte) int32 {
	const export = abi.ExportWindowFire
	if g.h.kind != kindWindow {
		return g.notKind(export, kindWindow)
	}
	groups, off := count(batch, 0)
	g.beginOut()
	var head Record
	member := uint32(0)
	for gi := uint32(0); gi < groups; gi++ {
		if off = decodeRecord(batch, off, &head, &g.hdrs); off < 0 {
			return g.malformed(export)
		}
		w, ok := window(&head)
		if !ok {
			g.host.Log(abi.LogError, fmt.Sprintf("%s: window %d lacks the window headers", export, gi))
			return abi.StatusError
		}
		var n uint32
		if n, off = count(batch, off); off < 0 || uint64(n)*abi.MinEncodedRecordSize > uint64(len(batch)-off) {
			return g.malformed(export)
		}
		// Each member keeps headers of its own: decodeRecord reuses the
		// slice it is given, so each gets the part of mhdrs after the
		// last one's.
		g.members, g.mhdrs = g.members[:0], g.mhdrs[:0]
		for range n {
			g.members = append(g.members, Record{})
			m := &g.members[len(g.members)-1]
			hs := g.mhdrs[len(g.mhdrs):]
			if off = decodeRecord(batch, off, m, &hs); off < 0 {
				return g.malformed(export)
			}
			switch {
			case len(m.Headers) == 0:
			case cap(hs) == cap(g.mhdrs)-len(g.mhdrs): // decoded in place
				g.mhdrs = g.mhdrs[:len(g.mhdrs)+len(hs)]
			default: // grown: the next members' headers follow in the new array
				g.mhdrs = hs
			}
		}
		g.emitter.origin = gi
		mark, markCount := len(g.out), g.outCount
		if err := g.h.windowFn(head.Key, w, g.members, &g.emitter); err != nil {
			g.out, g.outCount = g.out[:mark], markCount
			for k := range n {
				g.host.Reject(member+k, err.Error())
			}
		} else if len(g.out) >= flushSize {
			g.flush()
		}
		member += n
	}
	clear(g.members)
	g.members = g.members[:0]
	clear(g.mhdrs)
	if off != len(batch) {
		return g.malformed(export)
	}
	return g.endOut()
}
