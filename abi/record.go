package abi

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
)

// Header is one name/value pair carried with a record, like a NATS header.
type Header struct {
	Name  []byte
	Value []byte
}

// Record is the unit of data that flows through a pipeline.
//
// A Record produced by Decoder aliases the decoded buffer: its slices are
// valid only as long as that buffer is, and must be copied to be kept.
type Record struct {
	// Origin is the index, within the input batch, of the record this one
	// was produced from. In an input batch it is the record's own index.
	Origin uint32
	// Input is the position, in the operator's list of inputs, of the
	// input the record arrived on: 0 for an operator with one input. It
	// travels in the low bits of the record's flags (FlagsInput), and a
	// guest sees it only when it declared FeatureInputs: the host encodes
	// 0 for any other guest (ABI.md sections 4 and 9).
	Input uint16
	// Time is the event time in nanoseconds since the Unix epoch.
	Time    int64
	Key     []byte
	Value   []byte
	Headers []Header
}

// Encoding sizes.
const (
	// BatchHeaderSize is the size of a batch's leading record count.
	BatchHeaderSize = 4
	// recordFixedSize is the size of a record's fixed fields after its size
	// prefix: origin, flags, time, key length, value length, header count.
	recordFixedSize = 4 + 4 + 8 + 4 + 4 + 4
	// MinEncodedRecordSize is the fewest bytes a record takes in a batch,
	// its size prefix included: one with no key, value or headers.
	MinEncodedRecordSize = 4 + recordFixedSize
	// MaxRecordSize bounds the bytes one record carries (DataSize: 16
	// MiB), the highest limit on them a pipeline may set.
	MaxRecordSize = 16 << 20
)

// The bits of a record's flags field (ABI.md section 4). Version 1 reserved
// them all and decoders refuse a record with any set, except the bits a
// guest negotiated: FlagsInput, for a guest that declares FeatureInputs.
const (
	// FlagsInput is the bits of a record's flags that hold its Input, for
	// a guest that declares FeatureInputs.
	FlagsInput uint32 = 0xffff
	// MaxInputs is the most inputs an operator can tell apart: an Input
	// fills FlagsInput.
	MaxInputs = int(FlagsInput) + 1
)

// EncodedSize returns the number of bytes AppendRecord adds for r.
func EncodedSize(r *Record) int {
	n := 4 + recordFixedSize + len(r.Key) + len(r.Value)
	for i := range r.Headers {
		n += 8 + len(r.Headers[i].Name) + len(r.Headers[i].Value)
	}
	return n
}

// DataSize returns the bytes r carries: its key, its value, and its
// headers' names and values, without the framing EncodedSize adds. It is
// the measure of an operator's limit on record size.
func DataSize(r *Record) int {
	n := len(r.Key) + len(r.Value)
	for i := range r.Headers {
		n += len(r.Headers[i].Name) + len(r.Headers[i].Value)
	}
	return n
}

// AppendBatchHeader appends a batch header announcing count records.
func AppendBatchHeader(dst []byte, count uint32) []byte {
	return binary.LittleEndian.AppendUint32(dst, count)
}

// SetBatchCount overwrites the record count of the batch that starts at
// batch[0], for writers that learn the count only at the end.
func SetBatchCount(batch []byte, count uint32) {
	binary.LittleEndian.PutUint32(batch, count)
}

// AppendRecord appends the encoding of r to dst. r.Input goes into the
// record's flags: a writer for a guest that has not declared FeatureInputs
// encodes records whose Input is 0.
func AppendRecord(dst []byte, r *Record) []byte {
	le := binary.LittleEndian
	dst = le.AppendUint32(dst, uint32(EncodedSize(r)-4))
	dst = le.AppendUint32(dst, r.Origin)
	dst = le.AppendUint32(dst, uint32(r.Input)) // flags: FlagsInput
	dst = le.AppendUint64(dst, uint64(r.Time))
	dst = le.AppendUint32(dst, uint32(len(r.Key)))
	dst = append(dst, r.Key...)
	dst = le.AppendUint32(dst, uint32(len(r.Value)))
	dst = append(dst, r.Value...)
	dst = le.AppendUint32(dst, uint32(len(r.Headers)))
	for i := range r.Headers {
		h := &r.Headers[i]
		dst = le.AppendUint32(dst, uint32(len(h.Name)))
		dst = append(dst, h.Name...)
		dst = le.AppendUint32(dst, uint32(len(h.Value)))
		dst = append(dst, h.Value...)
	}
	return dst
}

