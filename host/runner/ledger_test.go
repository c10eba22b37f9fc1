package runner

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"testing"

	"github.com/sluicehq/sluice/host/pipeline"
	"github.com/sluicehq/sluice/sdk/go/wasmbuild"
	"github.com/sluicehq/sluice/txn/apps/ledger/event"
	"github.com/sluicehq/sluice/txn/apps/workload"
)

const ledgerPipeline = `
name: ledger
http: {addr: "off"}
dead_letter: {path: dead-%[1]s.jsonl}
sources:
  - {name: events, type: file, path: events.jsonl}
operators:
  - name: ledger
    plugin: ledger.wasm
    kind: transactional
    tables:
      - {name: accounts, init: {generator: {app: sl, keys: 500, seed: 7}}}
      - {name: book_entries, init: {generator: {app: sl, keys: 500, seed: 7}}}
    punctuation: {events: 256}
    strategy: %[1]s
    workers: 2
sinks:
  - {name: out, type: file, path: out-%[1]s.jsonl}
`

// TestLedgerPipeline runs Streaming Ledger end to end from a pipeline file:
// the plugins/ledger Wasm plugin, tables initialised by the workload
// generator, events from a file. Money is conserved (each table's sum is
// the initial sum plus the deposits), the outputs are the serial
// strategy's, and a second run over the same data directory changes
// nothing.
func TestLedgerPipeline(t *testing.T) {
	if _, err := os.Stat("../../plugins/ledger"); err != nil {
		t.Skip("plugins/ledger is not written yet")
	}
	dir := t.TempDir()
	ctx := context.Background()
	if err := wasmbuild.Go(ctx, "../../plugins/ledger", filepath.Join(dir, "ledger.wasm")); err != nil {
		t.Fatal(err)
	}
	const keys, events = 500, 3000
	k, _ := workload.Defaults(workload.StreamingLedger)
	k.Keys, k.Seed, k.AbortRatio = keys, 7, 0.1
	app, err := workload.New(workload.StreamingLedger, k)
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.Create(filepath.Join(dir, "events.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	w := bufio.NewWriter(f)
	deposits := int64(0)
	for i := range uint64(events) {
		key, value := app.Event(i, nil)
		e, err := event.DecodeEvent(value)
		if err != nil {
			t.Fatal(err)
		}
		if e.Deposit {
			deposits++
		}
		line, _ := json.Marshal(map[string]string{
			"key_base64": base64.StdEncoding.EncodeToString(key), "value_base64": base64.StdEncoding.EncodeToString(value)})
		w.Write(append(line, '\n'))
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	f.Close()
	var serial []byte // the serial strategy's outputs
	for _, strategy := range []string{"serial", "dfs-op-eager", "ns-chain-lazy"} {
		t.Run(strategy, func(t *testing.T) {
			path := filepath.Join(dir, strategy+".yaml")
			writeFile(t, path, fmt.Sprintf(ledgerPipeline, strategy))
			p, err := pipeline.Load(path)
			if err != nil {
				t.Fatal(err)
			}
			opts := Options{DataDir: filepath.Join(dir, strategy), Logger: slog.New(slog.DiscardHandler)}
			for run := range 2 {
				h, err := Start(ctx, p, opts)
				if err != nil {
					t.Fatal(err)
				}
				if err := h.Run(ctx); err != nil {
					t.Fatal(err)
				}
				s := openStore(t, filepath.Join(opts.DataDir, "state"))
				want := keys*event.InitialBalance + deposits*event.DepositAmount
				for _, table := range []string{event.AccountsTable, event.BookEntriesTable} {
					sum := int64(0)
					for key, v := range scan(t, s, table) {
						b, err := event.DecodeBalance([]byte(v))
						if err != nil {
							t.Fatalf("%s %q: %v", table, key, err)
						}
						sum += b
					}
					if sum != want {
						t.Errorf("run %d: %s sum to %d, want %d (initial plus %d deposits)", run, table, sum, want, deposits)
					}
				}
				if got := s.Positions()["events"]; got != events {
					t.Errorf("run %d: committed position %d, want %d", run, got, events)
				}
				s.Close()
			}
			out, err := os.ReadFile(filepath.Join(dir, "out-"+strategy+".jsonl"))
			if err != nil {
				t.Fatal(err)
			}
			if serial == nil {
				serial = out
			} else if !bytes.Equal(out, serial) {
				t.Errorf("outputs differ from the serial strategy's")
			}
		})
	}
}
