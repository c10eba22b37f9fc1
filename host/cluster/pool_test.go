package cluster

import (
	"errors"
	"slices"
	"testing"
)

// TestPoolChanges: a host put into the pool is in it, counted by the
// epoch, and taken out by Activate; Active leaves pool hosts out.
func TestPoolChanges(t *testing.T) {
	a := NewAssignment(4)
	a.Owners = Spread(4, []string{"a", "b"})
	if err := a.AddToPool(PoolChange{Host: "c", By: "host c"}); err != nil {
		t.Fatal(err)
	}
	if err := a.AddToPool(PoolChange{Host: "c", By: "host c"}); err != nil {
		t.Fatal(err)
	}
	if !a.Pooled("c") || a.PoolEpoch() != 1 {
		t.Fatalf("after pooling c twice: pooled %v epoch %d, want true 1", a.Pooled("c"), a.PoolEpoch())
	}
	if got := a.Active([]string{"a", "b", "c"}); !slices.Equal(got, []string{"a", "b"}) {
		t.Errorf("Active = %v, want [a b]", got)
	}
	if err := a.Validate([]string{"a", "b", "c"}); err != nil {
		t.Fatal(err)
	}
	if err := a.Activate(PoolChange{Host: "c", By: "cli"}); err != nil {
		t.Fatal(err)
	}
	if a.Pooled("c") || a.PoolEpoch() != 2 || a.Pool.Last.Action != PoolActionActivate || a.Pool.Last.By != "cli" {
		t.Fatalf("after activating c: pooled %v epoch %d last %+v", a.Pooled("c"), a.PoolEpoch(), a.Pool.Last)
	}
	err := a.Activate(PoolChange{Host: "c", By: "cli"})
	if !errors.Is(err, ErrPool) {
		t.Fatalf("activating a host not in the pool: %v, want ErrPool", err)
	}
}

// TestPoolEpochCheck: of two decisions made on one pool epoch, the
// second is refused, even for another host.
func TestPoolEpochCheck(t *testing.T) {
	a := NewAssignment(4)
	a.Owners = Spread(4, []string{"a"})
	for _, h := range []string{"b", "c"} {
		if err := a.AddToPool(PoolChange{Host: h}); err != nil {
			t.Fatal(err)
		}
	}
	seen := a.PoolEpoch()
	first := a.Clone()
	if err := first.Activate(PoolChange{Host: "b", Expect: true, Epoch: seen}); err != nil {
		t.Fatal(err)
	}
	// The second decider read the table the first wrote (its CAS failed
	// and Update read again) and names the epoch it decided on.
	second := first.Clone()
	err := second.Activate(PoolChange{Host: "c", Expect: true, Epoch: seen})
	if !errors.Is(err, ErrPool) {
		t.Fatalf("a second activation decided on epoch %d: %v, want ErrPool", seen, err)
	}
	if !second.Pooled("c") {
		t.Error("the refused activation changed the pool")
	}
}

// TestPoolRefusesIncomingMove: a host a migration brings groups to is
// not put into the pool.
func TestPoolRefusesIncomingMove(t *testing.T) {
	a := NewAssignment(4)
	a.Owners = []string{"a", "a", "a", "a"}
	if err := a.Begin("m", []Step{{Moves: []Move{{Group: 0, From: "a", To: "b"}}}}); err != nil {
		t.Fatal(err)
	}
	if err := a.AddToPool(PoolChange{Host: "b"}); !errors.Is(err, ErrPool) {
		t.Fatalf("pooling a migration's destination: %v, want ErrPool", err)
	}
	if err := a.AddToPool(PoolChange{Host: "a"}); err != nil {
		t.Fatalf("pooling a migration's source: %v", err)
	}
	if err := a.Validate([]string{"a", "b"}); err != nil {
		t.Fatalf("a pool host that is a migration's source: %v", err)
	}
}

// TestPoolCloneIsDeep: a change of a clone's pool leaves the original.
func TestPoolCloneIsDeep(t *testing.T) {
	a := NewAssignment(2)
	if err := a.AddToPool(PoolChange{Host: "a"}); err != nil {
		t.Fatal(err)
	}
	c := a.Clone()
	if err := c.Activate(PoolChange{Host: "a"}); err != nil {
		t.Fatal(err)
	}
	if !a.Pooled("a") || a.Pool.Last.Action != PoolActionPool {
		t.Errorf("the original changed with its clone: %+v", a.Pool)
	}
}
