package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"text/tabwriter"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/sluicehq/sluice/abi"
	"github.com/sluicehq/sluice/connectors"
	"github.com/sluicehq/sluice/connectors/generator"
	"github.com/sluicehq/sluice/connectors/natsconn"
	"github.com/sluicehq/sluice/host/checkpoint"
	"github.com/sluicehq/sluice/host/cluster"
	"github.com/sluicehq/sluice/host/exec"
	"github.com/sluicehq/sluice/host/migrate"
	"github.com/sluicehq/sluice/host/plugin"
	wasm "github.com/sluicehq/sluice/runtime"
	"github.com/sluicehq/sluice/state"
)

// MigrateStrategy is a way of planning a migration that RunMigrate
// measures: a name and the planner's knobs.
type MigrateStrategy struct {
	Name  string        `json:"name"`
	Knobs cluster.Knobs `json:"knobs"`
}

// The strategies' names.
const (
	// StrategyAllAtOnce is the all-at-once baseline (cluster.AllAtOnce).
	StrategyAllAtOnce = "all-at-once"
	// StrategyFluid is the fluid baseline (cluster.Fluid).
	StrategyFluid = "fluid"
)

// MigrateStrategies returns every strategy in the order RunMigrate runs
// them: Spacker with three knob settings (batches of 8 per source host in
// group order, hottest first, and with every other group marked
// replicated), then the two baselines.
func MigrateStrategies() []MigrateStrategy {
	return []MigrateStrategy{
		{Name: "spacker-b8-keygroup", Knobs: cluster.Knobs{Order: cluster.OrderKeyGroup, Batch: 8}},
		{Name: "spacker-b8-hottest", Knobs: cluster.Knobs{Order: cluster.OrderHottest, Batch: 8}},
		{Name: "spacker-b8-replicate2", Knobs: cluster.Knobs{Order: cluster.OrderKeyGroup, Batch: 8, Replicate: 2}},
		{Name: StrategyAllAtOnce, Knobs: cluster.AllAtOnce()},
		{Name: StrategyFluid, Knobs: cluster.Fluid()},
	}
}

// ParseMigrateStrategy returns the strategy named s.
func ParseMigrateStrategy(s string) (MigrateStrategy, error) {
	var names []string
	for _, st := range MigrateStrategies() {
		if st.Name == s {
			return st, nil
		}
		names = append(names, st.Name)
	}
	return MigrateStrategy{}, fmt.Errorf("bench: migrate: unknown strategy %q (want one of %s)", s, strings.Join(names, ", "))
}

// MigratePhase is one part of a strategy's run.
type MigratePhase string

// The phases, in the order each strategy runs them.
const (
	// PhaseSteady moves nothing: the reference.
	PhaseSteady MigratePhase = "steady"
	// PhaseMove25 moves a quarter of the groups from one host to another.
	PhaseMove25 MigratePhase = "move-25%"
	// PhaseMove100 gives every group a new owner.
	PhaseMove100 MigratePhase = "move-100%"
	// PhaseZipf switches the keys to a Zipf distribution and rebalances
	// the groups by their measured load.
	PhaseZipf MigratePhase = "zipf-rebalance"
)

// MigratePhases lists the phases in order.
func MigratePhases() []MigratePhase {
	return []MigratePhase{PhaseSteady, PhaseMove25, PhaseMove100, PhaseZipf}
}

// MigrateOptions say what RunMigrate runs. Start from
// DefaultMigrateOptions or QuickMigrateOptions.
type MigrateOptions struct {
	// NATSServers is the number of embedded NATS servers, clustered on
	// 127.0.0.1 when more than one; the partition stream and the buckets
	// have min(3, NATSServers) replicas.
	NATSServers int
	// Hosts is the number of hosts (jobs, each with its own store), at
	// least 2.
	Hosts int
	// KeyGroups is the pipeline's number of key groups.
	KeyGroups int
	// State is the ballast of keyed state preloaded over the groups, in
	// bytes, in values of ValueSize.
	State     int64
	ValueSize int
	// Keys is the number of distinct record keys; ZipfS the exponent of
	// the Zipf phase's key distribution (more than 1).
	Keys  int
	ZipfS float64
	// Rate is the publisher's pace in records per second.
	Rate float64
	// Duration is each phase's length at least: a move phase runs half of
	// it before the move (its steady reference, and the Zipf phase's load
	// measurement) and lasts until Window after the move is over.
	Duration time.Duration
	// Window: records due from a move's start until Window after it ends
	// count as "during the move".
	Window time.Duration
	// Period is how often each host steps the migration in progress.
	Period time.Duration
	// BatchSize and Linger cut the hosts' batches.
	BatchSize int
	Linger    time.Duration
	// Strategies to run, in the order of MigrateStrategies whatever the
	// order here; empty: all.
	Strategies []string
	// WordCount is plugins/wordcount compiled to WebAssembly: the keyed
	// operator.
	WordCount []byte
	// SkipMoves leaves out the strategies' runs (the phases of
	// MigratePhases): with Failover, only the failover run is made.
	SkipMoves bool
	// Failover adds, after the strategies' runs, the failover run
	// (PhaseFailover): a host of Hosts dies abruptly under the load and
	// the others take its groups from their checkpoints. Lease is the
	// hosts' lease in that run and CheckpointEvery their checkpoint
	// period; FailoverHost the index of the host that dies.
	Failover        bool
	Lease           time.Duration
	CheckpointEvery time.Duration
	FailoverHost    int
	// MoveCheckpointEvery is the hosts' checkpoint period in the
	// strategies' runs (0: none, every group's state is put at its move).
	// With checkpoints, a group that changed since its last one moves as a
	// delta against it, and a replicated group's destination holds the
	// checkpoint ahead of the move: the replicate strategy's fetches at
	// the moves then measure replication under load.
	MoveCheckpointEvery time.Duration
	// Partition adds the partition run (PartitionResult):
	// PartitionRecords records drained by one host and by Hosts hosts,
	// PartitionRounds times each.
	Partition        bool
	PartitionRecords int
	PartitionRounds  int
	// Quick is recorded in the report: the options are the small ones.
	Quick bool
	// Dir is where the NATS servers' and hosts' files go; empty: a new
	// temporary directory, removed at the end.
	Dir string
	// Progress receives one line per step as it starts; nil: none.
	Progress io.Writer
	// Logger receives the log of the host components; nil: discarded.
	Logger *slog.Logger
}

// DefaultMigrateOptions returns the configuration `sluice bench migrate`
// runs: 3 NATS servers, 3 hosts, 1,024 key groups, 32 MiB of state (the
// issue's figure is 256 MiB, too much for a 2-core machine shared with
// other work), 1,000 records/s, 10 s per phase with checkpoints every 5 s,
// and the failover run with a 2 s lease and checkpoints every second, the
// first host dying.
func DefaultMigrateOptions() MigrateOptions {
	return MigrateOptions{
		NATSServers: 3, Hosts: 3, KeyGroups: 1024, State: 32 << 20, ValueSize: 1024,
		Keys: 10_000, ZipfS: 1.2, Rate: 1000, Duration: 10 * time.Second, Window: 500 * time.Millisecond,
		Period: 5 * time.Millisecond, BatchSize: 256, Linger: 5 * time.Millisecond,
		Failover: true, Lease: 2 * time.Second, CheckpointEvery: time.Second, MoveCheckpointEvery: 5 * time.Second,
		Partition: true, PartitionRecords: 200_000, PartitionRounds: 2,
	}
}

