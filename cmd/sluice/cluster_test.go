package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/sluicehq/sluice/connectors/natsconn/natstest"
	"github.com/sluicehq/sluice/host/api/schema"
	"github.com/sluicehq/sluice/host/checkpoint"
	"github.com/sluicehq/sluice/host/cluster"
	"github.com/sluicehq/sluice/host/clusterctl"
	"github.com/sluicehq/sluice/host/pipeline"
	"github.com/sluicehq/sluice/state"
)

// clusterGroups is the test pipeline's key group count.
const clusterGroups = 16

// clusterPipeline is the test pipeline; its cluster is made by the test.
const clusterPipeline = `
name: cl
nats:
  url: NATSURL
state:
  key_groups: 16
sources:
  - name: in
    type: file
    path: input.txt
    format: lines
sinks:
  - name: out
    type: stdout
http:
  addr: "off"
`

// testCluster is a NATS server with the cluster buckets of pipeline "cl",
// where hosts h1 and h2 are live and h3 has joined and left.
type testCluster struct {
	file  string // the pipeline file
	js    jetstream.JetStream
	admin *cluster.Cluster // a handle that has not joined, to set up tables
}

func startTestCluster(t *testing.T, ctx context.Context) *testCluster {
	t.Helper()
	srv := natstest.StartServer(t)
	nc, err := nats.Connect(srv.ClientURL())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	file := filepath.Join(dir, "p.yaml")
	if err := os.WriteFile(file, []byte(strings.ReplaceAll(clusterPipeline, "NATSURL", srv.ClientURL())), 0o644); err != nil {
		t.Fatal(err)
	}
	open := func() *cluster.Cluster {
		c, err := cluster.Open(ctx, js, cluster.Config{Pipeline: "cl", Text: []byte("name: cl\n"), KeyGroups: clusterGroups, Logger: slog.New(slog.DiscardHandler)})
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	for _, id := range []string{"h1", "h2", "h3"} {
		c := open()
		if err := c.Join(ctx, cluster.HostInfo{ID: id, Addr: "127.0.0.1:80" + id[1:], Started: time.Now()}); err != nil {
			t.Fatal(err)
		}
		if id == "h3" {
			if err := c.Leave(ctx); err != nil {
				t.Fatal(err)
			}
			continue
		}
		t.Cleanup(func() { _ = c.Leave(context.Background()) })
	}
	return &testCluster{file: file, js: js, admin: open()}
}

// set writes owners into the table, with no migration.
func (tc *testCluster) set(t *testing.T, ctx context.Context, owners []string) {
	t.Helper()
	if _, err := tc.admin.Update(ctx, func(a *cluster.Assignment) error {
		a.Owners = slices.Clone(owners)
		a.Migration = nil
		return nil
	}); err != nil {
		t.Fatal(err)
	}
}

// migration returns the migration in progress, or nil.
func (tc *testCluster) migration(t *testing.T, ctx context.Context) *cluster.Migration {
	t.Helper()
	a, err := tc.admin.Assignment(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return a.Migration
}

// sluiceIn runs the command line in this process, through the root
// command, and returns its error and what it printed.
func sluiceIn(ctx context.Context, args ...string) (stdout, stderr string, err error) {
	root := newRootCmd()
	root.SetArgs(args)
	var out, errOut bytes.Buffer
	root.SetOut(&out)
	root.SetErr(&errOut)
	err = root.ExecuteContext(ctx)
	return out.String(), errOut.String(), err
}

func testContext(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// owners returns a table of clusterGroups groups: from each host, the
// groups listed.
func owners(by map[string][]int) []string {
	out := make([]string, clusterGroups)
	for h, gs := range by {
		for _, g := range gs {
			out[g] = h
		}
	}
	return out
}

// TestClusterStatus checks status's text and JSON: live and gone hosts,
// key groups as ranges, unassigned groups, the migration in progress and
// the checkpoints by host.
func TestClusterStatus(t *testing.T) {
	ctx := testContext(t)
	tc := startTestCluster(t, ctx)
	tc.set(t, ctx, owners(map[string][]int{"h1": {0, 1, 2, 3, 4, 5, 8, 9}, "h2": {6, 7, 10, 11, 12, 13}}))
	if _, err := tc.admin.Update(ctx, func(a *cluster.Assignment) error {
		steps := []cluster.Step{
			{Moves: []cluster.Move{{Group: 4, From: "h1", To: "h2"}, {Group: 5, From: "h1", To: "h2", Replicated: true}}},
			{Moves: []cluster.Move{{Group: 8, From: "h1", To: "h2"}}},
		}
		if err := a.Begin("m1", steps); err != nil {
			return err
		}
		return a.Mark(4, cluster.StepReleased)
	}); err != nil {
		t.Fatal(err)
	}
	store, err := state.Open(t.TempDir(), state.Options{KeyGroups: clusterGroups, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	ckpt, err := checkpoint.Open(ctx, tc.js, "cl", checkpoint.Options{Host: "h1", Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	var size int
	for _, kg := range []int{1, 2} {
		data, err := store.ExportKeyGroup(kg)
		if err != nil {
			t.Fatal(err)
		}
		if err := ckpt.Put(ctx, checkpoint.Group{KeyGroup: kg, Data: data}); err != nil {
			t.Fatal(err)
		}
		size += len(data)
	}

	out, _, err := sluiceIn(ctx, "cluster", "status", "-c", tc.file)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"pipeline cl: 16 key groups",
		"h1    yes",
		"127.0.0.1:801",
		"8       0-5, 8-9",
		"6       6-7, 10-13",
		"h3    no    no    -",
		"unassigned: 2 groups: 14-15",
		"migration m1: step 1 of 2, planned; 0 of 3 groups moved",
		"4      h1    h2  released",
		"5      h1    h2  planned (replicated)",
		"h1              2",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("status does not say %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "8      h1    h2") {
		t.Errorf("status shows a move of a later step:\n%s", out)
	}

	out, _, err = sluiceIn(ctx, "cluster", "status", "-c", tc.file, "--json")
	if err != nil {
		t.Fatal(err)
	}
	var st schema.ClusterStatus
	dec := json.NewDecoder(strings.NewReader(out))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&st); err != nil {
		t.Fatalf("status --json: %v\n%s", err, out)
	}
	if st.Pipeline != "cl" || st.KeyGroups != clusterGroups || st.Revision == 0 || st.LeaseSeconds != cluster.DefaultLease.Seconds() {
		t.Errorf("status --json: pipeline %q, key groups %d, revision %d, lease %v", st.Pipeline, st.KeyGroups, st.Revision, st.LeaseSeconds)
	}
	if len(st.Hosts) != 3 {
		t.Fatalf("status --json: hosts %+v, want h1, h2, h3", st.Hosts)
	}
	h1, h2, h3 := st.Hosts[0], st.Hosts[1], st.Hosts[2]
	if h1.ID != "h1" || !h1.Live || h1.LeaseAgeSeconds == nil || *h1.LeaseAgeSeconds < 0 || h1.Addr != "127.0.0.1:801" || h1.Started.IsZero() ||
		h1.Groups != 8 || h1.Ranges != "0-5, 8-9" || !slices.Equal(h1.KeyGroups, []int{0, 1, 2, 3, 4, 5, 8, 9}) {
		t.Errorf("status --json: h1 %+v", h1)
	}
	if h2.ID != "h2" || !h2.Live || h2.Groups != 6 || h2.Ranges != "6-7, 10-13" {
		t.Errorf("status --json: h2 %+v", h2)
	}
	if h3.ID != "h3" || h3.Live || h3.LeaseAgeSeconds != nil || h3.Groups != 0 || h3.Ranges != "" || h3.KeyGroups == nil {
		t.Errorf("status --json: h3 %+v", h3)
	}
	if !slices.Equal(st.Unassigned, []int{14, 15}) || st.UnassignedRanges != "14-15" {
		t.Errorf("status --json: unassigned %v %q", st.Unassigned, st.UnassignedRanges)
	}
	m := st.Migration
	if m == nil || m.ID != "m1" || m.Step != 1 || m.Steps != 2 || m.State != string(cluster.StepPlanned) || m.GroupsDone != 0 || m.GroupsTotal != 3 ||
		len(m.Moves) != 2 || m.Moves[0].State != string(cluster.StepReleased) || m.Moves[1].State != string(cluster.StepPlanned) || !m.Moves[1].Replicated {
		t.Errorf("status --json: migration %+v", m)
	}
	if len(st.Checkpoints) != 1 || st.Checkpoints[0].Host != "h1" || st.Checkpoints[0].Count != 2 ||
		st.Checkpoints[0].Bytes < int64(size) || st.Checkpoints[0].Newest.IsZero() {
		t.Errorf("status --json: checkpoints %+v (exports of %d bytes)", st.Checkpoints, size)
	}
}

// TestClusterStatusNoCluster checks that status of a pipeline no host has
// run in cluster mode says so, and creates nothing.
func TestClusterStatusNoCluster(t *testing.T) {
	ctx := testContext(t)
	srv := natstest.StartServer(t)
	file := filepath.Join(t.TempDir(), "p.yaml")
	if err := os.WriteFile(file, []byte(strings.ReplaceAll(clusterPipeline, "NATSURL", srv.ClientURL())), 0o644); err != nil {
		t.Fatal(err)
	}
	_, _, err := sluiceIn(ctx, "cluster", "status", "-c", file)
	if err == nil || !strings.Contains(err.Error(), `pipeline "cl" has no cluster`) || !errors.Is(err, jetstream.ErrBucketNotFound) {
		t.Fatalf("status of no cluster: %v", err)
	}
	_, _, err = sluiceIn(ctx, "cluster", "status", "-c", file)
	if err == nil || !errors.Is(err, jetstream.ErrBucketNotFound) {
		t.Fatalf("status of no cluster, again (did the first create it?): %v", err)
	}

	noURL := filepath.Join(t.TempDir(), "p.yaml")
	if err := os.WriteFile(noURL, []byte(strings.ReplaceAll(clusterPipeline, "url: NATSURL", "port: -1")), 0o644); err != nil {
		t.Fatal(err)
	}
	_, _, err = sluiceIn(ctx, "cluster", "status", "-c", noURL)
	var ue *usageError
	if !errors.As(err, &ue) || !strings.Contains(err.Error(), "--nats-url") {
		t.Fatalf("status with no NATS URL: %v", err)
	}
	_, _, err = sluiceIn(ctx, "cluster", "status")
	if !errors.As(err, &ue) || !strings.Contains(err.Error(), "-c PIPELINE") {
		t.Fatalf("status with no pipeline: %v", err)
	}
}

// TestClusterMove checks that move writes the migration that gives the
// groups to the host, planned by the knobs, and refuses bad input.
func TestClusterMove(t *testing.T) {
	ctx := testContext(t)
	tc := startTestCluster(t, ctx)
	spread := cluster.Spread(clusterGroups, []string{"h1", "h2"}) // even groups on h1, odd on h2

	var ue *usageError
	for _, c := range []struct {
		args  []string
		usage bool
		want  string
	}{
		{[]string{"--groups", "3", "--to", "h3"}, false, "--to h3: host h3 is not live (live hosts: h1, h2)"},
		{[]string{"--groups", "3", "--to", "h9"}, false, "host h9 is not live"},
		{[]string{"--groups", "3,16", "--to", "h1"}, true, "key group 16 is out of range: the pipeline has key groups 0 to 15"},
		{[]string{"--groups", "3-x", "--to", "h1"}, true, `--groups "3-x": "3-x" is not a key group`},
		{[]string{"--groups", "5-3", "--to", "h1"}, true, `range "5-3" runs backwards`},
		{[]string{"--groups", "3,,4", "--to", "h1"}, true, "an empty item"},
		{[]string{"--to", "h1"}, true, "--groups is required"},
		{[]string{"--groups", "3"}, true, "--to is required"},
		{[]string{"--groups", "3", "--to", "h1", "--order", "coldest"}, true, `--order "coldest"`},
		{[]string{"--groups", "3", "--to", "h1", "--batch", "-1"}, true, "--batch -1"},
		{[]string{"--groups", "3", "--to", "h1", "--replicate", "-2"}, true, "--replicate -2"},
	} {
		tc.set(t, ctx, spread)
		_, _, err := sluiceIn(ctx, append([]string{"cluster", "move", "-c", tc.file}, c.args...)...)
		if err == nil || !strings.Contains(err.Error(), c.want) || errors.As(err, &ue) != c.usage {
			t.Errorf("move %v: %v, want an error saying %q (usage error: %v)", c.args, err, c.want, c.usage)
		}
		if m := tc.migration(t, ctx); m != nil {
			t.Errorf("move %v wrote a migration: %+v", c.args, m)
		}
	}

	// Groups of a host that is not live, and unassigned ones, have no
	// one to release them.
	gone := slices.Clone(spread)
	gone[3], gone[9] = "h3", ""
	tc.set(t, ctx, gone)
	_, _, err := sluiceIn(ctx, "cluster", "move", "-c", tc.file, "--groups", "3", "--to", "h1")
	if err == nil || !strings.Contains(err.Error(), "key groups 3 are owned by host h3, which is not live") {
		t.Errorf("move of a gone host's group: %v", err)
	}
	_, _, err = sluiceIn(ctx, "cluster", "move", "-c", tc.file, "--groups", "9", "--to", "h1")
	if err == nil || !strings.Contains(err.Error(), "key groups 9 are unassigned") {
		t.Errorf("move of an unassigned group: %v", err)
	}

	// 3, 5, 9 and 11 are h2's, 8 and 10 h1's already: four moves, two
	// per step, in reverse order.
	tc.set(t, ctx, spread)
	out, _, err := sluiceIn(ctx, "cluster", "move", "-c", tc.file, "--groups", "3,5,8-11", "--to", "h1", "--batch", "2", "--order", "reverse", "--replicate", "3")
	if err != nil {
		t.Fatal(err)
	}
	m := tc.migration(t, ctx)
	if m == nil || !strings.HasPrefix(m.ID, "move-") || m.Current != 0 || len(m.Steps) != 2 {
		t.Fatalf("move wrote %+v", m)
	}
	want := [][]cluster.Move{
		{{Group: 11, From: "h2", To: "h1", State: cluster.StepPlanned}, {Group: 9, From: "h2", To: "h1", Replicated: true, State: cluster.StepPlanned}},
		{{Group: 5, From: "h2", To: "h1", State: cluster.StepPlanned}, {Group: 3, From: "h2", To: "h1", Replicated: true, State: cluster.StepPlanned}},
	}
	for i, s := range m.Steps {
		if !slices.Equal(s.Moves, want[i]) {
			t.Errorf("step %d moves %+v, want %+v", i, s.Moves, want[i])
		}
	}
	for _, w := range []string{"migration " + m.ID + ": 4 key groups in 2 steps", "step 1: groups 9, 11 h2 -> h1", "step 2: groups 3, 5 h2 -> h1"} {
		if !strings.Contains(out, w) {
			t.Errorf("move does not say %q:\n%s", w, out)
		}
	}

	// Another migration is refused, naming the one in progress.
	_, _, err = sluiceIn(ctx, "cluster", "move", "-c", tc.file, "--groups", "0", "--to", "h2")
	if !errors.Is(err, cluster.ErrMigration) || !strings.Contains(err.Error(), "migration "+m.ID+" is in progress, at step 1 of 2 (planned)") {
		t.Errorf("move during a migration: %v", err)
	}
	if got := tc.migration(t, ctx); got == nil || got.ID != m.ID {
		t.Errorf("the migration in progress is now %+v", got)
	}

	// Groups the host owns already make no migration.
	tc.set(t, ctx, spread)
	out, _, err = sluiceIn(ctx, "cluster", "move", "-c", tc.file, "--groups", "1,3", "--to", "h2")
	if err != nil || !strings.Contains(out, "nothing to migrate") || tc.migration(t, ctx) != nil {
		t.Errorf("move of groups the host owns: %v, %q", err, out)
	}
}

// TestClusterMoveWait checks that move --wait follows the migration step
// by step until it is over; the test plays the hosts.
func TestClusterMoveWait(t *testing.T) {
	ctx := testContext(t)
	tc := startTestCluster(t, ctx)
	tc.set(t, ctx, cluster.Spread(clusterGroups, []string{"h1", "h2"}))
	type result struct {
		err error
		out string
	}
	done := make(chan result, 1)
	go func() {
		out, _, err := sluiceIn(ctx, "cluster", "move", "-c", tc.file, "--groups", "0,2,4", "--to", "h2", "--batch", "1", "--wait")
		done <- result{err, out}
	}()
	var m *cluster.Migration
	for m == nil {
		select {
		case r := <-done:
			t.Fatalf("move --wait returned before a migration was seen: %v\n%s", r.err, r.out)
		case <-time.After(20 * time.Millisecond):
		}
		m = tc.migration(t, ctx)
	}
	for _, s := range m.Steps {
		for _, to := range []cluster.StepState{cluster.StepReleased, cluster.StepInstalled} {
			if _, err := tc.admin.Update(ctx, func(a *cluster.Assignment) error {
				for _, mv := range s.Moves {
					if err := a.Mark(mv.Group, to); err != nil {
						return err
					}
				}
				return nil
			}); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := tc.admin.Update(ctx, func(a *cluster.Assignment) error { _, err := a.Advance(); return err }); err != nil {
			t.Fatal(err)
		}
	}
	r := <-done
	if r.err != nil {
		t.Fatalf("move --wait: %v\n%s", r.err, r.out)
	}
	for _, w := range []string{"step 1 of 3 done", "groups 0 h1 -> h2", "step 2 of 3 done", "step 3 of 3 done", "groups 4 h1 -> h2", "migration " + m.ID + " finished"} {
		if !strings.Contains(r.out, w) {
			t.Errorf("move --wait does not say %q:\n%s", w, r.out)
		}
	}
}

// TestClusterRebalance checks that rebalance plans the fewest moves that
// even out the live hosts, and refuses groups no live host can release.
func TestClusterRebalance(t *testing.T) {
	ctx := testContext(t)
	tc := startTestCluster(t, ctx)
	all := cluster.Spread(clusterGroups, []string{"h1"})
	tc.set(t, ctx, all)
	out, _, err := sluiceIn(ctx, "cluster", "rebalance", "-c", tc.file, "--batch", "4")
	if err != nil {
		t.Fatal(err)
	}
	m := tc.migration(t, ctx)
	if m == nil || !strings.HasPrefix(m.ID, "rebalance-") || len(m.Steps) != 2 {
		t.Fatalf("rebalance wrote %+v", m)
	}
	var moved []int
	for _, s := range m.Steps {
		if len(s.Moves) != 4 {
			t.Errorf("a step of %d moves, want 4 (--batch 4)", len(s.Moves))
		}
		for _, mv := range s.Moves {
			if mv.From != "h1" || mv.To != "h2" {
				t.Errorf("move %+v, want h1 -> h2", mv)
			}
			moved = append(moved, mv.Group)
		}
	}
	if want := []int{8, 9, 10, 11, 12, 13, 14, 15}; !slices.Equal(moved, want) {
		t.Errorf("rebalance moves %v, want %v (h1's highest half, nothing more)", moved, want)
	}
	if !strings.Contains(out, "8 key groups in 2 steps") {
		t.Errorf("rebalance says:\n%s", out)
	}

	// Balanced already: nothing to do.
	tc.set(t, ctx, cluster.Spread(clusterGroups, []string{"h1", "h2"}))
	out, _, err = sluiceIn(ctx, "cluster", "rebalance", "-c", tc.file)
	if err != nil || !strings.Contains(out, "nothing to migrate") || tc.migration(t, ctx) != nil {
		t.Errorf("rebalance of a balanced table: %v, %q", err, out)
	}

	// h3 is gone: its groups must wait for failover.
	tc.set(t, ctx, cluster.Spread(clusterGroups, []string{"h1", "h2", "h3"}))
	_, _, err = sluiceIn(ctx, "cluster", "rebalance", "-c", tc.file)
	if err == nil || !strings.Contains(err.Error(), "owned by host h3, which is not live") || tc.migration(t, ctx) != nil {
		t.Errorf("rebalance with a gone host's groups: %v", err)
	}
}

func TestGroupRanges(t *testing.T) {
	for _, c := range []struct {
		in   []int
		want string
	}{
		{nil, ""},
		{[]int{4}, "4"},
		{[]int{0, 1, 2, 5, 7, 8}, "0-2, 5, 7-8"},
	} {
		if got := clusterctl.Ranges(c.in); got != c.want {
			t.Errorf("Ranges(%v) = %q, want %q", c.in, got, c.want)
		}
	}
	if got, err := parseGroups(" 8-11,3, 5,3", 16); err != nil || !slices.Equal(got, []int{3, 5, 8, 9, 10, 11}) {
		t.Errorf("parseGroups: %v, %v", got, err)
	}
	if got, err := parseGroups("all", 4); err != nil || !slices.Equal(got, []int{0, 1, 2, 3}) {
		t.Errorf("parseGroups all: %v, %v", got, err)
	}
}

// TestClusterStatusWorkersText checks the text of the workers part of
// sluice cluster status.
func TestClusterStatusWorkersText(t *testing.T) {
	st := &schema.ClusterStatus{
		Hosts: []schema.ClusterHost{
			{ID: "h1", Live: true, Workers: map[string]int{"count": 3}},
			{ID: "h2", Live: true, Workers: map[string]int{"count": 2}},
			{ID: "h3"},
		},
		Workers: &schema.ClusterWorkers{Epoch: 4, Scaled: []string{"h1"}, Pending: []string{"h2"},
			Operators: []schema.ClusterOperatorWorkers{{Operator: "count", Count: 3, Hosts: map[string]int{"h3": 1}, Epoch: 4, By: "cli"}}},
	}
	var b strings.Builder
	if err := printWorkers(&b, st); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"workers: epoch 4, scale in progress: scaled h1; not yet h2",
		"count     3        h3 1        4      cli",
		"h1    count     3     3",
		"h2    count     2     3",
	} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("the status does not hold %q:\n%s", want, b.String())
		}
	}
	if strings.Contains(b.String(), "h3    count") {
		t.Errorf("the status shows host h3, which is not live:\n%s", b.String())
	}
	b.Reset()
	if err := printWorkers(&b, &schema.ClusterStatus{}); err != nil || !strings.Contains(b.String(), "workers: the pipeline file's (no scale recorded)") {
		t.Errorf("no record: %v\n%s", err, b.String())
	}
}

// TestClusterStatusVersionsText checks the text of the versions part of
// sluice cluster status.
func TestClusterStatusVersionsText(t *testing.T) {
	st := &schema.ClusterStatus{
		Hosts: []schema.ClusterHost{
			{ID: "h1", Live: true, Operators: map[string]string{"count": strings.Repeat("a", 64)}},
			{ID: "h2", Live: true, Operators: map[string]string{"count": strings.Repeat("b", 64)}},
		},
		Versions: &schema.ClusterVersions{Epoch: 3, Switched: []string{"h1"}, Pending: []string{"h2"},
			Operators: []schema.ClusterOperatorVersion{{Operator: "count", SHA256: strings.Repeat("a", 64), Name: "v2.wasm", Epoch: 3, Reason: cluster.ReasonSwap, Host: "h1"}}},
	}
	var b strings.Builder
	if err := printVersions(&b, st); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"plugin versions: epoch 3, swap in progress: switched h1; not yet h2",
		"count     v2.wasm  aaaaaaaaaaaa  3      swap    h1",
		"h1    count     aaaaaaaaaaaa  yes",
		"h2    count     bbbbbbbbbbbb  no",
	} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("the status does not hold %q:\n%s", want, b.String())
		}
	}
}

// TestClusterPlace: place moves every key group to the host and records
// the placement, which status shows; it refuses a missing --operator or
// --to, an operator the file does not have and a --stage of a file
// without stages as usage errors, writing nothing.
func TestClusterPlace(t *testing.T) {
	ctx := testContext(t)
	tc := startTestCluster(t, ctx)
	tc.set(t, ctx, cluster.Spread(clusterGroups, []string{"h1", "h2"}))
	text, err := os.ReadFile(tc.file)
	if err != nil {
		t.Fatal(err)
	}
	withOp := strings.Replace(string(text), "sinks:", "operators:\n  - {name: count, plugin: count.wasm, kind: keyed}\nsinks:", 1)
	if err := os.WriteFile(tc.file, []byte(withOp), 0o644); err != nil {
		t.Fatal(err)
	}
	var ue *usageError
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--to", "h1"}, "--operator is required"},
		{[]string{"--operator", "count"}, "--to is required"},
		{[]string{"--operator", "nope", "--to", "h1"}, "--operator nope: " + tc.file + " has no such operator"},
		{[]string{"--operator", "count", "--to", "h1", "--stage", "count"}, "is not cut into stages"},
	} {
		_, _, err := sluiceIn(ctx, append([]string{"cluster", "place", "-c", tc.file}, c.args...)...)
		if err == nil || !strings.Contains(err.Error(), c.want) || !errors.As(err, &ue) {
			t.Errorf("place %v: %v, want a usage error saying %q", c.args, err, c.want)
		}
		if m := tc.migration(t, ctx); m != nil {
			t.Errorf("place %v wrote a migration: %+v", c.args, m)
		}
	}
	out, _, err := sluiceIn(ctx, "cluster", "place", "-c", tc.file, "--operator", "count", "--to", "h1")
	if err != nil || !strings.Contains(out, "8 key groups in 1 steps") || !strings.Contains(out, "operator count (pipeline cl) is placed on host h1") {
		t.Fatalf("place: %v\n%s", err, out)
	}
	a, err := tc.admin.Assignment(ctx)
	if err != nil || a.Placed != "h1" || a.Migration == nil {
		t.Fatalf("the table after place: %+v, %v", a, err)
	}
	out, _, err = sluiceIn(ctx, "cluster", "status", "-c", tc.file)
	if err != nil || !strings.Contains(out, "placed: every key group was placed on host h1") {
		t.Errorf("status after place: %v\n%s", err, out)
	}
}

