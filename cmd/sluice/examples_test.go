package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestWindowExamples lints and runs the examples of windows and joins as
// their comments say, from a copy of examples/: lint accepts them (their
// operators are native, with no plugin to check), run ends when the files
// do, with results and no dead letters. The windowed count is checked
// against its input: every click is counted in its minute once, or is in
// the late file.
func TestWindowExamples(t *testing.T) {
	examples := filepath.Join("..", "..", "examples")
	for _, c := range []struct{ name, out string }{
		{"windowed-count", "counts.jsonl"},
		{"session-window", "sessions.jsonl"},
		{"window-join", "joined.jsonl"},
		{"interval-join", "paid.jsonl"},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			if err := os.CopyFS(filepath.Join(dir, "data"), os.DirFS(filepath.Join(examples, "data"))); err != nil {
				t.Fatal(err)
			}
			copyFile(t, filepath.Join(examples, c.name+".yaml"), dir)
			code, out, errOut := sluice(t, dir, "lint", "-c", c.name+".yaml")
			if code != 0 || !strings.Contains(out, "native (no plugin)") {
				t.Fatalf("sluice lint exited %d:\n%s%s", code, out, errOut)
			}
			if code, _, errOut := sluice(t, dir, "run", "-c", c.name+".yaml", "--http", "off"); code != 0 {
				t.Fatalf("sluice run exited %d: %s", code, errOut)
			}
			data := filepath.Join(dir, ".sluice", c.name)
			results := lines(t, filepath.Join(data, c.out))
			if len(results) == 0 {
				t.Fatalf("no results in %s", c.out)
			}
			if dead := lines(t, filepath.Join(data, "dead-letters.jsonl")); len(dead) > 0 {
				t.Fatalf("%d dead letters: %s", len(dead), dead[0])
			}
			if c.name != "windowed-count" {
				return
			}
			counted := 0
			for _, l := range results {
				var r struct{ Count int }
				if err := json.Unmarshal([]byte(l), &r); err != nil || r.Count < 1 {
					t.Fatalf("result %s: count %d, %v", l, r.Count, err)
				}
				counted += r.Count
			}
			clicks := lines(t, filepath.Join(dir, "data", "clicks.json"))
			late := lines(t, filepath.Join(data, "late-records.jsonl"))
			if counted+len(late) != len(clicks) {
				t.Errorf("%d clicks counted and %d late, of %d", counted, len(late), len(clicks))
			}
		})
	}
}

// lines returns the non-empty lines of the file at path; none when it does
// not exist.
func lines(t *testing.T, path string) []string {
	t.Helper()
	b, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	var ls []string
	for l := range bytes.Lines(b) {
		if s := strings.TrimSpace(string(l)); s != "" {
			ls = append(ls, s)
		}
	}
	return ls
}
