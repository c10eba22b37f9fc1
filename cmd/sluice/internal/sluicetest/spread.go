package sluicetest

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/sluicehq/sluice/connectors/natsconn/natstest"
	"github.com/sluicehq/sluice/host/cluster"
	"github.com/sluicehq/sluice/host/migrate"
)

// spreadWordCount counts generated records by key on several hosts that
// share a NATS cluster, into a JetStream stream.
const spreadWordCount = `
name: spread
nats: {url: "NATSURL"}
http: {addr: "127.0.0.1:0"}
state: {key_groups: 16}
batch: {size: 20}
cluster: {lease: LEASE, checkpoint_every: 500ms, duplicates: 2mEXTRA}
sources:
  - {name: gen, type: generator, mode: sequence, keys: KEYS, count: COUNT, rate: RATE}
operators:
  - {name: count, plugin: PLUGINS/wordcount.wasm, kind: keyed, parallelism: 2, state: [counts]}
sinks:
  - {name: out, type: jetstream, subject: out, stream: OUT, create: true}
`

// SpreadGroups is the key group count of Spread's pipeline.
const SpreadGroups = 16

// Spread is a pipeline, named spread, run as sluice processes over a NATS
// cluster: a generator of Count records over Keys keys, counted per key by
// the plugin wordcount (operator count, keyed, state table counts) into
// the JetStream stream OUT. Its methods call t.Fatal, so call them from
// the test's goroutine.
type Spread struct {
	t   *testing.T
	bin string
	// NATS is the cluster of NATS servers the hosts share.
	NATS *natstest.Cluster
	// Dir holds the pipeline file, and each host's data directory and
	// log, named by its ID.
	Dir string
	// File is the pipeline file, and Text its text.
	File, Text string
	// Count is how many records the generator makes, over Keys keys.
	Count, Keys int
	// JS is a JetStream client of the NATS cluster.
	JS jetstream.JetStream
	// Lease is the hosts' lease.
	Lease time.Duration
	// Hosts are the processes started, by host ID: the last of each.
	Hosts map[string]*exec.Cmd
	// Cluster is a handle on the cluster's buckets that has not joined,
	// once Open has opened it.
	Cluster *cluster.Cluster
}

// StartSpread writes the pipeline (count records over keys keys, the
// hosts' lease, and the cluster section's extra keys) for the binary and
// plugins of s, and connects to a new NATS cluster of servers servers,
// run in the test's process.
func StartSpread(t *testing.T, s *Sluice, servers, count, keys int, lease time.Duration, extra string) *Spread {
	t.Helper()
	return StartSpreadOn(t, s, natstest.StartCluster(t, servers), count, keys, lease, extra)
}

// StartSpreadOn is StartSpread on the NATS cluster servers: one whose servers
// run as processes of their own (natstest.StartClusterProcesses), for a
// test that kills one.
func StartSpreadOn(t *testing.T, s *Sluice, servers *natstest.Cluster, count, keys int, lease time.Duration, extra string) *Spread {
	t.Helper()
	return StartSpreadRate(t, s, servers, count, keys, 600, lease, extra)
}

// StartSpreadRate is StartSpreadOn with the generator's rate, records
// per second (StartSpreadOn's is 600).
func StartSpreadRate(t *testing.T, s *Sluice, servers *natstest.Cluster, count, keys, rate int, lease time.Duration, extra string) *Spread {
	t.Helper()
	text := strings.NewReplacer("COUNT", strconv.Itoa(count), "KEYS", strconv.Itoa(keys),
		"RATE", strconv.Itoa(rate), "LEASE", lease.String(), "EXTRA", extra).Replace(spreadWordCount)
	sp := StartSpreadText(t, s, servers, text, lease)
	sp.Count, sp.Keys = count, keys
	return sp
}

