package bench

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

// TestNATSDashboard runs the nats suite with a page open in alternate
// pipeline rounds: the reader decodes events, and the report has both
// rates, their ratio and the dashboard target.
func TestNATSDashboard(t *testing.T) {
	plugins := examplePlugins(t)
	opts := QuickOptions()
	opts.Suites = []Suite{SuiteNATS}
	opts.NATS.Sizes = []int{64}
	opts.NATS.Messages = 5_000
	opts.NATS.Rounds = 2
	opts.NATS.Dashboard = true
	var progress bytes.Buffer
	opts.Progress = &progress
	opts.Dir = t.TempDir()
	rep, err := Run(context.Background(), plugins, opts)
	if err != nil {
		t.Fatal(err)
	}
	if rep.NATS == nil || len(rep.NATS.Sizes) != 1 {
		t.Fatalf("nats result %+v", rep.NATS)
	}
	s := rep.NATS.Sizes[0]
	pg := s.Page
	if pg == nil {
		t.Fatalf("no dashboard figures: %+v", s)
	}
	if len(pg.OpenRounds) != 2 || len(pg.ClosedRounds) != 2 || pg.OpenRate <= 0 || pg.ClosedRate <= 0 || pg.Ratio <= 0 {
		t.Errorf("dashboard figures %+v", pg)
	}
	// Each open round waits for the first event before it publishes.
	if pg.Events < 2 {
		t.Errorf("the reader decoded %d events in 2 open rounds", pg.Events)
	}
	if s.PipelineRate != pg.ClosedRate {
		t.Errorf("pipeline rate %v is not the closed rounds' %v", s.PipelineRate, pg.ClosedRate)
	}
	var found bool
	for _, tg := range rep.Targets {
		found = found || strings.HasPrefix(tg.Name, "Dashboard:")
	}
	if !found {
		t.Errorf("targets %+v lack the dashboard's", rep.Targets)
	}
	var table bytes.Buffer
	if err := rep.WriteTable(&table); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"page closed", "page open", "open / closed"} {
		if !strings.Contains(table.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, table.String())
		}
	}
	for _, want := range []string{"dashboard page open", "dashboard page closed"} {
		if !strings.Contains(progress.String(), want) {
			t.Errorf("progress lacks %q:\n%s", want, progress.String())
		}
	}
	t.Logf("%s", table.String())
}
