package main

import (
	"strings"
	"testing"
)

// TestBenchBadFlags checks that a bad flag of `sluice bench` is refused
// with a usage error naming it, before the plugins are built. The suites
// themselves run in host/bench's tests.
func TestBenchBadFlags(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--rounds", "-1"}, "--rounds -1"},
		{[]string{"--only", "chaos"}, `--only "chaos"`},
	} {
		code, _, errOut := sluice(t, ".", append([]string{"bench", "--quick"}, c.args...)...)
		if code != 2 || !strings.Contains(errOut, c.want) || strings.Contains(errOut, "building") {
			t.Errorf("sluice bench %v: exit %d, stderr %q; want 2 and a message naming %s", c.args, code, errOut, c.want)
		}
	}
}
