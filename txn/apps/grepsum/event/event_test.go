package event

import (
	"slices"
	"testing"

	"pgregory.net/rapid"

	"github.com/sluicehq/sluice/txn/apps/internal/wiretest"
)

func genEvent() *rapid.Generator[Event] {
	return rapid.Custom(func(t *rapid.T) Event {
		key := rapid.Uint32Range(0, 99_999_999)
		op := rapid.Custom(func(t *rapid.T) Op {
			return Op{Key: key.Draw(t, "key"), Reads: rapid.SliceOfN(key, 0, 6).Draw(t, "reads")}
		})
		return Event{
			Abort:     rapid.Bool().Draw(t, "abort"),
			BusyNanos: rapid.Uint32().Draw(t, "busy"),
			Ops:       rapid.SliceOfN(op, 1, 8).Draw(t, "ops"),
		}
	})
}

func equal(a, b Event) bool {
	return a.Abort == b.Abort && a.BusyNanos == b.BusyNanos &&
		slices.EqualFunc(a.Ops, b.Ops, func(x, y Op) bool { return x.Key == y.Key && slices.Equal(x.Reads, y.Reads) })
}

func decode(b []byte) error { _, err := DecodeEvent(b); return err }

func TestRoundTrip(t *testing.T) {
	var reused Event
	rapid.Check(t, func(t *rapid.T) {
		e := genEvent().Draw(t, "event")
		prefix := rapid.SliceOfN(rapid.Byte(), 0, 4).Draw(t, "prefix")
		b := AppendEvent(prefix, &e)
		got, err := DecodeEvent(b[len(prefix):])
		if err != nil || !equal(got, e) {
			t.Fatalf("DecodeEvent(AppendEvent(%+v)) = %+v, %v", e, got, err)
		}
		// DecodeEventInto over the previous event's memory gives the same.
		if err := DecodeEventInto(&reused, b[len(prefix):]); err != nil || !equal(reused, e) {
			t.Fatalf("DecodeEventInto = %+v, %v; want %+v", reused, err, e)
		}
	})
}

func TestHeaderAndOpsMatchAppendEvent(t *testing.T) {
	e := Event{Abort: true, BusyNanos: 300, Ops: []Op{{Key: 5, Reads: []uint32{1, 2}}, {Key: 9}}}
	b := AppendHeader(nil, true, 300, 2)
	b = AppendOp(b, 5, []uint32{1, 2})
	b = AppendOp(b, 9, nil)
	if string(b) != string(AppendEvent(nil, &e)) {
		t.Fatalf("header and ops %x, AppendEvent %x", b, AppendEvent(nil, &e))
	}
}

func TestDecodeEventIntoReusesMemory(t *testing.T) {
	e := Event{Ops: []Op{{Key: 1, Reads: []uint32{2, 3, 4}}, {Key: 5, Reads: []uint32{6}}}}
	b := AppendEvent(nil, &e)
	var into Event
	if err := DecodeEventInto(&into, b); err != nil {
		t.Fatal(err)
	}
	if allocs := testing.AllocsPerRun(100, func() { _ = DecodeEventInto(&into, b) }); allocs != 0 {
		t.Errorf("DecodeEventInto allocates %v times per event once warm", allocs)
	}
	if !equal(into, e) {
		t.Fatalf("reused decode = %+v", into)
	}
}

func TestRejectsDamage(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		e := genEvent().Draw(rt, "event")
		wiretest.RejectsDamage(t, AppendEvent(nil, &e), decode)
	})
}

func TestNeverPanics(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		b := rapid.SliceOfN(rapid.Byte(), 0, 40).Draw(t, "b")
		if e, err := DecodeEvent(b); err == nil {
			if again, err := DecodeEvent(AppendEvent(nil, &e)); err != nil || !equal(again, e) {
				t.Fatalf("%x decoded to %+v, which does not round-trip", b, e)
			}
		}
	})
}

func TestBadFields(t *testing.T) {
	wiretest.Malformed(t, []byte{'L', 0, 0, 1, 0, 0}, decode, "tag")
	wiretest.Malformed(t, []byte{Tag, 2, 0, 1, 0, 0}, decode, "flags")
	wiretest.Malformed(t, []byte{Tag, 0, 0, 0}, decode, "op count")
	wiretest.Malformed(t, []byte{Tag, 0, 0, 50, 0, 0}, decode, "op count")
	wiretest.Malformed(t, []byte{Tag, 0, 0, 1, 0, 9, 1}, decode, "op read count")
	wiretest.Malformed(t, []byte{Tag, 0, 0, 1, 0x80, 0xc2, 0xd7, 0x2f, 0}, decode, "op key")
}

func TestValue(t *testing.T) {
	for _, v := range []int64{0, 42, -1, 1<<63 - 1} {
		if got, err := DecodeValue(AppendValue(nil, v)); err != nil || got != v {
			t.Errorf("value %d decodes to %d, %v", v, got, err)
		}
	}
	if InitialValue(77) != 77 {
		t.Error("InitialValue(77) != 77")
	}
	wiretest.Malformed(t, []byte{1}, func(b []byte) error { _, err := DecodeValue(b); return err }, "value")
}

func BenchmarkDecodeEventInto(b *testing.B) {
	e := Event{Ops: make([]Op, 10)}
	for i := range e.Ops {
		e.Ops[i] = Op{Key: uint32(1000 * i), Reads: []uint32{uint32(i), 12_000, 7}}
	}
	enc := AppendEvent(nil, &e)
	var into Event
	b.ReportAllocs()
	for b.Loop() {
		if err := DecodeEventInto(&into, enc); err != nil {
			b.Fatal(err)
		}
	}
}
