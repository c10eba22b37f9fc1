package exec

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/sluicehq/sluice/abi"
	"github.com/sluicehq/sluice/connectors"
	"github.com/sluicehq/sluice/host/plugin"
	"github.com/sluicehq/sluice/state"
)

// partLog is an append-only stream shared by partSources, as a JetStream
// stream is by the hosts reading it: position i+1 is recs[i].
type partLog struct {
	mu     sync.Mutex
	recs   []abi.Record
	groups int
	more   chan struct{} // closed and replaced on every append
}

func newPartLog(groups int) *partLog { return &partLog{groups: groups, more: make(chan struct{})} }

func (l *partLog) append(values ...string) {
	l.mu.Lock()
	for _, v := range values {
		l.recs = append(l.recs, abi.Record{Key: []byte(v), Value: []byte(v), Time: int64(len(l.recs) + 1)})
	}
	close(l.more)
	l.more = make(chan struct{})
	l.mu.Unlock()
}

// partSource reads a partLog by key group, as connectors.Partitioned
// documents: from the lowest floor, dropping what is at or below its
// group's floor.
type partSource struct {
	log    *partLog
	mu     sync.Mutex
	floors map[int]uint64
	sets   uint64 // SetGroups calls: the GroupSet of the records read
	next   uint64 // the position to take next, 1-based
	last   uint64 // the last position taken (Delivered)
	closed bool
}

func (s *partSource) Name() string                      { return "part" }
func (s *partSource) KeyGroups() int                    { return s.log.groups }
func (s *partSource) Resumable() bool                   { return true }
func (s *partSource) Ack(context.Context, uint64) error { return nil }
func (s *partSource) Open(ctx context.Context, _ uint64) error {
	return errors.New("open a partSource with OpenGroups")
}

func (s *partSource) OpenGroups(_ context.Context, floors map[int]uint64) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.set(floors)
	return nil
}

func (s *partSource) SetGroups(_ context.Context, floors map[int]uint64) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.sets++
	s.set(floors)
	return nil
}

// set reads floors from the lowest floor on.
func (s *partSource) set(floors map[int]uint64) {
	s.floors = maps.Clone(floors)
	low := uint64(0)
	for i, f := range slices.Sorted(maps.Values(floors)) {
		if i == 0 {
			low = f
		}
	}
	s.next, s.last = low+1, low
}

func (s *partSource) Delivered() uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.last
}

func (s *partSource) Read(ctx context.Context, buf []connectors.Message) (int, error) {
	for {
		s.log.mu.Lock()
		more := s.log.more
		recs := s.log.recs
		s.log.mu.Unlock()
		s.mu.Lock()
		if s.closed {
			s.mu.Unlock()
			return 0, connectors.ErrClosed
		}
		n := 0
		for n < len(buf) && s.next <= uint64(len(recs)) {
			pos := s.next
			r := recs[pos-1]
			s.next, s.last = pos+1, pos
			kg := state.KeyGroup(r.Key, s.log.groups)
			if f, ok := s.floors[kg]; ok && pos > f {
				buf[n] = connectors.Message{Record: r, Position: pos, Group: kg, GroupSet: s.sets}
				n++
			}
		}
		s.mu.Unlock()
		if n > 0 {
			return n, nil
		}
		select {
		case <-more:
		case <-ctx.Done():
			return 0, ctx.Err()
		case <-time.After(10 * time.Millisecond): // a Close
		}
	}
}

func (s *partSource) Close() error {
	s.mu.Lock()
	s.closed = true
	s.mu.Unlock()
	return nil
}

// groupHost is one job owning some key groups of a partLog, with its own
// store, running in the background.
type groupHost struct {
	dir    string
	store  *state.Store
	sink   *memSink
	job    *Job
	cancel context.CancelFunc
	done   chan error
}

// A positive commit interval lets batches leave their state uncommitted
// (Config.CommitInterval).
func startGroupHost(t tb, dir string, log *partLog, sink *memSink, wc *plugin.Plugin, groups []int, interval time.Duration) *groupHost {
	t.Helper()
	if groups == nil {
		groups = []int{} // a job that owns no group yet, not every group
	}
	h := &groupHost{dir: dir, store: openStore(t, dir), sink: sink, done: make(chan error, 1)}
	job, err := New(context.Background(), Config{
		Name: "p", Sources: []Input{{Name: "in", Source: &partSource{log: log}}},
		Operators: []Operator{{Name: "count", Kind: plugin.KindKeyed, Plugin: wc, Parallelism: 2, Tables: []string{"counts"}}},
		Sinks:     []Output{{Name: "out", Sink: sink}}, DeadLetter: &memSink{}, Store: h.store,
		BatchSize: 5, Linger: time.Millisecond, Groups: groups, CommitInterval: interval,
	})
	if err != nil {
		h.store.Close()
		t.Fatal(err)
	}
	h.job = job
	ctx, cancel := context.WithCancel(context.Background())
	h.cancel = cancel
	go func() { h.done <- job.Run(ctx) }()
	return h
}

