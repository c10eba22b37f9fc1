package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/spf13/cobra"

	"github.com/sluicehq/sluice/connectors/natsconn"
	"github.com/sluicehq/sluice/host/api/schema"
	"github.com/sluicehq/sluice/host/cluster"
	"github.com/sluicehq/sluice/host/clusterctl"
	"github.com/sluicehq/sluice/host/pipeline"
)

// clusterPoll is how often `cluster move --wait` and `cluster rebalance
// --wait` read the assignment.
const clusterPoll = 250 * time.Millisecond

func newClusterCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "cluster",
		Short: "Inspect and move the key groups of a pipeline that runs on several hosts, and scale its operators",
		Long: `The cluster commands read and change the assignment of a pipeline's key
groups to its hosts, and the worker counts every host runs, which live in
JetStream key-value buckets on the NATS cluster the hosts share. They talk to NATS directly: no host's HTTP API is
needed. The pipeline's name and key group count come from its file (-c), the
NATS URL from --nats-url, else from the file's nats.url.`,
	}
	cmd.AddCommand(newClusterStatusCmd(), newClusterMoveCmd(), newClusterPlaceCmd(), newClusterRebalanceCmd(), newClusterScaleCmd(), newClusterHostCmd())
	return cmd
}

// clusterFlags are the flags every cluster command has.
type clusterFlags struct {
	config  string
	natsURL string
	timeout time.Duration
	stage   string
	// operator, set by a command that names an operator, picks the stage
	// of a pipeline cut into stages that runs it.
	operator string
}

func (f *clusterFlags) register(cmd *cobra.Command) {
	cmd.Flags().StringVarP(&f.config, "config", "c", "", "the pipeline's file, for its name, key group count, operators and NATS URL (required)")
	cmd.Flags().StringVar(&f.stage, "stage", "", "for a pipeline cut into stages (cluster.stages): the stage to act on, named by its first operator (default: the first stage, or the stage of the operator a command names)")
	cmd.Flags().StringVar(&f.natsURL, "nats-url", "", "the NATS server or cluster the hosts share (default: nats.url of -c PIPELINE)")
	cmd.Flags().DurationVar(&f.timeout, "timeout", 30*time.Second, "how long to wait for NATS on each read or change (not for --wait)")
}

// clusterConn is an open view of one pipeline's cluster.
type clusterConn struct {
	name    string          // the pipeline's name (a stage's: <name>-<operator>)
	groups  int             // its key group count
	stage   *pipeline.Stage // the stage of a pipeline cut into stages; nil if it has none
	nc      *nats.Conn
	js      jetstream.JetStream
	cluster *cluster.Cluster
	admin   *clusterctl.Admin
}

func (c *clusterConn) Close() { c.nc.Close() }

