package main

import (
	"testing"

	"github.com/sluicehq/sluice/sdk/go/sluice"
	"github.com/sluicehq/sluice/sdk/go/sluice/sluicetest"
)

func TestWinmedian(t *testing.T) {
	h := sluicetest.New()
	w := sluice.Window{Start: 100, End: 200}
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
