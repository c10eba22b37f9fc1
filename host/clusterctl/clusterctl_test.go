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
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m,
		// As in package migrate's tests: nats.go's reconnect listener.
		goleak.IgnoreTopFunction("github.com/nats-io/nats.go/jetstream.(*jetStream).resetPendingAcksOnReconnect"))
}

const groups = 16

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
		Cluster: clusterctl.API{Host: "h1", Admin: &clusterctl.Admin{Pipeline: "p", JS: js, Cluster: h1}}, Token: "tok"}))
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
