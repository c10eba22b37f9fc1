package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"
)

// TestMigratePartition runs the partition run alone with tiny settings:
// a drain on one host and one on two per round, each checked by sequence
// number (RunMigrate fails on a record lost, duplicated or out of its
// key's order), with a rate and a CPU figure for each, their medians and
// ratios, and the tables and JSON written. No assertion is about speed.
func TestMigratePartition(t *testing.T) {
	plugins := examplePlugins(t) // skips in -short mode
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	opts := QuickMigrateOptions()
	opts.SkipMoves, opts.Failover = true, false
	opts.KeyGroups, opts.PartitionRecords, opts.PartitionRounds = 16, 3000, 2
	opts.WordCount = plugins.WordCount
	opts.Dir = t.TempDir()
	var progress bytes.Buffer
	opts.Progress = &progress
	rep, err := RunMigrate(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	p := rep.Partition
	if p == nil {
		t.Fatal("no partition result")
	}
	if len(p.Runs) != 4 {
		t.Fatalf("%d drains, want 4 (one and %d hosts, 2 rounds)", len(p.Runs), opts.Hosts)
	}
	// The order alternates: 1 then 2 hosts in round 1, 2 then 1 in round 2.
	for i, want := range []int{1, opts.Hosts, opts.Hosts, 1} {
		if p.Runs[i].Hosts != want {
			t.Errorf("drain %d on %d hosts, want %d", i, p.Runs[i].Hosts, want)
		}
		if p.Runs[i].Rate <= 0 || p.Runs[i].CPUMicros <= 0 {
			t.Errorf("drain %d: rate %v, CPU %v µs per record; want both above 0", i, p.Runs[i].Rate, p.Runs[i].CPUMicros)
		}
	}
	if p.One.Hosts != 1 || p.Many.Hosts != opts.Hosts || p.RateRatio <= 0 || p.CPURatio <= 0 {
		t.Errorf("medians %+v / %+v, ratios %v / %v; want one host against %d with both ratios above 0", p.One, p.Many, p.RateRatio, p.CPURatio, opts.Hosts)
	}
	if len(rep.Targets) != 1 || !strings.Contains(rep.Targets[0].Name, "partitioned") {
		t.Errorf("targets %+v, want the partition run's alone", rep.Targets)
	}
	var table, js bytes.Buffer
	if err := rep.WriteTable(&table); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"partition cost", "partitioned over one"} {
		if !strings.Contains(table.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, table.String())
		}
	}
	if err := rep.WriteJSON(&js); err != nil {
		t.Fatal(err)
	}
	var back MigrateReport
	if err := json.Unmarshal(js.Bytes(), &back); err != nil || back.Partition == nil || len(back.Partition.Runs) != 4 {
		t.Errorf("JSON round trip: %v, partition %+v", err, back.Partition)
	}
	if !strings.Contains(progress.String(), "draining") {
		t.Errorf("progress lacks the drains:\n%s", progress.String())
	}
}
