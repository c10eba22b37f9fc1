package plugin

import (
	"context"
	"errors"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sluicehq/sluice/abi"
	"github.com/sluicehq/sluice/sdk/go/wasmbuild"
)

//go:generate sh testdata/inputs/build.sh

// Record inputs (ABI.md sections 4 and 9): a module that declares
// abi.FeatureInputs receives each record's input in its flags; any other
// module receives the bytes version 1 has always sent, flags 0.

// inputsDir holds the WAT modules of the record-input tests.
const inputsDir = "testdata/inputs"

// The committed .wasm files are what wat2wasm makes of the .wat files.
func TestInputsModulesUpToDate(t *testing.T) { watUpToDate(t, inputsDir) }

// goInputsGuest is testdata/inputs/goinputs, built on first use.
var goInputsGuest = struct {
	once sync.Once
	wasm []byte
	err  error
}{}

func goInputs(t testing.TB) []byte {
	t.Helper()
	g := &goInputsGuest
	g.once.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		var mods map[string][]byte
		mods, g.err = wasmbuild.GoModules(ctx, map[string]string{"goinputs": filepath.Join(inputsDir, "goinputs")})
		g.wasm = mods["goinputs"]
	})
	if g.err != nil {
		t.Fatal(g.err)
	}
	return g.wasm
}

// loadInputs loads wasm as a map operator.
func loadInputs(t testing.TB, name string, wasm []byte) *Plugin {
	t.Helper()
	ctx := context.Background()
	p, err := Load(ctx, newEngine(t, engineConfig()), name, wasm, KindMap)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close(ctx) })
	return p
}

// twoInputs is a batch of a two-input operator: records on inputs 1, 0, 1
// and 0, with values "a" to "d".
func twoInputs() []abi.Record {
	in := records("a", "b", "c", "d")
	for k := range in {
		in[k].Input = uint16(1 - k%2)
	}
	return in
}

// processValues runs in through a fresh instance of p and returns the
// outputs' values, failing t on a reject or an output with an input.
func processValues(t *testing.T, p *Plugin, in []abi.Record) []string {
	t.Helper()
	var out Output
	if err := newInstance(t, p).Process(context.Background(), in, nil, &out); err != nil {
		t.Fatal(err)
	}
	if len(out.Rejects) > 0 {
		t.Fatalf("rejects: %v", out.Rejects[0].Err)
	}
	var values []string
	for _, r := range out.Records {
		if r.Input != 0 {
			t.Errorf("output %q has input %d: an output has none until the host feeds it on", r.Value, r.Input)
		}
		values = append(values, string(r.Value))
	}
	return values
}

// A module built before inputs existed (no sluice_features) loads and runs
// unchanged: it is sent every record with flags 0 whatever its input (the
// WAT module traps on any other flags; the raw Go guest decodes with an
// abi.Decoder that refuses them), and its outputs are accepted as before.
func TestInputsVersion1Module(t *testing.T) {
	t.Run("wat", func(t *testing.T) {
		p := loadInputs(t, "v1.wasm", testdataModule(t, inputsDir, "v1"))
		if p.ReadsInputs() {
			t.Fatal("ReadsInputs is true for a module without sluice_features")
		}
		if got, want := processValues(t, p, twoInputs()), []string{"a", "b", "c", "d"}; !slices.Equal(got, want) {
			t.Fatalf("outputs %q, want the inputs %q", got, want)
		}
	})
	t.Run("go", func(t *testing.T) {
		p := loadInputs(t, "upper.wasm", guest(t, "upper"))
		if p.ReadsInputs() {
			t.Fatal("ReadsInputs is true for a module without sluice_features")
		}
		if got, want := processValues(t, p, twoInputs()), []string{"A", "B", "C", "D"}; !slices.Equal(got, want) {
			t.Fatalf("outputs %q, want %q", got, want)
		}
	})
}

// A guest that declares abi.FeatureInputs reads the input of each record:
// a Go SDK guest and a WAT module. The WAT module emits its input batch as
// it is, flags included: the host accepts an output's input bits from a
// module that declared them, and gives the output no input.
func TestInputsGuestReadsInput(t *testing.T) {
	for _, tc := range []struct {
		name string
		wasm func(testing.TB) []byte
		want []string
	}{
		{"go", goInputs, []string{"1:a", "0:b", "1:c", "0:d"}},
		{"wat", func(t testing.TB) []byte { return testdataModule(t, inputsDir, "inputs") }, []string{"1", "0", "1", "0"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := loadInputs(t, tc.name+".wasm", tc.wasm(t))
			if !p.ReadsInputs() {
				t.Fatal("ReadsInputs is false for a module that declares abi.FeatureInputs")
			}
			if got := processValues(t, p, twoInputs()); !slices.Equal(got, tc.want) {
				t.Fatalf("outputs %q, want %q", got, tc.want)
			}
			// One record at a time, as after a failed batch: the same.
			var got []string
			for _, r := range twoInputs() {
				got = append(got, processValues(t, p, []abi.Record{r})...)
			}
			if !slices.Equal(got, tc.want) {
				t.Fatalf("one at a time: outputs %q, want %q", got, tc.want)
			}
		})
	}
}

// A module that emits input bits without having declared them is refused
// as before: for it, any non-zero flag is malformed.
func TestInputsUndeclaredOutputFlags(t *testing.T) {
	f := newFixture(t, fixtureConfig{})
	if f.p.ReadsInputs() {
		t.Fatal("the ops guest reads inputs")
	}
	var out Output
	in := records("emit-flags")
	if err := f.inst.Process(context.Background(), in, nil, &out); err != nil {
		t.Fatal(err)
	}
	if len(out.Rejects) != 1 || !errors.Is(out.Rejects[0].Err, abi.ErrMalformed) || !strings.Contains(out.Rejects[0].Err.Error(), "reserved flags are 0x1, want 0") {
		t.Fatalf("rejects %v, want the output refused for its flags", out.Rejects)
	}
}

// A module whose sluice_features has another signature than () -> i32,
// or traps, is refused at load with a problem naming the export.
func TestInputsFeaturesRefused(t *testing.T) {
	for module, want := range map[string]string{
		"badfeatures":  "export sluice_features has signature (i32) -> i32, want () -> i32",
		"trapfeatures": "calling sluice_features failed",
	} {
		_, err := Load(context.Background(), newEngine(t, engineConfig()), module+".wasm", testdataModule(t, inputsDir, module), KindMap)
		var le *LoadError
		if !errors.As(err, &le) || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: Load: %v, want a *LoadError with %q", module, err, want)
		}
	}
}
