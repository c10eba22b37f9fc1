package pipeline

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

const good = `
name: wc
sources:
  - name: lines
    type: file
    path: in.txt
    format: lines
operators:
  - name: split
    plugin: plugins/wordsplit.wasm
    kind: flatmap
    parallelism: 2
    config:
      lower: true
      n: [1, 2]
  - name: count
    plugin: /abs/wordcount.wasm
    kind: keyed
    limits:
      call_timeout: 250ms
      max_record_bytes: 64KiB
sinks:
  - name: out
    type: file
    path: out.jsonl
dead_letter:
  path: dead.jsonl
batch:
  size: 256
  linger: 2ms
`

func TestParseGood(t *testing.T) {
	p, err := Parse("wc.yaml", "/pipes", []byte(good))
	if err != nil {
		t.Fatal(err)
	}
	if p.Name != "wc" || len(p.Sources) != 1 || len(p.Operators) != 2 || len(p.Sinks) != 1 {
		t.Fatalf("parsed %+v", p)
	}
	if got := p.Sources[0].Path; got != filepath.Join("/pipes", "in.txt") {
		t.Errorf("source path %q, want it resolved against the file's directory", got)
	}
	if got := p.Operators[0].Plugin; got != "/pipes/plugins/wordsplit.wasm" {
		t.Errorf("plugin path %q", got)
	}
	if got := p.Operators[1].Plugin; got != "/abs/wordcount.wasm" {
		t.Errorf("absolute plugin path changed to %q", got)
	}
	if got := string(p.Operators[0].ConfigJSON); got != `{"lower":true,"n":[1,2]}` {
		t.Errorf("config JSON %s", got)
	}
	if got := p.Operators[1].State; len(got) != 1 || got[0] != "count" {
		t.Errorf("keyed operator default table %v, want [count]", got)
	}
	if got := time.Duration(*p.Operators[1].Limits.CallTimeout); got != 250*time.Millisecond {
		t.Errorf("call timeout %v", got)
	}
	if got := p.Operators[1].Limits.MaxRecordBytes; got != 64<<10 {
		t.Errorf("max record bytes %d", got)
	}
	if p.Operators[0].Limits.CallTimeout != nil {
		t.Errorf("unset call timeout should stay nil so the runtime default applies")
	}
	if p.Batch.Size != 256 || time.Duration(p.Batch.Linger) != 2*time.Millisecond {
		t.Errorf("batch %+v", p.Batch)
	}
	if p.OnError != PolicyDeadLetter || p.Operators[0].OnError != PolicyDeadLetter {
		t.Errorf("default policy %q %q", p.OnError, p.Operators[0].OnError)
	}
	if p.State.KeyGroups != DefaultKeyGroups || p.DataDir != "/pipes/.sluice/wc" {
		t.Errorf("defaults: key groups %d, data dir %q", p.State.KeyGroups, p.DataDir)
	}
	if p.NeedsNATS() {
		t.Errorf("a file-only pipeline with a file dead-letter needs no NATS")
	}
}

// TestParseErrors checks that each bad input is refused with an error
// naming the line and the key at fault.
func TestParseErrors(t *testing.T) {
	for _, tc := range []struct {
		name, yaml string
		want       []string // substrings of the error
	}{
		{"empty", ``, []string{"p.yaml: the file is empty"}},
		{"not a mapping", `- a`, []string{"p.yaml:1:", "must be a mapping"}},
		{"syntax", "name: x\nsources: [\n", []string{"p.yaml:"}},
		{"unknown key", strings.Replace(good, "    kind: keyed", "    kidn: keyed", 1), []string{"p.yaml:18:", `unknown key "kidn" in an operator`}},
		{"unknown kind", strings.Replace(good, "kind: keyed", "kind: keyd", 1), []string{"p.yaml:18:", "operators[1].kind", `unknown operator kind "keyd"`}},
		{"bad duration", strings.Replace(good, "250ms", "quick", 1), []string{"p.yaml:20:", `"quick" is not a duration`}},
		{"bad size", strings.Replace(good, "64KiB", "lots", 1), []string{"p.yaml:21:", `"lots" is not a size`}},
		{"wrong type", strings.Replace(good, "parallelism: 2", "parallelism: two", 1), []string{"p.yaml:12:", "two"}},
		{"missing plugin", strings.Replace(good, "    plugin: /abs/wordcount.wasm\n", "", 1), []string{"p.yaml:16:", "operators[1]", "needs a plugin"}},
		{"duplicate name", strings.Replace(good, "name: count", "name: split", 1), []string{"p.yaml:16:", "operators[1].name", `"split" is already used by operator operators[0]`}},
		{"no sinks", good[:strings.Index(good, "sinks:")], []string{"p.yaml", "at least one sink"}},
		{"source type", strings.Replace(good, "type: file\n    path: in.txt", "type: kafka\n    path: in.txt", 1), []string{"p.yaml:5:", "sources[0].type", `unknown source type "kafka"`}},
		{"state on map", strings.Replace(good, "kind: flatmap", "kind: flatmap\n    state: [t]", 1), []string{"p.yaml:12:", "operators[0].state", "has no state"}},
		{"policy", good + "on_error: explode\n", []string{"p.yaml:31:", "on_error", `unknown error policy "explode"`}},
		{"jetstream create", strings.Replace(good, "type: file\n    path: in.txt\n    format: lines", "type: jetstream\n    stream: S\n    create: true", 1), []string{"p.yaml:", "sources[0]", "subjects"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse("p.yaml", "/pipes", []byte(tc.yaml))
			if err == nil {
				t.Fatalf("no error")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
			var pe *Error
			if !errors.As(err, &pe) {
				t.Errorf("error %T is not a *pipeline.Error", err)
			}
		})
	}
}

func TestParseSize(t *testing.T) {
	for in, want := range map[string]int64{"512": 512, "64KiB": 64 << 10, "1MiB": 1 << 20, "2 GB": 2e9, "7B": 7} {
		got, err := ParseSize(in)
		if err != nil || got != want {
			t.Errorf("ParseSize(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, in := range []string{"", "-1", "1.5MiB", "lots", "1 TiB"} {
		if _, err := ParseSize(in); err == nil {
			t.Errorf("ParseSize(%q) gave no error", in)
		}
	}
}
