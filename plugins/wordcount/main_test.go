package main

import (
	"fmt"
	"os"
	"testing"

	"github.com/sluicehq/sluice/plugins/internal/plugintest"
	"github.com/sluicehq/sluice/sdk/go/sluice"
	"github.com/sluicehq/sluice/sdk/go/sluice/sluicetest"
)

func TestMain(m *testing.M) { os.Exit(plugintest.Main(m)) }

// TestWordcountSameInWasm checks the plugin (countlib.Counter, whose
// counts countlib's tests check) built for WebAssembly against the same
// Go natively.
func TestWordcountSameInWasm(t *testing.T) {
	var batch []sluice.Record
	for i := range 3000 {
		k := fmt.Sprintf("w%d", i%37)
		batch = append(batch, sluicetest.KV(k, k))
	}
	plugintest.SameInWasm(t, []plugintest.Case{
		{Name: "counts", Tables: []string{"counts"}, Batches: [][]sluice.Record{batch, batch[:10], {sluicetest.KV("", "")}}},
	}, "w0", "w36", "")
}
