package runner

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/sdk/go/wasmbuild"
)

const limitsPipeline = `
name: limits
http: {addr: "off"}
dead_letter: {path: dead.jsonl}
sources:
  - {name: in, type: file, path: in.jsonl}
operators:
  - {name: wide, plugin: upper.wasm, kind: map, parallelism: 1, limits: {max_record_bytes: 8KiB}}
  - {name: narrow, plugin: upper.wasm, kind: map, parallelism: 1, limits: {max_record_bytes: 1KiB}}
sinks:
  - {name: out, type: file, path: out.jsonl}
`

// An operator's max_record_bytes bounds the records it is given, at each
// operator, not only at the first: a 2 KB record that the first
// operator's limit lets through (and its plugin emits) is dead-lettered
// before the second operator runs, naming it and its limit; a small record
// goes through both. (The limit on what a plugin emits is the plugin
// host's, tested in host/plugin.)
func TestMaxRecordBytesAtEachOperator(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	if err := wasmbuild.Go(ctx, "../../plugins/upper", filepath.Join(dir, "upper.wasm")); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(dir, "p.yaml"), limitsPipeline)
	big := strings.Repeat("x", 2000)
	writeFile(t, filepath.Join(dir, "in.jsonl"), fmt.Sprintf("{\"key\":\"big\",\"value\":%q}\n{\"key\":\"small\",\"value\":\"ok\"}\n", big))
	h := startPipeline(ctx, t, dir, Options{DataDir: filepath.Join(dir, "data")})
	if err := h.Run(ctx); err != nil {
		t.Fatal(err)
	}
	out, err := os.ReadFile(filepath.Join(dir, "out.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.TrimSpace(string(out)); got != `{"key":"small","value":"OK"}` {
		t.Errorf("sink holds %d lines (%d bytes), want only the small record", strings.Count(got, "\n")+1, len(got))
	}
	dead, err := os.ReadFile(filepath.Join(dir, "dead.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(dead)), "\n")
	if len(lines) != 1 {
		t.Fatalf("%d dead letters, want the big record's: %q", len(lines), dead)
	}
	var dl map[string]any
	if err := json.Unmarshal([]byte(lines[0]), &dl); err != nil {
		t.Fatal(err)
	}
	if dl["key"] != "big" || !strings.Contains(lines[0], "over the operator's limit of 1024 bytes") || !strings.Contains(lines[0], `"Sluice-Operator":"narrow"`) {
		t.Errorf("dead letter %s: want the big record, failed by operator narrow over the limit of 1024 bytes", lines[0])
	}
}
