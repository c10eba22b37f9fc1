package plugin

import (
	"context"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/sluicehq/sluice/abi"
	"github.com/sluicehq/sluice/runtime"
	"github.com/sluicehq/sluice/sdk/go/wasmbuild"
	"github.com/sluicehq/sluice/txn"
)

// The deterministic guest environment end to end: Go SDK guests that call
// time.Now and math/rand (seeded from crypto/rand) inside their handlers,
// run through Instance as the executor and the transactional operator run
// them.

// determinismGuests are built on first use: main_test.go's TestMain builds
// the guests of testdata/guests, these live under testdata/determinism.
var determinismGuests = struct {
	once sync.Once
	mods map[string][]byte
	err  error
}{}

func determinismGuest(t testing.TB, name string) []byte {
	t.Helper()
	g := &determinismGuests
	g.once.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		g.mods, g.err = wasmbuild.GoModules(ctx, map[string]string{
			"mapop": filepath.Join("testdata", "determinism", "mapop"),
			"txnop": filepath.Join("testdata", "determinism", "txnop"),
		})
	})
	if g.err != nil {
		t.Fatal(g.err)
	}
	return g.mods[name]
}

// loadDeterminism loads a determinism guest as kind.
func loadDeterminism(t testing.TB, name string, kind Kind) *Plugin {
	t.Helper()
	ctx := context.Background()
	p, err := Load(ctx, newEngine(t, engineConfig()), name+".wasm", determinismGuest(t, name), kind)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close(ctx) })
	return p
}

func newInstance(t testing.TB, p *Plugin) *Instance {
	t.Helper()
	ctx := context.Background()
	inst, err := p.NewInstance(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = inst.Close(ctx) })
	return inst
}

// stamps runs in through inst and returns each output's value ("<time>
// <random>"), by origin.
func stamps(t *testing.T, inst *Instance, in []abi.Record) []string {
	t.Helper()
	var out Output
	if err := inst.Process(context.Background(), in, nil, &out); err != nil {
		t.Fatal(err)
	}
	got := make([]string, len(in))
	for _, r := range out.Records {
		got[r.Origin] = string(r.Value)
	}
	return got
}

func stampTime(t *testing.T, s string) int64 {
	t.Helper()
	var at, rnd uint64
	if _, err := fmt.Sscanf(s, "%d %d", &at, &rnd); err != nil {
		t.Fatalf("output %q: %v", s, err)
	}
	return int64(at)
}

func TestProcessEnvironment(t *testing.T) {
	p := loadDeterminism(t, "mapop", KindMap)
	a, b := newInstance(t, p), newInstance(t, p)
	batch := records("x", "y", "z")

	want := stamps(t, a, batch)
	// Within a call, time.Now reads the time of the call's first record.
	for k, s := range want {
		if at := stampTime(t, s); at != batch[0].Time {
			t.Errorf("record %d: time.Now read %d, want the batch's first record's time %d", k, at, batch[0].Time)
		}
	}
	if want[0] == want[1] || want[1] == want[2] {
		t.Errorf("records of one batch drew the same numbers: %q", want)
	}
	// The same batch again, on the same instance and on another with a
	// history of its own: the same outputs.
	stamps(t, b, records("other", "batches", "first"))
	if got := stamps(t, a, batch); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("the batch again on the same instance gave %q, want %q", got, want)
	}
	if got := stamps(t, b, batch); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("the batch on another instance gave %q, want %q", got, want)
	}
	// A batch's first record gets what it gets alone: the environment
	// follows the record, not the batch it came in.
	alone := stamps(t, b, batch[1:2])
	tail := stamps(t, a, batch[1:])
	if alone[0] != tail[0] {
		t.Errorf("record y alone gave %q, first of a batch %q", alone[0], tail[0])
	}
	if at := stampTime(t, alone[0]); at != batch[1].Time {
		t.Errorf("record y alone: time.Now read %d, want its time %d", at, batch[1].Time)
	}
	// Another identity (one header more), another stream.
	other := batch[1]
	other.Headers = []abi.Header{{Name: []byte("h"), Value: []byte("v")}}
	if got := stamps(t, a, []abi.Record{other}); got[0] == alone[0] {
		t.Errorf("a record with another header drew the same number: %q", got[0])
	}
}

