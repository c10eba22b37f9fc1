package sluice

import (
	"bytes"
	"encoding/binary"
	"unsafe"

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
// discarded when its handler fails. During runForwarding, the outputs of
// input records runFirst up to the record in progress are those records'
// own encodings, which start at offset runStart of the batch and follow
// out's records.
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
	// The pending run of forwarded records (see the invariants).
	runStart int
	runFirst uint32

	// rec is the record handed to handlers, decoded in place from record
	// to record. It lives in the heap, with g, because a MapInPlace
	// handler receives its address.
	rec     Record
	hdrs    []Header // decoded input headers, reused
	emitter Emitter

	state   State
	tables  map[string]*State
	scratch []byte

	// Transactional operators (txnguest.go). txnHost is host as a
	// bridge.TxnHost, or nil when it is not one.
	txnHost  bridge.TxnHost
	planner  Planner
	call     Call
	odec     outcomeDecoder
	tableIDs map[string]Table
	// Window functions (windowguest.go): the accumulator record emitted,
	// and the records and headers of a window's members.
	accRec  Record
	members []Record
	mhdrs   []Header

	// written is the value of the last ApplyWrite, natively only, where
	// its address does not fit the result slot: a native test host reads
	// it here. In WebAssembly nothing needs to keep the value reachable:
	// the host copies it right after sluice_apply returns (ABI.md section
	// 10.6), before any guest code runs again.
	written *byte
}

func newGuest(h *handlers, host bridge.Host) *guest {
	g := &guest{h: h, host: host, out: make([]byte, 0, initialOut), scratch: make([]byte, initialScratch)}
	g.emitter.g = g
	g.state = State{g: g, table: abi.DefaultTable}
	g.txnHost, _ = host.(bridge.TxnHost)
	g.call.g = g
	g.call.w.reads = make([]wireRead, 4)
	return g
}

// alloc implements sluice_alloc: it returns size writable bytes for the
// next guest call's input. A second request before a guest call consumed
// the first gets a fresh region, so regions handed out together never
// overlap; such extra regions live until that call returns. The first
// region is the guest's input region, which the guest never writes to and
// never lets go before the next alloc: a host may write request after
// request into it, for sluice_apply calls, without asking again. The
// result has a non-zero capacity even for size 0, so its address is never
// 0.
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
	if len(g.extra) > 0 {
		clear(g.extra)
		g.extra = g.extra[:0]
	}
}

// kinds implements sluice_kinds: the operator kind of the registered
// handler, as its abi.KindBit, or 0 after logging why when none is. A
// plugin's init functions have run by then (they run in _initialize), so
// what they registered is what the module serves: `sluice plugin build`
// writes it into the module's sluice.kinds section.
func (g *guest) kinds() int32 {
	switch g.h.kind {
	case kindMap:
		return abi.KindBitMap
	case kindFilter:
		return abi.KindBitFilter
	case kindFlatMap:
		return abi.KindBitFlatMap
	case kindKeyed:
		return abi.KindBitKeyed
	case kindTxn:
		return abi.KindBitTransactional
	case kindAggregate:
		return abi.KindBitAggregate
	case kindWindow:
		return abi.KindBitWindow
	case kindJoin:
		return abi.KindBitJoin
	}
	g.host.Log(abi.LogError, noHandler)
	return 0
}

// features implements sluice_features: the SDK reads each record's input
// into Record.Input, whatever handler the plugin registers.
func (g *guest) features() int32 { return abi.FeatureInputs }

// noHandler is the error of a module whose plugin registers no handler.
const noHandler = "no handler registered: call sluice.Map, MapInPlace, Filter, FlatMap, Keyed, Transactional, Aggregate, WindowFunc or JoinFunc from an init function of package main (a plugin's main function never runs)"

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
//
// It ends the input region's lifetime without a defer, which costs in
// WebAssembly on every batch: a handler that panics traps the guest call,
// and the host (or sluicetest) replaces the instance.
func (g *guest) process(batch []byte) int32 {
	g.h.sealed = true
	status := g.processBatch(batch)
	g.consumed()
	return status
}