// StartSpreadText is StartSpreadOn for a pipeline of the test's own: text
// names the pipeline spread, with SpreadGroups key groups and a cluster
// section whose lease is lease; NATSURL in it becomes the servers' URLs,
// PLUGINS the directory of the plugins built. Count and Keys are left 0,
// and Read and Check, which read wordcount's outputs, do not apply.
func StartSpreadText(t *testing.T, s *Sluice, servers *natstest.Cluster, text string, lease time.Duration) *Spread {
	t.Helper()
	sp := &Spread{t: t, bin: s.Bin, NATS: servers, Dir: t.TempDir(), Lease: lease, Hosts: map[string]*exec.Cmd{}}
	sp.File = filepath.Join(sp.Dir, "spread.yaml")
	sp.Text = strings.NewReplacer("NATSURL", sp.NATS.URLs(), "PLUGINS", s.Plugins).Replace(text)
	if err := os.WriteFile(sp.File, []byte(sp.Text), 0o644); err != nil {
		t.Fatal(err)
	}
	nc, err := nats.Connect(sp.NATS.URLs(), nats.MaxReconnects(-1))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	if sp.JS, err = jetstream.New(nc); err != nil {
		t.Fatal(err)
	}
	return sp
}

// Start runs host id as a sluice process, its log in <Dir>/<id>.log.
func (s *Spread) Start(id string) {
	t := s.t
	t.Helper()
	cmd := exec.Command(s.bin, "run", "-c", s.File, "--host-id", id, "--data-dir", filepath.Join(s.Dir, id), "--log-format", "json")
	cmd.Dir = s.Dir
	// A host started again appends to its log: the test's failure shows
	// every run of it.
	logFile, err := os.OpenFile(filepath.Join(s.Dir, id+".log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr, cmd.Stdout = logFile, logFile
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	s.Hosts[id] = cmd
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		}
		logFile.Close()
	})
}

// Logs returns every host's log.
func (s *Spread) Logs() string {
	var b strings.Builder
	for id := range s.Hosts {
		data, _ := os.ReadFile(filepath.Join(s.Dir, id+".log"))
		fmt.Fprintf(&b, "--- %s\n%s", id, data)
	}
	return b.String()
}

// Open opens the cluster's buckets into Cluster, once; false when they
// cannot be read now.
func (s *Spread) Open() bool {
	if s.Cluster == nil {
		c, err := cluster.Open(context.Background(), s.JS, cluster.Config{Pipeline: "spread", Text: []byte(s.Text), KeyGroups: SpreadGroups, Lease: s.Lease})
		if err != nil {
			return false
		}
		s.Cluster = c
	}
	return true
}

// Leased reports whether host id holds a lease (false also when the lease
// bucket cannot be read now).
func (s *Spread) Leased(id string) bool {
	if !s.Open() {
		return false
	}
	ms, err := s.Cluster.Members(context.Background())
	return err == nil && slices.ContainsFunc(ms, func(m cluster.HostInfo) bool { return m.ID == id })
}

// LeaseGone reports whether the lease bucket was read and holds no lease
// of host id: false when it cannot be read now (a NATS server just lost
// or back), where !Leased would say the lease is gone and a host started
// on it would be refused as one already live.
func (s *Spread) LeaseGone(id string) bool {
	if !s.Open() {
		return false
	}
	ms, err := s.Cluster.Members(context.Background())
	return err == nil && !slices.ContainsFunc(ms, func(m cluster.HostInfo) bool { return m.ID == id })
}

// Owned returns how many key groups host id owns (-1 when the table
// cannot be read now).
func (s *Spread) Owned(id string) int {
	ctx := context.Background()
	if !s.Open() {
		return -1
	}
	a, err := s.Cluster.Assignment(ctx)
	if err != nil {
		return -1
	}
	return len(migrate.Owned(a, id))
}

// Settled reports whether the assignment holds no migration. Call it
// once Owned or Open has opened the buckets.
func (s *Spread) Settled() bool {
	a, err := s.Cluster.Assignment(context.Background())
	return err == nil && a.Migration == nil
}

// Outputs returns how many messages the output stream holds.
func (s *Spread) Outputs() int {
	ctx := context.Background()
	st, err := s.JS.Stream(ctx, "OUT")
	if err != nil {
		return 0
	}
	info, err := st.Info(ctx)
	if err != nil {
		return 0
	}
	return int(info.State.Msgs)
}

// Wait polls cond, and logs how long it waited; three minutes fail the test with every host's log,
// which ends, for a host still running, with its goroutines (dumpStacks).
func (s *Spread) Wait(what string, cond func() bool) {
	s.t.Helper()
	start := time.Now()
	deadline := start.Add(3 * time.Minute)
	for !cond() {
		if time.Now().After(deadline) {
			s.dumpStacks()
			s.t.Fatalf("%s: not within three minutes\n%s", what, s.Logs())
		}
		time.Sleep(50 * time.Millisecond)
	}
	s.t.Logf("%s: after %v", what, time.Since(start).Round(time.Millisecond))
}

