package main

import (
	"strings"
	"testing"
)

// TestBenchMigrateBadFlags checks that every bad flag of `sluice bench
// migrate` is refused with a usage error naming it, before the plugin is
// built. The benchmark itself runs in host/bench's tests.
func TestBenchMigrateBadFlags(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--strategy", "fluid,teleport"}, `--strategy "teleport"`},
		{[]string{"--nats-servers", "0"}, "--nats-servers 0"},
		{[]string{"--hosts", "1"}, "--hosts 1"},
		{[]string{"--key-groups", "3"}, "--key-groups 3"},
		{[]string{"--key-groups", "70000"}, "--key-groups 70000"},
		{[]string{"--state", "lots"}, "--state"},
		{[]string{"--rate", "0"}, "--rate 0"},
		{[]string{"--duration", "0s"}, "--duration 0s"},
		{[]string{"--json", ""}, "--json"},
		{[]string{"--lease", "0s"}, "--lease 0s"},
		{[]string{"--checkpoint-every", "-1s"}, "--checkpoint-every -1s"},
		{[]string{"--move-checkpoint-every", "-1s"}, "--move-checkpoint-every -1s"},
		{[]string{"--moves=false", "--failover=false", "--partition=false"}, "nothing to run"},
	} {
		code, _, errOut := sluice(t, ".", append([]string{"bench", "migrate", "--quick"}, c.args...)...)
		if code != 2 || !strings.Contains(errOut, c.want) || strings.Contains(errOut, "building") {
			t.Errorf("sluice bench migrate %v: exit %d, stderr %q; want 2 and a message naming %s", c.args, code, errOut, c.want)
		}
	}
}
