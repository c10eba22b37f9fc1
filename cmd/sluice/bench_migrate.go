package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/sluicehq/sluice/host/bench"
	"github.com/sluicehq/sluice/host/pipeline"
	"github.com/sluicehq/sluice/state"
)

func newBenchMigrateCmd() *cobra.Command {
	var (
		quick       bool
		jsonFile    string
		strategies  []string
		natsServers int
		hosts       int
		keyGroups   int
		stateSize   string
		rate        float64
		duration    time.Duration
		profile     string
		moves       bool
		failover    bool
		partition   bool
		lease       time.Duration
		ckptEvery   time.Duration
		moveCkpt    time.Duration
		logs        logFlags
	)
	cmd := &cobra.Command{
		Use:   "migrate [--state 32MiB] [--key-groups 1024] [--rate N] [--duration D] [--strategy S] [--moves=false] [--failover=false] [--partition=false] [--lease D] [--checkpoint-every D] [--move-checkpoint-every D] [--quick] [--json FILE]",
		Short: "Measure key group migrations between hosts under load: nothing lost, latency during the moves, completion time, bytes shipped",
		Long: `Build plugins/wordcount and, in this process, start --nats-servers embedded
NATS servers (clustered on 127.0.0.1 when more than one) and --hosts hosts of
one keyed pipeline, each a job with its own store reading the key groups it
owns from a partition stream, stepping migrations through the assignment and
checkpoint buckets. Before the run each group's ballast (--state in all, in
1 KiB values) is committed into its owner's store, so a move ships it. A paced
publisher writes --rate records/s into the partition stream, each with its
sequence number and due time; the sink checks by sequence number that every
record's output arrives exactly once (the command fails otherwise) and records
its latency from the due time.

For each strategy (Spacker with batches of 8 per source host in group order,
hottest first, and with every other group marked replicated; the all-at-once
and fluid baselines) it runs four phases of --duration each: steady, a move of
a quarter of the groups from one host to another, a move of every group to a
new owner, and, with the keys drawn from a Zipf distribution, a rebalance by
the groups' measured load, hottest first. A move phase runs half its duration
before the move (its steady reference) and goes on until the move is over.

It prints per strategy and phase the groups moved, the steps, the completion
time, the p99 latency during the move against before it, the throughput, the
bytes put in the checkpoint bucket, fetched from it by the installs and
prefetched by replicas, and, in the 25% move, each Spacker setting against
all-at-once (p99 spike and completion time). A move marked replicated has its
destination keep a warm copy of the group's last checkpoint. The hosts
checkpoint every --move-checkpoint-every (5s; --quick: 250ms), so a group that
changed since its checkpoint moves as a delta against it and a replicated
group's destination fetches the delta alone: the replicate strategy's fetches
at the moves, against the same strategy's without replication, measure
replication under load (a target line). With --move-checkpoint-every 0 the
hosts take no periodic checkpoints, every group's state is put at its move,
and replication saves nothing; the report says so.

Then (unless --failover=false; --moves=false runs it alone) the failover run:
fresh hosts with a --lease lease and checkpoints every --checkpoint-every, each
running the coordinator of a real host (the live host with the lowest id
rebalances when the set of live hosts changes). After half of --duration under
the load (at least two checkpoint periods), the first host dies as kill -9
would kill it: its outputs are cut off and its NATS connection closed at once,
so it stops renewing its lease, processing, committing and checkpointing, and
hands nothing over. The survivors find its lease expired, rebalance its groups
onto themselves, install them from their last checkpoints and replay their
input from the checkpoints' positions; the sink drops the replay's repeated
outputs by id, as a JetStream sink's stream does. It prints, from the kill, when
the survivors saw the lease expire, when the last of the dead host's groups
was installed, when the last of them made its first output, and when the last
of them was serving again (every record due at the kill output), the records
replayed, and the target: serving again within lease + checkpoint load +
replay, 0 lost, 0 duplicated.

Then (unless --partition=false) the partition run, the cost of running
partitioned over hosts instead of in one process: a backlog of records (200,000;
--quick: 5,000) is published into a fresh partition stream before any host
starts, then drained once by one host that owns every key group and once by
--hosts hosts that own a share each, twice each (--quick: once), the order
alternating. It prints each drain's rate from the first output to the last and
the process's CPU time per record over the same span (hosts and NATS servers
together: all run in this process), their medians, and partitioned over one.
On one machine the hosts share its cores, so this is the cost of the
partitioning, not what more machines would gain. Progress goes to stderr.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			opts := bench.DefaultMigrateOptions()
			if quick {
				opts = bench.QuickMigrateOptions()
			}
			fl := cmd.Flags()
			for _, list := range strategies {
				for _, name := range strings.Split(list, ",") {
					name = strings.TrimSpace(name)
					if _, err := bench.ParseMigrateStrategy(name); err != nil {
						return &usageError{fmt.Sprintf("--strategy %q: %v", name, err)}
					}
					opts.Strategies = append(opts.Strategies, name)
				}
			}
			if fl.Changed("nats-servers") {
				if natsServers < 1 {
					return &usageError{fmt.Sprintf("--nats-servers %d: want at least 1", natsServers)}
				}
				opts.NATSServers = natsServers
			}
			if fl.Changed("hosts") {
				if hosts < 2 {
					return &usageError{fmt.Sprintf("--hosts %d: want at least 2 (groups move between hosts)", hosts)}
				}
				opts.Hosts = hosts
			}
			if fl.Changed("key-groups") {
				opts.KeyGroups = keyGroups
			}
			if opts.KeyGroups < 4*opts.Hosts || opts.KeyGroups > state.MaxKeyGroups {
				return &usageError{fmt.Sprintf("--key-groups %d: want 4 per host (%d) to %d", opts.KeyGroups, 4*opts.Hosts, state.MaxKeyGroups)}
			}
			if fl.Changed("state") {
				n, err := pipeline.ParseSize(stateSize)
				if err != nil {
					return &usageError{fmt.Sprintf("--state: %v", err)}
				}
				opts.State = n
			}
			if fl.Changed("rate") {
				if rate <= 0 {
					return &usageError{fmt.Sprintf("--rate %v: want a positive number of records per second", rate)}
				}
				opts.Rate = rate
			}
			if fl.Changed("duration") {
				if duration <= 0 {
					return &usageError{fmt.Sprintf("--duration %v: want a positive duration per phase", duration)}
				}
				opts.Duration = duration
			}
			opts.SkipMoves, opts.Failover, opts.Partition = !moves, failover, partition
			if !moves && !failover && !partition {
				return &usageError{"--moves=false, --failover=false and --partition=false: nothing to run"}
			}
			if fl.Changed("lease") {
				if lease <= 0 {
					return &usageError{fmt.Sprintf("--lease %v: want a positive duration", lease)}
				}
				opts.Lease = lease
			}
			if fl.Changed("checkpoint-every") {
				if ckptEvery <= 0 {
					return &usageError{fmt.Sprintf("--checkpoint-every %v: want a positive duration", ckptEvery)}
				}
				opts.CheckpointEvery = ckptEvery
			}
			if fl.Changed("move-checkpoint-every") {
				if moveCkpt < 0 {
					return &usageError{fmt.Sprintf("--move-checkpoint-every %v: want 0 (none) or a positive duration", moveCkpt)}
				}
				opts.MoveCheckpointEvery = moveCkpt
			}
			if jsonFile == "" {
				return &usageError{"--json: a file name is required (use - for stdout)"}
			}
			log, err := logs.logger()
			if err != nil {
				return err
			}
			ctx := cmd.Context()
			stderr := cmd.ErrOrStderr()
			opts.Logger, opts.Progress = log, stderr

			work, err := os.MkdirTemp("", "sluice-bench-migrate-")
			if err != nil {
				return err
			}
			defer os.RemoveAll(work)
			opts.Dir = work
			fmt.Fprintln(stderr, "bench: building the example plugin wordcount with the Go toolchain")
			paths, err := buildExamples(ctx, filepath.Join(work, "plugins"), "wordcount")
			if err != nil {
				return err
			}
			if err := readExamples(paths, map[string]*[]byte{"wordcount": &opts.WordCount}); err != nil {
				return err
			}
			if profile != "" {
				stopProfile, err := startCPUProfile(profile)
				if err != nil {
					return err
				}
				defer stopProfile()
			}
			rep, err := bench.RunMigrate(ctx, opts)
			if err != nil {
				return err
			}
			return writeReport(cmd, rep, jsonFile, profile)
		},
	}
	def := bench.DefaultMigrateOptions()
	var names []string
	for _, s := range bench.MigrateStrategies() {
		names = append(names, s.Name)
	}
	fl := cmd.Flags()
	fl.BoolVar(&quick, "quick", false, "a short run (one NATS server, 2 hosts, 32 key groups, 256 KiB of state, 1 s phases), for a first look and for tests")
	fl.StringVar(&jsonFile, "json", "bench-migrate.json", "where to write the results as JSON; - prints JSON instead of the tables")
	fl.StringSliceVar(&strategies, "strategy", nil, "strategies to run: "+strings.Join(names, ", ")+" (repeat or separate with commas; default all)")
	fl.IntVar(&natsServers, "nats-servers", def.NATSServers, "embedded NATS servers, clustered when more than one")
	fl.IntVar(&hosts, "hosts", def.Hosts, "hosts of the pipeline, each a job with its own store")
	fl.IntVar(&keyGroups, "key-groups", def.KeyGroups, "key groups of the pipeline")
	fl.StringVar(&stateSize, "state", "32MiB", "keyed state preloaded over the groups (the issue's figure is 256MiB)")
	fl.Float64Var(&rate, "rate", def.Rate, "records per second from the publisher")
	fl.DurationVar(&duration, "duration", def.Duration, "length of each phase (a move phase lasts until its move is over)")
	fl.BoolVar(&moves, "moves", true, "run the strategies' key group moves (steady, 25%, 100%, Zipf rebalance)")
	fl.BoolVar(&failover, "failover", true, "run the failover: one host killed under the load, its groups taken by the others from their checkpoints")
	fl.BoolVar(&partition, "partition", true, "run the partition cost: a backlog drained by one host and by --hosts hosts")
	fl.DurationVar(&lease, "lease", def.Lease, "the hosts' lease in the failover run (--quick: 1s)")
	fl.DurationVar(&ckptEvery, "checkpoint-every", def.CheckpointEvery, "the hosts' checkpoint period in the failover run (--quick: 250ms)")
	fl.DurationVar(&moveCkpt, "move-checkpoint-every", def.MoveCheckpointEvery, "the hosts' checkpoint period in the strategies' runs (--quick: 250ms; 0: none; with checkpoints, a changed group moves as a delta and the replicate strategy's fetches measure replication under load)")
	fl.StringVar(&profile, "cpuprofile", "", "write a CPU profile of the runs (not the plugin build) to this file")
	logs.register(cmd, "warn")
	return cmd
}
