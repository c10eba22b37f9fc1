//go:build !wasip1

package hosttest_test

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.uber.org/goleak"

	"github.com/sluicehq/sluice/host/plugin"
	"github.com/sluicehq/sluice/host/plugin/hosttest"
	"github.com/sluicehq/sluice/sdk/go/sluice/sluicetest"
	"github.com/sluicehq/sluice/sdk/go/wasmbuild"
)

func TestLoadWasmRefusesBadModules(t *testing.T) {
	ctx := context.Background()
	var le *plugin.LoadError
	_, err := hosttest.LoadWasm(ctx, "garbage", []byte("not wasm"), plugin.KindMap)
	if !errors.As(err, &le) || le.Plugin != "garbage" || !strings.Contains(err.Error(), "not a WebAssembly module") {
		t.Errorf("garbage: %v", err)
	}
	empty := []byte("\x00asm\x01\x00\x00\x00") // a valid module with no exports
	_, err = hosttest.LoadWasm(ctx, "empty", empty, plugin.KindKeyed)
	if !errors.As(err, &le) || !strings.Contains(err.Error(), "missing export sluice_abi_version") {
		t.Errorf("empty module: %v", err)
	}
	if _, err := hosttest.LoadWasm(ctx, "empty", empty, plugin.Kind("reduce")); !errors.Is(err, plugin.ErrUnknownKind) {
		t.Errorf("unknown kind: %v", err)
	}
}

// build compiles testdata/dir to WebAssembly and returns the module's bytes.
func build(t *testing.T, dir string) []byte {
	t.Helper()
	if testing.Short() {
		t.Skip("builds a WebAssembly module; skipped in -short mode")
	}
	out := filepath.Join(t.TempDir(), dir+".wasm")
	if err := wasmbuild.Go(context.Background(), filepath.Join("testdata", dir), out); err != nil {
		t.Fatal(err)
	}
	wasm, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	return wasm
}

// TestWasmVersionMismatch: the host refuses a module built for another ABI
// version when it loads it, before any record.
func TestWasmVersionMismatch(t *testing.T) {
	wasm := build(t, "badversion")
	_, err := hosttest.LoadWasm(context.Background(), "badversion", wasm, plugin.KindMap)
	var le *plugin.LoadError
	if !errors.As(err, &le) || !strings.Contains(err.Error(), "module declares ABI version 2, this host speaks version 1") {
		t.Errorf("LoadWasm of a version-2 module = %v", err)
	}
}

// TestWasmStatusError: a guest that fails its batch with a status has each
// record run again on its own, and each that fails alone is rejected with
// the guest's reason.
func TestWasmStatusError(t *testing.T) {
	ctx := context.Background()
	m, err := hosttest.LoadWasm(ctx, "failguest", build(t, "failguest"), plugin.KindFlatMap)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close(ctx)
	if m.Kind() != plugin.KindFlatMap {
		t.Errorf("Kind() = %s", m.Kind())
	}
	h := m.New()
	outs, rejects, err := h.Process(sluicetest.KV("a", "1"), sluicetest.KV("b", "2"))
	if err != nil || len(outs) != 0 {
		t.Fatalf("Process = %+v, %v", outs, err)
	}
	if len(rejects) != 2 {
		t.Fatalf("rejects %+v, want both records", rejects)
	}
	for i, r := range rejects {
		var re *plugin.RecordError
		var se *plugin.StatusError
		if r.Origin != i || !errors.Is(r.Err, sluicetest.ErrBatchFailed) || !errors.As(r.Err, &re) || re.Index != i ||
			!errors.As(r.Err, &se) || se.Reason != "cannot process anything" || r.Message != r.Err.Error() {
			t.Errorf("reject %d = %+v", i, r)
		}
	}
	// Three calls, each logged the reason; the host's own note about
	// re-running the batch is not the operator's.
	if logs := h.Logs(); len(logs) != 3 || logs[0].Message != "cannot process anything" {
		t.Errorf("logs = %+v", logs)
	}
	func() {
		defer func() {
			if recover() == nil {
				t.Error("Declare on a flatmap module did not panic")
			}
		}()
		m.New().Declare("t")
	}()

	h.Close()
	if err := m.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if _, _, err := h.Process(sluicetest.KV("a", "1")); err == nil || errors.Is(err, sluicetest.ErrTrap) {
		t.Errorf("Process after the module's Close = %v, want a plain error", err)
	}
}

// TestMain checks that no harness, native or WebAssembly, leaves a
// goroutine behind.
//
// Under the race detector, where the WebAssembly property tests run several
// times slower, fewer rapid checks keep the run short unless -rapid.checks
// says otherwise.
func TestMain(m *testing.M) {
	flag.Parse()
	if raceEnabled && !flagSet("rapid.checks") {
		flag.Set("rapid.checks", "20")
	}
	code := m.Run()
	closeGuests()
	if err := closeTxnGuests(); err != nil {
		fmt.Fprintln(os.Stderr, "closing the transactional guests:", err)
		code = 1
	}
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintln(os.Stderr, "goleak:", err)
			code = 1
		}
	}
	os.Exit(code)
}

// flagSet reports whether the flag name was given on the command line.
func flagSet(name string) bool {
	set := false
	flag.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}
