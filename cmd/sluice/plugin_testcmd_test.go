package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/sdk/build"
)

// writeCases writes a case file and returns its path.
func writeCases(t *testing.T, text string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "cases.yaml")
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// exampleWasm returns the module of the example plugin name: TestMain's
// build, or a build of its own for the plugins TestMain does not build.
func exampleWasm(t *testing.T, name string) []byte {
	t.Helper()
	p := filepath.Join(pluginsDir, name+".wasm")
	if _, err := os.Stat(p); err != nil {
		res, err := build.Build(context.Background(), filepath.Join("..", "..", "plugins", name), build.Options{Output: filepath.Join(t.TempDir(), name+".wasm")})
		if err != nil {
			t.Fatal(err)
		}
		p = res.Output
	}
	wasm, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return wasm
}

// runCases runs the case file text through the module of the example
// plugin name (built by TestMain) and returns what it printed, the counts
// and the error.
func runCases(t *testing.T, plugin, text string, filter *regexp.Regexp) (string, caseRun, error) {
	t.Helper()
	p := writeCases(t, text)
	f, err := loadCaseFile(p)
	if err != nil {
		return "", caseRun{}, err
	}
	wasm := exampleWasm(t, plugin)
	var out bytes.Buffer
	run, err := runCaseFile(context.Background(), &out, p, f, plugin, wasm, filter)
	return out.String(), run, err
}

func TestCasesPass(t *testing.T) {
	out, run, err := runCases(t, "upper", `
kind: map
cases:
  - name: one batch
    in:
      - {key: k1, value: "hello", time: 5, headers: {b: "2", a: "1"}}
      - {value_base64: "/2E="}
    out:
      - {origin: 0, key: k1, value: "HELLO", time: 5, headers: {b: "2", a: "1"}}
      - {origin: 1, value_base64: "/0E="}
  - name: batches
    batches:
      - in: [{value: a}]
        out: [{origin: 0, value: A}]
      - in: [{value: b}, {value: c}]
        out: [{origin: 0, value: B}, {origin: 1, value: C}]
  - name: nothing in, nothing out
`, nil)
	if err != nil || run.passed != 3 || run.failed != 0 {
		t.Fatalf("run %+v, %v:\n%s", run, err, out)
	}
	_, run, err = runCases(t, "upper", "cases:\n  - name: a\n  - name: b\n", regexp.MustCompile("^b$"))
	if err != nil || run.passed != 1 {
		t.Errorf("--run b: %+v, %v", run, err)
	}
}

