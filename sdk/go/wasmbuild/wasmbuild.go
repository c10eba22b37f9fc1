// Package wasmbuild compiles a Go guest operator to a WebAssembly module.
//
// It runs the go command of the machine with GOOS=wasip1 GOARCH=wasm and
// -buildmode=c-shared, which makes a WASI reactor: a module whose
// _initialize export sets up the Go runtime and whose //go:wasmexport
// functions the host calls afterwards. The host side (sluice plugin build,
// tests) uses it; guest code never imports it.
package wasmbuild

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// ErrNoGo is returned when no go command can be found.
var ErrNoGo = errors.New("wasmbuild: the go command was not found on PATH; install Go 1.24 or later from https://go.dev/dl")

// Go compiles the Go main package in dir to the module file out.
// Extra arguments are passed to go build before the package (for example
// "-trimpath"). The build's own output is returned in the error on failure.
func Go(ctx context.Context, dir, out string, extra ...string) error {
	gobin, err := goCommand()
	if err != nil {
		return err
	}
	absOut, err := filepath.Abs(out)
	if err != nil {
		return fmt.Errorf("wasmbuild: output path %q: %w", out, err)
	}
	if err := os.MkdirAll(filepath.Dir(absOut), 0o755); err != nil {
		return fmt.Errorf("wasmbuild: %w", err)
	}
	args := append([]string{"build", "-buildmode=c-shared", "-o", absOut}, extra...)
	args = append(args, ".")
	cmd := exec.CommandContext(ctx, gobin, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOOS=wasip1", "GOARCH=wasm", "CGO_ENABLED=0")
	var outBuf bytes.Buffer
	cmd.Stdout, cmd.Stderr = &outBuf, &outBuf
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("wasmbuild: go build in %s failed: %w\n%s", dir, err, strings.TrimSpace(outBuf.String()))
	}
	return nil
}

// goCommand finds the go command: the one of the running toolchain's GOROOT
// first, then PATH.
func goCommand() (string, error) {
	if root := os.Getenv("GOROOT"); root != "" {
		p := filepath.Join(root, "bin", "go")
		if _, err := os.Stat(p); err == nil {
			return p, nil
		}
	}
	p, err := exec.LookPath("go")
	if err != nil {
		return "", ErrNoGo
	}
	return p, nil
}

// GoModules compiles several Go guests at once and returns each module's
// bytes under the name it was given: dirs maps a name to the directory of
// its main package. At most two builds run at a time (the go command is
// itself parallel); every failure is reported, joined.
func GoModules(ctx context.Context, dirs map[string]string) (map[string][]byte, error) {
	tmp, err := os.MkdirTemp("", "sluice-wasmbuild-")
	if err != nil {
		return nil, fmt.Errorf("wasmbuild: %w", err)
	}
	defer os.RemoveAll(tmp)
	type result struct {
		name string
		wasm []byte
		err  error
	}
	results := make(chan result, len(dirs))
	sem := make(chan struct{}, 2)
	for name, dir := range dirs {
		go func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			out := filepath.Join(tmp, name+".wasm")
			r := result{name: name, err: Go(ctx, dir, out)}
			if r.err == nil {
				r.wasm, r.err = os.ReadFile(out)
			}
			results <- r
		}()
	}
	mods := make(map[string][]byte, len(dirs))
	var errs []error
	for range dirs {
		r := <-results
		if r.err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", r.name, r.err))
			continue
		}
		mods[r.name] = r.wasm
	}
	return mods, errors.Join(errs...)
}
