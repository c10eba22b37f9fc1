package runner

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sluicehq/sluice/connectors/natsconn"
	"github.com/sluicehq/sluice/host/pipeline"
	"github.com/sluicehq/sluice/sdk/go/wasmbuild"
)

// logBuffer collects a logger's text output from any goroutine.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *logBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *logBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func (b *logBuffer) logger() *slog.Logger { return slog.New(slog.NewTextHandler(b, nil)) }

// filePipeline reads in.jsonl, upper-cases it and writes out.jsonl, with
// every default that concerns ports and dead letters: no nats, http or
// dead_letter keys.
const filePipeline = `
name: %s
compile_cache: %s
sources:
  - name: in
    type: file
    path: in.jsonl
operators:
  - name: upper
    plugin: %s
    kind: map
    parallelism: 1
sinks:
  - name: out
    type: file
    path: out.jsonl
`

// startFilePipeline writes the pipeline name into its own directory under
// dir, with input, and starts it with the defaults.
func startFilePipeline(t *testing.T, dir, name, module, input string, log *slog.Logger) (*Host, *pipeline.Pipeline) {
	t.Helper()
	pdir := filepath.Join(dir, name)
	if err := os.MkdirAll(pdir, 0o755); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(pdir, "in.jsonl"), input)
	writeFile(t, filepath.Join(pdir, "p.yaml"), fmt.Sprintf(filePipeline, name, filepath.Join(dir, "cache"), module))
	p, err := pipeline.Load(filepath.Join(pdir, "p.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	h, err := Start(context.Background(), p, Options{Logger: log})
	if err != nil {
		t.Fatalf("pipeline %s: %v", name, err)
	}
	return h, p
}

func upperModule(t *testing.T, dir string) string {
	t.Helper()
	mods, err := wasmbuild.GoModules(context.Background(), map[string]string{"upper": "../../plugins/upper"})
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "upper.wasm")
	if err := os.WriteFile(path, mods["upper"], 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestFilePipelinesRunSideBySide starts two pipelines of files with the
// default settings on one machine at once: neither starts a NATS server
// (nothing in them uses NATS, and dead letters go to a file in the data
// directory), and the second, finding the default HTTP address taken,
// listens on a free port, which it writes to its data directory for the
// CLI. Each says how its plugin was loaded: compiled by the first,
// found in the compile cache by the second.
func TestFilePipelinesRunSideBySide(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	module := upperModule(t, dir)
	input := "{\"value\": \"a\"}\nnot json\n{\"value\": \"b\"}\n"
	var logs [2]logBuffer
	a, pa := startFilePipeline(t, dir, "a", module, input, logs[0].logger())
	defer a.Close(ctx)
	b, pb := startFilePipeline(t, dir, "b", module, input, logs[1].logger())
	defer b.Close(ctx)

	for i, h := range []*Host{a, b} {
		if h.NATS() != nil || h.NATSURL() != "" {
			t.Errorf("pipeline %d connected to NATS (%s) though nothing in it uses NATS", i, h.NATSURL())
		}
	}
	if a.HTTPAddr() == b.HTTPAddr() || a.HTTPAddr() == "" || b.HTTPAddr() == "" {
		t.Fatalf("http api addresses %q and %q, want two", a.HTTPAddr(), b.HTTPAddr())
	}
	for _, tc := range []struct {
		h *Host
		p *pipeline.Pipeline
	}{{a, pa}, {b, pb}} {
		if addr, err := ReadAddr(tc.p.DataDir); err != nil || addr != tc.h.HTTPAddr() {
			t.Errorf("%s holds %q, %v; want %s", filepath.Join(tc.p.DataDir, AddrFile), addr, err, tc.h.HTTPAddr())
		}
	}
	if !strings.Contains(logs[0].String(), `msg="loading plugin"`) || !strings.Contains(logs[0].String(), `msg="plugin compiled"`) {
		t.Errorf("the first pipeline's log does not say it compiles its plugin:\n%s", logs[0].String())
	}
	if !strings.Contains(logs[1].String(), `msg="plugin loaded from the compile cache"`) {
		t.Errorf("the second pipeline's log does not say it found its plugin in the compile cache:\n%s", logs[1].String())
	}

	var wg sync.WaitGroup
	for _, h := range []*Host{a, b} {
		wg.Go(func() {
			if err := h.Run(ctx); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	for _, p := range []*pipeline.Pipeline{pa, pb} {
		out, err := os.ReadFile(filepath.Join(p.Dir, "out.jsonl"))
		if err != nil || strings.Count(string(out), "\n") != 2 {
			t.Errorf("%s: output %q, %v; want 2 records", p.Name, out, err)
		}
		dead := filepath.Join(p.DataDir, pipeline.DefaultDeadLetterFile)
		if b, err := os.ReadFile(dead); err != nil || strings.Count(string(b), "\n") != 1 || !strings.Contains(string(b), "not json") {
			t.Errorf("%s: dead letters %q, %v; want the malformed line", dead, b, err)
		}
		if _, err := os.Stat(filepath.Join(p.DataDir, AddrFile)); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s is still there after the run: %v", AddrFile, err)
		}
	}
	if want := filepath.Join(pa.DataDir, pipeline.DefaultDeadLetterFile); a.DeadLetters() != want {
		t.Errorf("DeadLetters() = %q, want %q", a.DeadLetters(), want)
	}
}

// TestDeadLetterFileEmptiedBetweenRuns removes the dead-letter file once
// read, as its user may: the next run appends a new one instead of
// refusing a file shorter than the length it committed.
func TestDeadLetterFileEmptiedBetweenRuns(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	module := upperModule(t, dir)
	h, p := startFilePipeline(t, dir, "a", module, "not json\n", slog.New(slog.DiscardHandler))
	if err := h.Run(ctx); err != nil {
		t.Fatal(err)
	}
	dead := filepath.Join(p.DataDir, pipeline.DefaultDeadLetterFile)
	if err := os.Remove(dead); err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(filepath.Join(p.Dir, "in.jsonl"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString("still not json\n"); err != nil {
		t.Fatal(err)
	}
	f.Close()
	h, err = Start(ctx, p, Options{Logger: slog.New(slog.DiscardHandler), HTTPAddr: "off"})
	if err != nil {
		t.Fatalf("restart after the dead-letter file was removed: %v", err)
	}
	if err := h.Run(ctx); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(dead); err != nil || strings.Count(string(b), "\n") != 1 || !strings.Contains(string(b), "still not json") {
		t.Errorf("dead letters %q, %v; want the new malformed line alone", b, err)
	}
}

// TestNATSPortTaken starts a pipeline that uses NATS on a port another
// process holds: the error names the key to change.
func TestNATSPortTaken(t *testing.T) {
	dir := t.TempDir()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	port := l.Addr().(*net.TCPAddr).Port
	writeFile(t, filepath.Join(dir, "p.yaml"), fmt.Sprintf(`
name: n
compile_cache: cache
nats: {port: %d}
sources: [{name: in, type: nats, subject: in}]
operators: [{name: upper, plugin: %s, kind: map}]
sinks: [{name: out, type: file, path: out.jsonl}]
http: {addr: "off"}
`, port, upperModule(t, dir)))
	p, err := pipeline.Load(filepath.Join(dir, "p.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	h, err := Start(context.Background(), p, Options{Logger: slog.New(slog.DiscardHandler)})
	if err == nil {
		h.Close(context.Background())
		t.Fatal("started an embedded NATS server on a port in use")
	}
	if !errors.Is(err, natsconn.ErrPortInUse) || !strings.Contains(err.Error(), "nats.port") || !strings.Contains(err.Error(), fmt.Sprint(port)) {
		t.Errorf("err = %q, want the port in use, naming nats.port", err)
	}
}

// TestCompileReport checks the lines a plugin's load logs: loading, still
// compiling while it lasts, and compiled (a new entry in the cache) or
// loaded from the cache (none).
func TestCompileReport(t *testing.T) {
	cache := t.TempDir()
	entries := filepath.Join(cache, "wazero-v1-amd64-linux")
	if err := os.MkdirAll(entries, 0o755); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(entries, "0123"), "old")

	var logs logBuffer
	r := startCompileReport(logs.logger(), cache, time.Millisecond)
	for deadline := time.Now().Add(time.Minute); !strings.Contains(logs.String(), "still compiling plugin"); {
		if time.Now().After(deadline) {
			t.Fatalf("no progress line in a minute of compiling:\n%s", logs.String())
		}
		time.Sleep(time.Millisecond)
	}
	writeFile(t, filepath.Join(entries, "4567.123.tmp"), "being written")
	writeFile(t, filepath.Join(entries, "4567"), "new")
	r.finish(nil)
	if s := logs.String(); !strings.HasPrefix(s, "time=") || !strings.Contains(s, `msg="loading plugin"`) ||
		!strings.Contains(s, `msg="plugin compiled"`) || strings.Contains(s, "compile cache") {
		t.Errorf("a load that wrote a cache entry logged:\n%s", s)
	}

	var cached logBuffer
	startCompileReport(cached.logger(), cache, time.Hour).finish(nil)
	if s := cached.String(); !strings.Contains(s, `msg="plugin loaded from the compile cache"`) || strings.Contains(s, "compiling") {
		t.Errorf("a load that wrote no cache entry logged:\n%s", s)
	}
	var failed logBuffer
	startCompileReport(failed.logger(), cache, time.Hour).finish(errors.New("bad module"))
	if s := failed.String(); strings.Contains(s, "compiled") || strings.Contains(s, "compile cache") {
		t.Errorf("a failed load logged:\n%s", s)
	}
}

// TestGuestLogsGoToTheHostLog: what a plugin logs goes to the host's
// logger (Options.Logger: the format and level `sluice run` was given),
// with the operator's name, not to the process's default logger. upper
// logs why it refuses a configuration.
func TestGuestLogsGoToTheHostLog(t *testing.T) {
	dir := t.TempDir()
	module := upperModule(t, dir)
	pdir := filepath.Join(dir, "p")
	if err := os.MkdirAll(pdir, 0o755); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(pdir, "in.jsonl"), "{\"value\": \"a\"}\n")
	text := strings.Replace(fmt.Sprintf(filePipeline, "p", filepath.Join(dir, "cache"), module),
		"    parallelism: 1\n", "    parallelism: 1\n    config: {shout: true}\n", 1)
	writeFile(t, filepath.Join(pdir, "p.yaml"), text)
	p, err := pipeline.Load(filepath.Join(pdir, "p.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var logs logBuffer
	h, err := Start(context.Background(), p, Options{Logger: logs.logger(), HTTPAddr: "off"})
	if err == nil {
		h.Close(context.Background())
		t.Fatal("upper started with a configuration it takes none of")
	}
	got := logs.String()
	if !strings.Contains(got, "level=ERROR") || !strings.Contains(got, "takes no configuration") || !strings.Contains(got, "operator=upper") {
		t.Errorf("the host's log lacks the guest's error line, with the operator:\n%s", got)
	}
}
