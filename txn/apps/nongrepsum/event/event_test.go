package event

import (
	"slices"
	"testing"

	"pgregory.net/rapid"

	"github.com/sluicehq/sluice/txn/apps/internal/wiretest"
)

func genEvent() *rapid.Generator[Event] {
	return rapid.Custom(func(t *rapid.T) Event {
		keys := rapid.Uint32Range(1, 100_000_000).Draw(t, "keys")
		key := rapid.Uint32Range(0, keys-1)
		op := rapid.Custom(func(t *rapid.T) Op {
			return Op{
				Key:    key.Draw(t, "key"),
				Reads:  rapid.SliceOfN(key, 0, 6).Draw(t, "reads"),
				NonDet: rapid.Bool().Draw(t, "nondet"),
			}
		})
		return Event{
			Abort:     rapid.Bool().Draw(t, "abort"),
			BusyNanos: rapid.Uint32().Draw(t, "busy"),
			Keys:      keys,
			Ops:       rapid.SliceOfN(op, 1, 8).Draw(t, "ops"),
		}
	})
}

func equal(a, b Event) bool {
	return a.Abort == b.Abort && a.BusyNanos == b.BusyNanos && a.Keys == b.Keys &&
		slices.EqualFunc(a.Ops, b.Ops, func(x, y Op) bool {
			return x.Key == y.Key && x.NonDet == y.NonDet && slices.Equal(x.Reads, y.Reads)
		})
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
		if err := DecodeEventInto(&reused, b[len(prefix):]); err != nil || !equal(reused, e) {
			t.Fatalf("DecodeEventInto = %+v, %v; want %+v", reused, err, e)
		}
	})
}

func TestHeaderAndOpsMatchAppendEvent(t *testing.T) {
	e := Event{Keys: 10, BusyNanos: 3, Ops: []Op{{Key: 5, Reads: []uint32{1, 2}, NonDet: true}, {Key: 9}}}
	b := AppendHeader(nil, false, 3, 10, 2)
	b = AppendOp(b, true, 5, []uint32{1, 2})
	b = AppendOp(b, false, 9, nil)
	if string(b) != string(AppendEvent(nil, &e)) {
		t.Fatalf("header and ops %x, AppendEvent %x", b, AppendEvent(nil, &e))
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
	wiretest.Malformed(t, []byte{'G', 0, 0, 10, 1, 0, 0, 0}, decode, "tag")
	wiretest.Malformed(t, []byte{Tag, 0, 0, 0, 1, 0, 0, 0}, decode, "keys")
	wiretest.Malformed(t, []byte{Tag, 0, 0, 10, 0}, decode, "op count")
	wiretest.Malformed(t, []byte{Tag, 0, 0, 10, 1, 2, 0, 0}, decode, "op flags")
	wiretest.Malformed(t, []byte{Tag, 0, 0, 10, 1, 0, 10, 0}, decode, "op key")
	wiretest.Malformed(t, []byte{Tag, 0, 0, 10, 1, 1, 9, 1, 12}, decode, "op read key")
}

func TestTarget(t *testing.T) {
	for _, c := range []struct {
		p    int64
		keys uint32
		want uint32
	}{
		{0, 10, 0}, {42, 10, 2}, {9, 10, 9}, {-1, 10, 5}, // 2^64-1 mod 10 = 5
		{-1 << 63, 7, 1}, // 2^63 = 8^21 ≡ 1 mod 7
		{1<<63 - 1, 122_880, uint32((1<<63 - 1) % 122_880)},
	} {
		if got := Target(c.p, c.keys); got != c.want {
			t.Errorf("Target(%d, %d) = %d, want %d", c.p, c.keys, got, c.want)
		}
	}
}

func TestValue(t *testing.T) {
	if got, err := DecodeValue(AppendValue(nil, -5)); err != nil || got != -5 {
		t.Errorf("value -5 decodes to %d, %v", got, err)
	}
	wiretest.Malformed(t, make([]byte, 9), func(b []byte) error { _, err := DecodeValue(b); return err }, "value")
}

func BenchmarkDecodeEventInto(b *testing.B) {
	e := Event{Keys: 122_880, Ops: []Op{{Key: 100_000, Reads: []uint32{1, 2, 3, 4}, NonDet: true}}}
	enc := AppendEvent(nil, &e)
	var into Event
	b.ReportAllocs()
	for b.Loop() {
		if err := DecodeEventInto(&into, enc); err != nil {
			b.Fatal(err)
		}
	}
}
