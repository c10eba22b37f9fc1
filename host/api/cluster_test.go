package api

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/sluicehq/sluice/host/api/schema"
)

// fakeCluster records the requests of the cluster routes.
type fakeCluster struct {
	moves      []schema.ClusterMoveRequest
	places     []schema.ClusterPlaceRequest
	rebalances []schema.ClusterRebalanceRequest
	scales     []string // "operator workers host"
	hosts      []string // "id activate"
	err        error
}

func (f *fakeCluster) Scale(_ context.Context, operator string, workers int, host string) (schema.ClusterScale, error) {
	f.scales = append(f.scales, fmt.Sprintf("%s %d %s", operator, workers, host))
	return schema.ClusterScale{Operator: operator, Workers: workers, Host: host, Epoch: 1, Revision: 3}, f.err
}

func (f *fakeCluster) ChangeHost(_ context.Context, id string, activate bool) (schema.ClusterHostChange, error) {
	f.hosts = append(f.hosts, fmt.Sprintf("%s %v", id, activate))
	return schema.ClusterHostChange{Host: id, Pool: !activate, PoolEpoch: 2, PoolHosts: []string{}, Revision: 4}, f.err
}

func (f *fakeCluster) Status(context.Context) (schema.ClusterStatus, error) {
	return schema.ClusterStatus{Host: "h1", Pipeline: "p", KeyGroups: 4}, f.err
}

func (f *fakeCluster) Move(_ context.Context, req schema.ClusterMoveRequest) (schema.ClusterStart, error) {
	f.moves = append(f.moves, req)
	return schema.ClusterStart{Migration: &schema.ClusterPlan{ID: "m1"}, Revision: 2}, f.err
}

func (f *fakeCluster) Place(_ context.Context, req schema.ClusterPlaceRequest) (schema.ClusterStart, error) {
	f.places = append(f.places, req)
	return schema.ClusterStart{Migration: &schema.ClusterPlan{ID: "place-1"}, Revision: 5}, f.err
}

func (f *fakeCluster) Rebalance(_ context.Context, req schema.ClusterRebalanceRequest) (schema.ClusterStart, error) {
	f.rebalances = append(f.rebalances, req)
	return schema.ClusterStart{Revision: 2}, f.err
}

// post sends body to path on srv with token, and returns the status and
// the answer's error message ("" for an answer that is not an error).
func post(t *testing.T, srv *httptest.Server, path, token, body string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, srv.URL+path, bytes.NewBufferString(body))
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var e schema.Error
	if err := json.NewDecoder(resp.Body).Decode(&e); err != nil {
		return resp.StatusCode, ""
	}
	return resp.StatusCode, e.Error
}

// TestClusterRoutesWithoutCluster: a host that does not run in cluster
// mode answers every cluster route 404, saying so.
func TestClusterRoutesWithoutCluster(t *testing.T) {
	srv := httptest.NewServer(NewHandler(Options{Registry: prometheus.NewRegistry(), Status: func() schema.Status { return schema.Status{} }, Token: "tok"}))
	defer srv.Close()
	c := &Client{Addr: srv.URL, Token: "tok"}
	ctx := context.Background()
	_, err := c.Cluster(ctx)
	if !errors.Is(err, ErrNotFound) || !strings.Contains(err.Error(), "does not run in cluster mode") {
		t.Errorf("GET /api/v1/cluster: %v, want a 404 saying the host does not run in cluster mode", err)
	}
	if _, err := c.ClusterMove(ctx, schema.ClusterMoveRequest{Groups: []int{1}, To: "h2"}); !errors.Is(err, ErrNotFound) {
		t.Errorf("POST /api/v1/cluster/move: %v, want a 404", err)
	}
	if _, err := c.ClusterRebalance(ctx, schema.ClusterRebalanceRequest{}); !errors.Is(err, ErrNotFound) {
		t.Errorf("POST /api/v1/cluster/rebalance: %v, want a 404", err)
	}
	if _, err := c.ClusterPlace(ctx, schema.ClusterPlaceRequest{Operator: "count", To: "h2"}); !errors.Is(err, ErrNotFound) {
		t.Errorf("POST /api/v1/cluster/place: %v, want a 404", err)
	}
	if _, err := c.ClusterScale(ctx, "count", 2, ""); !errors.Is(err, ErrNotFound) || !strings.Contains(err.Error(), "does not run in cluster mode") {
		t.Errorf("POST /api/v1/cluster/operators/count/workers: %v, want a 404 saying the host does not run in cluster mode", err)
	}
	if _, err := c.ClusterActivate(ctx, "p1"); !errors.Is(err, ErrNotFound) {
		t.Errorf("POST /api/v1/cluster/hosts/p1/activate: %v, want a 404", err)
	}
}

