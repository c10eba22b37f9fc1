package api

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/sluicehq/sluice/host/api/schema"
)

// fakeControl records what the routes asked of it.
type fakeControl struct {
	swapped, prepared []string
}

func (f *fakeControl) Plugins(context.Context) (schema.Plugins, error) {
	return schema.Plugins{Modules: []schema.Module{{Name: "upper"}}}, nil
}

func (f *fakeControl) Swap(_ context.Context, op, file string, module []byte) (schema.SwapResult, error) {
	switch op {
	case "nope":
		return schema.SwapResult{}, fmt.Errorf("operator %q: %w", op, ErrNotFound)
	case "bad":
		return schema.SwapResult{}, fmt.Errorf("module %s: %w", file, ErrRefused)
	}
	f.swapped = append(f.swapped, op+" "+file+" "+string(module))
	return schema.SwapResult{Operator: op, To: schema.Module{Version: "v2"}}, nil
}

func (f *fakeControl) Prepare(_ context.Context, op, file string, module []byte) (schema.PrepareResult, error) {
	switch op {
	case "nope":
		return schema.PrepareResult{}, fmt.Errorf("operator %q: %w", op, ErrNotFound)
	case "bad":
		return schema.PrepareResult{}, fmt.Errorf("module %s: %w", file, ErrRefused)
	}
	f.prepared = append(f.prepared, op+" "+file+" "+string(module))
	return schema.PrepareResult{Operator: op, Module: schema.Module{Version: "v3"}, Source: schema.SourceUpload}, nil
}

func (f *fakeControl) Rollback(_ context.Context, op string) (schema.SwapResult, error) {
	return schema.SwapResult{}, fmt.Errorf("operator %q has no previous plugin: %w", op, ErrConflict)
}

func (f *fakeControl) SetWorkers(_ context.Context, op string, n int) (schema.Workers, error) {
	if op == "bank" {
		return schema.Workers{}, fmt.Errorf("operator %q is transactional: %w", op, ErrRefused)
	}
	return schema.Workers{Operator: op, From: 2, To: n}, nil
}

func TestControlRoutes(t *testing.T) {
	c := &fakeControl{}
	srv := httptest.NewServer(NewHandler(Options{Registry: prometheus.NewRegistry(), Status: func() schema.Status { return schema.Status{} }, Control: c, Token: "tok"}))
	defer srv.Close()
	do := func(method, path, token, body string) (int, string) {
		req, err := http.NewRequest(method, srv.URL+path, bytes.NewBufferString(body))
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
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	for _, tc := range []struct {
		method, path, token, body string
		code                      int
		want                      string
	}{
		{"GET", "/api/v1/plugins", "", "", 200, "upper"},
		{"POST", "/api/v1/operators/up/swap?file=v2.wasm", "", "MOD", 401, "Bearer"},
		{"POST", "/api/v1/operators/up/swap?file=v2.wasm", "wrong", "MOD", 401, "api-token"},
		{"POST", "/api/v1/operators/up/swap?file=v2.wasm", "tok", "MOD", 200, `"version": "v2"`},
		{"POST", "/api/v1/operators/nope/swap", "tok", "MOD", 404, "nope"},
		{"POST", "/api/v1/operators/bad/swap", "tok", "MOD", 422, "module.wasm"},
		{"POST", "/api/v1/operators/up/prepare?file=v3.wasm", "", "MOD3", 401, "Bearer"},
		{"POST", "/api/v1/operators/up/prepare?file=v3.wasm", "wrong", "MOD3", 401, "api-token"},
		{"POST", "/api/v1/operators/up/prepare?file=v3.wasm", "tok", "MOD3", 200, `"version": "v3"`},
		{"POST", "/api/v1/operators/nope/prepare", "tok", "MOD3", 404, "nope"},
		{"POST", "/api/v1/operators/bad/prepare", "tok", "MOD3", 422, "module.wasm"},
		{"POST", "/api/v1/operators/up/rollback", "tok", "", 409, "no previous plugin"},
		{"POST", "/api/v1/operators/up/rollback", "", "", 401, "token"},
	} {
		code, body := do(tc.method, tc.path, tc.token, tc.body)
		if code != tc.code || !strings.Contains(body, tc.want) {
			t.Errorf("%s %s (token %q) = %d %s, want %d with %q", tc.method, tc.path, tc.token, code, body, tc.code, tc.want)
		}
	}
	if len(c.swapped) != 1 || c.swapped[0] != "up v2.wasm MOD" {
		t.Errorf("swaps %q: only the authorized one may reach the host", c.swapped)
	}
	if len(c.prepared) != 1 || c.prepared[0] != "up v3.wasm MOD3" {
		t.Errorf("prepares %q: only the authorized one may reach the host", c.prepared)
	}
}

func TestNoTokenRefusesEveryPost(t *testing.T) {
	srv := httptest.NewServer(NewHandler(Options{Registry: prometheus.NewRegistry(), Status: func() schema.Status { return schema.Status{} }, Control: &fakeControl{}}))
	defer srv.Close()
	req, _ := http.NewRequest("POST", srv.URL+"/api/v1/operators/up/rollback", nil)
	req.Header.Set("Authorization", "Bearer ")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 401 {
		t.Errorf("status %d, want 401 when the host has no token", resp.StatusCode)
	}
}
