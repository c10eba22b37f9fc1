package sluice

import (
	"bytes"
	"encoding/binary"

	"github.com/sluicehq/sluice/abi"
	"github.com/sluicehq/sluice/sdk/go/sluice/internal/bridge"
)

// Buffer sizes of the guest core.
const (
	// flushSize is the output size past which the outputs gathered so far
	// are handed to the host before the next input record.
	flushSize = 1 << 20
	// initialOut is the starting capacity of the output buffer.
	initialOut = 64 << 10
	// maxKeptOut is the output buffer capacity kept between batches; a
	// larger buffer (from one record that emitted a lot) is let go.
	maxKeptOut = 8 * flushSize
	// initialScratch is the starting capacity of the State.Get buffer.
	initialScratch = 256
	// maxAlloc bounds one sluice_alloc request (1 GiB, far above any batch
	// the host sends); larger or negative requests return 0.
	maxAlloc = 1 << 30
)

// guest is the SDK's guest core: it owns the memory handed to the host, runs
// the registered handler over each input batch and encodes its outputs. The
// wasm exports call it in a WebAssembly build; sluicetest calls it with a
// fake host in a native build.
//
// Invariants: out always starts with a batch header and holds outCount
// encoded records after it; outputs are flushed only between two input
// records, so the outputs of the record in progress can always be
// discarded when its handler fails.
type guest struct {
	h    *handlers
	host bridge.Host

	// in is the region sluice_alloc hands out for the next configure or
	// process call; pending says it is handed out and not yet consumed.
	in      []byte
	pending bool
	// extra keeps alive regions handed out while in was pending.
	extra [][]byte

	out      []byte
	outCount uint32
	hdrs     []Header // decoded input headers, reused
	emitter  Emitter

	state   State
	tables  map[string]*State
	scratch []byte
}

func newGuest(h *handlers, host bridge.Host) *guest {
	g := &guest{h: h, host: host, out: make([]byte, 0, initialOut), scratch: make([]byte, initialScratch)}
	g.emitter.g = g
	g.state = State{g: g, table: abi.DefaultTable}
	return g
}

// alloc implements sluice_alloc: it returns size writable bytes that stay
// valid until the next configure or process call returns. A second request
// before that gets a fresh region, so regions handed out together never
// overlap. The result has a non-zero capacity even for size 0, so its
// address is never 0.
func (g *guest) alloc(size int32) []byte {
	if size < 0 || size > maxAlloc {
		return nil
	}
	if g.pending {
		b := make([]byte, size, max(size, 1))
		g.extra = append(g.extra, b)
		return b
	}
	if cap(g.in) < int(size) || cap(g.in) == 0 {
		// Headroom, so that batches growing a little at a time do not
		// reallocate each time.
		g.in = make([]byte, max(int(size)+int(size)/4, 4096))
	}
	g.pending = true
	return g.in[:size]
}

// consumed ends the lifetime of the regions alloc handed out.
func (g *guest) consumed() {
	g.pending = false
	clear(g.extra)
	g.extra = g.extra[:0]
}

// configure implements sluice_configure.
func (g *guest) configure(config []byte) int32 {
	defer g.consumed()
	g.h.sealed = true
	if g.h.configure == nil {
		switch string(bytes.TrimSpace(config)) {
		case "", "null", "{}":
			return abi.StatusOK
		}
		g.host.Log(abi.LogError, "invalid configuration: this operator takes no configuration (it registers no sluice.Configure handler)")
		return abi.StatusBadConfig
	}
	if len(bytes.TrimSpace(config)) == 0 {
		// The host passes no bytes when the pipeline gives no config: the
		// handler always sees valid JSON.
		config = []byte("null")
	}
	if err := g.h.configure(config); err != nil {
		g.host.Log(abi.LogError, "invalid configuration: "+err.Error())
		return abi.StatusBadConfig
	}
	return abi.StatusOK
}

// process implements sluice_process: it runs the handler over each record
// of batch, rejecting the records whose handler fails, and emits the
// outputs. It returns StatusError, after logging why, when no handler is
// registered or the batch is malformed.
func (g *guest) process(batch []byte) int32 {
	defer g.consumed()
	g.h.sealed = true
	if g.h.kind == kindNone {
		g.host.Log(abi.LogError, "no handler registered: call sluice.Map, Filter, FlatMap or Keyed from an init function of package main (a plugin's main function never runs)")
		return abi.StatusError
	}
	var hdr abi.Decoder // validates the batch header only
	if err := hdr.Reset(batch); err != nil {
		g.host.Log(abi.LogError, "input batch: "+err.Error())
		return abi.StatusError
	}
	g.out = abi.AppendBatchHeader(g.out[:0], 0)
	g.outCount = 0
	var end int
	switch g.h.kind {
	case kindMap:
		end = g.runMap(batch, uint32(hdr.Count()))
	case kindFilter:
		end = g.runFilter(batch, uint32(hdr.Count()))
	default:
		end = g.runEmitting(batch, uint32(hdr.Count()))
		g.state.key = nil
	}
	if end != len(batch) { // a record refused, or bytes after the last
		g.host.Log(abi.LogError, "input batch: "+batchError(batch).Error())
		return abi.StatusError
	}
	if g.outCount > 0 {
		g.flush()
	}
	if cap(g.out) > maxKeptOut {
		g.out = make([]byte, 0, initialOut)
	}
	return abi.StatusOK
}

