package sluice

import (
	"fmt"

	"github.com/sluicehq/sluice/abi"
)

// The guest core of join functions (ABI.md section 14): what the export
// sluice_join calls. Like process, it ends the lifetime of its input
// region without a defer; a handler that panics traps the call.

// join implements sluice_join.
func (g *guest) join(batch []byte) int32 {
	g.h.sealed = true
	status := g.joinBatch(batch)
	g.consumed()
	return status
}

func (g *guest) joinBatch(batch []byte) int32 {
	const export = abi.ExportJoin
	if g.h.kind != kindJoin {
		return g.notKind(export, kindJoin)
	}
	pairs, off := count(batch, 0)
	g.beginOut()
	var head Record
	var rec [2]Record
	var hdrs [2][]Header
	for j := uint32(0); j < pairs; j++ {
		if off = decodeRecord(batch, off, &head, &g.hdrs); off < 0 {
			return g.malformed(export)
		}
		var w *Window
		if len(head.Headers) > 0 {
			win, ok := window(&head)
			if !ok {
				g.host.Log(abi.LogError, fmt.Sprintf("%s: pair %d has headers that are not a window's", export, j))
				return abi.StatusError
			}
			w = &win
		}
		if len(head.Value) != 1 || head.Value[0] == 0 || head.Value[0]&^(abi.JoinLeft|abi.JoinRight) != 0 {
			g.host.Log(abi.LogError, fmt.Sprintf("%s: pair %d: the head's value is not one byte of sides", export, j))
			return abi.StatusError
		}
		sides := head.Value[0]
		var n uint32
		if n, off = count(batch, off); off < 0 {
			return g.malformed(export)
		}
		want := uint32(0)
		var left, right *Record
		if sides&abi.JoinLeft != 0 {
			left = &rec[want]
			want++
		}
		if sides&abi.JoinRight != 0 {
			right = &rec[want]
			want++
		}
		if n != want {
			g.host.Log(abi.LogError, fmt.Sprintf("%s: pair %d has %d records, and its head says %d", export, j, n, want))
			return abi.StatusError
		}
		for k := range n {
			if off = decodeRecord(batch, off, &rec[k], &hdrs[k]); off < 0 {
				return g.malformed(export)
			}
		}
		g.emitter.origin = j
		mark, markCount := len(g.out), g.outCount
		if err := g.h.joinFn(head.Key, w, left, right, &g.emitter); err != nil {
			g.out, g.outCount = g.out[:mark], markCount
			g.host.Reject(j, err.Error())
		} else if len(g.out) >= flushSize {
			g.flush()
		}
	}
	head, rec = Record{}, [2]Record{}
	clear(hdrs[0])
	clear(hdrs[1])
	if off != len(batch) {
		return g.malformed(export)
	}
	return g.endOut()
}
