package sluice

import (
	"bytes"
	"testing"

	"pgregory.net/rapid"

	"github.com/sluicehq/sluice/abi"
)

// decodeAll decodes batch the way process does: the header through
// abi.Decoder, each record with decodeRecord, then the end check.
func decodeAll(batch []byte) ([]Record, bool) {
	var d abi.Decoder
	if d.Reset(batch) != nil {
		return nil, false
	}
	var out []Record
	var hdrs []Header
	var r Record // reused, as the run loops do
	off := abi.BatchHeaderSize
	for range d.Count() {
		next := decodeRecord(batch, off, &r, &hdrs)
		if next < 0 {
			return nil, false
		}
		out = append(out, r.Clone())
		off = next
	}
	return out, off == len(batch)
}

// abiDecodeAll decodes batch with abi.Decoder, inputs allowed: the SDK
// declares abi.FeatureInputs.
func abiDecodeAll(batch []byte) ([]abi.Record, error) {
	d, err := abi.NewDecoder(batch)
	if err != nil {
		return nil, err
	}
	d.AllowInputs(true)
	var out []abi.Record
	var r abi.Record
	for d.Next(&r) {
		c := r
		c.Headers = append([]abi.Header(nil), r.Headers...)
		out = append(out, c)
	}
	return out, d.Err()
}

func sameRecord(a Record, b abi.Record) bool {
	if !bytes.Equal(a.Key, b.Key) || !bytes.Equal(a.Value, b.Value) || a.Time != b.Time || a.Input != int(b.Input) || len(a.Headers) != len(b.Headers) {
		return false
	}
	if (a.Key == nil) != (b.Key == nil) || (a.Value == nil) != (b.Value == nil) {
		return false
	}
	for i := range a.Headers {
		if !bytes.Equal(a.Headers[i].Name, b.Headers[i].Name) || !bytes.Equal(a.Headers[i].Value, b.Headers[i].Value) {
			return false
		}
	}
	return true
}

// checkAgrees fails t when the SDK's decoder and abi.Decoder disagree on
// batch: one accepts what the other refuses, or they decode different
// records.
func checkAgrees(t interface{ Fatalf(string, ...any) }, batch []byte) {
	got, ok := decodeAll(batch)
	want, err := abiDecodeAll(batch)
	if ok != (err == nil) {
		t.Fatalf("SDK decoder accepts=%v, abi.Decoder error=%v, batch %x", ok, err, batch)
	}
	if !ok {
		if be := batchError(batch); be == errDecoderMismatch {
			t.Fatalf("batchError found nothing wrong with %x", batch)
		}
		return
	}
	if len(got) != len(want) {
		t.Fatalf("%d records, abi.Decoder %d", len(got), len(want))
	}
	for i := range got {
		if !sameRecord(got[i], want[i]) {
			t.Fatalf("record %d = %+v, abi.Decoder %+v", i, got[i], want[i])
		}
	}
}

func genRecord(t *rapid.T) Record {
	bs := rapid.SliceOfN(rapid.Byte(), 0, 40)
	r := Record{Key: bs.Draw(t, "key"), Value: bs.Draw(t, "value"), Time: rapid.Int64().Draw(t, "time")}
	for i, n := 0, rapid.IntRange(0, 3).Draw(t, "headers"); i < n; i++ {
		r.Headers = append(r.Headers, Header{Name: bs.Draw(t, "name"), Value: bs.Draw(t, "hvalue")})
	}
	return r
}

// TestCodecMatchesABI: appendRecord writes what abi.AppendRecord writes, and
// the SDK decoder reads it back as abi.Decoder does.
func TestCodecMatchesABI(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		recs := rapid.SliceOfN(rapid.Custom(genRecord), 0, 6).Draw(t, "records")
		prefix := rapid.SliceOfN(rapid.Byte(), 0, 9).Draw(t, "prefix")
		mine := abi.AppendBatchHeader(append([]byte(nil), prefix...), uint32(len(recs)))
		theirs := abi.AppendBatchHeader(append([]byte(nil), prefix...), uint32(len(recs)))
		for i := range recs {
			mine = appendRecord(mine, uint32(i*7), &recs[i])
			ar := abi.Record{Origin: uint32(i * 7), Time: recs[i].Time, Key: recs[i].Key, Value: recs[i].Value, Headers: recs[i].Headers}
			theirs = abi.AppendRecord(theirs, &ar)
		}
		if !bytes.Equal(mine, theirs) {
			t.Fatalf("appendRecord wrote %x, abi.AppendRecord %x", mine, theirs)
		}
		checkAgrees(t, mine[len(prefix):])

		// Input records, as the host encodes them for the SDK, which
		// declares abi.FeatureInputs, decode with their inputs.
		in := abi.AppendBatchHeader(nil, uint32(len(recs)))
		for i := range recs {
			ar := abi.Record{Origin: uint32(i), Input: rapid.Uint16().Draw(t, "input"), Time: recs[i].Time, Key: recs[i].Key, Value: recs[i].Value, Headers: recs[i].Headers}
			in = abi.AppendRecord(in, &ar)
		}
		checkAgrees(t, in)
	})
}

func TestDecoderRefusesWhatABIRefuses(t *testing.T) {
	r := Record{Key: []byte("k"), Value: []byte("vv"), Headers: []Header{{Name: []byte("n"), Value: []byte("x")}}}
	good := appendRecord(abi.AppendBatchHeader(nil, 1), 0, &r)
	// Every truncation, every single-byte corruption and a trailing byte.
	for n := range len(good) {
		checkAgrees(t, good[:n])
	}
	for i := range good {
		for _, v := range []byte{0, 1, 0x7f, 0xff} {
			b := bytes.Clone(good)
			b[i] = v
			checkAgrees(t, b)
		}
	}
	checkAgrees(t, append(bytes.Clone(good), 0))
}

// FuzzDecodeRecord: on any input the SDK's decoder never panics and agrees
// with abi.Decoder.
func FuzzDecodeRecord(f *testing.F) {
	r := Record{Key: []byte("key"), Value: []byte("value"), Time: 5, Headers: []Header{{Name: []byte("a"), Value: []byte("b")}}}
	f.Add(appendRecord(abi.AppendBatchHeader(nil, 1), 0, &r))
	f.Add(appendRecord(appendRecord(abi.AppendBatchHeader(nil, 2), 0, &Record{}), 1, &r))
	f.Add([]byte{0, 0, 0, 0})
	f.Add(abi.AppendRecord(abi.AppendBatchHeader(nil, 1), &abi.Record{Input: 3, Key: []byte("k")}))
	f.Fuzz(func(t *testing.T, batch []byte) { checkAgrees(t, batch) })
}
