package api

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http/httptest"
	"os"
	"reflect"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/sluicehq/sluice/host/api/schema"
	"github.com/sluicehq/sluice/state"
	"github.com/sluicehq/sluice/txn/adapt"
)

// fill sets every exported field of v, at any depth, to a value that is
// not zero (slices and maps get two elements), so that a field the JSON
// drops on its way is seen missing.
func fill(t *testing.T, v reflect.Value, depth int) {
	if depth > 8 {
		t.Fatalf("fill: %s nests too deep", v.Type())
	}
	switch v.Type() {
	case reflect.TypeFor[time.Time]():
		v.Set(reflect.ValueOf(time.Date(2026, 12, 1, 10, 30, 0, 0, time.UTC)))
		return
	case reflect.TypeFor[adapt.Decision]():
		// Its reasons are formatted from unexported fields: take a
		// decision as the host encodes one.
		var d adapt.Decision
		if err := json.Unmarshal([]byte(`{"strategy":"dfs-op-eager","previous":"serial","rule":"bfs-op-lazy","learned":true,"held":true,
			"predicted_rate":1.5,"spread":0.5,"samples":3,"over":"serial","z":2.5,"mispredicted":true,"probe":true,"decide_ns":7,
			"reasons":["exploration: why","unit: why","abort: why"]}`), &d); err != nil {
			t.Fatal(err)
		}
		v.Set(reflect.ValueOf(d))
		return
	}
	switch v.Kind() {
	case reflect.String:
		v.SetString("s")
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		v.SetInt(7)
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		v.SetUint(7)
	case reflect.Float32, reflect.Float64:
		v.SetFloat(1.5)
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Pointer:
		v.Set(reflect.New(v.Type().Elem()))
		fill(t, v.Elem(), depth+1)
	case reflect.Slice:
		v.Set(reflect.MakeSlice(v.Type(), 2, 2))
		for i := range 2 {
			fill(t, v.Index(i), depth+1)
		}
	case reflect.Map:
		v.Set(reflect.MakeMap(v.Type()))
		for i := range 2 {
			k, e := reflect.New(v.Type().Key()).Elem(), reflect.New(v.Type().Elem()).Elem()
			fill(t, k, depth+1)
			if k.Kind() == reflect.String {
				k.SetString(fmt.Sprintf("k%d", i))
			}
			fill(t, e, depth+1)
			v.SetMapIndex(k, e)
		}
	case reflect.Struct:
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				fill(t, v.Field(i), depth+1)
			}
		}
	default:
		t.Fatalf("fill: no value for %s", v.Type())
	}
}

func filled[T any](t *testing.T) T {
	var v T
	fill(t, reflect.ValueOf(&v).Elem(), 0)
	return v
}

// docControl answers with fixed documents.
type docControl struct {
	plugins schema.Plugins
	swap    schema.SwapResult
	prepare schema.PrepareResult
	workers schema.Workers
}

func (c docControl) Plugins(context.Context) (schema.Plugins, error) { return c.plugins, nil }

func (c docControl) Swap(context.Context, string, string, []byte) (schema.SwapResult, error) {
	return c.swap, nil
}

func (c docControl) Prepare(context.Context, string, string, []byte) (schema.PrepareResult, error) {
	return c.prepare, nil
}

func (c docControl) Rollback(context.Context, string) (schema.SwapResult, error) { return c.swap, nil }

func (c docControl) SetWorkers(context.Context, string, int) (schema.Workers, error) {
	return c.workers, nil
}

// docCluster answers with fixed documents.
type docCluster struct {
	status schema.ClusterStatus
	start  schema.ClusterStart
	scale  schema.ClusterScale
	host   schema.ClusterHostChange
}

func (c docCluster) ChangeHost(context.Context, string, bool) (schema.ClusterHostChange, error) {
	return c.host, nil
}

func (c docCluster) Status(context.Context) (schema.ClusterStatus, error) { return c.status, nil }

func (c docCluster) Move(context.Context, schema.ClusterMoveRequest) (schema.ClusterStart, error) {
	return c.start, nil
}

func (c docCluster) Place(context.Context, schema.ClusterPlaceRequest) (schema.ClusterStart, error) {
	return c.start, nil
}

func (c docCluster) Rebalance(context.Context, schema.ClusterRebalanceRequest) (schema.ClusterStart, error) {
	return c.start, nil
}

