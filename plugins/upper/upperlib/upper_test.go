package upperlib

import (
	"bytes"
	"testing"
)

// reference is the obvious byte-at-a-time definition.
func reference(src []byte) []byte {
	out := make([]byte, len(src))
	for i, c := range src {
		if 'a' <= c && c <= 'z' {
			c -= 'a' - 'A'
		}
		out[i] = c
	}
	return out
}

func TestUpper(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"", ""},
		{"a", "A"},
		{"hello, world", "HELLO, WORLD"},
		{"`az{@AZ[", "`AZ{@AZ["}, // the bytes around the ranges
		{"straße café ÿ", "STRAßE CAFé ÿ"},
		{"0123456789abcdefghijklmnopqrstuvwxyz", "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ"},
	} {
		if got := Upper(nil, []byte(tc.in)); string(got) != tc.want {
			t.Errorf("Upper(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestUpperEveryByte(t *testing.T) {
	all := make([]byte, 256*9)
	for i := range all {
		all[i] = byte(i / 9) // each byte value at every position of a word
	}
	for off := range 9 {
		if got, want := Upper(nil, all[off:]), reference(all[off:]); !bytes.Equal(got, want) {
			t.Fatalf("offset %d: differs from the reference", off)
		}
	}
}

func TestUpperAppendsAndWorksInPlace(t *testing.T) {
	if got := Upper([]byte("x:"), []byte("ab")); string(got) != "x:AB" {
		t.Errorf("append: %q", got)
	}
	b := []byte("in place, longer than a word")
	got := Upper(b[:0], b)
	if string(b) != "IN PLACE, LONGER THAN A WORD" || &got[0] != &b[0] {
		t.Errorf("in place: %q", b)
	}
}

func TestUpperInPlaceEveryByte(t *testing.T) {
	all := make([]byte, 256*9)
	for i := range all {
		all[i] = byte(i / 9)
	}
	for off := range 9 {
		for _, n := range []int{len(all) - off, 100, 64, 33, 32, 31, 8, 7, 1, 0} {
			want := reference(all[off : off+n])
			b := bytes.Clone(all[off : off+n])
			UpperInPlace(b)
			if !bytes.Equal(b, want) {
				t.Fatalf("offset %d, %d bytes: differs from the reference", off, n)
			}
		}
	}
}

func FuzzUpper(f *testing.F) {
	f.Add([]byte("Hello, World! ÄÖÜ äöü"))
	f.Add([]byte("a 40-byte value, longer than a block: xyz"))
	f.Fuzz(func(t *testing.T, src []byte) {
		want := reference(src)
		if got := Upper(nil, src); !bytes.Equal(got, want) {
			t.Fatalf("Upper(%q) = %q, want %q", src, got, want)
		}
		b := bytes.Clone(src)
		if got := Upper(b[:0], b); !bytes.Equal(got, want) || !bytes.Equal(b, want) {
			t.Fatalf("Upper in place of %q = %q, want %q", src, got, want)
		}
		b = bytes.Clone(src)
		if UpperInPlace(b); !bytes.Equal(b, want) {
			t.Fatalf("UpperInPlace(%q) = %q, want %q", src, b, want)
		}
	})
}

func BenchmarkUpper(b *testing.B) {
	for _, n := range []int{24, 64, 1024} {
		src := bytes.Repeat([]byte("Sluice stream "), n/14+1)[:n]
		dst := make([]byte, 0, n)
		name := map[int]string{24: "24B", 64: "64B", 1024: "1KiB"}[n]
		b.Run(name, func(b *testing.B) {
			b.SetBytes(int64(n))
			for b.Loop() {
				dst = Upper(dst[:0], src)
			}
		})
		b.Run(name+"/in-place", func(b *testing.B) {
			b.SetBytes(int64(n))
			buf := bytes.Clone(src)
			for b.Loop() {
				UpperInPlace(buf)
			}
		})
	}
}
