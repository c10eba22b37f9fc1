package abi

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"slices"
	"testing"

	"pgregory.net/rapid"
)

// encodeBatch encodes recs as one batch.
func encodeBatch(recs ...Record) []byte {
	b := AppendBatchHeader(nil, uint32(len(recs)))
	for i := range recs {
		b = AppendRecord(b, &recs[i])
	}
	return b
}

// decodeBatch decodes every record of batch, copying the headers slice
// (which the Decoder reuses), with a Decoder that refuses inputs.
func decodeBatch(batch []byte) ([]Record, error) { return decodeBatchInputs(batch, false) }

// decodeBatchInputs is decodeBatch with a Decoder that accepts inputs
// when inputs is set.
func decodeBatchInputs(batch []byte, inputs bool) ([]Record, error) {
	d, err := NewDecoder(batch)
	if err != nil {
		return nil, err
	}
	d.AllowInputs(inputs)
	var out []Record
	var r Record
	for d.Next(&r) {
		c := r
		c.Headers = append([]Header(nil), r.Headers...)
		out = append(out, c)
	}
	return out, d.Err()
}

func equalRecords(a, b []Record) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		x, y := &a[i], &b[i]
		if x.Origin != y.Origin || x.Input != y.Input || x.Time != y.Time || !bytes.Equal(x.Key, y.Key) || !bytes.Equal(x.Value, y.Value) || len(x.Headers) != len(y.Headers) {
			return false
		}
		for j := range x.Headers {
			if !bytes.Equal(x.Headers[j].Name, y.Headers[j].Name) || !bytes.Equal(x.Headers[j].Value, y.Headers[j].Value) {
				return false
			}
		}
	}
	return true
}

func TestRoundTrip(t *testing.T) {
	big := bytes.Repeat([]byte{0xab}, 100_000)
	for _, tc := range []struct {
		name string
		recs []Record
	}{
		{"empty batch", nil},
		{"empty record", []Record{{}}},
		{"key and value", []Record{{Key: []byte("k"), Value: []byte("v")}}},
		{"extremes", []Record{{Origin: math.MaxUint32, Time: math.MinInt64}, {Origin: 1, Time: math.MaxInt64}}},
		{"inputs", []Record{{Input: 1, Key: []byte("k")}, {Input: 0}, {Input: math.MaxUint16, Value: []byte("v")}}},
		{"headers", []Record{{Key: []byte("k"), Headers: []Header{{Name: []byte("a"), Value: []byte("1")}, {Name: []byte("a")}, {Value: []byte("v")}, {}}}}},
		{"large value", []Record{{Key: []byte("big"), Value: big}, {Key: []byte("after")}}},
		{"many", func() []Record {
			var rs []Record
			for i := range 100 {
				rs = append(rs, Record{Origin: uint32(i), Time: int64(i) * 1e9, Key: fmt.Appendf(nil, "key%d", i), Value: bytes.Repeat([]byte{byte(i)}, i)})
			}
			return rs
		}()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			batch := encodeBatch(tc.recs...)
			want := BatchHeaderSize
			for i := range tc.recs {
				want += EncodedSize(&tc.recs[i])
			}
			if len(batch) != want {
				t.Fatalf("encoded %d bytes, EncodedSize says %d", len(batch), want)
			}
			got, err := decodeBatchInputs(batch, true)
			if err != nil {
				t.Fatal(err)
			}
			if !equalRecords(got, tc.recs) {
				t.Fatalf("decoded %+v, want %+v", got, tc.recs)
			}
			// Re-encoding what was decoded gives the same bytes.
			if again := encodeBatch(got...); !bytes.Equal(again, batch) {
				t.Fatal("re-encoding differs")
			}
		})
	}
}

