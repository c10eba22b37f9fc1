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

// aggregator is what sluicetest.Harness and hosttest.Harness both offer
// for aggregates.
type aggregator interface {
	Add(acc []byte, recs ...sluice.Record) ([]byte, []sluicetest.Reject, error)
	Merge(a, b []byte) ([]byte, error)
	Fire(key []byte, w sluice.Window, acc []byte) ([]sluicetest.Output, []sluicetest.Reject, error)
}

// run adds two slices, merges them and fires the window, and returns the
// results and the rejects' origins.
func run(t *testing.T, h aggregator) ([]sluicetest.Output, []int) {
	t.Helper()
	a, rejects, err := h.Add(nil, sluicetest.KV("k", "3"), sluicetest.KV("k", "x"), sluicetest.KV("k", "-1"), sluicetest.KV("k", "+2"))
	if err != nil {
		t.Fatal(err)
	}
	var origins []int
	for _, r := range rejects {
		origins = append(origins, r.Origin)
	}
	b, _, err := h.Add(nil, sluicetest.KV("k", "10"))
	if err != nil {
		t.Fatal(err)
	}
	m, err := h.Merge(a, b)
	if err != nil {
		t.Fatal(err)
	}
	outs, rejects, err := h.Fire([]byte("k"), sluice.Window{Start: 0, End: 1000}, m)
	if err != nil || len(rejects) > 0 {
		t.Fatal(err, rejects)
	}
	return outs, origins
}

func TestWincount(t *testing.T) {
	outs, origins := run(t, sluicetest.New())
	if !reflect.DeepEqual(origins, []int{1, 3}) {
		t.Errorf("rejects %v, want records 1 and 3", origins)
	}
	if len(outs) != 1 || string(outs[0].Key) != "k" || string(outs[0].Value) != "3,12" || outs[0].Time != 999 {
		t.Errorf("results %+v, want k: 3,12 at 999", outs)
	}
}

// The compiled plugin, in the host, does what the native one does.
func TestWincountInWasm(t *testing.T) {
	h := plugintest.Module(t, plugin.KindAggregate).New()
	defer h.Close()
	wOuts, wOrigins := run(t, h)
	nOuts, nOrigins := run(t, sluicetest.New())
	if !reflect.DeepEqual(wOuts, nOuts) || !reflect.DeepEqual(wOrigins, nOrigins) {
		t.Errorf("in wasm: %+v %v; natively: %+v %v", wOuts, wOrigins, nOuts, nOrigins)
	}
}
