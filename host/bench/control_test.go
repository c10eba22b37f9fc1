package bench

import (
	"context"
	"io"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/abi"
	"github.com/sluicehq/sluice/connectors"
	"github.com/sluicehq/sluice/host/api/schema"
)

// TestControlEveryPhase runs every policy through the bench's phases,
// short: RunControl fails unless every record was counted once; the
// report has each phase, the decisions in order, and the targets.
func TestControlEveryPhase(t *testing.T) {
	plugins := examplePlugins(t) // skips in -short mode
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	opts := QuickControlOptions()
	opts.Modes, opts.Phase, opts.Rate, opts.Cap = []string{ControlAll}, time.Second, 2000, 1500
	opts.WordCount, opts.SlowCount = plugins.WordCount, built.slowCount
	opts.Dir = t.TempDir()
	rep, err := RunControl(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Runs) != 1 || len(rep.Runs[0].Phases) != len(controlPhases(ControlAll, opts)) {
		t.Fatalf("report %+v, want one run with every phase", rep.Runs)
	}
	run := rep.Runs[0]
	// Every fault of the doctor's is injected (found or not in phases this
	// short); the slow version was swapped in and back out, and every
	// record was counted once across the swaps (RunControl checks).
	var faults []string
	for _, ph := range run.Phases {
		if ph.Expect != "" {
			faults = append(faults, ph.Expect)
		}
	}
	if want := "straggler hot-key slow-commits slow-version backlog"; strings.Join(faults, " ") != want {
		t.Errorf("the phases inject %v, want %s", faults, want)
	}
	if run.Records == 0 {
		t.Error("no records made")
	}
	for i := 1; i < len(run.Decisions); i++ {
		if run.Decisions[i].Time.Before(run.Decisions[i-1].Time) {
			t.Errorf("decision %d before the one before it", i)
		}
	}
	if len(rep.Targets) == 0 {
		t.Error("no targets checked")
	}
	var b strings.Builder
	if err := rep.WriteTable(&b); err != nil || !strings.Contains(b.String(), "straggler") {
		t.Errorf("table: %v\n%s", err, b.String())
	}
}

// TestCheckedCountsFindsLostAndDuplicated feeds the sink's check the word
// counts a broken run would leave: a count skipped, one repeated, a key
// counted less than it was made.
func TestCheckedCountsFindsLostAndDuplicated(t *testing.T) {
	src := newStepSource(10)
	src.perKey = map[string]uint64{"a": 2, "b": 1}
	src.made = 3
	write := func(s *checkedCounts, kvs ...string) {
		var out []connectors.Out
		for _, kv := range kvs {
			k, v, _ := strings.Cut(kv, "=")
			out = append(out, connectors.Out{Record: abi.Record{Key: []byte(k), Value: []byte(v), Time: time.Now().UnixNano()}})
		}
		if err := s.Write(context.Background(), out); err != nil {
			t.Fatal(err)
		}
	}
	ok := newCheckedCounts()
	write(ok, "a=1", "b=1", "a=2")
	if err := ok.check(src); err != nil {
		t.Errorf("every record counted once: %v", err)
	}
	for _, c := range []struct {
		name string
		kvs  []string
		want string
	}{
		{"lost", []string{"a=1", "b=1"}, `key "a": 2 records made, counted 1`},
		{"skipped", []string{"a=2", "b=1"}, `key "a": count 2 after 0`},
		{"repeated", []string{"a=1", "a=1", "b=1", "a=2"}, `key "a": count 1 after 1`},
		{"not a count", []string{"a=x"}, `"a"="x" is not a count`},
	} {
		s := newCheckedCounts()
		write(s, c.kvs...)
		if err := s.check(src); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want an error saying %q", c.name, err, c.want)
		}
	}
}

// TestStepSourceFollowsItsRate: records come out at the rate set, each
// due at its time, the backlog counts what is due and unread, and the
// source ends after end.
func TestStepSourceFollowsItsRate(t *testing.T) {
	ctx := context.Background()
	s := newStepSource(5)
	if err := s.Open(ctx, 100); err != nil {
		t.Fatal(err)
	}
	s.set(1000, nil)
	time.Sleep(50 * time.Millisecond)
	if b := s.Backlog(); b < 40 {
		t.Errorf("backlog %d after 50 ms at 1,000/s unread, want at least 40", b)
	}
	buf := make([]connectors.Message, 1000)
	n, err := s.Read(ctx, buf)
	if err != nil || n < 40 {
		t.Fatalf("Read = %d, %v; want the 40 or more records due", n, err)
	}
	for i, m := range buf[:n] {
		if m.Position != 101+uint64(i) {
			t.Fatalf("record %d at position %d, want %d", i, m.Position, 101+i)
		}
		if i > 0 && m.Record.Time < buf[i-1].Record.Time {
			t.Fatalf("record %d due before the one before it", i)
		}
		if m.Record.Time > time.Now().UnixNano() {
			t.Fatalf("record %d given out before it was due", i)
		}
	}
	if b := s.Backlog(); b > 5 {
		t.Errorf("backlog %d right after reading what was due", b)
	}
	s.set(1, func(*rand.Rand) int { return 3 }) // one record a second, all key 3
	time.Sleep(time.Second)
	n, err = s.Read(ctx, buf)
	if err != nil || n < 1 || string(buf[0].Record.Key) != "3" {
		t.Fatalf("Read = %d, %v (key %q); want key 3 from the phase's picker", n, err, buf[0].Record.Key)
	}
	made := s.end()
	if _, err := s.Read(ctx, buf); err != io.EOF {
		t.Errorf("Read after end: %v, want io.EOF", err)
	}
	var sum uint64
	for _, c := range s.perKey {
		sum += c
	}
	if sum != made {
		t.Errorf("per-key counts sum to %d, %d made", sum, made)
	}
}

