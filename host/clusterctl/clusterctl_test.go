package clusterctl_test

import (
	"context"
	"errors"
	"log/slog"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/goleak"

	"github.com/sluicehq/sluice/connectors/natsconn/natstest"
	"github.com/sluicehq/sluice/host/api"
	"github.com/sluicehq/sluice/host/api/schema"
	"github.com/sluicehq/sluice/host/cluster"
	"github.com/sluicehq/sluice/host/clusterctl"
	"github.com/sluicehq/sluice/host/pipeline"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m,
		// As in package migrate's tests: nats.go's reconnect listener.
		goleak.IgnoreTopFunction("github.com/nats-io/nats.go/jetstream.(*jetStream).resetPendingAcksOnReconnect"))
}

const groups = 16

// testOperators are pipeline "p"'s operators, which a scale is checked
// against.
var testOperators = []pipeline.Operator{{Name: "up", Kind: pipeline.KindMap}, {Name: "count", Kind: pipeline.KindKeyed},
	{Name: "ledger", Kind: "transactional"}, {Name: "per_minute", Kind: "window"}}

// start returns a NATS server with pipeline "p"'s cluster, where hosts h1
// and h2 are live and h3 has joined and left, a handle to set up its
// table, and an API client of host h1 served by clusterctl.API.
func start(t *testing.T) (*cluster.Cluster, *api.Client) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	srv := natstest.StartServer(t)
	nc, err := nats.Connect(srv.ClientURL())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	open := func() *cluster.Cluster {
		c, err := cluster.Open(ctx, js, cluster.Config{Pipeline: "p", Text: []byte("name: p\n"), KeyGroups: groups, Logger: slog.New(slog.DiscardHandler)})
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	var h1 *cluster.Cluster
	for _, id := range []string{"h1", "h2", "h3"} {
		c := open()
		if err := c.Join(ctx, cluster.HostInfo{ID: id, Addr: "127.0.0.1:80" + id[1:], Started: time.Now()}); err != nil {
			t.Fatal(err)
		}
		if id == "h3" {
			if err := c.Leave(ctx); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if id == "h1" {
			h1 = c
		}
		t.Cleanup(func() { _ = c.Leave(context.Background()) })
	}
	h := httptest.NewServer(api.NewHandler(api.Options{Registry: prometheus.NewRegistry(), Status: func() schema.Status { return schema.Status{} },
		Cluster: clusterctl.API{Host: "h1", Admin: &clusterctl.Admin{Pipeline: "p", JS: js, Cluster: h1, Operators: testOperators}}, Token: "tok"}))
	t.Cleanup(h.Close)
	return open(), &api.Client{Addr: h.URL, Token: "tok"}
}

// set writes owners into the table, with no migration.
func set(t *testing.T, admin *cluster.Cluster, owners []string) {
	t.Helper()
	if _, err := admin.Update(context.Background(), func(a *cluster.Assignment) error {
		a.Owners = slices.Clone(owners)
		a.Migration = nil
		return nil
	}); err != nil {
		t.Fatal(err)
	}
}

// TestOverTheAPI: a host's API answers its cluster's status with its own
// id, starts the migrations a move and a rebalance plan, and refuses what
// the CLI refuses, with the API's statuses.
func TestOverTheAPI(t *testing.T) {
	admin, c := start(t)
	ctx := context.Background()
	spread := cluster.Spread(groups, []string{"h1", "h2"}) // even groups on h1, odd on h2
	set(t, admin, spread)

	st, err := c.Cluster(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if st.Host != "h1" || st.Pipeline != "p" || st.KeyGroups != groups || len(st.Hosts) != 3 || st.Migration != nil {
		t.Fatalf("status %+v", st)
	}
	if h := st.Hosts[0]; h.ID != "h1" || !h.Live || h.LeaseAgeSeconds == nil || h.Groups != 8 || h.Ranges != "0, 2, 4, 6, 8, 10, 12, 14" {
		t.Errorf("h1 %+v", h)
	}
	if h := st.Hosts[2]; h.ID != "h3" || h.Live || h.Groups != 0 {
		t.Errorf("h3 %+v", h)
	}

	for _, r := range []struct {
		req      schema.ClusterMoveRequest
		sentinel error
		want     string
	}{
		{schema.ClusterMoveRequest{Groups: []int{3}, To: "h3"}, api.ErrRefused, "to: host h3 is not live (live hosts: h1, h2)"},
		{schema.ClusterMoveRequest{Groups: []int{3, 16}, To: "h1"}, api.ErrRefused, "key group 16 is out of range: the pipeline has key groups 0 to 15"},
		{schema.ClusterMoveRequest{Groups: []int{-1}, To: "h1"}, api.ErrRefused, "key group -1 is out of range"},
		{schema.ClusterMoveRequest{To: "h1"}, api.ErrRefused, "no key groups to move"},
		{schema.ClusterMoveRequest{Groups: []int{3}}, api.ErrRefused, "no host to move the key groups to"},
		{schema.ClusterMoveRequest{Groups: []int{3}, To: "h1", Knobs: schema.ClusterKnobs{Order: "coldest"}}, api.ErrRefused, `order "coldest"`},
		{schema.ClusterMoveRequest{Groups: []int{3}, To: "h1", Knobs: schema.ClusterKnobs{Batch: -1}}, api.ErrRefused, "batch -1"},
	} {
		_, err := c.ClusterMove(ctx, r.req)
		if !errors.Is(err, r.sentinel) || !strings.Contains(err.Error(), r.want) {
			t.Errorf("move %+v: %v, want %v saying %q", r.req, err, r.sentinel, r.want)
		}
	}

	// 3, 5, 9 and 11 are h2's, 8 and 10 h1's already: four moves, two per
	// step, in reverse order.
	got, err := c.ClusterMove(ctx, schema.ClusterMoveRequest{Groups: []int{3, 5, 8, 9, 10, 11}, To: "h1",
		Knobs: schema.ClusterKnobs{Order: "reverse", Batch: 2, Replicate: 3}})
	if err != nil {
		t.Fatal(err)
	}
	m := got.Migration
	if m == nil || !strings.HasPrefix(m.ID, "move-") || got.Revision == 0 || len(m.Steps) != 2 {
		t.Fatalf("move answered %+v", got)
	}
	want := [][]schema.ClusterMove{
		{{Group: 11, From: "h2", To: "h1", State: "planned"}, {Group: 9, From: "h2", To: "h1", Replicated: true, State: "planned"}},
		{{Group: 5, From: "h2", To: "h1", State: "planned"}, {Group: 3, From: "h2", To: "h1", Replicated: true, State: "planned"}},
	}
	for i := range want {
		if !slices.Equal(m.Steps[i], want[i]) {
			t.Errorf("step %d %+v, want %+v", i+1, m.Steps[i], want[i])
		}
	}
	st, err = c.Cluster(ctx)
	if err != nil || st.Migration == nil || st.Migration.ID != m.ID || st.Migration.Step != 1 || st.Migration.Steps != 2 || st.Migration.GroupsTotal != 4 {
		t.Errorf("status during the move: %+v, %v", st.Migration, err)
	}

	// Another migration is refused, naming the one in progress.
	_, err = c.ClusterRebalance(ctx, schema.ClusterRebalanceRequest{})
	if !errors.Is(err, api.ErrConflict) || !strings.Contains(err.Error(), "migration "+m.ID+" is in progress, at step 1 of 2 (planned)") {
		t.Errorf("rebalance during a migration: %v", err)
	}

	// A rebalance of h1's every group gives h2 the highest half.
	set(t, admin, cluster.Spread(groups, []string{"h1"}))
	got, err = c.ClusterRebalance(ctx, schema.ClusterRebalanceRequest{Knobs: schema.ClusterKnobs{Batch: 4}})
	if err != nil {
		t.Fatal(err)
	}
	if got.Migration == nil || !strings.HasPrefix(got.Migration.ID, "rebalance-") || len(got.Migration.Steps) != 2 {
		t.Fatalf("rebalance answered %+v", got)
	}
	// Balanced already: no migration, and no error.
	set(t, admin, spread)
	if got, err = c.ClusterRebalance(ctx, schema.ClusterRebalanceRequest{}); err != nil || got.Migration != nil || got.Revision == 0 {
		t.Errorf("rebalance of a balanced table: %+v, %v", got, err)
	}
	// h3 is gone: its groups must wait for failover.
	set(t, admin, cluster.Spread(groups, []string{"h1", "h2", "h3"}))
	if _, err = c.ClusterRebalance(ctx, schema.ClusterRebalanceRequest{}); !errors.Is(err, api.ErrRefused) || !strings.Contains(err.Error(), "owned by host h3, which is not live") {
		t.Errorf("rebalance with a gone host's groups: %v", err)
	}
}

// TestScaleOverTheAPI: a scale through a host's API is recorded in the
// workers record with the host that took it, for every host or one;
// what the CLI refuses is refused with the API's status, naming the
// operator and the value, and writes nothing; the status shows the
// record, each host's reported counts, and which live hosts run them.
func TestScaleOverTheAPI(t *testing.T) {
	admin, c := start(t)
	ctx := context.Background()
	set(t, admin, cluster.Spread(groups, []string{"h1", "h2"}))
	before, err := admin.Assignment(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range []struct {
		op, host string
		n        int
		want     string
	}{
		{"ledger", "", 2, `operator "ledger" is transactional`},
		{"per_minute", "", 2, `operator "per_minute" is window`},
		{"counts", "", 2, `operator "counts": the pipeline has no such operator (operators: up, count, ledger, per_minute)`},
		{"count", "", cluster.MaxWorkers + 1, `operator "count": 65537 workers: want 1 to 65536`},
		{"count", "h9", 2, `host: host "h9" has never joined the cluster (hosts: h1, h2, h3)`},
	} {
		_, err := c.ClusterScale(ctx, r.op, r.n, r.host)
		if !errors.Is(err, api.ErrRefused) || !strings.Contains(err.Error(), r.want) {
			t.Errorf("scale %s to %d on %q: %v, want ErrRefused saying %q", r.op, r.n, r.host, err, r.want)
		}
	}
	if a, err := admin.Assignment(ctx); err != nil || a.Revision != before.Revision || a.Workers != nil {
		t.Fatalf("refused scales wrote: %+v, %v", a, err)
	}

	got, err := c.ClusterScale(ctx, "count", 3, "")
	if err != nil || got.Operator != "count" || got.Workers != 3 || got.Host != "" || got.Epoch != 1 || got.Revision <= before.Revision {
		t.Fatalf("scale: %+v, %v", got, err)
	}
	// h3 has left, but it is known: a count of its own waits for it.
	if got, err = c.ClusterScale(ctx, "count", 1, "h3"); err != nil || got.Host != "h3" || got.Epoch != 2 {
		t.Fatalf("scale on h3: %+v, %v", got, err)
	}
	a, err := admin.Assignment(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if ow := a.Workers.Operators["count"]; ow.Count != 3 || ow.Hosts["h3"] != 1 || ow.By != "host h1" || ow.Epoch != 2 {
		t.Fatalf("record %+v", ow)
	}

	// h1 reports it runs 3, h2 still 2: the scale is pending on h2.
	for h, n := range map[string]int{"h1": 3, "h2": 2} {
		if err := admin.Report(ctx, cluster.Running{Host: h, Workers: map[string]int{"count": n, "up": 4}}); err != nil {
			t.Fatal(err)
		}
	}
	st, err := c.Cluster(ctx)
	if err != nil {
		t.Fatal(err)
	}
	w := st.Workers
	if w == nil || w.Epoch != 2 || len(w.Operators) != 1 || w.Operators[0].Count != 3 || w.Operators[0].Hosts["h3"] != 1 ||
		!slices.Equal(w.Scaled, []string{"h1"}) || !slices.Equal(w.Pending, []string{"h2"}) {
		t.Fatalf("status workers %+v", w)
	}
	if st.Hosts[1].ID != "h2" || st.Hosts[1].Workers["count"] != 2 || st.Hosts[1].Workers["up"] != 4 {
		t.Errorf("h2 %+v", st.Hosts[1])
	}
}

// TestPlaceOverTheAPI: a placement moves every key group to its host and
// records it in the table, so that a rebalance the coordinator computes
// (Balanced) keeps them there; a placement on the host that owns every
// group already records it alone; a rebalance asked for forgets it; and
// an operator the host does not run, a host that is not live and none
// are refused, nothing recorded.
func TestPlaceOverTheAPI(t *testing.T) {
	admin, c := start(t)
	ctx := context.Background()
	set(t, admin, cluster.Spread(groups, []string{"h1", "h2"}))

	for _, r := range []struct {
		req  schema.ClusterPlaceRequest
		want string
	}{
		{schema.ClusterPlaceRequest{Operator: "nope", To: "h2"}, `pipeline "p" does not run operator "nope" here`},
		{schema.ClusterPlaceRequest{Operator: "count", To: "h3"}, "to: host h3 is not live (live hosts: h1, h2)"},
		{schema.ClusterPlaceRequest{Operator: "count"}, "no host to place the operators on"},
	} {
		if _, err := c.ClusterPlace(ctx, r.req); !errors.Is(err, api.ErrRefused) || !strings.Contains(err.Error(), r.want) {
			t.Errorf("place %+v: %v, want a refusal saying %q", r.req, err, r.want)
		}
	}
	if a, err := admin.Assignment(ctx); err != nil || a.Placed != "" || a.Migration != nil {
		t.Fatalf("after the refusals: %+v, %v", a, err)
	}

	got, err := c.ClusterPlace(ctx, schema.ClusterPlaceRequest{Operator: "count", To: "h2", Knobs: schema.ClusterKnobs{Batch: 4}})
	if err != nil || got.Migration == nil || len(got.Migration.Steps) != 2 {
		t.Fatalf("place on h2: %+v, %v, want a migration of h1's 8 groups in 2 steps", got, err)
	}
	a, err := admin.Assignment(ctx)
	if err != nil || a.Placed != "h2" || a.Migration == nil {
		t.Fatalf("the table after the placement: %+v, %v", a, err)
	}
	for _, mv := range slices.Concat(a.Migration.Steps[0].Moves, a.Migration.Steps[1].Moves) {
		if mv.From != "h1" || mv.To != "h2" {
			t.Errorf("move %+v, want h1 -> h2", mv)
		}
	}
	// Every group on h2: the coordinator's rebalance over any live hosts
	// that include h2 leaves them there; without h2 it spreads them.
	set(t, admin, cluster.Spread(groups, []string{"h2"}))
	a, _ = admin.Assignment(ctx)
	if got := a.Balanced([]string{"h1", "h2", "h3"}); !slices.Equal(got, a.Owners) {
		t.Errorf("Balanced of a table placed on h2: %v, want every group left on h2", got)
	}
	if got := a.Balanced([]string{"h1", "h3"}); slices.Contains(got, "h2") || !slices.Contains(got, "h1") || !slices.Contains(got, "h3") {
		t.Errorf("Balanced without h2: %v, want the groups spread over h1 and h3", got)
	}

	// Placed again on h2, where every group is: recorded alone.
	if _, err := admin.Update(ctx, func(a *cluster.Assignment) error { a.Placed = ""; return nil }); err != nil {
		t.Fatal(err)
	}
	if got, err := c.ClusterPlace(ctx, schema.ClusterPlaceRequest{Operator: "up", To: "h2"}); err != nil || got.Migration != nil {
		t.Errorf("place where every group is: %+v, %v, want no migration", got, err)
	}
	if a, err := admin.Assignment(ctx); err != nil || a.Placed != "h2" || a.Migration != nil {
		t.Errorf("after placing where every group is: %+v, %v", a, err)
	}

	// A rebalance forgets the placement and spreads the groups.
	got, err = c.ClusterRebalance(ctx, schema.ClusterRebalanceRequest{})
	if err != nil || got.Migration == nil {
		t.Fatalf("rebalance: %+v, %v", got, err)
	}
	if a, err := admin.Assignment(ctx); err != nil || a.Placed != "" || a.Migration == nil {
		t.Errorf("after the rebalance: %+v, %v, want the placement forgotten", a, err)
	}
}
