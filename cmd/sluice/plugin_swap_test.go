package main

import (
	"bytes"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sluicehq/sluice/host/registry"
)

const swapPipeline = `
name: swap
sources:
  - name: seq
    type: generator
    mode: words
    rate: 5000
operators:
  - name: case
    plugin: PLUGINS/upper.wasm
    kind: map
    parallelism: 1
sinks:
  - name: out
    type: file
    path: out.jsonl
dead_letter:
  path: dead.jsonl
http:
  addr: ADDR
`

// freeAddr returns a loopback address no one listens on now.
func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// waitHealthy waits, a minute at most, until the host at addr answers
// /healthz; what the host wrote to stderr explains a failure.
func waitHealthy(t *testing.T, addr string, stderr fmt.Stringer) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		resp, err := http.Get("http://" + addr + "/healthz")
		if err == nil {
			resp.Body.Close()
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the host did not start: %s", stderr)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// writeUpperV2 writes the upper plugin, versioned 2.0.0, to dir/upper-2.wasm.
func writeUpperV2(t *testing.T, dir string) {
	t.Helper()
	code, err := os.ReadFile(filepath.Join(pluginsDir, "upper.wasm"))
	if err != nil {
		t.Fatal(err)
	}
	v2, err := registry.AppendVersion(code, "2.0.0")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "upper-2.wasm"), v2, 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestPluginSwapListRollback runs a pipeline and swaps, lists and rolls
// back its plugin with the CLI, the token read from the data directory.
func TestPluginSwapListRollback(t *testing.T) {
	dir := t.TempDir()
	addr := freeAddr(t)
	p := writePipeline(t, dir, strings.Replace(swapPipeline, "ADDR", addr, 1))
	writeUpperV2(t, dir)
	data := filepath.Join(dir, "data")
	run := exec.Command(sluiceBin, "run", "-c", p, "--data-dir", data)
	run.Dir = dir
	var runErr bytes.Buffer
	run.Stderr = &runErr
	if err := run.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		run.Process.Signal(syscall.SIGINT)
		run.Wait()
	}()
	waitHealthy(t, addr, &runErr)

	if c, _, stderr := sluice(t, dir, "plugin", "swap", "--operator", "case", "--addr", addr, "--token", "wrong", "upper-2.wasm"); c == 0 || !strings.Contains(stderr, "401") {
		t.Errorf("swap with a wrong token: exit %d, %s", c, stderr)
	}
	c, stdout, stderr := sluice(t, dir, "plugin", "swap", "--prepare", "--operator", "case", "--data-dir", data, "--addr", addr, "upper-2.wasm")
	if c != 0 || !strings.Contains(stdout, "operator case: prepared 2.0.0") || !strings.Contains(stdout, "new module, checked and compiled: check ") {
		t.Fatalf("swap --prepare: exit %d\n%s\n%s", c, stdout, stderr)
	}
	c, stdout, stderr = sluice(t, dir, "plugin", "swap", "--operator", "case", "--data-dir", data, "--addr", addr, "upper-2.wasm")
	if c != 0 || !strings.Contains(stdout, "operator case: sha256:") || !strings.Contains(stdout, "-> 2.0.0") ||
		!strings.Contains(stdout, "prepared module, neither checked nor loaded again: check 0 ms, load 0 ms, instances ") {
		t.Fatalf("swap: exit %d\n%s\n%s", c, stdout, stderr)
	}
	c, stdout, stderr = sluice(t, dir, "plugin", "list", "--data-dir", data)
	if c != 0 || !strings.Contains(stdout, "upper-2.wasm") || !strings.Contains(stdout, "2.0.0") || !strings.Contains(stdout, "swap") {
		t.Errorf("list: exit %d\n%s\n%s", c, stdout, stderr)
	}
	c, stdout, stderr = sluice(t, dir, "plugin", "rollback", "--operator", "case", "-c", p, "--data-dir", data)
	if c != 0 || !strings.Contains(stdout, "2.0.0 -> sha256:") || !strings.Contains(stdout, "module from the registry, not checked again: check 0 ms, load ") {
		t.Errorf("rollback: exit %d\n%s\n%s", c, stdout, stderr)
	}
	if c, _, stderr := sluice(t, dir, "plugin", "rollback", "--operator", "case", "--data-dir", data, "--addr", addr); c == 0 || !strings.Contains(stderr, "409") {
		t.Errorf("second rollback: exit %d, %s; want a 409 refusal", c, stderr)
	}
	if c, _, stderr := sluice(t, dir, "plugin", "swap", "--data-dir", data, "upper-2.wasm"); c != 2 || !strings.Contains(stderr, "--operator is required") {
		t.Errorf("swap without --operator: exit %d, %s", c, stderr)
	}
}

// TestPluginBuildVersion: plugin build --version writes the version
// section the registry reads.
func TestPluginBuildVersion(t *testing.T) {
	dir := t.TempDir()
	src := filepath.Join(dir, "upper")
	if err := os.MkdirAll(src, 0o755); err != nil {
		t.Fatal(err)
	}
	wat := "(module (import \"sluice\" \"emit\" (func $emit (param i32 i32)))\n" +
		"(memory (export \"memory\") 1)\n" +
		"(func (export \"sluice_abi_version\") (result i32) (i32.const 1))\n" +
		"(func (export \"sluice_alloc\") (param i32) (result i32) (i32.const 1024))\n" +
		"(func (export \"sluice_process\") (param i32 i32) (result i32) (i32.const 0)))\n"
	if err := os.WriteFile(filepath.Join(src, "upper.wat"), []byte(wat), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := exec.LookPath("wat2wasm"); err != nil {
		t.Skip("wat2wasm (wabt) is not installed")
	}
	if code, out, errOut := sluice(t, dir, "plugin", "build", "--version", "2.0.1", src); code != 0 {
		t.Fatalf("plugin build: exit %d\n%s%s", code, out, errOut)
	}
	b, err := os.ReadFile(filepath.Join(src, "upper.wasm"))
	if err != nil {
		t.Fatal(err)
	}
	if v, err := registry.ReadVersion(b); err != nil || v != "2.0.1" {
		t.Errorf("version %q, %v; want 2.0.1", v, err)
	}
}
