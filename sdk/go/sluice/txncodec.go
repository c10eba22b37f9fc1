package sluice

import (
	"errors"
	"unsafe"

	"github.com/sluicehq/sluice/abi"
)

// The SDK's codecs of the transactional encodings, for the same reason as
// codec.go's record decoder: sluice_plan, sluice_apply and sluice_post run
// per declaration, per operation execution and per event, and abi's
// decoders and encoders, a dozen calls each with error bookkeeping, cost
// several hundred ns per item in Go's WebAssembly code under wazero. Each
// here accepts exactly what its abi counterpart accepts and produces the
// same fields or bytes (txncodec_test.go checks each pair, with fuzz
// tests); when one refuses its input, the caller asks abi why.
//
// Go's WebAssembly code has costs of its own, which shape this file:
//
//   - A branch between Go basic blocks that is taken is a jump through the
//     function's dispatch table, at which wazero's code moves every live
//     local of the function (some forty instructions in a function of this
//     size). Checks that fail only on malformed input (an early return) are
//     cheap; an if/else, a loop iteration or a min is not. So lengths are
//     checked by accumulating overflows in a word tested once, offsets
//     clamped with arithmetic (clamp), and an empty field made nil with a
//     select (field).
//   - Storing a pointer into the heap tests the write-barrier flag, and the
//     code the compiler lays out jumps on the common path, when the barrier
//     is off. So the decoded apply request (wireRequest) holds offsets and
//     lengths, not slices: the Call's accessors make the slices, which costs
//     them a few arithmetic instructions.

// applyFixed is the size of an apply request's fields before its key: the
// result slot, fn, event, op, flags, table and the key length.
const applyFixed = abi.ApplyResultSize + 6*4

// applyMin is the size of the smallest apply request: the fixed fields and
// the lengths of the own value, of the read count and of the argument.
const applyMin = applyFixed + 3*4

// applyFlagOwnFound is bit 1 of an encoded request's flags: the own key was
// found.
const applyFlagOwnFound = 2

// field returns the n bytes at p+off, which the caller has checked lie
// inside its input, with their capacity clipped, or nil when n is 0, made
// with a select rather than a branch (codec.go's slice branches).
func field(p unsafe.Pointer, off, n uint64) []byte {
	b := (*[maxAlloc]byte)(unsafe.Add(p, off))[:n:n]
	if n == 0 {
		b = nil
	}
	return b
}

// past returns 1 when end > lim and 0 otherwise, without a branch. Both
// must be below 1<<63, as every offset and length here is: a length is a
// u32 and an input at most maxAlloc bytes.
func past(end, lim uint64) uint64 { return (lim - end) >> 63 }

// clamp returns min(a, lim) without a branch (a min compiles to one), under
// past's condition.
func clamp(a, lim uint64) uint64 { return a ^ (a^lim)&-past(a, lim) }

// span locates a byte string in an apply request: its offset from the
// request's first byte and its length.
type span struct{ off, n uint32 }

// wireRead is one declared read of a decoded apply request.
type wireRead struct {
	table    uint32
	found    bool
	key, val span
	// win is a windowed read's window: the offset of its first version
	// and the number of versions.
	win span
}

// window appends the versions of read i's window to dst.
func (w *wireRequest) window(i int, dst []Version) []Version {
	s := w.reads[i].win
	off := uint64(s.off)
	for range s.n {
		p := unsafe.Add(w.base, off)
		back, found, n := le32(p), le32(unsafe.Add(p, 4)), uint64(le32(unsafe.Add(p, 8)))
		dst = append(dst, Version{Back: back, Value: Value{Found: found == 1, Bytes: field(w.base, off+12, n)}})
		off += 12 + n
	}
	return dst
}

// wireRequest is an apply request as decodeApply decodes it: the fields of
// abi.ApplyRequest, with the byte strings as spans of the request, whose
// first byte is base. It holds no pointer but base, which is stored only
// when it changes (the host reuses its request region), so decoding stores
// no pointer into the heap.
type wireRequest struct {
	base                        unsafe.Pointer
	fn, event, op, flags, table uint32
	ownFound                    bool
	key, own, arg               span
	nreads                      uint32
	// reads has room for nreads reads or more, and never fewer than one:
	// decodeApply writes reads[0] unconditionally.
	reads []wireRead
}

