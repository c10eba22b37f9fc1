package exec

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluicehq/sluice/abi"
	"github.com/sluicehq/sluice/connectors"
	"github.com/sluicehq/sluice/host/control"
	"github.com/sluicehq/sluice/host/plugin"
	"github.com/sluicehq/sluice/state"
)

// countOp is a keyed word count over 16 key groups (openStore's).
func countOp(t *testing.T, workers int) Operator {
	return Operator{Name: "count", Kind: plugin.KindKeyed, Plugin: load(t, "wordcount", plugin.KindKeyed, 0),
		Parallelism: workers, Tables: []string{"counts"}, Version: "v1"}
}

// keyedInput is n records over keys k0..k(keys-1), except every odd one,
// which is "hot": the records a keyed operator samples (every 64th, the
// 64th first) are all "hot".
func keyedInput(n, keys int) []abi.Record {
	recs := make([]abi.Record, n)
	for i := range recs {
		k := []byte("k" + strconv.Itoa(i%keys))
		if i%2 == 1 {
			k = []byte("hot")
		}
		recs[i] = abi.Record{Key: k, Value: k}
	}
	return recs
}

// feedAll sends recs in chunks of per and waits until the job committed
// them all.
func (r *liveRun) feedAll(t *testing.T, recs []abi.Record, per int) {
	t.Helper()
	before := r.job.Status().RecordsIn
	for c := 0; c < len(recs); c += per {
		r.src.ch <- recs[c:min(c+per, len(recs))]
	}
	waitFor(t, func() bool { return r.job.Status().RecordsIn >= before+uint64(len(recs)) })
}

// findOp returns s's operator named name.
func findOp(t *testing.T, s control.Sample, name string) control.OperatorSample {
	t.Helper()
	for _, o := range s.Operators {
		if o.Name == name {
			return o
		}
	}
	t.Fatalf("no operator %q in the sample", name)
	return control.OperatorSample{}
}

// TestMeasureCounts runs N records over known keys through a map and a
// keyed operator and checks Measure's counters against what a serial run
// makes of them.
func TestMeasureCounts(t *testing.T) {
	const n, keys, groups = 1000, 23, 16
	r := startLive(t, 128,
		Operator{Name: "up", Kind: plugin.KindMap, Plugin: load(t, "upper", plugin.KindMap, 0), Parallelism: 2, Version: "u1"},
		countOp(t, 3))
	before := r.job.Measure()
	if c := findOp(t, before, "count"); len(c.Workers) != 3 || len(c.Groups) != groups || c.In != 0 {
		t.Fatalf("before any record: %+v, want 3 workers, %d groups, nothing in", c, groups)
	}
	recs := keyedInput(n, keys)
	r.feedAll(t, recs, 100)
	s := r.job.Measure()

	if len(s.Sources) != 1 || s.Sources[0] != (control.SourceSample{Name: "in", Read: n, Backlog: -1}) {
		t.Errorf("sources %+v, want in: %d read, backlog -1 (the source cannot tell)", s.Sources, n)
	}
	if s.Commits == 0 || s.CommitSeconds <= 0 {
		t.Errorf("%d commits taking %vs, want some, taking time", s.Commits, s.CommitSeconds)
	}
	if !s.At.After(before.At) {
		t.Errorf("sample at %v, not after the first one's %v", s.At, before.At)
	}

	up := findOp(t, s, "up")
	if up.Kind != "map" || up.Version != "u1" || !slices.Equal(up.Inputs, []string{"in"}) || !up.Resizable || up.Movable ||
		up.In != n || up.Out != n || up.Groups != nil || up.HotKeys != nil || len(up.Workers) != 2 {
		t.Errorf("map operator %+v", up)
	}
	var upRecs uint64
	for _, w := range up.Workers {
		upRecs += w.Records
		if w.Records > 0 && (w.BusySeconds <= 0 || w.Delayed != w.Records || w.DelaySeconds <= 0) {
			t.Errorf("map worker %+v: want busy time and a delay for each record", w)
		}
	}
	if upRecs != n {
		t.Errorf("map workers ran %d records, want %d", upRecs, n)
	}

	c := findOp(t, s, "count")
	if c.Kind != "keyed" || c.Version != "v1" || !slices.Equal(c.Inputs, []string{"up"}) || !c.Resizable || !c.Movable ||
		c.In != n || c.Out != n {
		t.Errorf("keyed operator %+v", c)
	}
	// The serial expectation: each record's group, by its key.
	want := make([]uint64, groups)
	hot := state.KeyGroup([]byte("hot"), groups)
	for _, rec := range recs {
		want[state.KeyGroup(rec.Key, groups)]++
	}
	for kg, g := range c.Groups {
		if g.Arrived != want[kg] || g.Processed != want[kg] {
			t.Errorf("group %d: %+v, want %d arrived and processed", kg, g, want[kg])
		}
	}
	a := newAssignment(groups, 3)
	var out uint64
	seen := map[int]bool{}
	for _, w := range c.Workers {
		if !slices.Equal(w.Groups, a.groupsOf(w.ID)) {
			t.Errorf("worker %d owns groups %v, want %v", w.ID, w.Groups, a.groupsOf(w.ID))
		}
		var recs uint64
		for _, kg := range w.Groups {
			recs += want[kg]
			if seen[kg] {
				t.Errorf("group %d listed twice", kg)
			}
			seen[kg] = true
		}
		if w.Records != recs {
			t.Errorf("worker %d ran %d records, want %d (its groups')", w.ID, w.Records, recs)
		}
		if w.Records > 0 && (w.BusySeconds <= 0 || w.Delayed != w.Records || w.DelaySeconds <= 0) {
			t.Errorf("keyed worker %+v: want busy time and a delay for each record", w)
		}
		out += w.Out
	}
	if out != n || len(seen) != groups {
		t.Errorf("workers wrote %d records and own %d groups, want %d and %d", out, len(seen), n, groups)
	}
	if len(c.HotKeys) == 0 || len(c.HotKeys) > 8 || c.HotKeys[0] != (control.KeyCount{Key: "hot", Group: hot, Count: n / 64}) {
		t.Errorf("hot keys %+v, want at most 8, first hot (group %d) sampled %d times", c.HotKeys, hot, n/64)
	}
	if err := r.stop(t); err != nil {
		t.Fatal(err)
	}
	// After the job ended, the last measurements remain.
	if after := findOp(t, r.job.Measure(), "count"); after.In != n || len(after.Workers) != 3 {
		t.Errorf("after the end: %+v", after)
	}
}

