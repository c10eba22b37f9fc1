package main

import (
	"strings"
	"testing"

	"github.com/sluicehq/sluice/sdk/go/sluice/sluicetest"
)

// TestSlowcountCountsAsWordcount: its outputs are wordcount's.
func TestSlowcountCountsAsWordcount(t *testing.T) {
	h := sluicetest.New().Declare("counts")
	outs, rejects, err := h.Process(sluicetest.KV("the", "the"), sluicetest.KV("cat", "cat"), sluicetest.KV("the", "the"))
	if err != nil || len(rejects) != 0 {
		t.Fatalf("err %v, rejects %v", err, rejects)
	}
	var got []string
	for _, o := range outs {
		got = append(got, string(o.Key)+"="+string(o.Value))
	}
	if strings.Join(got, " ") != "the=1 cat=1 the=2" {
		t.Errorf("outputs %v, want the=1 cat=1 the=2", got)
	}
}