// TestUndoneCounts: a rollback, and a worker count reversed within a
// minute under the same rate, are undone decisions; a reversal after a
// minute is not, and one that follows the rate measured at the decisions
// (or a phase change) is counted only among all reversals.
func TestUndoneCounts(t *testing.T) {
	t0 := time.Now()
	one := []phaseSpan{{t0, t0.Add(time.Hour)}}
	two := []phaseSpan{{t0, t0.Add(10 * time.Second)}, {t0.Add(10 * time.Second), t0.Add(time.Hour)}}
	d := func(at time.Duration, from, to int, outcome string, rate float64) schema.Decision {
		dec := schema.Decision{Time: t0.Add(at), Outcome: outcome, Action: schema.Action{Kind: "set-workers", From: from, To: to}}
		if rate > 0 {
			dec.Observed = []schema.Evidence{{Name: sourcesRateEvidence, Value: rate, Unit: "records/s"}}
		}
		return dec
	}
	for _, c := range []struct {
		name      string
		ds        []schema.Decision
		phases    []phaseSpan
		same, all int
	}{
		{"steady growth", []schema.Decision{d(0, 1, 2, "kept", 8000), d(20*time.Second, 2, 4, "kept", 8000)}, one, 0, 0},
		{"reversed soon", []schema.Decision{d(0, 1, 2, "kept", 8000), d(30*time.Second, 2, 1, "kept", 8000)}, one, 1, 1},
		{"reversed within a tenth", []schema.Decision{d(0, 1, 2, "kept", 8000), d(30*time.Second, 2, 1, "kept", 7300)}, one, 1, 1},
		{"scaled in at a higher rate", []schema.Decision{d(0, 1, 2, "kept", 8000), d(30*time.Second, 2, 1, "kept", 9600)}, one, 1, 1},
		{"followed the rate down", []schema.Decision{d(0, 1, 2, "kept", 8000), d(30*time.Second, 2, 1, "kept", 7100)}, one, 0, 1},
		{"followed the rate up", []schema.Decision{d(0, 2, 1, "kept", 8000), d(30*time.Second, 1, 2, "kept", 8900)}, one, 0, 1},
		{"scaled out at a lower rate", []schema.Decision{d(0, 2, 1, "kept", 8000), d(30*time.Second, 1, 2, "kept", 6000)}, one, 1, 1},
		{"rate not known", []schema.Decision{d(0, 1, 2, "kept", 8000), d(30*time.Second, 2, 1, "applied", 0)}, one, 1, 1},
		{"reversed in the next phase", []schema.Decision{d(0, 1, 2, "kept", 8000), d(30*time.Second, 2, 1, "kept", 8000)}, two, 0, 1},
		{"reversed late", []schema.Decision{d(0, 1, 2, "kept", 8000), d(2*time.Minute, 2, 1, "kept", 8000)}, one, 0, 0},
		{"rolled back", []schema.Decision{d(0, 1, 2, "rolled back", 8000)}, one, 1, 1},
		{"failed reversal", []schema.Decision{d(0, 1, 2, "kept", 8000), d(time.Second, 2, 1, "failed", 8000)}, one, 0, 0},
	} {
		if same, all := undone(c.ds, c.phases); same != c.same || all != c.all {
			t.Errorf("%s: %d undone under the same rate, %d in all; want %d, %d", c.name, same, all, c.same, c.all)
		}
	}
}

// TestControlTargetsUncapped: without a cap, the phases whose fault the
// cap makes (hot-shift, straggler, hot-key) cannot check their targets:
// the report says so rather than NOT MET; capped, they are checked.
func TestControlTargetsUncapped(t *testing.T) {
	run := ControlRun{Mode: ControlAll, Phases: []ControlPhase{
		{Name: "hot-shift"},
		{Name: "straggler", Expect: "straggler", DetectedSeconds: -1},
		{Name: "hot-key", Expect: "hot-key", DetectedSeconds: -1},
		{Name: "backlog", Expect: "backlog", DetectedSeconds: -1},
	}}
	for _, c := range []struct {
		cap  float64
		void int
	}{{0, 3}, {5000, 0}} {
		rep := &ControlReport{Runs: []ControlRun{run}, Cap: c.cap}
		rep.Targets = controlTargets(rep, ControlOptions{Cap: c.cap, MaxWorkers: 4})
		void := 0
		for _, tg := range rep.Targets {
			if tg.Void != "" {
				void++
				if strings.Contains(tg.Name, "backlog") {
					t.Errorf("cap %v: the backlog's target is void: %+v", c.cap, tg)
				}
			}
		}
		if void != c.void {
			t.Errorf("cap %v: %d void targets, want %d: %+v", c.cap, void, c.void, rep.Targets)
		}
		var b strings.Builder
		if err := rep.WriteTable(&b); err != nil {
			t.Fatal(err)
		}
		if got := strings.Count(b.String(), "not checked: uncapped"); got != c.void {
			t.Errorf("cap %v: the table says \"not checked\" %d times, want %d:\n%s", c.cap, got, c.void, b.String())
		}
		if got := strings.Count(b.String(), "NOT MET"); got != 4-c.void {
			t.Errorf("cap %v: the table says NOT MET %d times, want %d:\n%s", c.cap, got, 4-c.void, b.String())
		}
	}
}
