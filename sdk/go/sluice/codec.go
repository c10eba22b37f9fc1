package sluice

import (
	"encoding/binary"
	"errors"
	"unsafe"

	"github.com/sluicehq/sluice/abi"
)

// The SDK's record codec: the encoding of abi/ABI.md written for Go's
// WebAssembly code generator under wazero, where every function call, every
// branch between Go basic blocks and every memory access costs several
// times what it does natively, and pointer stores into the heap pay a
// write-barrier check. abi.Decoder.Next and abi.AppendRecord cost about 150
// and 125 ns per 64-byte record there. So the hot paths here make no call
// per record but the handler's: loads go through le32 and le64 (one wasm
// load each, after the record's bounds are checked once), each record is
// checked by a few comparisons, and the record handed to handlers is reused,
// its Headers stored only when they change. They accept exactly what
// abi.Decoder accepts and produce exactly what abi.AppendRecord produces
// (codec_test.go checks both, with fuzz tests); when a record is refused,
// the caller asks abi.Decoder for the precise error.
//
// runForwarding in guest.go holds a copy of decodeRecord's body, inlined by
// hand because the Go compiler does not inline a function of this size:
// change them together (FuzzProcess checks the copy).

// recordFixed is the size of a record's fixed fields after its size
// prefix: origin, flags, time, key length, value length, header count.
const recordFixed = 4 + 4 + 8 + 4 + 4 + 4

// le32 and le64 read a little-endian integer at p, which the caller has
// checked lies inside the batch. They compile to one load each.
func le32(p unsafe.Pointer) uint32 { return binary.LittleEndian.Uint32((*[4]byte)(p)[:]) }
func le64(p unsafe.Pointer) uint64 { return binary.LittleEndian.Uint64((*[8]byte)(p)[:]) }

// slice returns the n bytes at p+off, which the caller has checked lie
// inside the batch, with their capacity clipped, or nil when n is 0. The
// batch, which sluice_alloc handed out, is at most maxAlloc bytes long; a
// slice expression on it would cost a bounds check per index, and
// unsafe.Slice a function call.
func slice(p unsafe.Pointer, off, n uint64) []byte {
	if n == 0 {
		return nil
	}
	return (*[maxAlloc]byte)(unsafe.Add(p, off))[:n:n]
}

// putLE32 writes v little-endian at p, which the caller has checked lies
// inside the batch.
func putLE32(p unsafe.Pointer, v uint32) { binary.LittleEndian.PutUint32((*[4]byte)(p)[:], v) }

// decodeRecord decodes the record at batch[off:] into r, reusing *hdrs for
// its headers, and returns the offset after it, or -1 when the record is
// malformed (r is then unspecified). r's slices alias batch, with their
// capacity clipped to their length; an empty key, value or header list is
// nil. r.Headers is stored only when it changes, which saves a
// write-barrier check per record when r is reused from record to record.
func decodeRecord(batch []byte, off int, r *Record, hdrs *[]Header) int {
	if off < 0 || off > len(batch) {
		return -1
	}
	rest := batch[off:]
	if len(rest) < 4+recordFixed {
		return -1
	}
	p := unsafe.Pointer(&rest[0])
	size := uint64(le32(p))
	klen := uint64(le32(unsafe.Add(p, 20)))
	// size-recordFixed wraps around when size < recordFixed.
	// The SDK declares abi.FeatureInputs: the flags hold the record's
	// input and no other bit.
	flags := le32(unsafe.Add(p, 8))
	if size-recordFixed > uint64(len(rest))-4-recordFixed || klen > size-recordFixed || flags > abi.FlagsInput {
		return -1
	}
	vlen := uint64(le32(unsafe.Add(p, 24+klen)))
	if vlen > size-recordFixed-klen {
		return -1
	}
	nh := le32(unsafe.Add(p, 28+klen+vlen))
	r.Time = int64(le64(unsafe.Add(p, 12)))
	r.Input = int(flags)
	if nh == 0 {
		if klen+vlen != size-recordFixed {
			return -1
		}
		if r.Headers != nil {
			r.Headers = nil
		}
	} else if r.Headers = decodeHeaders(rest[32+klen+vlen:4+size], nh, hdrs); r.Headers == nil {
		return -1
	}
	r.Key, r.Value = slice(p, 24, klen), slice(p, 28+klen, vlen)
	return off + 4 + int(size)
}

