package join

import (
	"fmt"
	"runtime"
	"slices"
)

// Options configure a kernel. The zero value of a field takes its
// default.
type Options struct {
	// Workers is the number of goroutines a kernel joins with, 1 or more
	// (default GOMAXPROCS).
	Workers int
	// RadixBits is PRJ's number of partitioning bits (default: chosen so
	// that an R partition holds about 4,096 tuples; at most 16). More than
	// 8 bits partition in two passes.
	RadixBits int
	// Delta is PMJ's run size as a fraction of a worker's tuples of a
	// window (default 0.2, the study's best). The first window, which has
	// no last window to size by, uses Expected.
	Delta float64
	// Group is JB's group size g (default 2): g = 1 is hash partitioning,
	// g = Workers is JM.
	Group int
	// Expected is the number of tuples expected per side per window, for
	// PMJ's first runs (default: none; runs of 1,024 tuples until a window
	// has been seen).
	Expected int

	// pmjMinRun replaces pmjMinRun where not 0 (tests, to form many runs
	// from few tuples).
	pmjMinRun int
}

// withDefaults fills the zero fields and checks the rest.
func (o Options) withDefaults() (Options, error) {
	if o.Workers == 0 {
		o.Workers = runtime.GOMAXPROCS(0)
	}
	if o.Delta == 0 {
		o.Delta = 0.2
	}
	if o.Group == 0 {
		o.Group = 2
	}
	switch {
	case o.Workers < 1:
		return o, fmt.Errorf("%w: workers %d, want 1 or more", ErrOptions, o.Workers)
	case o.RadixBits < 0 || o.RadixBits > 16:
		return o, fmt.Errorf("%w: radix bits %d, want 1 to 16 (0: chosen)", ErrOptions, o.RadixBits)
	case !(o.Delta > 0 && o.Delta <= 1):
		return o, fmt.Errorf("%w: delta %v, want a fraction in (0, 1]", ErrOptions, o.Delta)
	case o.Group < 1:
		return o, fmt.Errorf("%w: group %d, want 1 or more", ErrOptions, o.Group)
	case o.Expected < 0:
		return o, fmt.Errorf("%w: expected %d, want 0 or more", ErrOptions, o.Expected)
	}
	return o, nil
}

// Algorithm describes one of the registry's algorithms.
type Algorithm struct {
	// Name is how pipelines and the bench command name it.
	Name string
	// Lazy is true for the algorithms that join a whole window at its end
	// (their kernels implement Lazy).
	Lazy bool
	// Summary says in a line what it does.
	Summary string
	mk      func(Options) Kernel
}

var algorithms = [...]Algorithm{
	{Name: "npj", Lazy: true, Summary: "no-partitioning hash join: one shared table built from R, probed with S", mk: func(o Options) Kernel { return newNPJ(o) }},
	{Name: "prj", Lazy: true, Summary: "parallel radix join: cache-sized partitions of both sides, joined one by one", mk: func(o Options) Kernel { return newPRJ(o) }},
	{Name: "mway", Lazy: true, Summary: "sort-merge join: sorted runs, a multi-way merge per key range, merge join", mk: func(o Options) Kernel { return newSortMerge("mway", true, o) }},
	{Name: "mpass", Lazy: true, Summary: "sort-merge join: sorted runs, successive two-way merges per key range, merge join", mk: func(o Options) Kernel { return newSortMerge("mpass", false, o) }},
	{Name: "shj-jm", Summary: "symmetric hash join per worker, R replicated to every worker, S split", mk: func(o Options) Kernel {
		return newEager("shj-jm", o, false, func() eagerState { return &shj{} })
	}},
	{Name: "shj-jb", Summary: "symmetric hash join per worker, key groups of g workers: R to the group, S to one member", mk: func(o Options) Kernel {
		return newEager("shj-jb", o, true, func() eagerState { return &shj{} })
	}},
	{Name: "pmj-jm", Summary: "progressive merge join per worker, R replicated to every worker, S split", mk: func(o Options) Kernel {
		return newEager("pmj-jm", o, false, func() eagerState { return newPMJ(o.Delta, pmjExpected(o, false), o.pmjMinRun) })
	}},
	{Name: "pmj-jb", Summary: "progressive merge join per worker, key groups of g workers: R to the group, S to one member", mk: func(o Options) Kernel {
		return newEager("pmj-jb", o, true, func() eagerState { return newPMJ(o.Delta, pmjExpected(o, true), o.pmjMinRun) })
	}},
}

// pmjExpected is a PMJ worker's expected tuples per window: all of R and
// its share of S under JM, its group's share of R and its share of S under
// JB.
func pmjExpected(o Options, jb bool) int {
	if o.Expected == 0 {
		return 0
	}
	if !jb {
		return o.Expected + o.Expected/o.Workers
	}
	groups := max(o.Workers/min(o.Group, o.Workers), 1)
	return o.Expected/groups + o.Expected/o.Workers
}

// Auto is the name of the adaptive choice (see NewAuto).
const Auto = "auto"

// Algorithms returns the eight algorithms in the study's order: the lazy
// ones, then the eager ones.
func Algorithms() []Algorithm { return slices.Clone(algorithms[:]) }

// Names returns the algorithms' names and then "auto".
func Names() []string {
	names := make([]string, 0, len(algorithms)+1)
	for _, a := range algorithms {
		names = append(names, a.Name)
	}
	return append(names, Auto)
}

// ByName returns the algorithm called name ("auto" is not one: see
// NewAuto).
func ByName(name string) (Algorithm, bool) {
	for _, a := range algorithms {
		if a.Name == name {
			return a, true
		}
	}
	return Algorithm{}, false
}

// New returns a kernel of the algorithm called name, or of the adaptive
// choice for "auto" (with the default Config).
func New(name string, o Options) (Kernel, error) {
	o, err := o.withDefaults()
	if err != nil {
		return nil, err
	}
	if name == Auto {
		return newAuto(o, DefaultConfig()), nil
	}
	a, ok := ByName(name)
	if !ok {
		return nil, fmt.Errorf("%w %q (want one of %v)", ErrUnknown, name, Names())
	}
	return a.mk(o), nil
}
