package migrate_test

import (
	"context"
	"log/slog"
	"slices"
	"testing"
	"time"

	"github.com/sluicehq/sluice/host/cluster"
	"github.com/sluicehq/sluice/host/migrate"
)

// TestCoordinateFailsOverInOneStep has three hosts own the key groups;
// one leaves without handing its groups over, as a host whose lease
// expired does. The coordinator (the live host with the lowest id) then
// starts a migration that moves that host's groups, and only those, to
// the live hosts in one step, dealt evenly. No host steps it, so the
// migration stays in the table to be read.
func TestCoordinateFailsOverInOneStep(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	_, js, _ := setup(t, ctx)
	const keyGroups = 64 // c's 21 would take 3 steps in batches of 8
	quiet := slog.New(slog.DiscardHandler)
	ids := []string{"a", "b", "c"}
	cs := make([]*cluster.Cluster, len(ids))
	for i, id := range ids {
		c, err := cluster.Open(ctx, js, cluster.Config{Pipeline: "p", Text: []byte("name: p\n"), KeyGroups: keyGroups, Lease: lease, Logger: quiet})
		if err != nil {
			t.Fatal(err)
		}
		if err := c.Join(ctx, cluster.HostInfo{ID: id}); err != nil {
			t.Fatal(err)
		}
		cs[i] = c
	}
	before, err := cs[0].Update(ctx, func(a *cluster.Assignment) error {
		a.Owners = cluster.Spread(keyGroups, ids)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := cs[2].Leave(ctx); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	coordCtx, stop := context.WithCancel(ctx)
	go func() {
		defer close(done)
		migrate.Coordinate(coordCtx, cs[0], "a", 10*time.Millisecond, quiet)
	}()
	defer func() { stop(); <-done }()
	var a *cluster.Assignment
	waitFor(t, func() bool {
		a, err = cs[1].Assignment(ctx)
		return err == nil && a.Migration != nil
	})
	m := a.Migration
	if len(m.Steps) != 1 {
		t.Fatalf("%d steps, want 1 (the dead host's groups all at once)", len(m.Steps))
	}
	var moved []int
	to := map[string]int{}
	for _, mv := range m.Steps[0].Moves {
		if mv.From != "c" || (mv.To != "a" && mv.To != "b") {
			t.Errorf("group %d moves from %s to %s; want from c to a or b", mv.Group, mv.From, mv.To)
		}
		moved = append(moved, mv.Group)
		to[mv.To]++
	}
	slices.Sort(moved)
	if want := migrate.Owned(before, "c"); !slices.Equal(moved, want) {
		t.Errorf("moves groups %v, want c's %v", moved, want)
	}
	if d := to["a"] - to["b"]; d < -1 || d > 1 {
		t.Errorf("a takes %d groups and b %d: want them within one", to["a"], to["b"])
	}
}