// decodeHeaders decodes the nh headers that make up b exactly, reusing
// *hdrs, and returns them with their capacity clipped, or nil when b does
// not hold exactly nh headers.
func decodeHeaders(b []byte, nh uint32, hdrs *[]Header) []Header {
	le := binary.LittleEndian
	if uint64(nh)*8 > uint64(len(b)) {
		return nil
	}
	hs := (*hdrs)[:0]
	p := 0
	for range nh {
		if len(b)-p < 4 {
			return nil
		}
		n := le.Uint32(b[p:])
		p += 4
		if uint64(n) > uint64(len(b)-p) {
			return nil
		}
		name := nilIfEmpty(b[p : p+int(n) : p+int(n)])
		p += int(n)
		if len(b)-p < 4 {
			return nil
		}
		n = le.Uint32(b[p:])
		p += 4
		if uint64(n) > uint64(len(b)-p) {
			return nil
		}
		hs = append(hs, Header{Name: name, Value: nilIfEmpty(b[p : p+int(n) : p+int(n)])})
		p += int(n)
	}
	*hdrs = hs
	if p != len(b) {
		return nil
	}
	return hs[:len(hs):len(hs)]
}

// headersForward reports whether hs are still the headers encoded in b (a
// record's encoding after its header count), name and value slices
// pointing where decodeHeaders made them point, so that the record's
// encoding can be forwarded for them.
func headersForward(hs []Header, b []byte) bool {
	le := binary.LittleEndian
	p := 0
	for i := range hs {
		for _, f := range [2][]byte{hs[i].Name, hs[i].Value} {
			if len(b)-p < 4 {
				return false
			}
			n := int(le.Uint32(b[p:]))
			p += 4
			if len(f) != n || n > len(b)-p || n > 0 && unsafe.SliceData(f) != &b[p] {
				return false
			}
			p += n
		}
	}
	return p == len(b)
}

func nilIfEmpty(b []byte) []byte {
	if len(b) == 0 {
		return nil
	}
	return b
}

// appendRecord appends the encoding of r with the given origin to dst. A
// record without headers, the common case, takes the short way: a smaller
// function is a cheaper call in WebAssembly.
func appendRecord(dst []byte, origin uint32, r *Record) []byte {
	if len(r.Headers) > 0 {
		return appendRecordHeaders(dst, origin, r)
	}
	klen, vlen := len(r.Key), len(r.Value)
	n := 4 + recordFixed + klen + vlen
	at := len(dst)
	if cap(dst)-at < n {
		dst = append(dst[:cap(dst)], make([]byte, n)...)
	}
	dst = dst[:at+n]
	b := dst[at:]
	le := binary.LittleEndian
	h := (*[24]byte)(b)
	le.PutUint32(h[0:], uint32(n-4))
	le.PutUint32(h[4:], origin)
	le.PutUint32(h[8:], 0) // flags: an output has no input
	le.PutUint64(h[12:], uint64(r.Time))
	le.PutUint32(h[20:], uint32(klen))
	copy(b[24:], r.Key)
	le.PutUint32(b[24+klen:], uint32(vlen))
	copy(b[28+klen:], r.Value)
	le.PutUint32(b[28+klen+vlen:], 0)
	return dst
}

// appendRecordHeaders is appendRecord for a record with headers.
func appendRecordHeaders(dst []byte, origin uint32, r *Record) []byte {
	n := 4 + recordFixed + len(r.Key) + len(r.Value)
	for i := range r.Headers {
		n += 8 + len(r.Headers[i].Name) + len(r.Headers[i].Value)
	}
	at := len(dst)
	if cap(dst)-at < n {
		dst = append(dst[:cap(dst)], make([]byte, n)...)
	}
	dst = dst[:at+n]
	b := dst[at:]
	le := binary.LittleEndian
	le.PutUint32(b, uint32(n-4))
	le.PutUint32(b[4:], origin)
	le.PutUint32(b[8:], 0) // flags: an output has no input
	le.PutUint64(b[12:], uint64(r.Time))
	le.PutUint32(b[20:], uint32(len(r.Key)))
	p := 24 + copy(b[24:], r.Key)
	le.PutUint32(b[p:], uint32(len(r.Value)))
	p += 4
	p += copy(b[p:], r.Value)
	le.PutUint32(b[p:], uint32(len(r.Headers)))
	p += 4
	for i := range r.Headers {
		h := &r.Headers[i]
		le.PutUint32(b[p:], uint32(len(h.Name)))
		p += 4
		p += copy(b[p:], h.Name)
		le.PutUint32(b[p:], uint32(len(h.Value)))
		p += 4
		p += copy(b[p:], h.Value)
	}
	return dst
}

// errDecoderMismatch is reported if the SDK's decoder refuses a batch that
// abi.Decoder accepts: a bug in this file or in runForwarding.
var errDecoderMismatch = errors.New("sluice: internal error: the SDK's decoder refused a batch that abi.Decoder accepts")

// batchError returns abi.Decoder's account of what is wrong with batch,
// for the log, once the SDK's decoder has refused one of its records.
func batchError(batch []byte) error {
	var d abi.Decoder
	d.AllowInputs(true) // as the SDK's decoders: it declares abi.FeatureInputs
	if err := d.Reset(batch); err != nil {
		return err
	}
	var r abi.Record
	for d.Next(&r) {
	}
	if err := d.Err(); err != nil {
		return err
	}
	// Not reached while the two decoders agree (codec_test.go).
	return errDecoderMismatch
}