// dumpStacks asks every host still running for its goroutines: on
// SIGQUIT the Go runtime writes them to the host's log and exits. A test
// that fails waiting then shows where each host was stuck.
func (s *Spread) dumpStacks() {
	for _, cmd := range s.Hosts {
		if cmd.ProcessState != nil || cmd.Process.Signal(syscall.SIGQUIT) != nil {
			continue
		}
		done := make(chan struct{})
		go func() {
			_ = cmd.Wait()
			close(done)
		}()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
		}
	}
}

// Output is one record of the output stream: a key's count, made by
// plugins/wordcount or, marked "v2:", by a module a test swapped in.
type Output struct {
	Key   string
	Count int
	V2    bool
}

// Messages reads stream from its first message to its last.
func (s *Spread) Messages(stream string) []*jetstream.RawStreamMsg {
	t := s.t
	t.Helper()
	ctx := context.Background()
	st, err := s.JS.Stream(ctx, stream)
	if err != nil {
		t.Fatal(err)
	}
	info, err := st.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var out []*jetstream.RawStreamMsg
	for seq := info.State.FirstSeq; seq <= info.State.LastSeq && info.State.Msgs > 0; seq++ {
		m, err := st.GetMsg(ctx, seq)
		if err != nil {
			t.Fatalf("stream %s, message %d: %v", stream, seq, err)
		}
		out = append(out, m)
	}
	return out
}

// Read reads the output stream from its first record to its last.
func (s *Spread) Read() []Output {
	t := s.t
	t.Helper()
	var outs []Output
	for _, m := range s.Messages("OUT") {
		seq := m.Sequence
		n, err := strconv.Atoi(strings.TrimPrefix(string(m.Data), "v2:"))
		if err != nil || n < 1 {
			t.Fatalf("output %d: %q is not a count", seq, m.Data)
		}
		outs = append(outs, Output{Key: m.Header.Get("Sluice-Key"), Count: n, V2: strings.HasPrefix(string(m.Data), "v2:")})
	}
	return outs
}

// Check checks the output stream: for each key, the counts 1 to n once
// each.
func (s *Spread) Check() {
	t := s.t
	t.Helper()
	perKey := map[string][]int{}
	for _, o := range s.Read() {
		perKey[o.Key] = append(perKey[o.Key], o.Count)
	}
	if len(perKey) != s.Keys {
		t.Errorf("%d keys counted, want %d", len(perKey), s.Keys)
	}
	for k, ns := range perKey {
		slices.Sort(ns)
		for i, n := range ns {
			if n != i+1 || len(ns) != s.Count/s.Keys {
				t.Fatalf("key %s: counts %v, want 1 to %d once each", k, ns, s.Count/s.Keys)
			}
		}
	}
}

// MoveAll moves every key group of host from to host to, one group a
// step (sluice cluster move --batch 1), and returns once the migration is
// in its second step (or over). Call it once Owned or Open has opened the
// buckets.
func (s *Spread) MoveAll(from, to string) {
	t := s.t
	t.Helper()
	a, err := s.Cluster.Assignment(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var groups []string
	for kg, o := range a.Owners {
		if o == from {
			groups = append(groups, strconv.Itoa(kg))
		}
	}
	move := exec.Command(s.bin, "cluster", "move", "-c", s.File, "--groups", strings.Join(groups, ","), "--to", to, "--batch", "1")
	if out, err := move.CombinedOutput(); err != nil {
		t.Fatalf("sluice cluster move: %v\n%s", err, out)
	}
	s.Wait("the migration's second step", func() bool {
		a, err := s.Cluster.Assignment(context.Background())
		return err == nil && (a.Migration == nil || a.Migration.Current >= 1)
	})
}

// Stop stops the hosts ids with SIGTERM and checks they exit cleanly.
func (s *Spread) Stop(ids ...string) {
	t := s.t
	t.Helper()
	for _, id := range ids {
		if err := s.Hosts[id].Process.Signal(syscall.SIGTERM); err != nil {
			t.Fatal(err)
		}
	}
	for _, id := range ids {
		if err := s.Hosts[id].Wait(); err != nil {
			t.Errorf("host %s ended with %v after SIGTERM\n%s", id, err, s.Logs())
		}
	}
}
