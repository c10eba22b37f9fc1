package main

import (
	"os"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/plugins/internal/plugintest"
	"github.com/sluicehq/sluice/sdk/go/sluice"
	"github.com/sluicehq/sluice/sdk/go/sluice/sluicetest"
)

func TestMain(m *testing.M) { os.Exit(plugintest.Main(m)) }

func TestUpper(t *testing.T) {
	h := sluicetest.New()
	in := sluicetest.KV("k", "hello, Wörld 42")
	in.Time = 7
	in.Headers = []sluice.Header{{Name: []byte("h"), Value: []byte("v")}}
	outs, rejects, err := h.Process(in, sluicetest.KV("", ""))
	if err != nil || len(rejects) != 0 {
		t.Fatal(err, rejects)
	}
	if len(outs) != 2 {
		t.Fatalf("outputs %+v", outs)
	}
	o := outs[0]
	if string(o.Value) != "HELLO, WöRLD 42" || string(o.Key) != "k" || o.Time != 7 || len(o.Headers) != 1 {
		t.Errorf("output %+v", o)
	}
	if outs[1].Origin != 1 || len(outs[1].Value) != 0 {
		t.Errorf("empty record: %+v", outs[1])
	}
}

func TestUpperSameInWasm(t *testing.T) {
	long := strings.Repeat("mixed Case ünïcode text ", 500)
	plugintest.SameInWasm(t, []plugintest.Case{
		{Name: "batches", Batches: [][]sluice.Record{
			{sluicetest.KV("a", "abc"), sluicetest.KV("b", long), {Key: []byte("c"), Time: -1}},
			{},
			{sluicetest.KV("d", "xyz")},
		}},
	})
}

// BenchmarkUpperRecord is the plugin's per-record logic natively, for
// comparison with the same plugin in WebAssembly.
func BenchmarkUpperRecord(b *testing.B) {
	r := sluicetest.KV("key00001", "value of twenty-four b.")
	for b.Loop() {
		_, _ = upper(r)
	}
}
