package main

import (
	"context"
	"encoding/json"
	"errors"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/sluicehq/sluice/host/api"
	"github.com/sluicehq/sluice/host/api/schema"
)

// doctorDoc is a control plane's document with a finding, two workers
// and two decisions.
func doctorDoc() schema.Control {
	at := time.Date(2026, 12, 2, 10, 15, 0, 0, time.UTC)
	return schema.Control{Enabled: true, Policies: []string{"latency", "ds2", "straggler", "doctor"}, Rounds: 312, LastRound: at,
		Workers: []schema.WorkerHealth{
			{Operator: "count", Worker: 0, KeyGroups: 64, ArrivalRate: 4000, ServiceRate: 10000, Utilization: 0.4, DelaySeconds: 0.002, PredictedSeconds: 0.00017, State: "good"},
			{Operator: "count", Worker: 1, KeyGroups: 64, ArrivalRate: 9900, ServiceRate: 9000, Utilization: 1.1, DelaySeconds: 0.25, Saturated: true, State: "severe"},
		},
		Decisions: []schema.Decision{
			{ID: 2, Time: at, Trigger: "condition: latency over the bound", Policy: "latency",
				Action: schema.Action{Kind: "move-groups", Operator: "count", Moves: []schema.GroupMove{{Group: 17, FromWorker: 1, ToWorker: 0}}},
				Reason: "worker count/1 is severe", Evidence: []schema.Evidence{{Name: "delay of count/1", Value: 0.25, Unit: "s"}},
				Outcome: "rolled back", Observed: []schema.Evidence{{Name: "delay of count/0", Value: 0.4, Unit: "s"}},
				Others: []string{"ds2: set-workers count 2 -> 3"}},
			{ID: 1, Time: at.Add(-time.Minute), Trigger: "period", Policy: "ds2", Action: schema.Action{Kind: "set-workers", Operator: "count", From: 1, To: 2},
				Reason: "count needs 1.8 workers", Outcome: "kept"},
		},
		Findings: []schema.Finding{{Cause: "hot-key", Subject: "count", Summary: "one key is 41% of the input",
			Evidence:       []schema.Evidence{{Name: "share of key k17", Value: 0.41, Unit: "ratio"}},
			Recommendation: "salt the key", Since: at.Add(-5 * time.Minute)}},
	}
}

// doctorHost serves the API with the control plane's document doc (nil:
// no control plane) and records the rounds asked for.
type doctorHost struct {
	mu      sync.Mutex
	reasons []string
	decide  *schema.Decision
}

func (h *doctorHost) serve(t *testing.T, doc *schema.Control) string {
	t.Helper()
	o := api.Options{Registry: prometheus.NewRegistry(), Status: func() schema.Status { return schema.Status{} }, Token: "tok"}
	if doc != nil {
		o.ControlPlane = func() schema.Control { return *doc }
		o.ControlRound = func(_ context.Context, reason string) (*schema.Decision, error) {
			h.mu.Lock()
			defer h.mu.Unlock()
			h.reasons = append(h.reasons, reason)
			return h.decide, nil
		}
	}
	srv := httptest.NewServer(api.NewHandler(o))
	t.Cleanup(srv.Close)
	return srv.URL
}