func (c docCluster) Scale(context.Context, string, int, string) (schema.ClusterScale, error) {
	return c.scale, nil
}

// docState answers every query with one page.
type docState struct{ page state.Page }

func (s docState) Read(state.Query) (state.Page, error) { return s.page, nil }

// TestClientDecodesEveryAnswer: every answer of the API, each field set,
// comes back through Client (which refuses a field its type lacks) equal
// to what the server encoded, and encodes to the same JSON again.
func TestClientDecodesEveryAnswer(t *testing.T) {
	status := filled[schema.Status](t)
	decisions := filled[schema.Decisions](t)
	ctl := docControl{plugins: filled[schema.Plugins](t), swap: filled[schema.SwapResult](t), prepare: filled[schema.PrepareResult](t), workers: filled[schema.Workers](t)}
	clu := docCluster{status: filled[schema.ClusterStatus](t), start: filled[schema.ClusterStart](t), scale: filled[schema.ClusterScale](t),
		host: filled[schema.ClusterHostChange](t)}
	page := state.Page{Entries: []state.Entry{
		{Table: "accounts", Key: []byte("alice"), Value: []byte("10"), KeyGroup: 3},
		{Table: "accounts", Key: []byte{0xff}, Value: []byte{0xfe}, KeyGroup: 4},
	}, Next: "cursor"}
	plane := filled[schema.Control](t)
	round := filled[schema.Decision](t)
	srv := httptest.NewServer(NewHandler(Options{
		ControlPlane: func() schema.Control { return plane },
		ControlRound: func(context.Context, string) (*schema.Decision, error) { return &round, nil },
		Registry:     prometheus.NewRegistry(),
		Status:       func() schema.Status { return status },
		Decisions:    func(string, int) (schema.Decisions, error) { return decisions, nil },
		Control:      ctl,
		State:        docState{page},
		Cluster:      clu,
		Token:        "tok",
	}))
	defer srv.Close()
	c := &Client{Addr: srv.URL, Token: "tok", strict: true}
	ctx := context.Background()
	wantPage := StatePage{Entries: []StateEntry{NewStateEntry(page.Entries[0]), NewStateEntry(page.Entries[1])}, Next: "cursor"}
	check := func(route string, want, got any, err error) {
		t.Helper()
		if err != nil {
			t.Fatalf("%s: %v", route, err)
		}
		if !reflect.DeepEqual(want, got) {
			t.Errorf("%s: decoded\n%+v\nwant\n%+v", route, got, want)
		}
		a, _ := json.Marshal(want)
		b, _ := json.Marshal(got)
		if !bytes.Equal(a, b) {
			t.Errorf("%s: decoded answer encodes to\n%s\nwant\n%s", route, b, a)
		}
	}
	got, err := c.Status(ctx)
	check("GET /api/v1/pipeline", status, got, err)
	d, err := c.Decisions(ctx, "ledger", 2)
	check("GET /api/v1/operators/{name}/decisions", decisions, d, err)
	if len(d) > 0 && len(d[0].Decision.Reasons()) != 3 {
		t.Errorf("decoded decision's reasons %q, want 3", d[0].Decision.Reasons())
	}
	p, err := c.Plugins(ctx)
	check("GET /api/v1/plugins", ctl.plugins, p, err)
	s, err := c.Swap(ctx, "up", "v2.wasm", []byte("MOD"))
	check("POST /api/v1/operators/{name}/swap", ctl.swap, s, err)
	pr, err := c.Prepare(ctx, "up", "v3.wasm", []byte("MOD"))
	check("POST /api/v1/operators/{name}/prepare", ctl.prepare, pr, err)
	s, err = c.Rollback(ctx, "up")
	check("POST /api/v1/operators/{name}/rollback", ctl.swap, s, err)
	w, err := c.SetWorkers(ctx, "count", 3)
	check("POST /api/v1/operators/{name}/workers", ctl.workers, w, err)
	sp, err := c.State(ctx, state.Query{KeyGroup: -1})
	check("GET /api/v1/state", wantPage, sp, err)
	cs, err := c.Cluster(ctx)
	check("GET /api/v1/cluster", clu.status, cs, err)
	st, err := c.ClusterMove(ctx, schema.ClusterMoveRequest{Groups: []int{3}, To: "h2"})
	check("POST /api/v1/cluster/move", clu.start, st, err)
	st, err = c.ClusterPlace(ctx, schema.ClusterPlaceRequest{Operator: "count", To: "h2"})
	check("POST /api/v1/cluster/place", clu.start, st, err)
	st, err = c.ClusterRebalance(ctx, schema.ClusterRebalanceRequest{})
	check("POST /api/v1/cluster/rebalance", clu.start, st, err)
	sc, err := c.ClusterScale(ctx, "count", 3, "h2")
	check("POST /api/v1/cluster/operators/{name}/workers", clu.scale, sc, err)
	hc, err := c.ClusterActivate(ctx, "p1")
	check("POST /api/v1/cluster/hosts/{id}/activate", clu.host, hc, err)
	hc, err = c.ClusterRelease(ctx, "p1")
	check("POST /api/v1/cluster/hosts/{id}/release", clu.host, hc, err)
	cp, err := c.Control(ctx)
	check("GET /api/v1/control", plane, cp, err)
	rd, err := c.ControlRound(ctx, "why")
	check("POST /api/v1/control/round", &round, rd, err)
}

