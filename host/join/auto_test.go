package join

import (
	"context"
	"encoding/json"
	"math"
	"testing"
	"time"
)

func TestMeasure(t *testing.T) {
	for _, c := range []struct {
		m              Micro
		dupeLo, dupeHi float64
		skewed         bool
	}{
		{Micro{RateR: 200, RateS: 100, Window: 200, Dupe: 1, Seed: 1}, 1, 1.2, false},
		{Micro{RateR: 200, RateS: 200, Window: 200, Dupe: 20, Seed: 2}, 14, 28, false},
		{Micro{RateR: 200, RateS: 200, Window: 200, KeySkew: 1.6, Seed: 3}, 10, math.Inf(1), true},
	} {
		r, s, err := c.m.Generate()
		if err != nil {
			t.Fatal(err)
		}
		f := Measure(r, s, time.Nanosecond, 2)
		if f.R != len(r) || f.S != len(s) || f.Workers != 2 {
			t.Errorf("%v: sizes %+v", c.m, f)
		}
		if math.Abs(f.RateR/float64(c.m.RateR)-1) > 1e-6 || math.Abs(f.RateS/float64(c.m.RateS)-1) > 1e-6 {
			t.Errorf("%v: rates %.1f, %.1f", c.m, f.RateR, f.RateS)
		}
		if f.Dupe < c.dupeLo || f.Dupe > c.dupeHi {
			t.Errorf("%v: dupe %.2f, want %g to %g", c.m, f.Dupe, c.dupeLo, c.dupeHi)
		}
		if (f.Skew > DefaultConfig().SkewHigh) != c.skewed {
			t.Errorf("%v: top key share %.3f", c.m, f.Skew)
		}
	}
	f := Measure([]Tuple{{Key: 1}}, []Tuple{{Key: 1}, {Key: 2}}, time.Nanosecond, 1)
	if !math.IsInf(f.RateR, 1) || !math.IsInf(f.RateS, 1) {
		t.Errorf("data at rest: rates %v, %v, want +Inf", f.RateR, f.RateS)
	}
}

func TestFeaturesJSON(t *testing.T) {
	f := Features{R: 3, S: 4, RateR: math.Inf(1), RateS: 2.5, Dupe: 1.5, Skew: 0.1, Workers: 2}
	b, err := json.Marshal(f)
	if err != nil {
		t.Fatal(err)
	}
	var g Features
	if err := json.Unmarshal(b, &g); err != nil {
		t.Fatal(err)
	}
	if g != f {
		t.Errorf("%s reads back as %+v, want %+v", b, g, f)
	}
}

func TestRule(t *testing.T) {
	c := DefaultConfig()
	for _, tc := range []struct {
		f    Features
		obj  Objective
		want string
	}{
		{Features{R: 10, S: 10, RateR: 100, RateS: 6000, Dupe: 1}, Throughput, "shj-jm"},
		{Features{R: 10, S: 10, RateR: 100, RateS: 20000, Dupe: 1}, Throughput, "npj"},
		{Features{R: 10, S: 10, RateR: 20000, RateS: 20000, Dupe: 50, Workers: 2}, Throughput, "mway"},
		{Features{R: 10, S: 10, RateR: 20000, RateS: 20000, Dupe: 50, Workers: 8}, Throughput, "mpass"},
		{Features{R: 2e6, S: 2e6, RateR: 20000, RateS: 20000, Dupe: 1}, Throughput, "prj"},
		{Features{R: 2e6, S: 2e6, RateR: 20000, RateS: 20000, Dupe: 1, Skew: 0.2}, Throughput, "npj"},
		{Features{R: 5e4, S: 5e4, RateR: 20000, RateS: 20000, Dupe: 1}, Throughput, "npj"},
		{Features{R: 10, S: 10, RateR: 3000, RateS: 3000, Dupe: 50}, Throughput, "mway"},
		{Features{R: 10, S: 10, RateR: 3000, RateS: 3000, Dupe: 50, Workers: 16}, Throughput, "mpass"},
		{Features{R: 10, S: 10, RateR: 1600, RateS: 6400, Dupe: 1}, Throughput, "shj-jm"},
		{Features{R: 10, S: 10, RateR: 1601, RateS: 6401, Dupe: 1}, Throughput, "shj-jm"},
		{Features{R: 10, S: 10, RateR: 1600, RateS: 12800, Dupe: 1}, Throughput, "shj-jm"},
		{Features{R: 10, S: 10, RateR: 1600, RateS: 14401, Dupe: 1}, Throughput, "npj"},
		{Features{R: 10, S: 10, RateR: 1600, RateS: 1600, Dupe: 100}, Throughput, "mway"},
		{Features{R: 10, S: 10, RateR: 3000, RateS: 3000, Dupe: 1}, Latency, "shj-jm"},
		{Features{R: 10, S: 10, RateR: 3000, RateS: 3000, Dupe: 1}, Throughput, "npj"},
		{Features{R: 1e6, S: 1e6, RateR: 6400, RateS: 6400, Dupe: 1}, Throughput, "prj"},
		{Features{R: 10, S: 10, RateR: math.Inf(1), RateS: 3, Dupe: 1}, Throughput, "shj-jm"},
		{Features{R: 10, S: 10, RateR: math.Inf(1), RateS: math.Inf(1), Dupe: 100}, Throughput, "mway"},
		{Features{R: 1e6, S: 1e6, RateR: math.Inf(1), RateS: math.Inf(1), Dupe: 1}, Throughput, "prj"},
		{Features{R: 0, S: 10}, Throughput, "npj"},
		{Features{R: 1000, S: 2e6, RateR: math.Inf(1), RateS: 10000, Dupe: 1}, Throughput, "shj-jm"},
		{Features{R: 1e6, S: 2e6, RateR: math.Inf(1), RateS: 10000, Dupe: 1}, Throughput, "prj"},
	} {
		c.Objective = tc.obj
		if got, why := c.Rule(tc.f); got != tc.want {
			t.Errorf("Rule(%+v, %v) = %s (%s), want %s", tc.f, tc.obj, got, why, tc.want)
		}
	}
}

