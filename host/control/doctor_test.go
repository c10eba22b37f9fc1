package control

import (
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/host/api/schema"
)

// sdHealthy returns a healthy job's sample after secs seconds: a keyed
// operator of 4 key groups of 100 records/s on 2 workers that run 1000
// records per busy second (20% busy), a source read at 400 records/s
// with a steady backlog of 50, 10 commits/s of 5ms each, a heap of 100
// MiB of a 1 GiB limit, GC pauses 0.1% of the time, no slow consumer.
func sdHealthy(secs float64) Sample {
	k := sdKeyed{name: "count", rates: []float64{100, 100, 100, 100}, owner: []int{0, 0, 1, 1}, service: []float64{1000, 1000}, movable: true}
	return Sample{
		Operators:      []OperatorSample{k.at(secs)},
		Sources:        []SourceSample{{Name: "in", Read: uint64(400 * secs), Backlog: 50}},
		Commits:        uint64(10 * secs),
		CommitSeconds:  0.05 * secs,
		GCPauseSeconds: 0.001 * secs,
		HeapBytes:      100 << 20,
		HeapLimit:      1 << 30,
	}
}

func newDoctor(t *testing.T, cfg DoctorConfig) *Doctor {
	t.Helper()
	d, err := NewDoctor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// diagnose shows a new doctor 6 samples a second apart made by at and
// returns its findings.
func diagnose(t *testing.T, at func(secs float64) Sample) []schema.Finding {
	t.Helper()
	p, fs := newDoctor(t, DoctorConfig{}).Propose(sdView(0, 6, at))
	if p != nil {
		t.Errorf("the doctor proposed %+v", p)
	}
	for _, f := range fs {
		if f.Subject == "" || f.Summary == "" || f.Recommendation == "" || len(f.Evidence) == 0 || !f.Since.Equal(sdStart.Add(5*time.Second)) {
			t.Errorf("incomplete finding %+v", f)
		}
	}
	return fs
}

// finding returns the finding of cause in fs, failing the test when
// there is not exactly one or there are others.
func finding(t *testing.T, fs []schema.Finding, cause string) schema.Finding {
	t.Helper()
	if len(fs) != 1 || fs[0].Cause != cause {
		t.Fatalf("findings %+v, want one %s", fs, cause)
	}
	return fs[0]
}

func TestDoctorHealthyFindsNothing(t *testing.T) {
	if fs := diagnose(t, sdHealthy); len(fs) != 0 {
		t.Errorf("findings on a healthy trace: %+v", fs)
	}
}

func TestDoctorBacklog(t *testing.T) {
	busy := func(secs float64) Sample {
		s := sdHealthy(secs)
		k := sdKeyed{name: "count", rates: []float64{100, 100, 100, 100}, owner: []int{0, 0, 1, 1}, service: []float64{220, 220}, movable: true}
		s.Operators[0] = k.at(secs) // 91% busy
		s.Sources[0].Backlog = 50 + int64(300*secs)
		return s
	}
	f := finding(t, diagnose(t, busy), "backlog")
	if f.Subject != "in" || !strings.Contains(f.Summary, "300 records/s") || !strings.Contains(f.Summary, "count") || !strings.Contains(f.Recommendation, "sluice workers --operator count") {
		t.Errorf("finding %+v: want source in growing by 300 records/s, operator count named", f)
	}
	if v := evidence(f.Evidence, "backlog growth of source in"); v != 300 {
		t.Errorf("growth %v, want 300", v)
	}
	// Not sustained: the backlog fell at the last step, or stayed level
	// at one of the last three; or too slow: it rose at each step, by
	// 10 records/s at a read rate of 400 (records waiting for the next
	// batch as the rate rises).
	for name, last := range map[string]func(secs float64) int64{
		"slow":  func(secs float64) int64 { return 50 + int64(10*secs) },
		"fell":  func(secs float64) int64 { return 50 + int64(300*min(secs, 4)) - int64(10*max(secs-4, 0)) },
		"level": func(secs float64) int64 { return 50 + int64(300*min(secs, 3)) + int64(300*max(secs-4, 0)) },
	} {
		fs := diagnose(t, func(secs float64) Sample {
			s := busy(secs)
			s.Sources[0].Backlog = last(secs)
			return s
		})
		if len(fs) != 0 {
			t.Errorf("%s: findings %+v, want none", name, fs)
		}
	}
	// A source that cannot tell its backlog.
	if fs := diagnose(t, func(secs float64) Sample {
		s := busy(secs)
		s.Sources[0].Backlog = -1
		return s
	}); len(fs) != 0 {
		t.Errorf("findings %+v on an unknown backlog", fs)
	}
}

func TestDoctorIdleWithLag(t *testing.T) {
	f := finding(t, diagnose(t, func(secs float64) Sample {
		s := sdHealthy(secs) // operators 20% busy
		s.Sources[0].Backlog = 50 + int64(300*secs)
		return s
	}), "idle-with-lag")
	if f.Subject != "in" || !strings.Contains(f.Summary, "20%") || !strings.Contains(f.Recommendation, "not the bottleneck") {
		t.Errorf("finding %+v", f)
	}
	if v := evidence(f.Evidence, "busy fraction of the operators' busiest workers, summed"); math.Abs(v-0.2) > 1e-9 {
		t.Errorf("busy %v, want 0.2", v)
	}
}

func TestDoctorHotKey(t *testing.T) {
	f := finding(t, diagnose(t, func(secs float64) Sample {
		s := sdHealthy(secs)
		k := sdKeyed{name: "count", rates: []float64{950, 100, 100, 100}, owner: []int{0, 0, 1, 1}, service: []float64{1000, 1000}, movable: true}
		s.Operators[0] = k.at(secs)
		s.Operators[0].HotKeys = []KeyCount{{Key: "a", Group: 2, Count: 50}, {Key: "user-42", Group: 0, Count: 900}, {Key: "b", Group: 0, Count: 10}}
		return s
	}), "hot-key")
	if f.Subject != "count key group 0" || !strings.Contains(f.Summary, `"user-42"`) || !strings.Contains(f.Summary, "95%") || !strings.Contains(f.Recommendation, "salt") {
		t.Errorf("finding %+v: want key group 0 at 95%% naming user-42", f)
	}
	if v := evidence(f.Evidence, "arrival rate of count key group 0"); v != 950 {
		t.Errorf("arrival %v, want 950", v)
	}
	// Under 90% of a worker: moving groups serves it.
	if fs := diagnose(t, func(secs float64) Sample {
		s := sdHealthy(secs)
		k := sdKeyed{name: "count", rates: []float64{850, 100, 100, 100}, owner: []int{0, 0, 1, 1}, service: []float64{1000, 1000}, movable: true}
		s.Operators[0] = k.at(secs)
		return s
	}); len(fs) != 0 {
		t.Errorf("findings %+v for a group at 85%% of a worker", fs)
	}
	// Every group at 95% of a worker: the job is overloaded as a whole
	// (a slow plugin, too few workers), and no group stands out from the
	// others, so no key is to blame.
	if fs := diagnose(t, func(secs float64) Sample {
		s := sdHealthy(secs)
		k := sdKeyed{name: "count", rates: []float64{950, 950, 950, 950}, owner: []int{0, 0, 1, 1}, service: []float64{1000, 1000}, movable: true}
		s.Operators[0] = k.at(secs)
		s.Operators[0].HotKeys = []KeyCount{{Key: "user-42", Group: 0, Count: 900}}
		return s
	}); len(fs) != 0 {
		t.Errorf("findings %+v for every group at 95%% of a worker", fs)
	}
	// Two hot groups of eight, the others at 100/s: each stands out.
	fs := diagnose(t, func(secs float64) Sample {
		s := sdHealthy(secs)
		k := sdKeyed{name: "count", rates: []float64{950, 100, 100, 100, 100, 920, 100, 100}, owner: []int{0, 0, 0, 0, 1, 1, 1, 1}, service: []float64{1000, 1000}, movable: true}
		s.Operators[0] = k.at(secs)
		return s
	})
	if len(fs) != 2 || fs[0].Subject != "count key group 0" || fs[1].Subject != "count key group 5" {
		t.Errorf("findings %+v, want hot-key for key groups 0 and 5", fs)
	}
}

// sdVersions returns samples of an operator of one worker that runs
// 1000 records/s: version(t) is its version at second t, swapped in the
// middle of the second before, and cost(v) the busy seconds per record
// of version v.
func sdVersions(version func(t int) string, cost map[string]float64) func(secs float64) Sample {
	return func(secs float64) Sample {
		var busy float64
		for t := 1; t <= int(secs); t++ {
			// The first half of second t ran the version of t-1.
			busy += 500*cost[version(t-1)] + 500*cost[version(t)]
		}
		n := uint64(1000 * secs)
		return Sample{Operators: []OperatorSample{{
			Name: "enrich", Kind: "map", Version: version(int(secs)), Resizable: true, In: n, Out: n,
			Workers: []WorkerSample{{ID: 0, Records: n, Out: n, BusySeconds: busy}},
		}}}
	}
}

// rounds shows d the samples of at for seconds 0..n-1 as a controller
// would, each round the last 5 samples, and returns the last round's
// findings.
func rounds(t *testing.T, d *Doctor, n int, at func(secs float64) Sample) []schema.Finding {
	t.Helper()
	var fs []schema.Finding
	for i := range n {
		from := max(0, i-4)
		_, fs = d.Propose(sdView(from, i-from+1, at))
	}
	return fs
}

func TestDoctorSlowVersion(t *testing.T) {
	cost := map[string]float64{"v1": 0.25e-3, "v2": 0.5e-3, "v3": 0.3e-3}
	swapAt6 := func(next string) func(t int) string {
		return func(t int) string {
			if t < 6 {
				return "v1"
			}
			return next
		}
	}
	d := newDoctor(t, DoctorConfig{})
	if fs := rounds(t, d, 6, sdVersions(swapAt6("v2"), cost)); len(fs) != 0 {
		t.Errorf("findings %+v before the swap", fs)
	}
	fs := rounds(t, d, 12, sdVersions(swapAt6("v2"), cost))
	f := finding(t, fs, "slow-version")
	if f.Subject != "enrich" || !strings.Contains(f.Summary, "version v2") || !strings.Contains(f.Summary, "2.0x") || !strings.Contains(f.Summary, "500µs") ||
		!strings.Contains(f.Recommendation, "sluice plugin rollback --operator enrich") || !strings.Contains(f.Recommendation, "v1") {
		t.Errorf("finding %+v: want enrich's v2 2.0x v1's cost, rollback recommended", f)
	}
	if v := evidence(f.Evidence, "cost ratio of enrich version v2"); math.Abs(v-2) > 1e-9 {
		t.Errorf("ratio %v, want 2", v)
	}
	// Every step was counted once, the one across the swap not at all.
	o := d.versions["enrich"]
	if c := o.find("v1"); c == nil || c.records != 5000 {
		t.Errorf("v1's cost %+v, want 5000 records (5 steps)", c)
	}
	if c := o.find("v2"); c == nil || c.records != 5000 {
		t.Errorf("v2's cost %+v, want 5000 records (seconds 6-7 to 10-11)", c)
	}

	// A version 1.2x as costly is not slow, nor one as fast.
	for _, next := range []string{"v3", "v1"} {
		if fs := rounds(t, newDoctor(t, DoctorConfig{}), 12, sdVersions(swapAt6(next), cost)); len(fs) != 0 {
			t.Errorf("v1 then %s: findings %+v, want none", next, fs)
		}
	}
	// Rolled back: v1 is current again, and cheaper than v2.
	back := func(t int) string {
		switch {
		case t < 6:
			return "v1"
		case t < 12:
			return "v2"
		}
		return "v1"
	}
	d = newDoctor(t, DoctorConfig{})
	if fs := rounds(t, d, 12, sdVersions(back, cost)); len(fs) != 1 {
		t.Errorf("findings %+v before the rollback, want slow-version", fs)
	}
	if fs := rounds(t, d, 16, sdVersions(back, cost)); len(fs) != 0 {
		t.Errorf("findings %+v after the rollback, want none", fs)
	}
}

func TestDoctorSlowCommits(t *testing.T) {
	slow := func(secs float64) Sample {
		s := sdHealthy(secs)
		s.CommitSeconds = 0.2 * 10 * secs
		return s
	}
	f := finding(t, diagnose(t, slow), "slow-commits")
	if f.Subject != "store" || !strings.Contains(f.Summary, "200ms") || !strings.Contains(f.Summary, "100ms") || !strings.Contains(f.Recommendation, "batch.size") {
		t.Errorf("finding %+v", f)
	}
	if v := evidence(f.Evidence, "mean commit time"); math.Abs(v-0.2) > 1e-9 {
		t.Errorf("mean %v, want 0.2", v)
	}
	if _, fs := newDoctor(t, DoctorConfig{SlowCommit: 300 * time.Millisecond}).Propose(sdView(0, 6, slow)); len(fs) != 0 {
		t.Errorf("findings %+v under a 300ms bound", fs)
	}
}

func TestDoctorMemoryPressure(t *testing.T) {
	f := finding(t, diagnose(t, func(secs float64) Sample {
		s := sdHealthy(secs)
		s.HeapBytes = 950 << 20
		return s
	}), "memory-pressure")
	if f.Subject != "heap" || !strings.Contains(f.Summary, "950 MiB") || !strings.Contains(f.Summary, "93%") || !strings.Contains(f.Recommendation, "GOMEMLIMIT") {
		t.Errorf("finding %+v", f)
	}
	f = finding(t, diagnose(t, func(secs float64) Sample {
		s := sdHealthy(secs)
		s.GCPauseSeconds = 0.2 * secs
		return s
	}), "memory-pressure")
	if !strings.Contains(f.Summary, "20%") {
		t.Errorf("finding %+v: want GC pauses at 20%%", f)
	}
	if fs := diagnose(t, func(secs float64) Sample {
		s := sdHealthy(secs)
		s.HeapBytes, s.HeapLimit = 8<<30, 0 // no limit
		return s
	}); len(fs) != 0 {
		t.Errorf("findings %+v without a memory limit", fs)
	}
}

func TestDoctorSlowConsumer(t *testing.T) {
	f := finding(t, diagnose(t, func(secs float64) Sample {
		s := sdHealthy(secs)
		if secs >= 4 {
			s.SlowConsumers = 3
		}
		return s
	}), "slow-consumer")
	if f.Subject != "nats" || !strings.Contains(f.Summary, "3 slow consumer") || !strings.Contains(f.Recommendation, "jetstream") {
		t.Errorf("finding %+v", f)
	}
	// Slow consumers before the window: the client is well now.
	if fs := diagnose(t, func(secs float64) Sample {
		s := sdHealthy(secs)
		if secs >= 1 {
			s.SlowConsumers = 3
		}
		return s
	}); len(fs) != 0 {
		t.Errorf("findings %+v for slow consumers before the window", fs)
	}
}

func TestDoctorFewSamples(t *testing.T) {
	d := newDoctor(t, DoctorConfig{})
	if p, fs := d.Propose(&View{}); p != nil || fs != nil {
		t.Errorf("proposal %+v, findings %+v on an empty view", p, fs)
	}
	if p, fs := d.Propose(sdView(0, 1, sdHealthy)); p != nil || fs != nil {
		t.Errorf("proposal %+v, findings %+v on one sample", p, fs)
	}
}

func TestNewDoctorRefusesBadSettings(t *testing.T) {
	for _, cfg := range []DoctorConfig{
		{SlowCommit: -time.Millisecond},
		{SlowVersionRatio: 1},
		{SlowVersionRatio: 0.9},
		{SlowVersionRatio: math.NaN()},
		{HeapRatio: 1.1},
		{HeapRatio: -0.5},
		{HeapRatio: math.NaN()},
		{Window: -time.Second},
	} {
		if _, err := NewDoctor(cfg); !errors.Is(err, ErrDoctorConfig) {
			t.Errorf("NewDoctor(%+v): %v, want ErrDoctorConfig", cfg, err)
		}
	}
	d := newDoctor(t, DoctorConfig{})
	if got, want := d.Config(), (DoctorConfig{SlowCommit: 100 * time.Millisecond, SlowVersionRatio: 1.3, HeapRatio: 0.9, Window: 2 * time.Second}); got != want {
		t.Errorf("defaults %+v, want %+v", got, want)
	}
	if d.Name() != "doctor" {
		t.Errorf("name %q", d.Name())
	}
}
