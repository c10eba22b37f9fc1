package hosttest_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"

	"pgregory.net/rapid"

	"github.com/sluicehq/sluice/abi"
	"github.com/sluicehq/sluice/host/plugin"
	"github.com/sluicehq/sluice/host/plugin/hosttest"
	"github.com/sluicehq/sluice/host/plugin/hosttest/internal/ledgerop"
	"github.com/sluicehq/sluice/host/txnop"
	"github.com/sluicehq/sluice/sdk/go/wasmbuild"
	"github.com/sluicehq/sluice/txn"
)

// txnGuest builds testdata/txnguest (ledgerop compiled to WebAssembly)
// once per test binary.
var txnGuest = sync.OnceValues(func() ([]byte, error) {
	dir, err := os.MkdirTemp("", "txnguest")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	out := filepath.Join(dir, "txnguest.wasm")
	if err := wasmbuild.Go(context.Background(), filepath.Join("testdata", "txnguest"), out); err != nil {
		return nil, err
	}
	return os.ReadFile(out)
})

// txnGuests holds the guest loaded for each number of workers, shared by
// the tests (loading compiles the module: seconds under the race
// detector); TestMain closes them.
var txnGuests struct {
	sync.Mutex
	m map[int]txnop.Logic
}

// loadTxnGuest returns the guest loaded for workers workers. Operators may
// close it: closing does nothing.
func loadTxnGuest(t testing.TB, workers int) txnop.Logic {
	t.Helper()
	if testing.Short() {
		t.Skip("builds a WebAssembly module; skipped in -short mode")
	}
	txnGuests.Lock()
	defer txnGuests.Unlock()
	if l, ok := txnGuests.m[workers]; ok {
		return shared{l}
	}
	wasm, err := txnGuest()
	if err != nil {
		t.Fatal(err)
	}
	l, err := hosttest.LoadTxnWasm(context.Background(), "txnguest", wasm, workers, ledgerop.Tables()...)
	if err != nil {
		t.Fatal(err)
	}
	if txnGuests.m == nil {
		txnGuests.m = map[int]txnop.Logic{}
	}
	txnGuests.m[workers] = l
	return shared{l}
}

// closeTxnGuests closes the guests loadTxnGuest loaded.
func closeTxnGuests() error {
	txnGuests.Lock()
	defer txnGuests.Unlock()
	var errs []error
	for _, l := range txnGuests.m {
		errs = append(errs, l.Close(context.Background()))
	}
	txnGuests.m = nil
	return errors.Join(errs...)
}

// shared is a Logic that several Operators use in turn: closing it does
// nothing, so that one loaded module serves many runs.
type shared struct{ txnop.Logic }

func (shared) Close(context.Context) error { return nil }

// TestTxnWasmMatchesNative runs random ledger workloads through the
// WebAssembly build of ledgerop and through its native run
// (hosttest.TxnLogic), with every strategy, and requires the same
// outcomes, change sets, outputs, rejects and final state: one source, two
// runs, one result.
func TestTxnWasmMatchesNative(t *testing.T) {
	const workers = 2
	wasm := loadTxnGuest(t, workers)
	strategies := txn.StrategyNames()
	rapid.Check(t, func(rt *rapid.T) {
		l := ledger{accounts: rapid.IntRange(2, 10).Draw(rt, "accounts"), aliases: rapid.IntRange(1, 4).Draw(rt, "aliases"), initial: 50}
		var batches [][]abi.Record
		first := 0
		for b := range rapid.IntRange(1, 2).Draw(rt, "batches") {
			n := rapid.IntRange(0, 30).Draw(rt, "events")
			batches = append(batches, drawEvents(rt, l, first, n, "batch "+strings.Repeat("I", b+1)))
			first += n
		}
		s := rapid.SampledFrom(strategies).Draw(rt, "strategy")
		want := runLedger(t, s, workers, nil, l, batches)
		if got := runLedger(t, s, workers, wasm, l, batches); !reflect.DeepEqual(got, want) {
			rt.Fatalf("%s: WebAssembly differs from native:\n got %+v\nwant %+v", s, got, want)
		}
	})
}

// TestTxnWasmOutputs runs TestTxnLogicOutputs's batch in WebAssembly,
// including the event whose plan resolves its table by name (table_id).
func TestTxnWasmOutputs(t *testing.T) {
	wasm := loadTxnGuest(t, 2)
	l := ledger{accounts: 3, aliases: 2, initial: 10}
	var batch []abi.Record
	for i, r := range append(outputsBatch(), ledgerop.Lookup(7, 0, 1)) {
		batch = append(batch, abi.Record{Origin: uint32(i), Key: r.Key, Value: r.Value, Time: r.Time})
	}
	want := runLedger(t, "ns-chain-eager", 2, nil, l, [][]abi.Record{batch})
	if got := runLedger(t, "ns-chain-eager", 2, wasm, l, [][]abi.Record{batch}); !reflect.DeepEqual(got, want) {
		t.Errorf("WebAssembly:\n%+v\nnative:\n%+v", got, want)
	}
}

// TestTxnWasmBookEntryCondition runs TestTxnLogicBookEntryCondition's case
// in WebAssembly.
func TestTxnWasmBookEntryCondition(t *testing.T) {
	wasm := loadTxnGuest(t, 2)
	l, batch := bookEntryCase()
	for _, s := range []string{"serial", "ns-op-eager", "bfs-chain-lazy"} {
		checkBookEntryCase(t, s, runLedger(t, s, 2, wasm, l, batch))
	}
}

// TestTxnWasmBatchFailures: a Plan error, a function's Fail and an access
// outside the declaration fail the batch in WebAssembly as natively, with
// the SDK's message or the host's refusal.
func TestTxnWasmBatchFailures(t *testing.T) {
	for _, c := range []struct {
		kind byte
		text string
		is   error
	}{
		{'Z', "ledgerop: unknown event kind 'Z'", nil},
		{ledgerop.KindFail, "function 5 failed: failed on purpose", nil},
		// The host refused the access, and says so.
		{ledgerop.KindStray, `get 1/"undeclared"`, txn.ErrUndeclared},
	} {
		tables := ledgerop.Tables()
		op, err := txnop.New(txnop.Config{Name: "ledger", Tables: tables, Strategy: mustStrategy(t, "ns-op-lazy"), Workers: 2,
			Logic: loadTxnGuest(t, 2)})
		if err != nil {
			t.Fatal(err)
		}
		ev := ledgerop.Other(0, c.kind)
		var out plugin.Output
		_, err = op.Process(context.Background(), []abi.Record{{Key: ev.Key, Value: ev.Value}}, txn.MapStore{}, &out)
		if err == nil || !strings.Contains(err.Error(), c.text) || c.is != nil && !errors.Is(err, c.is) {
			t.Errorf("kind %q: error %v, want one containing %s", c.kind, err, c.text)
		}
		if err := op.Close(context.Background()); err != nil {
			t.Error(err)
		}
	}
}
