package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	wasm "github.com/sluicehq/sluice/runtime"
	"github.com/sluicehq/sluice/sdk/go/wasmbuild"
)

// Built once in TestMain: the sluice binary and the example plugins.
var (
	sluiceBin  string
	pluginsDir string
)

func TestMain(m *testing.M) {
	if os.Getenv(wasm.ChildCompileEnv) != "" {
		// A compile this test binary started as a child, as sluice does.
		os.Exit(serveCompileChild())
	}
	dir, err := os.MkdirTemp("", "sluice-cmd-test-")
	if err != nil {
		panic(err)
	}
	code := func() int {
		defer os.RemoveAll(dir)
		sluiceBin = filepath.Join(dir, "sluice")
		args := []string{"build", "-o", sluiceBin}
		if wasm.CheckEngine(wasm.EngineWasmtime) == nil {
			args = append(args, "-tags", "wasmtime") // the binary holds what the tests do
		}
		build := exec.Command("go", append(args, ".")...)
		if out, err := build.CombinedOutput(); err != nil {
			fmt.Fprintf(os.Stderr, "building sluice: %v\n%s", err, out)
			return 1
		}
		pluginsDir = filepath.Join(dir, "plugins")
		dirs := map[string]string{}
		for _, p := range []string{"wordsplit", "wordcount", "upper"} {
			dirs[p] = filepath.Join("..", "..", "plugins", p)
		}
		// wordcount with its outputs marked, for the cluster's swap tests.
		dirs["wordcountv2"] = filepath.Join("testdata", "wordcountv2")
		mods, err := wasmbuild.GoModules(context.Background(), dirs)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		if err := os.MkdirAll(pluginsDir, 0o755); err != nil {
			panic(err)
		}
		for name, wasm := range mods {
			if err := os.WriteFile(filepath.Join(pluginsDir, name+".wasm"), wasm, 0o644); err != nil {
				panic(err)
			}
		}
		return m.Run()
	}()
	os.Exit(code)
}

// sluice runs the binary to completion and returns its exit code, stdout
// and stderr.
func sluice(t *testing.T, dir string, args ...string) (int, string, string) {
	t.Helper()
	cmd := exec.Command(sluiceBin, args...)
	cmd.Dir = dir
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	code := 0
	if err != nil {
		ee, ok := err.(*exec.ExitError)
		if !ok {
			t.Fatalf("sluice %v: %v", args, err)
		}
		code = ee.ExitCode()
	}
	return code, stdout.String(), stderr.String()
}

// startSluice starts the binary with args in dir, its stderr captured, and
// returns it with a channel that receives its exit. A process still running
// when the test ends is killed.
func startSluice(t *testing.T, dir string, args ...string) (*exec.Cmd, *lockedBuffer, <-chan error) {
	t.Helper()
	cmd := exec.Command(sluiceBin, args...)
	cmd.Dir = dir
	stderr := &lockedBuffer{}
	cmd.Stderr = stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	done := make(chan struct{})
	go func() {
		err := cmd.Wait()
		close(done)
		exited <- err
	}()
	t.Cleanup(func() {
		select {
		case <-done:
		default:
			_ = cmd.Process.Kill()
			<-done
		}
	})
	return cmd, stderr, exited
}
