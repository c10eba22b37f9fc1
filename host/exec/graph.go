package exec

import (
	"errors"

	"fmt"
	"github.com/sluicehq/sluice/abi"
	"slices"
	"strings"
)

// ref names a stream of the graph: a source's records (src >= 0) or an
// operator's outputs (op >= 0).
type ref struct{ src, op int }

func (r ref) String() string {
	if r.src >= 0 {
		return fmt.Sprintf("source %d", r.src)
	}
	return fmt.Sprintf("operator %d", r.op)
}

// ErrGraph is wrapped by the errors of a pipeline whose graph is not a
// directed acyclic graph of known names.
var ErrGraph = errors.New("exec: bad pipeline graph")

// graph is a job's resolved graph: each operator's and sink's inputs, and
// an order in which every operator comes after its inputs.
type graph struct {
	opInputs   [][]ref
	sinkInputs [][]ref
	order      []int
}

// resolve turns the names in cfg's Inputs into refs. An operator that
// names no inputs reads the operator before it, or every source when it
// is the first; a sink that names none reads the last operator, or every
// source when there are none: a file that names no inputs is a chain.
func resolve(cfg *Config) (*graph, error) {
	names := map[string]ref{}
	for i, s := range cfg.Sources {
		names[s.Name] = ref{src: i, op: -1}
	}
	for i := range cfg.Operators {
		name := cfg.Operators[i].Name
		if r, ok := names[name]; ok && r.src >= 0 {
			return nil, fmt.Errorf("%w: operator %q has the name of a source; inputs name either", ErrGraph, name)
		}
		names[name] = ref{src: -1, op: i}
	}
	everySource := func() []ref {
		var rs []ref
		for i := range cfg.Sources {
			rs = append(rs, ref{src: i, op: -1})
		}
		return rs
	}
	lookup := func(what string, inputs []string) ([]ref, error) {
		var rs []ref
		for _, name := range inputs {
			r, ok := names[name]
			if !ok {
				return nil, fmt.Errorf("%w: %s names input %q, which is no source or operator", ErrGraph, what, name)
			}
			if slices.Contains(rs, r) {
				return nil, fmt.Errorf("%w: %s names input %q twice", ErrGraph, what, name)
			}
			rs = append(rs, r)
		}
		return rs, nil
	}
	g := &graph{}
	for i := range cfg.Operators {
		op := &cfg.Operators[i]
		what := fmt.Sprintf("operator %q", op.Name)
		rs, err := lookup(what, op.Inputs)
		if err != nil {
			return nil, err
		}
		switch {
		case len(op.Inputs) > 0:
		case i == 0:
			rs = everySource()
		default:
			rs = []ref{{src: -1, op: i - 1}}
		}
		if len(rs) > abi.MaxInputs {
			return nil, fmt.Errorf("%w: %s reads %d inputs, more than a record can tell apart (%d)", ErrGraph, what, len(rs), abi.MaxInputs)
		}
		if slices.Contains(rs, ref{src: -1, op: i}) {
			return nil, fmt.Errorf("%w: %s reads its own output", ErrGraph, what)
		}
		g.opInputs = append(g.opInputs, rs)
	}
	for i := range cfg.Sinks {
		s := &cfg.Sinks[i]
		rs, err := lookup(fmt.Sprintf("sink %q", s.Name), s.Inputs)
		if err != nil {
			return nil, err
		}
		if len(s.Inputs) == 0 {
			if n := len(cfg.Operators); n > 0 {
				rs = []ref{{src: -1, op: n - 1}}
			} else {
				rs = everySource()
			}
		}
		g.sinkInputs = append(g.sinkInputs, rs)
	}
	order, err := g.sort(cfg)
	if err != nil {
		return nil, err
	}
	g.order = order
	return g, nil
}

// sort orders the operators so that each comes after the operators it
// reads (Kahn's algorithm, taking the earliest in file order first, so a
// chain keeps its order), or names a cycle.
func (g *graph) sort(cfg *Config) ([]int, error) {
	n := len(g.opInputs)
	pending := make([]int, n)
	readers := make([][]int, n)
	for i, rs := range g.opInputs {
		for _, r := range rs {
			if r.op >= 0 {
				pending[i]++
				readers[r.op] = append(readers[r.op], i)
			}
		}
	}
	var order []int
	done := make([]bool, n)
	for len(order) < n {
		next := -1
		for i := range n {
			if !done[i] && pending[i] == 0 {
				next = i
				break
			}
		}
		if next < 0 {
			var cycle []string
			for i := range n {
				if !done[i] {
					cycle = append(cycle, fmt.Sprintf("%q", cfg.Operators[i].Name))
				}
			}
			return nil, fmt.Errorf("%w: operators %s read each other's outputs in a cycle", ErrGraph, strings.Join(cycle, ", "))
		}
		done[next] = true
		order = append(order, next)
		for _, r := range readers[next] {
			pending[r]--
		}
	}
	return order, nil
}

// unread returns the names of the sources and operators whose records no
// operator or sink reads.
func (g *graph) unread(cfg *Config) []string {
	srcRead := make([]bool, len(cfg.Sources))
	opRead := make([]bool, len(cfg.Operators))
	mark := func(rs []ref) {
		for _, r := range rs {
			if r.src >= 0 {
				srcRead[r.src] = true
			} else {
				opRead[r.op] = true
			}
		}
	}
	for _, rs := range g.opInputs {
		mark(rs)
	}
	for _, rs := range g.sinkInputs {
		mark(rs)
	}
	var out []string
	for i, ok := range srcRead {
		if !ok {
			out = append(out, fmt.Sprintf("source %q", cfg.Sources[i].Name))
		}
	}
	for i, ok := range opRead {
		if !ok {
			out = append(out, fmt.Sprintf("operator %q", cfg.Operators[i].Name))
		}
	}
	return out
}

// allSources reports whether rs is every source, in source order: that
// stream is the batch's input as read.
func allSources(rs []ref, sources int) bool {
	if len(rs) != sources {
		return false
	}
	for i, r := range rs {
		if r.src != i {
			return false
		}
	}
	return true
}
