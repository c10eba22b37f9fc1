package abi

import (
	"encoding/binary"
	"fmt"
)

// Window functions (ABI.md, section 13). An aggregate guest exports
// ExportAggAdd, ExportAggMerge and ExportAggFire; a window function guest
// exports ExportWindowFire. The host keeps the windows, their contents and
// their accumulators, and calls these exports in batches: many keys, slices
// or windows per call.
const (
	// ExportAggAdd: sluice_agg_add(ptr i32, len i32) -> i32. Receives a
	// group batch (AppendGroup): one group per key and slice, whose head
	// carries the accumulator so far (an empty Value when there is none)
	// and whose members are the records to fold into it. The guest emits
	// exactly one record per group, Origin the group's index, Value the
	// new accumulator. Returns a status.
	ExportAggAdd = "sluice_agg_add"
	// ExportAggMerge: sluice_agg_merge(ptr i32, len i32) -> i32. Receives
	// a batch of 2n records, records 2j and 2j+1 two accumulators of one
	// key; the guest emits one record per pair, Origin j, Value the merged
	// accumulator. Returns a status.
	ExportAggMerge = "sluice_agg_merge"
	// ExportAggFire: sluice_agg_fire(ptr i32, len i32) -> i32. Receives a
	// batch of one record per firing window (Value the accumulator,
	// headers HeaderWindowStart, HeaderWindowEnd and HeaderFiring); the
	// guest emits the results, Origin the firing's index. Returns a
	// status.
	ExportAggFire = "sluice_agg_fire"
	// ExportWindowFire: sluice_window_fire(ptr i32, len i32) -> i32.
	// Receives a group batch: one group per firing window, whose head
	// carries the window's headers and whose members are the key's
	// records of the window in arrival order; the guest emits the
	// results, Origin the group's index. Returns a status.
	ExportWindowFire = "sluice_window_fire"
)

// The headers of a firing window, on the records the host hands
// ExportAggFire and on the heads of ExportWindowFire's groups.
const (
	// HeaderWindowStart is the window's start, in ns since the Unix epoch,
	// as an 8-byte little-endian i64 (AppendWindowTime).
	HeaderWindowStart = "sluice-window-start"
	// HeaderWindowEnd is the window's end, exclusive, encoded as
	// HeaderWindowStart.
	HeaderWindowEnd = "sluice-window-end"
	// HeaderFiring says why the window fires: FiringEarly, FiringOnTime or
	// FiringLate.
	HeaderFiring = "sluice-firing"
)

// The values of HeaderFiring.
const (
	// FiringEarly: an early firing, before the window's end (a count or
	// interval trigger); the window fires again.
	FiringEarly = "early"
	// FiringOnTime: the firing at the window's end.
	FiringOnTime = "on-time"
	// FiringLate: a firing after the window's end, for records that
	// arrived late within the allowed lateness; it updates a result
	// already emitted.
	FiringLate = "late"
)

// AppendWindowTime appends the encoding of a window bound (HeaderWindowStart,
// HeaderWindowEnd): t as 8 little-endian bytes.
func AppendWindowTime(dst []byte, t int64) []byte {
	return binary.LittleEndian.AppendUint64(dst, uint64(t))
}

// WindowTime decodes a window bound, and reports whether b has the 8 bytes
// of one.
func WindowTime(b []byte) (int64, bool) {
	if len(b) != 8 {
		return 0, false
	}
	return int64(binary.LittleEndian.Uint64(b)), true
}

// A group batch (ABI.md section 4):
//
//	groups = count:u32 group{count}
//	group  = head:record members:batch
//
// begins with AppendBatchHeader(dst, count), followed by count groups of
// AppendGroup.

// MinEncodedGroupSize is the fewest bytes a group takes in a group batch:
// a head with no key, value or headers and no members.
const MinEncodedGroupSize = MinEncodedRecordSize + BatchHeaderSize

// GroupSize returns the number of bytes AppendGroup adds for head and
// members.
func GroupSize(head *Record, members []Record) int {
	n := EncodedSize(head) + BatchHeaderSize
	for i := range members {
		n += EncodedSize(&members[i])
	}
	return n
}

// AppendGroup appends the encoding of one group to dst: head, then the
// batch of members, each with its Origin and Input as given.
func AppendGroup(dst []byte, head *Record, members []Record) []byte {
	dst = AppendRecord(dst, head)
	dst = AppendBatchHeader(dst, uint32(len(members)))
	for i := range members {
		dst = AppendRecord(dst, &members[i])
	}
	return dst
}

// GroupDecodeError says where and why a group batch failed to decode.
type GroupDecodeError struct {
	Offset int // byte offset in the group batch where the problem is
	// Group is the index of the group being decoded, -1 for the batch's
	// header.
	Group int
	// Member is the index, within its group, of the member being decoded;
	// -1 for the group's head, -2 for its members' count.
	Member int
	Reason string
}

func (e *GroupDecodeError) Error() string {
	switch {
	case e.Group < 0:
		return fmt.Sprintf("abi: malformed group batch header at byte %d: %s", e.Offset, e.Reason)
	case e.Member == -1:
		return fmt.Sprintf("abi: malformed head of group %d at byte %d: %s", e.Group, e.Offset, e.Reason)
	case e.Member == -2:
		return fmt.Sprintf("abi: malformed member count of group %d at byte %d: %s", e.Group, e.Offset, e.Reason)
	}
	return fmt.Sprintf("abi: malformed member %d of group %d at byte %d: %s", e.Member, e.Group, e.Offset, e.Reason)
}

