// Package sluicetest is the test support of the tests that run the sluice
// binary as separate processes, in cmd/sluice and in the packages under
// cmd/sluice/internal/e2e. Main, called from a test binary's TestMain,
// builds the binary and the Go plugins its tests run, once per test
// binary; Spread runs a pipeline as several sluice processes over a
// cluster of embedded NATS servers, and reads what they counted; Nemesis
// hits a Spread's hosts and servers with a random schedule of faults.
//
// # Decisions, and why
//
// The tests that run several hosts took 335 s together on 2 cores, more
// than all of cmd/sluice's other tests (2026-12-03), so they live in
// packages of their own (cmd/sluice/internal/e2e/...), and no package's
// tests come near go test's per-package limit on a busy machine. Package
// main cannot be imported, so those packages run the binary they build,
// never its functions; what they share with cmd/sluice's own tests is
// here, in a package of non-test files, since one package's test files
// cannot be imported by another.
package sluicetest

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"go.uber.org/goleak"

	"github.com/sluicehq/sluice/connectors/natsconn/natstest"
	wasm "github.com/sluicehq/sluice/runtime"
	"github.com/sluicehq/sluice/sdk/build"
	"github.com/sluicehq/sluice/sdk/go/wasmbuild"
)

// Package is the import path of the sluice command.
const Package = "github.com/sluicehq/sluice/cmd/sluice"

// Sluice is a sluice binary and the Go plugins built for a test binary's
// tests.
type Sluice struct {
	// Bin is the sluice binary.
	Bin string
	// Plugins is the directory of the plugins, each as NAME.wasm.
	Plugins string
}

// Plugin returns the path of the plugin built as name.
func (s *Sluice) Plugin(name string) string {
	return filepath.Join(s.Plugins, name+".wasm")
}

// Build builds into dir the sluice binary and the Go plugins: plugins maps
// a plugin's name to the directory of its main package, relative to the
// repository's root (the checkout that holds the working directory). The
// binary holds the wasmtime engine when the test binary does, so that the
// binary runs what the tests do.
func Build(ctx context.Context, dir string, plugins map[string]string) (*Sluice, error) {
	root, err := build.FindRoot(".")
	if err != nil {
		return nil, fmt.Errorf("sluicetest: %w", err)
	}
	s := &Sluice{Bin: filepath.Join(dir, "sluice"), Plugins: filepath.Join(dir, "plugins")}
	args := []string{"build", "-o", s.Bin}
	if wasm.CheckEngine(wasm.EngineWasmtime) == nil {
		args = append(args, "-tags", "wasmtime")
	}
	cmd := exec.CommandContext(ctx, "go", append(args, Package)...)
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("sluicetest: building sluice: %w\n%s", err, out)
	}
	dirs := make(map[string]string, len(plugins))
	for name, d := range plugins {
		dirs[name] = filepath.Join(root, d)
	}
	mods, err := wasmbuild.GoModules(ctx, dirs)
	if err != nil {
		return nil, fmt.Errorf("sluicetest: building the plugins: %w", err)
	}
	if err := os.MkdirAll(s.Plugins, 0o755); err != nil {
		return nil, fmt.Errorf("sluicetest: %w", err)
	}
	for name, code := range mods {
		if err := os.WriteFile(s.Plugin(name), code, 0o644); err != nil {
			return nil, fmt.Errorf("sluicetest: %w", err)
		}
	}
	return s, nil
}

// Main is the body of a TestMain: it builds sluice and plugins (as Build)
// into a temporary directory, gives them to use, runs the tests, checks
// that they left no goroutine running but those leaks ignore, and removes
// the directory. It returns the exit code for os.Exit. In a NATS server
// process that natstest.StartClusterProcesses started from the test
// binary, it serves as that server instead and does not return.
func Main(m *testing.M, plugins map[string]string, use func(*Sluice), leaks ...goleak.Option) int {
	natstest.MainMember()
	dir, err := os.MkdirTemp("", "sluice-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	s, err := Build(context.Background(), dir, plugins)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	use(s)
	code := m.Run()
	if code != 0 {
		return code
	}
	if err := goleak.Find(leaks...); err != nil {
		fmt.Fprintln(os.Stderr, "goleak:", err)
		return 1
	}
	return 0
}
