package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/abi"
)

// TestMigrateEveryStrategyAndPhase runs the migration benchmark with tiny
// settings and checks the report's invariants: a row for every strategy
// and phase, nothing lost or duplicated (RunMigrate fails otherwise, and
// the rows say 0), groups moved and bytes shipped in every move phase,
// and the tables and JSON written. No assertion is about speed.
func TestMigrateEveryStrategyAndPhase(t *testing.T) {
	plugins := examplePlugins(t) // skips in -short mode
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	opts := QuickMigrateOptions()
	opts.KeyGroups, opts.State, opts.Rate, opts.Duration = 16, 64<<10, 200, 600*time.Millisecond
	opts.Failover, opts.Partition = false, false // TestMigrateFailover and TestMigratePartition run them
	opts.WordCount = plugins.WordCount
	opts.Dir = t.TempDir()
	var progress bytes.Buffer
	opts.Progress = &progress
	rep, err := RunMigrate(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	strategies := MigrateStrategies()
	phases := MigratePhases()
	if len(rep.Results) != len(strategies)*len(phases) {
		t.Fatalf("%d results, want %d (every strategy and phase)", len(rep.Results), len(strategies)*len(phases))
	}
	for i, x := range rep.Results {
		st, ph := strategies[i/len(phases)], phases[i%len(phases)]
		if x.Strategy != st.Name || x.Phase != ph {
			t.Errorf("result %d is %s/%s, want %s/%s", i, x.Strategy, x.Phase, st.Name, ph)
		}
		if x.Lost != 0 || x.Duplicated != 0 {
			t.Errorf("%s/%s: %d lost, %d duplicated", x.Strategy, x.Phase, x.Lost, x.Duplicated)
		}
		if x.Steady.Events == 0 {
			t.Errorf("%s/%s: no steady latencies", x.Strategy, x.Phase)
		}
		if ph == PhaseSteady {
			// The hosts checkpoint (MoveCheckpointEvery), but no group
			// moves, and no install fetches.
			if x.Moved != 0 || x.FetchedBytes != 0 || x.ShippedBytes == 0 {
				t.Errorf("%s/%s: moved %d groups, fetched %d bytes, shipped %d; want none, none, checkpoints", x.Strategy, x.Phase, x.Moved, x.FetchedBytes, x.ShippedBytes)
			}
			continue
		}
		if x.Moved == 0 || x.Steps == 0 || x.ShippedBytes <= 0 || x.During.Events == 0 {
			t.Errorf("%s/%s: moved %d groups in %d steps, shipped %d bytes, %d records during the move; want each above 0",
				x.Strategy, x.Phase, x.Moved, x.Steps, x.ShippedBytes, x.During.Events)
		}
		if ph == PhaseMove100 && x.Moved != opts.KeyGroups {
			t.Errorf("%s/%s: moved %d groups, want all %d", x.Strategy, x.Phase, x.Moved, opts.KeyGroups)
		}
		if ph == PhaseMove25 && x.Moved != opts.KeyGroups/4 {
			t.Errorf("%s/%s: moved %d groups, want %d", x.Strategy, x.Phase, x.Moved, opts.KeyGroups/4)
		}
	}
	if len(rep.Ratios) != 3 {
		t.Errorf("%d ratios against all-at-once, want one per Spacker strategy (3)", len(rep.Ratios))
	}
	// The replicate strategy's fetches against group order's, at the
	// moves: measured (the figure itself is for the full sizes).
	i := slices.IndexFunc(rep.Targets, func(x Target) bool { return strings.HasPrefix(x.Name, "replication cuts") })
	if i < 0 || !strings.Contains(rep.Targets[i].Got, "fetched at the moves") {
		t.Errorf("the replication target is not measured: %+v", rep.Targets)
	}
	var table, js bytes.Buffer
	if err := rep.WriteTable(&table); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"fluid", "all-at-once", "zipf-rebalance", "replicate2", "25% move against all-at-once"} {
		if !strings.Contains(table.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, table.String())
		}
	}
	if err := rep.WriteJSON(&js); err != nil {
		t.Fatal(err)
	}
	var back MigrateReport
	if err := json.Unmarshal(js.Bytes(), &back); err != nil || len(back.Results) != len(rep.Results) {
		t.Errorf("JSON report does not read back (%v): %d results", err, len(back.Results))
	}
	if !strings.Contains(progress.String(), "moving") {
		t.Errorf("no progress lines: %q", progress.String())
	}
}

// TestMigrateOptionsRefused checks that bad options are refused with an
// error naming the option, before anything starts.
func TestMigrateOptionsRefused(t *testing.T) {
	for _, c := range []struct {
		set  func(*MigrateOptions)
		want string
	}{
		{func(o *MigrateOptions) { o.Hosts = 1 }, "1 hosts"},
		{func(o *MigrateOptions) { o.NATSServers = 0 }, "0 NATS servers"},
		{func(o *MigrateOptions) { o.KeyGroups = 3 }, "3 key groups"},
		{func(o *MigrateOptions) { o.Rate = 0 }, "rate 0"},
		{func(o *MigrateOptions) { o.State = -1 }, "state -1"},
		{func(o *MigrateOptions) { o.Strategies = []string{"teleport"} }, `strategy "teleport"`},
		{func(o *MigrateOptions) { o.WordCount = nil }, "wordcount plugin"},
		{func(o *MigrateOptions) { o.Lease = 0 }, "lease 0"},
		{func(o *MigrateOptions) { o.CheckpointEvery = 0 }, "checkpoint period 0"},
		{func(o *MigrateOptions) { o.MoveCheckpointEvery = -time.Second }, "checkpoint period of the moves -1s"},
		{func(o *MigrateOptions) { o.FailoverHost = 2 }, "failover host 2"},
		{func(o *MigrateOptions) { o.SkipMoves, o.Failover, o.Partition = true, false, false }, "nothing to run"},
		{func(o *MigrateOptions) { o.PartitionRecords = 0 }, "partition run of 0 records"},
		{func(o *MigrateOptions) { o.PartitionRounds = 0 }, "partition run of 0 rounds"},
	} {
		opts := QuickMigrateOptions()
		opts.WordCount = []byte{0}
		c.set(&opts)
		_, err := RunMigrate(context.Background(), opts)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("RunMigrate: %v; want an error naming %s", err, c.want)
		}
	}
}

// TestKeyLogOrder checks the sink's mapping from a key's n-th count to
// the record it stands for: an output carrying another record's time (the
// key's records counted out of order) or a count past the key's records
// is refused.
func TestKeyLogOrder(t *testing.T) {
	l := &keyLog{pos: map[string][]uint64{}, rate: 1000}
	start := time.Unix(100, 0)
	l.setStart(start)
	l.add("a", 1)
	l.add("b", 2)
	l.add("a", 3)
	due := func(pos uint64) int64 { return start.UnixNano() + dueNs(pos-1, 1000) }
	rec := func(key, count string, pos uint64) *abi.Record {
		return &abi.Record{Key: []byte(key), Value: []byte(count), Time: due(pos)}
	}
	if pos, err := l.seq(rec("a", "2", 3)); err != nil || pos != 3 {
		t.Errorf("a's second count: position %d, %v; want 3", pos, err)
	}
	if _, err := l.seq(rec("a", "1", 3)); err == nil || !strings.Contains(err.Error(), "order") {
		t.Errorf("a's first count with the time of its second record: %v; want an order error", err)
	}
	if _, err := l.seq(rec("b", "2", 2)); err == nil {
		t.Error("b's second count, of one record published: no error")
	}
}