func TestCasesKeyed(t *testing.T) {
	out, run, err := runCases(t, "wordcount", `
tables: [counts]
state:
  counts: {the: "41", bad: "many"}
cases:
  - name: counts
    in: [{key: the, value: the}, {key: cat, value: cat}, {key: bad, value: bad}]
    out:
      - {origin: 0, key: the, value: "42"}
      - {origin: 1, key: cat, value: "1"}
    rejects:
      - {origin: 2, contains: "is not a decimal number"}
    final:
      counts: {the: "42", cat: "1", bad: "many", dog: null}
  - name: wrong
    in: [{key: the, value: the}]
    out: [{origin: 0, key: the, value: "1"}]
    final:
      counts: {the: "41", dog: "1"}
`, nil)
	if err != nil || run.passed != 1 || run.failed != 1 {
		t.Fatalf("run %+v, %v:\n%s", run, err, out)
	}
	for _, want := range []string{
		"ok    counts",
		"FAIL  wrong (",
		"batch 0 output 0:\n        got  {origin: 0, key: \"the\", value: \"42\"}\n        want {origin: 0, key: \"the\", value: \"1\"}",
		"final state counts/dog: absent, want \"1\"",
		"final state counts/the: \"42\", want \"41\"",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}

// A failed case says what differs and prints what the module emitted, in
// the case file's format, for pasting.
func TestCasesFail(t *testing.T) {
	out, run, err := runCases(t, "upper", `
kind: map
cases:
  - name: wrong output
    in: [{key: k, value: abc, headers: {h: v}}, {value: "x"}]
    out: [{origin: 0, key: k, value: abc}]
    rejects: [{origin: 1, message: nope}]
`, nil)
	if err != nil || run.failed != 1 {
		t.Fatalf("run %+v, %v:\n%s", run, err, out)
	}
	for _, want := range []string{
		`got  {origin: 0, key: "k", value: "ABC", headers: {"h": "v"}}`,
		`want {origin: 0, key: "k", value: "abc"}`,
		"the module emitted 2 record(s):\n      out:\n        - {origin: 0",
		"        - {origin: 1, value: \"X\"}",
		"batch 0: input 1 was not rejected",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}

func TestCasesConfig(t *testing.T) {
	out, run, err := runCases(t, "enrich", `
kind: flatmap
config: {require: [user]}
cases:
  - name: file config
    in: [{value: '{"user":1}'}, {value: '{}'}, {value: '[]'}]
    out: [{origin: 0, value: '{"user":1}'}]
    rejects: [{origin: 2, message: "value is not a JSON object: it is an array"}]
  - name: case config
    config_json: '{"set": {"a": 1}}'
    in: [{value: '{}'}]
    out: [{origin: 0, value: '{"a":1}'}]
  - name: refused
    config: {bogus: 1}
    config_error: unknown field
  - name: refused, but accepted
    config: {}
    config_error: unknown field
`, nil)
	if err != nil || run.passed != 3 || run.failed != 1 || !strings.Contains(out, "was accepted, want it refused") {
		t.Fatalf("run %+v, %v:\n%s", run, err, out)
	}
}

// Mistakes in a case file are errors naming the file and the case.
func TestCasesMistakes(t *testing.T) {
	for _, tc := range []struct{ name, text, want string }{
		{"unknown key", "cases:\n  - name: x\n    inn: []\n", "field inn not found"},
		{"no cases", "kind: map\n", "no cases"},
		{"empty file", "", "no cases"},
		{"bad kind", "kind: mapp\ncases: [{name: x}]\n", "unknown operator kind"},
		{"transactional", "kind: transactional\ncases: [{name: x}]\n", "transactional operators are tested with"},
		{"keyed without tables", "kind: keyed\ncases: [{name: x}]\n", "only a keyed operator, declares tables"},
		{"output without origin", "cases:\n  - name: x\n    in: [{value: a}]\n    out: [{value: A}]\n", "cases.yaml:2: x: batch 0 output 0: an output needs its origin"},
		{"input with origin", "cases:\n  - name: x\n    in: [{origin: 0, value: a}]\n", "an input record has no origin"},
		{"two values", "cases:\n  - name: x\n    in: [{value: a, value_base64: YQ==}]\n", "value and value_base64 are both given"},
		{"bad base64", "cases:\n  - name: x\n    in: [{value_base64: '!'}]\n", "value_base64"},
		{"headers list", "cases:\n  - name: x\n    in: [{value: a, headers: [a]}]\n", "headers must be a mapping"},
		{"in and batches", "cases:\n  - name: x\n    in: [{value: a}]\n    batches: [{in: [{value: b}]}]\n", "either in, out and rejects"},
		{"both configs", "config: {}\nconfig_json: '{}'\ncases: [{name: x}]\n", "exclusive"},
		{"config error without config", "cases: [{name: x, config_error: y}]\n", "config_error without a config"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, _, err := runCases(t, "upper", tc.text, nil)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want one containing %q\n%s", err, tc.want, out)
			}
		})
	}
	// Undeclared tables in a keyed file.
	_, _, err := runCases(t, "wordcount", "tables: [counts]\nstate: {other: {a: '1'}}\ncases: [{name: x}]\n", nil)
	if err == nil || !strings.Contains(err.Error(), `table "other" is not declared`) {
		t.Errorf("undeclared table: %v", err)
	}
}