// stop stops the job (which commits what it read) and closes its store.
func (h *groupHost) stop(t tb) {
	t.Helper()
	h.cancel()
	if err := <-h.done; err != nil {
		t.Fatal(err)
	}
	if err := h.job.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := h.store.Close(); err != nil {
		t.Fatal(err)
	}
}

// floorsOf returns the floors of handed-over groups, by group.
func floorsOf(states []GroupState) map[int]map[string]uint64 {
	m := map[int]map[string]uint64{}
	for _, st := range states {
		m[st.Group] = st.Floors
	}
	return m
}

// outputsByID returns the sinks' outputs by id (a JetStream sink stores
// an id once), failing on an id written twice with different content.
func outputsByID(t tb, sinks ...*memSink) map[string]connectors.Out {
	t.Helper()
	byID := map[string]connectors.Out{}
	for _, s := range sinks {
		for _, o := range s.records() {
			if prev, ok := byID[o.ID]; ok && string(prev.Record.Value) != string(o.Record.Value) {
				t.Fatal(fmt.Sprintf("output %s written as %q and as %q", o.ID, prev.Record.Value, o.Record.Value))
			}
			byID[o.ID] = o
		}
	}
	return byID
}

// TestKeyGroupsMoveWithoutLossOrRepeat runs two jobs over one partitioned
// stream, each owning some key groups, and moves random groups between
// them (and restarts them) while records arrive: every record is counted
// once, by whichever job owned its group, and each key's outputs are the
// running counts of a serial run.
func TestKeyGroupsMoveWithoutLossOrRepeat(t *testing.T) {
	wc := load(t, "wordcount", plugin.KindKeyed, 0)
	const groups = 16
	keys := []string{"a", "b", "c", "dd", "eee", "f", "g", "h", "i", "j", "k", "l"}
	rapid.Check(t, func(rt *rapid.T) {
		log := newPartLog(groups)
		// An hour's commit interval: state waits uncommitted until a
		// batch is not full, a move or the end of the job.
		interval := rapid.SampledFrom([]time.Duration{0, time.Hour}).Draw(rt, "commit interval")
		sinks := [2]*memSink{{}, {}}
		var hosts [2]*groupHost
		var owned [2][]int
		for kg := range groups {
			w := rapid.IntRange(0, 1).Draw(rt, "owner")
			owned[w] = append(owned[w], kg)
		}
		for i := range hosts {
			dir, err := os.MkdirTemp("", "sluice-groups-")
			if err != nil {
				rt.Fatal(err)
			}
			defer os.RemoveAll(dir)
			hosts[i] = startGroupHost(rt, dir, log, sinks[i], wc, owned[i], interval)
			rt.Logf("job %d started with groups %v", i, owned[i])
		}
		for _, k := range keys {
			rt.Logf("key %s is in group %d", k, state.KeyGroup([]byte(k), groups))
		}
		defer func() {
			for _, h := range hosts {
				if h.cancel != nil {
					h.cancel()
					<-h.done
					_ = h.job.Close(context.Background())
					_ = h.store.Close()
				}
			}
		}()
		var values []string
		steps := rapid.IntRange(1, 6).Draw(rt, "steps")
		for range steps {
			vs := rapid.SliceOfN(rapid.SampledFrom(keys), 0, 40).Draw(rt, "values")
			log.append(vs...)
			rt.Logf("records %d..%d appended: %v", len(values)+1, len(values)+len(vs), vs)
			values = append(values, vs...)
			switch rapid.IntRange(0, 2).Draw(rt, "action") {
			case 0: // move groups from one job to the other
				from := rapid.IntRange(0, 1).Draw(rt, "from")
				have := hosts[from].job.Groups()
				if len(have) == 0 {
					continue
				}
				move := rapid.SliceOfNDistinct(rapid.SampledFrom(have), 1, len(have), rapid.ID).Draw(rt, "move")
				ctx := context.Background()
				states, err := hosts[from].job.ReleaseGroups(ctx, move)
				if err != nil {
					rt.Fatal(err)
				}
				if err := hosts[1-from].job.AcquireGroups(ctx, states); err != nil {
					rt.Fatal(err)
				}
				rt.Logf("groups %v moved from job %d to job %d, floors %v", move, from, 1-from, floorsOf(states))
				if rapid.Bool().Draw(rt, "drop") {
					if err := hosts[from].job.DropGroups(ctx, move); err != nil {
						rt.Fatal(err)
					}
				}
			case 1: // restart a job where its store left it
				i := rapid.IntRange(0, 1).Draw(rt, "restart")
				gs := hosts[i].job.Groups()
				hosts[i].stop(rt)
				hosts[i].cancel = nil
				hosts[i] = startGroupHost(rt, hosts[i].dir, log, sinks[i], wc, gs, interval)
				rt.Logf("job %d restarted with groups %v", i, gs)
			}
		}
		deadline := time.Now().Add(30 * time.Second)
		for len(outputsByID(rt, sinks[:]...)) < len(values) {
			if time.Now().After(deadline) {
				rt.Fatalf("%d outputs after 30s, want %d", len(outputsByID(rt, sinks[:]...)), len(values))
			}
			time.Sleep(time.Millisecond)
		}
		byID := outputsByID(rt, sinks[:]...)
		running := map[string]int{}
		for i, v := range values {
			running[v]++
			o, ok := byID[fmt.Sprintf("p/in/%d/0", i+1)]
			if !ok {
				rt.Fatalf("no output for record %d (%s)", i+1, v)
			}
			if got, want := string(o.Record.Key)+"="+string(o.Record.Value), v+"="+strconv.Itoa(running[v]); got != want {
				rt.Fatalf("output of record %d is %s, want %s", i+1, got, want)
			}
		}
		if len(byID) != len(values) {
			rt.Fatalf("%d outputs for %d records", len(byID), len(values))
		}
		for i, h := range hosts {
			h.stop(rt)
			h.cancel = nil
			rt.Logf("job %d stopped with groups %v", i, h.job.Groups())
		}
		// Nothing was written after the outputs were checked: no record
		// was counted again by a job with a stale floor.
		if after := outputsByID(rt, sinks[:]...); len(after) != len(byID) {
			rt.Fatalf("%d outputs after the jobs stopped, %d before", len(after), len(byID))
		}
		// Every group's state is in the store of the job that owns it.
		for i, h := range hosts {
			store := openStore(rt, h.dir)
			mine := map[int]bool{}
			for _, kg := range h.job.Groups() {
				mine[kg] = true
			}
			counts := map[string]int{}
			err := store.Scan("counts", func(k, v []byte) error {
				n, err := strconv.Atoi(string(v))
				counts[string(k)] = n
				return err
			})
			if err != nil && !errors.Is(err, state.ErrUnknownTable) { // a job that never counted has no table
				rt.Fatal(err)
			}
			for k, n := range counts {
				if !mine[state.KeyGroup([]byte(k), groups)] {
					continue // released, and maybe not dropped: never read
				}
				if n != running[k] {
					rt.Errorf("job %d holds %s=%d, want %d", i, k, n, running[k])
				}
			}
			store.Close()
		}
	})
}