// TestAutoLearns feeds the model costs by hand (no clock): an algorithm
// measured cheaper than the rule's choice by more than the margin takes
// over, one within the margin does not, and every ExploreEvery-th window
// of a class runs the candidate measured least.
func TestAutoLearns(t *testing.T) {
	a := newAuto(Options{Workers: 2}, Config{ExploreEvery: 4, History: 8})
	f := Features{R: 2e6, S: 2e6, RateR: 20000, RateS: 20000, Dupe: 1, Workers: 2}
	next := func() Decision { a.hint = &f; a.start(); a.started = false; return a.decision }
	record := func(d Decision, cost time.Duration) { a.learn(d, f, cost) }

	d := next()
	if d.Algorithm != "prj" || d.Reason[:4] != "rule" {
		t.Fatalf("first window: %+v, want the rule's prj", d)
	}
	record(d, 100*time.Millisecond)
	d = next()
	record(Decision{Rule: "prj", Algorithm: "npj", Features: f}, 95*time.Millisecond) // within the margin
	if d = next(); d.Algorithm != "prj" {
		t.Fatalf("npj 5%% cheaper: chose %s (%s), want prj", d.Algorithm, d.Reason)
	}
	// The fourth window of the class explores: mway and mpass are unmeasured.
	if d = next(); d.Reason != "explore" || (d.Algorithm != "mway" && d.Algorithm != "mpass") {
		t.Fatalf("fourth window: %+v, want an exploration of an unmeasured candidate", d)
	}
	record(d, 50*time.Millisecond)
	if d2 := next(); d2.Algorithm != d.Algorithm || d2.Reason[:8] != "measured" {
		t.Fatalf("after %s measured at half the cost: %+v", d.Algorithm, d2)
	}
	if got := a.Decisions(0); len(got) != 3 || got[2].Cost != 50*time.Millisecond {
		t.Errorf("decisions %+v", got)
	}
	if got := a.Decisions(2); len(got) != 2 || got[1].Algorithm != d.Algorithm {
		t.Errorf("last 2 decisions %+v", got)
	}
}

// TestAutoRunsWindows drives auto through windows of a slow and of a fast
// workload and checks its results and that it records a decision per
// window with the measured features.
func TestAutoRunsWindows(t *testing.T) {
	k, err := NewAuto(Options{Workers: 2}, Config{})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for i, m := range []Micro{
		{RateR: 10, RateS: 10, Window: 100, Dupe: 1, Seed: 1},
		{RateR: 10, RateS: 10, Window: 100, Dupe: 1, Seed: 2},
		{RateR: 8000, RateS: 8000, Window: 1, Dupe: 40, Seed: 3},
		{RateR: 8000, RateS: 8000, Window: 1, Dupe: 40, Seed: 4},
	} {
		r, s, _ := m.Generate()
		var c counter
		feed(t, ctx, k, r, s, 100, c.emit)
		if got, want := c.n.Load(), CountMatches(r, s); got != want {
			t.Fatalf("window %d: %d matches, want %d", i, got, want)
		}
	}
	// A whole window through Join, as a lazy kernel takes it.
	r, s, _ := Micro{RateR: 8000, RateS: 8000, Window: 1, Dupe: 40, Seed: 5}.Generate()
	var c counter
	if err := k.Join(ctx, r, s, c.emit); err != nil {
		t.Fatal(err)
	}
	if got, want := c.n.Load(), CountMatches(r, s); got != want {
		t.Fatalf("Join: %d matches, want %d", got, want)
	}
	ds := k.Decisions(0)
	if len(ds) != 5 {
		t.Fatalf("%d decisions, want 5", len(ds))
	}
	if m := ds[4].Measured; ds[4].Algorithm != "mway" || m.R != len(r) || m.Dupe < 20 || ds[4].Busy <= 0 {
		t.Errorf("the Join's decision %+v", ds[4])
	}
	if ds[1].Algorithm != "shj-jm" || ds[3].Algorithm != "mway" {
		t.Errorf("choices %s, %s after a slow and a duplicated fast window, want shj-jm, mway", ds[1].Algorithm, ds[3].Algorithm)
	}
	if ds[0].Measured.R != 1000 || ds[0].Busy <= 0 {
		t.Errorf("first decision %+v", ds[0])
	}
}
