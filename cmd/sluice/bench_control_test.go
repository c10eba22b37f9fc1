package main

import (
	"strings"
	"testing"
)

// TestBenchControlBadFlags checks that every bad flag of `sluice bench
// control` is refused with a usage error naming it, before the plugin is
// built. The benchmark itself runs in host/bench's tests.
func TestBenchControlBadFlags(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--mode", "ds2,chaos"}, `--mode "chaos"`},
		{[]string{"--rate", "0"}, "--rate 0"},
		{[]string{"--cap", "-1"}, "--cap -1"},
		{[]string{"--phase", "0s"}, "--phase 0s"},
		{[]string{"--max-workers", "0"}, "--max-workers 0"},
		{[]string{"--soak", "0s"}, "--soak 0s"},
		{[]string{"--json", ""}, "--json"},
	} {
		code, _, errOut := sluice(t, ".", append([]string{"bench", "control", "--quick"}, c.args...)...)
		if code != 2 || !strings.Contains(errOut, c.want) || strings.Contains(errOut, "building") {
			t.Errorf("sluice bench control %v: exit %d, stderr %q; want 2 and a message naming %s", c.args, code, errOut, c.want)
		}
	}
}
