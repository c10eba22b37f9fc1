package api

import (
	"bufio"
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/sluicehq/sluice/host/api/schema"
)

// changes is a fake job's Updated: change closes the channel handed out.
type changes struct {
	mu      sync.Mutex
	ch      chan struct{}
	batches uint64
}

func (c *changes) updated() <-chan struct{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.ch == nil {
		c.ch = make(chan struct{})
	}
	return c.ch
}

func (c *changes) change() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.batches++
	if c.ch != nil {
		close(c.ch)
		c.ch = nil
	}
}

func (c *changes) status() schema.Status {
	c.mu.Lock()
	defer c.mu.Unlock()
	return schema.Status{Pipeline: "p", Batches: c.batches}
}

// nextEvent reads one server-sent event and decodes its status.
func nextEvent(t *testing.T, r *bufio.Reader) schema.Status {
	t.Helper()
	var name, data string
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			t.Fatalf("reading the event stream: %v", err)
		}
		line = strings.TrimRight(line, "\n")
		if line == "" {
			break
		}
		if v, ok := strings.CutPrefix(line, "event: "); ok {
			name = v
		}
		if v, ok := strings.CutPrefix(line, "data: "); ok {
			data = v
		}
	}
	if name != "status" {
		t.Fatalf("event %q, want status", name)
	}
	var st schema.Status
	if err := json.Unmarshal([]byte(data), &st); err != nil {
		t.Fatalf("event data %q: %v", data, err)
	}
	return st
}

// TestEventsStreamTheStatus: GET /api/v1/events sends the status at once
// and again after a change, even on a server whose WriteTimeout is
// shorter than the stream; with http.auth: all it needs the token.
func TestEventsStreamTheStatus(t *testing.T) {
	c := &changes{}
	for _, authReads := range []bool{false, true} {
		h := NewHandler(Options{Registry: prometheus.NewRegistry(), Status: c.status, Updated: c.updated,
			Token: "secret", AuthReads: authReads})
		srv, err := Listen("127.0.0.1:0", h, Limits{WriteTimeout: 300 * time.Millisecond}, slog.New(slog.DiscardHandler))
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		get := func(token string) *http.Response {
			req, _ := http.NewRequestWithContext(ctx, "GET", "http://"+srv.Addr()+"/api/v1/events", nil)
			if token != "" {
				req.Header.Set("Authorization", "Bearer "+token)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			return resp
		}
		if authReads {
			resp := get("")
			resp.Body.Close()
			if resp.StatusCode != http.StatusUnauthorized {
				t.Errorf("with auth all, no token: %d, want 401", resp.StatusCode)
			}
		}
		resp := get("secret")
		if ct := resp.Header.Get("Content-Type"); resp.StatusCode != 200 || ct != "text/event-stream" {
			t.Fatalf("events: %d %q", resp.StatusCode, ct)
		}
		r := bufio.NewReader(resp.Body)
		first := nextEvent(t, r).Batches
		// Past the WriteTimeout: the stream must go on.
		time.Sleep(400 * time.Millisecond)
		c.change()
		deadline := time.Now().Add(time.Minute)
		for nextEvent(t, r).Batches == first {
			if time.Now().After(deadline) {
				t.Fatal("no event after a change within a minute")
			}
		}
		cancel()
		resp.Body.Close()
		srv.Close(context.Background())
	}
}
