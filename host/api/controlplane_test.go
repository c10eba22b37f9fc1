package api

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/sluicehq/sluice/host/api/schema"
)

// fakeRounds records the reasons of the rounds asked for and answers
// each with the next of its decisions (nil: nothing decided) or err.
type fakeRounds struct {
	mu      sync.Mutex
	reasons []string
	answers []*schema.Decision
	err     error
}

func (f *fakeRounds) round(_ context.Context, reason string) (*schema.Decision, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.reasons = append(f.reasons, reason)
	if f.err != nil {
		return nil, f.err
	}
	var d *schema.Decision
	if len(f.answers) > 0 {
		d, f.answers = f.answers[0], f.answers[1:]
	}
	return d, nil
}

func controlServer(t *testing.T, o Options) (*httptest.Server, *Client) {
	t.Helper()
	o.Registry = prometheus.NewRegistry()
	o.Status = func() schema.Status { return schema.Status{} }
	o.Token = "tok"
	srv := httptest.NewServer(NewHandler(o))
	t.Cleanup(srv.Close)
	return srv, &Client{Addr: srv.URL, Token: "tok", strict: true}
}

// TestControlPlaneOff: without the control plane, GET /api/v1/control
// answers 200 with enabled false and empty lists (not 404), and a round
// is answered 404 saying the control plane is off.
func TestControlPlaneOff(t *testing.T) {
	srv, c := controlServer(t, Options{})
	ctx := context.Background()
	got, err := c.Control(ctx)
	if err != nil {
		t.Fatal(err)
	}
	want := schema.Control{Policies: []string{}, Decisions: []schema.Decision{}, Findings: []schema.Finding{}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("control without a control plane: %+v, want %+v", got, want)
	}
	resp, err := http.Get(srv.URL + "/api/v1/control")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, s := range []string{`"enabled": false`, `"policies": []`, `"decisions": []`, `"findings": []`} {
		if !strings.Contains(string(body), s) {
			t.Errorf("the answer lacks %s:\n%s", s, body)
		}
	}
	_, err = c.ControlRound(ctx, "now")
	var se *StatusError
	if !errors.As(err, &se) || !errors.Is(err, ErrNotFound) || !strings.Contains(se.Message, "control plane is off") {
		t.Errorf("a round without a control plane: %v, want a 404 saying it is off", err)
	}
}

// TestControlPlaneRoutes: GET /api/v1/control answers the control plane's
// document; a round needs the token, hands over its reason and answers
// the decision it applied, 204 (nil) when it decided nothing, and an
// error with its sentinel's status; a body that is not a round request is
// answered 400, naming what is wrong.
func TestControlPlaneRoutes(t *testing.T) {
	doc := schema.Control{Enabled: true, Policies: []string{"latency", "ds2"}, Rounds: 12, LastRound: time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC),
		Workers:   []schema.WorkerHealth{{Operator: "count", Worker: 1, KeyGroups: 4, ArrivalRate: 900, ServiceRate: 1000, Utilization: 0.9, State: "moderate"}},
		Decisions: []schema.Decision{{ID: 1, Policy: "ds2", Action: schema.Action{Kind: "set-workers", Operator: "count", From: 2, To: 3}, Outcome: "kept"}},
		Findings:  []schema.Finding{{Cause: "hot-key", Subject: "count", Summary: "key k is 40% of the input", Recommendation: "salt the key"}}}
	dec := &schema.Decision{ID: 2, Trigger: "request: now", Policy: "latency", Action: schema.Action{Kind: "move-groups", Operator: "count",
		Moves: []schema.GroupMove{{Group: 7, FromWorker: 1, ToWorker: 0}}}, Outcome: "applied"}
	rounds := &fakeRounds{answers: []*schema.Decision{dec, nil}}
	srv, c := controlServer(t, Options{ControlPlane: func() schema.Control { return doc }, ControlRound: rounds.round})
	ctx := context.Background()

	got, err := c.Control(ctx)
	if err != nil || !reflect.DeepEqual(got, doc) {
		t.Errorf("control: %+v, %v, want %+v", got, err, doc)
	}
	if code, msg := post(t, srv, "/api/v1/control/round", "", `{"reason": "x"}`); code != http.StatusUnauthorized || !strings.Contains(msg, "token") {
		t.Errorf("a round without the token: %d %q, want 401", code, msg)
	}
	if len(rounds.reasons) != 0 {
		t.Fatalf("a round without the token ran: %q", rounds.reasons)
	}
	d, err := c.ControlRound(ctx, "now")
	if err != nil || !reflect.DeepEqual(d, dec) {
		t.Errorf("a round: %+v, %v, want %+v", d, err, dec)
	}
	d, err = c.ControlRound(ctx, "again")
	if err != nil || d != nil {
		t.Errorf("a round that decided nothing: %+v, %v, want nil", d, err)
	}
	if code, _ := post(t, srv, "/api/v1/control/round", "tok", ""); code != http.StatusNoContent {
		t.Errorf("a round with no body: %d, want 204", code)
	}
	if want := []string{"now", "again", ""}; !reflect.DeepEqual(rounds.reasons, want) {
		t.Errorf("reasons %q, want %q", rounds.reasons, want)
	}
	for body, want := range map[string]string{
		`{"why": "x"}`: `the body is not a round request ({"reason": "..."}, or nothing): json: unknown field "why"`,
		`[1]`:          "the body is not a round request",
	} {
		if code, msg := post(t, srv, "/api/v1/control/round", "tok", body); code != http.StatusBadRequest || !strings.Contains(msg, want) {
			t.Errorf("body %s: %d %q, want 400 with %q", body, code, msg, want)
		}
	}
	rounds.err = fmt.Errorf("a round is running already: %w", ErrConflict)
	if _, err := c.ControlRound(ctx, "busy"); !errors.Is(err, ErrConflict) || !strings.Contains(err.Error(), "a round is running already") {
		t.Errorf("a refused round: %v, want ErrConflict with its message", err)
	}
}

// TestControlPlaneNilLists: a document with nil lists is answered with
// empty ones.
func TestControlPlaneNilLists(t *testing.T) {
	_, c := controlServer(t, Options{ControlPlane: func() schema.Control { return schema.Control{Enabled: true} }})
	got, err := c.Control(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if got.Policies == nil || got.Decisions == nil || got.Findings == nil || !got.Enabled {
		t.Errorf("control %+v: want empty lists, not null", got)
	}
}
