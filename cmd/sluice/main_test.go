package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/sluicehq/sluice/sdk/go/wasmbuild"
)

// Built once in TestMain: the sluice binary and the example plugins.
var (
	sluiceBin  string
	pluginsDir string
)

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "sluice-cmd-test-")
	if err != nil {
		panic(err)
	}
	code := func() int {
		defer os.RemoveAll(dir)
		sluiceBin = filepath.Join(dir, "sluice")
		build := exec.Command("go", "build", "-o", sluiceBin, ".")
		if out, err := build.CombinedOutput(); err != nil {
			fmt.Fprintf(os.Stderr, "building sluice: %v\n%s", err, out)
			return 1
		}
		pluginsDir = filepath.Join(dir, "plugins")
		for _, p := range []string{"wordsplit", "wordcount", "upper"} {
			if err := wasmbuild.Go(context.Background(), filepath.Join("..", "..", "plugins", p), filepath.Join(pluginsDir, p+".wasm")); err != nil {
				fmt.Fprintln(os.Stderr, err)
				return 1
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