// TestMeasureTransactional: an operator that runs no pool of workers is
// one worker with busy time, no groups, and can be neither resized nor
// moved.
// TestCommitDelay: with SetCommitDelay every commit's measured time
// includes the delay; a negative delay is refused.
func TestCommitDelay(t *testing.T) {
	const delay = 20 * time.Millisecond
	r := startLive(t, 128, countOp(t, 2))
	if err := r.job.SetCommitDelay(-time.Second); !errors.Is(err, ErrChangeRefused) {
		t.Errorf("a negative delay: %v, want ErrChangeRefused", err)
	}
	if err := r.job.SetCommitDelay(delay); err != nil {
		t.Fatal(err)
	}
	before := r.job.Measure()
	r.feedAll(t, keyedInput(300, 7), 100)
	s := r.job.Measure()
	n := s.Commits - before.Commits
	if took := s.CommitSeconds - before.CommitSeconds; n == 0 || took < float64(n)*delay.Seconds() {
		t.Errorf("%d commits took %.3fs, want at least %v each", n, took, delay)
	}
}

func TestMeasureTransactional(t *testing.T) {
	r := startLive(t, 8, bankOperator(t, "bank", "serial", 2, 8, false))
	m := findOp(t, r.job.Measure(), "bank")
	if m.Kind != "transactional" || m.Resizable || m.Movable || m.Groups != nil || len(m.Workers) != 1 || m.Workers[0].ID != 0 {
		t.Errorf("transactional operator %+v, want one worker, not resizable or movable, no groups", m)
	}
	if err := r.stop(t); err != nil {
		t.Fatal(err)
	}
}