// Unwrap makes errors.Is(err, ErrMalformed) hold.
func (e *GroupDecodeError) Unwrap() error { return ErrMalformed }

// GroupDecoder reads the groups of one encoded group batch without
// copying, with Decoder's checks on every record:
//
//	d, err := abi.NewGroupDecoder(buf)
//	for members, ok := d.Next(&head); ok; members, ok = d.Next(&head) {
//		for members.Next(&rec) { ... }
//	}
//	if err := d.Err(); err != nil { ... }
//
// Members left unread are skipped, and checked, by the next call of Next.
type GroupDecoder struct {
	buf          []byte
	off          int
	count, index uint32
	err          error
	head         Decoder
	members      Decoder
	started      bool // members hold the group index-1's members
}

// NewGroupDecoder returns a GroupDecoder over batch, having read its
// header.
func NewGroupDecoder(batch []byte) (*GroupDecoder, error) {
	d := &GroupDecoder{}
	if err := d.Reset(batch); err != nil {
		return nil, err
	}
	return d, nil
}

// Reset makes d decode batch from its start, reusing d's buffers.
func (d *GroupDecoder) Reset(batch []byte) error {
	d.buf, d.off, d.index, d.err, d.started = batch, BatchHeaderSize, 0, nil, false
	d.count = 0
	if len(batch) < BatchHeaderSize {
		d.err = &GroupDecodeError{Offset: 0, Group: -1, Reason: fmt.Sprintf("batch is %d bytes, shorter than its 4-byte header", len(batch))}
		return d.err
	}
	d.count = binary.LittleEndian.Uint32(batch)
	if uint64(d.count)*MinEncodedGroupSize > uint64(len(batch)-BatchHeaderSize) {
		d.err = &GroupDecodeError{Offset: 0, Group: -1, Reason: fmt.Sprintf("count %d does not fit in %d bytes", d.count, len(batch))}
		return d.err
	}
	return nil
}

// AllowInputs sets whether d accepts records whose flags hold an input,
// as Decoder.AllowInputs.
func (d *GroupDecoder) AllowInputs(allow bool) {
	d.head.AllowInputs(allow)
	d.members.AllowInputs(allow)
}

// Count returns the number of groups the batch header announces.
func (d *GroupDecoder) Count() int { return int(d.count) }

// Err returns the first decoding error, or nil.
func (d *GroupDecoder) Err() error { return d.err }

// Next decodes the next group's head into head and returns a Decoder of its
// members, valid until the next call of Next, and whether there was a
// group. It returns false at the end of the batch or on an error; Err tells
// which. head's slices alias the batch, and head.Headers a slice owned by
// d, valid until the next call.
func (d *GroupDecoder) Next(head *Record) (*Decoder, bool) {
	if d.err != nil {
		return nil, false
	}
	if d.started {
		// Skip, and check, what the caller left of the last group.
		var r Record
		for d.members.Next(&r) {
		}
		if err := d.members.err; err != nil {
			d.memberFail(err)
			return nil, false
		}
		d.off = d.members.off
		d.started = false
	}
	g := int(d.index)
	if d.index == d.count {
		if d.off != len(d.buf) {
			d.err = &GroupDecodeError{Offset: d.off, Group: -1, Reason: fmt.Sprintf("%d trailing bytes after the last of %d groups", len(d.buf)-d.off, d.count)}
		}
		return nil, false
	}
	h := &d.head
	h.buf, h.off, h.count, h.index, h.err, h.open = d.buf, d.off, 1, 0, nil, true
	if !h.Next(head) {
		var de *DecodeError
		if e, ok := h.err.(*DecodeError); ok {
			de = e
		}
		d.err = &GroupDecodeError{Offset: de.Offset, Group: g, Member: -1, Reason: de.Reason}
		return nil, false
	}
	d.off = h.off
	if len(d.buf)-d.off < BatchHeaderSize {
		d.err = &GroupDecodeError{Offset: d.off, Group: g, Member: -2, Reason: "truncated member count"}
		return nil, false
	}
	n := binary.LittleEndian.Uint32(d.buf[d.off:])
	// The members and the groups after this one take their least bytes.
	need := uint64(n)*MinEncodedRecordSize + uint64(d.count-d.index-1)*MinEncodedGroupSize
	if need > uint64(len(d.buf)-d.off-BatchHeaderSize) {
		d.err = &GroupDecodeError{Offset: d.off, Group: g, Member: -2, Reason: fmt.Sprintf("member count %d does not fit in the %d bytes left", n, len(d.buf)-d.off-BatchHeaderSize)}
		return nil, false
	}
	m := &d.members
	m.buf, m.off, m.count, m.index, m.err, m.open = d.buf, d.off+BatchHeaderSize, n, 0, nil, true
	d.index++
	d.started = true
	return m, true
}

// memberFail records a member's decoding error as the group's.
func (d *GroupDecoder) memberFail(err error) {
	de, _ := err.(*DecodeError)
	d.err = &GroupDecodeError{Offset: de.Offset, Group: int(d.index) - 1, Member: de.Record, Reason: de.Reason}
}
