package event

import (
	"testing"

	"pgregory.net/rapid"

	"github.com/sluicehq/sluice/txn/apps/internal/wiretest"
)

func genEvent() *rapid.Generator[Event] {
	return rapid.Custom(func(t *rapid.T) Event {
		key := rapid.Uint32Range(0, 99_999_999)
		e := Event{
			Deposit:   rapid.Bool().Draw(t, "deposit"),
			Account:   key.Draw(t, "account"),
			Book:      key.Draw(t, "book"),
			Amount:    rapid.Int64Range(0, 1<<63-1).Draw(t, "amount"),
			BusyNanos: rapid.Uint32().Draw(t, "busy"),
		}
		if !e.Deposit {
			e.DstAccount, e.DstBook = key.Draw(t, "dst account"), key.Draw(t, "dst book")
		}
		return e
	})
}

func decode(b []byte) error { _, err := DecodeEvent(b); return err }

func TestRoundTrip(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		e := genEvent().Draw(t, "event")
		prefix := rapid.SliceOfN(rapid.Byte(), 0, 4).Draw(t, "prefix")
		b := AppendEvent(prefix, &e)
		if string(b[:len(prefix)]) != string(prefix) {
			t.Fatal("AppendEvent changed dst's bytes")
		}
		got, err := DecodeEvent(b[len(prefix):])
		if err != nil || got != e {
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
		b := rapid.SliceOfN(rapid.Byte(), 0, 40).Draw(t, "b")
		if e, err := DecodeEvent(b); err == nil {
			if again, err := DecodeEvent(AppendEvent(nil, &e)); err != nil || again != e {
				t.Fatalf("%x decoded to %+v, which does not round-trip", b, e)
			}
		}
	})
}

func TestBadFields(t *testing.T) {
	e := Event{Account: 1, Book: 2, DstAccount: 3, DstBook: 4, Amount: 100}
	good := AppendEvent(nil, &e)
	with := func(i int, c byte) []byte { b := append([]byte(nil), good...); b[i] = c; return b }
	wiretest.Malformed(t, with(0, 'G'), decode, "tag")
	wiretest.Malformed(t, with(1, 4), decode, "flags")
	big := append([]byte{Tag, 0}, 0x80, 0xc2, 0xd7, 0x2f) // 100,000,000: one past the last key
	wiretest.Malformed(t, big, decode, "account")
	amount := append(good[:6:6], 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x01, 0)
	wiretest.Malformed(t, amount, decode, "amount")
}

func TestBalance(t *testing.T) {
	for _, v := range []int64{0, 1, -1, InitialBalance, AbortAmount, -1 << 63} {
		b := AppendBalance(nil, v)
		if got, err := DecodeBalance(b); err != nil || got != v || len(b) != 8 {
			t.Errorf("balance %d: %x decodes to %d, %v", v, b, got, err)
		}
	}
	if v, err := DecodeBalance(nil); v != 0 || err != nil {
		t.Errorf("missing balance = %d, %v", v, err)
	}
	wiretest.Malformed(t, make([]byte, 7), func(b []byte) error { _, err := DecodeBalance(b); return err }, "balance")
}

func BenchmarkDecodeEvent(b *testing.B) {
	e := Event{Account: 115_199, Book: 7, DstAccount: 70_000, DstBook: 3, Amount: TransferAmount}
	enc := AppendEvent(nil, &e)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := DecodeEvent(enc); err != nil {
			b.Fatal(err)
		}
	}
}