// TestClientErrors: an error answer is a *StatusError that matches the
// sentinel the server chose its status from.
func TestClientErrors(t *testing.T) {
	srv := httptest.NewServer(NewHandler(Options{Registry: prometheus.NewRegistry(),
		Status: func() schema.Status { return schema.Status{} }, Control: &fakeControl{}, Token: "tok"}))
	defer srv.Close()
	c := &Client{Addr: srv.URL, Token: "tok"}
	ctx := context.Background()
	_, err := c.Swap(ctx, "nope", "m.wasm", []byte("MOD"))
	var se *StatusError
	if !errors.As(err, &se) || se.Code != 404 || !errors.Is(err, ErrNotFound) || !strings.Contains(se.Message, "nope") {
		t.Errorf("swap of an unknown operator: %v", err)
	}
	if _, err := c.Rollback(ctx, "up"); !errors.Is(err, ErrConflict) {
		t.Errorf("rollback without a previous plugin: %v, want ErrConflict", err)
	}
	if _, err := c.Swap(ctx, "bad", "m.wasm", []byte("MOD")); !errors.Is(err, ErrRefused) {
		t.Errorf("refused swap: %v, want ErrRefused", err)
	}
	if _, err := c.Prepare(ctx, "nope", "m.wasm", []byte("MOD")); !errors.As(err, &se) || se.Code != 404 || !strings.Contains(se.Message, "nope") {
		t.Errorf("prepare for an unknown operator: %v, want a 404 naming it", err)
	}
	if _, err := c.Prepare(ctx, "bad", "m.wasm", []byte("MOD")); !errors.Is(err, ErrRefused) || !strings.Contains(err.Error(), "m.wasm") {
		t.Errorf("refused prepare: %v, want ErrRefused naming the module", err)
	}
	if _, err := c.SetWorkers(ctx, "bank", 2); !errors.Is(err, ErrRefused) {
		t.Errorf("workers of a transactional operator: %v, want ErrRefused", err)
	}
	if _, err := c.SetWorkers(ctx, "count", 0); !errors.As(err, &se) || se.Code != 400 {
		t.Errorf("0 workers: %v, want a 400", err)
	}
	c.Token = ""
	if _, err := c.Rollback(ctx, "up"); !errors.As(err, &se) || se.Code != 401 || errors.Is(err, ErrNotFound) {
		t.Errorf("rollback without the token: %v, want a 401", err)
	}
}

// docRoute matches a route's heading in docs/api.md: ### `GET /path`.
var docRoute = regexp.MustCompile("(?m)^### `((?:GET|POST) /[^`]*)`")

// TestEveryRouteDocumented: docs/api.md documents every route the
// handler serves, and no other.
func TestEveryRouteDocumented(t *testing.T) {
	b, err := os.ReadFile("../../docs/api.md")
	if err != nil {
		t.Fatal(err)
	}
	var documented []string
	for _, m := range docRoute.FindAllStringSubmatch(string(b), -1) {
		documented = append(documented, m[1])
	}
	_, served := newMux(Options{Registry: prometheus.NewRegistry(), Status: func() schema.Status { return schema.Status{} },
		Updated: func() <-chan struct{} { return nil }, Control: &fakeControl{}, State: docState{},
		TPG: func(string) (schema.TPG, bool, error) { return schema.TPG{}, false, nil }})
	sort.Strings(documented)
	served = slices.Sorted(slices.Values(served))
	for _, r := range served {
		if !slices.Contains(documented, r) {
			t.Errorf("route %s is not documented in docs/api.md (### `%s`)", r, r)
		}
	}
	for _, r := range documented {
		if !slices.Contains(served, r) {
			t.Errorf("docs/api.md documents %s, which the handler does not serve", r)
		}
	}
}

