package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/host/registry"
)

// kindsModule writes host/plugin's testdata module map.wasm, which
// declares the kind map in its sluice.kinds section, into dir, with
// version when it is not "", and returns its path.
func kindsModule(t *testing.T, dir, version string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(repoRoot(t), "host", "plugin", "testdata", "kinds", "map.wasm"))
	if err != nil {
		t.Fatal(err)
	}
	if version != "" {
		if b, err = registry.AppendVersion(b, version); err != nil {
			t.Fatal(err)
		}
	}
	p := filepath.Join(dir, "map.wasm")
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// plugin check shows the module's version and the kinds it declares, or
// says that it infers them from a module's exports.
func TestPluginCheckKindsAndVersion(t *testing.T) {
	dir := t.TempDir()
	code, out, errOut := sluice(t, dir, "plugin", "check", kindsModule(t, dir, "1.4.2"))
	if code != 0 {
		t.Fatalf("plugin check exited %d:\n%s%s", code, out, errOut)
	}
	for _, want := range []string{
		"module   map.wasm\nversion  1.4.2\nsize     ",
		"\nkinds    map (declared: custom section sluice.kinds)\n",
		"\n  sluice_post (i32, i32, i32, i32) -> i32\n",
		"\n  _initialize ()\n",
		"\nok: the host accepts this module\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	code, out, errOut = sluice(t, dir, "plugin", "check", filepath.Join(pluginsDir, "upper.wasm"))
	if code != 0 || strings.Contains(out, "\nversion  ") ||
		!strings.Contains(out, "\nkinds    map, filter, flatmap, keyed, transactional, aggregate, window, join (inferred from its exports: the module has no sluice.kinds custom section)\n") ||
		!strings.Contains(out, "\nnote: the module exports sluice_kinds but has no sluice.kinds custom section") {
		t.Errorf("plugin check of a module without the section exited %d:\n%s%s", code, out, errOut)
	}
}

// plugin check --json gives the version, the kinds and signatures as text.
func TestPluginCheckJSON(t *testing.T) {
	dir := t.TempDir()
	code, out, errOut := sluice(t, dir, "plugin", "check", "--json", kindsModule(t, dir, "1.4.2"))
	if code != 0 {
		t.Fatalf("plugin check --json exited %d:\n%s%s", code, out, errOut)
	}
	type fn struct{ Module, Name, Signature string }
	var r struct {
		Name, Version  string
		ABIVersion     int
		Kinds          []string
		KindsDeclared  bool
		Exports        []fn
		Imports        []fn
		Notes          []string
		Problems       []string
		Params, Result any // absent: signatures are text
	}
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("%v:\n%s", err, out)
	}
	if r.Name != "map.wasm" || r.Version != "1.4.2" || r.ABIVersion != 1 || !slices.Equal(r.Kinds, []string{"map"}) || !r.KindsDeclared ||
		r.Notes == nil || len(r.Problems) != 0 {
		t.Errorf("report %+v", r)
	}
	for _, want := range []fn{
		{Name: "sluice_process", Signature: "(i32, i32) -> i32"},
		{Name: "sluice_post", Signature: "(i32, i32, i32, i32) -> i32"},
		{Name: "_initialize", Signature: "()"},
	} {
		if !slices.Contains(r.Exports, want) {
			t.Errorf("exports %+v lack %+v", r.Exports, want)
		}
	}
	if !strings.Contains(out, `"Signature": "(i32, i32) -> i32"`) {
		t.Errorf("signatures are not plain text:\n%s", out)
	}
	code, out, _ = sluice(t, dir, "plugin", "check", "--json", filepath.Join(pluginsDir, "upper.wasm"))
	r.Version = ""
	if err := json.Unmarshal([]byte(out), &r); code != 0 || err != nil || r.Version != "" || r.KindsDeclared || len(r.Kinds) != 8 ||
		!slices.Contains(r.Imports, fn{Module: "sluice", Name: "emit", Signature: "(i32, i32)"}) {
		t.Errorf("plugin check --json of a module without the sections exited %d, %v: %+v", code, err, r)
	}
}

// A module built by plugin build declares the kind of its handler: plugin
// test runs a case file that names no kind as that kind, and a case file
// that names another is refused before any case runs, naming both kinds.
func TestPluginBuildDeclaresKinds(t *testing.T) {
	if _, err := exec.LookPath("wat2wasm"); err != nil {
		t.Skip("wat2wasm (wabt) is not installed")
	}
	dir := filepath.Join(t.TempDir(), "keep")
	if err := os.MkdirAll(filepath.Join(dir, "testdata"), 0o755); err != nil {
		t.Fatal(err)
	}
	// A filter that keeps every record: it hands the input batch back.
	wat := `(module
  (import "sluice" "emit" (func $emit (param i32 i32)))
  (memory (export "memory") 1)
  (func (export "sluice_abi_version") (result i32) i32.const 1)
  (func (export "sluice_kinds") (result i32) i32.const 2)
  (func (export "sluice_alloc") (param i32) (result i32) i32.const 1024)
  (func (export "sluice_process") (param i32 i32) (result i32)
    (call $emit (local.get 0) (local.get 1))
    i32.const 0))`
	cases := "cases:\n  - name: keeps\n    in: [{value: a}]\n    out: [{origin: 0, value: a}]\n"
	for name, text := range map[string]string{"keep.wat": wat, "testdata/cases.yaml": cases} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	code, out, errOut := sluice(t, dir, "plugin", "build", ".")
	if code != 0 || !strings.Contains(out, "serves filter)") {
		t.Fatalf("plugin build exited %d:\n%s%s", code, out, errOut)
	}
	code, out, errOut = sluice(t, dir, "plugin", "test", ".")
	if code != 0 || !strings.Contains(out, "ok    keeps") {
		t.Errorf("plugin test exited %d:\n%s%s", code, out, errOut)
	}
	if err := os.WriteFile(filepath.Join(dir, "testdata", "cases.yaml"), []byte("kind: map\n"+cases), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errOut = sluice(t, dir, "plugin", "test", ".")
	if code != 1 || !strings.Contains(errOut, `plugin "keep.wasm": registers a filter handler (custom section sluice.kinds); the pipeline runs it as map`) {
		t.Errorf("plugin test as another kind exited %d:\n%s%s", code, out, errOut)
	}
}
