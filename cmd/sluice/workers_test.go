package main

import (
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// workersPipeline counts generated words on a keyed operator of two
// workers.
const workersPipeline = `
name: workers
sources:
  - {name: seq, type: generator, mode: words, rate: 5000}
operators:
  - {name: count, plugin: PLUGINS/wordcount.wasm, kind: keyed, parallelism: 2, state: [counts]}
  - {name: case, plugin: PLUGINS/upper.wasm, kind: map, parallelism: 1}
sinks:
  - {name: out, type: file, path: out.jsonl}
http:
  addr: ADDR
`

// TestWorkersCommand changes a running keyed operator's workers 2 -> 3 and
// a map's 1 -> 2 with sluice workers, and sees a transactional-only or
// unknown request refused with the API's answer.
func TestWorkersCommand(t *testing.T) {
	dir := t.TempDir()
	addr := freeAddr(t)
	p := writePipeline(t, dir, strings.Replace(workersPipeline, "ADDR", addr, 1))
	data := filepath.Join(dir, "data")
	run, stderr, exited := startSluice(t, dir, "run", "-c", p, "--data-dir", data)
	waitHealthy(t, addr, stderr)
	for _, tc := range []struct {
		args []string
		code int
		out  string
	}{
		{[]string{"--operator", "count", "3"}, 0, "operator count: 2 -> 3 workers"},
		{[]string{"--operator", "case", "2"}, 0, "operator case: 1 -> 2 workers"},
		{[]string{"--operator", "nope", "2"}, 1, "404"},
		{[]string{"--operator", "count", "0"}, 2, "not a number of workers"},
	} {
		args := append([]string{"workers", "--data-dir", data, "--addr", addr}, tc.args...)
		c, stdout, errOut := sluice(t, dir, args...)
		if c != tc.code || !strings.Contains(stdout+errOut, tc.out) {
			t.Errorf("sluice %v: exit %d (want %d)\n%s%s\nwant %q", args, c, tc.code, stdout, errOut, tc.out)
		}
	}
	if err := run.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	if err := <-exited; err != nil {
		t.Fatalf("run: %v\n%s", err, stderr)
	}
}
