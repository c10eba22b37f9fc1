package reconfig

import (
	"syscall"
	"testing"
	"time"

	"github.com/sluicehq/sluice/cmd/sluice/internal/sluicetest"
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
