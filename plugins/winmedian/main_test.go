package main

import (
	"os"
	"reflect"
	"testing"

	"github.com/sluicehq/sluice/host/plugin"
	"github.com/sluicehq/sluice/plugins/internal/plugintest"
	"github.com/sluicehq/sluice/sdk/go/sluice"
	"github.com/sluicehq/sluice/sdk/go/sluice/sluicetest"
)

func TestMain(m *testing.M) { os.Exit(plugintest.Main(m)) }

// windower is what sluicetest.Harness and hosttest.Harness both offer for
// window functions.
type windower interface {
	FireWindow(key []byte, w sluice.Window, recs ...sluice.Record) ([]sluicetest.Output, []sluicetest.Reject, error)
}

var w = sluice.Window{Start: 100, End: 200}

func TestWinmedian(t *testing.T) {
	h := sluicetest.New()
	outs, rejects, err := h.FireWindow([]byte("k"), w, sluicetest.KV("k", "5"), sluicetest.KV("k", "-2"), sluicetest.KV("k", "9"), sluicetest.KV("k", "7"))
	if err != nil || len(rejects) > 0 {
		t.Fatal(err, rejects)
	}
	if len(outs) != 1 || string(outs[0].Value) != "7" || outs[0].Time != 199 {
		t.Errorf("results %+v, want 7 at 199", outs)
	}
	outs, rejects, err = h.FireWindow([]byte("k"), w, sluicetest.KV("k", "5"), sluicetest.KV("k", "x"))
	if err != nil || len(outs) > 0 || len(rejects) != 2 {
		t.Errorf("a bad value: %v, %+v, %+v; want both records rejected", err, outs, rejects)
	}
}

// The compiled plugin, in the host, does what the native one does.
func TestWinmedianInWasm(t *testing.T) {
	wasm := plugintest.Module(t, plugin.KindWindow).New()
	defer wasm.Close()
	for _, recs := range [][]sluice.Record{
		{sluicetest.KV("k", "5"), sluicetest.KV("k", "-2"), sluicetest.KV("k", "9")},
		{sluicetest.KV("k", "1"), sluicetest.KV("k", "x")},
		nil,
	} {
		var got, want [2]any
		var err error
		for i, h := range []windower{wasm, sluicetest.New()} {
			var outs []sluicetest.Output
			var rejects []sluicetest.Reject
			outs, rejects, err = h.FireWindow([]byte("k"), w, recs...)
			if err != nil {
				t.Fatal(err)
			}
			r := [2]any{outs, rejects}
			if i == 0 {
				got = r
			} else {
				want = r
			}
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%v: in wasm %+v, natively %+v", recs, got, want)
		}
	}
}