// TestClusterHostRoutes: the activate and release routes pass the host
// on, need the token, and answer the provider's refusal 422.
func TestClusterHostRoutes(t *testing.T) {
	f := &fakeCluster{}
	srv := httptest.NewServer(NewHandler(Options{Registry: prometheus.NewRegistry(), Status: func() schema.Status { return schema.Status{} }, Cluster: f, Token: "tok"}))
	defer srv.Close()
	c := &Client{Addr: srv.URL, Token: "tok"}
	ctx := context.Background()
	if got, err := c.ClusterActivate(ctx, "p1"); err != nil || got.Host != "p1" || got.Pool {
		t.Errorf("activate: %+v, %v", got, err)
	}
	if got, err := c.ClusterRelease(ctx, "h2"); err != nil || got.Host != "h2" || !got.Pool {
		t.Errorf("release: %+v, %v", got, err)
	}
	if code, body := post(t, srv, "/api/v1/cluster/hosts/p1/activate", "", ""); code != 401 {
		t.Errorf("activate without the token: %d %s, want 401", code, body)
	}
	if want := []string{"p1 true", "h2 false"}; !reflect.DeepEqual(f.hosts, want) {
		t.Errorf("the provider got %q, want %q", f.hosts, want)
	}
	f.err = fmt.Errorf("host h1 is the last live active host: %w", ErrRefused)
	if _, err := c.ClusterRelease(ctx, "h1"); !errors.Is(err, ErrRefused) || !strings.Contains(err.Error(), "last live active host") {
		t.Errorf("a refused release: %v, want ErrRefused", err)
	}
}

// TestClusterScaleRoute: the scale route passes the operator, the count
// and the host on, needs the token, refuses a count that is not a whole
// number of at least 1 by the operator and the value (the provider is
// not asked), and answers the provider's refusal 422.
func TestClusterScaleRoute(t *testing.T) {
	f := &fakeCluster{}
	srv := httptest.NewServer(NewHandler(Options{Registry: prometheus.NewRegistry(), Status: func() schema.Status { return schema.Status{} }, Cluster: f, Token: "tok"}))
	defer srv.Close()
	c := &Client{Addr: srv.URL, Token: "tok"}
	ctx := context.Background()
	got, err := c.ClusterScale(ctx, "count", 3, "")
	if err != nil || got.Operator != "count" || got.Workers != 3 || got.Host != "" {
		t.Errorf("scale: %+v, %v", got, err)
	}
	if _, err := c.ClusterScale(ctx, "count", 2, "h2"); err != nil {
		t.Errorf("scale on h2: %v", err)
	}
	for _, c := range []struct {
		path, token string
		code        int
		want        string
	}{
		{"/api/v1/cluster/operators/count/workers?workers=2", "", 401, "needs the host's token"},
		{"/api/v1/cluster/operators/count/workers?workers=0", "tok", 400, `operator "count": workers="0": want a whole number of at least 1`},
		{"/api/v1/cluster/operators/count/workers?workers=two", "tok", 400, `workers="two"`},
		{"/api/v1/cluster/operators/count/workers", "tok", 400, `workers=""`},
	} {
		code, body := post(t, srv, c.path, c.token, "")
		if code != c.code || !strings.Contains(body, c.want) {
			t.Errorf("POST %s with token %q: %d %s, want %d saying %q", c.path, c.token, code, body, c.code, c.want)
		}
	}
	if want := []string{"count 3 ", "count 2 h2"}; !reflect.DeepEqual(f.scales, want) {
		t.Errorf("the provider got scales %q, want %q", f.scales, want)
	}
	f.err = fmt.Errorf("operator \"ledger\" is transactional: %w", ErrRefused)
	if _, err := c.ClusterScale(ctx, "ledger", 2, ""); !errors.Is(err, ErrRefused) || !strings.Contains(err.Error(), "ledger") {
		t.Errorf("a refused scale: %v, want ErrRefused naming the operator", err)
	}
}

