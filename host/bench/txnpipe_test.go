package bench

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/state"
)

// TestRunTxnPipeline runs one strategy with 2 workers natively in memory and
// through a real job with Pebble commits, and checks the pipeline run's
// report: its outcome counts and the hash of the tables read back from
// Pebble equal the oracle's, every batch committed its changes, the ratio
// is its rate over the in-memory run's, and the table and targets show it.
func TestRunTxnPipeline(t *testing.T) {
	opts := smallLedger(t, "tstream")
	opts.Workers = []int{2}
	opts.Pipeline = true
	rep, err := RunTxn(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Pipeline) != 1 {
		t.Fatalf("%d pipeline runs, want 1", len(rep.Pipeline))
	}
	p := rep.Pipeline[0]
	if p.Strategy != "tstream" || p.Workers != 2 || p.Logic != TxnNative {
		t.Errorf("pipeline run of %s, %d workers, %s; want tstream, 2, native", p.Strategy, p.Workers, p.Logic)
	}
	if p.StateHash != rep.StateHash || p.Committed != rep.Committed || p.Aborted != rep.Aborted {
		t.Errorf("pipeline state %s, %d committed, %d aborted; want the oracle's %s, %d, %d",
			p.StateHash, p.Committed, p.Aborted, rep.StateHash, rep.Committed, rep.Aborted)
	}
	if p.Batches != 6 || p.Events != 1000 || p.CommitEntries == 0 || p.Outputs == 0 || p.MemTableSize != state.DefaultMemTableSize {
		t.Errorf("pipeline run: %d batches, %d events timed, %d entries committed, %d outputs, memtable %d; want 6, 1000, some, some, the default",
			p.Batches, p.Events, p.CommitEntries, p.Outputs, p.MemTableSize)
	}
	if p.Rate <= 0 || p.InMemoryRate != rep.Runs[0].Rate || p.Ratio != p.Rate/p.InMemoryRate {
		t.Errorf("pipeline rate %v, in memory %v (run %v), ratio %v", p.Rate, p.InMemoryRate, rep.Runs[0].Rate, p.Ratio)
	}
	var tb bytes.Buffer
	if err := rep.WriteTable(&tb); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(tb.String(), "Through a pipeline") || !strings.Contains(tb.String(), "pipeline (Pebble commits) over in-memory rate") {
		t.Errorf("the table lacks the pipeline runs or their target:\n%s", tb.String())
	}
}

// TestRunTxnPipelineMismatch changes one committed value in the pipeline's
// store after the job ends: the run must fail with ErrTxnMismatch, as a
// scheduler, executor or commit bug that lost or changed a write would.
func TestRunTxnPipelineMismatch(t *testing.T) {
	opts := smallLedger(t, "tstream")
	opts.Workers = []int{2}
	opts.Pipeline = true
	e, err := newTxnEnv(opts)
	if err != nil {
		t.Fatal(err)
	}
	changed := false
	e.corrupt = func(s *state.Store) {
		name := e.tables[0]
		var key, val []byte
		stop := errors.New("stop")
		_ = s.Scan(name, func(k, v []byte) error {
			key, val = bytes.Clone(k), append(bytes.Clone(v), 1)
			return stop
		})
		if key == nil {
			t.Errorf("table %s is empty in Pebble", name)
			return
		}
		tb := s.Table(name)
		tb.Group(state.KeyGroup(key, tb.KeyGroups())).Put(key, val)
		if err := s.Commit(nil); err != nil {
			t.Error(err)
		}
		changed = true
	}
	_, err = e.run(context.Background())
	if !changed {
		t.Fatal("the test hook did not run")
	}
	if !errors.Is(err, ErrTxnMismatch) || !strings.Contains(err.Error(), "read back from Pebble") {
		t.Fatalf("err %v, want ErrTxnMismatch naming the tables read back from Pebble", err)
	}
}