// TestInputs: a record's input travels in its flags; a Decoder reads it
// only after AllowInputs, refuses it before, and refuses the other flag
// bits either way. Input 0 encodes as a version-1 record, flags 0.
func TestInputs(t *testing.T) {
	zero := encodeBatch(Record{Key: []byte("k"), Value: []byte("v")})
	if want := cat(u32(1), sized(body(0, str("k"), str("v"), u32(0)))); !bytes.Equal(zero, want) {
		t.Fatalf("input 0 encodes as %x, want the version-1 bytes %x", zero, want)
	}
	for _, inputs := range []bool{false, true} {
		got, err := decodeBatchInputs(zero, inputs)
		if err != nil || len(got) != 1 || got[0].Input != 0 {
			t.Fatalf("inputs %v: decoding input 0: %+v, %v", inputs, got, err)
		}
	}

	one := encodeBatch(Record{Input: 1, Key: []byte("k"), Value: []byte("v")})
	if want := cat(u32(1), sized(body(1, str("k"), str("v"), u32(0)))); !bytes.Equal(one, want) {
		t.Fatalf("input 1 encodes as %x, want flags 1: %x", one, want)
	}
	got, err := decodeBatchInputs(one, true)
	if err != nil || len(got) != 1 || got[0].Input != 1 {
		t.Fatalf("decoding input 1 with inputs allowed: %+v, %v", got, err)
	}
	var de *DecodeError
	if _, err := decodeBatch(one); !errors.As(err, &de) || de.Offset != 12 || de.Reason != "reserved flags are 0x1, want 0" {
		t.Fatalf("decoding input 1 without inputs: %v, want reserved flags refused", err)
	}

	// AllowInputs holds across Reset, and can be turned off again.
	d, err := NewDecoder(zero)
	if err != nil {
		t.Fatal(err)
	}
	d.AllowInputs(true)
	var r Record
	if err := d.Reset(one); err != nil || !d.Next(&r) || r.Input != 1 {
		t.Fatalf("after Reset: Next gave input %d, err %v", r.Input, d.Err())
	}
	d.AllowInputs(false)
	if err := d.Reset(one); err != nil || d.Next(&r) || d.Err() == nil {
		t.Fatalf("AllowInputs(false): Next accepted input bits (err %v)", d.Err())
	}

	for _, tc := range []struct {
		flags  int
		inputs bool
		reason string
	}{
		{0x10000, false, "reserved flags are 0x10000, want 0"},
		{0x10000, true, "reserved flags are 0x10000, want 0 beside the input bits 0xffff"},
		{0x80000001, true, "reserved flags are 0x80000000, want 0 beside the input bits 0xffff"},
	} {
		batch := cat(u32(1), sized(body(tc.flags, str("k"), str("v"), u32(0))))
		_, err := decodeBatchInputs(batch, tc.inputs)
		if !errors.As(err, &de) || !errors.Is(err, ErrMalformed) || de.Offset != 12 || de.Reason != tc.reason {
			t.Errorf("flags %#x, inputs %v: error %v, want reason %q", tc.flags, tc.inputs, err, tc.reason)
		}
	}
}

func TestDecoderDoesNotCopy(t *testing.T) {
	batch := encodeBatch(Record{Key: []byte("key"), Value: []byte("value")})
	d, err := NewDecoder(batch)
	if err != nil {
		t.Fatal(err)
	}
	var r Record
	if !d.Next(&r) {
		t.Fatal(d.Err())
	}
	r.Value[0] = 'V'
	if !bytes.Contains(batch, []byte("Value")) {
		t.Error("the decoded value does not alias the batch")
	}
	if cap(r.Key) != len(r.Key) {
		t.Error("a decoded slice's capacity reaches past its field: an append would overwrite the next field")
	}
}

func TestSetBatchCountAndReset(t *testing.T) {
	b := AppendBatchHeader(nil, 0)
	b = AppendRecord(b, &Record{Key: []byte("a")})
	b = AppendRecord(b, &Record{Key: []byte("b")})
	SetBatchCount(b, 2)
	got, err := decodeBatch(b)
	if err != nil || len(got) != 2 || string(got[1].Key) != "b" {
		t.Fatalf("after SetBatchCount: %+v, %v", got, err)
	}
	var d Decoder
	for range 2 { // Reset makes a Decoder reusable
		if err := d.Reset(b); err != nil || d.Count() != 2 {
			t.Fatalf("Reset: %v, count %d", err, d.Count())
		}
		n := 0
		for r := (Record{}); d.Next(&r); n++ {
		}
		if n != 2 || d.Err() != nil {
			t.Fatalf("decoded %d records, err %v", n, d.Err())
		}
	}
}

// Builders for hand-made malformed batches.
func u32(v int) []byte { return binary.LittleEndian.AppendUint32(nil, uint32(v)) }

func cat(parts ...[]byte) []byte { return bytes.Join(parts, nil) }

// body returns a record's fields after its size: origin 0, the given flags,
// time 0, then rest.
func body(flags int, rest ...[]byte) []byte {
	return cat(u32(0), u32(flags), make([]byte, 8), cat(rest...))
}

// sized prefixes a record body with its true size.
func sized(b []byte) []byte { return cat(u32(len(b)), b) }

func str(s string) []byte { return cat(u32(len(s)), []byte(s)) }

