package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/abi"
	"github.com/sluicehq/sluice/connectors"
)

// TestMigrateFailover runs the failover phase alone, small: one of three
// hosts killed under the load. RunMigrate fails unless every record's
// output reached the sink exactly once; the report must say so, name the
// killed host's groups, and give times in the order the events happen
// (kill, lease expiry, installs, first outputs, serving again). No
// assertion is about speed.
func TestMigrateFailover(t *testing.T) {
	plugins := examplePlugins(t) // skips in -short mode
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	opts := QuickMigrateOptions()
	opts.Hosts, opts.KeyGroups, opts.State, opts.Rate = 3, 24, 64<<10, 200
	opts.SkipMoves, opts.Failover, opts.Partition = true, true, false // TestMigratePartition runs the partition run
	opts.WordCount = plugins.WordCount
	opts.Dir = t.TempDir()
	rep, err := RunMigrate(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Results) != 0 {
		t.Errorf("%d move results with the moves skipped, want 0", len(rep.Results))
	}
	f := rep.Failover
	if f == nil {
		t.Fatal("no failover result")
	}
	if f.Host != "h0" || f.Groups != opts.KeyGroups/opts.Hosts {
		t.Errorf("killed host %s with %d groups, want h0 with %d", f.Host, f.Groups, opts.KeyGroups/opts.Hosts)
	}
	if f.Lost != 0 || f.Duplicated != 0 {
		t.Errorf("%d lost, %d duplicated", f.Lost, f.Duplicated)
	}
	times := []struct {
		name string
		ms   float64
	}{{"kill", 0}, {"lease expired", f.ExpiredMs}, {"installed", f.InstalledMs}, {"first output", f.FirstOutputMs}}
	for i := 1; i < len(times); i++ {
		if times[i].ms < times[i-1].ms {
			t.Errorf("%s at %.1f ms, before %s at %.1f ms", times[i].name, times[i].ms, times[i-1].name, times[i-1].ms)
		}
	}
	if f.ServingMs < f.InstalledMs {
		t.Errorf("serving again at %.1f ms, before the last install at %.1f ms", f.ServingMs, f.InstalledMs)
	}
	if f.Steady.Events == 0 || f.During.Events == 0 {
		t.Errorf("%d steady and %d failover latencies, want some of each", f.Steady.Events, f.During.Events)
	}
	if len(rep.Targets) != 1 || !strings.HasPrefix(rep.Targets[0].Name, "failover") {
		t.Errorf("targets %+v, want the failover target alone", rep.Targets)
	}
	var table, js bytes.Buffer
	if err := rep.WriteTable(&table); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"failover: host h0 killed", "lease expired", "serving again"} {
		if !strings.Contains(table.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, table.String())
		}
	}
	if err := rep.WriteJSON(&js); err != nil {
		t.Fatal(err)
	}
	var back MigrateReport
	if err := json.Unmarshal(js.Bytes(), &back); err != nil || back.Failover == nil || back.Failover.ServingMs != f.ServingMs {
		t.Errorf("JSON report does not read back (%v): %+v", err, back.Failover)
	}
}

// TestDedupSink checks the failover run's stand-in for a JetStream sink:
// an output made again with its id and record is dropped and counted, one
// made again with another record is an error, and outputs after the kill
// mark their key group.
func TestDedupSink(t *testing.T) {
	l := &keyLog{pos: map[string][]uint64{}, rate: 1000}
	start := time.Unix(100, 0)
	l.setStart(start)
	l.add("a", 1)
	l.add("a", 2)
	lat := newLatencySink(2, l.seq)
	s := newDedupSink(lat, 8)
	out := func(id, count string, pos uint64) connectors.Out {
		return connectors.Out{ID: id, Record: abi.Record{Key: []byte("a"), Value: []byte(count), Time: start.UnixNano() + dueNs(pos-1, 1000)}}
	}
	ctx := context.Background()
	if err := s.Write(ctx, []connectors.Out{out("x/1", "1", 1)}); err != nil {
		t.Fatal(err)
	}
	if s.firstAll([]int{0, 1, 2, 3, 4, 5, 6, 7}) {
		t.Error("a group has an output after a kill that has not happened")
	}
	s.kill(time.Now())
	if err := s.Write(ctx, []connectors.Out{out("x/1", "1", 1), out("x/2", "2", 2)}); err != nil {
		t.Fatal(err)
	}
	if s.replayed != 1 {
		t.Errorf("%d replayed outputs dropped, want 1", s.replayed)
	}
	if err := lat.check(2, 0); err != nil {
		t.Errorf("the latency sink behind: %v", err)
	}
	if len(s.first) != 1 {
		t.Errorf("%d groups with an output after the kill, want 1 (key a's)", len(s.first))
	}
	if err := s.check(); err != nil {
		t.Fatalf("check before a bad repeat: %v", err)
	}
	if err := s.Write(ctx, []connectors.Out{out("x/2", "3", 2)}); err != nil {
		t.Fatal(err)
	}
	if err := s.check(); err == nil || !strings.Contains(err.Error(), "another record") {
		t.Errorf("check after id x/2 made again with another count: %v; want an error", err)
	}
}
