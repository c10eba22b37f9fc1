package reconfig

import (
	"context"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/sluicehq/sluice/cmd/sluice/internal/sluicetest"
	"github.com/sluicehq/sluice/connectors/natsconn/natstest"
	"github.com/sluicehq/sluice/host/cluster"
)

// TestClusterKillMidMigration moves host h1's key groups to h3 one at a
// time (sluice cluster move --batch 1) and kills h1 with SIGKILL while the
// migration runs: the moves it had not released are taken by h3 from
// their last checkpoints, its other groups go to the survivors, and every
// record is counted once.
func TestClusterKillMidMigration(t *testing.T) {
	if testing.Short() {
		t.Skip("starts three NATS servers and three hosts")
	}
	s := sluicetest.StartSpread(t, sl, 3, 3000, 50, 2*time.Second, "")
	for _, id := range []string{"h1", "h2", "h3"} {
		s.Start(id)
	}
	s.Wait("the groups spread over three hosts", func() bool {
		return s.Owned("h1") >= 5 && s.Owned("h2") >= 5 && s.Owned("h3") >= 5 && s.Settled()
	})
	s.Wait("some records counted", func() bool { return s.Outputs() > s.Count/5 })
	s.MoveAll("h1", "h3")
	if err := s.Hosts["h1"].Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = s.Hosts["h1"].Wait()
	s.Wait("h1's groups taken by the others", func() bool { return s.Owned("h2")+s.Owned("h3") == 16 && s.Settled() })
	s.Wait("every record counted", func() bool { return s.Outputs() >= s.Count })
	s.Check()
	s.Stop("h2", "h3")
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
	s := sluicetest.StartSpread(t, sl, 2, 3000, 50, 2*time.Second, "")
	s.Start("h1")
	s.Wait("h1's first outputs", func() bool { return s.Outputs() > 0 })
	s.Start("h2")
	s.Wait("the groups spread over two hosts", func() bool { return s.Owned("h1") == 8 && s.Owned("h2") == 8 && s.Settled() })
	s.MoveAll("h1", "h2")
	if err := s.Hosts["h2"].Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = s.Hosts["h2"].Wait()
	s.Wait("every group h1's, the migration over", func() bool { return s.Owned("h1") == 16 && s.Settled() })
	s.Wait("every record counted", func() bool { return s.Outputs() >= s.Count })
	s.Check()
	s.Stop("h1")
}

// TestClusterNATSServerKilledMidMigration moves host h1's key groups to
// h2 one at a time over three NATS servers, each a process of its own,
// with every stream and bucket replicated three times, and kills with
// SIGKILL the server that leads the cluster's assignment bucket while the
// migration runs, then starts it again on its directory: the migration
// finishes (every group h2's, each with one owner), and every record is
// counted exactly once.
func TestClusterNATSServerKilledMidMigration(t *testing.T) {
	if testing.Short() {
		t.Skip("starts three NATS server processes and two hosts")
	}
	// The lease outlasts the elections of new stream and bucket leaders
	// that follow a server's loss (seconds on a loaded machine).
	s := sluicetest.StartSpreadOn(t, sl, natstest.StartClusterProcesses(t, 3), 3000, 50, 15*time.Second, ", replicas: 3")
	ctx := context.Background()
	if _, err := s.JS.CreateStream(ctx, jetstream.StreamConfig{Name: "OUT", Subjects: []string{"out"}, Replicas: 3, Duplicates: 2 * time.Minute}); err != nil {
		t.Fatal(err)
	}
	s.Start("h1")
	s.Wait("h1's first outputs", func() bool { return s.Outputs() > 0 })
	s.Start("h2")
	s.Wait("the groups spread over two hosts", func() bool { return s.Owned("h1") == 8 && s.Owned("h2") == 8 && s.Settled() })
	s.MoveAll("h1", "h2")
	var leader string
	s.Wait("the assignment bucket's leader", func() bool {
		st, err := s.JS.Stream(ctx, "KV_"+cluster.BucketName("spread"))
		if err != nil {
			return false
		}
		info, err := st.Info(ctx)
		if err != nil || info.Cluster == nil || info.Cluster.Leader == "" {
			return false
		}
		leader = info.Cluster.Leader
		return true
	})
	if a, err := s.Cluster.Assignment(ctx); err == nil && a.Migration == nil {
		t.Log("the migration ended before the server was killed")
	}
	killed := s.NATS.Index(leader)
	if killed < 0 {
		t.Fatalf("the bucket's leader %q is not one of the servers", leader)
	}
	s.NATS.Kill(killed)
	t.Logf("killed %s, the assignment bucket's leader, during the migration", leader)
	before := s.Outputs()
	s.Wait("more records counted with a server killed", func() bool { n := s.Outputs(); return n > before || n >= s.Count })
	s.NATS.Restart(killed)
	s.Wait("every group h2's, the migration over", func() bool { return s.Owned("h2") == 16 && s.Settled() })
	s.Wait("every record counted", func() bool { return s.Outputs() >= s.Count })
	s.Check()
	s.Stop("h1", "h2")
}