func TestDecodeErrors(t *testing.T) {
	// A valid record of 34 bytes: key "k", value "v", no headers.
	good := sized(body(0, str("k"), str("v"), u32(0)))
	// A valid record of 46 bytes.
	good46 := sized(body(0, str("k"), str("vvvvvvvvvvvvv"), u32(0)))
	for _, tc := range []struct {
		name   string
		batch  []byte
		offset int
		record int
		reason string
	}{
		{"header too short", []byte{1, 0}, 0, -1, "batch is 2 bytes, shorter than its 4-byte header"},
		{"count does not fit", cat(u32(2), good), 0, -1, "count 2 does not fit in 38 bytes"},
		{"trailing bytes", cat(u32(1), good, []byte{0xaa, 0xbb}), 38, 1, "2 trailing bytes after the last of 1 records"},
		{"truncated record header", cat(u32(2), good46, make([]byte, 20)), 50, 1, "truncated record header"},
		{"size under the fixed fields", cat(u32(1), u32(27), body(0, str("k"), str("v"), u32(0))), 4, 0, "record size 27 does not fit in the 30 bytes left"},
		{"size past the end", cat(u32(1), u32(31), body(0, str("k"), str("v"), u32(0))), 4, 0, "record size 31 does not fit in the 30 bytes left"},
		{"reserved flags", cat(u32(1), sized(body(1, str("k"), str("v"), u32(0)))), 12, 0, "reserved flags are 0x1, want 0"},
		{"key length", cat(u32(1), sized(body(0, u32(100), []byte("k"), str("v"), u32(0)))), 24, 0, "key length exceeds the record"},
		{"value length", cat(u32(1), sized(body(0, str("k"), u32(100), []byte("v"), u32(0)))), 29, 0, "value length exceeds the record"},
		{"truncated header count", cat(u32(1), sized(body(0, str("k"), str("vvv")))), 36, 0, "truncated header count"},
		{"header count", cat(u32(1), sized(body(0, str("k"), str("v"), u32(5)))), 34, 0, "header count 5 does not fit in the record"},
		{"header name length", cat(u32(1), sized(body(0, str("k"), str("v"), u32(1), u32(100), []byte("hhhh")))), 38, 0, "header 0 name length exceeds the record"},
		{"header value length", cat(u32(1), sized(body(0, str("k"), str("v"), u32(1), str("h"), u32(100)))), 43, 0, "header 0 value length exceeds the record"},
		{"second header truncated", cat(u32(1), sized(body(0, str("k"), str("v"), u32(2), str("h"), str("x"), str("n"), u32(100)))), 53, 0, "header 1 value length exceeds the record"},
		{"unused bytes", cat(u32(1), sized(body(0, str("k"), str("v"), u32(0), []byte{0, 0}))), 38, 0, "2 unused bytes at the end of the record"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := decodeBatch(tc.batch)
			var de *DecodeError
			if !errors.As(err, &de) {
				t.Fatalf("error %v, want a *DecodeError", err)
			}
			if !errors.Is(err, ErrMalformed) {
				t.Error("errors.Is(err, ErrMalformed) is false")
			}
			if de.Offset != tc.offset || de.Record != tc.record || de.Reason != tc.reason {
				t.Errorf("got offset %d record %d reason %q\nwant offset %d record %d reason %q",
					de.Offset, de.Record, de.Reason, tc.offset, tc.record, tc.reason)
			}
			want := fmt.Sprintf("abi: malformed record %d at byte %d: %s", tc.record, tc.offset, tc.reason)
			if tc.record < 0 {
				want = fmt.Sprintf("abi: malformed batch header at byte %d: %s", tc.offset, tc.reason)
			}
			if err.Error() != want {
				t.Errorf("Error() = %q, want %q", err.Error(), want)
			}
		})
	}
}

func TestDecoderStopsAtFirstError(t *testing.T) {
	batch := cat(u32(2), sized(body(0, str("a"), str("v"), u32(0))), sized(body(7, str("b"), str("v"), u32(0))))
	d, err := NewDecoder(batch)
	if err != nil {
		t.Fatal(err)
	}
	var r Record
	if !d.Next(&r) || string(r.Key) != "a" {
		t.Fatal("the valid first record was not decoded")
	}
	for range 2 {
		if d.Next(&r) {
			t.Fatal("Next returned true after an error")
		}
	}
	var de *DecodeError
	if !errors.As(d.Err(), &de) || de.Record != 1 {
		t.Fatalf("Err = %v, want record 1's error", d.Err())
	}
}

func genRecord(t *rapid.T) Record {
	bs := rapid.SliceOfN(rapid.Byte(), 0, 64)
	r := Record{
		Origin: rapid.Uint32().Draw(t, "origin"),
		Input:  rapid.Uint16().Draw(t, "input"),
		Time:   rapid.Int64().Draw(t, "time"),
		Key:    bs.Draw(t, "key"),
		Value:  bs.Draw(t, "value"),
	}
	for i, n := 0, rapid.IntRange(0, 4).Draw(t, "headers"); i < n; i++ {
		r.Headers = append(r.Headers, Header{Name: bs.Draw(t, "name"), Value: bs.Draw(t, "hvalue")})
	}
	return r
}

