package build

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// The SDKs' own native tests, run here so that go test ./... (and CI) runs
// them, with the commands their READMEs give. The SDKs' Wasm behaviour is
// plugins/conformance's.

// repoRoot returns the Sluice checkout the test runs in.
func repoRoot(t *testing.T) string {
	t.Helper()
	root, err := FindRoot(".")
	if err != nil {
		t.Fatal(err)
	}
	return root
}

// TestCSDKNativeTests compiles sdk/c/sluice.c natively with its tests
// (sdk/c/test/sluice_test.c) under clang's address and undefined-behaviour
// sanitizers and runs them: its exports called as the host calls them,
// against a fake host.
func TestCSDKNativeTests(t *testing.T) {
	if testing.Short() {
		t.Skip("compiles the C SDK natively; skipped in -short mode")
	}
	requireTool(t, "clang")
	sdk := filepath.Join(repoRoot(t), "sdk", "c")
	bin := filepath.Join(t.TempDir(), "sluice_c_test")
	build := exec.Command("clang", "-std=c11", "-O1", "-g", "-Wall", "-Wextra", "-Werror", "-fsanitize=address,undefined",
		"-DSLUICE_NATIVE_TEST", "-I", sdk, "-o", bin, filepath.Join(sdk, "test", "sluice_test.c"), filepath.Join(sdk, "sluice.c"))
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("%s: %v\n%s", strings.Join(build.Args, " "), err, out)
	}
	out, err := exec.Command(bin).CombinedOutput()
	if err != nil || !strings.Contains(string(out), "ok: sluice.c native tests passed") {
		t.Fatalf("sdk/c's native tests: %v\n%s", err, out)
	}
}

// TestRustSDKCargoTests runs the Rust SDK's unit and documentation tests
// with Debian's toolchain, offline, as sdk/rust/README.md gives them.
func TestRustSDKCargoTests(t *testing.T) {
	if testing.Short() {
		t.Skip("compiles the Rust SDK; skipped in -short mode")
	}
	cargo, ok1 := lookPath("SLUICE_CARGO", "cargo", "/usr/bin/cargo")
	rustc, ok2 := lookPath("SLUICE_RUSTC", "rustc", "/usr/bin/rustc")
	rustdoc, ok3 := lookPath("SLUICE_RUSTDOC", "rustdoc", "/usr/bin/rustdoc")
	if !ok1 || !ok2 || !ok3 {
		skipOrFail(t, "cargo, rustc or rustdoc is not installed (scripts/install-toolchains.sh installs them)")
	}
	cmd := exec.Command(cargo, "test", "--offline")
	cmd.Dir = filepath.Join(repoRoot(t), "sdk", "rust")
	cmd.Env = append(cmd.Environ(), "RUSTC="+rustc, "RUSTDOC="+rustdoc, "CARGO_TARGET_DIR="+t.TempDir())
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "test result: ok") {
		t.Fatalf("cargo test in sdk/rust: %v\n%s", err, out)
	}
	if strings.Contains(string(out), "test result: FAILED") {
		t.Fatalf("cargo test in sdk/rust failed:\n%s", out)
	}
}
