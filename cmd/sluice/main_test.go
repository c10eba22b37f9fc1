package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"go.uber.org/goleak"

	"github.com/sluicehq/sluice/cmd/sluice/internal/sluicetest"
	wasm "github.com/sluicehq/sluice/runtime"
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
	plugins := map[string]string{}
	for _, p := range []string{"wordsplit", "wordcount", "upper", "winmedian", "joiner"} {
		plugins[p] = filepath.Join("plugins", p)
	}
	// The crash tests publish their input asynchronously: nats.go's
	// publisher can leave a goroutine waiting for ever when its
	// connection closes (a race in the library, as of nats.go v1.55.0,
	// that host/checkpoint's tests ignore too).
	os.Exit(sluicetest.Main(m, plugins, func(s *sluicetest.Sluice) { sluiceBin, pluginsDir = s.Bin, s.Plugins },
		goleak.IgnoreTopFunction("github.com/nats-io/nats.go/jetstream.(*jetStream).resetPendingAcksOnReconnect")))
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
