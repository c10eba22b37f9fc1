package pipeline

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

const stagedBase = `name: orders
nats: {url: "nats://127.0.0.1:4222"}
sources:
  - {name: in, type: jetstream, stream: ORDERS, subject: orders}
operators:
  - {name: parse, plugin: p.wasm, kind: map}
  - {name: count, plugin: c.wasm, kind: keyed}
  - {name: format, plugin: f.wasm, kind: map}
sinks:
  - {name: out, type: stdout}
  - {name: audit, type: file, path: audit.jsonl, inputs: [parse]}
`

func opNames(p *Pipeline) []string {
	var names []string
	for _, o := range p.Operators {
		names = append(names, o.Name)
	}
	return names
}

func sinkNames(p *Pipeline) []string {
	var names []string
	for _, s := range p.Sinks {
		names = append(names, s.Name)
	}
	return names
}

// TestStages: a chain cut at count is two pipelines: the first keeps the
// name, source and stream and publishes to the second's partition
// stream; the second reads it and writes the sink that reads the last
// operator. A sink that reads the first stage's operator stays with it.
func TestStages(t *testing.T) {
	p, err := Parse("p.yaml", t.TempDir(), []byte(stagedBase+"cluster: {host: h1, stages: [count]}\n"))
	if err != nil {
		t.Fatal(err)
	}
	stages := p.Stages()
	if len(stages) != 2 {
		t.Fatalf("%d stages, want 2", len(stages))
	}
	first, second := stages[0], stages[1]
	if first.Name != "orders" || !slices.Equal(opNames(first), []string{"parse"}) || first.Cluster.Stream != "SLUICE_ORDERS_IN" ||
		first.Sources[0].Name != "in" || *first.Stage != (Stage{Index: 0, Count: 2, Operator: "parse"}) {
		t.Errorf("first stage: %s %v stream %s source %s stage %+v", first.Name, opNames(first), first.Cluster.Stream, first.Sources[0].Name, *first.Stage)
	}
	if got := sinkNames(first); !slices.Equal(got, []string{"audit", "stage-count"}) {
		t.Errorf("first stage's sinks %v", got)
	}
	link := first.Sinks[1]
	if link.Type != StageSinkType || link.Subject != "sluice.in.orders-count" || link.Stream != "SLUICE_ORDERS_IN_COUNT" || !slices.Equal(link.Inputs, []string{"parse"}) {
		t.Errorf("the link to the second stage: %+v", link)
	}
	if second.Name != "orders-count" || !slices.Equal(opNames(second), []string{"count", "format"}) || second.Cluster.Stream != "SLUICE_ORDERS_IN_COUNT" ||
		len(second.Sources) != 1 || second.Sources[0].Type != StageSourceType || !slices.Equal(sinkNames(second), []string{"out"}) ||
		*second.Stage != (Stage{Index: 1, Count: 2, Operator: "count", Dir: filepath.Join("stages", "count")}) {
		t.Errorf("second stage: %s %v stream %s sources %+v sinks %v stage %+v", second.Name, opNames(second), second.Cluster.Stream,
			second.Sources, sinkNames(second), *second.Stage)
	}
	if PartitionPrefix(second.Name) != link.Subject {
		t.Errorf("the first stage publishes to %s, the second reads %s", link.Subject, PartitionPrefix(second.Name))
	}
	// The stages are copies: the pipeline is as it was.
	if !slices.Equal(opNames(p), []string{"parse", "count", "format"}) || len(p.Sinks) != 2 || p.Cluster.Stream != "SLUICE_ORDERS_IN" || p.Stage != nil {
		t.Errorf("Stages changed the pipeline: %v %v %s", opNames(p), sinkNames(p), p.Cluster.Stream)
	}

	// Three stages: the middle one links on.
	p3, err := Parse("p.yaml", t.TempDir(), []byte(stagedBase+"cluster: {stages: [format, count]}\n"))
	if err != nil {
		t.Fatal(err)
	}
	s3 := p3.Stages()
	if len(s3) != 3 || !slices.Equal(opNames(s3[1]), []string{"count"}) || !slices.Equal(sinkNames(s3[1]), []string{"stage-format"}) ||
		s3[1].Sinks[0].Subject != "sluice.in.orders-format" || s3[2].Name != "orders-format" || !slices.Equal(sinkNames(s3[2]), []string{"out"}) {
		t.Errorf("three stages: %v", s3)
	}

	// No stages: the pipeline is its own only stage.
	one, err := Parse("p.yaml", t.TempDir(), []byte(stagedBase+"cluster: {}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if got := one.Stages(); len(got) != 1 || got[0] != one || one.Stage != nil {
		t.Errorf("a pipeline without stages: %v", got)
	}
}

func TestStageRefusals(t *testing.T) {
	for name, tc := range map[string]struct{ file, want string }{
		"unknown":  {stagedBase + "cluster: {stages: [nope]}\n", `cluster.stages[0]: "nope" is no operator`},
		"first":    {stagedBase + "cluster: {stages: [parse]}\n", `cluster.stages[0]: "parse" is the first operator`},
		"twice":    {stagedBase + "cluster: {stages: [count, count]}\n", `cluster.stages[1]: "count" is named twice`},
		"inputs":   {strings.Replace(stagedBase, "{name: format, plugin: f.wasm, kind: map}", "{name: format, plugin: f.wasm, kind: map, inputs: [count]}", 1) + "cluster: {stages: [count]}\n", `operator "format" names its inputs`},
		"two-sink": {strings.Replace(stagedBase, "inputs: [parse]", "inputs: [parse, format]", 1) + "cluster: {stages: [count]}\n", `sinks[1].inputs: sink "audit" reads operators of different stages`},
		"txn": {strings.Replace(stagedBase, "{name: count, plugin: c.wasm, kind: keyed}", "{name: count, plugin: c.wasm, kind: transactional, tables: [{name: t}]}", 1) + "cluster: {stages: [format]}\n",
			"a pipeline with a transactional operator lives on one host"},
		"window": {strings.Replace(stagedBase, "{name: format, plugin: f.wasm, kind: map}", "{name: format, kind: aggregate, function: count, window: {type: tumbling, size: 1m}}", 1) + "cluster: {stages: [count]}\n",
			`operator "format", after "count", is windowed`},
	} {
		_, err := Parse("p.yaml", t.TempDir(), []byte(tc.file))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want an error with %q", name, err, tc.want)
		}
	}
}