// The run loops below process the count records of batch and return the
// offset after the last one, or -1 when a record is malformed. They keep
// the output buffer in locals where they can: Go's WebAssembly code is
// markedly faster with locals than with fields reached through g.

// runMap runs a Map handler.
func (g *guest) runMap(batch []byte, count uint32) int {
	fn := g.h.mapFn
	out, n := g.out, g.outCount
	off := abi.BatchHeaderSize
	var r Record
	for i := uint32(0); i < count; i++ {
		next, ok := decodeRecord(batch, off, &r, &g.hdrs)
		if !ok {
			g.out, g.outCount = out, n
			return -1
		}
		off = next
		o, err := fn(r)
		if err != nil {
			g.host.Reject(i, err.Error())
			continue
		}
		out = appendRecord(out, i, &o)
		n++
		if len(out) >= flushSize {
			g.out, g.outCount = out, n
			g.flush()
			out, n = g.out, g.outCount
		}
	}
	g.out, g.outCount = out, n
	return off
}

// runFilter runs a Filter handler. A kept record is copied as encoded,
// with its origin set to its index.
func (g *guest) runFilter(batch []byte, count uint32) int {
	fn := g.h.filterFn
	out, n := g.out, g.outCount
	off := abi.BatchHeaderSize
	var r Record
	for i := uint32(0); i < count; i++ {
		next, ok := decodeRecord(batch, off, &r, &g.hdrs)
		if !ok {
			g.out, g.outCount = out, n
			return -1
		}
		keep, err := fn(r)
		if err != nil {
			g.host.Reject(i, err.Error())
		} else if keep {
			at := len(out)
			out = append(out, batch[off:next]...)
			binary.LittleEndian.PutUint32(out[at+4:], i)
			n++
			if len(out) >= flushSize {
				g.out, g.outCount = out, n
				g.flush()
				out, n = g.out, g.outCount
			}
		}
		off = next
	}
	g.out, g.outCount = out, n
	return off
}

// runEmitting runs a FlatMap or Keyed handler, which emit through
// g.emitter into g.out. The outputs of a record whose handler fails are
// discarded: flushes happen only between records, so they are all still in
// g.out.
func (g *guest) runEmitting(batch []byte, count uint32) int {
	off := abi.BatchHeaderSize
	var r Record
	for i := uint32(0); i < count; i++ {
		next, ok := decodeRecord(batch, off, &r, &g.hdrs)
		if !ok {
			return -1
		}
		off = next
		g.emitter.origin = i
		mark, markCount := len(g.out), g.outCount
		var err error
		if g.h.kind == kindKeyed {
			g.state.key = r.Key
			err = g.h.keyedFn(r, &g.state, &g.emitter)
		} else {
			err = g.h.flatMapFn(r, &g.emitter)
		}
		if err != nil {
			g.out, g.outCount = g.out[:mark], markCount
			g.host.Reject(i, err.Error())
		} else if len(g.out) >= flushSize {
			g.flush()
		}
	}
	return off
}

// flush hands the gathered outputs to the host and starts a new output
// batch.
func (g *guest) flush() {
	abi.SetBatchCount(g.out, g.outCount)
	g.host.Emit(g.out)
	g.out = abi.AppendBatchHeader(g.out[:0], 0)
	g.outCount = 0
}

// Emitter sends a handler's output records to the host. The SDK passes one
// to FlatMap and Keyed handlers; it is valid only during the handler call.
type Emitter struct {
	g      *guest
	origin uint32
}

// Emit encodes r into the output batch at once, so r's slices may alias
// anything (the input record, a reused buffer) and may change right after
// the call. The output's origin is the input record being handled. Outputs
// reach the host at the end of the batch, or earlier between two records
// once about 1 MiB of them has gathered.
func (e *Emitter) Emit(r Record) {
	if e == nil || e.g == nil {
		panic("sluice: Emit called on an Emitter the SDK did not provide")
	}
	g := e.g
	g.out = appendRecord(g.out, e.origin, &r)
	g.outCount++
}
