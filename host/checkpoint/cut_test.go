package checkpoint

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/sluicehq/sluice/state"
)

// cutOf exports every key group of s as a cut, each with floors naming
// position pos.
func cutOf(t *testing.T, s *state.Store, pos int) []Group {
	t.Helper()
	gs := make([]Group, s.KeyGroups())
	for kg := range gs {
		data, err := s.ExportKeyGroup(kg)
		if err != nil {
			t.Fatal(err)
		}
		gs[kg] = Group{KeyGroup: kg, Meta: fmt.Appendf(nil, `{"in":%d}`, pos+kg), Data: data}
	}
	return gs
}

// TestCut checks that a cut comes back whole (every group's export and
// metadata, the epoch), that a later cut replaces it, that a cut of
// another key group count is refused, that List does not describe it,
// and that PutCut refuses what is not a cut.
func TestCut(t *testing.T) {
	js := startJS(t)
	ctx := testCtx(t)
	const groups = 8
	src := openStore(t, groups)
	fill(t, src, "v1")
	b := openBucket(t, js, "ledger", "a")
	if _, err := b.GetCut(ctx, groups); !errors.Is(err, ErrNotFound) {
		t.Fatalf("get of no cut: %v, want %v", err, ErrNotFound)
	}
	if ok, err := b.HasCut(ctx); ok || err != nil {
		t.Fatalf("has a cut before any: %v, %v", ok, err)
	}
	if _, err := b.PutCut(ctx, 3, cutOf(t, src, 10)); err != nil {
		t.Fatal(err)
	}
	if in, ok, err := b.CutInfo(ctx); !ok || err != nil || in.KeyGroups != groups || in.Host != "a" || in.Size == 0 || in.Time.IsZero() {
		t.Fatalf("the cut after a put: %+v, %v, %v; want %d groups by host a", in, ok, err, groups)
	}
	fill(t, src, "v2")
	want := cutOf(t, src, 20)
	rev := slices.Clone(want)
	slices.Reverse(rev) // PutCut sorts
	if _, err := b.PutCut(ctx, 4, rev); err != nil {
		t.Fatal(err)
	}
	got, err := openBucket(t, js, "ledger", "b").GetCut(ctx, groups)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != groups {
		t.Fatalf("%d groups, want %d", len(got), groups)
	}
	dst := openStore(t, groups)
	for kg, g := range got {
		if g.KeyGroup != kg || !bytes.Equal(g.Data, want[kg].Data) || !bytes.Equal(g.Meta, want[kg].Meta) || g.Epoch != 4 || g.Host != "a" {
			t.Fatalf("group %d: %d, meta %s, epoch %d, host %q; want the second cut's (meta %s, epoch 4, host a)", kg, g.KeyGroup, g.Meta, g.Epoch, g.Host, want[kg].Meta)
		}
		if err := dst.ImportKeyGroup(kg, g.Data); err != nil {
			t.Fatal(err)
		}
	}
	commit(t, dst)
	if g, w := dump(t, dst, nil), dump(t, src, nil); !slices.Equal(g, w) {
		t.Fatalf("the cut imported:\n got %q\nwant %q", g, w)
	}
	if infos, err := b.List(ctx); err != nil || len(infos) != 0 {
		t.Fatalf("list: %v, %v; want no key group checkpoints", infos, err)
	}
	if _, err := b.GetCut(ctx, 16); !errors.Is(err, ErrForeign) || !strings.Contains(err.Error(), "holds 8 key groups; the pipeline has 16") {
		t.Fatalf("get of a cut of 8 groups for 16: %v", err)
	}

	// Not cuts: a group missing, a group twice, another count's export.
	other := openStore(t, 16)
	fill(t, other, "o")
	foreign := cutOf(t, other, 0)[:groups]
	dup := cutOf(t, src, 0)
	dup[3] = dup[2]
	for name, gs := range map[string][]Group{"missing": want[1:], "twice": dup, "foreign": foreign, "empty": nil} {
		if _, err := b.PutCut(ctx, 5, gs); err == nil {
			t.Errorf("%s: put a cut that is not one", name)
		}
	}
	if got, err := b.GetCut(ctx, groups); err != nil || got[0].Epoch != 4 {
		t.Fatalf("after refused puts: %v, %v; want the second cut", got, err)
	}

	// A damaged cut is refused, naming the object.
	obs, err := js.ObjectStore(ctx, b.Name())
	if err != nil {
		t.Fatal(err)
	}
	res, err := obs.GetBytes(ctx, CutObject)
	if err != nil {
		t.Fatal(err)
	}
	res[len(res)/2] ^= 0xff
	if _, err := obs.Put(ctx, jetstream.ObjectMeta{Name: CutObject}, bytes.NewReader(res)); err != nil {
		t.Fatal(err)
	}
	var oe *ObjectError
	if _, err := b.GetCut(ctx, groups); !errors.Is(err, ErrCorrupt) || !errors.As(err, &oe) || oe.Object != CutObject || !strings.Contains(err.Error(), "checksum mismatch") {
		t.Fatalf("get of a damaged cut: %v", err)
	}
}

