package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sluicehq/sluice/host/api"
)

const dumpPipeline = `
name: counting
sources:
  - {name: text, type: generator, mode: words, rate: 20000}
operators:
  - {name: split, plugin: PLUGINS/wordsplit.wasm, kind: flatmap}
  - {name: count, plugin: PLUGINS/wordcount.wasm, kind: keyed, parallelism: 2, state: [counts]}
sinks:
  - {name: out, type: file, path: out.jsonl}
state:
  key_groups: 8
http:
  addr: ADDR
  auth: all
`

// dumpLines runs `sluice state dump` with args and decodes its lines.
func dumpLines(t *testing.T, dir string, args ...string) ([]api.StateEntry, string) {
	t.Helper()
	code, stdout, stderr := sluice(t, dir, append([]string{"state", "dump"}, args...)...)
	if code != 0 {
		t.Fatalf("state dump %v: exit %d: %s", args, code, stderr)
	}
	var es []api.StateEntry
	sc := bufio.NewScanner(strings.NewReader(stdout))
	for sc.Scan() {
		var e api.StateEntry
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil || e.Key == nil || e.Value == nil {
			t.Fatalf("state dump %v: line %q (%v)", args, sc.Text(), err)
		}
		es = append(es, e)
	}
	return es, stderr
}

// TestStateDumpRunningAndStopped dumps a running word count's state with
// -c (the data directory is locked, so the host's API is asked, with the
// token from the data directory as http.auth all requires) and with
// --addr, filtered, then stops the host and dumps the directory itself.
func TestStateDumpRunningAndStopped(t *testing.T) {
	dir := t.TempDir()
	addr := freeAddr(t)
	p := writePipeline(t, dir, strings.Replace(dumpPipeline, "ADDR", addr, 1))
	data := filepath.Join(dir, "data")
	run := exec.Command(sluiceBin, "run", "-c", p, "--data-dir", data)
	run.Dir = dir
	var runErr bytes.Buffer
	run.Stderr = &runErr
	if err := run.Start(); err != nil {
		t.Fatal(err)
	}
	stopped := false
	defer func() {
		if !stopped {
			run.Process.Signal(syscall.SIGINT)
			run.Wait()
		}
	}()
	waitHealthy(t, addr, &runErr)
	deadline := time.Now().Add(time.Minute)

	// While it runs: through the API, in pages of 7.
	var running []api.StateEntry
	for len(running) < 20 {
		if time.Now().After(deadline) {
			t.Fatalf("after a minute %d words in state", len(running))
		}
		time.Sleep(20 * time.Millisecond)
		running, _ = dumpLines(t, dir, "-c", p, "--data-dir", data, "--table", "counts", "--page-size", "7")
	}
	seen := map[string]bool{}
	for _, e := range running {
		if seen[*e.Key] || e.Table != "counts" {
			t.Errorf("entry %+v: twice, or of another table", e)
		}
		seen[*e.Key] = true
		if n, err := strconv.Atoi(*e.Value); err != nil || n < 1 {
			t.Errorf("word %q counted %q", *e.Key, *e.Value)
		}
	}
	if c, _, stderr := sluice(t, dir, "state", "dump", "--addr", addr, "--token", "wrong"); c == 0 || !strings.Contains(stderr, "401") {
		t.Errorf("dump with a wrong token: exit %d, %s", c, stderr)
	}
	es, _ := dumpLines(t, dir, "--addr", addr, "--data-dir", data, "--key-group", "2", "--limit", "3")
	if len(es) == 0 || len(es) > 3 {
		t.Errorf("--key-group 2 --limit 3: %d entries", len(es))
	}
	for _, e := range es {
		if e.KeyGroup != 2 {
			t.Errorf("--key-group 2 printed %+v", e)
		}
	}

	run.Process.Signal(syscall.SIGINT)
	if err := run.Wait(); err != nil {
		t.Fatalf("sluice run: %v: %s", err, runErr.String())
	}
	stopped = true
	// Stopped: the directory itself, with the positions.
	stopped1, stderr := dumpLines(t, dir, "-c", p, "--data-dir", data, "--page-size", "5")
	if len(stopped1) < len(running) || !strings.Contains(stderr, "source text position = ") {
		t.Errorf("stopped: %d entries (running: %d), stderr %q", len(stopped1), len(running), stderr)
	}
	th, _ := dumpLines(t, dir, "--data-dir", data, "--prefix", "th")
	for _, e := range th {
		if !strings.HasPrefix(*e.Key, "th") {
			t.Errorf("--prefix th printed %+v", e)
		}
	}
	if c, _, stderr := sluice(t, dir, "state", "dump", "--data-dir", data, "--table", "nope"); c == 0 || !strings.Contains(stderr, `no table "nope"`) {
		t.Errorf("dump of an unknown table: exit %d, %s", c, stderr)
	}
}
