package sluice

import (
	"errors"
	"unsafe"

	"github.com/sluicehq/sluice/abi"
)

// The SDK's decoder of apply requests, for the same reason as codec.go's
// record decoder: sluice_apply runs once per operation execution, and
// abi.DecodeApplyRequest, a dozen calls with error bookkeeping, costs about
// 430 ns per request in Go's WebAssembly code under wazero, 850 ns with one
// declared read, where a call into the guest costs 30. decodeApply makes no
// call: it accepts exactly what abi.DecodeApplyRequest accepts and decodes
// the same fields (txncodec_test.go checks both, with a fuzz test); when it
// refuses a request, the caller asks abi.DecodeApplyRequest why.

// applyFixed is the size of an apply request's fields before its key: the
// result slot, fn, event, op, flags, table and the key length.
const applyFixed = abi.ApplyResultSize + 6*4

// applyFlagOwnFound is bit 1 of an encoded request's flags: the own key was
// found.
const applyFlagOwnFound = 2

// decodeApply decodes the apply request b into q, as abi.DecodeApplyRequest
// does: q's slices alias b, with their capacity clipped (nil when empty),
// and q.Reads is reused. It reports whether b is well formed; q is
// unspecified when it is not.
func decodeApply(b []byte, q *abi.ApplyRequest) bool {
	n := uint64(len(b))
	if n < applyFixed+4 { // the fixed fields and the own value's length
		return false
	}
	p := unsafe.Pointer(unsafe.SliceData(b))
	q.Fn = le32(unsafe.Add(p, 8))
	q.Event = le32(unsafe.Add(p, 12))
	q.Op = le32(unsafe.Add(p, 16))
	f := le32(unsafe.Add(p, 20))
	q.Flags, q.Own.Found = f&abi.OpFlagNonDet, f&applyFlagOwnFound != 0
	q.Table = le32(unsafe.Add(p, 24))
	off := uint64(applyFixed)
	klen := uint64(le32(unsafe.Add(p, off-4)))
	// Each check below keeps off <= n and ensures the 4 bytes of the next
	// length are there.
	if klen > n-off-4 {
		return false
	}
	q.Key = slice(p, off, klen)
	off += klen
	olen := uint64(le32(unsafe.Add(p, off)))
	off += 4
	if olen > n-off || n-off-olen < 4 {
		return false
	}
	q.Own.Bytes = slice(p, off, olen)
	off += olen
	count := uint64(le32(unsafe.Add(p, off)))
	off += 4
	// A read takes at least 16 bytes; abi refuses a count that cannot fit.
	if count*16 > n-off {
		return false
	}
	if uint64(cap(q.Reads)) < count {
		q.Reads = make([]abi.ReadValue, count)
	}
	reads := q.Reads[:count]
	for i := range reads {
		r := &reads[i]
		if n-off < 8 {
			return false
		}
		r.Table = le32(unsafe.Add(p, off))
		klen := uint64(le32(unsafe.Add(p, off+4)))
		off += 8
		if klen > n-off || n-off-klen < 8 {
			return false
		}
		r.Key = slice(p, off, klen)
		off += klen
		found := le32(unsafe.Add(p, off))
		vlen := uint64(le32(unsafe.Add(p, off+4)))
		off += 8
		if found > 1 || vlen > n-off {
			return false
		}
		r.Found = found == 1
		r.Bytes = slice(p, off, vlen)
		off += vlen
	}
	q.Reads = reads
	if n-off < 4 {
		return false
	}
	alen := uint64(le32(unsafe.Add(p, off)))
	off += 4
	if alen != n-off { // the argument ends the request: no trailing bytes
		return false
	}
	q.Arg = slice(p, off, alen)
	return true
}

// appendOpDecl appends the encoding of the declaration made of its
// arguments to dst, as abi.AppendOpDecl does (txncodec_test.go checks),
// with one growth check and no call per field but the copies: its
// appends, one per field, make abi.AppendOpDecl cost several hundred ns
// per declaration in Go's WebAssembly code. It takes the fields rather than
// an abi.OpDecl, which its caller would have to build and zero.
func appendOpDecl(dst []byte, event, fn, flags, table uint32, key []byte, reads []abi.TableKey, arg []byte) []byte {
	// event, fn, flags, table, key length, read count, argument length.
	size := 7*4 + len(key) + len(arg)
	for i := range reads {
		size += 8 + len(reads[i].Key)
	}
	at := len(dst)
	if cap(dst)-at < size {
		dst = append(dst[:cap(dst)], make([]byte, size)...)
	}
	dst = dst[:at+size]
	b := dst[at:]
	p := unsafe.Pointer(unsafe.SliceData(b))
	putLE32(p, event)
	putLE32(unsafe.Add(p, 4), fn)
	putLE32(unsafe.Add(p, 8), flags)
	putLE32(unsafe.Add(p, 12), table)
	putLE32(unsafe.Add(p, 16), uint32(len(key)))
	// A copy is a call of runtime.memmove, about 30 ns in WebAssembly
	// even for no bytes: empty fields skip it.
	off := 20
	if len(key) > 0 {
		off += copy(b[20:], key)
	}
	putLE32(unsafe.Add(p, off), uint32(len(reads)))
	off += 4
	for i := range reads {
		r := &reads[i]
		putLE32(unsafe.Add(p, off), r.Table)
		putLE32(unsafe.Add(p, off+4), uint32(len(r.Key)))
		off += 8 + copy(b[off+8:], r.Key)
	}
	putLE32(unsafe.Add(p, off), uint32(len(arg)))
	if len(arg) > 0 {
		copy(b[off+4:], arg)
	}
	return dst
}

// outcomeDecoder decodes the outcomes handed to sluice_post, event by event,
// as abi.OutcomeDecoder does (txncodec_test.go checks), with no call per
// field: abi.OutcomeDecoder.Next, about thirty calls for an event of four
// operations, costs some 3 µs in Go's WebAssembly code. Its buffers are
// reused from event to event.
type outcomeDecoder struct {
	ops  []OpOutcome
	vals []Value
	gets []KeyValue
}

// next decodes the event outcome at b[off:] into e and returns the offset
// after it, or -1 when it is malformed (e is then unspecified). e's slices
// alias b and d's buffers, until the next call. A buffer that must grow
// gets a new array: the slices already taken keep pointing into the old
// one, which is not written again, so they stay valid.
func (d *outcomeDecoder) next(b []byte, off int, e *Outcome) int {
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
	if uint64(cap(d.ops)) < nops {
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
		op.Own = Value{Found: found == 1, Bytes: slice(p, o, l)}
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
			rs[j] = Value{Found: f == 1, Bytes: slice(p, o, l)}
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
			key := slice(p, o, kl)
			o += kl
			f := le32(unsafe.Add(p, o))
			l := uint64(le32(unsafe.Add(p, o+4)))
			o += 8
			if f > 1 || l > n-o {
				return -1
			}
			gs[j] = KeyValue{TableKey: abi.TableKey{Table: t, Key: key}, Value: Value{Found: f == 1, Bytes: slice(p, o, l)}}
			o += l
		}
		op.Gets = gs
	}
	d.vals, d.gets = vals, gets
	e.Committed, e.Ops = committed == 1, ops
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
