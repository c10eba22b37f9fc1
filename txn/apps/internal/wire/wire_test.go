package wire

import (
	"encoding/binary"
	"errors"
	"math"
	"testing"

	"pgregory.net/rapid"
)

func TestUvarintMatchesEncodingBinary(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		v := rapid.Uint64().Draw(t, "v")
		got := AppendUvarint([]byte{7}, v)
		if want := binary.AppendUvarint([]byte{7}, v); string(got) != string(want) {
			t.Fatalf("AppendUvarint(%d) = %x, want %x", v, got, want)
		}
		r := NewReader("test", got[1:])
		if back := r.Uvarint("v"); back != v || r.Err() != nil {
			t.Fatalf("Uvarint(%x) = %d, %v", got[1:], back, r.Err())
		}
	})
}

func TestUvarintErrors(t *testing.T) {
	for _, c := range []struct {
		in     []byte
		reason string
	}{
		{[]byte{0x80}, Truncated},
		{[]byte{}, Truncated},
		{[]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x02}, Overflow},
		{[]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x81, 0x00}, Overflow},
	} {
		r := NewReader("test", c.in)
		if v := r.Uvarint("count"); v != 0 {
			t.Errorf("%x: value %d", c.in, v)
		}
		var fe *FieldError
		if err := r.Err(); !errors.As(err, &fe) || fe.Reason != c.reason || fe.Field != "count" || !errors.Is(err, ErrMalformed) {
			t.Errorf("%x: error %v, want %q on field count", c.in, err, c.reason)
		}
	}
	r := NewReader("test", binary.AppendUvarint(nil, math.MaxUint64))
	if v := r.Uvarint("max"); v != math.MaxUint64 || r.Err() != nil {
		t.Errorf("max uint64: %d, %v", v, r.Err())
	}
}

func TestReaderKeepsTheFirstError(t *testing.T) {
	r := NewReader("thing", []byte{5, 0x80})
	if v := r.Uvarint32("small", 4); v != 0 {
		t.Errorf("out-of-range value returned %d", v)
	}
	_ = r.Uvarint("next")
	err := r.Err()
	if err == nil || err.Error() != "thing: field small at byte 0: out of range (over 4)" {
		t.Fatalf("error = %v", err)
	}
	r = NewReader("thing", []byte{1, 2})
	r.Byte("a")
	if err := r.Err(); err == nil || err.Error() != "thing: field end at byte 1: 1 trailing bytes" {
		t.Fatalf("trailing: %v", err)
	}
	r = NewReader("thing", []byte{200, 1})
	if n := r.Count("n", 1); n != 0 || r.Err() == nil {
		t.Fatalf("a count over the remaining bytes: %d, %v", n, r.Err())
	}
	r = NewReader("thing", []byte{'X'})
	r.Tag('L', "a ledger event")
	if err := r.Err(); err == nil || err.Error() != "thing: field tag at byte 0: not a ledger event (tag 0x58, want 0x4c)" {
		t.Fatalf("tag: %v", err)
	}
}

func TestKeys(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		k := rapid.Uint32Range(0, MaxKeys-1).Draw(t, "k")
		b := AppendKey(nil, k)
		if len(b) != KeyWidth {
			t.Fatalf("key %d is %q", k, b)
		}
		if back, ok := ParseKey(b); !ok || back != k {
			t.Fatalf("ParseKey(%q) = %d, %v", b, back, ok)
		}
	})
	if got := string(AppendKey([]byte("x"), 42)); got != "x00000042" {
		t.Errorf("AppendKey(42) = %q", got)
	}
	for _, bad := range []string{"", "0000042", "000000042", "0000004a", "-0000042"} {
		if _, ok := ParseKey([]byte(bad)); ok {
			t.Errorf("ParseKey(%q) succeeded", bad)
		}
	}
}

func TestFixed(t *testing.T) {
	var w [2]uint64
	if err := Fixed("v", "f", AppendUint64(AppendUint64(nil, 1), math.MaxUint64), w[:]); err != nil || w != [2]uint64{1, math.MaxUint64} {
		t.Fatalf("Fixed = %v, %v", w, err)
	}
	if err := Fixed("v", "f", nil, w[:]); err != nil || w != [2]uint64{} {
		t.Fatalf("empty: %v, %v", w, err)
	}
	if err := Fixed("v", "f", make([]byte, 15), w[:]); !errors.Is(err, ErrMalformed) {
		t.Fatalf("15 bytes: %v", err)
	}
}
