package pipeline

import (
	"fmt"
	"strings"
)

// validateGraph checks the graph the inputs of operators and sinks make:
// every input names a source or an operator, none twice; no operator reads
// its own output, directly or through others; and every source and
// operator is read by something. A file that names no inputs is a chain
// and passes.
func (p *Pipeline) validateGraph() []error {
	var errs []error
	kind := map[string]string{} // name -> "source" or "operator"
	for _, s := range p.Sources {
		kind[s.Name] = "source"
	}
	for _, o := range p.Operators {
		kind[o.Name] = "operator"
	}
	read := map[string]bool{}
	reads := make([][]int, len(p.Operators)) // operator -> operators it reads
	opIndex := map[string]int{}
	for i, o := range p.Operators {
		opIndex[o.Name] = i
	}
	check := func(inputs []string, path ...any) []string {
		seen := map[string]bool{}
		var ok []string
		for k, name := range inputs {
			at := append(append([]any(nil), path...), "inputs", k)
			switch {
			case kind[name] == "":
				msg := fmt.Sprintf("input %q is no source or operator", name)
				for _, s := range p.Sinks {
					if s.Name == name {
						msg = fmt.Sprintf("input %q is a sink: sinks have no output to read", name)
					}
				}
				errs = append(errs, p.errAt(msg, at...))
			case seen[name]:
				errs = append(errs, p.errAt(fmt.Sprintf("input %q is named twice", name), at...))
			default:
				seen[name] = true
				ok = append(ok, name)
			}
		}
		return ok
	}
	for i := range p.Operators {
		o := &p.Operators[i]
		inputs := check(o.Inputs, "operators", i)
		switch {
		case len(o.Inputs) > 0:
		case i == 0:
			for _, s := range p.Sources {
				inputs = append(inputs, s.Name)
			}
		default:
			inputs = []string{p.Operators[i-1].Name}
		}
		for _, name := range inputs {
			read[name] = true
			if j, ok := opIndex[name]; ok {
				reads[i] = append(reads[i], j)
			}
		}
	}
	for i := range p.Sinks {
		s := &p.Sinks[i]
		inputs := check(s.Inputs, "sinks", i)
		if len(s.Inputs) == 0 {
			if n := len(p.Operators); n > 0 {
				inputs = []string{p.Operators[n-1].Name}
			} else {
				for _, src := range p.Sources {
					inputs = append(inputs, src.Name)
				}
			}
		}
		for _, name := range inputs {
			read[name] = true
		}
	}
	if cycle := findCycle(reads); cycle != nil {
		var names []string
		for _, i := range cycle {
			names = append(names, p.Operators[i].Name)
		}
		errs = append(errs, p.errAt(fmt.Sprintf("operator %q reads its own output through %s: the graph must have no cycle",
			names[0], strings.Join(names, " -> ")), "operators", cycle[0], "inputs"))
	}
	if len(errs) > 0 {
		return errs
	}
	for i, s := range p.Sources {
		if !read[s.Name] {
			errs = append(errs, p.errAt(fmt.Sprintf("nothing reads source %q: name it in an operator's or sink's inputs", s.Name), "sources", i, "name"))
		}
	}
	for i, o := range p.Operators {
		if !read[o.Name] {
			errs = append(errs, p.errAt(fmt.Sprintf("nothing reads operator %q: name it in an operator's or sink's inputs", o.Name), "operators", i, "name"))
		}
	}
	return errs
}

// findCycle returns a cycle of the graph in which operator i reads the
// operators reads[i], as the operators along it with the first repeated
// at the end, or nil.
func findCycle(reads [][]int) []int {
	const (
		unseen = iota
		onPath
		done
	)
	mark := make([]int, len(reads))
	var path []int
	var visit func(i int) []int
	visit = func(i int) []int {
		mark[i] = onPath
		path = append(path, i)
		for _, j := range reads[i] {
			switch mark[j] {
			case onPath:
				for k, p := range path {
					if p == j {
						return append(append([]int(nil), path[k:]...), j)
					}
				}
			case unseen:
				if c := visit(j); c != nil {
					return c
				}
			}
		}
		path = path[:len(path)-1]
		mark[i] = done
		return nil
	}
	for i := range reads {
		if mark[i] == unseen {
			if c := visit(i); c != nil {
				return c
			}
		}
	}
	return nil
}
