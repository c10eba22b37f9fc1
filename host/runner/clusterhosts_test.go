package runner

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/host/cluster"
	"github.com/sluicehq/sluice/host/pipeline"
)

// TestHostsCommand: a request or release command runs with sh -c, with
// the pipeline's name and the given variables in its environment; one
// that exits non-zero, or runs over its timeout, is an error naming the
// command and its exit status, not a stop of the host.
func TestHostsCommand(t *testing.T) {
	dir := t.TempDir()
	p := &pipeline.Pipeline{Name: "orders"}
	p.Control.Hosts.Timeout = time.Minute
	d := &hostsDecider{h: &Host{p: p}, log: slog.New(slog.DiscardHandler)}
	ctx := context.Background()
	out := filepath.Join(dir, "env")
	if err := d.command(ctx, "release", `echo "$SLUICE_PIPELINE $SLUICE_HOST_ID" > `+out, []string{"SLUICE_HOST_ID=h2"}); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(out); err != nil || strings.TrimSpace(string(b)) != "orders h2" {
		t.Errorf("the command saw %q (%v), want %q", b, err, "orders h2")
	}
	err := d.command(ctx, "request", "echo no capacity >&2; exit 3", nil)
	if err == nil || !strings.Contains(err.Error(), "exit status 3") || !strings.Contains(err.Error(), "the request command") {
		t.Errorf("a failing command: %v, want an error with its exit status", err)
	}
	p.Control.Hosts.Timeout = 100 * time.Millisecond
	err = d.command(ctx, "request", "sleep 30", nil)
	if err == nil || !strings.Contains(err.Error(), "ran over control.hosts.timeout") {
		t.Errorf("a command over its timeout: %v, want it killed and named", err)
	}
}

// TestHostsFigures: the decision's figures are the live active hosts
// with a current report, those without one missing, the live pool hosts,
// and whether a migration is in progress.
func TestHostsFigures(t *testing.T) {
	now := time.Date(2026, 12, 3, 8, 0, 0, 0, time.UTC)
	a := cluster.NewAssignment(4)
	a.Owners = []string{"a", "a", "a", "b"}
	for _, h := range []string{"p", "q"} {
		if err := a.AddToPool(cluster.PoolChange{Host: h}); err != nil {
			t.Fatal(err)
		}
	}
	loads := map[string]cluster.Load{
		"a": {Host: "a", Utilisation: 0.5, At: now.Add(-time.Second)},
		"b": {Host: "b", Utilisation: 0.7, At: now.Add(-time.Minute)}, // stale
		"p": {Host: "p", At: now},
	}
	f := hostsFigures(a, []string{"a", "b", "c", "p"}, loads, now, 5*time.Second)
	if len(f.Active) != 1 || f.Active[0].Host != "a" || f.Active[0].Groups != 3 || f.Active[0].Utilisation != 0.5 {
		t.Errorf("active %+v, want a with 3 groups at 0.5", f.Active)
	}
	if strings.Join(f.Missing, ",") != "b,c" || strings.Join(f.Pool, ",") != "p" || f.Migrating {
		t.Errorf("missing %v, pool %v, migrating %v; want b,c, p (q is not live), false", f.Missing, f.Pool, f.Migrating)
	}
}