// bytes returns the byte string at s, nil when empty.
func (w *wireRequest) bytes(s span) []byte { return field(w.base, uint64(s.off), uint64(s.n)) }

// request returns w as a new abi.ApplyRequest, for tests.
func (w *wireRequest) request() *abi.ApplyRequest {
	q := &abi.ApplyRequest{}
	w.into(q)
	return q
}

// into stores w into q as abi.DecodeApplyRequest would, reusing q.Reads:
// the guest core's request in native builds, whose accessors read an
// abi.ApplyRequest (Call.req).
func (w *wireRequest) into(q *abi.ApplyRequest) {
	q.Fn, q.Event, q.Op, q.Flags, q.Table = w.fn, w.event, w.op, w.flags, w.table
	q.Key, q.Own, q.Arg = w.bytes(w.key), abi.Value{Found: w.ownFound, Bytes: w.bytes(w.own)}, w.bytes(w.arg)
	q.Reads = q.Reads[:0]
	for i, r := range w.reads[:w.nreads] {
		rv := abi.ReadValue{TableKey: abi.TableKey{Table: r.table, Key: w.bytes(r.key)}, Value: abi.Value{Found: r.found, Bytes: w.bytes(r.val)}}
		if w.flags&abi.OpFlagWindow != 0 && r.win.n > 0 {
			rv.Window = w.window(i, nil)
		}
		q.Reads = append(q.Reads, rv)
	}
}

// decodeApply decodes the apply request b into w, as abi.DecodeApplyRequest
// decodes it into an abi.ApplyRequest, when b has one declared read or
// none (the common case: a read-modify-write, possibly conditioned on one
// other key) and is in the region of the previous request; it reports
// whether it did. Otherwise, or when b is malformed, it returns false,
// leaving w unspecified, and the caller decodes b with decodeApplyReads,
// which also tells a malformed request apart.
//
// It makes no call and takes no branch on the common path: it decodes the
// read, or a phantom one when there is none, whose checks and length then
// count for nothing, and stores what it decoded before it knows whether it
// may. (A branch to a call, or to an early return that the rest of the
// function does not also end in, would be laid out on the common path.)
func decodeApply(b []byte, w *wireRequest) bool {
	n := uint64(len(b))
	p := unsafe.Pointer(unsafe.SliceData(b))
	if n < applyMin || w.base != p {
		return false
	}
	lim := n - 4 // the last offset a u32 may be read at
	klen := uint64(le32(unsafe.Add(p, applyFixed-4)))
	oo := applyFixed + klen // the own value's length
	bad := past(oo, lim-8)  // and room for the read count's and the argument's
	oo = clamp(oo, lim-8)   // from here on, reads stay inside b
	olen := uint64(le32(unsafe.Add(p, oo)))
	co := oo + 4 + olen // the read count
	bad |= past(co, lim-4)
	co = clamp(co, lim-4)
	count := uint64(le32(unsafe.Add(p, co)))
	bad |= count >> 1 // more than one read
	count &= 1
	off := co + 4 // <= lim
	// The read: table, key length, key, found, value length, value; at
	// least 16 bytes, which the argument's length leaves only when it is
	// there.
	ro := clamp(off, n-16)
	rk := uint64(le32(unsafe.Add(p, ro+4)))
	fo := ro + 8 + rk // its found flag
	rbad := past(off, n-16) | past(fo, n-8)
	fo = clamp(fo, n-8)
	found := le32(unsafe.Add(p, fo))
	vlen := uint64(le32(unsafe.Add(p, fo+4)))
	end := fo + 8 + vlen
	rbad |= past(end, lim) | uint64(found>>1)
	bad |= rbad & -count
	ao := off + (end-off)&-count // the argument's length: after the read, if any
	ao = clamp(ao, lim)
	alen := uint64(le32(unsafe.Add(p, ao)))
	bad |= alen ^ (lim - ao) // the argument ends the request: no trailing bytes
	r := &w.reads[0]
	r.table = le32(unsafe.Add(p, ro))
	r.found = found == 1
	r.key = span{uint32(ro + 8), uint32(rk)}
	r.val = span{uint32(fo + 8), uint32(vlen)}
	w.nreads = uint32(count)
	w.fn = le32(unsafe.Add(p, 8))
	w.event = le32(unsafe.Add(p, 12))
	w.op = le32(unsafe.Add(p, 16))
	f := le32(unsafe.Add(p, 20))
	w.flags, w.ownFound = f&abi.OpFlagNonDet, f&applyFlagOwnFound != 0
	w.table = le32(unsafe.Add(p, 24))
	w.key = span{applyFixed, uint32(klen)}
	w.own = span{uint32(oo + 4), uint32(olen)}
	w.arg = span{uint32(ao + 4), uint32(alen)}
	bad |= uint64(f & abi.OpFlagWindow) // decodeApplyReads reads windows
	return bad == 0
}

