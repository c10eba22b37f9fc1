package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/sluicehq/sluice/connectors/natsconn"
)

// pipelineText is the pipeline text the tests' hosts run.
const pipelineText = "name: orders\nsources:\n  - jetstream: IN\noperators:\n  - keyed: count.wasm\n"

// testCtx returns a context that ends with the test, bounded so that a
// hang fails the test instead of the whole run.
func testCtx(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// startServer starts an embedded NATS server for one test and returns its
// URL.
func startServer(t testing.TB) string {
	t.Helper()
	e, err := natsconn.StartEmbedded(testCtx(t), natsconn.Options{Dir: t.TempDir(), Port: -1, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := e.Shutdown(context.Background()); err != nil {
			t.Error(err)
		}
	})
	return e.ClientURL()
}

// open connects to url and opens cfg's cluster, as a host process would.
func open(t testing.TB, url string, cfg Config) *Cluster {
	t.Helper()
	nc, err := nats.Connect(url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Pipeline == "" {
		cfg.Pipeline = "orders"
	}
	if cfg.Text == nil {
		cfg.Text = []byte(pipelineText)
	}
	if cfg.KeyGroups == 0 {
		cfg.KeyGroups = 4
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	c, err := Open(testCtx(t), js, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// join joins c as host id and leaves when the test ends.
func join(t testing.TB, c *Cluster, id string) {
	t.Helper()
	if err := c.Join(testCtx(t), HostInfo{ID: id, Addr: "127.0.0.1:0", Started: time.Now()}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := c.Leave(context.Background()); err != nil && !errors.Is(err, ErrNotJoined) {
			t.Error(err)
		}
	})
}

// memberIDs returns the ids of c's live members.
func memberIDs(t testing.TB, c *Cluster) []string {
	t.Helper()
	ms, err := c.Members(testCtx(t))
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, m := range ms {
		ids = append(ids, m.ID)
	}
	return ids
}

// waitEvent reads events until one of kind for host comes, failing the
// test after a generous deadline.
func waitEvent(t testing.TB, events <-chan Event, kind EventKind, host string) {
	t.Helper()
	deadline := time.After(time.Minute)
	for {
		select {
		case ev, ok := <-events:
			if !ok {
				t.Fatalf("the watch ended before %s %s", host, kind)
			}
			if ev.Kind == kind && ev.Host.ID == host {
				return
			}
		case <-deadline:
			t.Fatalf("no %s event for %s within a minute", kind, host)
		}
	}
}

// watch watches c's membership until the test ends, waiting at the end
// for the watch to close.
func watch(t testing.TB, c *Cluster) <-chan Event {
	t.Helper()
	ctx, cancel := context.WithCancel(testCtx(t))
	events, err := c.Watch(ctx)
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cancel()
		for range events {
		}
	})
	return events
}

// getHook is a bucket whose Get runs before (once) first.
type getHook struct {
	jetstream.KeyValue
	once   sync.Once
	before func()
}

func (h *getHook) Get(ctx context.Context, key string) (jetstream.KeyValueEntry, error) {
	h.once.Do(h.before)
	return h.KeyValue.Get(ctx, key)
}

// A host that joins, and is given groups, while another host reads the
// table is among the hosts that read validates the table against: the
// hosts are listed after the table is read. (Listed before, the table
// named a host "that has never joined the cluster", and a host starting
// beside two others failed to start.)
func TestAssignmentNamesAHostThatJoinedMeanwhile(t *testing.T) {
	url := startServer(t)
	ca := open(t, url, Config{KeyGroups: 4})
	cb := open(t, url, Config{KeyGroups: 4})
	join(t, ca, "a")
	ctx := testCtx(t)
	ca.kv = &getHook{KeyValue: ca.kv, before: func() {
		join(t, cb, "b")
		if _, err := cb.Update(ctx, func(x *Assignment) error { x.Owners[0] = "b"; return nil }); err != nil {
			t.Error(err)
		}
	}}
	for _, read := range []func() (*Assignment, error){
		func() (*Assignment, error) { return ca.Assignment(ctx) },
		func() (*Assignment, error) {
			return ca.Update(ctx, func(x *Assignment) error { x.Owners[1] = "a"; return nil })
		},
	} {
		a, err := read()
		if err != nil {
			t.Fatal(err)
		}
		if a.Owners[0] != "b" {
			t.Fatalf("owners %v, want group 0 on b", a.Owners)
		}
	}
}

func TestUpdateRacingWritersBothLand(t *testing.T) {
	url := startServer(t)
	ca := open(t, url, Config{KeyGroups: 16})
	cb := open(t, url, Config{KeyGroups: 16})
	join(t, ca, "a")
	join(t, cb, "b")
	ctx := testCtx(t)

	// A forced conflict: a's function lets b write in between a's read
	// and a's write, so a's compare-and-set fails and a reads again.
	calls := 0
	_, err := ca.Update(ctx, func(x *Assignment) error {
		calls++
		if calls == 1 {
			if _, err := cb.Update(ctx, func(y *Assignment) error { y.Owners[1] = "b"; return nil }); err != nil {
				return err
			}
		}
		x.Owners[0] = "a"
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if calls != 2 {
		t.Errorf("a's function ran %d times, want 2 (once more after the conflicting write)", calls)
	}

	// Two writers racing: each claims its half of the groups, one group
	// per update; every claim lands.
	var wg sync.WaitGroup
	errs := make(chan error, 2)
	for i, c := range []*Cluster{ca, cb} {
		host := []string{"a", "b"}[i]
		wg.Go(func() {
			for g := i; g < 16; g += 2 {
				if _, err := c.Update(ctx, func(x *Assignment) error { x.Owners[g] = host; return nil }); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	got, err := ca.Assignment(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for g, h := range got.Owners {
		if want := []string{"a", "b"}[g%2]; h != want {
			t.Fatalf("owners %v: group %d is %q, want %q", got.Owners, g, h, want)
		}
	}
}

func TestLeaseExpiresWithoutRenewal(t *testing.T) {
	url := startServer(t)
	observer := open(t, url, Config{Lease: time.Second})
	events := watch(t, observer)

	c := open(t, url, Config{Lease: time.Second})
	ctx, stopRenewing := context.WithCancel(testCtx(t))
	if err := c.Join(ctx, HostInfo{ID: "h1", Addr: "127.0.0.1:8080"}); err != nil {
		t.Fatal(err)
	}
	waitEvent(t, events, Joined, "h1")
	stopRenewing() // the host stops renewing, as a hung process would
	waitEvent(t, events, Expired, "h1")
	if ids := memberIDs(t, observer); len(ids) != 0 {
		t.Errorf("members after the lease expired: %v", ids)
	}
	if err := c.Leave(testCtx(t)); err != nil { // the lease is gone already
		t.Fatal(err)
	}
	// The host restarts with its id: the expired lease does not hold it.
	join(t, c, "h1")
	waitEvent(t, events, Joined, "h1")
}

// TestWatchExpiresALeaseAtItsRevision checks the purge a watch makes of a
// lease it saw go a whole lease without a renewal: at the revision it saw,
// the lease goes, and every watch reports the host expired; at a revision
// the host has renewed since, nothing changes and the host stays live.
func TestWatchExpiresALeaseAtItsRevision(t *testing.T) {
	url := startServer(t)
	observer := open(t, url, Config{Lease: time.Minute}) // the server expires nothing here
	events := watch(t, observer)
	stale := open(t, url, Config{})
	live := open(t, url, Config{})
	ctx, stopRenewing := context.WithCancel(testCtx(t))
	defer stopRenewing()
	if err := stale.Join(ctx, HostInfo{ID: "stale"}); err != nil {
		t.Fatal(err)
	}
	join(t, live, "live")
	waitEvent(t, events, Joined, "stale")
	waitEvent(t, events, Joined, "live")
	stopRenewing()
	rev := func(id string) uint64 {
		e, err := observer.leases.Get(testCtx(t), id)
		if err != nil {
			t.Fatal(err)
		}
		return e.Revision()
	}
	long := time.Now().Add(-2 * observer.lease)
	leases := map[string]seenLease{
		"stale": {rev: rev("stale"), at: long},
		"live":  {rev: rev("live") - 1, at: long}, // an older revision: "live" renewed since
	}
	observer.expire(testCtx(t), leases)
	waitEvent(t, events, Expired, "stale")
	if ids := memberIDs(t, observer); !slices.Equal(ids, []string{"live"}) {
		t.Fatalf("members after the purge: %v, want [live]", ids)
	}
	if _, err := observer.leases.Get(testCtx(t), "live"); err != nil {
		t.Fatalf("the renewed lease after a purge at an older revision: %v", err)
	}
	// Each is tried again later (a quarter lease), not at once.
	for id, l := range leases {
		if d := time.Since(l.at); d < observer.lease/2 || d >= observer.lease {
			t.Errorf("lease %s: seen %v ago after the attempt, want the next a quarter lease on", id, d)
		}
	}
}

func TestLeaseRenewedStays(t *testing.T) {
	url := startServer(t)
	c := open(t, url, Config{Lease: 2 * time.Second})
	join(t, c, "h1")
	// Renewals rewrite the lease: wait for two of them (no bound on how
	// soon; a starved machine renews late), then the host is still live.
	first, err := c.leases.Get(testCtx(t), "h1")
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(time.Minute)
	for {
		e, err := c.leases.Get(testCtx(t), "h1")
		if err != nil {
			t.Fatalf("the lease while renewed: %v", err)
		}
		if e.Revision() >= first.Revision()+2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the lease was not renewed twice within a minute")
		}
		time.Sleep(50 * time.Millisecond)
	}
	if ids := memberIDs(t, c); !slices.Equal(ids, []string{"h1"}) {
		t.Fatalf("members %v after renewals, want [h1]", ids)
	}
}

// TestMembersWhileRenewing lists the members over and over while three
// hosts renew their leases: every listing names all three. (A listing
// taken from a watch's initial values dropped a lease renewed while it
// was read.)
func TestMembersWhileRenewing(t *testing.T) {
	url := startServer(t)
	var hosts []*Cluster
	for _, id := range []string{"h1", "h2", "h3"} {
		c := open(t, url, Config{Lease: 2 * time.Second})
		join(t, c, id)
		hosts = append(hosts, c)
	}
	// List until each lease has been renewed a few times, so that many
	// listings overlap a renewal.
	first := make([]uint64, len(hosts))
	renewed := func() bool {
		for i, c := range hosts {
			e, err := c.leases.Get(testCtx(t), c.member.info.ID)
			if err != nil {
				t.Fatalf("the lease of %s: %v", c.member.info.ID, err)
			}
			if first[i] == 0 {
				first[i] = e.Revision()
			}
			if e.Revision() < first[i]+3*uint64(len(hosts)) {
				return false
			}
		}
		return true
	}
	deadline := time.Now().Add(time.Minute)
	for n := 0; !renewed(); n++ {
		for range 50 {
			if ids := memberIDs(t, hosts[n%len(hosts)]); !slices.Equal(ids, []string{"h1", "h2", "h3"}) {
				t.Fatalf("members %v while every host renews, want [h1 h2 h3]", ids)
			}
		}
		if time.Now().After(deadline) {
			t.Fatal("the leases were not renewed three times each within a minute")
		}
	}
}

func TestLeaveRemovesAtOnce(t *testing.T) {
	url := startServer(t)
	observer := open(t, url, Config{})
	events := watch(t, observer)
	c := open(t, url, Config{}) // the default lease: 10 s
	join(t, c, "h1")
	waitEvent(t, events, Joined, "h1")
	if err := c.Leave(testCtx(t)); err != nil {
		t.Fatal(err)
	}
	if ids := memberIDs(t, observer); len(ids) != 0 {
		t.Errorf("members right after Leave: %v", ids)
	}
	waitEvent(t, events, Left, "h1")
	if err := c.Leave(testCtx(t)); !errors.Is(err, ErrNotJoined) {
		t.Errorf("a second Leave: %v, want ErrNotJoined", err)
	}
	// The host joins again after a clean leave.
	join(t, c, "h1")
	waitEvent(t, events, Joined, "h1")
	if ids := memberIDs(t, observer); !slices.Equal(ids, []string{"h1"}) {
		t.Errorf("members after joining again: %v", ids)
	}
}

func TestLostLease(t *testing.T) {
	url := startServer(t)
	c := open(t, url, Config{Lease: time.Second})
	join(t, c, "h1")
	// A person removes the lease by hand: the next renewal finds it gone.
	if err := c.leases.Delete(testCtx(t), "h1"); err != nil {
		t.Fatal(err)
	}
	select {
	case <-c.Lost():
	case <-time.After(time.Minute):
		t.Fatal("the lost lease was not reported within a minute")
	}
}

func TestHostIDInUse(t *testing.T) {
	url := startServer(t)
	join(t, open(t, url, Config{}), "h1")
	err := open(t, url, Config{}).Join(testCtx(t), HostInfo{ID: "h1"})
	if !errors.Is(err, ErrHostExists) || !contains(err.Error(), "h1") {
		t.Fatalf("a second host h1: %v, want ErrHostExists naming h1", err)
	}
	if err := open(t, url, Config{}).Join(testCtx(t), HostInfo{ID: "h.1"}); !errors.Is(err, ErrBadConfig) || !contains(err.Error(), `"h.1"`) {
		t.Fatalf("host id h.1: %v, want ErrBadConfig naming it", err)
	}
}

// TestJoinAgainAfterNoAnswer: a Join whose lease was created but that got
// no answer is called again with the same host: it takes the lease as
// its own. Another start of the same id (another start time) is refused.
func TestJoinAgainAfterNoAnswer(t *testing.T) {
	url := startServer(t)
	c := open(t, url, Config{})
	info := HostInfo{ID: "h1", Addr: "127.0.0.1:8080", Started: time.Now()}
	data, err := json.Marshal(info)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.leases.Create(testCtx(t), "h1", data); err != nil { // what the first call did
		t.Fatal(err)
	}
	if err := c.Join(testCtx(t), info); err != nil {
		t.Fatalf("joining again with the lease the first call created: %v", err)
	}
	if ids := memberIDs(t, c); len(ids) != 1 || ids[0] != "h1" {
		t.Errorf("members %v, want [h1]", ids)
	}
	other := info
	other.Started = info.Started.Add(time.Second)
	if err := open(t, url, Config{}).Join(testCtx(t), other); !errors.Is(err, ErrHostExists) {
		t.Fatalf("another start of h1: %v, want ErrHostExists", err)
	}
	if err := c.Leave(testCtx(t)); err != nil {
		t.Fatal(err)
	}
}

func TestInvalidEntryRefused(t *testing.T) {
	url := startServer(t)
	c := open(t, url, Config{})
	join(t, c, "a")
	join(t, open(t, url, Config{}), "b")
	ctx := testCtx(t)
	for _, tc := range invalidTables {
		t.Run(tc.name, func(t *testing.T) {
			rev, err := c.kv.Put(ctx, keyAssignment, []byte(tc.json)) // edited by hand
			if err != nil {
				t.Fatal(err)
			}
			_, err = c.Assignment(ctx)
			if !errors.Is(err, ErrInvalidAssignment) {
				t.Fatalf("reading: %v, want ErrInvalidAssignment", err)
			}
			want := fmt.Sprintf(`bucket %s key "assignment" (revision %d)`, BucketName("orders"), rev)
			if msg := err.Error(); !contains(msg, want) || !contains(msg, tc.field) || !contains(msg, tc.reason) {
				t.Errorf("error %q does not name %q, the field %q and %q", msg, want, tc.field, tc.reason)
			}
			// Nothing is applied: an update fails without writing.
			_, err = c.Update(ctx, func(a *Assignment) error { a.Owners = Spread(4, []string{"a", "b"}); return nil })
			if !errors.Is(err, ErrInvalidAssignment) {
				t.Fatalf("updating: %v, want ErrInvalidAssignment", err)
			}
			e, err := c.kv.Get(ctx, keyAssignment)
			if err != nil || e.Revision() != rev || string(e.Value()) != tc.json {
				t.Fatalf("the entry changed: revision %d (was %d), err %v", e.Revision(), rev, err)
			}
		})
	}
	// A valid table is read again once the entry is fixed.
	if _, err := c.kv.Put(ctx, keyAssignment, []byte(`{"key_groups":4,"owners":["a","b","a","b"]}`)); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Assignment(ctx); err != nil {
		t.Fatal(err)
	}
	// An update that would write an invalid table is refused too.
	_, err := c.Update(ctx, func(a *Assignment) error { a.Owners[3] = "zed"; return nil })
	if !errors.Is(err, ErrInvalidAssignment) || !contains(err.Error(), "owners[3]") {
		t.Fatalf("an update to an unknown host: %v, want ErrInvalidAssignment naming owners[3]", err)
	}
}

func TestPipelineMismatch(t *testing.T) {
	url := startServer(t)
	a := open(t, url, Config{})
	join(t, a, "a")
	same := open(t, url, Config{})
	join(t, same, "same") // the same text joins

	other := "name: orders\nsources:\n  - jetstream: OTHER\noperators:\n  - keyed: count.wasm\n"
	b := open(t, url, Config{Text: []byte(other)})
	err := b.Join(testCtx(t), HostInfo{ID: "b"})
	var pm *PipelineMismatchError
	if !errors.Is(err, ErrPipelineMismatch) || !errors.As(err, &pm) {
		t.Fatalf("a host with another text: %v, want a *PipelineMismatchError", err)
	}
	if pm.Line != 3 || pm.Cluster != "  - jetstream: IN" || pm.Host != "  - jetstream: OTHER" {
		t.Errorf("mismatch at line %d: %q vs %q", pm.Line, pm.Cluster, pm.Host)
	}
	if msg := err.Error(); !contains(msg, `line 3 is "  - jetstream: IN" in the cluster's and "  - jetstream: OTHER" in this host's`) {
		t.Errorf("error %q does not name the line", msg)
	}
	if ids := memberIDs(t, a); !slices.Equal(ids, []string{"a", "same"}) {
		t.Errorf("members %v: the refused host's lease is left", ids)
	}

	// A text that is shorter names the end of the file.
	short := open(t, url, Config{Text: []byte("name: orders\n")})
	err = short.Join(testCtx(t), HostInfo{ID: "short"})
	if !errors.As(err, &pm) || pm.Line != 2 || !pm.HostEnded || !contains(err.Error(), "(end of file) in this host's") {
		t.Errorf("a shorter text: %v", err)
	}

	// ReplacePipeline does not replace the text of live hosts...
	r := open(t, url, Config{Text: []byte(other), ReplacePipeline: true})
	if err := r.Join(testCtx(t), HostInfo{ID: "r"}); !errors.Is(err, ErrPipelineMismatch) || !contains(err.Error(), "is live") {
		t.Fatalf("replace with live hosts: %v, want ErrPipelineMismatch", err)
	}
	// ... but does once they are gone.
	for _, c := range []*Cluster{a, same} {
		if err := c.Leave(testCtx(t)); err != nil {
			t.Fatal(err)
		}
	}
	join(t, r, "r")
	err = open(t, url, Config{}).Join(testCtx(t), HostInfo{ID: "old"})
	if !errors.As(err, &pm) || pm.Cluster != "  - jetstream: OTHER" {
		t.Errorf("the old text after the replacement: %v", err)
	}
}

// TestAssignmentReadFromLeader checks that the cluster bucket's stream
// answers reads from its leader only: a replica that lags must not hand a
// host an older table.
func TestAssignmentReadFromLeader(t *testing.T) {
	url := startServer(t)
	c := open(t, url, Config{})
	nc, err := nats.Connect(url)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	for _, bucket := range []string{BucketName(c.cfg.Pipeline), LeaseBucketName(c.cfg.Pipeline)} {
		s, err := js.Stream(testCtx(t), "KV_"+bucket)
		if err != nil {
			t.Fatal(err)
		}
		if s.CachedInfo().Config.AllowDirect {
			t.Errorf("bucket %s's stream allows direct gets: reads may come from a lagging replica", bucket)
		}
	}
	// A second Open binds the bucket as it is.
	open(t, url, Config{})
}

// TestRenewalWhoseAnswerWasLost writes the host's lease behind its
// renewer's back, as a renewal the server stored but whose answer was
// lost (a server failing over) leaves it: the renewer's next update finds
// another revision, sees its own description there, and goes on; the
// lease is not taken for lost.
func TestRenewalWhoseAnswerWasLost(t *testing.T) {
	url := startServer(t)
	c := open(t, url, Config{Lease: 1500 * time.Millisecond})
	join(t, c, "h1")
	ctx := testCtx(t)
	var wrote uint64
	for wrote == 0 {
		e, err := c.leases.Get(ctx, "h1")
		if err != nil {
			t.Fatal(err)
		}
		rev, err := c.leases.Update(ctx, "h1", e.Value(), e.Revision())
		if err == nil {
			wrote = rev
		} else if !errors.Is(err, jetstream.ErrKeyRevisionMismatch) {
			t.Fatal(err)
		}
	}
	deadline := time.Now().Add(time.Minute)
	for {
		e, err := c.leases.Get(ctx, "h1")
		if err != nil {
			t.Fatalf("the lease after a lost answer: %v", err)
		}
		if e.Revision() >= wrote+2 {
			break // renewed twice since
		}
		select {
		case <-c.Lost():
			t.Fatal("the lease was taken for lost after a renewal whose answer was lost")
		default:
		}
		if time.Now().After(deadline) {
			t.Fatal("not renewed twice within a minute")
		}
		time.Sleep(20 * time.Millisecond)
	}
	select {
	case <-c.Lost():
		t.Fatal("the lease was taken for lost after a renewal whose answer was lost")
	default:
	}
}