// ErrMalformed is wrapped by every decoding error.
var ErrMalformed = errors.New("abi: malformed batch")

// DecodeError says where and why a batch failed to decode.
type DecodeError struct {
	Offset int    // byte offset in the batch where the problem is
	Record int    // index of the record being decoded, -1 for the header
	Reason string // what is wrong
}

func (e *DecodeError) Error() string {
	if e.Record < 0 {
		return fmt.Sprintf("abi: malformed batch header at byte %d: %s", e.Offset, e.Reason)
	}
	return fmt.Sprintf("abi: malformed record %d at byte %d: %s", e.Record, e.Offset, e.Reason)
}

// Unwrap makes errors.Is(err, ErrMalformed) hold.
func (e *DecodeError) Unwrap() error { return ErrMalformed }

// Decoder reads the records of one encoded batch without copying.
//
//	d, err := abi.NewDecoder(buf)
//	for d.Next(&rec) { ... }
//	if err := d.Err(); err != nil { ... }
//
// A Decoder refuses every non-zero record flag, as version 1 of the ABI
// always did, until AllowInputs lets it read the bits of FlagsInput into
// Record.Input.
type Decoder struct {
	buf   []byte
	off   int
	count uint32
	index uint32
	err   error
	hdrs  []Header
	// flags are the bits of a record's flags d accepts.
	flags uint32
	// open is set for a batch embedded in a larger encoding (a group's
	// head or members, window.go): bytes may follow its last record.
	open bool
}

// NewDecoder returns a Decoder over batch, having read its header.
func NewDecoder(batch []byte) (*Decoder, error) {
	d := &Decoder{}
	if err := d.Reset(batch); err != nil {
		return nil, err
	}
	return d, nil
}

// Reset makes d decode batch from its start, reusing d's buffers.
func (d *Decoder) Reset(batch []byte) error {
	d.buf, d.off, d.index, d.err, d.open = batch, BatchHeaderSize, 0, nil, false
	if len(batch) < BatchHeaderSize {
		d.count = 0
		d.err = &DecodeError{Offset: 0, Record: -1, Reason: fmt.Sprintf("batch is %d bytes, shorter than its 4-byte header", len(batch))}
		return d.err
	}
	d.count = binary.LittleEndian.Uint32(batch)
	// Every record takes at least 4+recordFixedSize bytes: a count that
	// cannot fit is refused before anything is allocated for it.
	if uint64(d.count)*(4+recordFixedSize) > uint64(len(batch)-BatchHeaderSize) {
		d.err = &DecodeError{Offset: 0, Record: -1, Reason: fmt.Sprintf("count %d does not fit in %d bytes", d.count, len(batch))}
		return d.err
	}
	return nil
}

// AllowInputs sets whether d accepts records whose flags hold an input
// (FlagsInput), as a guest that declared FeatureInputs receives, and
// decodes it into Record.Input. Without it, d refuses any non-zero flags
// and decodes every Input as 0. Other flag bits are refused either way.
// The setting holds across Reset.
func (d *Decoder) AllowInputs(allow bool) {
	d.flags = 0
	if allow {
		d.flags = FlagsInput
	}
}

// Count returns the number of records the batch header announces.
func (d *Decoder) Count() int { return int(d.count) }

// Err returns the first decoding error, or nil.
func (d *Decoder) Err() error { return d.err }

