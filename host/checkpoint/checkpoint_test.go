package checkpoint

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"go.uber.org/goleak"

	"github.com/sluicehq/sluice/connectors/natsconn"
	"github.com/sluicehq/sluice/state"
)

// TestMain checks for leaked goroutines, but one: nats.go's object store
// Put makes a JetStream context of its own per object and cleans it up at
// the end, and when the cleanup runs before that context's reconnect
// watcher has read its status channel, the watcher waits on a nil channel
// for ever (jetStream.resetPendingAcksOnReconnect, as of nats.go v1.55.0).
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m,
		goleak.IgnoreTopFunction("github.com/nats-io/nats.go/jetstream.(*jetStream).resetPendingAcksOnReconnect"))
}

func quiet() *slog.Logger { return slog.New(slog.DiscardHandler) }

// testCtx returns a context that ends with the test, bounded so that a
// hang fails the test instead of the whole run.
func testCtx(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// startJS starts an embedded NATS server for one test and returns a
// JetStream client of it.
func startJS(t *testing.T) jetstream.JetStream {
	t.Helper()
	e, err := natsconn.StartEmbedded(testCtx(t), natsconn.Options{Dir: t.TempDir(), Port: -1, Logger: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := e.Shutdown(context.Background()); err != nil {
			t.Error(err)
		}
	})
	nc, err := natsconn.Connect(testCtx(t), e.ClientURL(), t.Name(), natsconn.WithLogger(quiet()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	return js
}

func openBucket(t *testing.T, js jetstream.JetStream, pipeline, host string) *Bucket {
	t.Helper()
	b, err := Open(testCtx(t), js, pipeline, Options{Host: host, Logger: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func openStore(t *testing.T, groups int) *state.Store {
	t.Helper()
	s, err := state.Open(t.TempDir(), state.Options{KeyGroups: groups, Logger: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// keyOf returns a plain key of key group kg among groups.
func keyOf(kg, groups, n int) []byte {
	for i := 0; ; i++ {
		k := fmt.Appendf(nil, "k%d-%d", n, i)
		if state.KeyGroup(k, groups) == kg {
			return k
		}
	}
}

// fill writes, in every key group, keys in two tables (plain and
// namespaced) and a timer, and commits.
func fill(t *testing.T, s *state.Store, version string) {
	t.Helper()
	se := s.NewSession()
	counts, windows := s.Table("counts"), s.Table("windows")
	for kg := range s.KeyGroups() {
		for n := range 3 {
			k := keyOf(kg, s.KeyGroups(), n)
			if err := se.Put(counts, k, []byte(version+string(k))); err != nil {
				t.Fatal(err)
			}
			if err := se.PutKey(windows, state.Key{Route: k, Namespace: []byte("w"), User: []byte{byte(n)}}, []byte(version)); err != nil {
				t.Fatal(err)
			}
			if err := se.SetTimer(state.Timer{Time: int64(n), Route: k, Name: []byte("fire")}); err != nil {
				t.Fatal(err)
			}
		}
	}
	commit(t, s)
}

func commit(t *testing.T, s *state.Store) {
	t.Helper()
	if err := s.Commit(nil); err != nil {
		t.Fatal(err)
	}
}

// put writes one plain key of key group kg and commits.
func put(t *testing.T, s *state.Store, kg int, value string) {
	t.Helper()
	se := s.NewSession()
	if err := se.Put(s.Table("counts"), keyOf(kg, s.KeyGroups(), 0), []byte(value)); err != nil {
		t.Fatal(err)
	}
	commit(t, s)
}

// dump returns every committed entry of every table and every timer of
// key groups in groups (all when nil), one line each, sorted.
func dump(t *testing.T, s *state.Store, groups []int) []string {
	t.Helper()
	in := func(kg int) bool { return groups == nil || slices.Contains(groups, kg) }
	var out []string
	for _, name := range s.Tables() {
		err := s.ScanKeys(name, func(k state.Key, v []byte) error {
			if in(state.KeyGroup(k.Route, s.KeyGroups())) {
				out = append(out, fmt.Sprintf("%s %s = %q", name, k, v))
			}
			return nil
		})
		if err != nil && !errors.Is(err, state.ErrUnknownTable) {
			t.Fatal(err)
		}
	}
	se := s.NewSession()
	for kg := range s.KeyGroups() {
		if !in(kg) {
			continue
		}
		for _, d := range []state.TimeDomain{state.EventTime, state.ProcessingTime} {
			err := se.Timers(kg, d, math.MaxInt64, func(tm state.Timer) bool {
				out = append(out, fmt.Sprintf("timer %d %d %q %q %q", tm.Domain, tm.Time, tm.Route, tm.Namespace, tm.Name))
				return true
			})
			if err != nil {
				t.Fatal(err)
			}
		}
	}
	slices.Sort(out)
	return out
}

func all(n int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = i
	}
	return out
}

func floors(kg int) []byte { return fmt.Appendf(nil, "floor of %d", kg) }

// TestShipAndLoad ships every group of a store and loads them into an
// empty store, which then holds the same entries and timers, and the
// metadata each group was shipped with.
func TestShipAndLoad(t *testing.T) {
	js := startJS(t)
	ctx := testCtx(t)
	const groups = 8
	src, dst := openStore(t, groups), openStore(t, groups)
	fill(t, src, "v1")
	a := openBucket(t, js, "orders", "a")
	shipped, err := a.Ship(ctx, src, all(groups), floors)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(shipped.Groups, all(groups)) || shipped.Bytes <= 0 {
		t.Fatalf("first ship: %+v, want every group", shipped)
	}
	if st := a.Stats(); st.Puts != groups || st.PutBytes != shipped.Bytes {
		t.Fatalf("stats %+v after shipping %d bytes", st, shipped.Bytes)
	}

	infos, err := a.List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(infos) != groups {
		t.Fatalf("List: %d checkpoints, want %d", len(infos), groups)
	}
	for kg, in := range infos {
		if in.KeyGroup != kg || in.KeyGroups != groups || in.Host != "a" || in.Generation != src.Generation(kg) ||
			in.Size <= 0 || in.Time.IsZero() {
			t.Fatalf("List[%d] = %+v", kg, in)
		}
	}

	b := openBucket(t, js, "orders", "b")
	for kg := range groups {
		meta, err := b.Load(ctx, dst, kg)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(meta, floors(kg)) {
			t.Fatalf("group %d: metadata %q, want %q", kg, meta, floors(kg))
		}
	}
	commit(t, dst)
	want := dump(t, src, nil)
	if len(want) == 0 {
		t.Fatal("nothing to compare")
	}
	if got := dump(t, dst, nil); !slices.Equal(got, want) {
		t.Fatalf("loaded state differs:\n got %q\nwant %q", got, want)
	}

	g, err := b.Get(ctx, 3)
	if err != nil {
		t.Fatal(err)
	}
	if g.KeyGroup != 3 || g.Host != "a" || g.Generation != src.Generation(3) || !bytes.Equal(g.Meta, floors(3)) {
		t.Fatalf("Get(3) = group %d host %q generation %d meta %q", g.KeyGroup, g.Host, g.Generation, g.Meta)
	}
}

// TestShipIsIncremental changes two groups and checks that the next Ship
// puts exactly those two; and that a new Bucket of the same store (a
// restarted host) puts nothing that the bucket already holds.
func TestShipIsIncremental(t *testing.T) {
	js := startJS(t)
	ctx := testCtx(t)
	const groups = 8
	s := openStore(t, groups)
	fill(t, s, "v1")
	a := openBucket(t, js, "orders", "a")
	if _, err := a.Ship(ctx, s, all(groups), floors); err != nil {
		t.Fatal(err)
	}
	again, err := a.Ship(ctx, s, all(groups), floors)
	if err != nil {
		t.Fatal(err)
	}
	if len(again.Groups) != 0 || again.Bytes != 0 {
		t.Fatalf("ship of unchanged groups: %+v, want nothing", again)
	}

	put(t, s, 2, "changed")
	put(t, s, 5, "changed")
	before := a.Stats()
	shipped, err := a.Ship(ctx, s, all(groups), floors)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(shipped.Groups, []int{2, 5}) {
		t.Fatalf("after changing groups 2 and 5, shipped %v", shipped.Groups)
	}
	// The Bucket put both whole before: it sends deltas.
	if st := a.Stats(); st.Puts != before.Puts || st.Deltas-before.Deltas != 2 || st.DeltaBytes-before.DeltaBytes != shipped.Bytes {
		t.Fatalf("stats %+v, before %+v, shipped %+v", st, before, shipped)
	}

	// A restarted host knows what it put from List.
	restarted := openBucket(t, js, "orders", "a")
	put(t, s, 7, "changed")
	shipped, err = restarted.Ship(ctx, s, all(groups), floors)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(shipped.Groups, []int{7}) {
		t.Fatalf("a restarted host shipped %v, want [7]", shipped.Groups)
	}

	// Uncommitted changes are not shipped: a group whose committed state
	// was shipped costs nothing, one that must be exported is refused,
	// naming the group.
	se := s.NewSession()
	if err := se.Put(s.Table("counts"), keyOf(4, groups, 0), []byte("dirty")); err != nil {
		t.Fatal(err)
	}
	if shipped, err := a.Ship(ctx, s, []int{4}, floors); err != nil || len(shipped.Groups) != 0 {
		t.Fatalf("ship of a group shipped before and written since: %+v, %v", shipped, err)
	}
	a.Forget(4)
	_, err = a.Ship(ctx, s, []int{4}, floors)
	if !errors.Is(err, state.ErrUncommitted) || !strings.Contains(err.Error(), "key group 4") {
		t.Fatalf("ship of an uncommitted group: %v", err)
	}
}

// TestReplicaMigration moves groups from host a to host b, which keeps a
// replica of them: an unchanged group's move fetches nothing, a changed
// one's fetches that group alone.
func TestReplicaMigration(t *testing.T) {
	js := startJS(t)
	ctx := testCtx(t)
	const groups = 8
	src, dst := openStore(t, groups), openStore(t, groups)
	fill(t, src, "v1")
	a := openBucket(t, js, "orders", "a")
	b := openBucket(t, js, "orders", "b")
	if _, err := a.Ship(ctx, src, all(groups), floors); err != nil {
		t.Fatal(err)
	}
	r := b.NewReplica([]int{1, 2, 3})
	prefetched, err := r.Refresh(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if st := b.Stats(); st.Prefetches != 3 || st.PrefetchBytes != prefetched || prefetched <= 0 {
		t.Fatalf("after refreshing three groups: %+v (returned %d)", st, prefetched)
	}

	// Group 1 did not change: the hand-over ships nothing and the
	// destination fetches nothing.
	shipped, err := a.Ship(ctx, src, []int{1}, floors)
	if err != nil {
		t.Fatal(err)
	}
	meta, fetched, err := r.Install(ctx, dst, 1)
	if err != nil {
		t.Fatal(err)
	}
	if len(shipped.Groups) != 0 || fetched != 0 || !bytes.Equal(meta, floors(1)) {
		t.Fatalf("move of an unchanged group: shipped %+v, fetched %d bytes, meta %q", shipped, fetched, meta)
	}
	if st := b.Stats(); st.Gets != 0 || st.GetBytes != 0 || st.ReplicaHits != 1 {
		t.Fatalf("move of an unchanged group: %+v", st)
	}

	// Group 2 changed: its move fetches it alone.
	put(t, src, 2, "changed")
	shipped, err = a.Ship(ctx, src, []int{2}, floors)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(shipped.Groups, []int{2}) {
		t.Fatalf("hand-over of changed group 2 shipped %v", shipped.Groups)
	}
	_, fetched, err = r.Install(ctx, dst, 2)
	if err != nil {
		t.Fatal(err)
	}
	// Shipped as a delta with its metadata; fetched, the delta alone.
	if fetched != shipped.Bytes-int64(len(floors(2))) || fetched <= 0 {
		t.Fatalf("move of a changed group fetched %d bytes, shipped %d", fetched, shipped.Bytes)
	}
	if st := b.Stats(); st.Gets != 1 || st.GetBytes != fetched || st.ReplicaHits != 1 {
		t.Fatalf("move of a changed group: %+v", st)
	}

	// Group 5 has no replica: its move fetches it.
	_, fetched, err = r.Install(ctx, dst, 5)
	if err != nil {
		t.Fatal(err)
	}
	if fetched <= 0 {
		t.Fatalf("move of a group without a replica fetched %d bytes", fetched)
	}
	commit(t, dst)
	if got, want := dump(t, dst, nil), dump(t, src, []int{1, 2, 5}); !slices.Equal(got, want) {
		t.Fatalf("moved state differs:\n got %q\nwant %q", got, want)
	}
}

// TestReplicaRun checks that a running replica fetches a checkpoint when
// it is put, so that the move that follows fetches nothing.
func TestReplicaRun(t *testing.T) {
	js := startJS(t)
	ctx := testCtx(t)
	const groups = 4
	src, dst := openStore(t, groups), openStore(t, groups)
	fill(t, src, "v1")
	a := openBucket(t, js, "orders", "a")
	b := openBucket(t, js, "orders", "b")
	r := b.NewReplica([]int{0})
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- r.Run(runCtx) }()
	defer func() {
		stop()
		if err := <-done; !errors.Is(err, context.Canceled) {
			t.Error(err)
		}
	}()
	for version := range 2 {
		put(t, src, 0, fmt.Sprint(version))
		shipped, err := a.Ship(ctx, src, []int{0}, floors)
		if err != nil {
			t.Fatal(err)
		}
		if len(shipped.Groups) != 1 {
			t.Fatalf("version %d: shipped %+v", version, shipped)
		}
		// The first is put whole, the second as a delta: the replica
		// fetches each once.
		for b.Stats().Prefetches < int64(version+1) {
			select {
			case <-ctx.Done():
				t.Fatalf("the replica fetched %d times, want %d", b.Stats().Prefetches, version+1)
			case <-time.After(5 * time.Millisecond):
			}
		}
	}
	if _, fetched, err := r.Install(ctx, dst, 0); err != nil || fetched != 0 {
		t.Fatalf("install from a running replica: fetched %d bytes, %v", fetched, err)
	}
}

// TestRefused puts damaged and foreign objects in the bucket and checks
// that loading them fails with an error naming the bucket, the object and
// the fault, and leaves the destination store unchanged.
func TestRefused(t *testing.T) {
	js := startJS(t)
	ctx := testCtx(t)
	const groups = 8
	src := openStore(t, groups)
	fill(t, src, "v1")
	dst := openStore(t, groups)
	fill(t, dst, "dst")
	before := dump(t, dst, nil)
	a := openBucket(t, js, "orders", "a")
	if _, err := a.Ship(ctx, src, all(groups), floors); err != nil {
		t.Fatal(err)
	}
	obs, err := js.ObjectStore(ctx, a.Name())
	if err != nil {
		t.Fatal(err)
	}
	// replace overwrites kg's object with env, keeping its metadata.
	replace := func(kg int, env []byte) {
		t.Helper()
		info, err := obs.GetInfo(ctx, ObjectName(kg))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := obs.Put(ctx, jetstream.ObjectMeta{Name: ObjectName(kg), Metadata: info.Metadata}, bytes.NewReader(env)); err != nil {
			t.Fatal(err)
		}
	}
	envOf := func(kg int) []byte {
		t.Helper()
		g, err := a.Get(ctx, kg)
		if err != nil {
			t.Fatal(err)
		}
		return encode(*g)
	}

	// A flipped byte in the export: the envelope's checksum fails.
	env := envOf(1)
	env[len(env)-10] ^= 0xff
	replace(1, env)
	// Group 3's checkpoint stored as group 2's.
	replace(2, envOf(3))
	// An intact envelope of group 4 whose export is group 6's.
	g6, err := a.Get(ctx, 6)
	if err != nil {
		t.Fatal(err)
	}
	replace(4, encode(Group{KeyGroup: 4, Data: g6.Data}))
	// Group 5 from a store of 16 key groups.
	other := openStore(t, 16)
	put(t, other, 5, "other")
	data, err := other.ExportKeyGroup(5)
	if err != nil {
		t.Fatal(err)
	}
	replace(5, encode(Group{KeyGroup: 5, Data: data}))

	cases := []struct {
		kg    int
		kind  error
		fault string
	}{
		{1, ErrCorrupt, "checksum mismatch"},
		{2, ErrForeign, "it holds key group 3"},
		{4, ErrCorrupt, "export holds 6"},
		{5, ErrForeign, "exported from a store of 16 key groups"},
		{7, nil, ""},
	}
	if err := obs.Delete(ctx, ObjectName(7)); err != nil {
		t.Fatal(err)
	}
	b := openBucket(t, js, "orders", "b")
	r := b.NewReplica(all(groups))
	for _, c := range cases {
		kind, fault := c.kind, c.fault
		if kind == nil {
			kind, fault = ErrNotFound, "not found"
		}
		for _, how := range []string{"load", "install"} {
			var err error
			if how == "load" {
				_, err = b.Load(ctx, dst, c.kg)
			} else {
				_, _, err = r.Install(ctx, dst, c.kg)
			}
			var oe *ObjectError
			if !errors.Is(err, kind) || !errors.As(err, &oe) || oe.Bucket != a.Name() || oe.Object != ObjectName(c.kg) ||
				!strings.Contains(err.Error(), fault) || !strings.Contains(err.Error(), a.Name()) ||
				!strings.Contains(err.Error(), ObjectName(c.kg)) {
				t.Errorf("%s of group %d: %v; want %v naming %s, %s and %q", how, c.kg, err, kind, a.Name(), ObjectName(c.kg), fault)
			}
		}
	}
	commit(t, dst)
	if got := dump(t, dst, nil); !slices.Equal(got, before) {
		t.Fatalf("refused checkpoints changed the store:\n got %q\nwant %q", got, before)
	}
	if _, err := r.Refresh(ctx); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("refresh of a replica of damaged checkpoints: %v", err)
	}
}

// TestPutRefusesMismatch checks that Put refuses data that is not an
// export of the group it names.
func TestPutRefusesMismatch(t *testing.T) {
	js := startJS(t)
	ctx := testCtx(t)
	s := openStore(t, 4)
	put(t, s, 1, "v")
	data, err := s.ExportKeyGroup(1)
	if err != nil {
		t.Fatal(err)
	}
	a := openBucket(t, js, "orders", "a")
	if err := a.Put(ctx, Group{KeyGroup: 2, Data: data}); err == nil || !strings.Contains(err.Error(), "export of key group 1") {
		t.Fatalf("put of group 1's export as group 2: %v", err)
	}
	if err := a.Put(ctx, Group{KeyGroup: 1, Data: data[:len(data)-1]}); !errors.Is(err, state.ErrBadExport) {
		t.Fatalf("put of a truncated export: %v", err)
	}
	if err := a.Put(ctx, Group{KeyGroup: 1, Data: data}); err != nil {
		t.Fatal(err)
	}
}

// TestBucketNames checks the sanitising of pipeline names, and that a
// bucket of another pipeline is refused.
func TestBucketNames(t *testing.T) {
	for _, c := range []struct{ pipeline, want string }{
		{"orders", "sluice-orders-ckpt"},
		{"a_b-C9", "sluice-a_b-C9-ckpt"},
	} {
		if got := BucketName(c.pipeline); got != c.want {
			t.Errorf("BucketName(%q) = %q, want %q", c.pipeline, got, c.want)
		}
	}
	names := map[string]string{}
	for _, p := range []string{"a.b", "a b", "a_b", "a/b", "é", strings.Repeat("x", 100), strings.Repeat("x", 101)} {
		n := BucketName(p)
		if other, dup := names[n]; dup {
			t.Errorf("pipelines %q and %q share bucket %s", other, p, n)
		}
		names[n] = p
		for _, r := range n {
			if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_') {
				t.Errorf("BucketName(%q) = %q: NATS refuses %q", p, n, r)
			}
		}
	}

	js := startJS(t)
	ctx := testCtx(t)
	dotted := openBucket(t, js, "shop.orders", "a")
	if dotted.Name() != BucketName("shop.orders") {
		t.Fatalf("bucket %s", dotted.Name())
	}
	// A bucket of that name made for another pipeline is refused.
	if _, err := js.CreateObjectStore(ctx, jetstream.ObjectStoreConfig{Bucket: BucketName("x"),
		Metadata: map[string]string{metaPipeline: "y"}}); err != nil {
		t.Fatal(err)
	}
	_, err := Open(ctx, js, "x", Options{Logger: quiet()})
	if !errors.Is(err, ErrForeign) || !strings.Contains(err.Error(), `pipeline "y"`) {
		t.Fatalf("open of another pipeline's bucket: %v", err)
	}
	if _, err := Open(ctx, js, "", Options{}); err == nil {
		t.Fatal("open with no pipeline name succeeded")
	}
}

// TestReplicaShare moves every group of a store to a host that replicates
// a share of them (Spacker's filter: group i when i % filter == 0) and
// checks that the bytes fetched at the move are those of the groups not
// replicated.
func TestReplicaShare(t *testing.T) {
	js := startJS(t)
	ctx := testCtx(t)
	const groups = 16
	src := openStore(t, groups)
	fill(t, src, "v1")
	a := openBucket(t, js, "orders", "a")
	if _, err := a.Ship(ctx, src, all(groups), floors); err != nil {
		t.Fatal(err)
	}
	infos, err := a.List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, filter := range []int{0, 4, 2, 1} {
		var replicated []int
		var want int64 // the bytes of the groups not replicated
		for kg := range groups {
			if filter != 0 && kg%filter == 0 {
				replicated = append(replicated, kg)
			} else {
				want += infos[kg].Size
			}
		}
		b := openBucket(t, js, "orders", fmt.Sprint("b", filter))
		r := b.NewReplica(replicated)
		if _, err := r.Refresh(ctx); err != nil {
			t.Fatal(err)
		}
		dst := openStore(t, groups)
		for kg := range groups {
			if _, _, err := r.Install(ctx, dst, kg); err != nil {
				t.Fatal(err)
			}
		}
		if st := b.Stats(); st.GetBytes != want || st.ReplicaHits != int64(len(replicated)) {
			t.Errorf("filter %d: fetched %d bytes at the move (%d replica hits), want %d (%d)",
				filter, st.GetBytes, st.ReplicaHits, want, len(replicated))
		}
	}
}

// corruptingStore is an object store whose first bad downloads fail
// their digest, as nats.go reports a read whose chunks do not match.
type corruptingStore struct {
	jetstream.ObjectStore
	bad int
}

func (s *corruptingStore) Get(ctx context.Context, name string, opts ...jetstream.GetObjectOpt) (jetstream.ObjectResult, error) {
	if s.bad > 0 {
		s.bad--
		return nil, jetstream.ErrDigestMismatch
	}
	return s.ObjectStore.Get(ctx, name, opts...)
}

// TestLoadReadsAgainAfterACorruptRead: a download whose chunks fail the
// object's digest is made again, up to len(readAgain) more times; a fault
// that lasts is reported, and nothing is imported.
func TestLoadReadsAgainAfterACorruptRead(t *testing.T) {
	js := startJS(t)
	ctx := testCtx(t)
	const groups = 4
	src, dst := openStore(t, groups), openStore(t, groups)
	fill(t, src, "v1")
	a := openBucket(t, js, "orders", "a")
	if _, err := a.Ship(ctx, src, all(groups), floors); err != nil {
		t.Fatal(err)
	}
	b := openBucket(t, js, "orders", "b")
	b.readAgain = []time.Duration{time.Millisecond, time.Millisecond, time.Millisecond}
	store := &corruptingStore{ObjectStore: b.obs, bad: len(b.readAgain)}
	b.obs = store
	if meta, err := b.Load(ctx, dst, 1); err != nil || !bytes.Equal(meta, floors(1)) {
		t.Fatalf("load after %d corrupt reads: %q, %v; want group 1's metadata", len(b.readAgain), meta, err)
	}
	store.bad = len(b.readAgain) + 1
	if _, err := b.Load(ctx, dst, 2); !errors.Is(err, jetstream.ErrDigestMismatch) {
		t.Fatalf("load while every read is corrupt: %v, want the digest mismatch", err)
	}
	commit(t, dst)
	if got, want := dump(t, dst, []int{2}), dump(t, openStore(t, groups), []int{2}); !slices.Equal(got, want) {
		t.Fatalf("group 2 after a refused load: %q, want nothing imported", got)
	}
}