// decodeApplyReads decodes the apply request b into w, as
// abi.DecodeApplyRequest decodes it into an abi.ApplyRequest, and reports
// whether b is well formed; w is unspecified when it is not. It takes any
// number of declared reads, with a check and a loop iteration per read.
func decodeApplyReads(b []byte, w *wireRequest) bool {
	n := uint64(len(b))
	if n < applyMin {
		return false
	}
	p := unsafe.Pointer(unsafe.SliceData(b))
	klen := uint64(le32(unsafe.Add(p, applyFixed-4)))
	// Each check below keeps off <= n and ensures the 4 bytes of the next
	// length are there.
	off := uint64(applyFixed)
	if klen > n-off-4 {
		return false
	}
	key := span{uint32(off), uint32(klen)}
	off += klen
	olen := uint64(le32(unsafe.Add(p, off)))
	off += 4
	if olen > n-off || n-off-olen < 4 {
		return false
	}
	own := span{uint32(off), uint32(olen)}
	off += olen
	count := uint64(le32(unsafe.Add(p, off)))
	off += 4
	// A read takes at least 16 bytes; abi refuses a count that cannot fit.
	if count*16 > n-off {
		return false
	}
	windowed := le32(unsafe.Add(p, 20))&abi.OpFlagWindow != 0
	if uint64(len(w.reads)) < max(count, 1) {
		w.reads = make([]wireRead, max(count, 4))
	}
	for i := range w.reads[:count] {
		r := &w.reads[i]
		if n-off < 8 {
			return false
		}
		r.table = le32(unsafe.Add(p, off))
		klen := uint64(le32(unsafe.Add(p, off+4)))
		off += 8
		if klen > n-off || n-off-klen < 8 {
			return false
		}
		r.key = span{uint32(off), uint32(klen)}
		off += klen
		found := le32(unsafe.Add(p, off))
		vlen := uint64(le32(unsafe.Add(p, off+4)))
		off += 8
		if found > 1 || vlen > n-off {
			return false
		}
		r.found = found == 1
		r.val = span{uint32(off), uint32(vlen)}
		off += vlen
		r.win = span{}
		if !windowed {
			continue
		}
		if n-off < 4 {
			return false
		}
		nv := uint64(le32(unsafe.Add(p, off)))
		off += 4
		// A version takes at least 12 bytes: back, found, length.
		if nv*12 > n-off {
			return false
		}
		r.win = span{uint32(off), uint32(nv)}
		for range nv {
			if n-off < 12 {
				return false
			}
			found, vlen := le32(unsafe.Add(p, off+4)), uint64(le32(unsafe.Add(p, off+8)))
			off += 12
			if found > 1 || vlen > n-off {
				return false
			}
			off += vlen
		}
	}
	if n-off < 4 {
		return false
	}
	alen := uint64(le32(unsafe.Add(p, off)))
	off += 4
	if alen != n-off { // the argument ends the request: no trailing bytes
		return false
	}
	w.base = p
	w.nreads = uint32(count)
	w.fn = le32(unsafe.Add(p, 8))
	w.event = le32(unsafe.Add(p, 12))
	w.op = le32(unsafe.Add(p, 16))
	f := le32(unsafe.Add(p, 20))
	w.flags, w.ownFound = f&(abi.OpFlagNonDet|abi.OpFlagWindow), f&applyFlagOwnFound != 0
	w.table = le32(unsafe.Add(p, 24))
	w.key, w.own, w.arg = key, own, span{uint32(off), uint32(alen)}
	return true
}