// Next decodes the next record into r and reports whether it did. It returns
// false at the end of the batch or on an error; Err tells which. r's slices
// alias the batch; r.Headers reuses a slice owned by d, valid until the next
// call of Next.
func (d *Decoder) Next(r *Record) bool {
	if d.err != nil {
		return false
	}
	if d.index == d.count {
		if d.off != len(d.buf) && !d.open {
			d.fail(d.off, int(d.count), fmt.Sprintf("%d trailing bytes after the last of %d records", len(d.buf)-d.off, d.count))
		}
		return false
	}
	start := d.off
	rec := int(d.index)
	le := binary.LittleEndian
	if len(d.buf)-start < 4+recordFixedSize {
		d.fail(start, rec, "truncated record header")
		return false
	}
	size := le.Uint32(d.buf[start:])
	end := uint64(start) + 4 + uint64(size)
	if size < recordFixedSize || end > uint64(len(d.buf)) {
		d.fail(start, rec, fmt.Sprintf("record size %d does not fit in the %d bytes left", size, len(d.buf)-start-4))
		return false
	}
	b := d.buf[start+4 : int(end)]
	r.Origin = le.Uint32(b)
	flags := le.Uint32(b[4:])
	if flags&^d.flags != 0 {
		d.fail(start+8, rec, d.flagsReason(flags))
		return false
	}
	r.Input = uint16(flags & FlagsInput)
	r.Time = int64(le.Uint64(b[8:]))
	p := 16
	var ok bool
	if r.Key, p, ok = field(b, p); !ok {
		d.fail(start+4+p, rec, "key length exceeds the record")
		return false
	}
	if r.Value, p, ok = field(b, p); !ok {
		d.fail(start+4+p, rec, "value length exceeds the record")
		return false
	}
	if len(b)-p < 4 {
		d.fail(start+4+p, rec, "truncated header count")
		return false
	}
	n := le.Uint32(b[p:])
	p += 4
	if uint64(n)*8 > uint64(len(b)-p) {
		d.fail(start+4+p-4, rec, fmt.Sprintf("header count %d does not fit in the record", n))
		return false
	}
	d.hdrs = d.hdrs[:0]
	for i := uint32(0); i < n; i++ {
		var h Header
		if h.Name, p, ok = field(b, p); !ok {
			d.fail(start+4+p, rec, fmt.Sprintf("header %d name length exceeds the record", i))
			return false
		}
		if h.Value, p, ok = field(b, p); !ok {
			d.fail(start+4+p, rec, fmt.Sprintf("header %d value length exceeds the record", i))
			return false
		}
		d.hdrs = append(d.hdrs, h)
	}
	if p != len(b) {
		d.fail(start+4+p, rec, fmt.Sprintf("%d unused bytes at the end of the record", len(b)-p))
		return false
	}
	if n == 0 {
		r.Headers = nil
	} else {
		r.Headers = d.hdrs
	}
	d.off = int(end)
	d.index++
	return true
}

// field reads a u32-length-prefixed byte string at b[p:].
func field(b []byte, p int) ([]byte, int, bool) {
	if len(b)-p < 4 {
		return nil, p, false
	}
	n := binary.LittleEndian.Uint32(b[p:])
	p += 4
	if uint64(n) > uint64(len(b)-p) || n > math.MaxInt32 {
		return nil, p - 4, false
	}
	if n == 0 {
		return nil, p, true
	}
	return b[p : p+int(n) : p+int(n)], p + int(n), true
}

// flagsReason says why d refuses a record's flags.
func (d *Decoder) flagsReason(flags uint32) string {
	if d.flags == 0 {
		return fmt.Sprintf("reserved flags are %#x, want 0", flags)
	}
	return fmt.Sprintf("reserved flags are %#x, want 0 beside the input bits %#x", flags&^d.flags, d.flags)
}

func (d *Decoder) fail(off, rec int, reason string) {
	d.err = &DecodeError{Offset: off, Record: rec, Reason: reason}
}
