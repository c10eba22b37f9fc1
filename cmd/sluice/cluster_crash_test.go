package main

import (
	"context"
	"fmt"
	"math/rand/v2"
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
	"github.com/sluicehq/sluice/host/registry"
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

// spread is a pipeline run as sluice processes over a NATS cluster.
type spread struct {
	t     *testing.T
	nats  *natstest.Cluster
	dir   string
	file  string
	text  string
	count int
	keys  int
	js    jetstream.JetStream
	lease time.Duration
	hosts map[string]*exec.Cmd
	c     *cluster.Cluster
}

// startSpread writes the pipeline (count records over keys keys, with the
// cluster section's extra keys) and connects to a new NATS cluster of
// servers servers.
func startSpread(t *testing.T, servers, count, keys int, lease time.Duration, extra string) *spread {
	t.Helper()
	s := &spread{t: t, nats: natstest.StartCluster(t, servers), dir: t.TempDir(), count: count, keys: keys, lease: lease, hosts: map[string]*exec.Cmd{}}
	s.file = filepath.Join(s.dir, "spread.yaml")
	s.text = strings.NewReplacer("NATSURL", s.nats.URLs(), "PLUGINS", pluginsDir, "COUNT", strconv.Itoa(count), "KEYS", strconv.Itoa(keys),
		"RATE", "600", "LEASE", lease.String(), "EXTRA", extra).Replace(spreadWordCount)
	if err := os.WriteFile(s.file, []byte(s.text), 0o644); err != nil {
		t.Fatal(err)
	}
	nc, err := nats.Connect(s.nats.URLs(), nats.MaxReconnects(-1))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	if s.js, err = jetstream.New(nc); err != nil {
		t.Fatal(err)
	}
	return s
}

// start runs host id as a sluice process, its log in <dir>/<id>.log.
func (s *spread) start(id string) {
	t := s.t
	t.Helper()
	cmd := exec.Command(sluiceBin, "run", "-c", s.file, "--host-id", id, "--data-dir", filepath.Join(s.dir, id), "--log-format", "json")
	cmd.Dir = s.dir
	// A host started again appends to its log: the test's failure shows
	// every run of it.
	logFile, err := os.OpenFile(filepath.Join(s.dir, id+".log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr, cmd.Stdout = logFile, logFile
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	s.hosts[id] = cmd
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		}
		logFile.Close()
	})
}

// logs returns every host's log.
func (s *spread) logs() string {
	var b strings.Builder
	for id := range s.hosts {
		data, _ := os.ReadFile(filepath.Join(s.dir, id+".log"))
		fmt.Fprintf(&b, "--- %s\n%s", id, data)
	}
	return b.String()
}

// open opens the cluster's buckets, once; false when they cannot be read
// now.
func (s *spread) open() bool {
	if s.c == nil {
		c, err := cluster.Open(context.Background(), s.js, cluster.Config{Pipeline: "spread", Text: []byte(s.text), KeyGroups: 16, Lease: s.lease})
		if err != nil {
			return false
		}
		s.c = c
	}
	return true
}

// leased reports whether host id holds a lease (false also when the lease
// bucket cannot be read now).
func (s *spread) leased(id string) bool {
	if !s.open() {
		return false
	}
	ms, err := s.c.Members(context.Background())
	return err == nil && slices.ContainsFunc(ms, func(m cluster.HostInfo) bool { return m.ID == id })
}

// owned returns how many key groups host id owns (-1 when the table
// cannot be read now).
func (s *spread) owned(id string) int {
	ctx := context.Background()
	if !s.open() {
		return -1
	}
	a, err := s.c.Assignment(ctx)
	if err != nil {
		return -1
	}
	return len(migrate.Owned(a, id))
}

// settled reports whether the assignment holds no migration.
func (s *spread) settled() bool {
	a, err := s.c.Assignment(context.Background())
	return err == nil && a.Migration == nil
}

