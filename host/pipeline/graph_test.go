package pipeline

import (
	"strings"
	"testing"
)

const graphFile = `name: g
sources:
  - {name: orders, type: file, path: o.txt}
  - {name: payments, type: file, path: p.txt}
operators:
  - name: join
    plugin: /abs/j.wasm
    kind: keyed
    inputs: [orders, payments]
  - name: audit
    plugin: /abs/a.wasm
    kind: map
    inputs: [payments]
sinks:
  - {name: out, type: file, path: out.txt, inputs: [join]}
  - {name: log, type: file, path: log.txt, inputs: [audit, join]}
`

func TestParseGraph(t *testing.T) {
	p, err := Parse("p.yaml", "/pipes", []byte(graphFile))
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(p.Operators[0].Inputs, ","); got != "orders,payments" {
		t.Errorf("join inputs %q", got)
	}
	if got := strings.Join(p.Sinks[1].Inputs, ","); got != "audit,join" {
		t.Errorf("log inputs %q", got)
	}
}

func TestParseGraphErrors(t *testing.T) {
	for _, tc := range []struct {
		name, yaml string
		want       []string
	}{
		{"unknown input", strings.Replace(graphFile, "inputs: [orders, payments]", "inputs: [orders, paymnts]", 1),
			[]string{"p.yaml:9:", "operators[0].inputs[1]", `input "paymnts" is no source or operator`}},
		{"a sink as input", strings.Replace(graphFile, "inputs: [payments]", "inputs: [out]", 1),
			[]string{"p.yaml:13:", "operators[1].inputs[0]", `input "out" is a sink`}},
		{"twice", strings.Replace(graphFile, "inputs: [orders, payments]", "inputs: [orders, orders, payments]", 1),
			[]string{"operators[0].inputs[1]", `input "orders" is named twice`}},
		{"cycle", strings.Replace(strings.Replace(graphFile, "inputs: [orders, payments]", "inputs: [orders, payments, audit]", 1), "inputs: [payments]", "inputs: [join]", 1),
			[]string{"p.yaml:9:", `operator "join" reads its own output through join -> audit -> join`}},
		{"unread source", strings.Replace(strings.Replace(graphFile, "inputs: [payments]", "inputs: [join]", 1), "inputs: [orders, payments]", "inputs: [orders]", 1),
			[]string{"p.yaml:4:", `nothing reads source "payments"`}},
		{"unread operator", strings.Replace(graphFile, "inputs: [audit, join]", "inputs: [join]", 1),
			[]string{"p.yaml:10:", `nothing reads operator "audit"`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse("p.yaml", "/pipes", []byte(tc.yaml))
			if err == nil {
				t.Fatal("no error")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
		})
	}
}
