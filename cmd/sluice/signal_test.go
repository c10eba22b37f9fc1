package main

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// TestWatchSignals checks that the first signal cancels the command and the
// second one asks for an exit with 128 plus the signal's number, and that
// nothing exits once the command is done.
func TestWatchSignals(t *testing.T) {
	ch := make(chan os.Signal, 2)
	cancelled := make(chan struct{})
	var out bytes.Buffer
	code := make(chan int, 1)
	go func() {
		code <- watchSignals(context.Background(), ch, func() { close(cancelled) }, &out)
	}()
	ch <- syscall.SIGTERM
	<-cancelled
	ch <- syscall.SIGTERM
	if c := <-code; c != 128+int(syscall.SIGTERM) {
		t.Errorf("exit status after two signals: %d, want %d", c, 128+int(syscall.SIGTERM))
	}
	if s := out.String(); !strings.Contains(s, "draining") || !strings.Contains(s, "exiting at once") {
		t.Errorf("messages %q", s)
	}

	watching, unwatch := context.WithCancel(context.Background())
	unwatch()
	if c := watchSignals(watching, make(chan os.Signal), func() { t.Error("cancelled") }, &out); c != 0 {
		t.Errorf("exit status once done: %d", c)
	}
	// A command that finishes draining after the first signal.
	watching, unwatch = context.WithCancel(context.Background())
	ch <- os.Interrupt
	if c := watchSignals(watching, ch, unwatch, &out); c != 0 {
		t.Errorf("exit status of a command that drained after one signal: %d", c)
	}
}

const stuckSinkPipeline = `
name: stuck
sources:
  - name: gen
    type: generator
    mode: bytes
    size: 200000
operators:
  - name: up
    plugin: PLUGINS/upper.wasm
    kind: map
sinks:
  - name: out
    type: file
    path: out.fifo
http:
  addr: "off"
`

// TestSecondSignalExitsWhileASinkIsStuck runs a pipeline whose file sink
// is a FIFO that the test opens but never reads: every record is larger
// than a pipe holds, so the sink's first write never returns. The first
// SIGTERM starts a drain that cannot finish; the second must end the
// process at once, with a non-zero status and a message.
func TestSecondSignalExitsWhileASinkIsStuck(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "out.fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skipf("no FIFO here: %v", err)
	}
	// A reader that never reads, so that the sink's open does not block.
	r, err := os.OpenFile(fifo, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	p := writePipeline(t, dir, stuckSinkPipeline)

	cmd, stderr, exited := startSluice(t, dir, "run", "-c", p)

	// One byte in the pipe: the sink is in its first write, which can
	// never complete, and the signal handler is long installed.
	// Until the sink opens the FIFO, a read finds no writer: EOF.
	deadline := time.Now().Add(time.Minute)
	if err := r.SetReadDeadline(deadline); err != nil {
		t.Fatal(err)
	}
	for {
		n, err := r.Read(make([]byte, 1))
		if n == 1 {
			break
		}
		if !errors.Is(err, io.EOF) || time.Now().After(deadline) {
			t.Fatalf("waiting for the sink's first write: %v; stderr: %s", err, stderr)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	// The second signal only once the first is handled: the system may
	// merge two pending signals into one.
	for !strings.Contains(stderr.String(), "draining") {
		select {
		case err := <-exited:
			t.Fatalf("sluice exited after the first signal (%v) with its sink stuck: %s", err, stderr)
		case <-time.After(10 * time.Millisecond):
		}
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-exited:
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != 128+int(syscall.SIGTERM) {
			t.Errorf("exit after the second signal: %v, want status %d", err, 128+int(syscall.SIGTERM))
		}
		if !strings.Contains(stderr.String(), "exiting at once") {
			t.Errorf("stderr does not say it exits at once: %s", stderr)
		}
	case <-time.After(time.Minute):
		t.Fatalf("sluice still runs a minute after the second signal: %s", stderr)
	}
}

// lockedBuffer is a bytes.Buffer safe for a writer and a reader at once.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}