// TestClusterRoutes: the cluster routes pass their bodies on, need the
// token to change anything, refuse a body that is not the route's JSON
// by what is wrong, and answer the provider's errors by their sentinel.
func TestClusterRoutes(t *testing.T) {
	f := &fakeCluster{}
	srv := httptest.NewServer(NewHandler(Options{Registry: prometheus.NewRegistry(), Status: func() schema.Status { return schema.Status{} }, Cluster: f, Token: "tok"}))
	defer srv.Close()
	c := &Client{Addr: srv.URL, Token: "tok"}
	ctx := context.Background()

	st, err := c.Cluster(ctx)
	if err != nil || st.Host != "h1" || st.Pipeline != "p" {
		t.Errorf("status: %+v, %v", st, err)
	}
	req := schema.ClusterMoveRequest{Groups: []int{3, 5}, To: "h2", Knobs: schema.ClusterKnobs{Order: "reverse", Batch: 1, Replicate: 2}}
	got, err := c.ClusterMove(ctx, req)
	if err != nil || got.Migration == nil || got.Migration.ID != "m1" {
		t.Errorf("move: %+v, %v", got, err)
	}
	if len(f.moves) != 1 || !reflect.DeepEqual(f.moves[0], req) {
		t.Errorf("the provider got moves %+v, want %+v", f.moves, req)
	}
	place := schema.ClusterPlaceRequest{Operator: "count", To: "h3", Knobs: schema.ClusterKnobs{Batch: 4}}
	if got, err := c.ClusterPlace(ctx, place); err != nil || got.Migration == nil || got.Migration.ID != "place-1" {
		t.Errorf("place: %+v, %v", got, err)
	}
	if len(f.places) != 1 || !reflect.DeepEqual(f.places[0], place) {
		t.Errorf("the provider got places %+v, want %+v", f.places, place)
	}
	// An empty body is every knob's default.
	if code, body := post(t, srv, "/api/v1/cluster/rebalance", "tok", ""); code != http.StatusOK {
		t.Errorf("rebalance with no body: %d %s", code, body)
	}
	if len(f.rebalances) != 1 || f.rebalances[0] != (schema.ClusterRebalanceRequest{}) {
		t.Errorf("the provider got rebalances %+v", f.rebalances)
	}

	for _, c := range []struct {
		path, token, body string
		code              int
		want              string
	}{
		{"/api/v1/cluster/move", "", `{"groups":[1],"to":"h2"}`, 401, "needs the host's token"},
		{"/api/v1/cluster/rebalance", "wrong", ``, 401, "needs the host's token"},
		{"/api/v1/cluster/move", "tok", `{"groups":[1],"host":"h2"}`, 400, `unknown field "host"`},
		{"/api/v1/cluster/move", "tok", `{"groups":"1-3"}`, 400, "move request"},
		{"/api/v1/cluster/place", "", `{"operator":"count","to":"h2"}`, 401, "needs the host's token"},
		{"/api/v1/cluster/place", "tok", `{"operator":"count","host":"h2"}`, 400, `unknown field "host"`},
		{"/api/v1/cluster/rebalance", "tok", `{"knobs":{"batch":2}} {}`, 400, "more than one JSON value"},
		{"/api/v1/cluster/rebalance", "tok", `{"knobs":{"bacth":2}}`, 400, `unknown field "bacth"`},
		{"/api/v1/cluster/rebalance", "tok", `{"knobs":` + strings.Repeat(" ", maxClusterBody) + `{}}`, 413, "longer than"},
	} {
		code, body := post(t, srv, c.path, c.token, c.body)
		if code != c.code || !strings.Contains(body, c.want) {
			t.Errorf("POST %s %.40q with token %q: %d %s, want %d saying %q", c.path, c.body, c.token, code, body, c.code, c.want)
		}
	}
	if len(f.moves) != 1 || len(f.rebalances) != 1 || len(f.places) != 1 {
		t.Errorf("refused requests reached the provider: moves %+v, rebalances %+v, places %+v", f.moves, f.rebalances, f.places)
	}

	for _, e := range []struct {
		err      error
		sentinel error
	}{
		{fmt.Errorf("host h9 is not live: %w", ErrRefused), ErrRefused},
		{fmt.Errorf("migration m1 is in progress: %w", ErrConflict), ErrConflict},
	} {
		f.err = e.err
		if _, err := c.ClusterRebalance(ctx, schema.ClusterRebalanceRequest{}); !errors.Is(err, e.sentinel) || !strings.Contains(err.Error(), e.err.Error()) {
			t.Errorf("rebalance failing with %v: %v", e.err, err)
		}
	}
}