// TestDoctorCommand: sluice doctor prints the findings, the workers'
// health and the decisions of a host's control plane, --json the
// document, --last bounds the decisions; a host without a control plane
// is said to have it off, one that does not answer to be unreachable.
func TestDoctorCommand(t *testing.T) {
	ctx := testContext(t)
	doc := doctorDoc()
	addr := (&doctorHost{}).serve(t, &doc)
	out, _, err := sluiceIn(ctx, "doctor", "--addr", addr)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"control plane: on, policies latency, ds2, straggler, doctor",
		"rounds: 312",
		"findings (1):",
		"hot-key of count: one key is 41% of the input",
		"evidence: share of key k17 0.41 ratio",
		"recommendation: salt the key",
		"workers (2):",
		"decisions (2 of 2, newest first):",
		"latency  move-groups count: group 17 worker 1 -> 0  [rolled back]",
		"reason: worker count/1 is severe",
		"evidence: delay of count/1 250ms",
		"observed: delay of count/0 400ms",
		"trigger: condition: latency over the bound",
		"not applied: ds2: set-workers count 2 -> 3",
		"ds2  set-workers count 1 -> 2  [kept]",
		"reason: count needs 1.8 workers",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("the doctor's output lacks %q:\n%s", want, out)
		}
	}
	var severe, good string
	for _, l := range strings.Split(out, "\n") {
		switch f := strings.Fields(l); {
		case len(f) == 10 && f[9] == "severe":
			severe = l
		case len(f) == 10 && f[9] == "good":
			good = l
		}
	}
	if f := strings.Fields(severe); len(f) != 10 || f[0] != "count" || f[1] != "1" || f[4] != "9900" || f[5] != "9000" || f[6] != "1.10" || f[8] != "saturated" {
		t.Errorf("the severe worker's row %q", severe)
	}
	if f := strings.Fields(good); len(f) != 10 || f[1] != "0" || f[7] != "2ms" || f[8] != "170µs" {
		t.Errorf("the good worker's row %q", good)
	}

	out, _, err = sluiceIn(ctx, "doctor", "--addr", addr, "--last", "1")
	if err != nil || !strings.Contains(out, "decisions (1 of 2, newest first)") || strings.Contains(out, "count needs 1.8 workers") {
		t.Errorf("--last 1: %v\n%s", err, out)
	}

	out, _, err = sluiceIn(ctx, "doctor", "--addr", addr, "--json")
	if err != nil {
		t.Fatal(err)
	}
	var got schema.Control
	if err := json.Unmarshal([]byte(out), &got); err != nil || !reflect.DeepEqual(got, doc) {
		t.Errorf("--json: %v\n%s", err, out)
	}

	off := (&doctorHost{}).serve(t, nil)
	if _, _, err := sluiceIn(ctx, "doctor", "--addr", off); !errors.Is(err, errControlOff) ||
		!strings.Contains(err.Error(), "control is off: add a control: section to the pipeline file (docs/control.md)") {
		t.Errorf("a host without a control plane: %v", err)
	}
	out, _, err = sluiceIn(ctx, "doctor", "--addr", off, "--json")
	if err != nil || !strings.Contains(out, `"enabled": false`) {
		t.Errorf("--json of a host without a control plane: %v\n%s", err, out)
	}
	srv := httptest.NewServer(nil)
	gone := srv.URL
	srv.Close()
	if _, _, err := sluiceIn(ctx, "doctor", "--addr", gone); err == nil || !strings.Contains(err.Error(), "no host answers at "+gone+": is the pipeline running?") {
		t.Errorf("an unreachable host: %v", err)
	}
	if _, _, err := sluiceIn(ctx, "doctor", "--addr", addr, "--last", "-1"); !errors.As(err, new(*usageError)) {
		t.Errorf("--last -1: %v, want a usage error", err)
	}
}

// TestDoctorRound: sluice doctor round sends its reason with the token
// (from the data directory as from --token) and prints the decision, or
// that the round decided nothing; without a token it is a usage error,
// and a host without a control plane is said to have it off.
func TestDoctorRound(t *testing.T) {
	ctx := testContext(t)
	doc := doctorDoc()
	h := &doctorHost{}
	addr := h.serve(t, &doc)
	t.Setenv("SLUICE_TOKEN", "")

	out, _, err := sluiceIn(ctx, "doctor", "round", "--addr", addr, "--token", "tok", "after the deploy")
	if err != nil || out != "the round decided nothing\n" {
		t.Errorf("a round that decided nothing: %v\n%s", err, out)
	}
	d := doc.Decisions[1]
	h.mu.Lock()
	h.decide = &d
	h.mu.Unlock()
	data := t.TempDir()
	if err := os.WriteFile(filepath.Join(data, "api-token"), []byte("tok\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	out, _, err = sluiceIn(ctx, "doctor", "round", "--addr", addr, "--data-dir", data)
	if err != nil || !strings.Contains(out, "ds2  set-workers count 1 -> 2  [kept]\n    reason: count needs 1.8 workers") {
		t.Errorf("a round that decided: %v\n%s", err, out)
	}
	out, _, err = sluiceIn(ctx, "doctor", "round", "--addr", addr, "--token", "tok", "--json")
	var got *schema.Decision
	if err != nil || json.Unmarshal([]byte(out), &got) != nil || !reflect.DeepEqual(got, &d) {
		t.Errorf("round --json: %v\n%s", err, out)
	}
	h.mu.Lock()
	reasons := h.reasons
	h.mu.Unlock()
	if want := []string{"after the deploy", "", ""}; !reflect.DeepEqual(reasons, want) {
		t.Errorf("reasons %q, want %q", reasons, want)
	}

	if _, _, err := sluiceIn(ctx, "doctor", "round", "--addr", addr); !errors.As(err, new(*usageError)) || !strings.Contains(err.Error(), "no API token") {
		t.Errorf("a round without a token: %v, want a usage error", err)
	}
	if _, _, err := sluiceIn(ctx, "doctor", "round", "--addr", addr, "--token", "bad"); err == nil || !strings.Contains(err.Error(), "wants its API token") {
		t.Errorf("a round with a wrong token: %v", err)
	}
	off := (&doctorHost{}).serve(t, nil)
	if _, _, err := sluiceIn(ctx, "doctor", "round", "--addr", off, "--token", "tok"); !errors.Is(err, errControlOff) {
		t.Errorf("a round on a host without a control plane: %v", err)
	}
	if _, _, err := sluiceIn(ctx, "doctor", "round", "--addr", addr, "--token", "tok", "a", "b"); !errors.As(err, new(*usageError)) {
		t.Errorf("two reasons: %v, want a usage error", err)
	}
}
