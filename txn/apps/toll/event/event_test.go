package event

import (
	"testing"

	"pgregory.net/rapid"

	"github.com/sluicehq/sluice/txn/apps/internal/wiretest"
)

func genEvent() *rapid.Generator[Event] {
	return rapid.Custom(func(t *rapid.T) Event {
		return Event{
			Segment:   rapid.Uint32Range(0, 99_999_999).Draw(t, "segment"),
			Vehicle:   rapid.Uint32Range(0, Vehicles-1).Draw(t, "vehicle"),
			Speed:     rapid.Uint32().Draw(t, "speed"),
			BusyNanos: rapid.Uint32().Draw(t, "busy"),
		}
	})
}

func decode(b []byte) error { _, err := DecodeEvent(b); return err }

func TestRoundTrip(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		e := genEvent().Draw(t, "event")
		prefix := rapid.SliceOfN(rapid.Byte(), 0, 4).Draw(t, "prefix")
		b := AppendEvent(prefix, &e)
		if got, err := DecodeEvent(b[len(prefix):]); err != nil || got != e {
			t.Fatalf("DecodeEvent(AppendEvent(%+v)) = %+v, %v", e, got, err)
		}
	})
}

func TestRejectsDamage(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		e := genEvent().Draw(rt, "event")
		wiretest.RejectsDamage(t, AppendEvent(nil, &e), decode)
	})
}

func TestNeverPanics(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		b := rapid.SliceOfN(rapid.Byte(), 0, 24).Draw(t, "b")
		if e, err := DecodeEvent(b); err == nil {
			if again, err := DecodeEvent(AppendEvent(nil, &e)); err != nil || again != e {
				t.Fatalf("%x decoded to %+v, which does not round-trip", b, e)
			}
		}
	})
}

func TestBadFields(t *testing.T) {
	wiretest.Malformed(t, []byte{'B', 1, 1, 60, 0}, decode, "tag")
	wiretest.Malformed(t, []byte{Tag, 1, Vehicles, 60, 0}, decode, "vehicle")
	wiretest.Malformed(t, []byte{Tag, 1, 1, 0x80, 0x80, 0x80, 0x80, 0x10, 0}, decode, "speed")
}

func TestValid(t *testing.T) {
	for speed, want := range map[uint32]bool{0: true, MinSpeed: true, MaxSpeed: true, MaxSpeed + 1: false, InvalidSpeed: false} {
		e := Event{Speed: speed}
		if e.Valid() != want {
			t.Errorf("speed %d: Valid() = %v", speed, !want)
		}
	}
}

func TestSpeedStats(t *testing.T) {
	var s SpeedStats
	if s.Average() != 0 {
		t.Errorf("empty average %v", s.Average())
	}
	for _, v := range []uint32{60, 90, 180} {
		s.Add(v)
	}
	if s != (SpeedStats{Sum: 330, Count: 3}) || s.Average() != 110 {
		t.Errorf("stats %+v, average %v", s, s.Average())
	}
	b := AppendSpeedStats(nil, s)
	if got, err := DecodeSpeedStats(b); err != nil || got != s || len(b) != 16 {
		t.Errorf("%x decodes to %+v, %v", b, got, err)
	}
	if got, err := DecodeSpeedStats(nil); err != nil || got != (SpeedStats{}) {
		t.Errorf("missing stats = %+v, %v", got, err)
	}
	wiretest.Malformed(t, make([]byte, 8), func(b []byte) error { _, err := DecodeSpeedStats(b); return err }, "speed stats")
}

func TestVehicleSet(t *testing.T) {
	var s VehicleSet
	for _, v := range []uint32{0, 63, 64, 127, 64, 0} {
		s.Add(v)
	}
	if s.Count() != 4 || !s.Has(63) || !s.Has(127) || s.Has(1) || s.Has(Vehicles) {
		t.Errorf("set %v: count %d", s, s.Count())
	}
	b := AppendVehicleSet(nil, &s)
	if got, err := DecodeVehicleSet(b); err != nil || got != s || len(b) != 16 {
		t.Errorf("%x decodes to %v, %v", b, got, err)
	}
	if got, err := DecodeVehicleSet(nil); err != nil || got.Count() != 0 {
		t.Errorf("missing set = %v, %v", got, err)
	}
	wiretest.Malformed(t, make([]byte, 17), func(b []byte) error { _, err := DecodeVehicleSet(b); return err }, "vehicle set")
}

func BenchmarkDecodeEvent(b *testing.B) {
	e := Event{Segment: 495_000, Vehicle: 99, Speed: 120}
	enc := AppendEvent(nil, &e)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := DecodeEvent(enc); err != nil {
			b.Fatal(err)
		}
	}
}
