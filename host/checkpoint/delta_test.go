package checkpoint

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/sluicehq/sluice/state"
)

// TestDeltas ships a group whole, then changes of it as deltas, and checks
// what every reader gets (Get, Load into an empty store, a replica) against
// the source's export; that a change of most of the group is put whole;
// and that List describes the groups and not their deltas.
func TestDeltas(t *testing.T) {
	js := startJS(t)
	ctx := testCtx(t)
	const groups = 4
	src := openStore(t, groups)
	fill(t, src, "v1")
	se := src.NewSession()
	counts := src.Table("counts")
	for n := 3; n < 60; n++ {
		if err := se.Put(counts, keyOf(1, groups, n), bytes.Repeat([]byte{'x'}, 64)); err != nil {
			t.Fatal(err)
		}
	}
	commit(t, src)
	a := openBucket(t, js, "orders", "a")
	b := openBucket(t, js, "orders", "b")
	if _, err := a.Ship(ctx, src, all(groups), floors); err != nil {
		t.Fatal(err)
	}
	r := b.NewReplica([]int{1})
	if _, err := r.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	check := func(what string) (replicaFetched int64) {
		t.Helper()
		want, err := src.ExportKeyGroup(1)
		if err != nil {
			t.Fatal(err)
		}
		g, err := b.Get(ctx, 1)
		if err != nil || !bytes.Equal(g.Data, want) || !bytes.Equal(g.Meta, floors(1)) {
			t.Fatalf("%s: Get: %v; the export equal: %v", what, err, err == nil && bytes.Equal(g.Data, want))
		}
		rg, n, err := r.Get(ctx, 1)
		if err != nil || !bytes.Equal(rg.Data, want) {
			t.Fatalf("%s: the replica's Get: %v; the export equal: %v", what, err, err == nil && bytes.Equal(rg.Data, want))
		}
		dst := openStore(t, groups)
		if _, err := b.Load(ctx, dst, 1); err != nil {
			t.Fatalf("%s: Load: %v", what, err)
		}
		commit(t, dst)
		if got, want := dump(t, dst, nil), dump(t, src, []int{1}); !slices.Equal(got, want) {
			t.Fatalf("%s: loaded state differs:\n got %q\nwant %q", what, got, want)
		}
		return n
	}

	// Two rounds of a changed and a deleted key: each a delta against the
	// export put whole, the second replacing the first.
	for round := range 2 {
		put(t, src, 1, fmt.Sprint("changed ", round))
		if err := se.Delete(counts, keyOf(1, groups, 10+round)); err != nil {
			t.Fatal(err)
		}
		commit(t, src)
		before := a.Stats()
		shipped, err := a.Ship(ctx, src, all(groups), floors)
		if err != nil {
			t.Fatal(err)
		}
		st := a.Stats()
		if !slices.Equal(shipped.Groups, []int{1}) || st.Deltas-before.Deltas != 1 || st.Puts != before.Puts {
			t.Fatalf("round %d: shipped %+v; stats %+v, before %+v", round, shipped, st, before)
		}
		info, err := a.obs.GetInfo(ctx, ObjectName(1))
		if err != nil || shipped.Bytes*4 > int64(info.Size) {
			t.Fatalf("round %d: a delta of two keys among 60 is %d bytes, the object %v (%v)", round, shipped.Bytes, info, err)
		}
		// List describes the checkpoint's size as the object's and its
		// delta's.
		infos, err := b.List(ctx)
		if err != nil || len(infos) != groups {
			t.Fatalf("round %d: List: %v, %v", round, infos, err)
		}
		if got, want := infos[1].Size, int64(info.Size)+shipped.Bytes-int64(len(floors(1))); got != want {
			t.Fatalf("round %d: List gives group 1 %d bytes, want the object's %d and the delta's %d", round, got, info.Size, want-int64(info.Size))
		}
		// The replica fetched the delta alone.
		if got := check(fmt.Sprint("round ", round)); got != shipped.Bytes-int64(len(floors(1))) {
			t.Fatalf("round %d: the replica fetched %d bytes, the delta and its metadata are %d", round, got, shipped.Bytes)
		}
	}

	// Most of the group changed: the delta would be more than half the
	// export, so the group is put whole.
	for n := 3; n < 60; n++ {
		if err := se.Put(counts, keyOf(1, groups, n), bytes.Repeat([]byte{'y'}, 64)); err != nil {
			t.Fatal(err)
		}
	}
	commit(t, src)
	before := a.Stats()
	if _, err := a.Ship(ctx, src, all(groups), floors); err != nil {
		t.Fatal(err)
	}
	if st := a.Stats(); st.Puts-before.Puts != 1 || st.Deltas != before.Deltas {
		t.Fatalf("after changing most of the group: %+v, before %+v", st, before)
	}
	check("put whole again")

	// And a delta against the new whole export.
	put(t, src, 1, "after")
	if _, err := a.Ship(ctx, src, all(groups), floors); err != nil {
		t.Fatal(err)
	}
	if st := a.Stats(); st.Deltas != before.Deltas+1 {
		t.Fatalf("a change after the whole put: %+v", st)
	}
	check("a delta against the new export")

	infos, err := b.List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var listed []int
	for _, in := range infos {
		listed = append(listed, in.KeyGroup)
	}
	if !slices.Equal(listed, all(groups)) {
		t.Fatalf("List described groups %v", listed)
	}
}

