package event

import (
	"slices"
	"testing"

	"pgregory.net/rapid"

	"github.com/sluicehq/sluice/txn/apps/internal/wiretest"
)

func genEvent() *rapid.Generator[Event] {
	return rapid.Custom(func(t *rapid.T) Event {
		item := rapid.Custom(func(t *rapid.T) Item {
			return Item{
				Key:      rapid.Uint32Range(0, 99_999_999).Draw(t, "key"),
				Price:    rapid.Int64Range(0, 1<<63-1).Draw(t, "price"),
				Quantity: rapid.Int64Range(0, 1<<63-1).Draw(t, "quantity"),
			}
		})
		return Event{
			Kind:      Kind(rapid.IntRange(int(Buy), int(TopUp)).Draw(t, "kind")),
			BusyNanos: rapid.Uint32().Draw(t, "busy"),
			Items:     rapid.SliceOfN(item, 1, 25).Draw(t, "items"),
		}
	})
}

func equal(a, b Event) bool {
	return a.Kind == b.Kind && a.BusyNanos == b.BusyNanos && slices.Equal(a.Items, b.Items)
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

func TestHeaderAndItemsMatchAppendEvent(t *testing.T) {
	e := Event{Kind: TopUp, BusyNanos: 9, Items: []Item{{Key: 1, Quantity: 5}, {Key: 2, Quantity: 20}}}
	b := AppendHeader(nil, TopUp, 9, 2)
	for _, it := range e.Items {
		b = AppendItem(b, it)
	}
	if string(b) != string(AppendEvent(nil, &e)) {
		t.Fatalf("header and items %x, AppendEvent %x", b, AppendEvent(nil, &e))
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
	wiretest.Malformed(t, []byte{'T', 0, 0, 1, 0, 0, 0}, decode, "tag")
	wiretest.Malformed(t, []byte{Tag, 3, 0, 1, 0, 0, 0}, decode, "kind")
	wiretest.Malformed(t, []byte{Tag, 0, 0, 0}, decode, "item count")
	wiretest.Malformed(t, []byte{Tag, 0, 0, 2, 0, 0, 0}, decode, "item count")
	wiretest.Malformed(t, []byte{Tag, 0, 0, 1, 0, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x01, 0}, decode, "item price")
}

func TestKindString(t *testing.T) {
	for k, want := range map[Kind]string{Buy: "buy", Alert: "alert", TopUp: "top-up", 17: "kind(17)"} {
		if k.String() != want {
			t.Errorf("Kind(%d).String() = %q, want %q", k, k.String(), want)
		}
	}
}

func TestGood(t *testing.T) {
	g := Good{Price: MaxPrice, Quantity: InitialQuantity}
	b := AppendGood(nil, g)
	if got, err := DecodeGood(b); err != nil || got != g || len(b) != 16 {
		t.Errorf("%x decodes to %+v, %v", b, got, err)
	}
	if got, err := DecodeGood(nil); err != nil || got != (Good{}) {
		t.Errorf("missing good = %+v, %v", got, err)
	}
	wiretest.Malformed(t, make([]byte, 3), func(b []byte) error { _, err := DecodeGood(b); return err }, "good")
}

func BenchmarkDecodeEventInto(b *testing.B) {
	e := Event{Kind: Alert, Items: make([]Item, 20)}
	for i := range e.Items {
		e.Items[i] = Item{Key: uint32(5000 * i), Price: 42}
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
