package main

import (
	"flag"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden files of testdata/lint with the output the tests get")

// copyFile copies src to the directory dir.
func copyFile(t *testing.T, src, dir string) {
	t.Helper()
	b, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, filepath.Base(src)), b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestLintGolden runs `sluice lint -c NAME.yaml` on each pipeline of
// testdata/lint, beside the plugins they name, and compares its exit
// status and output with NAME.golden (go test -run TestLintGolden -update
// rewrites them). The pipelines cover what the CLI says of a pipeline file:
// a wrong indentation (at the line of the key), values of the wrong type
// (naming the key), unknown keys (with the key meant), keys of another
// source or sink type, and a good and a bad pipeline with its plugins.
func TestLintGolden(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "lint", "*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no pipelines in testdata/lint: %v", err)
	}
	for _, f := range files {
		name := strings.TrimSuffix(filepath.Base(f), ".yaml")
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			copyFile(t, f, dir)
			copyFile(t, filepath.Join(pluginsDir, "upper.wasm"), dir)
			copyFile(t, filepath.Join("..", "..", "host", "plugin", "testdata", "check", "reactor.wasm"), dir)
			code, stdout, stderr := sluice(t, dir, "lint", "-c", filepath.Base(f))
			got := fmt.Sprintf("exit %d\n-- stdout --\n%s-- stderr --\n%s", code, stdout, stderr)
			golden := strings.TrimSuffix(f, ".yaml") + ".golden"
			if *update {
				if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (go test -run TestLintGolden -update writes it)", err)
			}
			if got != string(want) {
				t.Errorf("sluice lint -c %s:\n%s\nwant (%s):\n%s", filepath.Base(f), got, golden, want)
			}
		})
	}
}

// Lint loads each plugin under its operator's limits.
func TestLintLimits(t *testing.T) {
	dir := t.TempDir()
	copyFile(t, filepath.Join(pluginsDir, "upper.wasm"), dir)
	y := `name: limits
sources: [{name: in, type: file, path: in.jsonl}]
operators:
  - {name: up, plugin: upper.wasm, kind: map, limits: {memory_pages: 2}}
sinks: [{name: out, type: file, path: out.jsonl}]
dead_letter: {path: dead.jsonl}
http: {addr: "off"}
`
	if err := os.WriteFile(filepath.Join(dir, "p.yaml"), []byte(y), 0o644); err != nil {
		t.Fatal(err)
	}
	code, stdout, _ := sluice(t, dir, "lint", "-c", "p.yaml")
	if want := "error: p.yaml:4: operators[0].plugin: upper.wasm: "; code != 1 || !strings.Contains(stdout, want) || !strings.Contains(stdout, "over limit of 2 pages") {
		t.Errorf("exit %d, output:\n%s\nwant exit 1 and an error %q...over limit of 2 pages", code, stdout, want)
	}
}

// Lint warns of the addresses sluice run would listen on that are in use,
// and exits 0 for warnings alone.
func TestLintPorts(t *testing.T) {
	var addrs []string
	for range 2 {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		addrs = append(addrs, l.Addr().String())
	}
	_, natsPort, _ := net.SplitHostPort(addrs[0])
	dir := t.TempDir()
	copyFile(t, filepath.Join(pluginsDir, "upper.wasm"), dir)
	y := fmt.Sprintf(`name: ports
nats: {port: %s}
http: {addr: "%s"}
dead_letter: {subject: ports.dead}
sources: [{name: in, type: file, path: in.jsonl}]
operators: [{name: up, plugin: upper.wasm, kind: map}]
sinks: [{name: out, type: file, path: out.jsonl}]
`, natsPort, addrs[1])
	if err := os.WriteFile(filepath.Join(dir, "p.yaml"), []byte(y), 0o644); err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr := sluice(t, dir, "lint", "-c", "p.yaml")
	for _, want := range []string{
		"warning: p.yaml:2: nats.port: " + addrs[0] + ", where the embedded NATS server would listen, is in use",
		"warning: p.yaml:3: http.addr: " + addrs[1] + ", where the HTTP API would listen, is in use",
		"p.yaml: 0 errors, ",
	} {
		if !strings.Contains(stdout, want) {
			t.Errorf("lint output lacks %q:\n%s", want, stdout)
		}
	}
	if code != 0 || stderr != "" {
		t.Errorf("exit %d, stderr %q: want 0 and nothing for warnings", code, stderr)
	}
}