// open loads the pipeline file, connects to NATS and binds to the
// pipeline's cluster bucket, which a host must have created: the commands
// create nothing.
func (f *clusterFlags) open(ctx context.Context, name string) (*clusterConn, error) {
	if f.config == "" {
		return nil, &usageError{name + ": -c PIPELINE is required (the pipeline file the hosts run)"}
	}
	if f.timeout <= 0 {
		return nil, &usageError{fmt.Sprintf("%s: --timeout %v: want a positive duration", name, f.timeout)}
	}
	file, err := pipeline.Load(f.config)
	if err != nil {
		return nil, err
	}
	p, err := f.pick(name, file)
	if err != nil {
		return nil, err
	}
	url := f.natsURL
	if url == "" {
		url = p.NATS.URL
	}
	if url == "" {
		return nil, &usageError{fmt.Sprintf("%s: no NATS URL: give --nats-url, or nats.url in %s (a cluster's hosts share a NATS server; an embedded one is a single host's)", name, f.config)}
	}
	quiet := slog.New(slog.DiscardHandler)
	cctx, cancel := context.WithTimeout(ctx, f.timeout)
	defer cancel()
	nc, err := natsconn.Connect(cctx, url, "sluice-cluster-cli", natsconn.WithLogger(quiet))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	js, err := jetstream.New(nc)
	if err != nil {
		nc.Close()
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	// Bind only: a status or a move of a pipeline no host runs is an
	// error, not a new empty cluster.
	bucket := cluster.BucketName(p.Name)
	if _, err := js.KeyValue(cctx, bucket); err != nil {
		nc.Close()
		if errors.Is(err, jetstream.ErrBucketNotFound) {
			return nil, fmt.Errorf("%s: pipeline %q has no cluster on %s: no bucket %s (a host running the pipeline in cluster mode creates it): %w", name, p.Name, redactNATS(url), bucket, err)
		}
		return nil, fmt.Errorf("%s: bucket %s on %s: %w", name, bucket, redactNATS(url), err)
	}
	c, err := cluster.Open(cctx, js, cluster.Config{Pipeline: p.Name, Text: []byte(p.Name), KeyGroups: p.State.KeyGroups, Logger: quiet})
	if err != nil {
		nc.Close()
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return &clusterConn{name: p.Name, groups: p.State.KeyGroups, stage: p.Stage, nc: nc, js: js, cluster: c, admin: &clusterctl.Admin{Pipeline: p.Name, JS: js, Cluster: c, Operators: p.Operators}}, nil
}

// pick returns the stage of p (a pipeline cut into stages) the command
// acts on: the one that runs f.operator, else the one --stage names, else
// the first; p itself when it has no stages. An operator that no stage
// runs is left to the command to refuse.
func (f *clusterFlags) pick(name string, p *pipeline.Pipeline) (*pipeline.Pipeline, error) {
	stages := p.Stages()
	if f.stage != "" && stages[0].Stage == nil {
		return nil, &usageError{fmt.Sprintf("%s: --stage %s: %s is not cut into stages (cluster.stages)", name, f.stage, f.config)}
	}
	for _, st := range stages {
		if f.operator != "" && slices.ContainsFunc(st.Operators, func(o pipeline.Operator) bool { return o.Name == f.operator }) {
			if f.stage != "" && f.stage != st.Stage.Operator {
				return nil, &usageError{fmt.Sprintf("%s: --stage %s: operator %s runs in stage %s", name, f.stage, f.operator, st.Stage.Operator)}
			}
			return st, nil
		}
	}
	if f.stage == "" {
		return stages[0], nil
	}
	var names []string
	for _, st := range stages {
		if st.Stage.Operator == f.stage {
			return st, nil
		}
		names = append(names, st.Stage.Operator)
	}
	return nil, &usageError{fmt.Sprintf("%s: --stage %s: no stage starts at that operator (stages: %s)", name, f.stage, strings.Join(names, ", "))}
}

// redactNATS is url without the user and password it may hold.
func redactNATS(url string) string {
	var out []string
	for _, u := range strings.Split(url, ",") {
		if i := strings.Index(u, "@"); i >= 0 {
			if j := strings.Index(u, "://"); j >= 0 && j < i {
				u = u[:j+3] + "***" + u[i:]
			} else {
				u = "***" + u[i:]
			}
		}
		out = append(out, u)
	}
	return strings.Join(out, ",")
}

// --- status ---

func newClusterStatusCmd() *cobra.Command {
	var f clusterFlags
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "status -c PIPELINE [--nats-url URL] [--json]",
		Short: "Show a cluster's hosts, their key groups, the migration in progress, the checkpoints, plugin versions and worker counts",
		Long: `Status reads the pipeline's cluster buckets and prints: every host that has
joined (live ones with their lease age, that is how long ago they last renewed
it, and address; the others as not live; pool hosts, which are given no key
groups, marked in the POOL column), the key groups each owns (a count
and ranges such as 0-31, 64-95), the groups no host owns, the migration in
progress (its id, step i of n, and each move of the current step with its
state: planned, released, installed), the plugin modules swaps recorded for
every host and which host runs them, the worker counts scales recorded (sluice
cluster scale) with the count each live host runs and the one recorded for it,
and, from the checkpoint bucket, per host that wrote them, the number of key
group checkpoints, their bytes and the newest one's time.

With --json it prints one JSON object: pipeline, key_groups, revision (of the
assignment), lease_seconds, hosts (id, live, addr, started,
lease_age_seconds, groups, key_groups, ranges, operators, epoch, workers,
pool, load with utilisation, saturated, input_rate, behind and at),
unassigned, unassigned_ranges, migration (null, or id, step, steps, state,
moves with group, from, to, replicated, state, then groups_done and
groups_total), checkpoints (host, count, bytes, newest), versions (null, or
epoch, operators, switched, pending) and workers (null, or epoch, operators
with operator, count, hosts, epoch, by, at, then scaled and pending),
pool_epoch and pool_last (the host pool's last change).
docs/cluster.md describes them.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cc, err := f.open(cmd.Context(), "cluster status")
			if err != nil {
				return err
			}
			defer cc.Close()
			ctx, cancel := context.WithTimeout(cmd.Context(), f.timeout)
			defer cancel()
			st, err := cc.status(ctx, time.Now())
			if err != nil {
				return err
			}
			if asJSON {
				enc := json.NewEncoder(cmd.OutOrStdout())
				enc.SetIndent("", "  ")
				return enc.Encode(st)
			}
			if s := cc.stage; s != nil {
				fmt.Fprintf(cmd.OutOrStdout(), "stage %s (%d of %d): its operators' key groups; --stage OPERATOR shows another stage\n", s.Operator, s.Index+1, s.Count)
			}
			return printStatus(cmd.OutOrStdout(), st, time.Now())
		},
	}
	f.register(cmd)
	cmd.Flags().BoolVar(&asJSON, "json", false, "print one JSON object (fields in --help and docs/cluster.md)")
	return cmd
}

// status reads everything status shows.
func (c *clusterConn) status(ctx context.Context, now time.Time) (*schema.ClusterStatus, error) {
	st, err := c.admin.Status(ctx, now)
	if err != nil {
		return nil, fmt.Errorf("cluster status: %w", err)
	}
	return st, nil
}

// print writes st as text.
func printStatus(w io.Writer, st *schema.ClusterStatus, now time.Time) error {
	fmt.Fprintf(w, "pipeline %s: %d key groups, assignment revision %d, lease %v\n",
		st.Pipeline, st.KeyGroups, st.Revision, time.Duration(st.LeaseSeconds*float64(time.Second)))
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "\nHOST\tLIVE\tPOOL\tLEASE AGE\tADDR\tGROUPS\tKEY GROUPS")
	for _, h := range st.Hosts {
		live, age, addr := "no", "-", "-"
		if h.Live {
			live = "yes"
			age = time.Duration(*h.LeaseAgeSeconds * float64(time.Second)).Round(time.Millisecond).String()
			if h.Addr != "" {
				addr = h.Addr
			}
		}
		pool := "no"
		if h.Pool {
			pool = "yes"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%d\t%s\n", h.ID, live, pool, age, addr, h.Groups, orNone(h.Ranges))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintf(w, "\nunassigned: %d groups: %s\n", len(st.Unassigned), orNone(st.UnassignedRanges))
	if st.Whole {
		fmt.Fprintln(w, "whole: the key groups live on one host together (a transactional operator); the other hosts stand by")
	}
	if st.Placed != "" {
		fmt.Fprintf(w, "placed: every key group was placed on host %s (sluice cluster place); rebalances keep them there while it is live\n", st.Placed)
	}
	if st.PoolLast != "" {
		fmt.Fprintf(w, "pool: epoch %d, last change: %s\n", st.PoolEpoch, st.PoolLast)
	}
	if m := st.Migration; m != nil {
		fmt.Fprintf(w, "\nmigration %s: step %d of %d, %s; %d of %d groups moved\n", m.ID, m.Step, m.Steps, m.State, m.GroupsDone, m.GroupsTotal)
		tw = tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "GROUP\tFROM\tTO\tSTATE")
		for _, mv := range m.Moves {
			state := string(mv.State)
			if mv.Replicated {
				state += " (replicated)"
			}
			fmt.Fprintf(tw, "%d\t%s\t%s\t%s\n", mv.Group, orNone(mv.From), mv.To, state)
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	} else {
		fmt.Fprintln(w, "\nmigration: none in progress")
	}
	if err := printVersions(w, st); err != nil {
		return err
	}
	if err := printWorkers(w, st); err != nil {
		return err
	}
	if len(st.Checkpoints) == 0 {
		_, err := fmt.Fprintln(w, "\ncheckpoints: none")
		return err
	}
	tw = tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "\nCHECKPOINTS BY\tGROUPS\tBYTES\tNEWEST")
	for _, c := range st.Checkpoints {
		count := strconv.Itoa(c.Count)
		if c.Cut {
			count += " (one cut)"
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%s (%v ago)\n", orNone(c.Host), count, c.Bytes,
			c.Newest.UTC().Format(time.RFC3339), max(now.Sub(c.Newest), 0).Round(time.Second))
	}
	return tw.Flush()
}

// printVersions writes the plugin versions part of st: the modules a swap
// recorded for every host, whether a swap is in progress, and what each
// host reports it runs.
func printVersions(w io.Writer, st *schema.ClusterStatus) error {
	v := st.Versions
	if v == nil {
		_, err := fmt.Fprintln(w, "\nplugin versions: the pipeline file's (no swap recorded)")
		return err
	}
	if len(v.Pending) > 0 {
		fmt.Fprintf(w, "\nplugin versions: epoch %d, swap in progress: switched %s; not yet %s\n",
			v.Epoch, orNone(strings.Join(v.Switched, ", ")), strings.Join(v.Pending, ", "))
	} else {
		fmt.Fprintf(w, "\nplugin versions: epoch %d, run by every live host\n", v.Epoch)
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "OPERATOR\tMODULE\tSHA256\tEPOCH\tREASON\tBY")
	for _, o := range v.Operators {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\t%s\n", o.Operator, o.Name, short(o.SHA256), o.Epoch, o.Reason, o.Host)
	}
	fmt.Fprintln(tw, "\nHOST\tOPERATOR\tRUNS\tSWITCHED")
	for _, h := range st.Hosts {
		if !h.Live {
			continue
		}
		for _, o := range v.Operators {
			runs, done := h.Operators[o.Operator], "yes"
			if runs != o.SHA256 {
				done = "no"
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", h.ID, o.Operator, orNone(short(runs)), done)
		}
	}
	return tw.Flush()
}

// short is the first 12 digits of a SHA-256.
func short(hash string) string {
	if len(hash) > 12 {
		return hash[:12]
	}
	return hash
}

// orNone is s, or "none" when s is empty.
func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}

// parseGroups reads a list of key groups and ranges, "3,5,8-11", each
// below groups; the result is sorted, without duplicates.
func parseGroups(s string, groups int) ([]int, error) {
	if strings.TrimSpace(s) == "all" {
		out := make([]int, groups)
		for g := range out {
			out[g] = g
		}
		return out, nil
	}
	var out []int
	for part := range strings.SplitSeq(s, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			return nil, fmt.Errorf("--groups %q: an empty item (want groups and ranges such as 3,5,8-11)", s)
		}
		lo, hi, isRange := strings.Cut(part, "-")
		a, err := strconv.Atoi(lo)
		b := a
		if err == nil && isRange {
			b, err = strconv.Atoi(hi)
		}
		if err != nil || a < 0 || b < 0 {
			return nil, fmt.Errorf("--groups %q: %q is not a key group or a range of them (want e.g. 3 or 8-11)", s, part)
		}
		if a > b {
			return nil, fmt.Errorf("--groups %q: range %q runs backwards", s, part)
		}
		if b >= groups {
			return nil, fmt.Errorf("--groups %q: key group %d is out of range: the pipeline has key groups 0 to %d", s, b, groups-1)
		}
		for g := a; g <= b; g++ {
			out = append(out, g)
		}
	}
	slices.Sort(out)
	return slices.Compact(out), nil
}

// --- move and rebalance ---

// knobFlags are the migration planner's knobs on the command line.
type knobFlags struct {
	order     string
	batch     int
	global    bool
	replicate int
	seed      uint64
	wait      bool
}

func (k *knobFlags) register(cmd *cobra.Command) {
	fl := cmd.Flags()
	fl.StringVar(&k.order, "order", string(cluster.OrderKeyGroup), "the order each source host's groups move in: keygroup (ascending), reverse, random (drawn from --seed) or hottest (most load first; the command has no load measures, so it falls back to key group order)")
	fl.IntVar(&k.batch, "batch", 0, "key groups each source host moves per step; 0 moves them all in one step")
	fl.BoolVar(&k.global, "global", false, "--batch counts a step's groups over all source hosts, not per source host")
	fl.IntVar(&k.replicate, "replicate", 0, "mark the moves of the groups g with g % N == 0 replicated (their destination may keep a warm copy ahead of the move): 1 all, 2 half, 0 none")
	fl.Uint64Var(&k.seed, "seed", 0, "the seed of --order random (the same seed gives the same order)")
	fl.BoolVar(&k.wait, "wait", false, "after starting the migration, print each step as it completes until the migration is over (interrupt to stop waiting; the migration goes on)")
}

// knobs returns the planner's knobs, refusing bad values by their flag.
func (k *knobFlags) knobs(name string) (cluster.Knobs, error) {
	kn := cluster.Knobs{Order: cluster.Order(k.order), Batch: k.batch, Global: k.global, Replicate: k.replicate, Seed: k.seed}
	switch kn.Order {
	case cluster.OrderKeyGroup, cluster.OrderReverse, cluster.OrderRandom, cluster.OrderHottest:
	default:
		return kn, &usageError{fmt.Sprintf("%s: --order %q: want keygroup, reverse, random or hottest", name, k.order)}
	}
	if k.batch < 0 {
		return kn, &usageError{fmt.Sprintf("%s: --batch %d: want 0 (all at once) or more", name, k.batch)}
	}
	if k.replicate < 0 {
		return kn, &usageError{fmt.Sprintf("%s: --replicate %d: want 0 (none) or more", name, k.replicate)}
	}
	return kn, kn.Validate()
}

// start runs begin, which starts a migration (or finds nothing to
// migrate), and prints it; with wait it then follows it to the end.
func (c *clusterConn) start(ctx context.Context, w io.Writer, name string, timeout time.Duration, wait bool,
	begin func(ctx context.Context) (*cluster.Assignment, error)) error {
	tctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	got, err := begin(tctx)
	if err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	if got == nil {
		_, err := fmt.Fprintf(w, "no key group changes owner: nothing to migrate\n")
		return err
	}
	m := got.Migration
	moves := 0
	for _, s := range m.Steps {
		moves += len(s.Moves)
	}
	fmt.Fprintf(w, "migration %s: %d key groups in %d steps (revision %d)\n", m.ID, moves, len(m.Steps), got.Revision)
	for i, s := range m.Steps {
		fmt.Fprintf(w, "  step %d: %s\n", i+1, describeMoves(s.Moves))
	}
	if !wait {
		return nil
	}
	return c.follow(ctx, w, name, m)
}

// startTo is start for a migration to host to (move, place): a refusal
// of that host names the --to flag.
func (c *clusterConn) startTo(ctx context.Context, w io.Writer, name, to string, timeout time.Duration, wait bool,
	begin func(ctx context.Context) (*cluster.Assignment, error)) error {
	err := c.start(ctx, w, name, timeout, wait, begin)
	if re := (*clusterctl.RefusedError)(nil); errors.As(err, &re) && re.Field == "to" {
		return fmt.Errorf("%s: --to %s: %w", name, to, re)
	}
	return err
}

// describeMoves says what moves go where: "3, 5 h1 -> h2; 9 h3 -> h2".
func describeMoves(moves []cluster.Move) string {
	type pair struct{ from, to string }
	by := map[pair][]int{}
	var order []pair
	for _, mv := range moves {
		p := pair{mv.From, mv.To}
		if _, ok := by[p]; !ok {
			order = append(order, p)
		}
		by[p] = append(by[p], mv.Group)
	}
	parts := make([]string, len(order))
	for i, p := range order {
		gs := slices.Sorted(slices.Values(by[p]))
		parts[i] = fmt.Sprintf("groups %s %s -> %s", clusterctl.Ranges(gs), p.from, p.to)
	}
	return strings.Join(parts, "; ")
}

// follow polls the assignment and prints each step of m as it completes,
// until m is over. A migration gone from the table with a group not at
// its destination is reported as an error.
func (c *clusterConn) follow(ctx context.Context, w io.Writer, name string, m *cluster.Migration) error {
	done := 0 // steps printed
	began := time.Now()
	t := time.NewTicker(clusterPoll)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s: stopped waiting for migration %s after step %d of %d (it goes on): %w", name, m.ID, done, len(m.Steps), ctx.Err())
		case <-t.C:
		}
		a, err := c.cluster.Assignment(ctx)
		if err != nil {
			if ctx.Err() != nil {
				continue
			}
			return fmt.Errorf("%s: following migration %s: %w", name, m.ID, err)
		}
		over := a.Migration == nil || a.Migration.ID != m.ID
		reached := len(m.Steps)
		if !over {
			reached = a.Migration.Current
		}
		for ; done < reached; done++ {
			fmt.Fprintf(w, "step %d of %d done after %v: %s\n", done+1, len(m.Steps), time.Since(began).Round(time.Millisecond), describeMoves(m.Steps[done].Moves))
		}
		if !over {
			continue
		}
		var astray []string
		for _, s := range m.Steps {
			for _, mv := range s.Moves {
				if a.Owners[mv.Group] != mv.To {
					astray = append(astray, fmt.Sprintf("%d (owner %s, not %s)", mv.Group, orNone(a.Owners[mv.Group]), mv.To))
				}
			}
		}
		if len(astray) > 0 {
			return fmt.Errorf("%s: migration %s is no longer in progress, but key groups %s are not with their destination", name, m.ID, strings.Join(astray, ", "))
		}
		_, err = fmt.Fprintf(w, "migration %s finished after %v\n", m.ID, time.Since(began).Round(time.Millisecond))
		return err
	}
}

func newClusterMoveCmd() *cobra.Command {
	var f clusterFlags
	var k knobFlags
	var groups, to string
	cmd := &cobra.Command{
		Use:   "move -c PIPELINE --groups LIST --to HOST [--nats-url URL] [--order O] [--batch N] [--replicate N] [--wait]",
		Short: "Move key groups to a host while the pipeline runs",
		Long: `Move starts a migration that gives the key groups of --groups (such as
3,5,8-11, or all) to the live host --to (not a pool host), planned in steps by the knobs (--order,
--batch, --global, --replicate, --seed): each source host releases a step's
groups at a batch boundary and ships their state, the destination installs it
and reads their records from where the source stopped, and the other groups
keep running. Groups --to owns already stay. The hosts run the migration; the
command only writes it into the assignment and returns, or with --wait prints
each step as it completes until the migration is over.

A pipeline with a transactional operator keeps its key groups on one host
together: its move names every group (--groups all) and is made in one step,
whatever the knobs say.

Refused: a host that is not live, a group out of range, a group that no live
host owns, fewer than every group of a pipeline that keeps them together, and
any migration while another is in progress (named, with its step).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			const name = "cluster move"
			kn, err := k.knobs(name)
			if err != nil {
				return err
			}
			if groups == "" {
				return &usageError{name + ": --groups is required (key groups and ranges, such as 3,5,8-11)"}
			}
			if to == "" {
				return &usageError{name + ": --to is required (the id of the live host that takes the groups)"}
			}
			cc, err := f.open(cmd.Context(), name)
			if err != nil {
				return err
			}
			defer cc.Close()
			gs, err := parseGroups(groups, cc.groups)
			if err != nil {
				return &usageError{name + ": " + err.Error()}
			}
			id := clusterctl.MigrationID("move", time.Now())
			return cc.startTo(cmd.Context(), cmd.OutOrStdout(), name, to, f.timeout, k.wait, func(ctx context.Context) (*cluster.Assignment, error) {
				return cc.admin.Move(ctx, id, gs, to, kn)
			})
		},
	}
	f.register(cmd)
	k.register(cmd)
	cmd.Flags().StringVar(&groups, "groups", "", "the key groups to move: groups and ranges, such as 3,5,8-11, or all (required)")
	cmd.Flags().StringVar(&to, "to", "", "the live host that takes the groups, by id (required)")
	return cmd
}