// QuickMigrateOptions returns a small configuration of the same shape
// over one NATS server, for tests and a first look.
func QuickMigrateOptions() MigrateOptions {
	return MigrateOptions{
		Quick: true, NATSServers: 1, Hosts: 2, KeyGroups: 32, State: 256 << 10, ValueSize: 1024,
		Keys: 500, ZipfS: 1.2, Rate: 300, Duration: time.Second, Window: 300 * time.Millisecond,
		Period: 5 * time.Millisecond, BatchSize: 64, Linger: 5 * time.Millisecond,
		Failover: true, Lease: time.Second, CheckpointEvery: 250 * time.Millisecond, MoveCheckpointEvery: 250 * time.Millisecond,
		Partition: true, PartitionRecords: 5_000, PartitionRounds: 1,
	}
}

// validate checks the options and names the one at fault.
func (o *MigrateOptions) validate() error {
	switch {
	case o.NATSServers < 1:
		return fmt.Errorf("bench: migrate: %d NATS servers: want at least 1", o.NATSServers)
	case o.Hosts < 2:
		return fmt.Errorf("bench: migrate: %d hosts: want at least 2 (groups move between hosts)", o.Hosts)
	case o.KeyGroups < 4*o.Hosts:
		return fmt.Errorf("bench: migrate: %d key groups: want at least 4 per host (%d)", o.KeyGroups, 4*o.Hosts)
	case o.KeyGroups > state.MaxKeyGroups:
		return fmt.Errorf("bench: migrate: %d key groups: want at most %d", o.KeyGroups, state.MaxKeyGroups)
	case o.State < 0:
		return fmt.Errorf("bench: migrate: state %d bytes: want 0 or more", o.State)
	case o.ValueSize < 1:
		return fmt.Errorf("bench: migrate: value size %d: want at least 1 byte", o.ValueSize)
	case o.Keys < 1:
		return fmt.Errorf("bench: migrate: %d keys: want at least 1", o.Keys)
	case o.ZipfS <= 1:
		return fmt.Errorf("bench: migrate: Zipf exponent %v: want more than 1", o.ZipfS)
	case o.Rate <= 0:
		return fmt.Errorf("bench: migrate: rate %v: want a positive number of records per second", o.Rate)
	case o.Duration <= 0:
		return fmt.Errorf("bench: migrate: duration %v: want a positive duration per phase", o.Duration)
	case o.Window < 0:
		return fmt.Errorf("bench: migrate: negative window %v", o.Window)
	case o.Period <= 0:
		return fmt.Errorf("bench: migrate: period %v: want a positive duration", o.Period)
	case len(o.WordCount) == 0:
		return errors.New("bench: migrate: the wordcount plugin (plugins/wordcount compiled to WebAssembly) was not given")
	case o.SkipMoves && !o.Failover && !o.Partition:
		return errors.New("bench: migrate: nothing to run: the moves are skipped and the failover and partition runs are off")
	case o.Failover && o.Lease <= 0:
		return fmt.Errorf("bench: migrate: lease %v: want a positive duration", o.Lease)
	case o.MoveCheckpointEvery < 0:
		return fmt.Errorf("bench: migrate: checkpoint period of the moves %v: want 0 (none) or a positive duration", o.MoveCheckpointEvery)
	case o.Failover && o.CheckpointEvery <= 0:
		return fmt.Errorf("bench: migrate: checkpoint period %v: want a positive duration (a failover takes the groups from their checkpoints)", o.CheckpointEvery)
	case o.Failover && (o.FailoverHost < 0 || o.FailoverHost >= o.Hosts):
		return fmt.Errorf("bench: migrate: failover host %d: want 0 to %d", o.FailoverHost, o.Hosts-1)
	case o.Partition && o.PartitionRecords < 1:
		return fmt.Errorf("bench: migrate: partition run of %d records: want at least 1", o.PartitionRecords)
	case o.Partition && o.PartitionRounds < 1:
		return fmt.Errorf("bench: migrate: partition run of %d rounds: want at least 1", o.PartitionRounds)
	}
	for _, s := range o.Strategies {
		if _, err := ParseMigrateStrategy(s); err != nil {
			return err
		}
	}
	return nil
}

// MigrateReport is the outcome of RunMigrate. Its JSON form is what
// `sluice bench migrate --json` writes.
type MigrateReport struct {
	Machine     Machine   `json:"machine"`
	Date        time.Time `json:"date"`
	Quick       bool      `json:"quick"`
	NATSServers int       `json:"nats_servers"`
	Hosts       int       `json:"hosts"`
	KeyGroups   int       `json:"key_groups"`
	StateBytes  int64     `json:"state_bytes"`
	Rate        float64   `json:"rate"`
	DurationMs  float64   `json:"phase_duration_ms"`
	// Results holds a row per strategy and phase.
	Results []MigrateResult `json:"results"`
	// Ratios compare each Spacker strategy with the all-at-once baseline
	// in the 25% move, measured in this run.
	Ratios []MigrateRatio `json:"ratios"`
	// Targets are the migration targets checked against the
	// results.
	Targets []Target `json:"targets"`
	// Failover is the failover run, when it was made.
	Failover *FailoverResult `json:"failover,omitempty"`
	// Partition is the partition run, when it was made.
	Partition *PartitionResult `json:"partition,omitempty"`
	// Notes say what the run could not measure.
	Notes     []string `json:"notes,omitempty"`
	LoadAfter string   `json:"load_after,omitempty"`
}

// MigrateResult is one phase of one strategy's run.
type MigrateResult struct {
	Strategy string        `json:"strategy"`
	Knobs    cluster.Knobs `json:"knobs"`
	Phase    MigratePhase  `json:"phase"`
	// Moved is the number of groups that changed owner; Steps the
	// migration's steps.
	Moved int `json:"moved_groups"`
	Steps int `json:"steps"`
	// CompletionMs is from the migration's start to the end of its last
	// step.
	CompletionMs float64 `json:"completion_ms"`
	// Steady is the latency of the records due in the phase before the
	// move (the whole phase for PhaseSteady), During of those due from
	// the move's start to Window after its end.
	Steady   LatencyStats `json:"steady"`
	During   LatencyStats `json:"during_move"`
	P99Ratio float64      `json:"p99_ratio"`
	// Throughput is outputs per second reaching the sink over the phase;
	// DuringThroughput over the move.
	Throughput       float64 `json:"throughput"`
	DuringThroughput float64 `json:"during_throughput"`
	// ShippedBytes is what the hosts put in the checkpoint bucket during
	// the phase (checkpoints whole, deltas and amended metadata);
	// FetchedBytes what their installs got from it, and PrefetchedBytes
	// what their replicas got from it ahead of the installs.
	ShippedBytes    int64 `json:"shipped_bytes"`
	FetchedBytes    int64 `json:"fetched_bytes"`
	PrefetchedBytes int64 `json:"prefetched_bytes"`
	// Lost and Duplicated count, over the strategy's whole run, records
	// whose output never reached the sink or reached it twice: RunMigrate
	// fails unless both are 0.
	Lost       uint64 `json:"lost"`
	Duplicated uint64 `json:"duplicated"`
	// Retried counts, over the strategy's whole run, the rounds of the
	// hosts' migration loops that failed (a checkpoint put that timed out
	// on a busy machine) and were run again, as host/runner's hosts run
	// them.
	Retried int64 `json:"retried"`
}