// TestRoundTripProperty: any records encode and decode back to themselves,
// after a prefix of unrelated bytes in the destination.
func TestRoundTripProperty(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		recs := rapid.SliceOfN(rapid.Custom(genRecord), 0, 8).Draw(t, "records")
		prefix := rapid.SliceOfN(rapid.Byte(), 0, 16).Draw(t, "prefix")
		b := AppendBatchHeader(bytes.Clone(prefix), uint32(len(recs)))
		for i := range recs {
			before := len(b)
			b = AppendRecord(b, &recs[i])
			if len(b)-before != EncodedSize(&recs[i]) {
				t.Fatalf("record %d: wrote %d bytes, EncodedSize %d", i, len(b)-before, EncodedSize(&recs[i]))
			}
		}
		if !bytes.Equal(b[:len(prefix)], prefix) {
			t.Fatal("the prefix changed")
		}
		got, err := decodeBatchInputs(b[len(prefix):], true)
		if err != nil {
			t.Fatal(err)
		}
		if !equalRecords(got, recs) {
			t.Fatalf("decoded %+v, want %+v", got, recs)
		}
	})
}

// FuzzDecoder: the decoder never panics, with inputs allowed or not, and
// any batch it accepts re-encodes to the same bytes (the encoding is
// canonical). What a Decoder without inputs accepts, one with inputs
// accepts too, decoding the same records; it accepts more only for records
// whose flags hold an input.
func FuzzDecoder(f *testing.F) {
	f.Add(encodeBatch())
	f.Add(encodeBatch(Record{Key: []byte("k"), Value: []byte("v"), Time: 1, Headers: []Header{{Name: []byte("h"), Value: []byte("x")}}}))
	f.Add(encodeBatch(Record{}, Record{Origin: 9}))
	f.Add(encodeBatch(Record{Input: 1}, Record{Input: 0xffff, Key: []byte("k")}))
	f.Add([]byte{0xff, 0xff, 0xff, 0xff})
	f.Fuzz(func(t *testing.T, batch []byte) {
		recs, err := decodeBatch(batch)
		withInputs, ierr := decodeBatchInputs(batch, true)
		for _, err := range []error{err, ierr} {
			if err != nil && !errors.Is(err, ErrMalformed) {
				t.Fatalf("error %v does not wrap ErrMalformed", err)
			}
		}
		if ierr == nil {
			if again := encodeBatch(withInputs...); !bytes.Equal(again, batch) {
				t.Fatalf("accepted %x with inputs but re-encodes to %x", batch, again)
			}
		}
		switch {
		case err == nil && (ierr != nil || !equalRecords(recs, withInputs)):
			t.Fatalf("without inputs decoded %+v; with inputs %+v, %v", recs, withInputs, ierr)
		case err != nil && ierr == nil && !slices.ContainsFunc(withInputs, func(r Record) bool { return r.Input != 0 }):
			t.Fatalf("refused without inputs (%v), but no record has an input", err)
		}
	})
}

// record64 is a record whose encoding is 64 bytes, the size of the
// per-record figures in BENCHMARKS.md.
func record64(i int) Record {
	return Record{Origin: uint32(i), Time: int64(i), Key: fmt.Appendf(nil, "key%05d", i), Value: bytes.Repeat([]byte{'v'}, 24)}
}

func TestNoAllocations(t *testing.T) {
	r := record64(1)
	if n := EncodedSize(&r); n != 64 {
		t.Fatalf("record64 is %d bytes", n)
	}
	dst := make([]byte, 0, 1024)
	if n := testing.AllocsPerRun(100, func() { dst = AppendRecord(dst[:0], &r) }); n != 0 {
		t.Errorf("AppendRecord: %.1f allocations", n)
	}
	batch := encodeBatch(record64(1), record64(2))
	var d Decoder
	var rec Record
	if n := testing.AllocsPerRun(100, func() {
		_ = d.Reset(batch)
		for d.Next(&rec) {
		}
	}); n != 0 {
		t.Errorf("Decoder: %.1f allocations", n)
	}
}

func BenchmarkAppendRecord(b *testing.B) {
	r := record64(1)
	dst := make([]byte, 0, 1024)
	b.SetBytes(64)
	b.ReportAllocs()
	for b.Loop() {
		dst = AppendRecord(dst[:0], &r)
	}
}

// BenchmarkDecoderNext decodes batches of 1024 records of 64 bytes; ns/op
// is per batch, ns/record per record.
func BenchmarkDecoderNext(b *testing.B) {
	const n = 1024
	recs := make([]Record, n)
	for i := range recs {
		recs[i] = record64(i)
	}
	batch := encodeBatch(recs...)
	var d Decoder
	var r Record
	b.SetBytes(int64(len(batch)))
	b.ReportAllocs()
	for b.Loop() {
		_ = d.Reset(batch)
		for d.Next(&r) {
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/record")
}
