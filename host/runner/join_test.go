package runner

import (
	"testing"

	"github.com/sluicehq/sluice/host/join"
	"github.com/sluicehq/sluice/host/pipeline"
)

// TestJoinObjective carries join.objective from the pipeline file to the
// join's operator: auto optimises throughput unless the file says
// otherwise.
func TestJoinObjective(t *testing.T) {
	for _, c := range []struct {
		line string
		want join.Objective
	}{
		{"join: {type: full}", join.Throughput},
		{"join: {type: full, objective: latency}", join.Latency},
		{"join: {type: full, algorithm: auto, objective: progressiveness}", join.Progressiveness},
	} {
		p, err := pipeline.Parse("p.yaml", t.TempDir(), []byte(`name: j
sources:
  - {name: orders, type: file, path: o.json, format: json, key_field: id, time_field: ts}
  - {name: payments, type: file, path: p.json, format: json, key_field: id, time_field: ts}
operators:
  - name: paid
    kind: join
    inputs: [orders, payments]
    `+c.line+`
    window: {type: tumbling, size: 1m}
sinks:
  - {name: out, type: file, path: out.jsonl}
`))
		if err != nil {
			t.Fatalf("%s: %v", c.line, err)
		}
		h := &Host{p: p}
		op, err := h.joinOperator(0, &p.Operators[0])
		if err != nil {
			t.Fatalf("%s: %v", c.line, err)
		}
		if op.Join == nil || op.Join.Algorithm != join.Auto || op.Join.Objective != c.want {
			t.Errorf("%s: join %+v, want auto optimising %v", c.line, op.Join, c.want)
		}
	}
}
