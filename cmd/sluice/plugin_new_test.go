package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/sdk/build"
	"github.com/sluicehq/sluice/sdk/scaffold"
)

// repoRoot is the Sluice checkout the tests run in.
func repoRoot(t *testing.T) string {
	t.Helper()
	root, err := build.FindRoot(".")
	if err != nil {
		t.Fatal(err)
	}
	return root
}

// langTools are the commands a language's build needs, for skipping.
var langTools = map[build.Language][]string{
	build.Go:             {"go"},
	build.Rust:           {"cargo", "rustc"},
	build.C:              {"clang", "wasm-ld"},
	build.AssemblyScript: {"node"},
	build.WAT:            {"wat2wasm"},
}

// needToolchain skips t when lang's toolchain is missing, or fails it when
// SLUICE_REQUIRE_TOOLCHAINS=1.
func needToolchain(t *testing.T, lang build.Language) {
	t.Helper()
	for _, tool := range langTools[lang] {
		if _, err := exec.LookPath(tool); err != nil {
			if os.Getenv("SLUICE_REQUIRE_TOOLCHAINS") == "1" {
				t.Fatalf("%s is not installed; SLUICE_REQUIRE_TOOLCHAINS=1 requires it", tool)
			}
			t.Skipf("%s is not installed (scripts/install-toolchains.sh)", tool)
		}
	}
	if lang == build.AssemblyScript {
		if _, err := os.Stat(filepath.Join(repoRoot(t), "sdk", "assemblyscript", "node_modules", ".bin", "asc")); err != nil {
			if os.Getenv("SLUICE_REQUIRE_TOOLCHAINS") == "1" {
				t.Fatal("the AssemblyScript compiler is not installed in sdk/assemblyscript; SLUICE_REQUIRE_TOOLCHAINS=1 requires it")
			}
			t.Skip("the AssemblyScript compiler is not installed (npm ci in sdk/assemblyscript)")
		}
	}
}

// Every language's new project passes its own test, out of the box, with
// one command; a Go project passes go test too.
func TestPluginNewThenTest(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a project per language")
	}
	root := repoRoot(t)
	for _, lang := range scaffold.Languages() {
		t.Run(string(lang), func(t *testing.T) {
			needToolchain(t, lang)
			dir := t.TempDir()
			name := "my-" + string(lang) + "_op"
			code, out, errOut := sluice(t, dir, "plugin", "new", "--lang", string(lang), "--sdk", root, name)
			if code != 0 {
				t.Fatalf("plugin new exited %d: %s%s", code, out, errOut)
			}
			for _, want := range []string{"created " + filepath.Join(name, "README.md"), "created " + filepath.Join(name, "testdata", "cases.yaml"), "sluice plugin test " + name} {
				if !strings.Contains(out, want) {
					t.Errorf("plugin new output lacks %q:\n%s", want, out)
				}
			}
			readme, err := os.ReadFile(filepath.Join(dir, name, "README.md"))
			if err != nil || !strings.Contains(string(readme), "kind: map") || !strings.Contains(string(readme), "sluice plugin build") {
				t.Errorf("README lacks the pipeline snippet or the build command: %v\n%s", err, readme)
			}
			code, out, errOut = sluice(t, dir, "plugin", "test", name)
			if code != 0 || !strings.Contains(out, "ok: 1 cases passed") {
				t.Fatalf("plugin test exited %d:\n%s%s", code, out, errOut)
			}
			wasm := filepath.Join(dir, name, name+".wasm")
			// The build declared the kind of the handler the template
			// registers, whatever the language.
			if code, out, errOut := sluice(t, dir, "plugin", "check", wasm); code != 0 || !strings.Contains(out, "kinds    map (declared: custom section sluice.kinds)\n") {
				t.Errorf("plugin check %s exited %d:\n%s%s", wasm, code, out, errOut)
			}
			if lang == build.Go {
				cmd := exec.Command("go", "test", ".")
				cmd.Dir = filepath.Join(dir, name)
				if b, err := cmd.CombinedOutput(); err != nil {
					t.Errorf("go test in the new project: %v\n%s", err, b)
				}
			}
		})
	}
}

// Without --sdk, a project made inside a checkout uses that checkout, by a
// relative path.
func TestPluginNewInsideCheckout(t *testing.T) {
	fake := filepath.Join(t.TempDir(), "checkout")
	if err := os.MkdirAll(filepath.Join(fake, "plugins"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(fake, "go.mod"), []byte("module github.com/sluicehq/sluice\n\ngo 1.26.0\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := sluice(t, filepath.Join(fake, "plugins"), "plugin", "new", "--lang", "c", "inside")
	if code != 0 {
		t.Fatalf("plugin new exited %d: %s%s", code, out, errOut)
	}
	if b, err := os.ReadFile(filepath.Join(fake, "plugins", "inside", build.SDKFile)); err != nil || string(b) != "../..\n" {
		t.Errorf("%s = %q, %v; want the checkout, relatively", build.SDKFile, b, err)
	}
}

func TestPluginNewErrors(t *testing.T) {
	root := repoRoot(t)
	outside := t.TempDir()
	full := filepath.Join(outside, "full")
	if err := os.MkdirAll(filepath.Join(full, "x"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		args []string
		code int
		want string
	}{
		{"no lang", []string{"plugin", "new", "op"}, 2, "--lang is required"},
		{"unknown lang", []string{"plugin", "new", "--lang", "cobol", "op"}, 2, `unknown plugin language: "cobol"`},
		{"bad name", []string{"plugin", "new", "--lang", "go", "--sdk", root, "My Op"}, 2, `bad plugin name "My Op"`},
		{"no name", []string{"plugin", "new", "--lang", "go"}, 2, "accepts 1 arg"},
		{"not empty", []string{"plugin", "new", "--lang", "go", "--sdk", root, "full"}, 1, "directory not empty"},
		{"outside a checkout", []string{"plugin", "new", "--lang", "go", "op"}, 1, "not inside a Sluice checkout"},
		{"sdk not a checkout", []string{"plugin", "new", "--lang", "go", "--sdk", outside, "op"}, 1, "no Sluice checkout found"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errOut := sluice(t, outside, tc.args...)
			if code != tc.code || !strings.Contains(out+errOut, tc.want) {
				t.Errorf("exit %d, want %d; output lacks %q?\n%s%s", code, tc.code, tc.want, out, errOut)
			}
		})
	}
	if _, err := os.Stat(filepath.Join(outside, "op")); err == nil {
		t.Error("a failed plugin new left a directory behind")
	}
}
