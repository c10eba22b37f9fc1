package main

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

const stdioPipeline = `
name: stdio
sources:
  - name: in
    type: stdin
    format: json
    key_field: /user/id
    time_field: ts
operators:
  - name: up
    plugin: PLUGINS/upper.wasm
    kind: map
    parallelism: 1
sinks:
  - name: out
    type: stdout
dead_letter: {path: dead.jsonl}
http: {addr: "off"}
`

// runStdin runs the pipeline file p with input on its standard input and
// returns what it wrote on its standard output.
func runStdin(t *testing.T, p, input string) string {
	t.Helper()
	cmd := exec.Command(sluiceBin, "run", "-c", p, "--log-level", "warn")
	cmd.Stdin = strings.NewReader(input)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("sluice run: %v\n%s", err, stderr.String())
	}
	return stdout.String()
}

// `cat events.json | sluice run -c p.yaml`: plain JSON on standard input,
// its key and time taken from members, the outputs on standard output, a
// line without the key field dead-lettered; a second run reads a new
// standard input from its first line, numbered after the first run's.
func TestStdinToStdout(t *testing.T) {
	dir := t.TempDir()
	p := writePipeline(t, dir, stdioPipeline)
	out := runStdin(t, p, `{"user":{"id":"u1"},"ts":1714564800000,"msg":"hi"}`+"\n"+`{"user":{}}`+"\n"+`{"user":{"id":7},"ts":"2024-05-01T12:00:00Z"}`+"\n")
	want := `{"key":"u1","value":"{\"USER\":{\"ID\":\"U1\"},\"TS\":1714564800000,\"MSG\":\"HI\"}","time":1714564800000000000}` + "\n" +
		`{"key":"7","value":"{\"USER\":{\"ID\":7},\"TS\":\"2024-05-01T12:00:00Z\"}","time":1714564800000000000}` + "\n"
	if out != want {
		t.Fatalf("stdout:\n%s\nwant:\n%s", out, want)
	}
	if out := runStdin(t, p, `{"nope":1}`+"\n"+`{"user":{"id":"again"},"ts":1}`+"\n"); out != `{"key":"again","value":"{\"USER\":{\"ID\":\"AGAIN\"},\"TS\":1}","time":1000000}`+"\n" {
		t.Fatalf("the second run's stdout: %s", out)
	}
	b, err := os.ReadFile(filepath.Join(dir, "dead.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if len(lines) != 2 {
		t.Fatalf("dead letters:\n%s\nwant 2", b)
	}
	for i, w := range []struct{ pos, err, value string }{
		{"2", "stdin:2: key_field /user/id is missing", `{"user":{}}`},
		{"4", "stdin:1: key_field /user/id is missing", `{"nope":1}`},
	} {
		var d struct {
			Value   string
			Headers map[string]string
		}
		if err := json.Unmarshal([]byte(lines[i]), &d); err != nil {
			t.Fatal(err)
		}
		if d.Value != w.value || d.Headers["Sluice-Position"] != w.pos || !strings.HasPrefix(d.Headers["Sluice-Error"], w.err) {
			t.Errorf("dead letter %d: %s\nwant the line %s at position %s with the error %q", i, lines[i], w.value, w.pos, w.err)
		}
	}
}
