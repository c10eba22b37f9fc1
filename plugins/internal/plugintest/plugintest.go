package plugintest

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"sync"
	"testing"

	"github.com/sluicehq/sluice/host/plugin"
	"github.com/sluicehq/sluice/host/plugin/hosttest"
	"github.com/sluicehq/sluice/sdk/go/sluice"
	"github.com/sluicehq/sluice/sdk/go/sluice/sluicetest"
)

// Module builds the plugin in the test's working directory (the plugin's
// package directory) with wasmbuild.Go, as `sluice plugin build` does, and
// loads it in the host as an operator of kind. The build happens once per
// test binary, which tests one plugin of one kind; the module is closed
// when the test binary's tests end (see Main). It skips the test in -short
// mode.
func Module(t testing.TB, kind plugin.Kind) *hosttest.WasmModule {
	t.Helper()
	if testing.Short() {
		t.Skip("builds the plugin to WebAssembly; skipped in -short mode")
	}
	built.once.Do(func() {
		wasm, err := pluginWasm()
		if err != nil {
			built.err = err
			return
		}
		built.size = len(wasm)
		built.mod, built.err = hosttest.LoadWasm(context.Background(), "plugin", wasm, kind)
	})
	if built.err != nil {
		t.Fatalf("building the plugin: %v", built.err)
	}
	if k := built.mod.Kind(); k != kind {
		t.Fatalf("the plugin was loaded as a %s operator; a test binary loads it as one kind only, not also %s", k, kind)
	}
	return built.mod
}

// built is the test binary's one compiled plugin: a test binary tests one
// plugin package.
var built struct {
	once sync.Once
	mod  *hosttest.WasmModule
	size int
	err  error
}

// Main runs the tests and releases the compiled module (Module's, and
// TxnWasm's loads); call it from TestMain.
func Main(m *testing.M) int {
	code := m.Run()
	if built.mod != nil {
		_ = built.mod.Close(context.Background())
	}
	closeTxn()
	return code
}

// Case is one harness set-up and the batches to run through it.
type Case struct {
	Name    string
	Config  []byte // nil: none
	Tables  []string
	Batches [][]sluice.Record
}

// Result is everything a harness observed for one batch. Rejects of
// records whose processing failed keep, of their error, only whether it
// was a trap or a failed batch: the native and the WebAssembly harness
// word those differently.
type Result struct {
	Outputs []sluicetest.Output
	Rejects []sluicetest.Reject
	Err     string
}

// Harness is what Run needs of a harness: the SDK's native
// *sluicetest.Harness and the host's *hosttest.Harness both have it.
type Harness interface {
	Configure(config []byte) error
	Process(records ...sluice.Record) ([]sluicetest.Output, []sluicetest.Reject, error)
	State(table, key string) ([]byte, bool)
}

// Run runs c through h, after declaring c's tables with declare, and
// returns one Result per batch, plus the configuration error, if any.
func Run(h Harness, declare func(tables ...string), c Case) ([]Result, error) {
	declare(c.Tables...)
	if c.Config != nil {
		if err := h.Configure(c.Config); err != nil {
			return nil, err
		}
	}
	var res []Result
	for _, b := range c.Batches {
		outs, rejects, err := h.Process(b...)
		for i, rj := range rejects {
			if rj.Err != nil {
				rejects[i] = sluicetest.Reject{Origin: rj.Origin, Message: failure(rj.Err)}
			}
		}
		r := Result{Outputs: outs, Rejects: rejects}
		if err != nil {
			r.Err = err.Error()
		}
		res = append(res, r)
	}
	return res, nil
}

// failure names the class of a failed record's error.
func failure(err error) string {
	switch {
	case errors.Is(err, sluicetest.ErrTrap):
		return "(trapped)"
	case errors.Is(err, sluicetest.ErrBatchFailed):
		return "(failed its call)"
	}
	return "(failed: " + err.Error() + ")"
}

// SameInWasm runs each case natively and in the compiled module and fails
// t where the two differ in outputs, rejects, errors or final state of the
// given keys. The module is loaded as a keyed operator when a case declares
// state tables, as a flatmap operator (the host's most general stateless
// kind) otherwise, as the native harness decides from the tables.
func SameInWasm(t *testing.T, cases []Case, stateKeys ...string) {
	t.Helper()
	kind := plugin.KindFlatMap
	for _, c := range cases {
		if len(c.Tables) > 0 {
			kind = plugin.KindKeyed
		}
	}
	mod := Module(t, kind)
	for _, c := range cases {
		t.Run(c.Name, func(t *testing.T) {
			native, wasm := sluicetest.New(), mod.New()
			defer wasm.Close()
			nres, nerr := Run(native, func(ts ...string) { native.Declare(ts...) }, c)
			wres, werr := Run(wasm, func(ts ...string) { wasm.Declare(ts...) }, c)
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
