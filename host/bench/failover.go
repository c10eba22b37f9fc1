package bench

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/sluicehq/sluice/connectors"
	"github.com/sluicehq/sluice/host/cluster"
	"github.com/sluicehq/sluice/host/migrate"
	"github.com/sluicehq/sluice/state"
)

// PhaseFailover is the failover run's phase: under the paced load one host
// dies abruptly and the others take its key groups from their last
// checkpoints.
const PhaseFailover MigratePhase = "failover"

// coordinatePeriod is how often each host of the failover run looks at
// the set of live hosts (migrate.Coordinate): host/runner's period.
const coordinatePeriod = 200 * time.Millisecond

// failoverLimit bounds how long the failover run waits for the dead host's
// groups to serve again before it fails.
const failoverLimit = 2 * time.Minute

// FailoverResult is the failover run of RunMigrate: one host of the
// cluster killed under the load, as kill -9 would (it stops renewing its
// lease, processing, committing and writing at once, and neither hands
// its groups over nor checkpoints them), and the survivors taking its
// groups with host/runner's mechanisms (migrate.Coordinate, which
// rebalances once the lease has expired, and migrate.Host, which installs
// the groups of a dead host from their last checkpoints and replays their
// input from the checkpoints' positions).
//
// Every time is from the kill. Each is the first time the bench saw the
// event, polling every millisecond or so, or the time of an event that
// proves it (a survivor's output of a group proves the group installed;
// an install proves the lease expired), whichever is earlier: so the
// times are ordered as the events are.
type FailoverResult struct {
	// Host is the host killed; Groups the number of key groups it owned.
	Host   string `json:"killed_host"`
	Groups int    `json:"groups"`
	// LeaseMs and CheckpointEveryMs are the hosts' lease and checkpoint
	// period.
	LeaseMs           float64 `json:"lease_ms"`
	CheckpointEveryMs float64 `json:"checkpoint_every_ms"`
	// ExpiredMs is when the survivors saw the dead host's lease gone.
	ExpiredMs float64 `json:"lease_expired_ms"`
	// InstalledMs is when the last of its groups was installed on a
	// survivor (read from the checkpoint bucket and acquired).
	InstalledMs float64 `json:"installed_ms"`
	// FirstOutputMs is when the last of its groups made its first output
	// after the kill (a repeated one included).
	FirstOutputMs float64 `json:"first_output_ms"`
	// ServingMs is when the last of its groups was serving again: every
	// record of it due at the kill had its output at the sink, and it was
	// installed.
	ServingMs float64 `json:"serving_ms"`
	// CheckpointLoadMs is from the lease's expiry to the last install
	// (the rebalance's planning and steps, and the checkpoints' reads);
	// ReplayMs from the last install to ServingMs.
	CheckpointLoadMs float64 `json:"checkpoint_load_ms"`
	ReplayMs         float64 `json:"replay_ms"`
	// GroupReplayMs is the longest replay of one group: from its install
	// to its serving again. Groups are installed in steps, so a group
	// installed early replays while later ones are still loading.
	GroupReplayMs float64 `json:"group_replay_max_ms"`
	// BoundMs is the lease plus CheckpointLoadMs plus ReplayMs: the
	// target is ServingMs within it.
	BoundMs float64 `json:"bound_ms"`
	// Replayed is the number of outputs the replay made again, which the
	// sink dropped by their ids.
	Replayed uint64 `json:"replayed_outputs"`
	// FetchedBytes is what the survivors read from the checkpoint bucket
	// after the kill.
	FetchedBytes int64 `json:"fetched_bytes"`
	// Steady is the latency of the records due until Window before the
	// kill; During that of the dead host's groups' records due from
	// Window before the kill (those it had not output yet wait for the
	// failover) to Window after ServingMs.
	Steady LatencyStats `json:"steady"`
	During LatencyStats `json:"during_failover"`
	// Retried is the number of failed rounds of the hosts' migration
	// loops run again (a checkpoint put that timed out, say).
	Retried int64 `json:"loop_retries"`
	// Lost and Duplicated count records whose output never reached the
	// sink or reached it twice: RunMigrate fails unless both are 0.
	Lost       uint64 `json:"lost"`
	Duplicated uint64 `json:"duplicated"`
}

