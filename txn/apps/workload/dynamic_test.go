package workload_test

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/txn/apps/workload"
)

func TestParsePhases(t *testing.T) {
	base, _ := workload.Defaults(workload.StreamingLedger)
	ps, err := workload.ParsePhases("sl", "events=100; skew=0.9, name=hot ;abort-ratio=20%,events=50", base, 7)
	if err != nil {
		t.Fatal(err)
	}
	if len(ps) != 3 {
		t.Fatalf("%d phases, want 3", len(ps))
	}
	if ps[0].Events != 100 || ps[0].Knobs != base || ps[0].Name != "1 base" {
		t.Errorf("phase 1: %+v", ps[0])
	}
	if ps[1].Events != 100 || ps[1].Knobs.Skew != 0.9 || ps[1].Name != "hot" || ps[1].Knobs.AbortRatio != 0 {
		t.Errorf("phase 2 (inherits the length, changes skew): %+v", ps[1])
	}
	if ps[2].Events != 50 || ps[2].Knobs.Skew != 0.9 || ps[2].Knobs.AbortRatio != 0.2 || ps[2].Name != "3 skew=0.9 abort-ratio=0.2" {
		t.Errorf("phase 3 (inherits the skew): %+v", ps[2])
	}
	for _, bad := range []struct{ spec, want string }{
		{"", "no phases"},
		{"skew", "not a preset"},
		{"skew=x", `phase 1: workload: knob "skew"`},
		{"events=0", "phase 1: events"},
		{"events=10;reads=3", `phase 2: knob "reads"`},
		{"events=10;;skew", `phase 3: "skew" is not name=value`},
	} {
		_, err := workload.ParsePhases("sl", bad.spec, base, 7)
		if !errors.Is(err, workload.ErrBadPhases) || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("ParsePhases(%q): %v, want ErrBadPhases mentioning %q", bad.spec, err, bad.want)
		}
	}
}

func TestPresets(t *testing.T) {
	for _, app := range []string{workload.StreamingLedger, workload.GrepSum} {
		names := workload.Presets(app)
		if len(names) == 0 {
			t.Fatalf("%s: no preset", app)
		}
		base, _ := workload.Defaults(app)
		for _, n := range names {
			ps, err := workload.ParsePhases(app, n, base, 10)
			if err != nil {
				t.Fatalf("%s preset %s: %v", app, n, err)
			}
			if len(ps) < 5 {
				t.Errorf("%s preset %s: %d phases", app, n, len(ps))
			}
			seen := map[workload.Knobs]bool{}
			for _, p := range ps {
				if p.Events != 10 {
					t.Errorf("%s %s phase %s: %d events, want 10", app, n, p.Name, p.Events)
				}
				seen[p.Knobs] = true
			}
			if len(seen) < len(ps)-1 {
				t.Errorf("%s %s: only %d distinct phases of %d", app, n, len(seen), len(ps))
			}
			if _, err := workload.NewDynamic(app, ps); err != nil {
				t.Errorf("%s %s: %v", app, n, err)
			}
		}
	}
	if ps, err := workload.ParsePhases("sl", "morphstream", workload.Knobs{Keys: 1000, DepositRatio: 0.5, TxnLength: 1}, 10); err != nil || ps[0].Knobs.Keys != 1000 {
		t.Errorf("a preset starts from the base knobs: %v, %+v", err, ps)
	}
}

func TestDynamic(t *testing.T) {
	base, _ := workload.Defaults(workload.GrepSum)
	base.Keys = 1000
	ps, err := workload.ParsePhases("gs", "events=30;skew=1.2,reads=3,events=20;abort-ratio=0.5", base, 0)
	if err != nil {
		t.Fatal(err)
	}
	d, err := workload.NewDynamic("gs", ps)
	if err != nil {
		t.Fatal(err)
	}
	if d.Events() != 70 || d.Name() != "gs" || len(d.Phases()) != 3 {
		t.Fatalf("events %d, name %s, %d phases", d.Events(), d.Name(), len(d.Phases()))
	}
	for i, want := range map[uint64]int{0: 0, 29: 0, 30: 1, 49: 1, 50: 2, 69: 2, 1000: 2} {
		if got := d.PhaseOf(i); got != want {
			t.Errorf("PhaseOf(%d) = %d, want %d", i, got, want)
		}
	}
	// Each event is its phase's workload's event.
	for i := uint64(0); i < 80; i++ {
		a, err := workload.New("gs", ps[d.PhaseOf(i)].Knobs)
		if err != nil {
			t.Fatal(err)
		}
		k1, v1 := d.Event(i, nil)
		k2, v2 := a.Event(i, nil)
		if !bytes.Equal(k1, k2) || !bytes.Equal(v1, v2) {
			t.Fatalf("event %d differs from its phase's", i)
		}
	}
	ps[1].Knobs.Keys = 999
	if _, err := workload.NewDynamic("gs", ps); !errors.Is(err, workload.ErrBadPhases) || !strings.Contains(err.Error(), "phase 2") {
		t.Errorf("phases with different key spaces: %v", err)
	}
	if _, err := workload.NewDynamic("gs", nil); !errors.Is(err, workload.ErrBadPhases) {
		t.Errorf("no phases: %v", err)
	}
}
