package abi

import (
	"bytes"
	"errors"
	"testing"

	"pgregory.net/rapid"
)

func genBytes(t *rapid.T, label string) []byte {
	b := rapid.SliceOfN(rapid.Byte(), 0, 24).Draw(t, label)
	if len(b) == 0 {
		return nil
	}
	return b
}

func genValue(t *rapid.T) Value {
	v := Value{Found: rapid.Bool().Draw(t, "found")}
	v.Bytes = genBytes(t, "value")
	return v
}

func genTableKey(t *rapid.T) TableKey {
	return TableKey{Table: rapid.Uint32Range(0, 5).Draw(t, "table"), Key: genBytes(t, "key")}
}

func equalValue(a, b Value) bool { return a.Found == b.Found && bytes.Equal(a.Bytes, b.Bytes) }

// TestOpDeclRoundTrip: declarations decode to what was encoded, in order.
func TestOpDeclRoundTrip(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		var in []OpDecl
		var buf []byte
		for range rapid.IntRange(0, 6).Draw(t, "ops") {
			d := OpDecl{
				Event: rapid.Uint32().Draw(t, "event"), Fn: rapid.Uint32().Draw(t, "fn"),
				Flags: rapid.Uint32Range(0, 1).Draw(t, "flags"), Table: rapid.Uint32().Draw(t, "table"),
				Key: genBytes(t, "key"), Arg: genBytes(t, "arg"),
			}
			for range rapid.IntRange(0, 3).Draw(t, "reads") {
				d.Reads = append(d.Reads, genTableKey(t))
			}
			in = append(in, d)
			buf = AppendOpDecl(buf, &d)
		}
		var dec PlanDecoder
		dec.Reset(buf)
		var got OpDecl
		i := 0
		for dec.Next(&got) {
			w := in[i]
			if got.Event != w.Event || got.Fn != w.Fn || got.Flags != w.Flags || got.Table != w.Table ||
				!bytes.Equal(got.Key, w.Key) || !bytes.Equal(got.Arg, w.Arg) || len(got.Reads) != len(w.Reads) {
				t.Fatalf("op %d: got %+v, want %+v", i, got, w)
			}
			for j := range w.Reads {
				if got.Reads[j].Table != w.Reads[j].Table || !bytes.Equal(got.Reads[j].Key, w.Reads[j].Key) {
					t.Fatalf("op %d read %d: got %+v, want %+v", i, j, got.Reads[j], w.Reads[j])
				}
			}
			i++
		}
		if err := dec.Err(); err != nil || i != len(in) {
			t.Fatalf("decoded %d of %d: %v", i, len(in), err)
		}
		// Every strict prefix that cuts a declaration is refused.
		if len(buf) > 0 {
			cut := rapid.IntRange(0, len(buf)-1).Draw(t, "cut")
			dec.Reset(buf[:cut])
			for dec.Next(&got) {
			}
			if cut == 0 {
				return // an empty plan is valid
			}
			ends := 0
			for _, d := range in {
				ends += len(AppendOpDecl(nil, &d))
				if ends == cut {
					return // a cut between declarations is a shorter valid plan
				}
			}
			if !errors.Is(dec.Err(), ErrMalformedTxn) {
				t.Fatalf("cut at %d of %d: error %v", cut, len(buf), dec.Err())
			}
		}
	})
}

// TestApplyRequestRoundTrip: a request decodes to what was encoded.
func TestApplyRequestRoundTrip(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		q := ApplyRequest{
			Fn: rapid.Uint32().Draw(t, "fn"), Event: rapid.Uint32().Draw(t, "event"), Op: rapid.Uint32().Draw(t, "op"),
			Flags: rapid.Uint32Range(0, 1).Draw(t, "flags"), Table: rapid.Uint32().Draw(t, "table"),
			Key: genBytes(t, "key"), Own: genValue(t), Arg: genBytes(t, "arg"),
		}
		for range rapid.IntRange(0, 3).Draw(t, "reads") {
			q.Reads = append(q.Reads, ReadValue{TableKey: genTableKey(t), Value: genValue(t)})
		}
		buf := AppendApplyRequest(nil, &q)
		var got ApplyRequest
		if err := DecodeApplyRequest(buf, &got); err != nil {
			t.Fatal(err)
		}
		if got.Fn != q.Fn || got.Event != q.Event || got.Op != q.Op || got.Flags != q.Flags || got.Table != q.Table ||
			!bytes.Equal(got.Key, q.Key) || !equalValue(got.Own, q.Own) || !bytes.Equal(got.Arg, q.Arg) || len(got.Reads) != len(q.Reads) {
			t.Fatalf("got %+v, want %+v", got, q)
		}
		for i := range q.Reads {
			a, b := got.Reads[i], q.Reads[i]
			if a.Table != b.Table || !bytes.Equal(a.Key, b.Key) || !equalValue(a.Value, b.Value) {
				t.Fatalf("read %d: got %+v, want %+v", i, a, b)
			}
		}
		cut := rapid.IntRange(0, len(buf)-1).Draw(t, "cut")
		if err := DecodeApplyRequest(buf[:cut], &got); !errors.Is(err, ErrMalformedTxn) {
			t.Fatalf("cut at %d of %d: error %v", cut, len(buf), err)
		}
	})
}