// dedupSink stands for a JetStream sink whose stream drops a message with
// an id it holds (its duplicate window here spans the run): the replay of
// a failover makes outputs again with the ids they had, and only the first
// of each reaches the latency sink behind it. A repeat whose record
// differs from the first is an error: the replay did not make the same
// output. It also records, per key group, the first output written after
// the kill.
type dedupSink struct {
	next   *latencySink
	groups int

	mu       sync.Mutex
	ids      map[string]string // id -> key, value and time of its output
	replayed uint64
	err      error
	killAt   time.Time         // zero before the kill
	first    map[int]time.Time // key group -> its first output after the kill
}

func newDedupSink(next *latencySink, groups int) *dedupSink {
	return &dedupSink{next: next, groups: groups, ids: map[string]string{}, first: map[int]time.Time{}}
}

func (s *dedupSink) Name() string  { return "latency" }
func (s *dedupSink) UsesIDs() bool { return true }
func (s *dedupSink) Close() error  { return nil }

func (s *dedupSink) Flush(context.Context) error { return nil }

func (s *dedupSink) Write(ctx context.Context, out []connectors.Out) error {
	now := time.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	fresh := make([]connectors.Out, 0, len(out))
	for _, o := range out {
		if !s.killAt.IsZero() {
			kg := state.KeyGroup(o.Record.Key, s.groups)
			if _, ok := s.first[kg]; !ok {
				s.first[kg] = now
			}
		}
		rec := string(o.Record.Key) + "\x00" + string(o.Record.Value) + "\x00" + strconv.FormatInt(o.Record.Time, 10)
		if o.ID == "" && s.err == nil {
			s.err = fmt.Errorf("an output of key %q carries no id", o.Record.Key)
		}
		if was, ok := s.ids[o.ID]; ok {
			s.replayed++
			if was != rec && s.err == nil {
				s.err = fmt.Errorf("output id %q made again with another record (key %q, value %q)", o.ID, o.Record.Key, o.Record.Value)
			}
			continue
		}
		s.ids[o.ID] = rec
		fresh = append(fresh, o)
	}
	if len(fresh) == 0 {
		return nil
	}
	return s.next.Write(ctx, fresh)
}

// kill records the time of the kill, from which it records each group's
// first output.
func (s *dedupSink) kill(at time.Time) {
	s.mu.Lock()
	s.killAt = at
	s.mu.Unlock()
}

// hostSink is a host's way to the run's sink: once killed, the host's
// outputs go nowhere, as those of a process killed would.
type hostSink struct {
	next *dedupSink

	mu     sync.Mutex
	killed bool
}

func (s *hostSink) Name() string                { return "latency" }
func (s *hostSink) UsesIDs() bool               { return true }
func (s *hostSink) Close() error                { return nil }
func (s *hostSink) Flush(context.Context) error { return nil }

func (s *hostSink) Write(ctx context.Context, out []connectors.Out) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.killed {
		return nil
	}
	return s.next.Write(ctx, out)
}

// kill cuts the host off the sink; a write under way ends first.
func (s *hostSink) kill() {
	s.mu.Lock()
	s.killed = true
	s.mu.Unlock()
}

