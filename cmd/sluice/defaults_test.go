package main

import (
	"errors"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sluicehq/sluice/host/pipeline"
	"github.com/sluicehq/sluice/host/registry"
	"github.com/sluicehq/sluice/host/runner"
)

func TestVersionFlag(t *testing.T) {
	code, out, errOut := sluice(t, ".", "--version")
	_, want, _ := sluice(t, ".", "version")
	if code != 0 || out != want || !strings.HasPrefix(out, "sluice ") {
		t.Errorf("sluice --version: exit %d, %q%s; want %q", code, out, errOut, want)
	}
}

const upperFilePipeline = `
name: up
sources:
  - name: in
    type: file
    path: in.jsonl
operators:
  - name: upper
    plugin: PLUGINS/upper.wasm
    kind: map
    parallelism: 1
sinks:
  - name: out
    type: file
    path: out.jsonl
http:
  addr: "off"
`

// appendLines appends lines to the file path.
func appendLines(t *testing.T, path string, lines ...string) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, l := range lines {
		if _, err := f.WriteString(l + "\n"); err != nil {
			t.Fatal(err)
		}
	}
}

// TestRunDeadLetters runs a pipeline with the default dead-letter
// destination over input with malformed lines: the dead letters are in
// <data_dir>/dead-letters.jsonl, the run says how many and where, and
// exits 0, unless --fail-on-dead-letters or dead_letter.fail_run asks it
// to exit 3 (a run without dead letters still exits 0 then).
func TestRunDeadLetters(t *testing.T) {
	dir := t.TempDir()
	p := writePipeline(t, dir, upperFilePipeline)
	in := filepath.Join(dir, "in.jsonl")
	dead := filepath.Join(dir, ".sluice", "up", pipeline.DefaultDeadLetterFile)
	appendLines(t, in, `{"value": "a"}`, "not json", "nor this", `{"value": "b"}`)
	code, _, errOut := sluice(t, dir, "run", "-c", p)
	if want := "sluice: 2 records dead-lettered: see " + dead + "\n"; code != 0 || !strings.HasSuffix(errOut, want) {
		t.Fatalf("run: exit %d, want 0 and %q last:\n%s", code, want, errOut)
	}
	if b, err := os.ReadFile(dead); err != nil || strings.Count(string(b), "\n") != 2 || !strings.Contains(string(b), "nor this") {
		t.Fatalf("dead letters %q, %v; want the two malformed lines", b, err)
	}

	appendLines(t, in, "again not json")
	code, _, errOut = sluice(t, dir, "run", "-c", p, "--fail-on-dead-letters")
	if code != exitDeadLetters || !strings.Contains(errOut, "sluice: 1 record dead-lettered: see "+dead) {
		t.Errorf("run --fail-on-dead-letters: exit %d, want %d and the summary:\n%s", code, exitDeadLetters, errOut)
	}
	appendLines(t, in, `{"value": "c"}`)
	if code, _, errOut := sluice(t, dir, "run", "-c", p, "--fail-on-dead-letters"); code != 0 || strings.Contains(errOut, "dead-lettered") {
		t.Errorf("run --fail-on-dead-letters without dead letters: exit %d, want 0:\n%s", code, errOut)
	}

	p = writePipeline(t, dir, upperFilePipeline+"dead_letter: {fail_run: true}\n")
	appendLines(t, in, "still not json")
	code, _, errOut = sluice(t, dir, "run", "-c", p)
	if code != exitDeadLetters || !strings.Contains(errOut, "1 record dead-lettered") {
		t.Errorf("run with dead_letter.fail_run: exit %d, want %d:\n%s", code, exitDeadLetters, errOut)
	}
	if out, err := os.ReadFile(filepath.Join(dir, "out.jsonl")); err != nil || string(out) != "{\"value\":\"A\"}\n{\"value\":\"B\"}\n{\"value\":\"C\"}\n" {
		t.Errorf("output %q, %v", out, err)
	}
}