// TestCutDelta checks that a cut whose groups changed little since the cut
// its Bucket put is sent as a delta against it, and read back whole (every
// group's export, metadata and the epoch) by another Bucket, twice in a
// row; that another Bucket's cut is put whole; and that a damaged delta is
// refused, naming it.
func TestCutDelta(t *testing.T) {
	js := startJS(t)
	ctx := testCtx(t)
	const groups = 8
	src := openStore(t, groups)
	fill(t, src, "v1")
	se := src.NewSession()
	for kg := range groups {
		for n := 3; n < 40; n++ {
			if err := se.Put(src.Table("counts"), keyOf(kg, groups, n), bytes.Repeat([]byte{'x'}, 64)); err != nil {
				t.Fatal(err)
			}
		}
	}
	commit(t, src)
	a, b := openBucket(t, js, "ledger", "a"), openBucket(t, js, "ledger", "b")
	first, err := a.PutCut(ctx, 1, cutOf(t, src, 10))
	if err != nil || !first.Whole {
		t.Fatalf("the first cut: %+v, %v; want it whole", first, err)
	}
	whole := first.Bytes
	check := func(what string, epoch uint64, want []Group) {
		t.Helper()
		got, err := b.GetCut(ctx, groups)
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		for kg, g := range got {
			if !bytes.Equal(g.Data, want[kg].Data) || !bytes.Equal(g.Meta, want[kg].Meta) || g.Epoch != epoch || g.Host != "a" {
				t.Fatalf("%s: group %d: meta %s, epoch %d, host %q, the export equal %v; want meta %s, epoch %d, host a",
					what, kg, g.Meta, g.Epoch, g.Host, bytes.Equal(g.Data, want[kg].Data), want[kg].Meta, epoch)
			}
		}
	}
	for round, kg := range []int{2, 5} {
		put(t, src, kg, fmt.Sprint("changed ", round))
		want := cutOf(t, src, 20+round)
		before := a.Stats()
		am, err := a.PutCut(ctx, uint64(2+round), want)
		if err != nil {
			t.Fatal(err)
		}
		if st := a.Stats(); !am.Delta || st.Deltas != before.Deltas+1 || st.Puts != before.Puts || am.Bytes*4 > whole {
			t.Fatalf("round %d: a cut with one changed key sent %+v (whole: %d bytes); stats %+v", round, am, whole, st)
		}
		check(fmt.Sprint("round ", round), uint64(2+round), want)
	}

	// A damaged delta is refused, naming it.
	cut, err := a.obs.GetInfo(ctx, CutObject)
	if err != nil {
		t.Fatal(err)
	}
	name := deltaObject(CutObject, cut.Metadata, false)
	if name != "cut.delta.1" {
		t.Fatalf("the second delta of the cut is %q, want cut.delta.1 (the two written in turn)", name)
	}
	info, err := a.obs.PutBytes(ctx, name, []byte("damaged"))
	if err != nil {
		t.Fatal(err)
	}
	cut.Metadata[metaDelta] = info.Digest
	if err := a.obs.UpdateMeta(ctx, CutObject, jetstream.ObjectMeta{Name: CutObject, Metadata: cut.Metadata}); err != nil {
		t.Fatal(err)
	}
	if _, err := b.GetCut(ctx, groups); !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), "object cut.delta.1: it does not apply to cut") {
		t.Fatalf("a damaged delta: %v, want ErrCorrupt naming cut.delta", err)
	}

	// Another Bucket holds no base: its cut is put whole, and read back.
	want := cutOf(t, src, 30)
	for i := range want {
		want[i].Host = "a"
	}
	before := b.Stats()
	if _, err := b.PutCut(ctx, 9, want); err != nil {
		t.Fatal(err)
	}
	if st := b.Stats(); st.Puts != before.Puts+1 || st.Deltas != before.Deltas {
		t.Fatalf("another host's cut: %+v, want it put whole", st)
	}
	check("put whole by another host", 9, want)
}
