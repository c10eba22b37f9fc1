package exec

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/sluicehq/sluice/abi"
	"github.com/sluicehq/sluice/connectors"
	"github.com/sluicehq/sluice/host/plugin"
	"github.com/sluicehq/sluice/host/txnop"
	"github.com/sluicehq/sluice/txn"
)

// history is a native transactional Logic with windowed reads, over one
// table of values and one of reads. Events (record values):
//
//	set K V   write V to K
//	del K     delete K
//	win K     read every version of K the last histWindow events wrote
//
// Post emits, per "win" event, the versions it read, oldest first
// ("v@back", "-@back" for a deletion).
type history struct{}

const histWindow = 12

func (history) Plan(_ context.Context, events []abi.Record, p *txnop.Plan) error {
	for i := range events {
		f := strings.Fields(string(events[i].Value))
		ops := p.Ops(1)
		switch f[0] {
		case "set":
			ops[0] = txn.Op{Write: p.Key(0, []byte(f[1])), Fn: 0, Arg: p.Bytes([]byte(f[2]))}
		case "del":
			ops[0] = txn.Op{Write: p.Key(0, []byte(f[1])), Fn: 1}
		case "win":
			reads := p.Keys(1)
			reads[0] = p.Key(0, []byte(f[1]))
			ops[0] = txn.Op{Write: p.Key(1, []byte("reads")), Reads: reads, Fn: 2, Window: histWindow}
		default:
			return fmt.Errorf("event %d: unknown verb %q", i, f[0])
		}
		p.Txns = append(p.Txns, txn.Txn{Ops: ops})
	}
	return nil
}

func (history) Apply(_ context.Context, _, _ int, o *txn.Op, _ txn.Access) (txn.Effect, error) {
	switch o.Fn {
	case 0:
		return txn.Effect{Value: o.Arg}, nil
	case 1:
		return txn.Effect{Delete: true}, nil
	}
	return txn.Effect{Keep: true}, nil
}

func (history) Post(_ context.Context, events []abi.Record, _ *txnop.Plan, res *txn.Result, out *plugin.Output) error {
	for i := range events {
		if !strings.HasPrefix(string(events[i].Value), "win") {
			continue
		}
		var vs []string
		for _, v := range res.Observed(i, 0).Windows[0] {
			if v.Value.Found {
				vs = append(vs, fmt.Sprintf("%s@%d", v.Value.Bytes, v.Back))
			} else {
				vs = append(vs, fmt.Sprintf("-@%d", v.Back))
			}
		}
		out.Records = append(out.Records, abi.Record{Origin: uint32(i), Key: events[i].Key, Value: []byte(strings.Join(vs, " ")), Time: events[i].Time})
	}
	return nil
}

func (history) Close(context.Context) error { return nil }

func historyOperator(t tb, window uint32) Operator {
	t.Helper()
	op, err := txnop.New(txnop.Config{Name: "hist", Tables: []string{"values", "reads"}, Strategy: txn.Strategy{Kind: txn.Serial},
		Workers: 1, Logic: history{}, ReadWindow: window, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	return Operator{Name: "hist", Kind: plugin.KindTransactional, Txn: &Txn{Operator: op, Events: 5}}
}

// TestWindowedReadsAcrossACrash runs random events with windowed reads
// through a job that dies at a random write of its sink (a commit
// interval leaving batches uncommitted, or none) and through a second one
// on the same state: every output id holds what an uninterrupted run
// writes under it, each written the same every time, so the windows read
// after the restart reach back into the events before it. The versions
// they read are committed with the operator's tables.
func TestWindowedReadsAcrossACrash(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		n := rapid.IntRange(1, 80).Draw(rt, "events")
		values := make([]string, n)
		for i := range values {
			k := rapid.SampledFrom([]string{"a", "b", "c"}).Draw(rt, "key")
			switch rapid.IntRange(0, 5).Draw(rt, "verb") {
			case 0, 1, 2:
				values[i] = fmt.Sprintf("set %s %d", k, i)
			case 3:
				values[i] = "del " + k
			default:
				values[i] = "win " + k
			}
		}
		batch := rapid.SampledFrom([]int{1, 7, 100}).Draw(rt, "batch")
		interval := rapid.SampledFrom([]time.Duration{0, time.Hour}).Draw(rt, "commit interval")
		crashAt := rapid.IntRange(1, 20).Draw(rt, "crash at write")
		run := func(dir string, sink connectors.Sink) error {
			store := openStore(rt, dir)
			defer store.Close()
			job, err := New(context.Background(), Config{
				Name: "p", Sources: []Input{{Name: "in", Source: &sliceSource{recs: bankRecords(values)}}},
				Operators: []Operator{historyOperator(rt, histWindow)},
				Sinks:     []Output{{Name: "out", Sink: sink}}, DeadLetter: &memSink{}, Store: store,
				BatchSize: batch, Linger: time.Millisecond, CommitInterval: interval,
			})
			if err != nil {
				rt.Fatal(err)
			}
			defer job.Close(context.Background())
			return job.Run(context.Background())
		}
		whole := &memSink{}
		if err := run(t.TempDir(), whole); err != nil {
			rt.Fatal(err)
		}
		want := outputsByID(rt, whole)

		dir := t.TempDir()
		first, second := &crashSink{failAt: crashAt}, &memSink{}
		if err := run(dir, first); err != nil && !errors.Is(err, errCrash) {
			rt.Fatal(err)
		}
		if err := run(dir, second); err != nil {
			rt.Fatal(err)
		}
		got := outputsByID(rt, &first.memSink, second)
		if len(got) != len(want) {
			rt.Fatalf("%d outputs after the crash, an uninterrupted run writes %d", len(got), len(want))
		}
		for id, o := range want {
			if g := got[id]; string(g.Record.Value) != string(o.Record.Value) {
				rt.Fatalf("output %s: %q after the crash, %q uninterrupted", id, g.Record.Value, o.Record.Value)
			}
		}
	})
}

// A restart with a smaller read window keeps the versions that window
// needs and deletes the others from the state; one without windowed reads
// empties the operator's history table.
func TestWindowedReadsHistoryTable(t *testing.T) {
	var values []string
	for i := range 40 {
		values = append(values, fmt.Sprintf("set k%d %d", i%3, i))
	}
	dir := t.TempDir()
	rows := func(window uint32, upTo int) int {
		t.Helper()
		store := openStore(t, dir)
		defer store.Close()
		r := newRun(t, store, &sliceSource{recs: bankRecords(values[:upTo])}, 4, historyOperator(t, window))
		if err := r.job.Run(context.Background()); err != nil {
			t.Fatal(err)
		}
		n := 0
		if slices.Contains(store.Tables(), HistoryTable("hist")) {
			if err := store.Scan(HistoryTable("hist"), func(k, _ []byte) error { n++; return nil }); err != nil {
				t.Fatal(err)
			}
		}
		return n
	}
	if got := rows(histWindow, 30); got != histWindow+1 {
		t.Errorf("after 30 events with a window of %d: %d rows, want %d versions and the next event", histWindow, got, histWindow+1)
	}
	if got := rows(4, 32); got != 4+1 {
		t.Errorf("a window of 4 after a restart: %d rows, want 5", got)
	}
	if got := rows(0, 40); got != 0 {
		t.Errorf("no windowed reads after a restart: %d rows, want none", got)
	}
}