// TestRunProgressNamesSinkOffsets: the progress lines and state dump tell
// a source's position from a sink's offset.
func TestRunProgressNamesSinkOffsets(t *testing.T) {
	dir := t.TempDir()
	p := writePipeline(t, dir, strings.Replace(upperFilePipeline, "type: file\n    path: in.jsonl", "type: generator\n    mode: words\n    rate: 1000", 1))
	cmd, stderr, exited := startSluice(t, dir, "run", "-c", p, "--progress", "20ms")
	offsets := regexp.MustCompile(`source_positions=map\[in:\d+\] sink_offsets="map\[dead_letter:\d+ out:\d+\]"`)
	for deadline := time.Now().Add(time.Minute); !offsets.MatchString(stderr.String()); {
		select {
		case err := <-exited:
			t.Fatalf("sluice exited (%v) before a progress line with the sinks' offsets:\n%s", err, stderr)
		case <-time.After(10 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("no progress line with the sources' positions and the sinks' offsets in a minute:\n%s", stderr)
		}
	}
	if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	if err := <-exited; err != nil {
		t.Fatalf("run: %v\n%s", err, stderr)
	}
	if s := stderr.String(); strings.Contains(s, "sink/") {
		t.Errorf("progress lines:\n%s", s)
	}
	code, _, errOut := sluice(t, dir, "state", "dump", "--data-dir", filepath.Join(dir, ".sluice", "up"))
	if code != 0 || !strings.Contains(errOut, "source in position = ") || !strings.Contains(errOut, "sink out offset = ") || strings.Contains(errOut, "sink/") {
		t.Errorf("state dump: exit %d\n%s", code, errOut)
	}
}

// TestPluginSwapFindsTheAPIOnAFreePort runs a pipeline with the default
// HTTP address while that address is taken: the host listens on a free
// port and writes it to its data directory, where `plugin swap -c`, given
// nothing else, finds it.
func TestPluginSwapFindsTheAPIOnAFreePort(t *testing.T) {
	if l, err := net.Listen("tcp", pipeline.DefaultHTTPAddr); err == nil {
		defer l.Close()
	} else if !errors.Is(err, syscall.EADDRINUSE) {
		t.Fatal(err)
	}
	dir := t.TempDir()
	p := writePipeline(t, dir, strings.Replace(swapPipeline, "http:\n  addr: ADDR\n", "", 1))
	writeUpperV2(t, dir)
	run, stderr, exited := startSluice(t, dir, "run", "-c", p)
	data := filepath.Join(dir, ".sluice", "swap")
	for deadline := time.Now().Add(time.Minute); ; {
		if _, err := runner.ReadAddr(data); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the host wrote no address in a minute:\n%s", stderr)
		}
		time.Sleep(20 * time.Millisecond)
	}
	addr, _ := runner.ReadAddr(data)
	if addr == pipeline.DefaultHTTPAddr || !strings.Contains(stderr.String(), "listening on a free port instead") {
		t.Errorf("the host listens on %s, and said:\n%s", addr, stderr)
	}
	c, stdout, errOut := sluice(t, dir, "plugin", "swap", "--operator", "case", "-c", p, "upper-2.wasm")
	if c != 0 || !strings.Contains(stdout, "-> 2.0.0") {
		t.Errorf("swap -c: exit %d\n%s%s", c, stdout, errOut)
	}
	if err := run.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	if err := <-exited; err != nil {
		t.Fatalf("run: %v\n%s", err, stderr)
	}
	if _, err := os.Stat(filepath.Join(data, runner.AddrFile)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("%s left behind: %v", runner.AddrFile, err)
	}
}

// TestPluginCheckShowsTheVersion: plugin check shows the version the
// registry shows, or that there is none.
func TestPluginCheckShowsTheVersion(t *testing.T) {
	code, err := os.ReadFile(filepath.Join(pluginsDir, "upper.wasm"))
	if err != nil {
		t.Fatal(err)
	}
	v, err := registry.AppendVersion(code, "1.5.0")
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "upper.wasm")
	if err := os.WriteFile(file, v, 0o644); err != nil {
		t.Fatal(err)
	}
	if c, out, errOut := sluice(t, ".", "plugin", "check", file); c != 0 || !strings.Contains(out, "version  1.5.0\n") {
		t.Errorf("plugin check: exit %d\n%s%s", c, out, errOut)
	}
	if c, out, errOut := sluice(t, ".", "plugin", "check", "--json", file); c != 0 || !strings.Contains(out, `"Version": "1.5.0"`) {
		t.Errorf("plugin check --json: exit %d\n%s%s", c, out, errOut)
	}
	if c, out, errOut := sluice(t, ".", "plugin", "check", filepath.Join(pluginsDir, "upper.wasm")); c != 0 || strings.Contains(out, "version  ") {
		t.Errorf("plugin check of a module without a version: exit %d\n%s%s", c, out, errOut)
	}
}

// TestDemoRemovesItsDirectory runs the demo briefly: its temporary
// directory is gone at exit, unless --keep.
func TestDemoRemovesItsDirectory(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the example plugins and runs the demo twice")
	}
	for _, keep := range []bool{false, true} {
		tmp := t.TempDir()
		args := []string{"demo", "--duration", "500ms", "--rate", "100"}
		if keep {
			args = append(args, "--keep")
		}
		cmd := exec.Command(sluiceBin, args...)
		cmd.Env = append(os.Environ(), "TMPDIR="+tmp)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("demo %v: %v\n%s", args, err, out)
		}
		left, err := filepath.Glob(filepath.Join(tmp, "sluice-demo-*"))
		if err != nil {
			t.Fatal(err)
		}
		switch {
		case !keep && (len(left) != 0 || !strings.Contains(string(out), "removed now")):
			t.Errorf("the demo left %v:\n%s", left, out)
		case keep && (len(left) != 1 || !strings.Contains(string(out), "state dump --data-dir "+left[0])):
			t.Errorf("demo --keep left %v:\n%s", left, out)
		}
	}
}

// The size plugin build reports is the size of the module it wrote, its
// version section included.
func TestPluginBuildReportsTheFileSize(t *testing.T) {
	if _, err := exec.LookPath("wat2wasm"); err != nil {
		t.Skip("wat2wasm (wabt) is not installed")
	}
	dir := t.TempDir()
	src := filepath.Join(dir, "op")
	if err := os.MkdirAll(src, 0o755); err != nil {
		t.Fatal(err)
	}
	wat := "(module (memory (export \"memory\") 1)\n" +
		"(func (export \"sluice_abi_version\") (result i32) (i32.const 1))\n" +
		"(func (export \"sluice_alloc\") (param i32) (result i32) (i32.const 1024))\n" +
		"(func (export \"sluice_process\") (param i32 i32) (result i32) (i32.const 0)))\n"
	if err := os.WriteFile(filepath.Join(src, "op.wat"), []byte(wat), 0o644); err != nil {
		t.Fatal(err)
	}
	c, out, errOut := sluice(t, dir, "plugin", "build", "--version", "2.0.1", src)
	if c != 0 {
		t.Fatalf("plugin build: exit %d\n%s%s", c, out, errOut)
	}
	st, err := os.Stat(filepath.Join(src, "op.wasm"))
	if err != nil {
		t.Fatal(err)
	}
	if want := strconv.FormatInt(st.Size(), 10) + " bytes, version 2.0.1,"; !strings.Contains(out, want) {
		t.Errorf("plugin build said %q; want %q", out, want)
	}
}
