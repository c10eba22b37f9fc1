package pipeline

import (
	"strings"
	"testing"
	"time"
)

// hostsBase is a pipeline spread over hosts with the control plane on;
// a test appends the hosts section from line 11.
const hostsBase = clusterBase + "cluster: {host: h1}\ncontrol:\n"

// TestControlHostsSection: every key of control.hosts is read as
// written, and the section turns the decision on.
func TestControlHostsSection(t *testing.T) {
	p, err := Parse("p.yaml", t.TempDir(), []byte(hostsBase+`  hosts:
    min: 2
    max: 6
    request: kubectl scale deployment/sluice-pool --replicas=3
    release: echo "$SLUICE_HOST_ID" >> released
    timeout: 20s
    span: 45s
    scale_out_above: 0.8
    scale_in_below: 0.5
`))
	if err != nil {
		t.Fatal(err)
	}
	want := ControlHosts{Enabled: true, Min: 2, Max: 6, Request: "kubectl scale deployment/sluice-pool --replicas=3",
		Release: `echo "$SLUICE_HOST_ID" >> released`, Timeout: 20 * time.Second, Span: 45 * time.Second, ScaleOutAbove: 0.8, ScaleInBelow: 0.5}
	if p.Control.Hosts != want {
		t.Errorf("hosts\n%+v\nwant\n%+v", p.Control.Hosts, want)
	}
}

// TestControlHostsOff: the decision is off without a hosts key, with
// enabled: false, or with the control plane off; an empty hosts section
// turns it on with every default, and an empty command is none.
func TestControlHostsOff(t *testing.T) {
	for name, tc := range map[string]struct {
		section string
		on      bool
	}{
		"no hosts key":     {"  period: 1s\n", false},
		"hosts disabled":   {"  hosts: {enabled: false}\n", false},
		"control disabled": {"  enabled: false\n  hosts: {}\n", false},
		"empty hosts":      {"  hosts: {}\n", true},
		"empty commands":   {"  hosts: {request: \"\", release: \" \"}\n", true},
	} {
		p, err := Parse("p.yaml", t.TempDir(), []byte(hostsBase+tc.section))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if p.Control.Hosts.Enabled != tc.on {
			t.Errorf("%s: enabled %v, want %v", name, p.Control.Hosts.Enabled, tc.on)
		}
		def := DefaultControl().Hosts
		def.Enabled = tc.on
		if p.Control.Hosts != def {
			t.Errorf("%s: %+v, want the defaults %+v", name, p.Control.Hosts, def)
		}
	}
}

// TestControlHostsRefusals: every bad value of control.hosts is refused
// with the file, the line and the key at fault.
func TestControlHostsRefusals(t *testing.T) {
	for name, tc := range map[string]struct{ base, section, want string }{
		"min over max": {hostsBase, "  hosts:\n    min: 3\n    max: 2\n", "p.yaml:12: control.hosts.min: min 3 is over max 2"},
		"max under default min": {hostsBase, "  hosts:\n    max: 0\n",
			"p.yaml:12: control.hosts.max: min 1 is over max 0"},
		"min under 1": {hostsBase, "  hosts: {min: 0}\n", "p.yaml:11: control.hosts.min: min 0: want at least 1 active host"},
		"request, no room": {hostsBase, "  hosts:\n    max: 1\n    request: ./more-hosts\n",
			"p.yaml:13: control.hosts.request: request is given, but min and max are both 1"},
		"zero timeout": {hostsBase, "  hosts:\n    timeout: 0s\n", "p.yaml:12: control.hosts.timeout: timeout 0s: want a positive duration"},
		"zero span":    {hostsBase, "  hosts: {span: 0s}\n", "control.hosts.span: span 0s: want a positive duration"},
		"scale in over scale out": {hostsBase, "  hosts:\n    scale_in_below: 0.95\n",
			"p.yaml:12: control.hosts.scale_in_below: scale_in_below 0.95 is not under scale_out_above 0.9"},
		"scale out over 1": {hostsBase, "  hosts:\n    scale_out_above: 1.5\n",
			"p.yaml:12: control.hosts.scale_out_above: scale_out_above 1.5: want more than 0 and at most 1"},
		"not spread over hosts": {controlBase, "control:\n  hosts: {max: 3}\n",
			"p.yaml:9: control.hosts: the pipeline has no cluster: section"},
		"transactional": {strings.Replace(hostsBase, "kind: keyed}", "kind: transactional, tables: [{name: t}]}", 1), "  hosts: {max: 3}\n",
			"p.yaml:11: control.hosts: the pipeline has a transactional operator: its key groups live on one host together"},
		"unknown key": {hostsBase, "  hosts:\n    requst: ./more\n", `p.yaml:12: control.hosts.requst: unknown key "requst"`},
	} {
		_, err := Parse("p.yaml", t.TempDir(), []byte(tc.base+tc.section))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want an error with %q", name, err, tc.want)
		}
	}
}