// outputs returns how many messages the output stream holds.
func (s *spread) outputs() int {
	ctx := context.Background()
	st, err := s.js.Stream(ctx, "OUT")
	if err != nil {
		return 0
	}
	info, err := st.Info(ctx)
	if err != nil {
		return 0
	}
	return int(info.State.Msgs)
}

// wait polls cond; three minutes fail the test with every host's log.
func (s *spread) wait(what string, cond func() bool) {
	s.t.Helper()
	deadline := time.Now().Add(3 * time.Minute)
	for !cond() {
		if time.Now().After(deadline) {
			s.t.Fatalf("%s: not within three minutes\n%s", what, s.logs())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// output is one record of the output stream: a key's count, made by
// plugins/wordcount or, marked "v2:", by testdata/wordcountv2 once a test
// swapped it in.
type output struct {
	key   string
	count int
	v2    bool
}

// read reads the output stream from its first record to its last.
func (s *spread) read() []output {
	t := s.t
	t.Helper()
	ctx := context.Background()
	st, err := s.js.Stream(ctx, "OUT")
	if err != nil {
		t.Fatal(err)
	}
	info, err := st.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var outs []output
	for seq := info.State.FirstSeq; seq <= info.State.LastSeq; seq++ {
		m, err := st.GetMsg(ctx, seq)
		if err != nil {
			t.Fatalf("output %d: %v", seq, err)
		}
		n, err := strconv.Atoi(strings.TrimPrefix(string(m.Data), "v2:"))
		if err != nil || n < 1 {
			t.Fatalf("output %d: %q is not a count", seq, m.Data)
		}
		outs = append(outs, output{key: m.Header.Get("Sluice-Key"), count: n, v2: strings.HasPrefix(string(m.Data), "v2:")})
	}
	return outs
}

// check checks the output stream: for each key, the counts 1 to n once
// each.
func (s *spread) check() {
	t := s.t
	t.Helper()
	perKey := map[string][]int{}
	for _, o := range s.read() {
		perKey[o.key] = append(perKey[o.key], o.count)
	}
	if len(perKey) != s.keys {
		t.Errorf("%d keys counted, want %d", len(perKey), s.keys)
	}
	for k, ns := range perKey {
		slices.Sort(ns)
		for i, n := range ns {
			if n != i+1 || len(ns) != s.count/s.keys {
				t.Fatalf("key %s: counts %v, want 1 to %d once each", k, ns, s.count/s.keys)
			}
		}
	}
}

// moveAll moves every key group of host from to host to, one group a step
// (sluice cluster move --batch 1), and returns once the migration is in
// its second step (or over).
func (s *spread) moveAll(from, to string) {
	t := s.t
	t.Helper()
	a, err := s.c.Assignment(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var groups []string
	for kg, o := range a.Owners {
		if o == from {
			groups = append(groups, strconv.Itoa(kg))
		}
	}
	move := exec.Command(sluiceBin, "cluster", "move", "-c", s.file, "--groups", strings.Join(groups, ","), "--to", to, "--batch", "1")
	if out, err := move.CombinedOutput(); err != nil {
		t.Fatalf("sluice cluster move: %v\n%s", err, out)
	}
	s.wait("the migration's second step", func() bool {
		a, err := s.c.Assignment(context.Background())
		return err == nil && (a.Migration == nil || a.Migration.Current >= 1)
	})
}

// stop stops the hosts ids with SIGTERM and checks they exit cleanly.
func (s *spread) stop(ids ...string) {
	t := s.t
	t.Helper()
	for _, id := range ids {
		if err := s.hosts[id].Process.Signal(syscall.SIGTERM); err != nil {
			t.Fatal(err)
		}
	}
	for _, id := range ids {
		if err := s.hosts[id].Wait(); err != nil {
			t.Errorf("host %s ended with %v after SIGTERM\n%s", id, err, s.logs())
		}
	}
}

// TestClusterOfProcesses runs a pipeline as three sluice processes over a
// cluster of three NATS servers: the key groups spread over them, one
// host is killed with SIGKILL (its groups go to the others, which load its
// last checkpoint and replay from there), and every record is counted
// exactly once: the output stream holds, for each key, the counts 1 to n
// once each.
func TestClusterOfProcesses(t *testing.T) {
	if testing.Short() {
		t.Skip("starts three NATS servers and three hosts")
	}
	s := startSpread(t, 3, 3000, 50, 2*time.Second, "")
	s.start("h1")
	s.wait("h1's first outputs", func() bool { return s.outputs() > 0 })
	s.start("h2")
	s.start("h3")
	s.wait("the groups spread over three hosts", func() bool {
		return s.owned("h1") >= 5 && s.owned("h2") >= 5 && s.owned("h3") >= 5
	})
	s.wait("some records counted on every host", func() bool { return s.outputs() > s.count/4 })
	if err := s.hosts["h3"].Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = s.hosts["h3"].Wait()
	s.wait("h3's groups taken by the others", func() bool { return s.owned("h1")+s.owned("h2") == 16 })
	s.wait("every record counted", func() bool { return s.outputs() >= s.count })
	s.check()
	s.stop("h1", "h2")
}

// TestClusterSurvivesANATSServer runs a pipeline as two sluice processes
// over three NATS servers with every stream and bucket replicated three
// times, stops one server while records flow and starts it again: every
// record is counted once.
func TestClusterSurvivesANATSServer(t *testing.T) {
	if testing.Short() {
		t.Skip("starts three NATS servers and two hosts")
	}
	// The lease outlasts the elections of new stream and bucket leaders
	// that follow a server's stop (seconds on a loaded machine).
	s := startSpread(t, 3, 3000, 50, 15*time.Second, ", replicas: 3")
	ctx := context.Background()
	if _, err := s.js.CreateStream(ctx, jetstream.StreamConfig{Name: "OUT", Subjects: []string{"out"}, Replicas: 3, Duplicates: 2 * time.Minute}); err != nil {
		t.Fatal(err)
	}
	s.start("h1")
	s.start("h2")
	s.wait("the groups spread over two hosts", func() bool { return s.owned("h1") == 8 && s.owned("h2") == 8 })
	s.wait("some records counted", func() bool { return s.outputs() > s.count/4 })
	s.nats.Stop(0)
	s.wait("more records counted with a server down", func() bool { return s.outputs() > s.count/2 })
	s.nats.Restart(0)
	s.wait("every record counted", func() bool { return s.outputs() >= s.count })
	s.check()
	s.stop("h1", "h2")
}

// TestClusterRefusesAnotherPipelineFile starts a host, then one whose
// pipeline file differs from the cluster's: the second is refused, with
// the line that differs, and the first keeps running.
func TestClusterRefusesAnotherPipelineFile(t *testing.T) {
	if testing.Short() {
		t.Skip("starts two NATS servers")
	}
	s := startSpread(t, 2, 100000, 10, 2*time.Second, "")
	s.start("h1")
	s.wait("h1 owns every group", func() bool { return s.owned("h1") == 16 })
	other := filepath.Join(s.dir, "other.yaml")
	if err := os.WriteFile(other, []byte(strings.Replace(s.text, "batch: {size: 20}", "batch: {size: 21}", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(sluiceBin, "run", "-c", other, "--host-id", "h2", "--data-dir", filepath.Join(s.dir, "h2")).CombinedOutput()
	if err == nil {
		t.Fatalf("a host with another pipeline file was let in:\n%s", out)
	}
	for _, want := range []string{"line 6", "batch: {size: 20}", "batch: {size: 21}"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("the refusal does not say %q:\n%s", want, out)
		}
	}
	if s.hosts["h1"].ProcessState != nil {
		t.Fatalf("h1 stopped:\n%s", s.logs())
	}
	s.stop("h1")
}

// TestClusterKillMidMigration moves host h1's key groups to h3 one at a
// time (sluice cluster move --batch 1) and kills h1 with SIGKILL while the
// migration runs: the moves it had not released are taken by h3 from
// their last checkpoints, its other groups go to the survivors, and every
// record is counted once.
func TestClusterKillMidMigration(t *testing.T) {
	if testing.Short() {
		t.Skip("starts three NATS servers and three hosts")
	}
	s := startSpread(t, 3, 3000, 50, 2*time.Second, "")
	for _, id := range []string{"h1", "h2", "h3"} {
		s.start(id)
	}
	s.wait("the groups spread over three hosts", func() bool {
		return s.owned("h1") >= 5 && s.owned("h2") >= 5 && s.owned("h3") >= 5 && s.settled()
	})
	s.wait("some records counted", func() bool { return s.outputs() > s.count/5 })
	s.moveAll("h1", "h3")
	if err := s.hosts["h1"].Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = s.hosts["h1"].Wait()
	s.wait("h1's groups taken by the others", func() bool { return s.owned("h2")+s.owned("h3") == 16 && s.settled() })
	s.wait("every record counted", func() bool { return s.outputs() >= s.count })
	s.check()
	s.stop("h2", "h3")
}

// TestClusterKillDestinationMidMigration moves host h1's key groups to h2
// one at a time and kills h2, the destination, with SIGKILL while the
// migration runs, leaving h1 the only live host: the moves h2 had not
// installed are cancelled (h1 takes back a group it had released), h2's
// groups go to h1 from their checkpoints, the migration ends, and every
// record is counted once.
func TestClusterKillDestinationMidMigration(t *testing.T) {
	if testing.Short() {
		t.Skip("starts two NATS servers and two hosts")
	}
	s := startSpread(t, 2, 3000, 50, 2*time.Second, "")
	s.start("h1")
	s.wait("h1's first outputs", func() bool { return s.outputs() > 0 })
	s.start("h2")
	s.wait("the groups spread over two hosts", func() bool { return s.owned("h1") == 8 && s.owned("h2") == 8 && s.settled() })
	s.moveAll("h1", "h2")
	if err := s.hosts["h2"].Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = s.hosts["h2"].Wait()
	s.wait("every group h1's, the migration over", func() bool { return s.owned("h1") == 16 && s.settled() })
	s.wait("every record counted", func() bool { return s.outputs() >= s.count })
	s.check()
	s.stop("h1")
}

// TestClusterNemesis runs a pipeline on three hosts while a random
// schedule of faults hits them: hosts killed with SIGKILL, stopped with
// SIGTERM (they hand their groups over), started again on their data
// directories, key groups moved to a random host with `sluice cluster
// move` (which may be refused while another migration runs), and the
// operator's plugin swapped on every host, or rolled back, through a
// random host with `sluice plugin swap` and `rollback` (refused while a
// migration runs), racing the migrations the other faults start. At least
// one host runs throughout. At the end every host runs again and runs the
// module the cluster records, and every record must have been counted
// exactly once: the output stream holds, for each key, the counts 1 to n
// once each. The schedule is drawn from a seed the
// test logs; SLUICE_NEMESIS_SEED repeats it, SLUICE_NEMESIS_STEPS sets its
// length (default 6).
func TestClusterNemesis(t *testing.T) {
	if testing.Short() {
		t.Skip("starts two NATS servers and three hosts")
	}
	seed, steps := uint64(time.Now().UnixNano()), 6
	if v := os.Getenv("SLUICE_NEMESIS_SEED"); v != "" {
		n, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			t.Fatalf("SLUICE_NEMESIS_SEED: %v", err)
		}
		seed = n
	}
	if v := os.Getenv("SLUICE_NEMESIS_STEPS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			t.Fatalf("SLUICE_NEMESIS_STEPS: %q is not a count", v)
		}
		steps = n
	}
	t.Logf("schedule seed %d (SLUICE_NEMESIS_SEED=%d repeats it)", seed, seed)
	rng := rand.New(rand.NewPCG(seed, 0))
	s := startSpread(t, 2, 4500, 50, 2*time.Second, "")
	// The modules a swap picks from: wordcountv2, and the same code under
	// another hash. Both mark their outputs "v2:", which check accepts.
	v2 := filepath.Join(pluginsDir, "wordcountv2.wasm")
	code, err := os.ReadFile(v2)
	if err != nil {
		t.Fatal(err)
	}
	code3, err := registry.AppendVersion(code, "3")
	if err != nil {
		t.Fatal(err)
	}
	v3 := filepath.Join(s.dir, "wordcountv3.wasm")
	if err := os.WriteFile(v3, code3, 0o644); err != nil {
		t.Fatal(err)
	}
	ids := []string{"h1", "h2", "h3"}
	up := map[string]bool{}
	for _, id := range ids {
		s.start(id)
		up[id] = true
	}
	s.wait("the first outputs", func() bool { return s.outputs() > 0 })
	running := func() int {
		n := 0
		for _, id := range ids {
			if up[id] {
				n++
			}
		}
		return n
	}
	pick := func(isUp bool) string {
		var c []string
		for _, id := range ids {
			if up[id] == isUp {
				c = append(c, id)
			}
		}
		if len(c) == 0 {
			return ""
		}
		return c[rng.IntN(len(c))]
	}
	for step := range steps {
		before := s.outputs()
		// The faults possible now: one host runs throughout.
		ops := []string{"move", "swap"}
		if running() >= 2 {
			ops = append(ops, "kill", "stop")
		}
		if running() < len(ids) {
			ops = append(ops, "start")
		}
		switch ops[rng.IntN(len(ops))] {
		case "kill":
			id := pick(true)
			t.Logf("step %d: SIGKILL %s", step, id)
			if err := s.hosts[id].Process.Signal(syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
			_ = s.hosts[id].Wait()
			up[id] = false
		case "stop":
			id := pick(true)
			t.Logf("step %d: SIGTERM %s", step, id)
			s.stop(id)
			up[id] = false
		case "start":
			id := pick(false)
			// A host killed keeps its lease until it expires; started
			// before that, it would be refused as a host already live.
			s.wait(id+"'s lease gone", func() bool { return !s.leased(id) })
			t.Logf("step %d: start %s", step, id)
			s.start(id)
			up[id] = true
		case "move":
			to := pick(true)
			var groups []string
			for range 1 + rng.IntN(4) {
				groups = append(groups, strconv.Itoa(rng.IntN(16)))
			}
			slices.Sort(groups)
			groups = slices.Compact(groups)
			out, err := exec.Command(sluiceBin, "cluster", "move", "-c", s.file, "--groups", strings.Join(groups, ","), "--to", to, "--batch", strconv.Itoa(rng.IntN(3))).CombinedOutput()
			t.Logf("step %d: move %v to %s: %v %s", step, groups, to, err, strings.TrimSpace(string(out)))
		case "swap":
			through := pick(true)
			args := []string{"plugin", "rollback", "--data-dir", filepath.Join(s.dir, through), "--operator", "count"}
			if n := rng.IntN(3); n < 2 {
				args = []string{"plugin", "swap", "--data-dir", filepath.Join(s.dir, through), "--operator", "count", []string{v2, v3}[n]}
			}
			out, err := exec.Command(sluiceBin, args...).CombinedOutput()
			t.Logf("step %d: %s %s through %s: %v %s", step, args[1], args[len(args)-1], through, err, strings.TrimSpace(string(out)))
		}
		// Let the fault play out a little: more records counted (or all).
		time.Sleep(500 * time.Millisecond)
		s.wait(fmt.Sprintf("step %d: more records counted", step), func() bool { n := s.outputs(); return n > before || n >= s.count })
	}
	for _, id := range ids {
		if !up[id] {
			s.wait(id+"'s lease gone", func() bool { return !s.leased(id) })
			s.start(id)
		}
	}
	s.wait("every record counted", func() bool { return s.outputs() >= s.count })
	s.check()
	s.wait("every host running the module the cluster records", func() bool {
		if !s.open() {
			return false
		}
		a, err := s.c.Assignment(context.Background())
		if err != nil {
			return false
		}
		if a.Versions == nil {
			return true // no swap recorded: every host runs the file's
		}
		return s.runs(a.Versions.Operators["count"].SHA256, ids...)
	})
	s.stop(ids...)
}