// TestRecordsOfAnEarlierOwnershipDropped: records of a group read while
// the job owned it before, still waiting when it takes the group back,
// are dropped; those read since, from the group's floor, are taken. Taking
// the old ones would skip the records read in between by the host that
// held the group (they come again under the new group set).
func TestRecordsOfAnEarlierOwnershipDropped(t *testing.T) {
	const kg = 5
	j := &Job{owned: make([]bool, 16)}
	p := &partition{seen: make([]uint64, 16), since: make([]uint64, 16)}
	msg := func(pos, set uint64) *connectors.Message {
		return &connectors.Message{Position: pos, Group: kg, GroupSet: set}
	}
	j.owned[kg] = true
	if !p.take(j, msg(3, 0)) {
		t.Fatal("record 3 of an owned group, read under set 0, was dropped")
	}
	j.owned[kg] = false // released in set 1
	if p.take(j, msg(8, 0)) {
		t.Fatal("record 8 of a released group was taken")
	}
	j.owned[kg], p.since[kg], p.seen[kg] = true, 2, 0 // taken back in set 2, with floor 0
	for _, m := range []*connectors.Message{msg(15, 0), msg(15, 1)} {
		if p.take(j, m) {
			t.Fatalf("record %d read under set %d, before the group came back in set 2, was taken", m.Position, m.GroupSet)
		}
	}
	for _, pos := range []uint64{3, 8, 15} {
		if !p.take(j, msg(pos, 2)) {
			t.Fatalf("record %d read under set 2 was dropped", pos)
		}
	}
	if p.take(j, msg(8, 3)) {
		t.Fatal("record 8, read again under set 3, was taken twice")
	}
}

func TestGroupChangesRefused(t *testing.T) {
	wc := load(t, "wordcount", plugin.KindKeyed, 0)
	log := newPartLog(16)
	h := startGroupHost(t, t.TempDir(), log, &memSink{}, wc, []int{1, 2}, 0)
	defer h.stop(t)
	ctx := context.Background()
	for name, err := range map[string]error{
		"not owned":  func() error { _, err := h.job.ReleaseGroups(ctx, []int{3}); return err }(),
		"twice":      func() error { _, err := h.job.ReleaseGroups(ctx, []int{1, 1}); return err }(),
		"range":      func() error { _, err := h.job.ReleaseGroups(ctx, []int{16}); return err }(),
		"owned":      h.job.AcquireGroups(ctx, []GroupState{{Group: 2, Floors: map[string]uint64{"in": 0}}}),
		"no floor":   h.job.AcquireGroups(ctx, []GroupState{{Group: 5}}),
		"drop owned": h.job.DropGroups(ctx, []int{1}),
	} {
		if !errors.Is(err, ErrGroupsRefused) {
			t.Errorf("%s: %v, want ErrGroupsRefused", name, err)
		}
	}
	if got := h.job.Groups(); !slices.Equal(got, []int{1, 2}) {
		t.Errorf("groups %v after refused changes, want [1 2]", got)
	}
}
