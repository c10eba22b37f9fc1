package hosttest_test

import (
	"context"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/sluicehq/sluice/abi"
	"github.com/sluicehq/sluice/host/plugin"
	"github.com/sluicehq/sluice/host/plugin/hosttest"
	"github.com/sluicehq/sluice/host/plugin/hosttest/internal/windowop"
	"github.com/sluicehq/sluice/host/txnop"
	"github.com/sluicehq/sluice/sdk/go/wasmbuild"
	"github.com/sluicehq/sluice/txn"
)

// windowGuest builds testdata/windowguest once per test binary.
var windowGuest = sync.OnceValues(func() ([]byte, error) {
	dir, err := os.MkdirTemp("", "windowguest")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	out := filepath.Join(dir, "windowguest.wasm")
	if err := wasmbuild.Go(context.Background(), filepath.Join("testdata", "windowguest"), out); err != nil {
		return nil, err
	}
	return os.ReadFile(out)
})

// TestWasmWindowsMatchSerial: the windows a WebAssembly guest's windowed
// reads see (written to state by package windowop) are those the same
// source sees natively under the serial executor, batch after batch, under
// several strategies: the request's encoding, the SDK's decoding and the
// operator's History across batches agree with the oracle.
func TestWasmWindowsMatchSerial(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a WebAssembly module; skipped in -short mode")
	}
	ctx := context.Background()
	wasm, err := windowGuest()
	if err != nil {
		t.Fatal(err)
	}
	tables := []string{"t"}
	r := rand.New(rand.NewPCG(3, 9))
	var batches [][]abi.Record
	for b := range 4 {
		var batch []abi.Record
		for i := range 24 {
			flag := byte(0)
			if r.IntN(3) == 0 {
				flag = 1
			}
			batch = append(batch, abi.Record{Time: int64(b*100 + i), Value: []byte{byte('0' + r.IntN(4)), byte('0' + r.IntN(4)), flag}})
		}
		batches = append(batches, batch)
	}
	run := func(strategy string, logic txnop.Logic) [][]string {
		t.Helper()
		st, err := txn.ParseStrategy(strategy)
		if err != nil {
			t.Fatal(err)
		}
		op, err := txnop.New(txnop.Config{Name: "windows", Tables: tables, Strategy: st, Workers: 2, Logic: logic, ReadWindow: windowop.Window})
		if err != nil {
			t.Fatal(err)
		}
		defer op.Close(ctx)
		store := txn.MapStore{}
		var changes [][]string
		for b, batch := range batches {
			var out plugin.Output
			res, err := op.Process(ctx, batch, store, &out)
			if err != nil {
				t.Fatalf("%s, batch %d: %v", strategy, b, err)
			}
			var cs []string
			for _, c := range res.Changes {
				cs = append(cs, fmt.Sprintf("%s=%x", c.Key.Key, c.Value))
				store[c.Key] = c.Value
			}
			changes = append(changes, cs)
		}
		return changes
	}
	want := run("serial", hosttest.TxnLogic(windowop.Op(), tables))
	// The oracle's windows reach back across batches: some window of a
	// batch after the first holds a version.
	seen := false
	for _, cs := range want[1:] {
		for _, c := range cs {
			var k string
			var v []byte
			if _, err := fmt.Sscanf(c, "%1s", &k); err == nil && k == "w" {
				fmt.Sscanf(c[3:], "%x", &v)
				seen = seen || len(v) >= 4 && binary.LittleEndian.Uint32(v) > 0
			}
		}
	}
	if !seen {
		t.Fatal("no window after the first batch holds a version: the test tests nothing")
	}
	for _, s := range []string{"serial", "ns-op-lazy", "bfs-chain-eager", "tstream"} {
		l, err := hosttest.LoadTxnWasm(ctx, "windowguest", wasm, 2, tables...)
		if err != nil {
			t.Fatal(err)
		}
		got := run(s, l)
		for b := range want {
			if fmt.Sprint(got[b]) != fmt.Sprint(want[b]) {
				t.Fatalf("%s in WebAssembly, batch %d: changes\n%v\nthe native serial run's\n%v", s, b, got[b], want[b])
			}
		}
	}
}
