package txn_test

import (
	"bytes"
	"context"
	"runtime/pprof"
	"strings"
	"sync"
	"testing"

	"github.com/sluicehq/sluice/txn"
)

// TestWorkersTakeTheCallersLabels checks that the scheduler's workers run
// a batch under the profiler labels of the context given to Run, so that
// a CPU profile counts their time under the caller's labels: an operation
// function, run on a worker, finds the worker's goroutine labelled.
func TestWorkersTakeTheCallersLabels(t *testing.T) {
	s, err := txn.New(txn.Config{Workers: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var (
		mu      sync.Mutex
		records []string // the goroutine profile's records of the workers
	)
	apply := func(_, _ int, _ *txn.Op, _ txn.Access) (txn.Effect, error) {
		var buf bytes.Buffer
		if err := pprof.Lookup("goroutine").WriteTo(&buf, 1); err != nil {
			return txn.Effect{}, err
		}
		mu.Lock()
		defer mu.Unlock()
		for _, r := range strings.Split(buf.String(), "\n\n") {
			if strings.Contains(r, "txn.(*Scheduler).worker") {
				records = append(records, r)
			}
		}
		return txn.Effect{Value: []byte("1")}, nil
	}
	batch := []txn.Txn{{Ops: []txn.Op{{Write: txn.Key{Key: "a"}}}}, {Ops: []txn.Op{{Write: txn.Key{Key: "b"}}}}}
	st, _ := txn.ParseStrategy("ns-op-eager")
	pprof.Do(context.Background(), pprof.Labels("caller", "test"), func(ctx context.Context) {
		if _, err := s.Run(ctx, st, batch, txn.MapStore{}, apply); err != nil {
			t.Fatal(err)
		}
	})
	found := false
	for _, r := range records {
		if strings.Contains(r, `"caller":"test"`) && strings.Contains(r, "txn_test.TestWorkersTakeTheCallersLabels") {
			found = true
		}
	}
	if !found {
		t.Fatalf("no worker ran an operation under the caller's labels; the workers' goroutines:\n%s", strings.Join(records, "\n\n"))
	}
}
