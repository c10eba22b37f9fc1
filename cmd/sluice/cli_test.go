package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// wordCounts is the serial oracle of the word count pipeline: words are
// the lower-cased space-separated fields of each line.
func wordCounts(lines []string) map[string]int {
	m := map[string]int{}
	for _, l := range lines {
		for _, w := range strings.Fields(strings.ToLower(l)) {
			m[w]++
		}
	}
	return m
}

func testLines(n int) []string {
	words := []string{"alpha", "beta", "Gamma", "delta", "epsilon", "zeta", "eta", "theta"}
	lines := make([]string, n)
	for i := range lines {
		var b strings.Builder
		for j := 0; j <= i%5; j++ {
			fmt.Fprintf(&b, "%s ", words[(i*7+j*3)%len(words)])
		}
		lines[i] = b.String()
	}
	return lines
}

// dumpState runs `sluice state dump` and returns the table's values as counts.
func dumpState(t *testing.T, dataDir, table string) map[string]int {
	t.Helper()
	code, out, errOut := sluice(t, ".", "state", "dump", "--data-dir", dataDir, "--table", table)
	if code != 0 {
		t.Fatalf("state dump exited %d: %s", code, errOut)
	}
	got := map[string]int{}
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		var l struct{ Table, Key, Value string }
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			t.Fatalf("state dump line %q: %v", sc.Text(), err)
		}
		n, err := strconv.Atoi(l.Value)
		if err != nil || l.Table != table {
			t.Fatalf("state dump line %q", sc.Text())
		}
		got[l.Key] = n
	}
	return got
}

func writePipeline(t *testing.T, dir, yaml string) string {
	t.Helper()
	p := filepath.Join(dir, "p.yaml")
	yaml = strings.ReplaceAll(yaml, "PLUGINS", pluginsDir)
	if err := os.WriteFile(p, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

const fileWordCount = `
name: wc
sources:
  - name: lines
    type: file
    path: input.txt
    format: lines
operators:
  - name: split
    plugin: PLUGINS/wordsplit.wasm
    kind: flatmap
  - name: count
    plugin: PLUGINS/wordcount.wasm
    kind: keyed
    parallelism: 2
    state: [counts]
sinks:
  - name: out
    type: file
    path: out.jsonl
dead_letter:
  path: dead.jsonl
batch:
  size: 100
http:
  addr: "off"
`

// TestRunFileWordCount runs file -> wordsplit -> wordcount -> file to the
// end of its input and checks the output and the committed state against a
// serial count.
func TestRunFileWordCount(t *testing.T) {
	dir := t.TempDir()
	lines := testLines(2000)
	if err := os.WriteFile(filepath.Join(dir, "input.txt"), []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	p := writePipeline(t, dir, fileWordCount)
	code, _, errOut := sluice(t, dir, "run", "-c", p)
	if code != 0 {
		t.Fatalf("sluice run exited %d: %s", code, errOut)
	}
	want := wordCounts(lines)

	// The output holds, per word, the counts 1..n in order.
	f, err := os.Open(filepath.Join(dir, "out.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	last := map[string]int{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var r struct{ Key, Value string }
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatal(err)
		}
		n, _ := strconv.Atoi(r.Value)
		if n != last[r.Key]+1 {
			t.Fatalf("output for %q jumps from %d to %d", r.Key, last[r.Key], n)
		}
		last[r.Key] = n
	}
	if !maps.Equal(last, want) {
		t.Errorf("final counts in the output %v, want %v", last, want)
	}
	if got := dumpState(t, filepath.Join(dir, ".sluice", "wc"), "counts"); !maps.Equal(got, want) {
		t.Errorf("state dump %v, want %v", got, want)
	}

	// Running again resumes after the committed position: nothing is
	// counted twice.
	if code, _, errOut := sluice(t, dir, "run", "-c", p); code != 0 {
		t.Fatalf("second run exited %d: %s", code, errOut)
	}
	if got := dumpState(t, filepath.Join(dir, ".sluice", "wc"), "counts"); !maps.Equal(got, want) {
		t.Errorf("state after a second run over the same input %v, want %v", got, want)
	}
}

func TestCLIErrors(t *testing.T) {
	dir := t.TempDir()
	bad := writePipeline(t, dir, strings.Replace(fileWordCount, "kind: keyed", "kind: keyd", 1))
	garbage := filepath.Join(dir, "garbage.wasm")
	if err := os.WriteFile(garbage, []byte("not wasm at all"), 0o644); err != nil {
		t.Fatal(err)
	}
	missing := filepath.Join(dir, "missing.yaml")
	if err := os.WriteFile(missing, []byte(strings.ReplaceAll(fileWordCount, "PLUGINS", dir)), 0o644); err != nil {
		t.Fatal(err)
	}
	natsDown := filepath.Join(dir, "natsdown.yaml")
	down := strings.NewReplacer("PLUGINS", pluginsDir, "type: file\n    path: input.txt\n    format: lines", "type: nats\n    subject: in").Replace(fileWordCount)
	if err := os.WriteFile(natsDown, []byte(down), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		args []string
		code int
		want string
	}{
		{"nats down", []string{"run", "-c", natsDown, "--nats-url", "nats://127.0.0.1:1"}, 1, "cannot connect to nats://127.0.0.1:1"},
		{"bad kind", []string{"run", "-c", bad}, 1, `p.yaml:14: operators[1].kind: unknown operator kind "keyd"`},
		{"no config", []string{"run"}, 2, "-c PIPELINE.yaml is required"},
		{"unknown flag", []string{"run", "--nope"}, 2, "unknown flag"},
		{"missing plugin", []string{"run", "-c", missing}, 1, `operator "split": plugin: stat ` + dir + "/wordsplit.wasm: no such file"},
		{"check garbage", []string{"plugin", "check", garbage}, 1, "problem"},
		{"dump no dir", []string{"state", "dump"}, 2, "--data-dir is required"},
		{"dump empty dir", []string{"state", "dump", "--data-dir", dir}, 1, "state"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errOut := sluice(t, dir, tc.args...)
			if code != tc.code {
				t.Errorf("exit code %d, want %d (stderr %s)", code, tc.code, errOut)
			}
			if !strings.Contains(out+errOut, tc.want) {
				t.Errorf("output does not contain %q:\n%s%s", tc.want, out, errOut)
			}
		})
	}
}

func TestPluginCheckAndVersion(t *testing.T) {
	code, out, errOut := sluice(t, ".", "plugin", "check", filepath.Join(pluginsDir, "wordcount.wasm"))
	if code != 0 {
		t.Fatalf("plugin check exited %d: %s", code, errOut)
	}
	for _, want := range []string{"abi      version 1", "sluice_process (i32, i32) -> i32", "sluice.state_get", "ok: the host accepts this module"} {
		if !strings.Contains(out, want) {
			t.Errorf("plugin check output lacks %q:\n%s", want, out)
		}
	}
	code, out, _ = sluice(t, ".", "version")
	if code != 0 || !strings.Contains(out, "plugin ABI version 1") {
		t.Errorf("version: %d %q", code, out)
	}
}