// runFailover is the failover run: fresh hosts with a short lease and
// periodic checkpoints, each running migrate.Coordinate as host/runner's
// do, the paced load, and one host killed halfway.
func runFailover(ctx context.Context, e *env, urls []string, opts MigrateOptions) (res *FailoverResult, err error) {
	r := &migRun{e: e, opts: opts, pipeline: "bench-migrate-fo", lease: opts.Lease, checkpointEvery: opts.CheckpointEvery, coordinate: true,
		strategy: MigrateStrategy{Name: string(PhaseFailover)}}
	e.step("migrate failover: %d hosts over %d NATS server(s), %d key groups, %s of state, %s records/s, lease %v, checkpoints every %v",
		opts.Hosts, len(urls), opts.KeyGroups, byteSize(int(opts.State)), thousands(opts.Rate), opts.Lease, opts.CheckpointEvery)
	a, src, closeRun, err := r.setUp(ctx, urls)
	defer func() {
		if cerr := closeRun(); cerr != nil && err == nil {
			err = cerr
		}
	}()
	if err != nil {
		return nil, err
	}
	r.sink = newLatencySink(uint64(opts.Rate*opts.Duration.Seconds()*3), r.pub.keys.seq)
	dedup := newDedupSink(r.sink, opts.KeyGroups)
	gates := make([]*hostSink, len(r.hosts))
	e.step("migrate failover: preloading %s of ballast and starting the hosts", byteSize(int(opts.State)))
	for i, h := range r.hosts {
		gates[i] = &hostSink{next: dedup}
		h.out = gates[i]
		if err := r.startHost(ctx, h, migrate.Owned(a, h.id)); err != nil {
			return nil, fmt.Errorf("bench: migrate failover: host %s: %w", h.id, err)
		}
	}
	if err := src.Open(ctx, 0); err != nil {
		return nil, fmt.Errorf("bench: migrate failover: %w", err)
	}
	r.start = src.openedAt()
	r.pub.keys.setStart(r.start)
	pubCtx, stopPub := context.WithCancel(ctx)
	defer stopPub()
	pubDone := make(chan error, 1)
	go func() { pubDone <- r.pub.run(pubCtx) }()

	wait := func(until time.Time) error {
		select {
		case <-time.After(time.Until(until)):
			return r.hostsOK()
		case err := <-pubDone:
			return fmt.Errorf("bench: migrate failover: the publisher stopped: %v", err)
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	// Half the phase steady, and at least two checkpoint periods, so that
	// the groups have checkpoints to be taken from; then half a period
	// more: the hosts' checkpoint tickers started with them, about when
	// the load did, so the kill comes about halfway between two
	// checkpoints rather than just after one.
	if err := wait(r.start.Add(max(opts.Duration/2, 2*opts.CheckpointEvery) + opts.CheckpointEvery/2)); err != nil {
		return nil, err
	}

	victim := r.hosts[opts.FailoverHost]
	deadGroups := victim.job.Groups()
	isDead := make(map[int]bool, len(deadGroups))
	for _, kg := range deadGroups {
		isDead[kg] = true
	}
	survivors := slices.DeleteFunc(slices.Clone(r.hosts), func(h *migHost) bool { return h == victim })
	// A survivor's view of the leases: the server's marker of the
	// victim's expired lease.
	watchCtx, stopWatch := context.WithCancel(ctx)
	defer stopWatch()
	evs, err := survivors[0].cl.Watch(watchCtx)
	if err != nil {
		return nil, fmt.Errorf("bench: migrate failover: %w", err)
	}
	expiredAt := make(chan time.Time, 1)
	go func() {
		for ev := range evs {
			if ev.Kind == cluster.Expired && ev.Host.ID == victim.id {
				select {
				case expiredAt <- time.Now():
				default:
				}
				stopWatch()
			}
		}
	}()
	fetchedBefore := r.stats().GetBytes
	e.step("migrate failover: killing host %s, which owns %d of %d groups", victim.id, len(deadGroups), opts.KeyGroups)
	// The kill: the host's outputs stop, its connection to NATS closes
	// (no lease renewal, checkpoint, acknowledgement or assignment write
	// gets out), and its goroutines are told to stop, with nothing handed
	// over. What they do after this reaches nothing.
	gates[opts.FailoverHost].kill()
	victim.killed = true
	victim.cancel()
	victim.stopJoin()
	victim.nc.Close()
	killAt := time.Now()
	dedup.kill(killAt)

	var expired time.Time
	installed := make(map[int]time.Time, len(deadGroups))
	dueAtKill := uint64(float64(killAt.Sub(r.start))*opts.Rate/1e9) + 1 // positions 1..dueAtKill are due by the kill
	deadline := killAt.Add(failoverLimit)
	for {
		now := time.Now()
		select {
		case expired = <-expiredAt:
		default:
		}
		for _, h := range survivors {
			for _, kg := range h.job.Groups() {
				if _, ok := installed[kg]; !ok && isDead[kg] {
					installed[kg] = now
				}
			}
		}
		if len(installed) == len(deadGroups) && r.sink.seenUpTo(dueAtKill) && dedup.firstAll(deadGroups) {
			break
		}
		if now.After(deadline) {
			return nil, fmt.Errorf("bench: migrate failover: %d of host %s's %d groups installed elsewhere and the records due at the kill not all output %v after it",
				len(installed), victim.id, len(deadGroups), failoverLimit)
		}
		if err := wait(now.Add(2 * time.Millisecond)); err != nil {
			return nil, fmt.Errorf("bench: migrate failover: %w", err)
		}
	}
	fetched := r.stats().GetBytes - fetchedBefore
	if expired.IsZero() {
		select {
		case expired = <-expiredAt:
		default:
		}
	}
	e.step("migrate failover: host %s's groups serve again; running on for %v", victim.id, max(opts.Duration/2, opts.Window))
	if err := wait(time.Now().Add(max(opts.Duration/2, opts.Window))); err != nil {
		return nil, err
	}
	events := src.end()
	if err := <-pubDone; err != nil {
		return nil, fmt.Errorf("bench: migrate failover: %w", err)
	}
	e.step("migrate failover: waiting for the outputs of %s records", thousands(float64(events)))
	outDeadline := time.Now().Add(time.Minute)
	for r.sink.seen() < events && time.Now().Before(outDeadline) {
		if err := wait(time.Now().Add(20 * time.Millisecond)); err != nil {
			return nil, err
		}
	}
	if err := dedup.check(); err != nil {
		return nil, fmt.Errorf("bench: migrate failover: %w", errors.Join(ErrMigrateOutput, err))
	}
	var dead uint64
	for _, h := range r.hosts {
		dead += h.job.Status().Dead
	}
	if err := r.sink.check(events, dead); err != nil {
		return nil, fmt.Errorf("bench: migrate failover: %w", errors.Join(ErrMigrateOutput, err))
	}
	res = r.failoverResult(victim.id, deadGroups, killAt, expired, installed, dedup)
	res.FetchedBytes = fetched
	res.Retried = r.retried.Load()
	e.step("migrate failover: lease expired after %.0f ms, groups installed after %.0f ms, serving after %.0f ms",
		res.ExpiredMs, res.InstalledMs, res.ServingMs)
	return res, nil
}

// check returns the first wrong output the sink saw.
func (s *dedupSink) check() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.err
}

// firstAll reports whether each of groups has an output after the kill.
func (s *dedupSink) firstAll(groups []int) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, kg := range groups {
		if _, ok := s.first[kg]; !ok {
			return false
		}
	}
	return true
}