// keyPaths adds to set the paths of every key in the JSON value v
// ("operators[].txn.batches"). An object whose path p has p+".*" in
// known is a map: its keys all count as "*".
func keyPaths(v any, p string, known, set map[string]bool) {
	switch v := v.(type) {
	case map[string]any:
		for k, e := range v {
			q := p + "." + k
			if known[p+".*"] {
				q = p + ".*"
			}
			set[q] = true
			keyPaths(e, q, known, set)
		}
	case []any:
		for _, e := range v {
			keyPaths(e, p+"[]", known, set)
		}
	}
}

// pathsOf returns the key paths of v's JSON, its maps' keys as "*".
func pathsOf(t *testing.T, v any) map[string]bool {
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var x any
	if err := json.Unmarshal(b, &x); err != nil {
		t.Fatal(err)
	}
	raw := map[string]bool{}
	keyPaths(x, "", nil, raw)
	// fill gives a map the keys k0 and k1.
	known := map[string]bool{}
	for p := range raw {
		if q, ok := strings.CutSuffix(p, ".k0"); ok {
			known[q+".*"] = true
		}
	}
	set := map[string]bool{}
	keyPaths(x, "", known, set)
	return set
}

// TestDocumentedShapes: the JSON example of each route in docs/api.md
// has every field of the route's answer type, and no other.
func TestDocumentedShapes(t *testing.T) {
	b, err := os.ReadFile("../../docs/api.md")
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	page := filled[schema.StatePage](t)
	for route, v := range map[string]any{
		"GET /api/v1/pipeline":                          filled[schema.Status](t),
		"GET /api/v1/events":                            filled[schema.Status](t),
		"GET /api/v1/operators/{name}/decisions":        filled[schema.Decisions](t),
		"GET /api/v1/state":                             page,
		"GET /api/v1/plugins":                           filled[schema.Plugins](t),
		"GET /api/v1/operators/{name}/tpg":              filled[schema.TPG](t),
		"POST /api/v1/operators/{name}/swap":            filled[schema.SwapResult](t),
		"POST /api/v1/operators/{name}/prepare":         filled[schema.PrepareResult](t),
		"POST /api/v1/operators/{name}/workers":         filled[schema.Workers](t),
		"GET /api/v1/cluster":                           filled[schema.ClusterStatus](t),
		"POST /api/v1/cluster/move":                     filled[schema.ClusterStart](t),
		"POST /api/v1/cluster/operators/{name}/workers": filled[schema.ClusterScale](t),
		"POST /api/v1/cluster/hosts/{id}/activate":      filled[schema.ClusterHostChange](t),
		"GET /api/v1/control":                           filled[schema.Control](t),
		"POST /api/v1/control/round":                    filled[schema.Decision](t),
	} {
		_, sec, ok := strings.Cut(doc, "### `"+route+"`")
		if !ok {
			t.Errorf("docs/api.md has no section ### `%s`", route)
			continue
		}
		sec, _, _ = strings.Cut(sec, "\n### ")
		_, block, ok := strings.Cut(sec, "```json\n")
		if !ok {
			t.Errorf("%s: docs/api.md shows no ```json example", route)
			continue
		}
		block, _, _ = strings.Cut(block, "```")
		var x any
		if err := json.Unmarshal([]byte(block), &x); err != nil {
			t.Errorf("%s: the example in docs/api.md is not JSON: %v", route, err)
			continue
		}
		want := pathsOf(t, v)
		got := map[string]bool{}
		keyPaths(x, "", want, got)
		for p := range want {
			if !got[p] {
				t.Errorf("%s: docs/api.md's example lacks %s", route, p)
			}
		}
		for p := range got {
			if !want[p] {
				t.Errorf("%s: docs/api.md's example has %s, which the answer does not", route, p)
			}
		}
	}
}
