package scaffold

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/sdk/build"
)

// checkout makes a directory that passes for a Sluice checkout.
func checkout(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "sluice")
	files := map[string]string{
		"go.mod":        "module github.com/sluicehq/sluice\n\ngo 1.26.0\n\nrequire github.com/host/only v1.0.0\n",
		"go.sum":        "github.com/host/only v1.0.0 h1:y=\n",
		"sdk/go/go.mod": "module github.com/sluicehq/sluice/sdk/go\n\ngo 1.26.0\n\nrequire (\n\tgithub.com/a/b v1.2.3\n\tgithub.com/c/d v0.1.0 // indirect\n)\n\nrequire github.com/e/f v2.0.0\n\nreplace github.com/sluicehq/sluice/abi => ../../abi\n",
		"sdk/go/go.sum": "github.com/a/b v1.2.3 h1:x=\n",
	}
	for name, text := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func TestLanguages(t *testing.T) {
	want := []build.Language{build.Go, build.Rust, build.C, build.AssemblyScript, build.WAT}
	if got := Languages(); !slices.Equal(got, want) {
		t.Errorf("Languages() = %v, want %v", got, want)
	}
}

func TestCreate(t *testing.T) {
	sdk := checkout(t)
	want := map[build.Language][]string{
		build.Go:             {".gitignore", "README.md", "go.mod", "go.sum", "main.go", "main_test.go", "testdata/cases.yaml"},
		build.Rust:           {".gitignore", "Cargo.toml", "README.md", "src/lib.rs", "testdata/cases.yaml"},
		build.C:              {".gitignore", ".sluice-sdk", "README.md", "op-c.c", "testdata/cases.yaml"},
		build.AssemblyScript: {".gitignore", ".sluice-sdk", "README.md", "assembly/index.ts", "testdata/cases.yaml"},
		build.WAT:            {".gitignore", "README.md", "op-wat.wat", "testdata/cases.yaml"},
	}
	for _, lang := range Languages() {
		t.Run(string(lang), func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "op-"+string(lang))
			files, err := Create(dir, lang, sdk)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(files, want[lang]) {
				t.Errorf("files %q, want %q", files, want[lang])
			}
			for _, f := range files {
				b, err := os.ReadFile(filepath.Join(dir, f))
				if err != nil {
					t.Fatal(err)
				}
				if strings.Contains(string(b), "{{") || strings.Contains(string(b), "<no value>") {
					t.Errorf("%s has an unexpanded placeholder:\n%s", f, b)
				}
			}
			// The project's build finds the SDK, and detects the language.
			if got, err := build.Detect(dir); got != lang || err != nil {
				t.Errorf("Detect = %q, %v", got, err)
			}
			if root, err := build.Root(dir, ""); lang != build.Go && lang != build.Rust && lang != build.WAT && (root != sdk || err != nil) {
				t.Errorf("Root = %q, %v; want %s", root, err, sdk)
			}
			readme, _ := os.ReadFile(filepath.Join(dir, "README.md"))
			for _, w := range []string{"# op-" + string(lang), "sluice plugin test .", "plugin: op-" + string(lang) + "/op-" + string(lang) + ".wasm", sdk} {
				if !strings.Contains(string(readme), w) {
					t.Errorf("README lacks %q", w)
				}
			}
		})
	}
}

func TestCreateGoModule(t *testing.T) {
	sdk := checkout(t)
	dir := filepath.Join(t.TempDir(), "gop")
	if _, err := Create(dir, build.Go, sdk); err != nil {
		t.Fatal(err)
	}
	mod, _ := os.ReadFile(filepath.Join(dir, "go.mod"))
	for _, w := range []string{
		"module gop\n", "go 1.26.0\n", "require github.com/sluicehq/sluice/sdk/go v0.0.0-00010101000000-000000000000\n",
		"\tgithub.com/a/b v1.2.3 // indirect\n", "\tgithub.com/c/d v0.1.0 // indirect\n", "\tgithub.com/e/f v2.0.0 // indirect\n",
		"\tgithub.com/sluicehq/sluice/abi => " + sdk + "/abi\n",
		"\tgithub.com/sluicehq/sluice/sdk/go => " + sdk + "/sdk/go\n",
	} {
		if !strings.Contains(string(mod), w) {
			t.Errorf("go.mod lacks %q:\n%s", w, mod)
		}
	}
	// The host's module and its requirements stay out.
	for _, w := range []string{"github.com/sluicehq/sluice ", "github.com/sluicehq/sluice =>", "github.com/host/only"} {
		if strings.Contains(string(mod), w) {
			t.Errorf("go.mod has %q:\n%s", w, mod)
		}
	}
	if sum, _ := os.ReadFile(filepath.Join(dir, "go.sum")); string(sum) != "github.com/a/b v1.2.3 h1:x=\n" {
		t.Errorf("go.sum = %q", sum)
	}
}

