package sluice

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"testing"
	"unsafe"

	"pgregory.net/rapid"

	"github.com/sluicehq/sluice/abi"
)

// tester is what the checks need of *testing.T and *rapid.T.
type tester interface {
	Helper()
	Fatalf(format string, args ...any)
}

// sameRequest reports whether two decoded requests hold the same fields
// (nil and empty byte slices alike), and checks capacities are clipped.
func sameRequest(t tester, got, want *abi.ApplyRequest) {
	t.Helper()
	eq := got.Fn == want.Fn && got.Event == want.Event && got.Op == want.Op && got.Flags == want.Flags &&
		got.Table == want.Table && bytes.Equal(got.Key, want.Key) && got.Own.Found == want.Own.Found &&
		bytes.Equal(got.Own.Bytes, want.Own.Bytes) && bytes.Equal(got.Arg, want.Arg) && len(got.Reads) == len(want.Reads)
	for i := 0; eq && i < len(got.Reads); i++ {
		g, w := got.Reads[i], want.Reads[i]
		eq = g.Table == w.Table && bytes.Equal(g.Key, w.Key) && g.Found == w.Found && bytes.Equal(g.Bytes, w.Bytes) && len(g.Window) == len(w.Window)
		for j := 0; eq && j < len(g.Window); j++ {
			eq = g.Window[j].Back == w.Window[j].Back && g.Window[j].Found == w.Window[j].Found && bytes.Equal(g.Window[j].Bytes, w.Window[j].Bytes)
		}
	}
	if !eq {
		t.Fatalf("the SDK's decoder gave %+v, abi.DecodeApplyRequest %+v", got, want)
	}
	for _, b := range [][]byte{got.Key, got.Own.Bytes, got.Arg} {
		if cap(b) != len(b) {
			t.Fatalf("a field of %d bytes has capacity %d", len(b), cap(b))
		}
	}
}

// checkDecodeApply requires decodeApply and decodeApplyReads to agree with
// abi.DecodeApplyRequest on b, decoding from a copy of b that ends where
// readable memory does when the platform allows (guarded): a read past the
// end faults.
func checkDecodeApply(t tester, b []byte) {
	t.Helper()
	var want abi.ApplyRequest
	err := abi.DecodeApplyRequest(b, &want)
	g := guarded(b)
	for _, d := range []struct {
		name   string
		decode func([]byte, *wireRequest) bool
		reads  int
	}{{"decodeApply", decodeApply, 1}, {"decodeApply", decodeApply, 4}, {"decodeApplyReads", decodeApplyReads, 0}, {"decodeApplyReads", decodeApplyReads, 2}} {
		// decodeApply decodes requests of up to one read in the region of
		// the previous one: its w has that base.
		w := wireRequest{base: unsafe.Pointer(unsafe.SliceData(g)), reads: make([]wireRead, d.reads)}
		ok := d.decode(g, &w)
		if d.name == "decodeApply" && !ok && err == nil && len(want.Reads) <= 1 && want.Flags&abi.OpFlagWindow == 0 {
			t.Fatalf("decodeApply refused a well-formed request of %d reads: %x", len(want.Reads), b)
		}
		if ok && err != nil || !ok && err == nil && d.name == "decodeApplyReads" {
			t.Fatalf("%s says %t, abi.DecodeApplyRequest %v, on %x", d.name, ok, err, b)
		}
		if ok {
			sameRequest(t, w.request(), &want)
		}
	}
	// decodeApply refuses a request in a new region, for decodeApplyReads.
	if w := (wireRequest{reads: make([]wireRead, 1)}); len(g) > 0 && decodeApply(g, &w) {
		t.Fatalf("decodeApply decoded a request in a new region")
	}
}

func drawRequest(t *rapid.T) *abi.ApplyRequest {
	bs := rapid.SliceOfN(rapid.Byte(), 0, 12)
	val := func(label string) abi.Value {
		return abi.Value{Found: rapid.Bool().Draw(t, label+" found"), Bytes: bs.Draw(t, label)}
	}
	q := &abi.ApplyRequest{
		Fn: rapid.Uint32().Draw(t, "fn"), Event: rapid.Uint32().Draw(t, "event"), Op: rapid.Uint32().Draw(t, "op"),
		Flags: rapid.SampledFrom([]uint32{0, abi.OpFlagNonDet, abi.OpFlagWindow}).Draw(t, "flags"), Table: rapid.Uint32().Draw(t, "table"),
		Key: bs.Draw(t, "key"), Own: val("own"), Arg: bs.Draw(t, "arg"),
	}
	for range rapid.IntRange(0, 4).Draw(t, "reads") {
		rv := abi.ReadValue{TableKey: abi.TableKey{Table: rapid.Uint32().Draw(t, "read table"), Key: bs.Draw(t, "read key")}, Value: val("read")}
		if q.Flags&abi.OpFlagWindow != 0 {
			for range rapid.IntRange(0, 3).Draw(t, "versions") {
				rv.Window = append(rv.Window, abi.WindowVersion{Back: rapid.Uint32().Draw(t, "back"), Value: val("version")})
			}
		}
		q.Reads = append(q.Reads, rv)
	}
	return q
}