// After a guest fails part-way through a batch, the host runs the batch's
// records one at a time: each gets what it would get alone.
func TestProcessEnvironmentAfterFailure(t *testing.T) {
	p := loadDeterminism(t, "mapop", KindMap)
	inst := newInstance(t, p)
	batch := records("x", "panic", "z")
	got := stamps(t, inst, batch)
	for _, k := range []int{0, 2} {
		if alone := stamps(t, inst, batch[k:k+1]); alone[0] != got[k] {
			t.Errorf("record %d after the failure gave %q, alone %q", k, got[k], alone[0])
		}
	}
}

// txnHarness plans a batch on one instance and applies its operations on
// others, as the transactional operator does.
type txnHarness struct {
	t      *testing.T
	events []abi.Record
	ops    [][]txn.Op // per event
}

func planEvents(t *testing.T, inst *Instance, events []abi.Record) *txnHarness {
	t.Helper()
	h := &txnHarness{t: t, events: events, ops: make([][]txn.Op, len(events))}
	err := inst.Plan(context.Background(), events, func(d *abi.OpDecl) error {
		h.ops[d.Event] = append(h.ops[d.Event], txn.Op{Fn: d.Fn, Write: txn.Key{Table: d.Table, Key: string(d.Key)}})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// apply runs operation op of event ev on inst and returns the value it
// writes.
func (h *txnHarness) apply(inst *Instance, ev, op int) string {
	h.t.Helper()
	eff, err := inst.ApplyOp(context.Background(), ev, op, &h.ops[ev][op], fakeAccess{})
	if err != nil {
		h.t.Fatal(err)
	}
	return string(eff.Value)
}

func TestApplyEnvironment(t *testing.T) {
	p := loadDeterminism(t, "txnop", KindTransactional)
	planner, a, b := newInstance(t, p), newInstance(t, p), newInstance(t, p)
	events := records("e0", "e1", "e2")
	h := planEvents(t, planner, events)
	a.SetEvents(events)
	b.SetEvents(events)

	want := h.apply(a, 1, 0)
	if at := stampTime(t, want); at != events[1].Time {
		t.Errorf("apply of event 1: time.Now read %d, want the event's time %d", at, events[1].Time)
	}
	// Executed again, on the same instance or another with a history.
	h.apply(b, 0, 0)
	h.apply(b, 2, 1)
	if got := h.apply(a, 1, 0); got != want {
		t.Errorf("apply again on the same instance gave %q, want %q", got, want)
	}
	if got := h.apply(b, 1, 0); got != want {
		t.Errorf("apply on another instance gave %q, want %q", got, want)
	}
	// Another operation of the event, another event: other streams.
	if got := h.apply(a, 1, 1); got == want || stampTime(t, got) != events[1].Time {
		t.Errorf("operation 1 of event 1 gave %q (operation 0 %q)", got, want)
	}
	if got := h.apply(a, 2, 0); got == want {
		t.Errorf("event 2 drew what event 1 drew: %q", got)
	}
	// The batch cut differently (after a recovery): the event's operation
	// draws the same, under its new index.
	b.SetEvents(events[1:])
	if got := h.apply(b, 0, 0); got != want {
		t.Errorf("event 1 as event 0 of another batch gave %q, want %q", got, want)
	}
	// Without the events: the epoch, and a stream of the indices.
	b.SetEvents(nil)
	got := h.apply(b, 1, 0)
	if at := stampTime(t, got); at != 0 {
		t.Errorf("apply without SetEvents: time.Now read %d, want 0", at)
	}
	a.SetEvents(nil)
	if again := h.apply(a, 1, 0); again != got {
		t.Errorf("apply without SetEvents on another instance gave %q, want %q", again, got)
	}
}

func TestCallEnvs(t *testing.T) {
	var c callEnvs
	r := abi.Record{Time: 5, Key: []byte("k"), Value: []byte("v"), Headers: []abi.Header{{Name: []byte("n"), Value: []byte("x")}}}
	base := c.identity(&r)
	if c.identity(&r) != base {
		t.Fatal("identity is not a function of the record")
	}
	// Each field counts, and moving a byte from one field to the next
	// changes the identity (fields are length-prefixed).
	variants := []abi.Record{
		{Time: 6, Key: r.Key, Value: r.Value, Headers: r.Headers},
		{Time: 5, Key: []byte("kv"), Value: nil, Headers: r.Headers},
		{Time: 5, Key: r.Key, Value: []byte("w"), Headers: r.Headers},
		{Time: 5, Key: r.Key, Value: r.Value},
		{Time: 5, Key: r.Key, Value: r.Value, Headers: []abi.Header{{Name: []byte("nx")}}},
	}
	for k := range variants {
		if c.identity(&variants[k]) == base {
			t.Errorf("variant %d has the record's identity", k)
		}
	}
	if r.Origin = 7; c.identity(&r) != base {
		t.Error("the Origin, a batch index, changed the identity")
	}
	env := c.record(domainProcess, &r)
	if env.Time != 5 {
		t.Errorf("record env time = %d, want 5", env.Time)
	}
	seen := map[[2]uint64]string{env.Seed: "process"}
	for name, s := range map[string][2]uint64{
		"plan":          c.record(domainPlan, &r).Seed,
		"post":          c.record(domainPost, &r).Seed,
		"apply op 0":    seed(base, domainApply, 0),
		"apply op 1":    seed(base, domainApply, 1),
		"apply, no evs": applySeed(&c, 0, 0),
	} {
		if other, dup := seen[s]; dup {
			t.Errorf("%s and %s share a seed", name, other)
		}
		seen[s] = name
	}
	c.setEvents([]abi.Record{r})
	// An apply's seed is the Seeder's, computed when the guest reads.
	if got := c.apply(0, 1); got != (runtime.CallEnv{Time: 5, Seeder: &c}) {
		t.Errorf("apply env = %+v", got)
	}
	if got, want := c.Seed(), seed(base, domainApply, 1); got != want {
		t.Errorf("apply seed = %x, want %x", got, want)
	}
	if got := c.apply(1, 0); got.Time != 0 {
		t.Errorf("apply env of an event outside the batch = %+v", got)
	}
}

// applySeed returns the seed of the apply CallEnv of operation op of event
// t.
func applySeed(c *callEnvs, t, op int) [2]uint64 {
	env := c.apply(t, op)
	if env.Seeder == nil {
		return env.Seed
	}
	return env.Seeder.Seed()
}

// BenchmarkCallEnvs measures what the host adds to each guest call to give
// it its environment: hashing the first record (64-byte value) of a
// process call; an apply's environment, whose seed is computed only for a
// guest that reads random bytes; and that seed, from the event's identity
// cached for the batch.
//
//	go test -run XXX -bench CallEnvs ./host/plugin/
func BenchmarkCallEnvs(b *testing.B) {
	var c callEnvs
	r := abi.Record{Time: 1, Key: []byte("key-000001"), Value: make([]byte, 64)}
	b.Run("process", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			_ = c.record(domainProcess, &r)
		}
	})
	events := make([]abi.Record, 1024)
	for k := range events {
		events[k] = r
	}
	c.setEvents(events)
	b.Run("apply", func(b *testing.B) {
		b.ReportAllocs()
		k := 0
		for b.Loop() {
			_ = c.apply(k&1023, 0)
			k++
		}
	})
	b.Run("apply-seed", func(b *testing.B) {
		b.ReportAllocs()
		k := 0
		for b.Loop() {
			_ = applySeed(&c, k&1023, 0)
			k++
		}
	})
}
