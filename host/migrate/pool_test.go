package migrate_test

import (
	"context"
	"errors"
	"log/slog"
	"testing"
	"time"

	"github.com/sluicehq/sluice/host/cluster"
	"github.com/sluicehq/sluice/host/migrate"
)

// TestCoordinatePool: the coordinator balances the key groups over the
// active hosts and leaves a pool host out; a released host's groups are
// moved off it; when the only active host leaves, the live pool host is
// taken into service (by failover) and given its groups. No host steps
// the migrations: the test reads them from the table and advances them
// itself.
func TestCoordinatePool(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	_, js, _ := setup(t, ctx)
	const keyGroups = 16
	quiet := slog.New(slog.DiscardHandler)
	cs := map[string]*cluster.Cluster{}
	for _, id := range []string{"a", "b", "p"} {
		c, err := cluster.Open(ctx, js, cluster.Config{Pipeline: "p", Text: []byte("name: p\n"), KeyGroups: keyGroups, Lease: lease, Logger: quiet})
		if err != nil {
			t.Fatal(err)
		}
		if err := c.Join(ctx, cluster.HostInfo{ID: id}); err != nil {
			t.Fatal(err)
		}
		cs[id] = c
	}
	c := cs["b"]
	if _, err := c.Update(ctx, func(a *cluster.Assignment) error {
		a.Owners = cluster.Spread(keyGroups, []string{"a"})
		return a.AddToPool(cluster.PoolChange{Host: "p", By: "host p"})
	}); err != nil {
		t.Fatal(err)
	}
	// finish installs every move of the migration in the table, step by
	// step, as the hosts would, and returns the table after it.
	finish := func() *cluster.Assignment {
		t.Helper()
		var a *cluster.Assignment
		waitFor(t, func() bool {
			var err error
			a, err = c.Assignment(ctx)
			return err == nil && a.Migration != nil
		})
		for a.Migration != nil {
			var err error
			a, err = c.Update(ctx, func(a *cluster.Assignment) error {
				for _, mv := range a.Migration.Steps[a.Migration.Current].Moves {
					for _, st := range []cluster.StepState{cluster.StepReleased, cluster.StepInstalled} {
						if err := a.Mark(mv.Group, st); err != nil {
							return err
						}
					}
				}
				_, err := a.Advance()
				return err
			})
			if err != nil {
				t.Fatal(err)
			}
		}
		return a
	}
	// coordinate runs Coordinate as host self until the returned
	// function is called, which waits for it to end.
	coordinate := func(self string) (stop func()) {
		done := make(chan struct{})
		coordCtx, cancel := context.WithCancel(ctx)
		go func() {
			defer close(done)
			migrate.Coordinate(coordCtx, cs[self], self, 10*time.Millisecond, quiet)
		}()
		return func() { cancel(); <-done }
	}
	stopA := coordinate("a")

	a := finish()
	if got := len(migrate.Owned(a, "a")); got != 8 || len(migrate.Owned(a, "b")) != 8 || len(migrate.Owned(a, "p")) != 0 {
		t.Fatalf("balanced over a and b: a %d, b %v, p %v", got, migrate.Owned(a, "b"), migrate.Owned(a, "p"))
	}

	if _, err := migrate.Release(ctx, c, cluster.PoolChange{Host: "b", By: "test"}); err != nil {
		t.Fatal(err)
	}
	a = finish()
	if len(migrate.Owned(a, "a")) != 16 || !migrate.Drained(a, "b") || !a.Pooled("b") {
		t.Fatalf("after b was released: a owns %d, b %v, pool %v", len(migrate.Owned(a, "a")), migrate.Owned(a, "b"), a.PoolHosts())
	}
	if _, err := migrate.Release(ctx, c, cluster.PoolChange{Host: "a", By: "test"}); !errors.Is(err, migrate.ErrLastHost) {
		t.Fatalf("release of the last active host: %v, want ErrLastHost", err)
	}

	// a leaves: b, the lowest live host, coordinates now, finds no
	// active host and takes b itself (the pool's first live host) into
	// service, then gives it a's groups.
	stopA()
	defer coordinate("b")()
	if err := cs["a"].Leave(ctx); err != nil {
		t.Fatal(err)
	}
	a = finish()
	if len(migrate.Owned(a, "b")) != 16 || a.Pooled("b") || !a.Pooled("p") || a.Pool.Last.By != "failover" {
		t.Fatalf("after a left: b owns %d, pool %v, last change %+v", len(migrate.Owned(a, "b")), a.PoolHosts(), a.Pool.Last)
	}
	if _, err := migrate.Activate(ctx, c, cluster.PoolChange{Host: "a", By: "test"}); !errors.Is(err, migrate.ErrNotLive) {
		t.Errorf("activation of a host with no lease: %v, want ErrNotLive", err)
	}
}