// TestDeltaRefused damages a group's delta and checks that a reader refuses
// the checkpoint with an error that names the delta object and matches
// ErrCorrupt, loading nothing; and that a delta replaced under a reader for
// good is refused too.
func TestDeltaRefused(t *testing.T) {
	js := startJS(t)
	ctx := testCtx(t)
	const groups = 4
	src, dst := openStore(t, groups), openStore(t, groups)
	fill(t, src, "v1")
	a := openBucket(t, js, "orders", "a")
	if _, err := a.Ship(ctx, src, all(groups), floors); err != nil {
		t.Fatal(err)
	}
	put(t, src, 2, "changed")
	if _, err := a.Ship(ctx, src, all(groups), floors); err != nil {
		t.Fatal(err)
	}
	if a.Stats().Deltas != 1 {
		t.Fatalf("stats %+v, want one delta", a.Stats())
	}
	before := dump(t, dst, nil)
	refused := func(what, fault string) {
		t.Helper()
		_, err := a.Load(ctx, dst, 2)
		var oe *ObjectError
		if !errors.Is(err, ErrCorrupt) || !errors.As(err, &oe) || !strings.Contains(err.Error(), fault) {
			t.Fatalf("%s: %v, want ErrCorrupt saying %q", what, err, fault)
		}
		if got := dump(t, dst, nil); !slices.Equal(got, before) {
			t.Fatalf("%s: the store changed: %q", what, got)
		}
	}

	// Another group's delta in its place, named by the object's metadata.
	put(t, src, 3, "changed")
	export3, err := src.ExportKeyGroup(3)
	if err != nil {
		t.Fatal(err)
	}
	a.mu.Lock()
	x3 := a.known[3].base.index
	a.mu.Unlock()
	d3, err := state.ExportDelta(x3, export3)
	if err != nil {
		t.Fatal(err)
	}
	info, err := a.obs.GetInfo(ctx, ObjectName(2))
	if err != nil {
		t.Fatal(err)
	}
	md := info.Metadata
	name := deltaObject(ObjectName(2), md, false)
	dinfo, err := a.obs.PutBytes(ctx, name, d3)
	if err != nil {
		t.Fatal(err)
	}
	md[metaDelta] = dinfo.Digest
	if err := a.obs.UpdateMeta(ctx, ObjectName(2), jetstream.ObjectMeta{Name: ObjectName(2), Metadata: md}); err != nil {
		t.Fatal(err)
	}
	refused("another group's delta", "object kg-00002.delta.0: it does not apply to kg-00002")

	// A delta object that is not the one the metadata names, however
	// often it is read.
	if _, err := a.obs.PutBytes(ctx, name, []byte("replaced")); err != nil {
		t.Fatal(err)
	}
	refused("a delta replaced for good", "its delta was replaced while it was read")

	// Metadata that names an object not its own.
	md[metaDeltaName] = ObjectName(3)
	if err := a.obs.UpdateMeta(ctx, ObjectName(2), jetstream.ObjectMeta{Name: ObjectName(2), Metadata: md}); err != nil {
		t.Fatal(err)
	}
	refused("another object named as the delta", `names the delta object "kg-00003", not one of its own`)
}

// TestDeltaReadsWhileWritten reads a group over and over while its writer
// sends checkpoint after checkpoint as deltas: every read is one of the
// checkpoints written, its metadata with its own export, never a mix of
// two (a read that met a delta replaced under it for good may fail, as
// ErrCorrupt, but never answers wrong).
func TestDeltaReadsWhileWritten(t *testing.T) {
	js := startJS(t)
	ctx := testCtx(t)
	const groups, rounds = 2, 30
	src := openStore(t, groups)
	fill(t, src, "v1")
	a, b := openBucket(t, js, "orders", "a"), openBucket(t, js, "orders", "b")
	var (
		mu      sync.Mutex
		written = map[string][]byte{} // metadata -> export
	)
	ship := func(round int) {
		meta := fmt.Appendf(nil, "round %d", round)
		data, err := src.ExportKeyGroup(1)
		if err != nil {
			t.Error(err)
			return
		}
		mu.Lock()
		written[string(meta)] = data
		mu.Unlock()
		if _, err := a.Amend(ctx, Group{KeyGroup: 1, Meta: meta, Data: data}); err != nil {
			t.Error(err)
		}
	}
	ship(0)
	done := make(chan struct{})
	reads := make(chan int, 1)
	go func() {
		defer close(reads)
		n := 0
		for {
			select {
			case <-done:
				reads <- n
				return
			default:
			}
			g, err := b.Get(ctx, 1)
			if errors.Is(err, ErrCorrupt) && strings.Contains(err.Error(), "replaced while it was read") {
				continue
			}
			if err != nil {
				t.Error(err)
				reads <- n
				return
			}
			mu.Lock()
			want, ok := written[string(g.Meta)]
			mu.Unlock()
			if !ok || !bytes.Equal(g.Data, want) {
				t.Errorf("read %d: metadata %q with an export that is not its own (known: %v)", n, g.Meta, ok)
			}
			n++
		}
	}()
	for round := 1; round <= rounds; round++ {
		put(t, src, 1, fmt.Sprint("value ", round))
		ship(round)
	}
	close(done)
	t.Logf("%d reads while %d checkpoints were written; %d sent as deltas", <-reads, rounds, a.Stats().Deltas)
	if a.Stats().Deltas == 0 {
		t.Error("no checkpoint was sent as a delta")
	}
}