// TestClusterStagePick: the cluster commands act on the stage that runs
// the operator they name, else on the one --stage names, else on the
// first, and refuse a --stage that starts no stage, or that does not run
// the operator named, as usage errors.
func TestClusterStagePick(t *testing.T) {
	p, err := pipeline.Parse("p.yaml", t.TempDir(), []byte(`name: orders
nats: {url: "nats://127.0.0.1:4222"}
sources: [{name: in, type: generator}]
operators:
  - {name: parse, plugin: p.wasm, kind: map}
  - {name: count, plugin: c.wasm, kind: keyed}
  - {name: format, plugin: f.wasm, kind: map}
sinks: [{name: out, type: stdout}]
cluster: {stages: [count]}
`))
	if err != nil {
		t.Fatal(err)
	}
	var ue *usageError
	for _, c := range []struct {
		stage, operator string
		want            string // the stage's pipeline, or the error
	}{
		{"", "", "orders"},
		{"count", "", "orders-count"},
		{"", "format", "orders-count"},
		{"", "parse", "orders"},
		{"", "nope", "orders"}, // left to the command to refuse
		{"count", "format", "orders-count"},
		{"parse", "", "orders"},
		{"format", "", "--stage format: no stage starts at that operator (stages: parse, count)"},
		{"parse", "format", "--stage parse: operator format runs in stage count"},
	} {
		f := clusterFlags{config: "p.yaml", stage: c.stage, operator: c.operator}
		st, err := f.pick("cluster x", p)
		switch {
		case err != nil:
			if !strings.Contains(err.Error(), c.want) || !errors.As(err, &ue) {
				t.Errorf("--stage %q, operator %q: %v, want %s", c.stage, c.operator, err, c.want)
			}
		case st.Name != c.want:
			t.Errorf("--stage %q, operator %q: stage %s, want %s", c.stage, c.operator, st.Name, c.want)
		}
	}
}
