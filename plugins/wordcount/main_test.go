package main

import (
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/plugins/internal/plugintest"
	"github.com/sluicehq/sluice/sdk/go/sluice"
	"github.com/sluicehq/sluice/sdk/go/sluice/sluicetest"
)

func TestMain(m *testing.M) { os.Exit(plugintest.Main(m)) }

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
