package cluster

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

func TestSetVersionRefusedDuringMigration(t *testing.T) {
	a := &Assignment{KeyGroups: 4, Owners: []string{"a", "a", "b", "b"}}
	if err := a.Begin("m1", []Step{{Moves: []Move{{Group: 0, From: "a", To: "b"}}}}); err != nil {
		t.Fatal(err)
	}
	err := a.SetVersion("count", OperatorVersion{SHA256: testHash, Name: "count.wasm", Reason: ReasonSwap, Host: "a"})
	if !errors.Is(err, ErrMigration) || !contains(err.Error(), "m1") {
		t.Fatalf("a swap during migration m1: %v, want ErrMigration naming m1", err)
	}
	if a.Versions != nil {
		t.Fatalf("the refused swap was recorded: %+v", a.Versions)
	}
}

func TestSetVersionBumpsEpoch(t *testing.T) {
	a := NewAssignment(4)
	for i, op := range []string{"count", "split", "count"} {
		if err := a.SetVersion(op, OperatorVersion{SHA256: testHash, Name: op + ".wasm", Reason: ReasonSwap, Host: "a"}); err != nil {
			t.Fatal(err)
		}
		if got := a.Versions.Operators[op].Epoch; got != uint64(i+1) || a.Versions.Epoch != uint64(i+1) {
			t.Fatalf("swap %d: operator epoch %d, record epoch %d, want %d", i+1, got, a.Versions.Epoch, i+1)
		}
	}
	c := a.Clone()
	c.Versions.Operators["count"] = OperatorVersion{}
	if a.Versions.Operators["count"].SHA256 != testHash {
		t.Fatal("Clone shares the versions record")
	}
}

func TestPending(t *testing.T) {
	a := NewAssignment(4)
	if p := Pending(a, nil, []string{"a"}); p != nil {
		t.Fatalf("no record: pending %v, want none", p)
	}
	if err := a.SetVersion("count", OperatorVersion{SHA256: testHash, Name: "count.wasm", Reason: ReasonSwap, Host: "a"}); err != nil {
		t.Fatal(err)
	}
	reports := map[string]Running{
		"a": {Host: "a", Operators: map[string]string{"count": testHash}},
		"b": {Host: "b", Operators: map[string]string{"count": "old"}},
		"d": {Host: "d", Operators: map[string]string{"count": "old"}}, // not live
	}
	if p := Pending(a, reports, []string{"c", "b", "a"}); !slices.Equal(p, []string{"b", "c"}) {
		t.Fatalf("pending %v, want [b c] (b runs the old module, c has not reported)", p)
	}
	if err := SwapPending(a, reports, []string{"a", "b"}); !errors.Is(err, ErrSwapPending) || !contains(err.Error(), "hosts b ") {
		t.Fatalf("SwapPending: %v, want ErrSwapPending naming b", err)
	}
	if err := SwapPending(a, reports, []string{"a"}); err != nil {
		t.Fatalf("every live host switched: %v", err)
	}
}

func TestVersionRecordCompareAndSet(t *testing.T) {
	url := startServer(t)
	ca := open(t, url, Config{})
	cb := open(t, url, Config{})
	join(t, ca, "a")
	join(t, cb, "b")
	ctx := testCtx(t)
	other := "0" + testHash[1:]
	// a's swap conflicts with b's, written between a's read and a's
	// write: a reads again and its swap lands on top of b's, with the
	// next epoch.
	calls := 0
	got, err := ca.Update(ctx, func(x *Assignment) error {
		calls++
		if calls == 1 {
			if _, err := cb.Update(ctx, func(y *Assignment) error {
				return y.SetVersion("count", OperatorVersion{SHA256: other, Name: "b.wasm", Reason: ReasonSwap, Host: "b"})
			}); err != nil {
				return err
			}
		}
		return x.SetVersion("count", OperatorVersion{SHA256: testHash, Name: "a.wasm", Reason: ReasonSwap, Host: "a", At: time.Now()})
	})
	if err != nil {
		t.Fatal(err)
	}
	if calls != 2 {
		t.Errorf("a's swap ran %d times, want 2", calls)
	}
	if v := got.Versions; v.Epoch != 2 || v.Operators["count"].SHA256 != testHash || v.Operators["count"].Epoch != 2 {
		t.Fatalf("record %+v, want a's module at epoch 2", v)
	}

	// Reports round-trip, by host.
	if err := ca.Report(ctx, Running{Host: "a", Operators: map[string]string{"count": testHash}, Epoch: 2}); err != nil {
		t.Fatal(err)
	}
	rs, err := cb.Reports(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if r := rs["a"]; !r.Runs(got.Versions) || r.Epoch != 2 || len(rs) != 1 {
		t.Fatalf("reports %+v, want a's, running epoch 2", rs)
	}
	// A report edited by hand into something else is refused by name.
	if _, err := ca.kv.Put(ctx, keyRunningPrefix+"b", []byte("nonsense")); err != nil {
		t.Fatal(err)
	}
	if _, err := ca.Reports(ctx); !errors.Is(err, ErrInvalidAssignment) || !contains(err.Error(), `"running.b"`) {
		t.Fatalf("a report edited by hand: %v, want ErrInvalidAssignment naming running.b", err)
	}
}

func TestModules(t *testing.T) {
	url := startServer(t)
	c := open(t, url, Config{})
	ctx := testCtx(t)
	m, err := OpenModules(ctx, c.js, "orders", 0)
	if err != nil {
		t.Fatal(err)
	}
	module := []byte("\x00asm\x01\x00\x00\x00")
	hash, err := m.Put(ctx, module)
	if err != nil {
		t.Fatal(err)
	}
	if again, err := m.Put(ctx, module); err != nil || again != hash {
		t.Fatalf("put again: %q, %v; want %q", again, err, hash)
	}
	// Another handle, as another host opens it.
	m2, err := OpenModules(ctx, c.js, "orders", 0)
	if err != nil {
		t.Fatal(err)
	}
	got, err := m2.Get(ctx, hash)
	if err != nil || string(got) != string(module) {
		t.Fatalf("get: %q, %v; want the module", got, err)
	}
	m2.readAgain = []time.Duration{time.Millisecond, time.Millisecond, time.Millisecond}
	if _, err := m2.Get(ctx, testHash); !errors.Is(err, ErrModuleNotFound) {
		t.Fatalf("get of a module never put: %v, want ErrModuleNotFound", err)
	}
	// A read whose chunks fail the object's digest is made again, up to
	// len(readAgain) more times; a fault that lasts is reported.
	store := &corruptingStore{ObjectStore: m2.obs, bad: len(m2.readAgain)}
	m2.obs = store
	if got, err := m2.Get(ctx, hash); err != nil || string(got) != string(module) {
		t.Fatalf("get after %d corrupt reads: %q, %v; want the module", len(m2.readAgain), got, err)
	}
	store.bad = len(m2.readAgain) + 1
	if _, err := m2.Get(ctx, hash); !errors.Is(err, jetstream.ErrDigestMismatch) {
		t.Fatalf("get while every read is corrupt: %v, want the digest mismatch", err)
	}
}

// corruptingStore is an object store whose first bad reads of an object
// fail their digest, as nats.go reports a read whose chunks do not match.
type corruptingStore struct {
	jetstream.ObjectStore
	bad int
}

func (s *corruptingStore) GetBytes(ctx context.Context, name string, opts ...jetstream.GetObjectOpt) ([]byte, error) {
	if s.bad > 0 {
		s.bad--
		return nil, jetstream.ErrDigestMismatch
	}
	return s.ObjectStore.GetBytes(ctx, name, opts...)
}