func (g *guest) processBatch(batch []byte) int32 {
	switch g.h.kind {
	case kindNone:
		g.host.Log(abi.LogError, noHandler)
		return abi.StatusError
	case kindTxn:
		g.host.Log(abi.LogError, "this plugin registers a Transactional handler: it serves transactional operators (sluice_plan, sluice_apply, sluice_post), not "+abi.ExportProcess)
		return abi.StatusError
	case kindAggregate, kindWindow:
		g.host.Log(abi.LogError, "this plugin registers its handler with sluice."+g.h.name+": it serves "+g.h.kind.operators()+" operators (abi/ABI.md section 13), not "+abi.ExportProcess)
		return abi.StatusError
	}
	if len(batch) < abi.BatchHeaderSize {
		g.host.Log(abi.LogError, "input batch: "+batchError(batch).Error())
		return abi.StatusError
	}
	// A count the batch cannot hold fails at the first record that is
	// not there; batchError then explains it as abi.Decoder does.
	count := binary.LittleEndian.Uint32(batch)
	g.out = abi.AppendBatchHeader(g.out[:0], 0)
	g.outCount = 0
	var end int
	if g.h.kind == kindFlatMap || g.h.kind == kindKeyed {
		end = g.runEmitting(batch, count)
		g.state.key = nil
	} else {
		end = g.runForwarding(batch, count)
	}
	g.rec = Record{}       // keep nothing a handler returned reachable
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
// offset after the last one, or -1 when a record is malformed.

// runForwarding runs a Map, MapInPlace or Filter handler. An output that is
// its input record (the same Key, Value and Headers slices, the same Time,
// whatever the handler did to the bytes they hold) is not encoded: the
// input's encoding is forwarded, its origin set to its index. Consecutive
// forwarded records join the output in one copy, and a batch forwarded
// whole is emitted where it lies, without any. A kept record of a Filter is
// forwarded likewise.
//
// The loop is written for Go's WebAssembly code (see codec.go): it decodes
// with a copy of decodeRecord's body, keeps the state of the run in g,
// where only records that end a run touch it, and tests whether an output
// can be forwarded with one branch.
func (g *guest) runForwarding(batch []byte, count uint32) int {
	inPlaceFn := g.h.mapInPlaceFn
	r := &g.rec
	var o Record // a Map handler's output
	off := abi.BatchHeaderSize
	g.runStart, g.runFirst = off, 0
	for i := uint32(0); i < count; i++ {
		// decodeRecord(batch, off, r, &g.hdrs), inlined.
		rest := batch[off:]
		if len(rest) < 4+recordFixed {
			return -1
		}
		p := unsafe.Pointer(&rest[0])
		size := uint64(le32(p))
		klen := uint64(le32(unsafe.Add(p, 20)))
		flags := le32(unsafe.Add(p, 8))
		if size-recordFixed > uint64(len(rest))-4-recordFixed || klen > size-recordFixed || flags > abi.FlagsInput {
			return -1
		}
		vlen := uint64(le32(unsafe.Add(p, 24+klen)))
		if vlen > size-recordFixed-klen {
			return -1
		}
		nh := le32(unsafe.Add(p, 28+klen+vlen))
		t := int64(le64(unsafe.Add(p, 12)))
		r.Time = t
		r.Input = int(flags)
		if nh == 0 {
			if klen+vlen != size-recordFixed {
				return -1
			}
			if r.Headers != nil {
				r.Headers = nil
			}
		} else if r.Headers = decodeHeaders(rest[32+klen+vlen:4+size], nh, &g.hdrs); r.Headers == nil {
			return -1
		}
		key, value := slice(p, 24, klen), slice(p, 28+klen, vlen)
		r.Key, r.Value = key, value
		next := off + 4 + int(size)

		var err error
		out := r
		if inPlaceFn != nil {
			err = inPlaceFn(r)
		} else if g.h.mapFn != nil {
			err = g.callMap(&o)
			out = &o
		} else {
			var keep bool
			if keep, err = g.h.filterFn(*r); keep && err == nil {
				putLE32(unsafe.Add(p, 4), i) // forwarded as it is
				off = next
				continue
			}
			out = nil // dropped, or rejected
		}
		if err != nil {
			g.endRun(batch, off, next, i)
			g.host.Reject(i, err.Error())
		} else if out == nil {
			g.endRun(batch, off, next, i)
		} else if d := (uintptr(unsafe.Pointer(unsafe.SliceData(out.Key))) ^ uintptr(unsafe.Pointer(unsafe.SliceData(key)))) |
			uintptr(len(out.Key)^len(key)) |
			(uintptr(unsafe.Pointer(unsafe.SliceData(out.Value))) ^ uintptr(unsafe.Pointer(unsafe.SliceData(value)))) |
			uintptr(len(out.Value)^len(value)) |
			uintptr(out.Time^t); d|uintptr(len(out.Headers))|uintptr(nh) == 0 ||
			d == 0 && nh != 0 && headersForward(out.Headers, rest[32+klen+vlen:4+size]) {
			putLE32(unsafe.Add(p, 4), i) // forwarded, changed in place or not
		} else {
			if g.runFirst < i {
				g.endRun(batch, off, next, i)
			} else {
				g.runStart, g.runFirst = next, i+1 // no run to end: no call
			}
			g.out = appendRecord(g.out, i, out)
			g.outCount++
			if len(g.out) >= flushSize {
				g.flush()
			}
		}
		off = next
	}
	if g.runFirst == 0 && off == len(batch) {
		// Every record was forwarded: the batch is the output.
		if count > 0 {
			g.host.Emit(batch)
		}
		return off
	}
	g.endRun(batch, off, off, count)
	return off
}

// callMap calls the Map handler on g.rec and stores its output in o. It
// is a function of its own to keep the loop of runForwarding, which
// MapInPlace handlers run, small.
func (g *guest) callMap(o *Record) error {
	var err error
	*o, err = g.h.mapFn(g.rec)
	return err
}

// endRun ends the pending run of forwarded records before the record
// handled now, number i, which is not forwarded and lies at batch[at:next]:
// the run joins the outputs in one copy, and the next run starts after
// record i.
func (g *guest) endRun(batch []byte, at, next int, i uint32) {
	if g.runFirst < i {
		g.out = append(g.out, batch[g.runStart:at]...)
		g.outCount += i - g.runFirst
		if len(g.out) >= flushSize {
			g.flush()
		}
	}
	g.runStart, g.runFirst = next, i+1
}

// runEmitting runs a FlatMap or Keyed handler, which emit through
// g.emitter into g.out. The outputs of a record whose handler fails are
// discarded: flushes happen only between records, so they are all still in
// g.out.
func (g *guest) runEmitting(batch []byte, count uint32) int {
	off := abi.BatchHeaderSize
	r := &g.rec
	keyed := g.h.kind == kindKeyed
	for i := uint32(0); i < count; i++ {
		next := decodeRecord(batch, off, r, &g.hdrs)
		if next < 0 {
			return -1
		}
		off = next
		g.emitter.origin = i
		mark, markCount := len(g.out), g.outCount
		var err error
		if keyed {
			g.state.key = r.Key
			err = g.h.keyedFn(*r, &g.state, &g.emitter)
		} else {
			err = g.h.flatMapFn(*r, &g.emitter)
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
