package countlib

import (
	"math"
	"strconv"
	"strings"
	"testing"
)

func TestParseCount(t *testing.T) {
	for _, tc := range []struct {
		in   string
		n    uint64
		fail bool
	}{
		{"0", 0, false},
		{"42", 42, false},
		{"007", 7, false},
		{"18446744073709551615", math.MaxUint64, false},
		{"18446744073709551616", 0, true},
		{"", 0, true},
		{"-1", 0, true},
		{"1 ", 0, true},
		{"x", 0, true},
	} {
		n, err := ParseCount([]byte(tc.in))
		if (err != nil) != tc.fail || n != tc.n {
			t.Errorf("ParseCount(%q) = %d, %v", tc.in, n, err)
		}
	}
}

func FuzzParseCount(f *testing.F) {
	f.Add("123")
	f.Fuzz(func(t *testing.T, s string) {
		n, err := ParseCount([]byte(s))
		want, werr := strconv.ParseUint(s, 10, 64)
		// With base 10, ParseUint accepts exactly the plain digit strings
		// (no sign, no underscores) up to 2^64-1, as ParseCount must.
		if (err != nil) != (werr != nil) || n != want && err == nil {
			t.Fatalf("ParseCount(%q) = %d, %v; ParseUint %d, %v", s, n, err, want, werr)
		}
		if err == nil && n != 0 && string(AppendCount(nil, n)) != strings.TrimLeft(s, "0") {
			t.Fatalf("AppendCount(%d) does not round-trip %q", n, s)
		}
	})
}

// BenchmarkCount is the plugin's per-record logic natively (parse, add,
// format), for comparison with the plugin in WebAssembly.
func BenchmarkCount(b *testing.B) {
	stored := []byte("123456")
	buf := make([]byte, 0, 20)
	for b.Loop() {
		n, _ := ParseCount(stored)
		buf = AppendCount(buf[:0], n+1)
	}
}
