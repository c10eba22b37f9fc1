package main

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestModulePathsMustBeRegularFiles gives every command that reads a
// module a path that is not a regular file: /dev/zero, which would be
// read forever, a FIFO, which would block, and a directory. Each must
// refuse it at once, naming it.
func TestModulePathsMustBeRegularFiles(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo.wasm")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skipf("no FIFO here: %v", err)
	}
	paths := []string{fifo, dir}
	if _, err := os.Stat("/dev/zero"); err == nil {
		paths = append(paths, "/dev/zero")
	}
	for _, path := range paths {
		pipelineFile := filepath.Join(dir, "p.yaml")
		yaml := strings.Replace(fileWordCount, "PLUGINS/wordsplit.wasm", path, 1)
		if err := os.WriteFile(pipelineFile, []byte(strings.ReplaceAll(yaml, "PLUGINS", pluginsDir)), 0o644); err != nil {
			t.Fatal(err)
		}
		for _, args := range [][]string{
			{"plugin", "check", path},
			{"plugin", "swap", "--operator", "split", "--addr", "127.0.0.1:1", "--token", "t", path},
			{"run", "-c", pipelineFile},
		} {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			cmd := exec.CommandContext(ctx, sluiceBin, args...)
			cmd.Dir = dir
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			err := cmd.Run()
			timedOut := ctx.Err() != nil
			cancel()
			var ee *exec.ExitError
			switch {
			case timedOut:
				t.Errorf("sluice %s: still running after a minute", strings.Join(args, " "))
			case !errors.As(err, &ee) || ee.ExitCode() != 1:
				t.Errorf("sluice %s: %v, want exit status 1", strings.Join(args, " "), err)
			case !strings.Contains(stderr.String(), path+": not a regular file"):
				t.Errorf("sluice %s: stderr does not say that %s is not a regular file: %s", strings.Join(args, " "), path, stderr.String())
			}
		}
	}
}
