package runner

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/sluicehq/sluice/host/api/schema"
	"github.com/sluicehq/sluice/sdk/go/wasmbuild"
)

// controlPipeline counts generated keys with one worker, under a control
// plane that runs DS2 and the doctor every 100 ms.
const controlPipeline = `
name: managed
http: {addr: 127.0.0.1:0}
state: {key_groups: 16}
sources:
  - {name: gen, type: generator, mode: sequence, keys: 40, rate: 3000}
operators:
  - {name: count, plugin: wordcount.wasm, kind: keyed, parallelism: 1, state: [counts]}
sinks:
  - {name: out, type: file, path: out.jsonl}
control:
  period: 100ms
  lock: 1s
  settle: 30s
  window: 1s
  policies: [ds2, doctor]
  workers: {min: 1, max: 4}
  ds2: {interval: 1s, warm_up: 1s, activation: 1, dead_band: 0}
`

// TestControlPlaneScalesACappedOperator runs a pipeline whose keyed
// operator's only worker is capped (a benchmark setting) under the rate
// it receives: DS2 adds workers, the decision shows in GET
// /api/v1/control with its evidence, the job runs on the new count, and
// POST /api/v1/control/round runs a round on request.
func TestControlPlaneScalesACappedOperator(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	mods, err := wasmbuild.GoModules(ctx, map[string]string{"wordcount": "../../plugins/wordcount"})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "wordcount.wasm"), mods["wordcount"], 0o644); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(dir, "p.yaml"), controlPipeline)
	data := filepath.Join(dir, "data")
	h := startPipeline(ctx, t, dir, Options{DataDir: data})
	// Every worker of count runs at most 1,000 records/s: 3,000/s need 3.
	if err := h.job.SetWorkerCap("count", -1, 1000); err != nil {
		t.Fatal(err)
	}
	stop := runInBackground(ctx, h)
	defer stop()
	base := "http://" + h.HTTPAddr()
	get := func() schema.Control {
		t.Helper()
		resp, err := http.Get(base + "/api/v1/control")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var c schema.Control
		if err := json.NewDecoder(resp.Body).Decode(&c); err != nil {
			t.Fatal(err)
		}
		return c
	}
	var scaled *schema.Decision
	deadline := time.Now().Add(2 * time.Minute)
	for scaled == nil {
		c := get()
		if !c.Enabled || len(c.Policies) != 2 || c.Policies[0] != "ds2" {
			t.Fatalf("control document %+v, want enabled with policies [ds2 doctor]", c)
		}
		for i := range c.Decisions {
			if d := c.Decisions[i]; d.Policy == "ds2" && d.Action.Kind == "set-workers" && d.Action.To > d.Action.From && d.Outcome != "failed" {
				scaled = &d
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("no scale-out by DS2 within two minutes; last document: %+v", c)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if scaled.Action.Operator != "count" || scaled.Action.From != 1 || scaled.Action.To < 2 || len(scaled.Evidence) == 0 || scaled.Reason == "" {
		t.Errorf("DS2's decision %+v: want count's workers raised from 1, with a reason and evidence", *scaled)
	}
	var workers int
	for _, op := range h.job.Status().Operators {
		if op.Name == "count" {
			workers = op.Parallelism
		}
	}
	if workers < 2 {
		t.Errorf("count runs %d workers after DS2's decision to run %d", workers, scaled.Action.To)
	}
	token, err := ReadToken(data)
	if err != nil {
		t.Fatal(err)
	}
	req, _ := http.NewRequest("POST", base+"/api/v1/control/round", bytes.NewReader([]byte(`{"reason": "test"}`)))
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK && resp.StatusCode != http.StatusNoContent {
		t.Errorf("POST /api/v1/control/round: %s, want 200 or 204", resp.Status)
	}
	if err := stop(); err != nil {
		t.Fatal(err)
	}
}
