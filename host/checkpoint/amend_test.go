package checkpoint

import (
	"bytes"
	"errors"
	"maps"
	"testing"

	"github.com/nats-io/nats.go/jetstream"
)

// TestAmend hands a group over whose state did not change since its
// checkpoint but whose metadata (its floors) did: the export is not sent
// again, and every reader sees the new metadata with the export; a changed
// group is put whole.
func TestAmend(t *testing.T) {
	js := startJS(t)
	ctx := testCtx(t)
	const groups = 4
	src, dst := openStore(t, groups), openStore(t, groups)
	fill(t, src, "v1")
	a := openBucket(t, js, "orders", "a")
	b := openBucket(t, js, "orders", "b")
	data, err := src.ExportKeyGroup(1)
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Put(ctx, Group{KeyGroup: 1, Generation: 3, Epoch: 1, Meta: []byte("floor 10"), Data: data}); err != nil {
		t.Fatal(err)
	}
	if g, err := b.Get(ctx, 1); err != nil || g.Epoch != 1 {
		t.Fatalf("Get after the put: %+v, %v; want epoch 1", g, err)
	}
	r := b.NewReplica([]int{1})
	if _, err := r.Refresh(ctx); err != nil {
		t.Fatal(err)
	}

	// Same export, new floors (and a later plugin epoch): only the
	// metadata is sent.
	am, err := a.Amend(ctx, Group{KeyGroup: 1, Generation: 3, Epoch: 2, Meta: []byte("floor 12"), Data: data})
	if err != nil {
		t.Fatal(err)
	}
	if am.Whole || am.Bytes != int64(len("floor 12")) {
		t.Fatalf("amend of an unchanged export: %+v, want the metadata alone", am)
	}
	if st := a.Stats(); st.Puts != 1 || st.Amends != 1 || st.AmendBytes != am.Bytes {
		t.Fatalf("after the amend: %+v", st)
	}
	g, err := b.Get(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	if string(g.Meta) != "floor 12" || !bytes.Equal(g.Data, data) || g.Host != "a" || g.Epoch != 2 {
		t.Fatalf("Get after the amend: meta %q, host %q, data equal %v", g.Meta, g.Host, bytes.Equal(g.Data, data))
	}
	rg, fetched, err := r.Get(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	if fetched != 0 || string(rg.Meta) != "floor 12" || !bytes.Equal(rg.Data, data) || rg.Epoch != 2 {
		t.Fatalf("replica Get after the amend: fetched %d bytes, meta %q", fetched, rg.Meta)
	}
	meta, err := b.Load(ctx, dst, 1)
	if err != nil {
		t.Fatal(err)
	}
	if string(meta) != "floor 12" {
		t.Fatalf("Load after the amend: meta %q", meta)
	}
	if _, err := b.List(ctx); err != nil {
		t.Fatalf("List after the amend: %v", err)
	}
	// Ship knows the amended checkpoint: the same floors put nothing.
	shipped, err := a.Ship(ctx, src, []int{1}, func(int) []byte { return []byte("floor 12") })
	if err != nil || len(shipped.Groups) != 0 {
		t.Fatalf("Ship of the amended checkpoint's content: %+v, %v", shipped, err)
	}

	// A changed export is sent as a delta against the one a put, and the
	// replica fetches the delta alone.
	put(t, src, 1, "changed")
	data2, err := src.ExportKeyGroup(1)
	if err != nil {
		t.Fatal(err)
	}
	am, err = a.Amend(ctx, Group{KeyGroup: 1, Meta: []byte("floor 20"), Data: data2})
	if err != nil {
		t.Fatal(err)
	}
	if !am.Delta || am.Whole || am.Bytes >= int64(len(data2)) {
		t.Fatalf("amend of a changed export: %+v, want a delta (the export is %d bytes)", am, len(data2))
	}
	rg, fetched, err = r.Get(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	if fetched != am.Bytes-int64(len("floor 20")) || string(rg.Meta) != "floor 20" || !bytes.Equal(rg.Data, data2) {
		t.Fatalf("replica Get after a delta: fetched %d bytes (sent %d with the metadata), meta %q", fetched, am.Bytes, rg.Meta)
	}

	// A changed export of a checkpoint another Bucket put is put whole,
	// and the replica fetches it.
	put(t, src, 1, "changed again")
	data3, err := src.ExportKeyGroup(1)
	if err != nil {
		t.Fatal(err)
	}
	am, err = b.Amend(ctx, Group{KeyGroup: 1, Meta: []byte("floor 30"), Data: data3})
	if err != nil {
		t.Fatal(err)
	}
	if !am.Whole || am.Bytes <= int64(len(data3)) {
		t.Fatalf("amend of a changed export put by another host: %+v, want it whole", am)
	}
	rg, fetched, err = r.Get(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	if fetched != am.Bytes || string(rg.Meta) != "floor 30" || !bytes.Equal(rg.Data, data3) {
		t.Fatalf("replica Get after a whole amend: fetched %d bytes (sent %d), meta %q", fetched, am.Bytes, rg.Meta)
	}

	// A group never put is put whole.
	data4, err := src.ExportKeyGroup(3)
	if err != nil {
		t.Fatal(err)
	}
	if am, err := a.Amend(ctx, Group{KeyGroup: 3, Meta: []byte("x"), Data: data4}); err != nil || !am.Whole {
		t.Fatalf("amend of a group with no checkpoint: %+v, %v", am, err)
	}
	// An export of another group is refused.
	if _, err := a.Amend(ctx, Group{KeyGroup: 2, Data: data4}); err == nil {
		t.Fatal("amend of group 2 with an export of group 3 accepted")
	}
}

// TestAmendDamaged refuses a checkpoint whose amended metadata does not
// match its content digest.
func TestAmendDamaged(t *testing.T) {
	js := startJS(t)
	ctx := testCtx(t)
	src := openStore(t, 4)
	fill(t, src, "v1")
	a := openBucket(t, js, "orders", "a")
	data, err := src.ExportKeyGroup(2)
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Put(ctx, Group{KeyGroup: 2, Meta: []byte("floor 1"), Data: data}); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Amend(ctx, Group{KeyGroup: 2, Meta: []byte("floor 2"), Data: data}); err != nil {
		t.Fatal(err)
	}
	obs, err := js.ObjectStore(ctx, BucketName("orders"))
	if err != nil {
		t.Fatal(err)
	}
	info, err := obs.GetInfo(ctx, ObjectName(2))
	if err != nil {
		t.Fatal(err)
	}
	md := maps.Clone(info.Metadata)
	md[metaAmended] = "Zmxvb3IgOQ==" // "floor 9", not what the digest covers
	if err := obs.UpdateMeta(ctx, ObjectName(2), jetstream.ObjectMeta{Name: ObjectName(2), Metadata: md}); err != nil {
		t.Fatal(err)
	}
	_, err = a.Get(ctx, 2)
	var oe *ObjectError
	if !errors.Is(err, ErrCorrupt) || !errors.As(err, &oe) || oe.Object != ObjectName(2) {
		t.Fatalf("Get of a checkpoint with damaged amended metadata: %v, want ErrCorrupt naming %s", err, ObjectName(2))
	}
	r := a.NewReplica([]int{2})
	if _, _, err := r.Get(ctx, 2); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("replica Get of a checkpoint with damaged amended metadata: %v, want ErrCorrupt", err)
	}
}
