package main

import (
	"fmt"
	"math"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/plugins/internal/plugintest"
	"github.com/sluicehq/sluice/sdk/go/sluice"
	"github.com/sluicehq/sluice/sdk/go/sluice/sluicetest"
)

func TestMain(m *testing.M) { os.Exit(plugintest.Main(m)) }

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
		n, err := parseCount([]byte(tc.in))
		if (err != nil) != tc.fail || n != tc.n {
			t.Errorf("parseCount(%q) = %d, %v", tc.in, n, err)
		}
	}
}

func FuzzParseCount(f *testing.F) {
	f.Add("123")
	f.Fuzz(func(t *testing.T, s string) {
		n, err := parseCount([]byte(s))
		want, werr := strconv.ParseUint(s, 10, 64)
		// With base 10, ParseUint accepts exactly the plain digit strings
		// (no sign, no underscores) up to 2^64-1, as parseCount must.
		if (err != nil) != (werr != nil) || n != want && err == nil {
			t.Fatalf("parseCount(%q) = %d, %v; ParseUint %d, %v", s, n, err, want, werr)
		}
		if err == nil && n != 0 && string(appendCount(nil, n)) != strings.TrimLeft(s, "0") {
			t.Fatalf("appendCount(%d) does not round-trip %q", n, s)
		}
	})
}

func TestWordcount(t *testing.T) {
	h := sluicetest.New().Declare("counts")
	outs, rejects, err := h.Process(sluicetest.KV("the", "the"), sluicetest.KV("cat", "cat"), sluicetest.KV("the", "the"))
	if err != nil || len(rejects) != 0 {
		t.Fatal(err, rejects)
	}
	var got []string
	for _, o := range outs {
		got = append(got, fmt.Sprintf("%s=%s", o.Key, o.Value))
	}
	if strings.Join(got, " ") != "the=1 cat=1 the=2" {
		t.Errorf("outputs %v", got)
	}
	if v, _ := h.State("counts", "the"); string(v) != "2" {
		t.Errorf("stored count %q", v)
	}

	h.SetState("counts", "bad", []byte("many"))
	_, rejects, err = h.Process(sluicetest.KV("bad", "x"))
	if err != nil || len(rejects) != 1 || !strings.Contains(rejects[0].Message, `stored count of key "bad": "many" is not a decimal number`) {
		t.Errorf("corrupt count: %v, %+v", err, rejects)
	}
	if v, _ := h.State("counts", "bad"); string(v) != "many" {
		t.Errorf("corrupt count overwritten: %q", v)
	}
}

func TestWordcountSameInWasm(t *testing.T) {
	var batch []sluice.Record
	for i := range 3000 {
		k := fmt.Sprintf("w%d", i%37)
		batch = append(batch, sluicetest.KV(k, k))
	}
	plugintest.SameInWasm(t, []plugintest.Case{
		{Name: "counts", Tables: []string{"counts"}, Batches: [][]sluice.Record{batch, batch[:10], {sluicetest.KV("", "")}}},
	}, "w0", "w36", "")
}

// BenchmarkCount is the plugin's per-record logic natively (parse, add,
// format), for comparison with the plugin in WebAssembly.
func BenchmarkCount(b *testing.B) {
	stored := []byte("123456")
	buf := make([]byte, 0, 20)
	for b.Loop() {
		n, _ := parseCount(stored)
		buf = appendCount(buf[:0], n+1)
	}
}
