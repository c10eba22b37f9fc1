//go:build linux

package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestRunFullDisk runs a word count whose state directory is a 1 MiB
// tmpfs, with input of distinct words so that the state outgrows it: sluice
// must exit 1 with an error that names the state directory and the full
// disk, not panic. Run again on the full disk, it must fail the same way
// within seconds rather than retry a flush for ever.
func TestRunFullDisk(t *testing.T) {
	dir := t.TempDir()
	dataDir := filepath.Join(dir, "data")
	stateDir := filepath.Join(dataDir, "state")
	if err := os.MkdirAll(stateDir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mount("tmpfs", stateDir, "tmpfs", 0, "size=1m"); err != nil {
		t.Skipf("needs a tmpfs mount (run as root): %v", err)
	}
	t.Cleanup(func() {
		if err := syscall.Unmount(stateDir, 0); err != nil {
			if err := syscall.Unmount(stateDir, syscall.MNT_DETACH); err != nil {
				t.Errorf("unmount %s: %v", stateDir, err)
			}
		}
	})
	var in strings.Builder
	for i := range 20_000 {
		for j := range 5 {
			fmt.Fprintf(&in, "w%07d ", i*5+j)
		}
		in.WriteString("\n")
	}
	if err := os.WriteFile(filepath.Join(dir, "input.txt"), []byte(in.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	p := writePipeline(t, dir, fileWordCount)
	for _, run := range []string{"first run", "restart on the full disk"} {
		code, errOut := sluiceWithin(t, 2*time.Minute, dir, "run", "-c", p, "--data-dir", dataDir)
		last := errOut[strings.LastIndex(strings.TrimSuffix(errOut, "\n"), "\n")+1:]
		switch {
		case strings.Contains(errOut, "panic") || strings.Contains(errOut, "goroutine "):
			t.Fatalf("%s: sluice panicked:\n%s", run, tailOf(errOut))
		case code != 1:
			t.Fatalf("%s: sluice exited %d, want 1:\n%s", run, code, tailOf(errOut))
		case !strings.HasPrefix(last, "sluice: ") || !strings.Contains(last, "state: data directory "+stateDir+": ") ||
			!strings.Contains(last, "no space left on device"):
			t.Fatalf("%s: last line %q: want the error naming %s and the full disk", run, last, stateDir)
		}
		t.Logf("%s: %s", run, last)
	}
}

// sluiceWithin runs the binary like sluice, but fails the test if it has
// not exited within d.
func sluiceWithin(t *testing.T, d time.Duration, dir string, args ...string) (int, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	cmd := exec.CommandContext(ctx, sluiceBin, args...)
	cmd.Dir = dir
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	err := cmd.Run()
	if ctx.Err() != nil {
		t.Fatalf("sluice %v did not exit within %v; its log ends:\n%s", args, d, tailOf(stderr.String()))
	}
	if ee, ok := err.(*exec.ExitError); ok {
		return ee.ExitCode(), stderr.String()
	} else if err != nil {
		t.Fatal(err)
	}
	return 0, stderr.String()
}

func tailOf(s string) string {
	if len(s) > 4000 {
		return "..." + s[len(s)-4000:]
	}
	return s
}
