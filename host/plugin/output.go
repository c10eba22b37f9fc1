package plugin

import "github.com/sluicehq/sluice/abi"

// Output collects what Process produces. Process appends to it; the caller
// calls Reset between batches.
//
// Records' byte slices point into an arena owned by the Output: they are
// valid until the next Reset, and must be copied to be kept longer. The arena
// and the slices are reused across batches, so once they have grown to the
// size of the largest batch, collecting output allocates nothing.
type Output struct {
	// Records are the output records, in the order the guest emitted them.
	// Each Origin is the index, in the batch given to Process, of the input
	// record it was produced from.
	Records []abi.Record
	// Rejects are the input records that failed, in input order for those
	// isolated after a failed batch call, in reject order for those the
	// guest rejected.
	Rejects []Reject

	bytes    []byte       // current byte chunk; earlier chunks are referenced by Records only
	spilled  int          // bytes in earlier chunks since Reset
	hdrs     []abi.Header // current header chunk
	hspilled int          // headers in earlier chunks since Reset
}

// Reject is an input record that failed without failing its batch.
type Reject struct {
	Index int   // the record's index in the batch given to Process
	Err   error // a *RecordError
}

// Reset empties o, keeping its memory for the next batch.
func (o *Output) Reset() {
	if o.spilled > 0 || o.hspilled > 0 {
		// Records may point into chunks that are let go now: clear them,
		// those past the length included, so that they are not kept.
		// Otherwise every record, up to the capacity, points into the
		// chunks that are kept, and clearing would cost a pass over them
		// for nothing.
		clear(o.Records[:cap(o.Records)])
	}
	clear(o.Rejects)
	o.Records, o.Rejects = o.Records[:0], o.Rejects[:0]
	if o.spilled > 0 {
		// The batch outgrew the chunk: make one chunk that holds it all.
		o.bytes = make([]byte, 0, o.spilled+len(o.bytes))
		o.spilled = 0
	} else {
		o.bytes = o.bytes[:0]
	}
	if o.hspilled > 0 {
		o.hdrs = make([]abi.Header, 0, o.hspilled+len(o.hdrs))
		o.hspilled = 0
	} else {
		o.hdrs = o.hdrs[:0]
	}
}

// mark is a point to truncate an Output back to.
type mark struct {
	records, rejects int
	bytes, spilled   int
	hdrs, hspilled   int
}

func (o *Output) mark() mark {
	return mark{len(o.Records), len(o.Rejects), len(o.bytes), o.spilled, len(o.hdrs), o.hspilled}
}

// truncate drops what was added after m. Arena space is reclaimed when no
// chunk was started since m; otherwise it stays unused until Reset.
func (o *Output) truncate(m mark) {
	clear(o.Records[m.records:])
	clear(o.Rejects[m.rejects:])
	o.Records, o.Rejects = o.Records[:m.records], o.Rejects[:m.rejects]
	if o.spilled == m.spilled {
		o.bytes = o.bytes[:m.bytes]
	}
	if o.hspilled == m.hspilled {
		o.hdrs = o.hdrs[:m.hdrs]
	}
}

// take returns n bytes of arena. A new chunk is started when the current one
// is full: earlier records keep pointing into the old chunk, which is never
// written again before Reset.
func (o *Output) take(n int) []byte {
	if n == 0 {
		return nil
	}
	if cap(o.bytes)-len(o.bytes) < n {
		o.spilled += len(o.bytes)
		o.bytes = make([]byte, 0, max(2*cap(o.bytes), n, 4096))
	}
	s := len(o.bytes)
	o.bytes = o.bytes[:s+n]
	return o.bytes[s : s+n : s+n]
}

// takeHeaders returns n headers of arena, as take does bytes.
func (o *Output) takeHeaders(n int) []abi.Header {
	if n == 0 {
		return nil
	}
	if cap(o.hdrs)-len(o.hdrs) < n {
		o.hspilled += len(o.hdrs)
		o.hdrs = make([]abi.Header, 0, max(2*cap(o.hdrs), n, 64))
	}
	s := len(o.hdrs)
	o.hdrs = o.hdrs[:s+n]
	return o.hdrs[s : s+n : s+n]
}

// addAliased appends r, whose key and value already lie in the arena (an
// emitted batch copied there whole), with its Origin shifted by base. Only
// the header structs are copied: the decoder reuses its header slice.
func (o *Output) addAliased(r *abi.Record, base uint32) {
	if len(o.Records) == cap(o.Records) {
		o.growRecords(1)
	}
	o.Records = o.Records[:len(o.Records)+1]
	c := &o.Records[len(o.Records)-1]
	// An output has no input of its own: the host gives it one when it
	// feeds it to an operator.
	c.Origin, c.Input, c.Time, c.Key, c.Value, c.Headers = r.Origin+base, 0, r.Time, r.Key, r.Value, nil
	if len(r.Headers) > 0 {
		c.Headers = o.takeHeaders(len(r.Headers))
		copy(c.Headers, r.Headers)
	}
}

// growRecords makes room for n more records, doubling the capacity when it
// must grow: append's smaller steps for large slices would allocate about
// five times the final size on the way to it, and a guest decides how many
// records a call emits.
func (o *Output) growRecords(n int) {
	if cap(o.Records)-len(o.Records) >= n {
		return
	}
	grown := make([]abi.Record, len(o.Records), max(2*cap(o.Records), len(o.Records)+n, 64))
	copy(grown, o.Records)
	o.Records = grown
}

// add appends a copy of r, its bytes copied into the arena.
func (o *Output) add(r *abi.Record) {
	if len(o.Records) == cap(o.Records) {
		o.growRecords(1)
	}
	o.Records = o.Records[:len(o.Records)+1]
	c := &o.Records[len(o.Records)-1]
	c.Origin, c.Input, c.Time, c.Headers = r.Origin, 0, r.Time, nil
	c.Key, c.Value = o.copyBytes(r.Key), o.copyBytes(r.Value)
	if len(r.Headers) > 0 {
		c.Headers = o.takeHeaders(len(r.Headers))
		for k, h := range r.Headers {
			c.Headers[k] = abi.Header{Name: o.copyBytes(h.Name), Value: o.copyBytes(h.Value)}
		}
	}
}

// copyBytes copies b into the arena.
func (o *Output) copyBytes(b []byte) []byte {
	d := o.take(len(b))
	copy(d, b)
	return d
}