// TestDecodeApplyMatchesABI: on well-formed requests, on every truncation
// of them and on single corrupted bytes, the SDK's decoder agrees with
// abi.DecodeApplyRequest.
func TestDecodeApplyMatchesABI(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		b := abi.AppendApplyRequest(nil, drawRequest(t))
		checkDecodeApply(t, b)
		for n := range len(b) {
			checkDecodeApply(t, b[:n])
		}
		checkDecodeApply(t, append(b, rapid.SliceOfN(rapid.Byte(), 1, 5).Draw(t, "trailing")...))
		c := bytes.Clone(b)
		c[rapid.IntRange(0, len(c)-1).Draw(t, "at")] = rapid.Byte().Draw(t, "byte")
		checkDecodeApply(t, c)
	})
}

func FuzzDecodeApply(f *testing.F) {
	f.Add(abi.AppendApplyRequest(nil, &abi.ApplyRequest{Fn: 1, Key: []byte("k"), Own: abi.Value{Found: true, Bytes: []byte("v")},
		Reads: []abi.ReadValue{{TableKey: abi.TableKey{Table: 2, Key: []byte("r")}, Value: abi.Value{Found: true, Bytes: []byte("rv")}}}, Arg: []byte("a")}))
	f.Add(abi.AppendApplyRequest(nil, &abi.ApplyRequest{}))
	f.Fuzz(func(t *testing.T, b []byte) { checkDecodeApply(t, b) })
}

// TestDeclareMatchesABI: the Planner's encoding of a declaration, whether
// it moves the byte strings or copies them, and appendDeclCopy's, are
// abi.AppendOpDecl's, after whatever the buffer held; with the strings
// anywhere, including right before a guard page.
func TestDeclareMatchesABI(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		bs := rapid.SliceOfN(rapid.Byte(), 0, 20)
		d := &abi.OpDecl{Event: rapid.Uint32().Draw(t, "event"), Fn: rapid.Uint32Range(0, 1000).Draw(t, "fn"), Flags: rapid.Uint32Range(0, 1).Draw(t, "flags"),
			Table: rapid.Uint32().Draw(t, "table"), Key: bs.Draw(t, "key"), Arg: bs.Draw(t, "arg")}
		var reads []Key
		for range rapid.IntRange(0, 4).Draw(t, "reads") {
			k := Key{Table: Table(rapid.Uint32().Draw(t, "read table")), Key: bs.Draw(t, "read key")}
			reads = append(reads, k)
			d.Reads = append(d.Reads, abi.TableKey{Table: uint32(k.Table), Key: k.Key})
		}
		prefix := bs.Draw(t, "prefix")
		want := abi.AppendOpDecl(bytes.Clone(prefix), d)
		// Where the key lies: anywhere, or with room bytes left before a
		// guard page (0 to 20: whether 16 bytes may be read decides).
		key := d.Key
		if room := rapid.IntRange(-1, 20).Draw(t, "room"); room >= 0 {
			key = guardedRoom(d.Key, room)
		}
		buf := make([]byte, len(prefix), len(prefix)+rapid.IntRange(0, 200).Draw(t, "spare"))
		copy(buf, prefix)
		p := &Planner{active: true, event: d.Event, nfn: int(d.Fn) + 1, buf: buf}
		p.declare(d.Flags, Table(d.Table), key, int(d.Fn), d.Arg, reads)
		if !bytes.Equal(p.buf, want) {
			t.Fatalf("Planner.declare wrote %x, abi.AppendOpDecl %x", p.buf, want)
		}
		got := bytes.Clone(prefix)
		size := len(want) - len(prefix)
		appendDeclCopy(&got, size, d.Event, d.Fn, d.Flags, d.Table, d.Key, reads, d.Arg)
		if !bytes.Equal(got, want) {
			t.Fatalf("appendDeclCopy wrote %x, abi.AppendOpDecl %x", got, want)
		}
	})
}