// seenUpTo reports whether positions 1 to n all have an output.
func (s *latencySink) seenUpTo(n uint64) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if uint64(len(s.latency)) < n {
		return false
	}
	for _, l := range s.latency[:n] {
		if l < 0 {
			return false
		}
	}
	return true
}

// failoverResult computes the run's times from what was seen: the lease's
// expiry, each group's install and, from the sink, each group's first
// output after the kill and the outputs of its records due at the kill.
func (r *migRun) failoverResult(victim string, groups []int, killAt, expired time.Time, installed map[int]time.Time, dedup *dedupSink) *FailoverResult {
	opts := r.opts
	dedup.mu.Lock()
	first := maps.Clone(dedup.first)
	replayed := dedup.replayed
	dedup.mu.Unlock()
	isDead := make(map[int]bool, len(groups))
	for _, kg := range groups {
		isDead[kg] = true
		// An output of the group after the kill proves it installed.
		if f, ok := first[kg]; ok && f.Before(installed[kg]) {
			installed[kg] = f
		}
	}
	// The group of each position, from the publisher's key log.
	r.pub.keys.mu.Lock()
	groupOf := make(map[uint64]int)
	for key, ps := range r.pub.keys.pos {
		kg := state.KeyGroup([]byte(key), opts.KeyGroups)
		if !isDead[kg] {
			continue
		}
		for _, p := range ps {
			groupOf[p] = kg
		}
	}
	r.pub.keys.mu.Unlock()

	base := r.start.UnixNano()
	kill := killAt.UnixNano()
	serving := make(map[int]int64, len(groups)) // the group's install, or the last output of its records due at the kill
	for _, kg := range groups {
		serving[kg] = installed[kg].UnixNano()
	}
	var lastInstall, lastFirst, lastServing int64 = kill, kill, kill
	for _, kg := range groups {
		lastInstall = max(lastInstall, installed[kg].UnixNano())
		lastFirst = max(lastFirst, first[kg].UnixNano())
	}
	r.sink.mu.Lock()
	defer r.sink.mu.Unlock()
	var steady, during []int64
	for i, l := range r.sink.latency {
		due := base + dueNs(uint64(i), opts.Rate)
		if due >= kill {
			break
		}
		if due < kill-int64(opts.Window) {
			steady = append(steady, l)
		}
		if kg, dead := groupOf[uint64(i)+1]; dead {
			serving[kg] = max(serving[kg], due+l)
		}
	}
	var groupReplay int64
	for kg, t := range serving {
		lastServing = max(lastServing, t)
		groupReplay = max(groupReplay, t-installed[kg].UnixNano())
	}
	// The latency during the failover: the dead groups' records due from
	// the kill to Window after they serve again.
	end := lastServing + int64(opts.Window)
	for i, l := range r.sink.latency {
		due := base + dueNs(uint64(i), opts.Rate)
		if _, dead := groupOf[uint64(i)+1]; dead && due >= kill-int64(opts.Window) && due < end {
			during = append(during, l)
		}
	}
	// The lease's expiry is seen before any install: an install proves it.
	exp := expired.UnixNano()
	if expired.IsZero() {
		exp = lastInstall
	}
	for _, kg := range groups {
		exp = min(exp, installed[kg].UnixNano())
	}
	since := func(t int64) float64 { return float64(t-kill) / 1e6 }
	res := &FailoverResult{
		Host: victim, Groups: len(groups), LeaseMs: ms(opts.Lease), CheckpointEveryMs: ms(opts.CheckpointEvery),
		ExpiredMs: since(exp), InstalledMs: since(lastInstall), FirstOutputMs: since(lastFirst), ServingMs: since(lastServing),
		Replayed: replayed, Steady: latencyStats(steady), During: latencyStats(during), GroupReplayMs: float64(groupReplay) / 1e6,
	}
	res.CheckpointLoadMs = res.InstalledMs - res.ExpiredMs
	res.ReplayMs = res.ServingMs - res.InstalledMs
	res.BoundMs = res.LeaseMs + res.CheckpointLoadMs + res.ReplayMs
	return res
}