// MigrateRatio compares a Spacker strategy with the all-at-once baseline
// in the 25% move.
type MigrateRatio struct {
	Strategy string `json:"strategy"`
	// SpikeRatio is all-at-once's during-move p99 over the strategy's
	// (the target: at least 10).
	SpikeRatio float64 `json:"p99_spike_ratio"`
	// CompletionRatio is the strategy's completion time over
	// all-at-once's (the target: at most 2).
	CompletionRatio float64 `json:"completion_ratio"`
}

// ErrMigrateOutput is wrapped by RunMigrate's error when a run's output is
// wrong: a record lost, duplicated or dead-lettered.
var ErrMigrateOutput = errors.New("bench: migrate: wrong output")

// RunMigrate runs, for each strategy, a keyed pipeline over several hosts
// and a NATS cluster in this process at a paced rate, and moves key groups
// between the hosts in the phases of MigratePhases; it checks that every
// record's output reached the sink exactly once and reports each phase's
// latencies, completion time, throughput and bytes shipped.
func RunMigrate(ctx context.Context, opts MigrateOptions) (rep *MigrateReport, err error) {
	if err := opts.validate(); err != nil {
		return nil, err
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	dir := opts.Dir
	if dir == "" {
		if dir, err = os.MkdirTemp("", "sluice-bench-migrate-"); err != nil {
			return nil, fmt.Errorf("bench: %w", err)
		}
		defer os.RemoveAll(dir)
	}
	e := &env{dir: dir, log: log, progress: opts.Progress, engines: map[bool]wasm.Engine{}}
	defer func() {
		if cerr := e.close(context.WithoutCancel(ctx)); cerr != nil && err == nil {
			err = cerr
		}
	}()
	e.step("migrate: starting %d NATS server(s) on 127.0.0.1", opts.NATSServers)
	servers, err := startNATS(ctx, filepath.Join(dir, "nats"), opts.NATSServers, log)
	if err != nil {
		return nil, err
	}
	defer func() {
		for _, s := range servers {
			if serr := s.Shutdown(context.WithoutCancel(ctx)); serr != nil && err == nil {
				err = fmt.Errorf("bench: migrate: %w", serr)
			}
		}
	}()
	urls := make([]string, len(servers))
	for i, s := range servers {
		urls[i] = s.ClientURL()
	}
	rep = &MigrateReport{
		Machine: CurrentMachine(), Date: time.Now().UTC(), Quick: opts.Quick, NATSServers: opts.NATSServers,
		Hosts: opts.Hosts, KeyGroups: opts.KeyGroups, StateBytes: opts.State, Rate: opts.Rate, DurationMs: ms(opts.Duration),
	}
	for i, st := range MigrateStrategies() {
		if opts.SkipMoves || len(opts.Strategies) > 0 && !slices.Contains(opts.Strategies, st.Name) {
			continue
		}
		rs, err := runMigrateStrategy(ctx, e, urls, i, st, opts)
		if err != nil {
			return nil, err
		}
		rep.Results = append(rep.Results, rs...)
	}
	if opts.Failover {
		if rep.Failover, err = runFailover(ctx, e, urls, opts); err != nil {
			return nil, err
		}
		rep.Notes = append(rep.Notes, failoverNotes(rep.Failover)...)
	}
	if opts.Partition {
		if rep.Partition, err = runPartition(ctx, e, urls, opts); err != nil {
			return nil, err
		}
	}
	if opts.SkipMoves {
		rep.Targets = append(failoverTargets(rep.Failover, opts.Hosts), partitionTargets(rep.Partition)...)
		rep.LoadAfter = loadAverage("/proc/loadavg")
		return rep, nil
	}
	rep.Ratios = migrateRatios(rep.Results)
	rep.Targets = append(migrateTargets(rep.Results, rep.Ratios), failoverTargets(rep.Failover, opts.Hosts)...)
	rep.Targets = append(rep.Targets, partitionTargets(rep.Partition)...)
	if opts.MoveCheckpointEvery == 0 {
		rep.Notes = append(rep.Notes, "replication: a replicated group's destination keeps a warm copy of its last checkpoint, but the hosts here took no periodic checkpoints (--move-checkpoint-every 0): every group's state was put at its move, and the replicate rows fetch as much as the others")
	} else {
		rep.Notes = append(rep.Notes, fmt.Sprintf("replication: the hosts checkpointed every %v; a group that changed since its checkpoint moved as a delta against it, and a replicated group's destination, holding the checkpoint ahead of the move, fetched the delta alone", opts.MoveCheckpointEvery))
	}
	for _, x := range rep.Results {
		if x.Retried > 0 && x.Phase == PhaseSteady {
			rep.Notes = append(rep.Notes, fmt.Sprintf("%s: %d rounds of the hosts' migration loops failed (a checkpoint put that timed out) and were run again", x.Strategy, x.Retried))
		}
	}
	rep.LoadAfter = loadAverage("/proc/loadavg")
	return rep, nil
}

// startNATS starts n embedded servers under dir: one alone, or n
// clustered on 127.0.0.1 with free ports, and waits until the cluster's
// JetStream is ready.
func startNATS(ctx context.Context, dir string, n int, log *slog.Logger) ([]*natsconn.Embedded, error) {
	if n == 1 {
		srv, err := natsconn.StartEmbedded(ctx, natsconn.Options{Dir: filepath.Join(dir, "0"), Port: -1, Logger: log})
		if err != nil {
			return nil, fmt.Errorf("bench: migrate: NATS server: %w", err)
		}
		return []*natsconn.Embedded{srv}, nil
	}
	var srvs []*natsconn.Embedded
	fail := func(err error) ([]*natsconn.Embedded, error) {
		for _, s := range srvs {
			_ = s.Shutdown(context.WithoutCancel(ctx))
		}
		return nil, fmt.Errorf("bench: migrate: NATS cluster: %w", err)
	}
	for i := range n {
		opts := natsconn.Options{
			Dir: filepath.Join(dir, strconv.Itoa(i)), Name: "bench-" + strconv.Itoa(i), Port: -1, Logger: log,
			Cluster: &natsconn.ClusterOptions{Name: "sluice-bench", Host: "127.0.0.1", Port: -1},
		}
		for _, s := range srvs {
			opts.Cluster.Routes = append(opts.Cluster.Routes, s.RouteURL())
		}
		var srv *natsconn.Embedded
		var err error
		if i == 0 {
			// The first member routes to itself, on a port picked here.
			for try := 1; ; try++ {
				port, perr := freePort()
				if perr != nil {
					return fail(perr)
				}
				opts.Cluster.Port = port
				opts.Cluster.Routes = []string{"nats-route://" + net.JoinHostPort("127.0.0.1", strconv.Itoa(port))}
				srv, err = natsconn.StartEmbedded(ctx, opts)
				if err == nil || !errors.Is(err, natsconn.ErrPortInUse) || try == 5 {
					break
				}
			}
		} else {
			srv, err = natsconn.StartEmbedded(ctx, opts)
		}
		if err != nil {
			return fail(err)
		}
		srvs = append(srvs, srv)
	}
	deadline := time.Now().Add(time.Minute)
	for !clusterReady(srvs) {
		if time.Now().After(deadline) {
			return fail(errors.New("JetStream has no meta leader with every server current after a minute"))
		}
		select {
		case <-time.After(25 * time.Millisecond):
		case <-ctx.Done():
			return fail(ctx.Err())
		}
	}
	return srvs, nil
}

// clusterReady reports whether the servers have a JetStream meta leader
// that counts every other one among its peers, all current.
func clusterReady(srvs []*natsconn.Embedded) bool {
	var leader *natsconn.Embedded
	for _, s := range srvs {
		switch {
		case s.Server().JetStreamIsLeader():
			leader = s
		case !s.Server().JetStreamIsCurrent():
			return false
		}
	}
	if leader == nil {
		return false
	}
	peers := leader.Server().JetStreamClusterPeers()
	for _, s := range srvs {
		if s != leader && !slices.Contains(peers, s.Name()) {
			return false
		}
	}
	return true
}

func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

// keyLog records, for each key, the positions of its records in publish
// order, so that the n-th count of a key names the record it stands for;
// the output's event time, its record's due time, shows the key's order
// kept.
type keyLog struct {
	mu   sync.Mutex
	pos  map[string][]uint64
	base int64   // the due time of position 1, in Unix nanoseconds
	rate float64 // records per second
}

// setStart records the due time of position 1.
func (l *keyLog) setStart(t time.Time) {
	l.mu.Lock()
	l.base = t.UnixNano()
	l.mu.Unlock()
}

func (l *keyLog) add(key string, pos uint64) {
	l.mu.Lock()
	l.pos[key] = append(l.pos[key], pos)
	l.mu.Unlock()
}

// seq returns the position the output (key, count n) stands for.
func (l *keyLog) seq(r *abi.Record) (uint64, error) {
	n, err := strconv.ParseUint(string(r.Value), 10, 64)
	if err != nil || n == 0 {
		return 0, fmt.Errorf("count %q", r.Value)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	ps := l.pos[string(r.Key)]
	if n > uint64(len(ps)) {
		return 0, fmt.Errorf("key %q counted %d times, published %d times", r.Key, n, len(ps))
	}
	pos := ps[n-1]
	if due := l.base + dueNs(pos-1, l.rate); r.Time != due {
		return 0, fmt.Errorf("key %q: its count %d carries the time of another record than its %d-th (position %d): the key's order was not kept", r.Key, n, n, pos)
	}
	return pos, nil
}

// publisher publishes paced records into the partition stream, each
// record's event time its due time, keys uniform or (once zipf is set)
// Zipf-distributed, and counts the records per key group.
type publisher struct {
	src    *pacedSource
	sink   *natsconn.JetStreamSink
	keys   *keyLog
	groups int
	uni    int

	mu    sync.Mutex
	zipf  *rand.Zipf
	loads []float64 // records per group since the last resetLoad
}

func (p *publisher) useZipf(z *rand.Zipf) {
	p.mu.Lock()
	p.zipf = z
	p.mu.Unlock()
}

// resetLoad returns the records per group since the last call and starts
// counting again.
func (p *publisher) resetLoad() map[int]float64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make(map[int]float64, len(p.loads))
	for g, n := range p.loads {
		if n > 0 {
			out[g] = n
		}
	}
	p.loads = make([]float64, p.groups)
	return out
}

func (p *publisher) run(ctx context.Context) error {
	buf := make([]connectors.Message, 256)
	for {
		n, err := p.src.Read(ctx, buf)
		if n > 0 {
			out := make([]connectors.Out, n)
			p.mu.Lock()
			for i := range n {
				pos := buf[i].Position
				var k uint64
				if p.zipf != nil {
					k = p.zipf.Uint64()
				} else {
					k = pos % uint64(p.uni)
				}
				key := "k" + strconv.FormatUint(k, 10)
				p.keys.add(key, pos)
				p.loads[state.KeyGroup([]byte(key), p.groups)]++
				out[i] = connectors.Out{
					Record: abi.Record{Key: []byte(key), Value: buf[i].Record.Value, Time: buf[i].Record.Time},
					ID:     "r/" + strconv.FormatUint(pos, 10),
				}
			}
			p.mu.Unlock()
			if werr := p.sink.Write(ctx, out); werr != nil {
				return fmt.Errorf("publishing: %w", werr)
			}
			if ferr := p.sink.Flush(ctx); ferr != nil {
				return fmt.Errorf("publishing: %w", ferr)
			}
		}
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
	}
}

// migHost is one host of a strategy's run.
type migHost struct {
	id    string
	nc    *nats.Conn
	cl    *cluster.Cluster
	ckpt  *checkpoint.Bucket
	store *state.Store
	src   *natsconn.PartitionedSource
	plug  *plugin.Plugin
	job   *exec.Job
	mig   *migrate.Host
	dead  *discardSink
	// out is the sink of the host's job; nil: the run's.
	out connectors.Sink
	// killed is set once the failover run killed the host: its job's and
	// loops' errors are those of the kill, and it does not leave the
	// cluster.
	killed bool

	cancel    context.CancelFunc
	jobDone   chan error
	migDone   chan error
	coordDone chan struct{} // nil unless the host coordinates (failover run)
	stopJoin  context.CancelFunc
}

// stop ends the host's job and migration loop and closes what it opened.
func (h *migHost) stop(ctx context.Context) error {
	var errs []error
	if h.cancel != nil {
		h.cancel()
		if err := <-h.jobDone; err != nil && !errors.Is(err, context.Canceled) && !h.killed {
			errs = append(errs, fmt.Errorf("host %s: job: %w", h.id, err))
		}
		if err := <-h.migDone; err != nil && !errors.Is(err, context.Canceled) && !h.killed {
			errs = append(errs, fmt.Errorf("host %s: migration: %w", h.id, err))
		}
		if h.coordDone != nil {
			<-h.coordDone
		}
	}
	if h.job != nil {
		errs = append(errs, h.job.Close(ctx))
	}
	if h.src != nil {
		errs = append(errs, h.src.Close())
	}
	if h.plug != nil {
		errs = append(errs, h.plug.Close(ctx))
	}
	if h.store != nil {
		errs = append(errs, h.store.Close())
	}
	if h.cl != nil && !h.killed {
		_ = h.cl.Leave(ctx)
	}
	if h.stopJoin != nil {
		h.stopJoin()
	}
	if h.nc != nil {
		h.nc.Close()
	}
	return errors.Join(errs...)
}

// run is one strategy's run: its NATS names, hosts and publisher.
type migRun struct {
	e        *env
	opts     MigrateOptions
	strategy MigrateStrategy
	pipeline string
	// lease is the hosts' lease (0: a minute), checkpointEvery their
	// checkpoint period (0: none), and coordinate whether each runs
	// migrate.Coordinate, as host/runner's hosts do: the failover run's.
	lease           time.Duration
	checkpointEvery time.Duration
	coordinate      bool
	// count ends the publisher after that many records; 0: never.
	count uint64
	// retried counts the failed rounds of the hosts' migration loops that
	// retry ran again.
	retried atomic.Int64
	hosts   []*migHost
	pub     *publisher
	sink    *latencySink
	start   time.Time
}

// phaseTimes are the times that cut a phase: its start, the move's start
// and end (zero for PhaseSteady), and its end.
type phaseTimes struct {
	start, moveStart, moveEnd, end time.Time
}

// setUp makes the run's partition stream (up to three replicas) and the
// publisher's connection to it, opens opts.Hosts hosts named h0, h1, ...
// over urls, spreads the key groups over them and makes the paced
// publisher (r.pub) with its source. closeRun stops the hosts and closes
// the stream's sink and connection; it is never nil, and must be called
// even when setUp fails.
func (r *migRun) setUp(ctx context.Context, urls []string) (a *cluster.Assignment, src *pacedSource, closeRun func() error, err error) {
	what := "bench: migrate " + r.strategy.Name
	var closers []func() error
	closeRun = func() error {
		var first error
		for i := len(closers) - 1; i >= 0; i-- {
			if cerr := closers[i](); cerr != nil && first == nil {
				first = cerr
			}
		}
		return first
	}
	opts := r.opts
	replicas := min(3, len(urls))
	pubConn, err := nats.Connect(strings.Join(urls, ","))
	if err != nil {
		return nil, nil, closeRun, fmt.Errorf("%s: %w", what, err)
	}
	closers = append(closers, func() error { pubConn.Close(); return nil })
	in, err := natsconn.NewJetStreamSink(ctx, pubConn, natsconn.JetStreamSinkConfig{
		Subject: r.prefix(), Stream: r.stream(), KeyGroups: opts.KeyGroups, KeyGroup: state.KeyGroup,
		CreateStream: &natsconn.StreamSpec{Subjects: []string{r.prefix() + ".*"}, Replicas: replicas},
		Mapping:      natsconn.Mapping{Time: true}, Logger: r.e.log,
	})
	if err != nil {
		return nil, nil, closeRun, fmt.Errorf("%s: the partition stream: %w", what, err)
	}
	closers = append(closers, func() error { _ = in.Close(); return nil })
	closers = append(closers, func() error {
		var first error
		for _, h := range r.hosts {
			if serr := h.stop(context.WithoutCancel(ctx)); serr != nil && first == nil {
				first = fmt.Errorf("%s: %w", what, serr)
			}
		}
		return first
	})
	ids := make([]string, opts.Hosts)
	for i := range ids {
		ids[i] = "h" + strconv.Itoa(i)
	}
	for i, id := range ids {
		h, err := r.openHost(ctx, urls[i%len(urls)], id, replicas)
		if err != nil {
			return nil, nil, closeRun, fmt.Errorf("%s: host %s: %w", what, id, err)
		}
		r.hosts = append(r.hosts, h)
	}
	a, err = r.hosts[0].cl.Update(ctx, func(a *cluster.Assignment) error {
		a.Owners = cluster.Spread(opts.KeyGroups, ids)
		return nil
	})
	if err != nil {
		return nil, nil, closeRun, fmt.Errorf("%s: %w", what, err)
	}
	gen, err := generator.New(generator.Config{Mode: generator.Sequence, Rate: opts.Rate, Count: r.count, Name: "paced"})
	if err != nil {
		return nil, nil, closeRun, fmt.Errorf("%s: %w", what, err)
	}
	src = newPacedSource(gen, opts.Rate, false)
	r.pub = &publisher{src: src, sink: in, keys: &keyLog{pos: map[string][]uint64{}, rate: opts.Rate}, groups: opts.KeyGroups, uni: opts.Keys, loads: make([]float64, opts.KeyGroups)}
	return a, src, closeRun, nil
}

func runMigrateStrategy(ctx context.Context, e *env, urls []string, index int, st MigrateStrategy, opts MigrateOptions) (results []MigrateResult, err error) {
	r := &migRun{e: e, opts: opts, strategy: st, pipeline: "bench-migrate-" + strconv.Itoa(index), checkpointEvery: opts.MoveCheckpointEvery}
	e.step("migrate %s: %d hosts over %d NATS server(s), %d key groups, %s of state, %s records/s, %v per phase",
		st.Name, opts.Hosts, len(urls), opts.KeyGroups, byteSize(int(opts.State)), thousands(opts.Rate), opts.Duration)
	a, src, closeRun, err := r.setUp(ctx, urls)
	defer func() {
		if cerr := closeRun(); cerr != nil && err == nil {
			err = cerr
		}
	}()
	if err != nil {
		return nil, err
	}
	r.sink = newLatencySink(uint64(opts.Rate*opts.Duration.Seconds()*5), r.pub.keys.seq)
	e.step("migrate %s: preloading %s of ballast and starting the hosts", st.Name, byteSize(int(opts.State)))
	for _, h := range r.hosts {
		if err := r.startHost(ctx, h, migrate.Owned(a, h.id)); err != nil {
			return nil, fmt.Errorf("bench: migrate %s: host %s: %w", st.Name, h.id, err)
		}
	}
	if err := src.Open(ctx, 0); err != nil {
		return nil, fmt.Errorf("bench: migrate: %w", err)
	}
	r.start = src.openedAt()
	r.pub.keys.setStart(r.start)
	pubCtx, stopPub := context.WithCancel(ctx)
	defer stopPub()
	pubDone := make(chan error, 1)
	go func() { pubDone <- r.pub.run(pubCtx) }()

	var times []phaseTimes
	for _, ph := range MigratePhases() {
		before := r.stats()
		res := MigrateResult{Strategy: st.Name, Knobs: st.Knobs, Phase: ph}
		pt, err := r.runPhase(ctx, ph, &res, pubDone)
		if err != nil {
			return nil, fmt.Errorf("bench: migrate %s, %s: %w", st.Name, ph, err)
		}
		after := r.stats()
		res.ShippedBytes = after.PutBytes + after.AmendBytes + after.DeltaBytes - before.PutBytes - before.AmendBytes - before.DeltaBytes
		res.FetchedBytes = after.GetBytes - before.GetBytes
		res.PrefetchedBytes = after.PrefetchBytes - before.PrefetchBytes
		times = append(times, pt)
		results = append(results, res)
	}
	events := src.end()
	if err := <-pubDone; err != nil {
		return nil, fmt.Errorf("bench: migrate %s: %w", st.Name, err)
	}
	e.step("migrate %s: waiting for the outputs of %s records", st.Name, thousands(float64(events)))
	deadline := time.Now().Add(time.Minute)
	for r.sink.seen() < events && time.Now().Before(deadline) {
		select {
		case <-time.After(20 * time.Millisecond):
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	var dead uint64
	for _, h := range r.hosts {
		dead += h.job.Status().Dead
	}
	if err := r.sink.check(events, dead); err != nil {
		return nil, fmt.Errorf("bench: migrate %s: %w", st.Name, errors.Join(ErrMigrateOutput, err))
	}
	for i := range results {
		r.summarise(&results[i], times[i])
		results[i].Retried = r.retried.Load()
	}
	return results, nil
}

func (r *migRun) prefix() string { return "mig" + strings.TrimPrefix(r.pipeline, "bench-migrate-") }
func (r *migRun) stream() string { return "MIG" + strings.TrimPrefix(r.pipeline, "bench-migrate-") }

// stats sums the hosts' checkpoint bucket counters.
func (r *migRun) stats() checkpoint.Stats {
	var s checkpoint.Stats
	for _, h := range r.hosts {
		x := h.ckpt.Stats()
		s.PutBytes += x.PutBytes
		s.AmendBytes += x.AmendBytes
		s.DeltaBytes += x.DeltaBytes
		s.GetBytes += x.GetBytes
		s.PrefetchBytes += x.PrefetchBytes
	}
	return s
}

// openHost connects host id to NATS, joins the cluster and opens its
// checkpoint bucket, store, source and plugin.
func (r *migRun) openHost(ctx context.Context, url, id string, replicas int) (h *migHost, err error) {
	opts := r.opts
	h = &migHost{id: id}
	defer func() {
		if err != nil {
			_ = h.stop(context.WithoutCancel(ctx))
		}
	}()
	if h.nc, err = nats.Connect(url); err != nil {
		return nil, err
	}
	js, err := jetstream.New(h.nc)
	if err != nil {
		return nil, err
	}
	text := []byte("name: " + r.pipeline + "\n")
	// The assignment and lease buckets have one replica: with three, a
	// host released groups it had already released and failed, as it
	// would if a read were served by a replica that lags.
	// The lease is long but in the failover run: no host fails in the
	// others, and once a destination took a live source for dead and
	// released its moves itself, as a listing of the live hosts that
	// missed a lease being renewed would make it do.
	lease := r.lease
	if lease == 0 {
		lease = time.Minute
	}
	if h.cl, err = cluster.Open(ctx, js, cluster.Config{Pipeline: r.pipeline, Text: text, KeyGroups: opts.KeyGroups, Replicas: 1, Lease: lease, Logger: r.e.log}); err != nil {
		return nil, err
	}
	joinCtx, stopJoin := context.WithCancel(context.WithoutCancel(ctx))
	h.stopJoin = stopJoin
	if err := h.cl.Join(joinCtx, cluster.HostInfo{ID: id}); err != nil {
		return nil, err
	}
	if h.ckpt, err = checkpoint.Open(ctx, js, r.pipeline, checkpoint.Options{Host: id, Replicas: replicas, Logger: r.e.log}); err != nil {
		return nil, err
	}
	if h.store, err = state.Open(filepath.Join(r.e.dir, r.pipeline, id), state.Options{KeyGroups: opts.KeyGroups, Logger: r.e.log}); err != nil {
		return nil, err
	}
	if h.src, err = natsconn.NewPartitionedSource(h.nc, natsconn.PartitionedSourceConfig{
		Stream: r.stream(), Prefix: r.prefix(), KeyGroups: opts.KeyGroups, Logger: r.e.log,
	}); err != nil {
		return nil, err
	}
	eng, err := r.e.engine(ctx, true)
	if err != nil {
		return nil, err
	}
	if h.plug, err = plugin.Load(ctx, eng, "wordcount.wasm", opts.WordCount, plugin.KindKeyed, plugin.WithLogger(r.e.log)); err != nil {
		return nil, err
	}
	return h, nil
}

// ballastTable is the table preloaded with each group's ballast.
const ballastTable = "ballast"

// startHost commits the ballast of the groups host h owns into its store,
// makes its job over them with the run's sink, and starts the job and
// its migration loop.
func (r *migRun) startHost(ctx context.Context, h *migHost, groups []int) error {
	opts := r.opts
	perGroup := opts.State / int64(opts.KeyGroups)
	values := int((perGroup + int64(opts.ValueSize) - 1) / int64(opts.ValueSize))
	if perGroup == 0 {
		values = 0
	}
	tb := h.store.Table(ballastTable)
	// Keys of the ballast, drawn until each owned group has its values
	// (a key belongs to the group it hashes to).
	need := make(map[int]int, len(groups))
	for _, kg := range groups {
		need[kg] = values
	}
	left := values * len(groups)
	rng := rand.New(rand.NewPCG(uint64(len(groups)), 17))
	for i := 0; left > 0; i++ {
		key := []byte("ballast/" + strconv.Itoa(i))
		kg := state.KeyGroup(key, opts.KeyGroups)
		n, ok := need[kg]
		if !ok || n == 0 {
			continue
		}
		need[kg], left = n-1, left-1
		v := make([]byte, min(int64(opts.ValueSize), perGroup-int64((values-n)*opts.ValueSize)))
		for j := range v {
			v[j] = byte(rng.Uint32())
		}
		tb.Group(kg).Put(key, v)
	}
	if err := h.store.Commit(nil); err != nil {
		return fmt.Errorf("committing the ballast: %w", err)
	}
	h.dead = &discardSink{name: "dead-letters"}
	out := h.out
	if out == nil {
		out = r.sink
	}
	var err error
	h.job, err = exec.New(ctx, exec.Config{
		Name:       r.pipeline,
		Sources:    []exec.Input{{Name: "in", Source: h.src}},
		Operators:  []exec.Operator{{Name: "count", Kind: plugin.KindKeyed, Plugin: h.plug, Parallelism: 1, Tables: []string{tableCounts}}},
		Sinks:      []exec.Output{{Name: "latency", Sink: out}},
		DeadLetter: h.dead,
		Store:      h.store,
		BatchSize:  opts.BatchSize,
		Linger:     opts.Linger,
		Groups:     groups,
		Logger:     r.e.log,
	})
	if err != nil {
		return err
	}
	h.mig = &migrate.Host{ID: h.id, Job: h.job, Cluster: h.cl, Checkpoints: h.ckpt, Logger: r.e.log, CheckpointEvery: r.checkpointEvery}
	runCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	h.cancel = cancel
	h.jobDone, h.migDone = make(chan error, 1), make(chan error, 1)
	go func() { h.jobDone <- h.job.Run(runCtx) }()
	if r.coordinate || r.checkpointEvery > 0 {
		// As host/runner's hosts do, a failed round of the migration loop
		// (a checkpoint put that timed out on a busy machine) is logged
		// and run again after a second.
		go func() { h.migDone <- r.retry(runCtx, h.id, func() error { return h.mig.Run(runCtx, opts.Period) }) }()
	} else {
		go func() { h.migDone <- h.mig.Run(runCtx, opts.Period) }()
	}
	if r.coordinate {
		h.coordDone = make(chan struct{})
		go func() {
			defer close(h.coordDone)
			migrate.Coordinate(runCtx, h.cl, h.id, coordinatePeriod, r.e.log)
		}()
	}
	return nil
}

// runPhase runs phase ph: for a move, half the duration steady, then the
// migration to the phase's owners, then until Window after it ends and
// the duration has passed.
func (r *migRun) runPhase(ctx context.Context, ph MigratePhase, res *MigrateResult, pubDone <-chan error) (phaseTimes, error) {
	var pt phaseTimes
	pt.start = time.Now()
	wait := func(until time.Time) error {
		select {
		case <-time.After(time.Until(until)):
			return r.hostsOK()
		case err := <-pubDone:
			return fmt.Errorf("the publisher stopped: %v", err)
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	if ph == PhaseSteady {
		r.e.step("migrate %s: %s for %v", r.strategy.Name, ph, r.opts.Duration)
		pt.end = pt.start.Add(r.opts.Duration)
		return pt, wait(pt.end)
	}
	if ph == PhaseZipf {
		r.pub.useZipf(rand.NewZipf(rand.New(rand.NewPCG(1, 2)), r.opts.ZipfS, 1, uint64(r.opts.Keys-1)))
		r.pub.resetLoad()
	}
	if err := wait(pt.start.Add(r.opts.Duration / 2)); err != nil {
		return pt, err
	}
	c := r.hosts[0].cl
	a, err := c.Assignment(ctx)
	if err != nil {
		return pt, err
	}
	var load map[int]float64
	var owners []string
	switch ph {
	case PhaseMove25:
		owners = moveQuarter(a.Owners, r.hosts[0].id, r.hosts[1].id)
	case PhaseMove100:
		owners = rotate(a.Owners, r.ids())
	case PhaseZipf:
		load = r.pub.resetLoad()
		owners = balanceLoad(a.Owners, r.ids(), load)
	}
	for g := range owners {
		if owners[g] != a.Owners[g] {
			res.Moved++
		}
	}
	r.e.step("migrate %s: %s: moving %d of %d groups", r.strategy.Name, ph, res.Moved, len(owners))
	pt.moveStart = time.Now()
	if res.Moved > 0 {
		a, err = migrate.Start(ctx, c, string(ph)+"-"+r.strategy.Name, owners, r.strategy.Knobs, load)
		if err != nil {
			return pt, err
		}
		res.Steps = len(a.Migration.Steps)
		for {
			a, err := c.Assignment(ctx)
			if err != nil {
				return pt, err
			}
			if a.Migration == nil {
				break
			}
			if err := wait(time.Now().Add(10 * time.Millisecond)); err != nil {
				return pt, err
			}
		}
	}
	pt.moveEnd = time.Now()
	res.CompletionMs = ms(pt.moveEnd.Sub(pt.moveStart))
	r.e.step("migrate %s: %s: %d steps done in %.0f ms", r.strategy.Name, ph, res.Steps, res.CompletionMs)
	pt.end = pt.start.Add(r.opts.Duration)
	if after := pt.moveEnd.Add(r.opts.Window); after.After(pt.end) {
		pt.end = after
	}
	return pt, wait(pt.end)
}

// retryPause is how long a failed migration loop waits before it runs
// again: host/runner's pause.
const retryPause = time.Second

// retry runs loop until ctx is done, running it again, after a warning
// and retryPause, whenever it fails, and returns ctx's error.
func (r *migRun) retry(ctx context.Context, host string, loop func() error) error {
	for {
		err := loop()
		if ctx.Err() != nil {
			return ctx.Err()
		}
		r.retried.Add(1)
		r.e.log.Warn("bench: migrate: a host's migration loop failed; running it again", "host", host, "err", err, "in", retryPause)
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(retryPause):
		}
	}
}

// hostsOK returns the first error of a host's job or migration loop that
// stopped.
func (r *migRun) hostsOK() error {
	for _, h := range r.hosts {
		if h.killed {
			continue
		}
		select {
		case err := <-h.jobDone:
			h.jobDone <- err
			return fmt.Errorf("host %s: the job stopped: %v", h.id, err)
		case err := <-h.migDone:
			h.migDone <- err
			return fmt.Errorf("host %s: the migration loop stopped: %v", h.id, err)
		default:
		}
	}
	return nil
}

func (r *migRun) ids() []string {
	ids := make([]string, len(r.hosts))
	for i, h := range r.hosts {
		ids[i] = h.id
	}
	return ids
}

// moveQuarter returns owners with a quarter of the groups (as many as
// from owns, if fewer) moved from from to to, in group order.
func moveQuarter(owners []string, from, to string) []string {
	out := slices.Clone(owners)
	n := len(owners) / 4
	for g := range out {
		if n > 0 && out[g] == from {
			out[g] = to
			n--
		}
	}
	return out
}

// rotate gives every group the host after its owner in ids.
func rotate(owners, ids []string) []string {
	out := make([]string, len(owners))
	for g, o := range owners {
		i := slices.Index(ids, o)
		out[g] = ids[(i+1)%len(ids)]
	}
	return out
}

// balanceLoad moves groups from the most to the least loaded host while
// a move narrows the gap between them, hottest group first: a rebalance
// by measured load that moves few groups.
func balanceLoad(owners, ids []string, load map[int]float64) []string {
	out := slices.Clone(owners)
	per := map[string]float64{}
	for g, o := range out {
		per[o] += load[g]
	}
	for range len(out) {
		hi, lo := ids[0], ids[0]
		for _, id := range ids {
			if per[id] > per[hi] {
				hi = id
			}
			if per[id] < per[lo] {
				lo = id
			}
		}
		gap := per[hi] - per[lo]
		best := -1
		for g, o := range out {
			// A group that narrows the gap: its load under it.
			if o == hi && load[g] > 0 && load[g] < gap && (best < 0 || load[g] > load[best]) {
				best = g
			}
		}
		if best < 0 {
			break
		}
		out[best] = lo
		per[hi] -= load[best]
		per[lo] += load[best]
	}
	return out
}

// seen returns how many positions have an output.
func (s *latencySink) seen() uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	var n uint64
	for _, l := range s.latency {
		if l >= 0 {
			n++
		}
	}
	return n
}

// summarise fills res's latencies and throughputs from the sink, by each
// record's due time against the phase's times.
func (r *migRun) summarise(res *MigrateResult, pt phaseTimes) {
	s := r.sink
	s.mu.Lock()
	defer s.mu.Unlock()
	base := r.start.UnixNano()
	var steady, during []int64
	var outs, outsDuring int
	moveEnd := pt.moveEnd.Add(r.opts.Window)
	for i, l := range s.latency {
		due := base + dueNs(uint64(i), r.opts.Rate)
		if l >= 0 {
			at := due + l
			if at >= pt.start.UnixNano() && at < pt.end.UnixNano() {
				outs++
			}
			if !pt.moveStart.IsZero() && at >= pt.moveStart.UnixNano() && at < pt.moveEnd.UnixNano() {
				outsDuring++
			}
		}
		if due < pt.start.UnixNano() || due >= pt.end.UnixNano() {
			continue
		}
		switch {
		case pt.moveStart.IsZero() || due < pt.moveStart.UnixNano():
			steady = append(steady, l)
		case due < moveEnd.UnixNano():
			during = append(during, l)
		}
	}
	res.Steady, res.During = latencyStats(steady), latencyStats(during)
	if res.Steady.P99Ms > 0 && res.During.Events > 0 {
		res.P99Ratio = res.During.P99Ms / res.Steady.P99Ms
	}
	if d := pt.end.Sub(pt.start); d > 0 {
		res.Throughput = float64(outs) / d.Seconds()
	}
	if d := pt.moveEnd.Sub(pt.moveStart); d > 0 && !pt.moveStart.IsZero() {
		res.DuringThroughput = float64(outsDuring) / d.Seconds()
	}
}

// migrateRatios compares each Spacker strategy with all-at-once in the
// 25% move.
func migrateRatios(rs []MigrateResult) []MigrateRatio {
	var base *MigrateResult
	for i := range rs {
		if rs[i].Strategy == StrategyAllAtOnce && rs[i].Phase == PhaseMove25 {
			base = &rs[i]
		}
	}
	if base == nil {
		return nil
	}
	var out []MigrateRatio
	for _, x := range rs {
		if x.Phase != PhaseMove25 || !strings.HasPrefix(x.Strategy, "spacker") {
			continue
		}
		var q MigrateRatio
		q.Strategy = x.Strategy
		if x.During.P99Ms > 0 {
			q.SpikeRatio = base.During.P99Ms / x.During.P99Ms
		}
		if base.CompletionMs > 0 {
			q.CompletionRatio = x.CompletionMs / base.CompletionMs
		}
		out = append(out, q)
	}
	return out
}

// migrateTargets checks the migration targets that one run can
// measure.
func migrateTargets(rs []MigrateResult, ratios []MigrateRatio) []Target {
	ts := []Target{{
		Name: "migration: nothing lost, nothing duplicated (checked by sequence number)",
		Want: "0 lost, 0 duplicated", Got: fmt.Sprintf("0 lost, 0 duplicated in %d phase runs", len(rs)), Met: true,
	}}
	for _, q := range ratios {
		ts = append(ts,
			Target{
				Name: fmt.Sprintf("25%% move, %s: p99 during the move, all-at-once's over this", q.Strategy),
				Want: ">= 10x", Got: fmt.Sprintf("%.2fx", q.SpikeRatio), Met: q.SpikeRatio >= 10,
			},
			Target{
				Name: fmt.Sprintf("25%% move, %s: completion time over all-at-once's", q.Strategy),
				Want: "<= 2x", Got: fmt.Sprintf("%.2fx", q.CompletionRatio), Met: q.CompletionRatio > 0 && q.CompletionRatio <= 2,
			})
	}
	return append(ts, replicationTarget(rs))
}

// replicationTarget compares the bytes fetched at the 25% and 100% moves
// by the replicate strategy (every other group replicated) with those of
// the same strategy without replication, measured in this run: in
// proportion means within 0.2 of the share not replicated.
func replicationTarget(rs []MigrateResult) Target {
	t := Target{Name: "replication cuts the bytes fetched at migration in proportion to the replicated share (50%: about 0.5x)", Want: "0.3x to 0.7x"}
	fetched := func(strategy string) (int64, bool) {
		var n int64
		found := 0
		for _, x := range rs {
			if x.Strategy == strategy && (x.Phase == PhaseMove25 || x.Phase == PhaseMove100) {
				n += x.FetchedBytes
				found++
			}
		}
		return n, found == 2
	}
	without, ok1 := fetched("spacker-b8-keygroup")
	with, ok2 := fetched("spacker-b8-replicate2")
	switch {
	case !ok1 || !ok2:
		t.Got = "not measured: run spacker-b8-keygroup and spacker-b8-replicate2"
	case without == 0:
		t.Got = "not measured: nothing was fetched at the moves"
	default:
		r := float64(with) / float64(without)
		t.Got = fmt.Sprintf("%.2fx (%s against %s fetched at the moves)", r, byteSize(int(with)), byteSize(int(without)))
		t.Met = r >= 0.3 && r <= 0.7
	}
	return t
}

// WriteJSON writes the report as indented JSON.
func (r *MigrateReport) WriteJSON(w io.Writer) error { return writeJSON(w, r) }

// WriteTable prints the report as aligned tables with units.
func (r *MigrateReport) WriteTable(w io.Writer) error {
	var b strings.Builder
	writeHeader(&b, "Sluice key group migration", r.Date, r.Quick, r.Machine, r.LoadAfter)
	fmt.Fprintf(&b, "%d NATS server(s), %d hosts in one process, %d key groups, %s of keyed state, %s records/s, %.1f s per phase\n",
		r.NATSServers, r.Hosts, r.KeyGroups, byteSize(int(r.StateBytes)), thousands(r.Rate), r.DurationMs/1e3)
	fmt.Fprintln(&b, "latency: from a record's due time at the publisher to its output at the sink; checked: every record's output exactly once")
	fmt.Fprintln(&b)
	var tw *tabwriter.Writer
	if len(r.Results) == 0 {
		fmt.Fprintln(&b, "key group moves: not run")
	} else {
		tw = table(&b)
		fmt.Fprintln(tw, "strategy\tphase\tmoved\tsteps\tcompletion\tsteady p99\tduring p99\tduring max\tp99 ratio\tthroughput\tduring move\tshipped\tfetched\tprefetched\tlost\tdup\t")
		for _, x := range r.Results {
			name := x.Strategy
			fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%.0f ms\t%.1f ms\t%.1f ms\t%.1f ms\t%.2f\t%s/s\t%s/s\t%s\t%s\t%s\t%d\t%d\t\n",
				name, x.Phase, x.Moved, x.Steps, x.CompletionMs, x.Steady.P99Ms, x.During.P99Ms, x.During.MaxMs, x.P99Ratio,
				thousands(x.Throughput), thousands(x.DuringThroughput), byteSize(int(x.ShippedBytes)), byteSize(int(x.FetchedBytes)),
				byteSize(int(x.PrefetchedBytes)), x.Lost, x.Duplicated)
		}
		tw.Flush()
	}
	if len(r.Ratios) > 0 {
		fmt.Fprintln(&b, "\n25% move against all-at-once")
		tw = table(&b)
		fmt.Fprintln(tw, "strategy\tp99 spike ratio (all-at-once / this)\tcompletion ratio (this / all-at-once)\t")
		for _, q := range r.Ratios {
			fmt.Fprintf(tw, "%s\t%.2fx\t%.2fx\t\n", q.Strategy, q.SpikeRatio, q.CompletionRatio)
		}
		tw.Flush()
	}
	if f := r.Failover; f != nil {
		fmt.Fprintf(&b, "\nfailover: host %s killed (kill -9 emulated) with %d of %d groups, lease %.0f ms, checkpoints every %.0f ms; times from the kill\n",
			f.Host, f.Groups, r.KeyGroups, f.LeaseMs, f.CheckpointEveryMs)
		tw = table(&b)
		fmt.Fprintln(tw, "lease expired\tgroups installed\tfirst output (last group)\tserving again (last group)\tbound: lease + load + replay\tlongest group replay\treplayed\tfetched\tsteady p99\tduring p99\tduring max\tloop retries\tlost\tdup\t")
		fmt.Fprintf(tw, "%.0f ms\t%.0f ms\t%.0f ms\t%.0f ms\t%.0f + %.0f + %.0f = %.0f ms\t%.0f ms\t%d\t%s\t%.1f ms\t%.1f ms\t%.1f ms\t%d\t%d\t%d\t\n",
			f.ExpiredMs, f.InstalledMs, f.FirstOutputMs, f.ServingMs, f.LeaseMs, f.CheckpointLoadMs, f.ReplayMs, f.BoundMs,
			f.GroupReplayMs, f.Replayed, byteSize(int(f.FetchedBytes)), f.Steady.P99Ms, f.During.P99Ms, f.During.MaxMs, f.Retried, f.Lost, f.Duplicated)
		tw.Flush()
	}
	if r.Partition != nil {
		writePartition(&b, r.Partition)
	}
	for _, n := range r.Notes {
		fmt.Fprintln(&b, "note: "+n)
	}
	writeTargets(&b, r.Targets)
	_, err := io.WriteString(w, b.String())
	return err
}