// TestOutcomesRoundTrip: outcomes decode to what was encoded.
func TestOutcomesRoundTrip(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		var in []EventOutcome
		for range rapid.IntRange(0, 4).Draw(t, "events") {
			e := EventOutcome{Committed: rapid.Bool().Draw(t, "committed")}
			for range rapid.IntRange(0, 3).Draw(t, "ops") {
				o := OpOutcome{Executed: rapid.Bool().Draw(t, "executed"), Own: genValue(t)}
				for range rapid.IntRange(0, 2).Draw(t, "reads") {
					o.Reads = append(o.Reads, genValue(t))
				}
				for range rapid.IntRange(0, 2).Draw(t, "gets") {
					o.Gets = append(o.Gets, KeyValue{TableKey: genTableKey(t), Value: genValue(t)})
				}
				e.Ops = append(e.Ops, o)
			}
			in = append(in, e)
		}
		buf := AppendOutcomesHeader(nil, uint32(len(in)))
		for i := range in {
			buf = AppendEventOutcome(buf, &in[i])
		}
		var dec OutcomeDecoder
		n, err := dec.Reset(buf)
		if err != nil || n != len(in) {
			t.Fatalf("reset: %d events, %v", n, err)
		}
		var e EventOutcome
		i := 0
		for dec.Next(&e) {
			w := in[i]
			if e.Committed != w.Committed || len(e.Ops) != len(w.Ops) {
				t.Fatalf("event %d: got %+v, want %+v", i, e, w)
			}
			for j := range w.Ops {
				a, b := e.Ops[j], w.Ops[j]
				if a.Executed != b.Executed || !equalValue(a.Own, b.Own) || len(a.Reads) != len(b.Reads) || len(a.Gets) != len(b.Gets) {
					t.Fatalf("event %d op %d: got %+v, want %+v", i, j, a, b)
				}
				for k := range b.Reads {
					if !equalValue(a.Reads[k], b.Reads[k]) {
						t.Fatalf("event %d op %d read %d differs", i, j, k)
					}
				}
				for k := range b.Gets {
					if a.Gets[k].Table != b.Gets[k].Table || !bytes.Equal(a.Gets[k].Key, b.Gets[k].Key) || !equalValue(a.Gets[k].Value, b.Gets[k].Value) {
						t.Fatalf("event %d op %d get %d differs", i, j, k)
					}
				}
			}
			i++
		}
		if dec.Err() != nil || i != len(in) {
			t.Fatalf("decoded %d of %d: %v", i, len(in), dec.Err())
		}
	})
}

// FuzzTxnDecoders: no input crashes the decoders of guest-supplied or
// host-supplied transactional encodings.
func FuzzTxnDecoders(f *testing.F) {
	f.Add(AppendOpDecl(nil, &OpDecl{Event: 1, Key: []byte("k"), Reads: []TableKey{{1, []byte("r")}}, Arg: []byte("a")}))
	f.Add(AppendApplyRequest(nil, &ApplyRequest{Key: []byte("k"), Reads: []ReadValue{{TableKey{0, []byte("r")}, Value{true, []byte("v")}}}}))
	f.Fuzz(func(t *testing.T, b []byte) {
		var d PlanDecoder
		d.Reset(b)
		var o OpDecl
		for d.Next(&o) {
		}
		var q ApplyRequest
		_ = DecodeApplyRequest(b, &q)
		var od OutcomeDecoder
		if _, err := od.Reset(b); err == nil {
			var e EventOutcome
			for od.Next(&e) {
			}
		}
	})
}