// declFixed is the size of a declaration's fixed fields: event, fn, flags,
// table, key length, read count and argument length.
const declFixed = 7 * 4

// Declarations are encoded with their byte strings (key, read keys,
// argument) moved 16 bytes at a time, by two word loads and stores, rather
// than copied: a copy is a call of runtime.memmove, some 200 instructions
// in Go's WebAssembly code under wazero, and a declaration has three or
// more. The bytes past a string's end that such a move reads are those of
// whatever follows it in memory, and it writes them past the string's
// place in the encoding, where the next field or declaration goes, or
// past the encoding's length; so a move needs 16 bytes of room in the
// encoding, and a string that 16 bytes may be read from: at most 16 bytes
// long, not nil, and not within 16 bytes of the end of a page, so that the
// read cannot leave the memory that holds the string (a WebAssembly
// memory is a whole number of 64 KiB pages, an operating system's pages
// are at least 4 KiB). The race detector's pointer checks refuse such
// reads, so race builds always copy.

// movePage is the page size moves assume (see above).
const movePage = 4 << 10

// noMove returns 0 when b may be moved with move16 and 1 otherwise,
// without a branch (past's arithmetic).
func noMove(b []byte) uintptr {
	a := uintptr(unsafe.Pointer(unsafe.SliceData(b)))
	return (16-uintptr(len(b)))>>63 | ((movePage-16)-a%movePage)>>63 | (a-1)>>63 | raceBuild
}

// move16 moves the 16 bytes at s to d.
func move16(d, s unsafe.Pointer) {
	*(*uint64)(d) = *(*uint64)(s)
	*(*uint64)(unsafe.Add(d, 8)) = *(*uint64)(unsafe.Add(s, 8))
}

// appendDeclCopy appends to *buf the encoding of the declaration made of
// its arguments, as abi.AppendOpDecl does (txncodec_test.go checks), size
// bytes, copying the byte strings: Planner.declare's encoding when they
// may not be moved (see above) or *buf must grow. It grows *buf with 16
// bytes to spare for the next declaration's moves.
func appendDeclCopy(buf *[]byte, size int, event, fn, flags, table uint32, key []byte, reads []Key, arg []byte) {
	dst := *buf
	at := len(dst)
	if cap(dst)-at < size+16 {
		dst = append(dst[:cap(dst)], make([]byte, size+16)...)
	}
	dst = dst[:at+size]
	b := dst[at:]
	p := unsafe.Pointer(unsafe.SliceData(b))
	putLE32(p, event)
	putLE32(unsafe.Add(p, 4), fn)
	putLE32(unsafe.Add(p, 8), flags)
	putLE32(unsafe.Add(p, 12), table)
	putLE32(unsafe.Add(p, 16), uint32(len(key)))
	off := 20 + copy(b[20:], key)
	putLE32(unsafe.Add(p, off), uint32(len(reads)))
	off += 4
	for i := range reads {
		r := &reads[i]
		putLE32(unsafe.Add(p, off), uint32(r.Table))
		putLE32(unsafe.Add(p, off+4), uint32(len(r.Key)))
		off += 8 + copy(b[off+8:], r.Key)
	}
	putLE32(unsafe.Add(p, off), uint32(len(arg)))
	copy(b[off+4:], arg)
	*buf = dst
}

// outcomeDecoder decodes the outcomes handed to sluice_post, event by event,
// into out, as abi.OutcomeDecoder does (txncodec_test.go checks). Its
// buffers are reused from event to event.
//
// Most events have a few operations, each with a few declared reads and no
// gets. For those, next keeps the operations in slots: operation m's Reads
// is the m-th run of readSlots values of vals, with that capacity, and its
// Gets an empty slice, so that decoding an event stores no slice header,
// only lengths (an assignment s = s[:n] stores no pointer) and the byte
// strings' pointers. Any other event goes to nextAny, which lays the
// buffers out as it needs and leaves the slots to be set up again.
type outcomeDecoder struct {
	out  Outcome
	ops  []OpOutcome
	vals []Value
	gets []KeyValue
	// slots is the number of operations laid out in slots, 0 when the
	// buffers are laid out as nextAny left them.
	slots int
}

