//go:build !wasip1

package sluicetest_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.uber.org/goleak"

	"github.com/sluicehq/sluice/sdk/go/sluice/sluicetest"
	"github.com/sluicehq/sluice/sdk/go/wasmbuild"
)

func TestLoadWasmRefusesBadModules(t *testing.T) {
	ctx := context.Background()
	if _, err := sluicetest.LoadWasm(ctx, "garbage", []byte("not wasm")); err == nil || !strings.Contains(err.Error(), `module "garbage" does not compile`) {
		t.Errorf("garbage: %v", err)
	}
	empty := []byte("\x00asm\x01\x00\x00\x00") // a valid module with no exports
	if _, err := sluicetest.LoadWasm(ctx, "empty", empty); err == nil || !strings.Contains(err.Error(), "does not export sluice_abi_version") {
		t.Errorf("empty module: %v", err)
	}
}

func TestWasmVersionMismatch(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a WebAssembly module; skipped in -short mode")
	}
	ctx := context.Background()
	out := filepath.Join(t.TempDir(), "badversion.wasm")
	if err := wasmbuild.Go(ctx, filepath.Join("testdata", "badversion"), out); err != nil {
		t.Fatal(err)
	}
	wasm, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	m, err := sluicetest.LoadWasm(ctx, "badversion", wasm)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close(ctx)
	_, _, err = m.New().Process(sluicetest.KV("k", "v"))
	if !errors.Is(err, sluicetest.ErrVersion) || !strings.Contains(err.Error(), "built for ABI version 2; this harness speaks version 1") {
		t.Errorf("Process on a version-2 module = %v", err)
	}
}

// TestMain checks that no harness, native or WebAssembly, leaves a
// goroutine behind.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
