package sluice

import (
	"encoding/binary"
	"errors"

	"github.com/sluicehq/sluice/abi"
)

// The SDK's record codec: the encoding of abi/ABI.md written for Go's
// WebAssembly code generator, where abi.Decoder.Next and abi.AppendRecord
// cost about 150 and 125 ns per 64-byte record against about 70 and 110 ns
// for these: one function per record, one growth check per output record,
// no error values built on the hot path. They accept exactly what
// abi.Decoder accepts and produce exactly what abi.AppendRecord produces
// (codec_test.go checks both, with a fuzz test); when decodeRecord refuses a
// record, the caller asks abi.Decoder for the precise error.

// recordFixed is the size of a record's fixed fields after its size
// prefix: origin, flags, time, key length, value length, header count.
const recordFixed = 4 + 4 + 8 + 4 + 4 + 4

// decodeRecord decodes the record at batch[off:] into r, reusing *hdrs for
// its headers, and returns the offset after it. It reports false when the
// record is malformed; r is then unspecified. r's slices alias batch and
// r.Headers has its capacity clipped to its length.
func decodeRecord(batch []byte, off int, r *Record, hdrs *[]Header) (int, bool) {
	le := binary.LittleEndian
	if off < 0 || len(batch)-off < 4+recordFixed {
		return 0, false
	}
	size := le.Uint32(batch[off:])
	if size < recordFixed || uint64(size) > uint64(len(batch)-off-4) {
		return 0, false
	}
	b := batch[off+4 : off+4+int(size)]
	if le.Uint32(b[4:]) != 0 { // reserved flags
		return 0, false
	}
	r.Time = int64(le.Uint64(b[8:]))
	n := le.Uint32(b[16:])
	if uint64(n) > uint64(len(b)-20-8) { // the key, then the value and header count lengths
		return 0, false
	}
	p := 20 + int(n)
	r.Key = nilIfEmpty(b[20:p:p])
	n = le.Uint32(b[p:])
	p += 4
	if uint64(n) > uint64(len(b)-p-4) {
		return 0, false
	}
	r.Value = nilIfEmpty(b[p : p+int(n) : p+int(n)])
	p += int(n)
	nh := le.Uint32(b[p:])
	p += 4
	if nh == 0 {
		r.Headers = nil
		return off + 4 + int(size), p == len(b)
	}
	if uint64(nh)*8 > uint64(len(b)-p) {
		return 0, false
	}
	hs := (*hdrs)[:0]
	for range nh {
		if len(b)-p < 4 {
			return 0, false
		}
		n = le.Uint32(b[p:])
		p += 4
		if uint64(n) > uint64(len(b)-p) {
			return 0, false
		}
		name := nilIfEmpty(b[p : p+int(n) : p+int(n)])
		p += int(n)
		if len(b)-p < 4 {
			return 0, false
		}
		n = le.Uint32(b[p:])
		p += 4
		if uint64(n) > uint64(len(b)-p) {
			return 0, false
		}
		hs = append(hs, Header{Name: name, Value: nilIfEmpty(b[p : p+int(n) : p+int(n)])})
		p += int(n)
	}
	*hdrs = hs
	r.Headers = hs[:len(hs):len(hs)]
	return off + 4 + int(size), p == len(b)
}

func nilIfEmpty(b []byte) []byte {
	if len(b) == 0 {
		return nil
	}
	return b
}

// appendRecord appends the encoding of r with the given origin to dst.
func appendRecord(dst []byte, origin uint32, r *Record) []byte {
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
	le.PutUint32(b[8:], 0)
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

// errDecoderMismatch is reported if decodeRecord refuses a batch that
// abi.Decoder accepts: a bug in this file.
var errDecoderMismatch = errors.New("sluice: internal error: the SDK's decoder refused a batch that abi.Decoder accepts")

// batchError returns abi.Decoder's account of what is wrong with batch,
// for the log, once decodeRecord has refused one of its records.
func batchError(batch []byte) error {
	var d abi.Decoder
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