// failoverTargets checks the failover target against f (none when
// the run was not made).
func failoverTargets(f *FailoverResult, hosts int) []Target {
	if f == nil {
		return nil
	}
	return []Target{{
		Name: fmt.Sprintf("failover: kill -9 of host %s of %d under load; its %d groups serve again within lease + checkpoint load + replay; 0 lost, 0 duplicated", f.Host, hosts, f.Groups),
		Want: "serve again within lease + checkpoint load + replay, 0 lost, 0 duplicated",
		Got: fmt.Sprintf("%.0f ms (bound %.0f + %.0f + %.0f = %.0f ms); %d lost, %d duplicated",
			f.ServingMs, f.LeaseMs, f.CheckpointLoadMs, f.ReplayMs, f.BoundMs, f.Lost, f.Duplicated),
		Met: f.ServingMs <= f.BoundMs && f.Lost == 0 && f.Duplicated == 0,
	}}
}

// failoverNotes says how to read the failover row.
func failoverNotes(f *FailoverResult) []string {
	if f == nil {
		return nil
	}
	return []string{
		"failover: the killed host stops renewing its lease, processing, committing and writing at once (its outputs are cut off, its NATS connection closed), and hands nothing over; the survivors find it dead when its lease expires and take its groups with host/runner's mechanisms (migrate.Coordinate rebalances, migrate.Host installs from the last checkpoints and replays); the sink drops the replay's repeated outputs by id, as a JetStream sink's stream does, and fails the run if a repeat differs",
		"failover: the bound adds the configured lease to the measured checkpoint load (lease expiry to the last install) and replay (last install to serving): it holds when the lease is seen to expire within the lease and nothing but loading and replay comes after",
	}
}
