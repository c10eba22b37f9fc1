package failover

import (
	"context"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/sluicehq/sluice/cmd/sluice/internal/sluicetest"
)

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
	s := sluicetest.StartSpread(t, sl, 3, 3000, 50, 2*time.Second, "")
	s.Start("h1")
	s.Wait("h1's first outputs", func() bool { return s.Outputs() > 0 })
	s.Start("h2")
	s.Start("h3")
	s.Wait("the groups spread over three hosts", func() bool {
		return s.Owned("h1") >= 5 && s.Owned("h2") >= 5 && s.Owned("h3") >= 5
	})
	s.Wait("some records counted on every host", func() bool { return s.Outputs() > s.Count/4 })
	if err := s.Hosts["h3"].Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = s.Hosts["h3"].Wait()
	s.Wait("h3's groups taken by the others", func() bool { return s.Owned("h1")+s.Owned("h2") == 16 })
	s.Wait("every record counted", func() bool { return s.Outputs() >= s.Count })
	s.Check()
	s.Stop("h1", "h2")
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
	s := sluicetest.StartSpread(t, sl, 3, 3000, 50, 15*time.Second, ", replicas: 3")
	ctx := context.Background()
	if _, err := s.JS.CreateStream(ctx, jetstream.StreamConfig{Name: "OUT", Subjects: []string{"out"}, Replicas: 3, Duplicates: 2 * time.Minute}); err != nil {
		t.Fatal(err)
	}
	s.Start("h1")
	s.Start("h2")
	s.Wait("the groups spread over two hosts", func() bool { return s.Owned("h1") == 8 && s.Owned("h2") == 8 })
	s.Wait("some records counted", func() bool { return s.Outputs() > s.Count/4 })
	s.NATS.Stop(0)
	s.Wait("more records counted with a server down", func() bool { return s.Outputs() > s.Count/2 })
	s.NATS.Restart(0)
	s.Wait("every record counted", func() bool { return s.Outputs() >= s.Count })
	s.Check()
	s.Stop("h1", "h2")
}