// TestMoveGroupsUnderLoad moves key groups between a keyed operator's
// workers while records keep arriving: nothing is lost or repeated, each
// key's counts run 1, 2, 3... as in a serial run, the groups are where
// they were moved, and a restart finds them there.
func TestMoveGroupsUnderLoad(t *testing.T) {
	dir := t.TempDir()
	store := openStore(t, dir)
	r := &liveRun{src: newChanSource(), sink: &memSink{}, dead: &memSink{}, done: make(chan error, 1)}
	start := func(store *state.Store) {
		job, err := New(context.Background(), Config{Name: "p", Sources: []Input{{Name: "in", Source: r.src}},
			Operators: []Operator{countOp(t, 2)}, Sinks: []Output{{Name: "out", Sink: r.sink}}, DeadLetter: r.dead,
			Store: store, BatchSize: 32, Linger: time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		r.job = job
		ctx, cancel := context.WithCancel(context.Background())
		r.cancel = cancel
		go func() { r.done <- job.Run(ctx) }()
	}
	start(store)
	t.Cleanup(func() { r.stop(t) })

	const chunks, per, keys = 60, 25, 17
	var feeding sync.WaitGroup
	feeding.Go(func() {
		for c := range chunks {
			recs := make([]abi.Record, per)
			for i := range recs {
				k := []byte("k" + strconv.Itoa((c*per+i)%keys))
				recs[i] = abi.Record{Key: k, Value: k}
			}
			r.src.ch <- recs
		}
	})
	// Measure is called all along, as the control plane does.
	measuring := make(chan struct{})
	feeding.Go(func() {
		for {
			select {
			case <-measuring:
				return
			default:
			}
			if s := r.job.Measure(); len(s.Operators) != 1 {
				t.Errorf("a sample of %d operators", len(s.Operators))
			}
			time.Sleep(time.Millisecond)
		}
	})
	ctx := context.Background()
	waitFor(t, func() bool { return len(r.sink.records()) >= chunks*per/4 })
	// Worker 1 takes groups 0, 2 and 4; worker 0 takes 1.
	moves := map[int]int{0: 1, 2: 1, 4: 1, 1: 0}
	if err := r.job.MoveGroups(ctx, "count", moves); err != nil {
		t.Fatal(err)
	}
	want := newAssignment(16, 2)
	for kg, w := range moves {
		want.owners[kg] = uint16(w)
	}
	check := func(when string) {
		t.Helper()
		if st := r.job.Status().Operators[0]; st.Assignment != 2 {
			t.Errorf("%s: assignment version %d, want 2", when, st.Assignment)
		}
		for _, w := range findOp(t, r.job.Measure(), "count").Workers {
			if !slices.Equal(w.Groups, want.groupsOf(w.ID)) {
				t.Errorf("%s: worker %d owns %v, want %v", when, w.ID, w.Groups, want.groupsOf(w.ID))
			}
		}
	}
	check("after the move")
	waitFor(t, func() bool { return len(r.sink.records()) >= chunks*per })
	close(measuring)
	feeding.Wait()
	waitFor(t, func() bool { return len(r.sink.records()) >= chunks*per })
	if err := r.stop(t); err != nil {
		t.Fatal(err)
	}
	counts := map[string]int{}
	seen := map[string]bool{}
	for i, o := range r.sink.records() {
		k := string(o.Record.Key)
		counts[k]++
		if got := string(o.Record.Value); got != strconv.Itoa(counts[k]) {
			t.Fatalf("output %d: key %s count %s, want %d", i, k, got, counts[k])
		}
		if seen[o.ID] {
			t.Fatalf("output id %s twice", o.ID)
		}
		seen[o.ID] = true
	}
	if n := len(r.sink.records()); n != chunks*per {
		t.Errorf("%d outputs, want %d", n, chunks*per)
	}
	if err := store.Close(); err != nil {
		t.Fatal(err)
	}

	// A restart on the same store: the groups are where they were moved,
	// and the counts go on.
	store = openStore(t, dir)
	t.Cleanup(func() { store.Close() })
	start(store)
	check("after a restart")
	r.src.ch <- []abi.Record{{Key: []byte("k0"), Value: []byte("k0")}}
	waitFor(t, func() bool { return len(r.sink.records()) >= chunks*per+1 })
	if got, want := string(r.sink.records()[chunks*per].Record.Value), strconv.Itoa(counts["k0"]+1); got != want {
		t.Errorf("count of k0 after the restart %s, want %s", got, want)
	}
	if err := r.stop(t); err != nil {
		t.Fatal(err)
	}
}

// TestMoveGroupsRefused: each move the operator cannot take is refused
// with ErrChangeRefused and names what is at fault.
func TestMoveGroupsRefused(t *testing.T) {
	count := countOp(t, 2)
	count.RollbackBatches = 1000
	r := startLive(t, 32, Operator{Name: "up", Kind: plugin.KindMap, Plugin: load(t, "upper", plugin.KindMap, 0)}, count)
	ctx := context.Background()
	for _, tc := range []struct {
		name, op string
		moves    map[int]int
		says     string
	}{
		{"unknown operator", "nope", map[int]int{0: 1}, `"nope"`},
		{"not keyed", "up", map[int]int{0: 1}, "not keyed"},
		{"group below range", "count", map[int]int{-1: 1}, "key group -1 out of range"},
		{"group above range", "count", map[int]int{16: 1}, "key group 16 out of range"},
		{"no such worker", "count", map[int]int{3: 2}, "worker 2: no such worker"},
		{"negative worker", "count", map[int]int{3: -1}, "worker -1: no such worker"},
	} {
		err := r.job.MoveGroups(ctx, tc.op, tc.moves)
		if !errors.Is(err, ErrChangeRefused) || !strings.Contains(err.Error(), tc.says) {
			t.Errorf("%s: MoveGroups = %v, want ErrChangeRefused saying %s", tc.name, err, tc.says)
		}
	}
	// During a swapped-in module's trial.
	if err := r.job.Swap(ctx, "count", Replacement{Plugin: load(t, "wordcount", plugin.KindKeyed, 0), Version: "v2"}); err != nil {
		t.Fatal(err)
	}
	if err := r.job.MoveGroups(ctx, "count", map[int]int{0: 1}); !errors.Is(err, ErrChangeRefused) || !strings.Contains(err.Error(), "on trial") {
		t.Errorf("during a trial: MoveGroups = %v, want ErrChangeRefused naming the trial", err)
	}
	if st := r.job.Status().Operators[1]; st.Assignment != 1 {
		t.Errorf("assignment version %d after refused moves, want 1", st.Assignment)
	}
	if err := r.stop(t); err != nil {
		t.Fatal(err)
	}
}

// TestWorkerCap: a worker capped at R records/s is no faster than R (its
// busy time is at least its records / R); the cap stays with the worker
// across moves and changes of the worker count while it exists, and is
// refused for what cannot be capped.
func TestWorkerCap(t *testing.T) {
	const rate = 5000.0
	r := startLive(t, 64, countOp(t, 2))
	if err := r.job.SetWorkerCap("count", 0, rate); err != nil {
		t.Fatal(err)
	}
	r.feedAll(t, keyedInput(500, 31), 50)
	w := findOp(t, r.job.Measure(), "count").Workers
	if w[0].Records == 0 || w[0].BusySeconds < float64(w[0].Records)/rate {
		t.Errorf("worker 0 capped at %v/s ran %d records in %vs of busy time, under the cap's %vs", rate, w[0].Records, w[0].BusySeconds, float64(w[0].Records)/rate)
	}
	caps := func() map[int]float64 {
		p := &r.job.byName["count"].code.(*keyedStage).pool
		p.capMu.Lock()
		defer p.capMu.Unlock()
		return maps.Clone(p.caps)
	}
	ctx := context.Background()
	if err := r.job.SetWorkerCap("count", -1, 100); err != nil {
		t.Fatal(err)
	}
	if err := r.job.SetWorkerCap("count", -1, 0); err != nil {
		t.Fatal(err)
	}
	if got := caps(); len(got) != 0 {
		t.Errorf("caps %v after removing every worker's, want none", got)
	}
	if err := r.job.SetWorkerCap("count", 1, rate); err != nil {
		t.Fatal(err)
	}
	if err := r.job.MoveGroups(ctx, "count", map[int]int{0: 1}); err != nil {
		t.Fatal(err)
	}
	if err := r.job.SetWorkers(ctx, "count", 3); err != nil {
		t.Fatal(err)
	}
	if got := caps(); !maps.Equal(got, map[int]float64{1: rate}) {
		t.Errorf("caps %v after a move and a change to 3 workers, want worker 1's kept", got)
	}
	if err := r.job.SetWorkers(ctx, "count", 1); err != nil {
		t.Fatal(err)
	}
	if got := caps(); len(got) != 0 {
		t.Errorf("caps %v after worker 1 went away, want none", got)
	}
	// The operator's cap holds for a worker added after it was set.
	if err := r.job.SetWorkerCap("count", -1, rate); err != nil {
		t.Fatal(err)
	}
	if err := r.job.SetWorkers(ctx, "count", 2); err != nil {
		t.Fatal(err)
	}
	r.feedAll(t, keyedInput(500, 31), 50)
	w = findOp(t, r.job.Measure(), "count").Workers
	if len(w) != 2 || w[1].Records == 0 || w[1].BusySeconds < float64(w[1].Records)/rate {
		t.Errorf("a worker added under the operator's cap of %v/s: %+v, want its busy time at least its records over the cap", rate, w)
	}
	if err := r.job.SetWorkers(ctx, "count", 1); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, op string
		worker   int
		rate     float64
	}{
		{"unknown operator", "nope", 0, 1},
		{"no such worker", "count", 1, 1},
		{"negative worker", "count", -2, 1},
		{"negative rate", "count", 0, -1},
	} {
		if err := r.job.SetWorkerCap(tc.op, tc.worker, tc.rate); !errors.Is(err, ErrChangeRefused) {
			t.Errorf("%s: SetWorkerCap = %v, want ErrChangeRefused", tc.name, err)
		}
	}
	if err := r.stop(t); err != nil {
		t.Fatal(err)
	}
}

// BenchmarkMeasure runs a keyed word count over 20,000 records with the
// measurements of Measure on and off: their cost is the difference. It
// also reports the process's CPU time per run (cpu-ns/op), which other
// processes on a shared machine disturb less than the wall time.
func BenchmarkMeasure(b *testing.B) {
	recs := keyedInput(20000, 1000)
	code := load(b, "wordcount", plugin.KindKeyed, 0)
	for _, on := range []bool{true, false} {
		name := "on"
		if !on {
			name = "off"
		}
		b.Run(name, func(b *testing.B) {
			cpu := runJobs(b, func(store *state.Store) (*Job, func() error, error) {
				sink := &memSink{}
				job, err := New(context.Background(), Config{Name: "p", Sources: []Input{{Name: "in", Source: &sliceSource{recs: recs}}},
					Operators: []Operator{{Name: "count", Kind: plugin.KindKeyed, Plugin: code, Parallelism: 2, Tables: []string{"counts"}}},
					Sinks:     []Output{{Name: "out", Sink: sink}}, Store: store, BatchSize: 1024, noMeasure: !on})
				return job, func() error {
					if len(sink.out) != len(recs) {
						return fmt.Errorf("%d outputs, want %d", len(sink.out), len(recs))
					}
					return nil
				}, err
			})
			b.ReportMetric(float64(len(recs))*float64(b.N)/b.Elapsed().Seconds(), "records/s")
			b.ReportMetric(float64(cpu.Nanoseconds())/float64(b.N), "cpu-ns/op")
		})
	}
}

// runJobs makes and runs b.N jobs, each on a store of its own, checks
// each one's output with the function newJob returned with it, and
// returns the process's CPU time in the jobs' runs (not their making).
func runJobs(b *testing.B, newJob func(*state.Store) (*Job, func() error, error)) time.Duration {
	var cpu time.Duration
	for range b.N {
		b.StopTimer()
		store := openStore(b, b.TempDir())
		job, check, err := newJob(store)
		if err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		before := processCPU()
		if err := job.Run(context.Background()); err != nil {
			b.Fatal(err)
		}
		cpu += processCPU() - before
		b.StopTimer()
		if err := check(); err != nil {
			b.Fatal(err)
		}
		store.Close()
		b.StartTimer()
	}
	return cpu
}

// countSink counts the records written to it and reads each one's bytes,
// as a sink that publishes them would, keeping none.
type countSink struct {
	records, bytes int
}

func (s *countSink) Name() string { return "count" }
func (s *countSink) Write(_ context.Context, out []connectors.Out) error {
	for i := range out {
		s.records++
		s.bytes += len(out[i].Record.Key) + len(out[i].Record.Value)
	}
	return nil
}
func (s *countSink) Flush(context.Context) error { return nil }
func (s *countSink) Close() error                { return nil }

// BenchmarkMapPipeline runs 200,000 records of 64 bytes through a job of
// one Wasm map (upper, 2 workers, batches of 1,024) into a sink that
// reads each record: the executor's own work per record around the
// plugin call, with no connector cost. It reports the process's CPU time
// per record (cpu-ns/record), which other processes disturb less than
// the wall time.
func BenchmarkMapPipeline(b *testing.B) {
	recs := make([]abi.Record, 200_000)
	for i := range recs {
		recs[i] = abi.Record{Value: bytes.Repeat([]byte{'a' + byte(i%26)}, 64)}
	}
	code := load(b, "upper", plugin.KindMap, 0)
	cpu := runJobs(b, func(store *state.Store) (*Job, func() error, error) {
		sink := &countSink{}
		job, err := New(context.Background(), Config{Name: "p", Sources: []Input{{Name: "in", Source: &sliceSource{recs: recs}}},
			Operators: []Operator{{Name: "up", Kind: plugin.KindMap, Plugin: code, Parallelism: 2}},
			Sinks:     []Output{{Name: "out", Sink: sink}}, Store: store, BatchSize: 1024})
		return job, func() error {
			if sink.records != len(recs) || sink.bytes != 64*len(recs) {
				return fmt.Errorf("%d outputs of %d bytes, want %d of %d", sink.records, sink.bytes, len(recs), 64*len(recs))
			}
			return nil
		}, err
	})
	b.ReportMetric(float64(len(recs))*float64(b.N)/b.Elapsed().Seconds(), "records/s")
	b.ReportMetric(float64(cpu.Nanoseconds())/float64(b.N*len(recs)), "cpu-ns/record")
}

// backlogSource is a chanSource that tells its backlog: the records sent
// to it and not read yet.
type backlogSource struct {
	*chanSource
	waiting atomic.Int64
}

func (s *backlogSource) send(recs []abi.Record) {
	s.waiting.Add(int64(len(recs)))
	s.ch <- recs
}

func (s *backlogSource) Read(ctx context.Context, buf []connectors.Message) (int, error) {
	n, err := s.chanSource.Read(ctx, buf)
	s.waiting.Add(-int64(n))
	return n, err
}

func (s *backlogSource) Backlog() int64 { return s.waiting.Load() }

// TestMeasureCountsTheQueueAsBacklog holds the first batch's sink write,
// so the job stops taking records (the second batch waits for the first
// to commit) while its reader goes on reading into the queue: the
// records in the queue count as backlog, not as read, and what is read
// plus the backlog is what the source was sent. Counted as read, they
// would hide the first seconds of a job falling behind from the control
// plane: it would take the records that arrive for a worker for fewer
// than they are.
func TestMeasureCountsTheQueueAsBacklog(t *testing.T) {
	const chunks = 12
	src := &backlogSource{chanSource: newChanSource()}
	sink := &gatedWriteSink{writing: make(chan struct{}), gate: make(chan struct{})}
	store := openStore(t, t.TempDir())
	defer store.Close()
	job, err := New(context.Background(), Config{
		Name: "p", Sources: []Input{{Name: "in", Source: src}},
		Operators: []Operator{{Name: "up", Kind: plugin.KindMap, Plugin: load(t, "upper", plugin.KindMap, 0)}},
		Sinks:     []Output{{Name: "out", Sink: sink}}, DeadLetter: &memSink{}, Store: store, BatchSize: minChunk,
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- job.Run(ctx) }()
	for c := range chunks {
		vals := make([]string, minChunk)
		for i := range vals {
			vals[i] = fmt.Sprintf("c%02d-%03d", c, i)
		}
		src.send(records(vals...))
	}
	<-sink.writing
	// The first batch is written, the second processed and waiting for
	// it; the reader fills the queue and then waits too. Wait until the
	// queue holds records (the backlog counted is more than the source's
	// own, which only falls while the job is held) and what is read plus
	// the backlog is what was sent.
	in := func() control.SourceSample { return job.Measure().Sources[0] }
	waitFor(t, func() bool {
		s := in()
		return s.Read == 2*minChunk && s.Read+uint64(s.Backlog) == chunks*minChunk && s.Backlog > src.Backlog()
	})
	close(sink.gate)
	waitFor(t, func() bool { s := in(); return s.Read == chunks*minChunk && s.Backlog == 0 })
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}
