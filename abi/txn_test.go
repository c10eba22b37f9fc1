package abi

import (
	"bytes"
	"errors"
	"fmt"
	"reflect"
	"strings"
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
				Flags: rapid.SampledFrom([]uint32{0, OpFlagNonDet, OpFlagWindow, OpFlagNonDet | OpFlagWindow}).Draw(t, "flags"),
				Table: rapid.Uint32().Draw(t, "table"), Key: genBytes(t, "key"), Arg: genBytes(t, "arg"),
			}
			if d.Flags&OpFlagWindow != 0 {
				d.Window = rapid.Uint32Min(1).Draw(t, "window")
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
			if got.Event != w.Event || got.Fn != w.Fn || got.Flags != w.Flags || got.Table != w.Table || got.Window != w.Window ||
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
			Flags: rapid.SampledFrom([]uint32{0, OpFlagNonDet, OpFlagWindow, OpFlagNonDet | OpFlagWindow}).Draw(t, "flags"),
			Table: rapid.Uint32().Draw(t, "table"), Key: genBytes(t, "key"), Own: genValue(t), Arg: genBytes(t, "arg"),
		}
		for range rapid.IntRange(0, 3).Draw(t, "reads") {
			rv := ReadValue{TableKey: genTableKey(t), Value: genValue(t)}
			if q.Flags&OpFlagWindow != 0 {
				for range rapid.IntRange(0, 3).Draw(t, "versions") {
					rv.Window = append(rv.Window, WindowVersion{Back: rapid.Uint32().Draw(t, "back"), Value: genValue(t)})
				}
			}
			q.Reads = append(q.Reads, rv)
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
			if a.Table != b.Table || !bytes.Equal(a.Key, b.Key) || !equalValue(a.Value, b.Value) || len(a.Window) != len(b.Window) {
				t.Fatalf("read %d: got %+v, want %+v", i, a, b)
			}
			for j := range b.Window {
				if a.Window[j].Back != b.Window[j].Back || !equalValue(a.Window[j].Value, b.Window[j].Value) {
					t.Fatalf("read %d version %d: got %+v, want %+v", i, j, a.Window[j], b.Window[j])
				}
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
	f.Add(AppendApplyRequest(nil, &ApplyRequest{Key: []byte("k"), Reads: []ReadValue{{TableKey: TableKey{0, []byte("r")}, Value: Value{true, []byte("v")}}}}))
	f.Add(AppendOpDecl(nil, &OpDecl{Flags: OpFlagWindow, Window: 8, Key: []byte("k"), Reads: []TableKey{{0, []byte("k")}}}))
	f.Add(AppendApplyRequest(nil, &ApplyRequest{Flags: OpFlagWindow, Key: []byte("k"), Reads: []ReadValue{{
		TableKey: TableKey{0, []byte("k")}, Value: Value{true, []byte("v")},
		Window: []WindowVersion{{Back: 2, Value: Value{true, []byte("u")}}, {Back: 1}},
	}}}))
	f.Fuzz(func(t *testing.T, b []byte) {
		var d PlanDecoder
		d.Reset(b)
		var o OpDecl
		for d.Next(&o) {
		}
		// The fast path accepts exactly what the checked decoder accepts,
		// with the same result.
		var q, q2 ApplyRequest
		fast := decodeApplyFast(b, &q)
		checked := decodeApplyChecked(b, &q2) == nil
		if fast && (!checked || !reflect.DeepEqual(q, q2)) {
			t.Fatalf("fast path accepted what the checked decoder did not: %v %+v %+v", checked, q, q2)
		}
		if checked && !fast && len(b) >= ApplyResultSize+20 && q2.Flags&OpFlagWindow == 0 {
			t.Fatalf("fast path refused a valid request")
		}
		var od, od2 OutcomeDecoder
		if _, err := od.Reset(b); err == nil {
			od2.Reset(b)
			var e, e2 EventOutcome
			for {
				fast := od.i < od.n && od.nextFast(&e)
				if !fast {
					break
				}
				// The checked decoder gives the same event.
				if !od2.nextChecked(&e2) || !reflect.DeepEqual(e, e2) {
					t.Fatalf("fast and checked outcome decoders differ: %+v %+v %v", e, e2, od2.Err())
				}
			}
		}
	})
}

func BenchmarkDecodeApplyRequest(b *testing.B) {
	q := ApplyRequest{Fn: 2, Event: 7, Op: 1, Table: 0, Key: []byte("00001234"), Own: Value{true, []byte("12345678")},
		Reads: []ReadValue{{TableKey: TableKey{0, []byte("00004321")}, Value: Value{true, []byte("87654321")}}}, Arg: []byte("argument")}
	buf := AppendApplyRequest(nil, &q)
	var got ApplyRequest
	b.ReportAllocs()
	for b.Loop() {
		if err := DecodeApplyRequest(buf, &got); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkOutcomeDecoder(b *testing.B) {
	buf := AppendOutcomesHeader(nil, 100)
	for i := 0; i < 100; i++ {
		e := EventOutcome{Committed: true}
		for range 4 {
			e.Ops = append(e.Ops, OpOutcome{Executed: true, Own: Value{true, []byte("12345678")}, Reads: []Value{{true, []byte("87654321")}}})
		}
		buf = AppendEventOutcome(buf, &e)
	}
	var d OutcomeDecoder
	var e EventOutcome
	b.ReportAllocs()
	for b.Loop() {
		if _, err := d.Reset(buf); err != nil {
			b.Fatal(err)
		}
		n := 0
		for d.Next(&e) {
			n++
		}
		if n != 100 || d.Err() != nil {
			b.Fatal(n, d.Err())
		}
	}
}

// TestWindowDeclaration: a declaration's window follows its argument only
// with OpFlagWindow, a window of 0 and bit 1 are refused, and a request
// without the flag is encoded as before windowed reads existed.
func TestWindowDeclaration(t *testing.T) {
	plain := OpDecl{Event: 2, Fn: 1, Key: []byte("a7"), Reads: []TableKey{{1, []byte("b")}}, Arg: []byte{5, 0, 0, 0}, Window: 9}
	if n := len(AppendOpDecl(nil, &plain)); n != 43 {
		t.Fatalf("a declaration without OpFlagWindow is %d bytes, want 43 (ABI.md's example)", n)
	}
	w := plain
	w.Flags = OpFlagWindow
	b := AppendOpDecl(nil, &w)
	if len(b) != 47 || b[43] != 9 {
		t.Fatalf("windowed declaration % x: want the window, 9, after the argument", b)
	}
	var d PlanDecoder
	var o OpDecl
	d.Reset(b)
	if !d.Next(&o) || o.Window != 9 || o.Flags != OpFlagWindow {
		t.Fatalf("decoded %+v, %v", o, d.Err())
	}
	zero := AppendOpDecl(nil, &OpDecl{Flags: OpFlagWindow})
	d.Reset(zero)
	if d.Next(&o) || !errors.Is(d.Err(), ErrMalformedTxn) || !strings.Contains(d.Err().Error(), "window 0") {
		t.Fatalf("window 0: %v", d.Err())
	}
	bit1 := AppendOpDecl(nil, &OpDecl{Flags: 2})
	d.Reset(bit1)
	if d.Next(&o) || !strings.Contains(fmt.Sprint(d.Err()), "unknown flags 0x2") {
		t.Fatalf("flag bit 1: %v", d.Err())
	}
	q := ApplyRequest{Fn: 1, Event: 2, Key: []byte("a7"), Own: Value{true, make([]byte, 8)},
		Reads: []ReadValue{{TableKey: TableKey{1, []byte("b")}, Window: []WindowVersion{{Back: 1}}}}, Arg: []byte{5, 0, 0, 0}}
	if n := len(AppendApplyRequest(nil, &q)); n != 75 {
		t.Fatalf("a request without OpFlagWindow is %d bytes, want 75 (ABI.md's example): a window is sent only with the flag", n)
	}
}
