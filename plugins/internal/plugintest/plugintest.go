package plugintest

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"sync"
	"testing"

	"github.com/sluicehq/sluice/sdk/go/sluice"
	"github.com/sluicehq/sluice/sdk/go/sluice/sluicetest"
	"github.com/sluicehq/sluice/sdk/go/wasmbuild"
)

// Module builds the plugin in the test's working directory (the plugin's
// package directory) with wasmbuild.Go, as `sluice plugin build` does, and
// loads it. The build happens once per test binary; the module is closed
// when the test binary's tests end (see Main). It skips the test in -short
// mode.
func Module(t testing.TB) *sluicetest.WasmModule {
	t.Helper()
	if testing.Short() {
		t.Skip("builds the plugin to WebAssembly; skipped in -short mode")
	}
	built.once.Do(func() {
		ctx := context.Background()
		dir, err := os.MkdirTemp("", "sluice-plugin-*")
		if err != nil {
			built.err = err
			return
		}
		defer os.RemoveAll(dir)
		out := filepath.Join(dir, "plugin.wasm")
		if built.err = wasmbuild.Go(ctx, ".", out); built.err != nil {
			return
		}
		wasm, err := os.ReadFile(out)
		if err != nil {
			built.err = err
			return
		}
		built.size = len(wasm)
		built.mod, built.err = sluicetest.LoadWasm(ctx, "plugin", wasm)
	})
	if built.err != nil {
		t.Fatalf("building the plugin: %v", built.err)
	}
	return built.mod
}

// built is the test binary's one compiled plugin: a test binary tests one
// plugin package.
var built struct {
	once sync.Once
	mod  *sluicetest.WasmModule
	size int
	err  error
}

// Main runs the tests and releases the compiled module; call it from
// TestMain.
func Main(m *testing.M) int {
	code := m.Run()
	if built.mod != nil {
		_ = built.mod.Close(context.Background())
	}
	return code
}

// Case is one harness set-up and the batches to run through it.
type Case struct {
	Name    string
	Config  []byte // nil: none
	Tables  []string
	Batches [][]sluice.Record
}

// Result is everything a harness observed for one batch.
type Result struct {
	Outputs []sluicetest.Output
	Rejects []sluicetest.Reject
	Err     string
}

// Run runs c through h and returns one Result per batch, plus the
// configuration error, if any.
func Run(h *sluicetest.Harness, c Case) ([]Result, error) {
	h.Declare(c.Tables...)
	if c.Config != nil {
		if err := h.Configure(c.Config); err != nil {
			return nil, err
		}
	}
	var res []Result
	for _, b := range c.Batches {
		outs, rejects, err := h.Process(b...)
		r := Result{Outputs: outs, Rejects: rejects}
		if err != nil {
			r.Err = err.Error()
		}
		res = append(res, r)
	}
	return res, nil
}

// SameInWasm runs each case natively and in the compiled module and fails
// t where the two differ in outputs, rejects, errors or final state of the
// given keys.
func SameInWasm(t *testing.T, cases []Case, stateKeys ...string) {
	t.Helper()
	mod := Module(t)
	for _, c := range cases {
		t.Run(c.Name, func(t *testing.T) {
			native, wasm := sluicetest.New(), mod.New()
			defer wasm.Close()
			nres, nerr := Run(native, c)
			wres, werr := Run(wasm, c)
			if fmt.Sprint(nerr) != fmt.Sprint(werr) {
				t.Fatalf("configuration: native %v, wasm %v", nerr, werr)
			}
			if !reflect.DeepEqual(nres, wres) {
				t.Fatalf("results differ:\nnative %+v\nwasm   %+v", nres, wres)
			}
			for _, table := range c.Tables {
				for _, k := range stateKeys {
					nv, nok := native.State(table, k)
					wv, wok := wasm.State(table, k)
					if nok != wok || string(nv) != string(wv) {
						t.Errorf("state %s/%s: native %q %v, wasm %q %v", table, k, nv, nok, wv, wok)
					}
				}
			}
		})
	}
}