// Bounds of the slotted layout: events of more operations, or operations
// of more reads, are decoded by nextAny.
const (
	maxSlotOps = 64
	readSlots  = 4
)

// setSlots lays out n operations in slots, and out.Ops over them, reusing
// the buffers when they are large enough: nothing points into them any
// more, the previous outcome being valid only until the next call.
func (d *outcomeDecoder) setSlots(n int) {
	if cap(d.ops) < n {
		d.ops = make([]OpOutcome, n)
	}
	if cap(d.vals) < n*readSlots {
		d.vals = make([]Value, n*readSlots)
	}
	d.ops, d.vals = d.ops[:n], d.vals[:n*readSlots]
	for m := range d.ops {
		d.ops[m].Reads = d.vals[m*readSlots : m*readSlots : (m+1)*readSlots]
		d.ops[m].Gets = []KeyValue{}
	}
	d.out.Ops = d.ops[:0]
	d.slots = n
}

// relayout decodes an event next cannot decode in the current slots: in
// new slots when it has a few operations, else with nextAny.
func (d *outcomeDecoder) relayout(b []byte, off int, nops uint64) int {
	if nops > maxSlotOps {
		return d.nextAny(b, off)
	}
	d.setSlots(max(int(nops), 16))
	return d.next(b, off)
}

// next decodes the event outcome at b[off:] into d.out and returns the
// offset after it, or -1 when it is malformed (d.out is then unspecified).
// d.out's slices alias b and d's buffers, until the next call.
func (d *outcomeDecoder) next(b []byte, off int) int {
	n := uint64(len(b))
	o := uint64(off)
	if o > n || n-o < 8 {
		return -1
	}
	p := unsafe.Pointer(unsafe.SliceData(b))
	committed := le32(unsafe.Add(p, o))
	nops := uint64(le32(unsafe.Add(p, o+4)))
	if committed > 1 {
		return -1
	}
	if nops > uint64(d.slots) {
		return d.relayout(b, off, nops)
	}
	o += 8
	d.out.Ops = d.out.Ops[:nops]
	for m := range d.out.Ops {
		op := &d.out.Ops[m]
		// executed, own found, own length, own value, read count.
		if n-o < 16 {
			return d.nextAny(b, off)
		}
		executed := le32(unsafe.Add(p, o))
		found := le32(unsafe.Add(p, o+4))
		l := uint64(le32(unsafe.Add(p, o+8)))
		if executed|found > 1 || l > n-o-16 {
			return d.nextAny(b, off)
		}
		op.Executed, op.Own.Found = executed == 1, found == 1
		op.Own.Bytes = field(p, o+12, l)
		o += 12 + l
		nr := uint64(le32(unsafe.Add(p, o)))
		o += 4
		if nr > readSlots {
			return d.nextAny(b, off)
		}
		op.Reads = op.Reads[:nr]
		for j := range op.Reads {
			if n-o < 8 {
				return d.nextAny(b, off)
			}
			f := le32(unsafe.Add(p, o))
			l := uint64(le32(unsafe.Add(p, o+4)))
			if f > 1 || l > n-o-8 {
				return d.nextAny(b, off)
			}
			op.Reads[j].Found = f == 1
			op.Reads[j].Bytes = field(p, o+8, l)
			o += 8 + l
		}
		if n-o < 4 || le32(unsafe.Add(p, o)) != 0 { // gets
			return d.nextAny(b, off)
		}
		o += 4
	}
	d.out.Committed = committed == 1
	return int(o)
}

