package main

import (
	"testing"

	"github.com/sluicehq/sluice/sdk/go/sluice"
	"github.com/sluicehq/sluice/sdk/go/sluice/sluicetest"
)

func TestWincount(t *testing.T) {
	h := sluicetest.New()
	a, rejects, err := h.Add(nil, sluicetest.KV("k", "3"), sluicetest.KV("k", "x"), sluicetest.KV("k", "-1"), sluicetest.KV("k", "+2"))
	if err != nil {
		t.Fatal(err)
	}
	if len(rejects) != 2 || rejects[0].Origin != 1 || rejects[1].Origin != 3 {
		t.Errorf("rejects %+v, want records 1 and 3", rejects)
	}
	b, _, err := h.Add(nil, sluicetest.KV("k", "10"))
	if err != nil {
		t.Fatal(err)
	}
	m, err := h.Merge(a, b)
	if err != nil {
		t.Fatal(err)
	}
	w := sluice.Window{Start: 0, End: 1000}
	outs, rejects, err := h.Fire([]byte("k"), w, m)
	if err != nil || len(rejects) > 0 {
		t.Fatal(err, rejects)
	}
	if len(outs) != 1 || string(outs[0].Key) != "k" || string(outs[0].Value) != "3,12" || outs[0].Time != 999 {
		t.Errorf("results %+v, want k: 3,12 at 999", outs)
	}
}