func newClusterPlaceCmd() *cobra.Command {
	var f clusterFlags
	var k knobFlags
	var to string
	cmd := &cobra.Command{
		Use:   "place -c PIPELINE --operator NAME --to HOST [--nats-url URL] [--order O] [--batch N] [--replicate N] [--wait]",
		Short: "Place an operator on a host while the pipeline runs",
		Long: `Place starts a migration that gives every key group of the operator's stage
to the live host --to (not a pool host), planned in steps by the knobs as for
sluice cluster move, and records the placement in the assignment: the rebalances
made when hosts join or leave keep the groups on --to while it is live, so the
stage's operators run there alone. In a pipeline cut into stages
(cluster.stages) a stage is the operators from one named in cluster.stages to
the next; the other stages stay where they are, and records cross from one
stage's hosts to the next stage's through a partition stream. In a pipeline
without stages the stage is the whole chain.

A move or a rebalance of the stage (sluice cluster move, sluice cluster
rebalance, with --stage) forgets the placement. While --to is not live its
groups are spread over the others; they go back to it when it is live again.

Refused as sluice cluster move is, and for an operator the pipeline does not
have.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			const name = "cluster place"
			kn, err := k.knobs(name)
			if err != nil {
				return err
			}
			if f.operator == "" {
				return &usageError{name + ": --operator is required (the operator to place)"}
			}
			if to == "" {
				return &usageError{name + ": --to is required (the id of the live host to place it on)"}
			}
			cc, err := f.open(cmd.Context(), name)
			if err != nil {
				return err
			}
			defer cc.Close()
			if !slices.ContainsFunc(cc.admin.Operators, func(o pipeline.Operator) bool { return o.Name == f.operator }) {
				return &usageError{fmt.Sprintf("%s: --operator %s: %s has no such operator", name, f.operator, f.config)}
			}
			id := clusterctl.MigrationID("place", time.Now())
			err = cc.startTo(cmd.Context(), cmd.OutOrStdout(), name, to, f.timeout, k.wait, func(ctx context.Context) (*cluster.Assignment, error) {
				return cc.admin.Place(ctx, id, to, kn)
			})
			if err == nil {
				fmt.Fprintf(cmd.OutOrStdout(), "operator %s (pipeline %s) is placed on host %s\n", f.operator, cc.name, to)
			}
			return err
		},
	}
	f.register(cmd)
	k.register(cmd)
	cmd.Flags().StringVar(&f.operator, "operator", "", "the operator to place (required): its stage's key groups all go to --to")
	cmd.Flags().StringVar(&to, "to", "", "the live host to place it on, by id (required)")
	return cmd
}

func newClusterRebalanceCmd() *cobra.Command {
	var f clusterFlags
	var k knobFlags
	cmd := &cobra.Command{
		Use:   "rebalance -c PIPELINE [--nats-url URL] [--order O] [--batch N] [--replicate N] [--wait]",
		Short: "Spread the key groups evenly over the live active hosts, moving the fewest",
		Long: `Rebalance starts a migration that leaves every live active host (pool hosts,
sluice cluster host, are left out) within one key group of the others, moving the fewest groups that get there: groups of hosts that
are not live move first, then hosts over their share give up their highest
groups to the hosts under it. It is planned in steps by the knobs, as for
sluice cluster move, and refused while another migration is in progress, or
when a group that would move has no live owner to release it (a host that is
gone: its groups go to the survivors by failover first). With --wait it prints
each step as it completes until the migration is over.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			const name = "cluster rebalance"
			kn, err := k.knobs(name)
			if err != nil {
				return err
			}
			cc, err := f.open(cmd.Context(), name)
			if err != nil {
				return err
			}
			defer cc.Close()
			id := clusterctl.MigrationID("rebalance", time.Now())
			return cc.start(cmd.Context(), cmd.OutOrStdout(), name, f.timeout, k.wait, func(ctx context.Context) (*cluster.Assignment, error) {
				return cc.admin.Rebalance(ctx, id, kn)
			})
		},
	}
	f.register(cmd)
	k.register(cmd)
	return cmd
}
