package runner

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/sluicehq/sluice/sdk/go/wasmbuild"
	"github.com/sluicehq/sluice/txn/apps/ledger/event"
)

const ledgerSwapPipeline = `
name: ledger
http: {addr: "off"}
dead_letter: {path: dead.jsonl}
sources:
  - {name: events, type: generator, mode: txn, app: sl, rate: 5000, knobs: {keys: 200, seed: 7}}
operators:
  - name: ledger
    plugin: ledger.wasm
    kind: transactional
    tables:
      - {name: accounts, init: {generator: {app: sl, keys: 200, seed: 7}}}
      - {name: book_entries, init: {generator: {app: sl, keys: 200, seed: 7}}}
    punctuation: {events: 64, interval: 5ms}
    strategy: ns-op-eager
    workers: 2
sinks:
  - {name: out, type: file, path: out.jsonl}
`

// TestSwapTransactionalOperator swaps the ledger's plugin for a versioned
// copy of itself and back while events stream, through the Host's Swap
// and Rollback (the API's handlers), and checks that money is conserved
// across the swaps: the tables stayed in place.
func TestSwapTransactionalOperator(t *testing.T) {
	if _, err := os.Stat("../../plugins/ledger"); err != nil {
		t.Skip("plugins/ledger is not written yet")
	}
	dir := t.TempDir()
	ctx := context.Background()
	mods, err := wasmbuild.GoModules(ctx, map[string]string{"ledger": "../../plugins/ledger"})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "ledger.wasm"), mods["ledger"], 0o644); err != nil {
		t.Fatal(err)
	}
	v2 := versioned(t, mods["ledger"], "ledger-2")
	writeFile(t, filepath.Join(dir, "p.yaml"), ledgerSwapPipeline)
	data := filepath.Join(dir, "data")
	h := startPipeline(ctx, t, dir, Options{DataDir: data})
	stop := runInBackground(ctx, h)
	waitBatches := func(n uint64) {
		t.Helper()
		deadline := time.Now().Add(30 * time.Second)
		for h.Status().Batches < n {
			if time.Now().After(deadline) {
				t.Fatalf("fewer than %d batches in 30s", n)
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	waitBatches(2)
	res, err := h.Swap(ctx, "ledger", "ledger-2.wasm", v2)
	if err != nil {
		stop()
		t.Fatal(err)
	}
	if res.To.Version != "ledger-2" || h.Status().Operators[0].Version != "ledger-2" {
		t.Errorf("swap result %+v, status version %q", res, h.Status().Operators[0].Version)
	}
	waitBatches(h.Status().Batches + 2)
	if _, err := h.Rollback(ctx, "ledger"); err != nil {
		t.Error(err)
	}
	waitBatches(h.Status().Batches + 2)
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	s := openStore(t, filepath.Join(data, "state"))
	defer s.Close()
	committed := s.Positions()["events"]
	if committed == 0 {
		t.Fatal("nothing committed")
	}
	// Conservation: both tables sum to the same total (each deposit adds
	// to both; transfers move money within one).
	sums := map[string]int64{}
	for _, table := range []string{event.AccountsTable, event.BookEntriesTable} {
		for key, v := range scan(t, s, table) {
			b, err := event.DecodeBalance([]byte(v))
			if err != nil {
				t.Fatalf("%s %q: %v", table, key, err)
			}
			sums[table] += b
		}
	}
	if sums[event.AccountsTable] != sums[event.BookEntriesTable] || sums[event.AccountsTable] < 200*event.InitialBalance {
		t.Errorf("table sums %v after %d events across two swaps", sums, committed)
	}
}