// nextAny is next for any event, with its own layout of d's buffers. A
// buffer that must grow gets a new array: the slices already taken keep
// pointing into the old one, which is not written again, so they stay
// valid. It leaves the slots to be set up again for the next event, with
// room for this one's operations.
func (d *outcomeDecoder) nextAny(b []byte, off int) int {
	n := uint64(len(b))
	o := uint64(off)
	if o > n || n-o < 8 {
		return -1
	}
	p := unsafe.Pointer(unsafe.SliceData(b))
	committed := le32(unsafe.Add(p, o))
	nops := uint64(le32(unsafe.Add(p, o+4)))
	o += 8
	// An operation takes at least 20 bytes; abi refuses a count that
	// cannot fit.
	if committed > 1 || nops*20 > n-o {
		return -1
	}
	d.slots = 0
	if uint64(len(d.ops)) < nops {
		d.ops = make([]OpOutcome, nops)
	}
	ops := d.ops[:nops]
	vals, gets := d.vals[:0], d.gets[:0]
	for i := range ops {
		op := &ops[i]
		if n-o < 12 {
			return -1
		}
		executed := le32(unsafe.Add(p, o))
		found := le32(unsafe.Add(p, o+4))
		l := uint64(le32(unsafe.Add(p, o+8)))
		o += 12
		if executed > 1 || found > 1 || l > n-o || n-o-l < 4 {
			return -1
		}
		op.Executed = executed == 1
		op.Own = Value{Found: found == 1, Bytes: field(p, o, l)}
		o += l
		nr := uint64(le32(unsafe.Add(p, o)))
		o += 4
		if nr*8 > n-o { // a value takes at least 8 bytes
			return -1
		}
		r0 := len(vals)
		if uint64(cap(vals)-r0) < nr {
			vals = growValues(vals, int(nr))
		}
		vals = vals[:r0+int(nr)]
		rs := vals[r0:len(vals):len(vals)]
		for j := range rs {
			if n-o < 8 {
				return -1
			}
			f := le32(unsafe.Add(p, o))
			l := uint64(le32(unsafe.Add(p, o+4)))
			o += 8
			if f > 1 || l > n-o {
				return -1
			}
			rs[j] = Value{Found: f == 1, Bytes: field(p, o, l)}
			o += l
		}
		op.Reads = rs
		if n-o < 4 {
			return -1
		}
		ng := uint64(le32(unsafe.Add(p, o)))
		o += 4
		if ng*16 > n-o { // a get takes at least 16 bytes
			return -1
		}
		g0 := len(gets)
		if uint64(cap(gets)-g0) < ng {
			gets = growKeyValues(gets, int(ng))
		}
		gets = gets[:g0+int(ng)]
		gs := gets[g0:len(gets):len(gets)]
		for j := range gs {
			if n-o < 8 {
				return -1
			}
			t := le32(unsafe.Add(p, o))
			kl := uint64(le32(unsafe.Add(p, o+4)))
			o += 8
			if kl > n-o || n-o-kl < 8 {
				return -1
			}
			key := field(p, o, kl)
			o += kl
			f := le32(unsafe.Add(p, o))
			l := uint64(le32(unsafe.Add(p, o+4)))
			o += 8
			if f > 1 || l > n-o {
				return -1
			}
			gs[j] = KeyValue{TableKey: abi.TableKey{Table: t, Key: key}, Value: Value{Found: f == 1, Bytes: field(p, o, l)}}
			o += l
		}
		op.Gets = gs
	}
	d.vals, d.gets = vals, gets
	d.out.Committed, d.out.Ops = committed == 1, ops
	return int(o)
}

// growValues returns v with room for n more values, in a new array.
func growValues(v []Value, n int) []Value {
	g := make([]Value, len(v), max(2*cap(v), len(v)+n, 16))
	copy(g, v)
	return g
}

// growKeyValues returns v with room for n more, in a new array.
func growKeyValues(v []KeyValue, n int) []KeyValue {
	g := make([]KeyValue, len(v), max(2*cap(v), len(v)+n, 16))
	copy(g, v)
	return g
}

// outcomesError returns abi.OutcomeDecoder's account of what is wrong
// with outcomes, for the log, once the SDK's decoder has refused them.
func outcomesError(outcomes []byte) error {
	var d abi.OutcomeDecoder
	if _, err := d.Reset(outcomes); err != nil {
		return err
	}
	var e abi.EventOutcome
	for d.Next(&e) {
	}
	if err := d.Err(); err != nil {
		return err
	}
	return errOutcomesMismatch
}

// errOutcomesMismatch is reported if the SDK's decoder refuses outcomes
// that abi.OutcomeDecoder accepts: a bug in this file.
var errOutcomesMismatch = errors.New("sluice: internal error: the SDK's decoder refused outcomes that abi.OutcomeDecoder accepts")
