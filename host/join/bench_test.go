package join

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
)

// TestRunBenchQuick runs every algorithm and auto on the quick micro
// window and on each shape's generator check, and checks the report.
func TestRunBenchQuick(t *testing.T) {
	var progress bytes.Buffer
	rep, err := RunBench(context.Background(), BenchOptions{
		Algorithms: Names(), Workers: 2, Workload: "micro", Micro: Micro{RateR: 20, RateS: 30, Window: 50, Dupe: 3, Seed: 1},
		Progress: &progress, Repeat: 2,
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Points) != 1 || len(rep.Points[0].Results) != len(Names()) {
		t.Fatalf("report %+v, want one point with a result per algorithm", rep)
	}
	pt := rep.Points[0]
	if pt.Check != "nested loop" || pt.Matches == 0 {
		t.Errorf("point checked by %q with %d matches", pt.Check, pt.Matches)
	}
	for _, res := range pt.Results {
		if res.Matches != pt.Matches || res.Throughput <= 0 || res.LastMatch <= 0 {
			t.Errorf("%s: %+v", res.Algorithm, res)
		}
		if res.Algorithm == Auto && res.Chosen == "" {
			t.Errorf("auto reports no choice")
		}
	}
	var table bytes.Buffer
	if err := rep.WriteTable(&table); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"inputs/s", "p95 latency", "auto chose"} {
		if !strings.Contains(table.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, table.String())
		}
	}
	for _, res := range pt.Results {
		if len(res.Throughputs) != 2 {
			t.Errorf("%s: throughputs %v, want 2 runs", res.Algorithm, res.Throughputs)
		}
	}
	if !strings.Contains(progress.String(), "bench join: point 1/1: npj (1/9), round 2/2") {
		t.Errorf("progress:\n%s", progress.String())
	}
}

// dropper is a kernel that loses the last match of a window: the bench
// must fail rather than report it.
type dropper struct{ Kernel }

func (d dropper) Join(ctx context.Context, r, s []Tuple, emit Emit) error {
	var all []Match
	err := d.Kernel.(Lazy).Join(ctx, r, s, func(_ int, ms []Match) { all = append(all, ms...) })
	if len(all) > 0 {
		emit(0, all[:len(all)-1])
	}
	return err
}

func TestRunBenchFailsOnWrongCount(t *testing.T) {
	_, err := RunBench(context.Background(), BenchOptions{
		Algorithms: []string{"npj"}, Workers: 1, Workload: "micro", Micro: QuickMicro(),
		newKernel: func(name string, o Options) (Kernel, error) {
			k, err := New(name, o)
			return dropper{k}, err
		},
	})
	if !errors.Is(err, ErrWrongCount) {
		t.Fatalf("RunBench with a kernel that drops a match: %v, want ErrWrongCount", err)
	}
}

func TestShapes(t *testing.T) {
	for _, name := range Shapes() {
		w, err := Shape(name, 1)
		if err != nil {
			t.Fatal(err)
		}
		full := w.R.N
		w.R.N, w.S.N = min(w.R.N, 20_000), min(w.S.N, 20_000) // the tests' time
		if full <= 0 {
			t.Errorf("%s: no R tuples", name)
		}
		r, s, err := w.Generate()
		if err != nil {
			t.Fatal(err)
		}
		r2, s2, _ := w.Generate()
		if len(r) != w.R.N || len(s) != w.S.N || r[len(r)/2] != r2[len(r2)/2] || s[len(s)-1] != s2[len(s2)-1] {
			t.Errorf("%s: sizes %d/%d or not deterministic", name, len(r), len(s))
		}
		if CountMatches(r, s) == 0 {
			t.Errorf("%s: no matches", name)
		}
	}
	if _, err := Shape("tpch", 1); !errors.Is(err, ErrOptions) {
		t.Errorf("Shape(tpch): %v", err)
	}
}

// counted counts a lazy kernel's windows.
type counted struct {
	Kernel
	n *int
}

func (c counted) Join(ctx context.Context, r, s []Tuple, emit Emit) error {
	*c.n++
	return c.Kernel.(Lazy).Join(ctx, r, s, emit)
}

// TestRunBenchWarmup: warm-up rounds run every algorithm but record only
// the measured rounds.
func TestRunBenchWarmup(t *testing.T) {
	var progress bytes.Buffer
	windows := 0
	rep, err := RunBench(context.Background(), BenchOptions{
		Algorithms: []string{"npj", Auto}, Workers: 2, Workload: "micro", Micro: QuickMicro(),
		Progress: &progress, Repeat: 2, Warmup: 1,
		newKernel: func(name string, o Options) (Kernel, error) {
			k, err := New(name, o)
			return counted{k, &windows}, err
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	if windows != 3 {
		t.Errorf("npj joined %d windows, want 3 (1 warm-up, 2 measured)", windows)
	}
	pt := rep.Points[0]
	if pt.Warmup != 1 {
		t.Errorf("point's warm-up %d, want 1", pt.Warmup)
	}
	for _, res := range pt.Results {
		if len(res.Throughputs) != 2 {
			t.Errorf("%s: throughputs %v, want the 2 measured runs", res.Algorithm, res.Throughputs)
		}
	}
	if !strings.Contains(progress.String(), "bench join: point 1/1: auto (2/2), warm-up 1/1") {
		t.Errorf("progress:\n%s", progress.String())
	}
}