func drawOutcome(t *rapid.T) abi.EventOutcome {
	bs := rapid.SliceOfN(rapid.Byte(), 0, 10)
	val := func(label string) abi.Value {
		return abi.Value{Found: rapid.Bool().Draw(t, label+" found"), Bytes: bs.Draw(t, label)}
	}
	e := abi.EventOutcome{Committed: rapid.Bool().Draw(t, "committed")}
	for range rapid.IntRange(0, 4).Draw(t, "ops") {
		o := abi.OpOutcome{Executed: rapid.Bool().Draw(t, "executed"), Own: val("own")}
		for range rapid.IntRange(0, 3).Draw(t, "reads") {
			o.Reads = append(o.Reads, val("read"))
		}
		for range rapid.IntRange(0, 3).Draw(t, "gets") {
			o.Gets = append(o.Gets, abi.KeyValue{TableKey: abi.TableKey{Table: rapid.Uint32().Draw(t, "table"), Key: bs.Draw(t, "key")}, Value: val("get")})
		}
		e.Ops = append(e.Ops, o)
	}
	return e
}

// render prints an event outcome with nil and empty bytes alike.
func render(e *abi.EventOutcome) string {
	v := func(x abi.Value) string { return fmt.Sprintf("%t:%x", x.Found, x.Bytes) }
	s := fmt.Sprintf("committed=%t", e.Committed)
	for _, o := range e.Ops {
		s += fmt.Sprintf(" [%t %s", o.Executed, v(o.Own))
		for _, r := range o.Reads {
			s += " r" + v(r)
		}
		for _, g := range o.Gets {
			s += fmt.Sprintf(" g%d/%x=%s", g.Table, g.Key, v(g.Value))
		}
		s += "]"
	}
	return s
}

// checkOutcomes requires the SDK's decoder and abi.OutcomeDecoder to agree
// on b: the same events, and the same verdict.
func checkOutcomes(t tester, b []byte) {
	t.Helper()
	var want []string
	var ad abi.OutcomeDecoder
	n, err := ad.Reset(b)
	if err == nil {
		var e abi.EventOutcome
		for ad.Next(&e) {
			want = append(want, render(&e))
		}
		err = ad.Err()
	}
	var got []string
	ok := len(b) >= 4 && uint64(binary.LittleEndian.Uint32(b))*8 <= uint64(len(b)-4)
	if ok {
		var d outcomeDecoder
		off := 4
		g := guarded(b)
		for i := 0; i < n && off >= 0; i++ {
			if off = d.next(g, off); off >= 0 {
				got = append(got, render(&d.out))
			}
		}
		ok = off == len(b)
	}
	if ok != (err == nil) {
		t.Fatalf("the SDK's decoder says %t, abi.OutcomeDecoder %v, on %x", ok, err, b)
	}
	if ok && fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("the SDK's decoder gave\n%q\nabi.OutcomeDecoder\n%q", got, want)
	}
}

// TestOutcomeDecoderMatchesABI: on well-formed outcomes, on every
// truncation of them and on corrupted bytes, the SDK's decoder agrees with
// abi.OutcomeDecoder.
func TestOutcomeDecoderMatchesABI(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		events := rapid.IntRange(0, 6).Draw(t, "events")
		b := abi.AppendOutcomesHeader(nil, uint32(events))
		for range events {
			e := drawOutcome(t)
			b = abi.AppendEventOutcome(b, &e)
		}
		checkOutcomes(t, b)
		for n := range len(b) {
			checkOutcomes(t, b[:n])
		}
		checkOutcomes(t, append(b, rapid.SliceOfN(rapid.Byte(), 1, 5).Draw(t, "trailing")...))
		c := bytes.Clone(b)
		c[rapid.IntRange(0, len(c)-1).Draw(t, "at")] = rapid.Byte().Draw(t, "byte")
		checkOutcomes(t, c)
	})
}

func FuzzOutcomeDecoder(f *testing.F) {
	e := abi.EventOutcome{Committed: true, Ops: []abi.OpOutcome{{Executed: true, Own: abi.Value{Found: true, Bytes: []byte("o")},
		Reads: []abi.Value{{Found: true, Bytes: []byte("r")}}, Gets: []abi.KeyValue{{TableKey: abi.TableKey{Table: 1, Key: []byte("k")}, Value: abi.Value{Found: true, Bytes: []byte("g")}}}}}}
	f.Add(abi.AppendEventOutcome(abi.AppendOutcomesHeader(nil, 1), &e))
	f.Add(abi.AppendOutcomesHeader(nil, 0))
	f.Fuzz(func(t *testing.T, b []byte) { checkOutcomes(t, b) })
}
