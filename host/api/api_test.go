package api

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/sluicehq/sluice/host/api/schema"
	"github.com/sluicehq/sluice/txn/adapt"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestEndpoints(t *testing.T) {
	reg := prometheus.NewRegistry()
	c := prometheus.NewCounter(prometheus.CounterOpts{Name: "sluice_test_total", Help: "test"})
	reg.MustRegister(c)
	c.Add(3)
	decisions := func(op string, n int) (schema.Decisions, error) {
		if op != "ledger" {
			return nil, fmt.Errorf("no such operator %q", op)
		}
		return schema.Decisions{{Measurement: adapt.Measurement{Batch: uint64(n)}}}, nil
	}
	srv, err := Listen("127.0.0.1:0", Handler(reg, func() schema.Status { return schema.Status{Batches: 7} }, decisions), Limits{}, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close(context.Background())
	get := func(path string) (int, string) {
		resp, err := http.Get("http://" + srv.Addr() + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if code, body := get("/healthz"); code != 200 || body != "ok\n" {
		t.Errorf("/healthz: %d %q", code, body)
	}
	if code, body := get("/metrics"); code != 200 || !strings.Contains(body, "sluice_test_total 3") {
		t.Errorf("/metrics: %d %q", code, body)
	}
	code, body := get("/api/v1/pipeline")
	var st schema.Status
	if code != 200 || json.Unmarshal([]byte(body), &st) != nil || st.Batches != 7 {
		t.Errorf("/api/v1/pipeline: %d %q", code, body)
	}
	for path, want := range map[string]struct {
		code int
		body string
	}{
		"/api/v1/operators/ledger/decisions":         {200, `"batch": 0,`},
		"/api/v1/operators/ledger/decisions?last=5":  {200, `"batch": 5,`},
		"/api/v1/operators/ledger/decisions?last=-1": {400, `"error": "last=\"-1\": want a whole number at least 0"`},
		"/api/v1/operators/other/decisions":          {404, `"error": "no such operator \"other\""`},
	} {
		if code, body := get(path); code != want.code || !strings.Contains(body, want.body) {
			t.Errorf("%s: %d %q, want %d with %q", path, code, body, want.code, want.body)
		}
	}
	if code, _ := get("/nope"); code != 404 {
		t.Errorf("/nope: %d", code)
	}
}

func TestListenErrorNamesAddress(t *testing.T) {
	srv, err := Listen("127.0.0.1:0", http.NotFoundHandler(), Limits{}, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close(context.Background())
	_, err = Listen(srv.Addr(), http.NotFoundHandler(), Limits{}, slog.New(slog.DiscardHandler))
	if err == nil || !strings.Contains(err.Error(), srv.Addr()) {
		t.Errorf("second Listen on %s = %v", srv.Addr(), err)
	}
}

// TestTPGRoute: 404 for an operator with no graph, 202 before a batch is
// sampled, then the sample.
func TestTPGRoute(t *testing.T) {
	sampled := false
	srv := httptest.NewServer(NewHandler(Options{Registry: prometheus.NewRegistry(), Status: func() schema.Status { return schema.Status{} },
		TPG: func(op string) (schema.TPG, bool, error) {
			if op != "ledger" {
				return schema.TPG{}, false, fmt.Errorf("no operator %q", op)
			}
			if !sampled {
				sampled = true
				return schema.TPG{}, false, nil
			}
			return schema.TPG{Strategy: "dfs-op-eager", Ops: []schema.TPGOp{{Key: "a"}}}, true, nil
		}}))
	defer srv.Close()
	for _, c := range []struct {
		op   string
		code int
		body string
	}{{"up", 404, `no operator \"up\"`}, {"ledger", 202, "no batch sampled yet"}, {"ledger", 200, `"strategy": "dfs-op-eager"`}} {
		resp, err := http.Get(srv.URL + "/api/v1/operators/" + c.op + "/tpg")
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != c.code || !strings.Contains(string(b), c.body) {
			t.Errorf("%s: %d %s; want %d with %s", c.op, resp.StatusCode, b, c.code, c.body)
		}
	}
}
