package main

import (
	"strings"
	"testing"
)

// TestBenchSwapBadFlags checks that every bad flag of `sluice bench swap`
// is refused with a usage error naming it, before any plugin is built. The
// swap benchmark itself runs in host/bench's tests.
func TestBenchSwapBadFlags(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--kind", "map,window"}, `--kind "window"`},
		{[]string{"--rate", "0"}, "--rate 0"},
		{[]string{"--txn-rate", "-5"}, "--txn-rate -5"},
		{[]string{"--duration", "1s", "--warmup", "2s"}, "--duration 1s"},
		{[]string{"--swaps", "0"}, "--swaps 0"},
		{[]string{"--workers", "0"}, "--workers 0"},
		{[]string{"--punctuation", "0"}, "--punctuation 0"},
		{[]string{"--punctuation-interval", "0s"}, "--punctuation-interval 0s"},
		{[]string{"--json", ""}, "--json"},
		{[]string{"--compile", "child,elsewhere"}, `--compile "elsewhere"`},
		{[]string{"--background-load", "-1"}, "--background-load -1"},
	} {
		code, _, errOut := sluice(t, ".", append([]string{"bench", "swap", "--quick"}, c.args...)...)
		if code != 2 || !strings.Contains(errOut, c.want) || strings.Contains(errOut, "building") {
			t.Errorf("sluice bench swap %v: exit %d, stderr %q; want 2 and a message naming %s", c.args, code, errOut, c.want)
		}
	}
}