// Inside the checkout, the project refers to it relatively.
func TestCreateInsideCheckout(t *testing.T) {
	sdk := checkout(t)
	for _, lang := range []build.Language{build.Go, build.Rust, build.C, build.AssemblyScript} {
		dir := filepath.Join(sdk, "plugins", "mine", "x-"+string(lang))
		if _, err := Create(dir, lang, sdk); err != nil {
			t.Fatal(err)
		}
		var file, want string
		switch lang {
		case build.Go:
			file, want = "go.mod", "\tgithub.com/sluicehq/sluice/sdk/go => ../../../sdk/go\n"
		case build.Rust:
			file, want = "Cargo.toml", `sluice = { path = "../../../sdk/rust" }`
		case build.C:
			file, want = ".sluice-sdk", "../../..\n"
		case build.AssemblyScript:
			file, want = "assembly/index.ts", `from "../../../../sdk/assemblyscript/assembly";`
		}
		b, _ := os.ReadFile(filepath.Join(dir, file))
		if !strings.Contains(string(b), want) {
			t.Errorf("%s %s lacks %q:\n%s", lang, file, want, b)
		}
	}
}

// The AssemblyScript import names the SDK's directory from anywhere.
func TestCreateAssemblyScriptImport(t *testing.T) {
	sdk := checkout(t)
	dir := filepath.Join(t.TempDir(), "a", "b", "asop")
	if _, err := Create(dir, build.AssemblyScript, sdk); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(filepath.Join(dir, "assembly", "index.ts"))
	_, rest, _ := strings.Cut(string(b), `import { Record, map } from "`)
	rel, _, _ := strings.Cut(rest, `"`)
	if got := filepath.Join(dir, "assembly", filepath.FromSlash(rel)); got != filepath.Join(sdk, "sdk", "assemblyscript", "assembly") {
		t.Errorf("the import %q resolves to %s", rel, got)
	}
}

func TestCreateErrors(t *testing.T) {
	sdk := checkout(t)
	top := t.TempDir()
	if err := os.MkdirAll(filepath.Join(top, "full", "x"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(top, "empty"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		dir  string
		lang build.Language
		sdk  string
		err  error
	}{
		{"Upper", build.Go, sdk, ErrBadName},
		{"1op", build.Go, sdk, ErrBadName},
		{"op.x", build.Go, sdk, ErrBadName},
		{strings.Repeat("a", 65), build.Go, sdk, ErrBadName},
		{"op", "cobol", sdk, ErrNoTemplate},
		{"op", build.Go, top, build.ErrNoRoot},
		{"full", build.Go, sdk, ErrExists},
	} {
		_, err := Create(filepath.Join(top, tc.dir), tc.lang, tc.sdk)
		if !errors.Is(err, tc.err) {
			t.Errorf("Create(%s, %s): %v, want %v", tc.dir, tc.lang, err, tc.err)
		}
	}
	// An empty directory is fine.
	if _, err := Create(filepath.Join(top, "empty"), build.C, sdk); err != nil {
		t.Errorf("Create in an empty directory: %v", err)
	}
	for _, ok := range []string{"a", "op-1_x", strings.Repeat("a", 64)} {
		if err := CheckName(ok); err != nil {
			t.Errorf("CheckName(%q): %v", ok, err)
		}
	}
}

// A Go project made against this checkout has the module graph of a guest:
// the Go SDK and the abi module, none of the host's dependencies.
func TestGoProjectModuleGraph(t *testing.T) {
	root, err := build.FindRoot(".")
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "graph")
	if _, err := Create(dir, build.Go, root); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("go", "list", "-m", "all")
	cmd.Dir = dir
	// Offline, outside any workspace: the module cache that built the
	// checkout has what the project needs.
	cmd.Env = append(os.Environ(), "GOPROXY=off", "GOWORK=off", "GOFLAGS=-mod=mod")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("go list -m all in the new project: %v\n%s", err, out)
	}
	mods := map[string]bool{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		if f := strings.Fields(line); len(f) > 0 {
			mods[f[0]] = true
		}
	}
	for _, want := range []string{"graph", build.SDKModulePath, build.ABIModulePath} {
		if !mods[want] {
			t.Errorf("the module graph lacks %s:\n%s", want, out)
		}
	}
	if mods[build.ModulePath] {
		t.Errorf("the module graph of a Go plugin holds the host's module:\n%s", out)
	}
	for m := range mods {
		for _, bad := range []string{
			"github.com/cockroachdb/pebble", "github.com/nats-io/nats-server",
			"github.com/bytecodealliance/wasmtime-go", "github.com/prometheus/",
		} {
			if strings.HasPrefix(m, bad) {
				t.Errorf("the module graph of a Go plugin holds %s:\n%s", m, out)
			}
		}
	}
}
