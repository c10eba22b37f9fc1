package pipeline

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"
)

// Stage says which part of a pipeline cut into stages (cluster.stages)
// a Pipeline that Stages returned is.
//
// A stage is a run of the chain's operators that the hosts run as a
// pipeline of its own: its own cluster (assignment, leases, checkpoints),
// so its key groups, and with them its operators, can be placed on hosts
// apart from the other stages'. A stage after the first reads its records
// from its partition stream, into which the stage before it publishes its
// outputs, each on the subject of its key's key group, with the output's
// id, so that outputs made again after a failover are stored once.
type Stage struct {
	// Index is the stage's place in the chain, from 0; Count is how many
	// stages the pipeline has.
	Index, Count int
	// Operator names the stage's first operator, which names the stage.
	Operator string
	// Dir is where, under the data directory, the stage keeps its data:
	// "" for the first stage, stages/<operator> for the others.
	Dir string
}

// Stage sink and source types: the records of one stage to the next
// through the next stage's partition stream. Stages makes them; a
// pipeline file cannot name them.
const (
	StageSinkType   = "stage"
	StageSourceType = "stage"
)

// PartitionPrefix is the subject prefix of the partition stream of the
// pipeline (or stage) named name, when it is spread over hosts: the
// records of key group kg are on "<prefix>.<kg>".
func PartitionPrefix(name string) string { return "sluice.in." + name }

// validateStages checks cluster.stages: operators of a chain, each named
// once, none of them the first, and a pipeline whose parts can run apart.
func (p *Pipeline) validateStages() []error {
	c := p.Cluster
	if c == nil || len(c.Stages) == 0 {
		return nil
	}
	var errs []error
	add := func(msg string, path ...any) {
		errs = append(errs, p.errAt(msg, append([]any{"cluster", "stages"}, path...)...))
	}
	if p.Whole() {
		add("a pipeline with a transactional operator lives on one host (its scheduler is one host's): it cannot be cut into stages")
	}
	if p.Control.Enabled {
		add("the control plane does not yet run a pipeline cut into stages: remove control: or cluster.stages")
	}
	for i, o := range p.Operators {
		if len(o.Inputs) > 0 {
			errs = append(errs, p.errAt(fmt.Sprintf("operator %q names its inputs: a pipeline cut into stages is a chain (no operator names inputs)", o.Name), "operators", i, "inputs"))
		}
	}
	seen := map[string]bool{}
	for k, name := range c.Stages {
		i := slices.IndexFunc(p.Operators, func(o Operator) bool { return o.Name == name })
		switch {
		case i < 0:
			add(fmt.Sprintf("%q is no operator: a stage starts at an operator", name), k)
		case i == 0:
			add(fmt.Sprintf("%q is the first operator, which starts the first stage: name the operators that start the others", name), k)
		case seen[name]:
			add(fmt.Sprintf("%q is named twice", name), k)
		case !nameRE.MatchString(name):
			add(fmt.Sprintf("%q names a stage, whose cluster and stream are named after it: use letters, digits, - and _", name), k)
		default:
			seen[name] = true
			if p.Operators[i].Windowed() {
				add(fmt.Sprintf("%q is windowed: a stage after the first reads records without the source's watermarks, so a windowed operator must be in the first stage", name), k)
			}
			for _, o := range p.Operators[i+1:] {
				if o.Windowed() {
					add(fmt.Sprintf("operator %q, after %q, is windowed: a stage after the first reads records without the source's watermarks, so a windowed operator must be in the first stage", o.Name, name), k)
					break
				}
			}
		}
	}
	if len(errs) > 0 {
		return errs
	}
	bounds := p.stageBounds()
	for i, s := range p.Sinks {
		var in []int
		for _, name := range s.Inputs {
			if j := slices.IndexFunc(p.Operators, func(o Operator) bool { return o.Name == name }); j >= 0 {
				in = append(in, stageOf(bounds, j))
			} else {
				in = append(in, 0) // a source: the first stage reads it
			}
		}
		if len(slices.Compact(slices.Sorted(slices.Values(in)))) > 1 {
			errs = append(errs, p.errAt(fmt.Sprintf("sink %q reads operators of different stages: a sink is written by one stage's hosts", s.Name), "sinks", i, "inputs"))
		}
	}
	return errs
}

// stageBounds returns the index of each stage's first operator, in chain
// order (the first is 0).
func (p *Pipeline) stageBounds() []int {
	bounds := []int{0}
	for i, o := range p.Operators {
		if i > 0 && slices.Contains(p.Cluster.Stages, o.Name) {
			bounds = append(bounds, i)
		}
	}
	return bounds
}

// stageOf returns the stage that operator i is in.
func stageOf(bounds []int, i int) int {
	s := 0
	for k, b := range bounds {
		if i >= b {
			s = k
		}
	}
	return s
}

// Stages returns the pipeline cut into its stages (cluster.stages), each a
// Pipeline that runs on its own, in chain order; a pipeline without
// stages is the only stage of itself (Stage is then nil). The first stage
// keeps the pipeline's name, source and stream; stage <operator> is named
// "<name>-<operator>", reads a source of type StageSourceType from its
// own partition stream (cluster.stream with _<OPERATOR> added), and every
// stage but the last writes, besides the sinks that read its operators,
// to a sink of type StageSinkType that publishes to the next stage's
// partition stream. p is not changed.
func (p *Pipeline) Stages() []*Pipeline {
	if p.Cluster == nil || len(p.Cluster.Stages) == 0 {
		return []*Pipeline{p}
	}
	bounds := p.stageBounds()
	stages := make([]*Pipeline, len(bounds))
	for k, first := range bounds {
		end := len(p.Operators)
		if k+1 < len(bounds) {
			end = bounds[k+1]
		}
		st := *p
		c := *p.Cluster
		st.Cluster = &c
		st.Operators = slices.Clone(p.Operators[first:end])
		st.Stage = &Stage{Index: k, Count: len(bounds), Operator: p.Operators[first].Name}
		if k > 0 {
			op := p.Operators[first].Name
			st.Name = p.Name + "-" + op
			c.Stream = stageStream(p.Cluster.Stream, op)
			st.Stage.Dir = filepath.Join("stages", op)
			st.Sources = []Source{{Name: "stage-" + op, Type: StageSourceType}}
		}
		st.Sinks = nil
		for _, s := range p.Sinks {
			in := k == len(bounds)-1 // a sink that names no input reads the last operator
			for _, name := range s.Inputs {
				j := slices.IndexFunc(p.Operators, func(o Operator) bool { return o.Name == name })
				in = j >= first && j < end || j < 0 && k == 0
			}
			if in {
				st.Sinks = append(st.Sinks, s)
			}
		}
		if k+1 < len(bounds) {
			next := p.Operators[end].Name
			st.Sinks = append(st.Sinks, Sink{Name: "stage-" + next, Type: StageSinkType, Inputs: []string{p.Operators[end-1].Name},
				Subject: PartitionPrefix(p.Name + "-" + next), Stream: stageStream(p.Cluster.Stream, next)})
		}
		stages[k] = &st
	}
	return stages
}

// stageStream is the partition stream of stage op of a pipeline whose
// partition stream is stream.
func stageStream(stream, op string) string {
	return stream + "_" + strings.ToUpper(strings.ReplaceAll(op, "-", "_"))
}