// The commands, through the binary: build, test and check of a WAT plugin,
// and their failures.
func TestPluginBuildTestCheckCommands(t *testing.T) {
	needToolchain(t, "wat")
	dir := filepath.Join(t.TempDir(), "ident")
	if err := os.MkdirAll(filepath.Join(dir, "testdata"), 0o755); err != nil {
		t.Fatal(err)
	}
	// A map that emits nothing, which the cases say is wrong.
	wat := `(module
  (memory (export "memory") 1)
  (func (export "sluice_abi_version") (result i32) i32.const 1)
  (func (export "sluice_alloc") (param i32) (result i32) i32.const 1024)
  (func (export "sluice_process") (param i32 i32) (result i32) i32.const 0))`
	files := map[string]string{
		"ident.wat":           wat,
		"testdata/cases.yaml": "kind: filter\ncases:\n  - name: drops all\n    in: [{value: a}]\n  - name: keeps\n    in: [{value: a}]\n    out: [{origin: 0, value: a}]\n",
	}
	for name, text := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	code, out, errOut := sluice(t, dir, "plugin", "build", ".")
	if code != 0 || !strings.Contains(out, "built "+filepath.Join(dir, "ident.wasm")+" (wat, ") {
		t.Fatalf("plugin build exited %d:\n%s%s", code, out, errOut)
	}
	code, out, errOut = sluice(t, dir, "plugin", "test", ".")
	if code != 1 || !strings.Contains(out, "ok    drops all") || !strings.Contains(out, "FAIL  keeps") || !strings.Contains(errOut, "1 of 2 cases failed") {
		t.Errorf("plugin test exited %d:\n%s%s", code, out, errOut)
	}
	code, out, _ = sluice(t, dir, "plugin", "test", "--run", "drops", ".")
	if code != 0 || !strings.Contains(out, "ok: 1 cases passed") {
		t.Errorf("plugin test --run exited %d:\n%s", code, out)
	}
	for _, tc := range []struct {
		name string
		args []string
		code int
		want string
	}{
		{"bad lang", []string{"plugin", "build", "--lang", "cobol", "."}, 2, "unknown plugin language"},
		{"not a directory", []string{"plugin", "build", "nope"}, 2, "nope is not a directory"},
		{"wrong lang", []string{"plugin", "build", "--lang", "c", "--sdk", repoRoot(t), "."}, 1, "holds no *.c file"},
		{"no cases", []string{"plugin", "test", t.TempDir()}, 1, "has no test cases"},
		{"bad --run", []string{"plugin", "test", "--run", "(", "."}, 2, "--run"},
		{"--run matches none", []string{"plugin", "test", "--run", "zzz", "."}, 1, `no case matches --run "zzz"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errOut := sluice(t, dir, tc.args...)
			if code != tc.code || !strings.Contains(out+errOut, tc.want) {
				t.Errorf("exit %d, want %d; output lacks %q?\n%s%s", code, tc.code, tc.want, out, errOut)
			}
		})
	}
}

// plugin check says how to rebuild a module built for the wrong target.
func TestPluginCheckAdvice(t *testing.T) {
	command := filepath.Join(repoRoot(t), "host", "plugin", "testdata", "check", "command.wasm")
	code, out, _ := sluice(t, ".", "plugin", "check", command)
	if code != 1 || !strings.Contains(out, "problem: module is a WASI command") || !strings.Contains(out, "-mexec-model=reactor") {
		t.Errorf("plugin check of a command exited %d:\n%s", code, out)
	}
	code, out, _ = sluice(t, ".", "plugin", "check", filepath.Join(pluginsDir, "upper.wasm"))
	if code != 0 || !strings.Contains(out, "language Go\n") {
		t.Errorf("plugin check of a Go plugin exited %d:\n%s", code, out)
	}
}

// TestWindowCasesOfThePlugins runs the case files of the Go window and
// join functions (plugins/wincount, winmedian and joiner), each case a
// pipeline in the host: they pass.
func TestWindowCasesOfThePlugins(t *testing.T) {
	for _, name := range []string{"wincount", "winmedian", "joiner"} {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join("..", "..", "plugins", name, "testdata", "cases.yaml")
			f, err := loadCaseFile(path)
			if err != nil {
				t.Fatal(err)
			}
			var out bytes.Buffer
			run, err := runCaseFile(context.Background(), &out, path, f, name+".wasm", exampleWasm(t, name), nil)
			if err != nil || run.failed != 0 || run.passed != len(f.Cases) {
				t.Errorf("run %+v, %v:\n%s", run, err, out.String())
			}
		})
	}
}

// A window function's failed case says what differs, in results, dead
// letters (reasons included) and late records, and lists what the
// pipeline wrote.
func TestWindowCasesFail(t *testing.T) {
	out, run, err := runCases(t, "wincount", `
kind: aggregate
window: {type: tumbling, size: 1m}
cases:
  - name: right
    in: [{key: a, value: "2", time: 1000000000}, {key: a, value: "x", time: 2000000000}]
    out: [{key: a, value: "1,2", time: 59999999999}]
    dead: [{key: a, value: x, time: 2000000000, message: "plugin \"wincount\": input record 1 rejected by the operator: value is not a decimal integer"}]
  - name: wrong result
    in: [{key: a, value: "2", time: 1000000000}]
    out: [{key: a, value: "1,3", time: 59999999999}]
  - name: wrong reason
    in: [{key: a, value: "x", time: 2000000000}]
    dead: [{key: a, value: x, time: 2000000000, contains: "too big"}]
  - name: missed late record
    in: [{key: a, value: "1", time: 61000000000}, {key: a, value: "2", time: 1000000000}]
    out: [{key: a, value: "1,1", time: 119999999999}]
`, nil)
	if err != nil || run.passed != 1 || run.failed != 3 {
		t.Fatalf("run %+v, %v:\n%s", run, err, out)
	}
	for _, want := range []string{
		"ok    right",
		"FAIL  wrong result (",
		"out 0:\n        got  {key: \"a\", value: \"1,2\", time: 59999999999}\n        want {key: \"a\", value: \"1,3\", time: 59999999999}",
		"the pipeline wrote 1 record(s) to out:\n      out:\n        - {key: \"a\", value: \"1,2\", time: 59999999999}",
		"FAIL  wrong reason (",
		`dead-lettered with "plugin \"wincount\": input record 0 rejected by the operator: value is not a decimal integer", want a reason containing "too big"`,
		"FAIL  missed late record (",
		"late 0:\n        got  {key: \"a\", value: \"2\", time: 1000000000}\n        want (none)",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}

// Mistakes in a window function's case file, and keys of one kind in the
// other's, are errors naming the file and the key.
func TestWindowCasesMistakes(t *testing.T) {
	for _, tc := range []struct{ plugin, name, text, want string }{
		{"wincount", "tables", "window: {type: tumbling, size: 1m}\ntables: [t]\ncases: [{name: x}]\n", "the file: kind aggregate: tables apply to the other kinds"},
		{"wincount", "rejects", "window: {type: tumbling, size: 1m}\ncases:\n  - name: x\n    rejects: [{origin: 0}]\n", "line 3: kind aggregate: rejects apply to the other kinds"},
		{"wincount", "config_json", "window: {type: tumbling, size: 1m}\nconfig_json: '{}'\ncases: [{name: x}]\n", "config_json apply to the other kinds"},
		{"wincount", "no window", "cases: [{name: x}]\n", "kind aggregate needs a window"},
		{"wincount", "left", "window: {type: tumbling, size: 1m}\ncases:\n  - name: x\n    left: [{value: a}]\n", "left and right are a join's inputs"},
		{"joiner", "in", "kind: join\nwindow: {type: tumbling, size: 1m}\ncases:\n  - name: x\n    in: [{value: a}]\n", "gives its inputs' records as left and right"},
		{"joiner", "no window", "kind: join\ncases: [{name: x}]\n", "a join needs a window, or an interval"},
		{"upper", "window on a map", "kind: map\nwindow: {type: tumbling, size: 1m}\ncases: [{name: x}]\n", "kind map: window apply to window and join functions only"},
		{"upper", "dead on a map", "kind: map\ncases:\n  - name: x\n    dead: [{value: a}]\n", "kind map: dead apply to window and join functions only"},
		{"wincount", "bad window", "window: {type: tumbling, size: 1m, slide: 2m}\ncases: [{name: x}]\n", "line 1: window.slide: "},
		{"wincount", "bad window of a case", "window: {type: tumbling, size: 1m}\ncases:\n  - name: x\n    window:\n      type: tumbling\n      size: 0s\n", "line 5: window.size: "},
		{"joiner", "bad join", "kind: join\njoin: {type: inner, interval: {upper: 1s}, kernel: npj}\ncases: [{name: x}]\n", "line 2: join.kernel: unknown key \"kernel\""},
		{"wincount", "bad watermark", "window: {type: tumbling, size: 1m}\nwatermark: {out_of_order: 1s}\ncases: [{name: x}]\n", "line 2: watermark.out_of_order: unknown key \"out_of_order\""},
		{"joiner", "bad watermark of a join", "kind: join\nwindow: {type: tumbling, size: 1m}\nwatermark: {out_of_order: 1s}\ncases: [{name: x}]\n", "x: line 3: watermark.out_of_order: unknown key \"out_of_order\" in watermark: did you mean \"out_of_orderness\"? (known: out_of_orderness, idle)"},
		{"wincount", "config error without config", "window: {type: tumbling, size: 1m}\ncases: [{name: x, config_error: y}]\n", "config_error without a config"},
		{"wincount", "output with origin", "window: {type: tumbling, size: 1m}\ncases:\n  - name: x\n    out: [{origin: 0, value: a}]\n", "out 0: a window function's records have no origin"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, _, err := runCases(t, tc.plugin, tc.text, nil)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want one containing %q\n%s", err, tc.want, out)
			}
			// Said once, though a join's two inputs both have it, and
			// without the generated pipeline, since it names the key.
			if err != nil && (strings.Count(err.Error(), tc.want) > 1 || strings.Contains(err.Error(), "the pipeline the case runs as")) {
				t.Errorf("error %v: said twice, or with the pipeline", err)
			}
		})
	}
}

// TestWindowCasesOfAnotherLanguage: the case files of the Go window and
// join functions pass, through the binary, on their WebAssembly text
// versions (plugins/conformance/wat): a window function in any language
// is tested by `sluice plugin test`.
func TestWindowCasesOfAnotherLanguage(t *testing.T) {
	needToolchain(t, "wat")
	for _, name := range []string{"wincount", "joiner"} {
		t.Run(name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), name)
			if err := os.MkdirAll(filepath.Join(dir, "testdata"), 0o755); err != nil {
				t.Fatal(err)
			}
			root := repoRoot(t)
			for from, to := range map[string]string{
				filepath.Join(root, "plugins", "conformance", "wat", name, name+".wat"): filepath.Join(dir, name+".wat"),
				filepath.Join(root, "plugins", name, "testdata", "cases.yaml"):          filepath.Join(dir, "testdata", "cases.yaml"),
			} {
				b, err := os.ReadFile(from)
				if err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(to, b, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			code, out, errOut := sluice(t, dir, "plugin", "test", ".")
			if code != 0 || !strings.Contains(out, "built "+filepath.Join(dir, name+".wasm")+" (wat") || strings.Contains(out, "FAIL") {
				t.Errorf("plugin test exited %d:\n%s%s", code, out, errOut)
			}
		})
	}
}
