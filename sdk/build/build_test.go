package build

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/host/plugin"
	"github.com/sluicehq/sluice/runtime"
)

// write creates the files of files (path relative to dir: content) under
// dir.
func write(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for name, content := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func TestDetect(t *testing.T) {
	for _, tc := range []struct {
		name  string
		files map[string]string
		want  Language
		err   error
		msg   string // in the error
	}{
		{"go", map[string]string{"main.go": "package main\n", "x_test.go": "package other\n"}, Go, nil, ""},
		{"go library", map[string]string{"lib.go": "package lib\n"}, "", ErrUnknownLanguage, "Cargo.toml"},
		{"go mixed packages", map[string]string{"main.go": "package main\n", "b.go": "package lib\n"}, "", ErrUnknownLanguage, ""},
		{"rust", map[string]string{"Cargo.toml": "[package]\n", "src/lib.rs": ""}, Rust, nil, ""},
		{"c", map[string]string{"op.c": "", "op.h": ""}, C, nil, ""},
		{"assemblyscript", map[string]string{"assembly/index.ts": "", "package.json": "{}"}, AssemblyScript, nil, ""},
		{"wat", map[string]string{"wat.wat": ""}, WAT, nil, ""},
		{"wat named otherwise", map[string]string{"other.wat": ""}, "", ErrUnknownLanguage, "wat named otherwise.wat"},
		{"empty", nil, "", ErrUnknownLanguage, "holds none of"},
		{"ambiguous", map[string]string{"Cargo.toml": "", "op.c": ""}, "", ErrAmbiguous, "Cargo.toml (rust) and op.c (c)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), tc.name)
			if err := os.Mkdir(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			write(t, dir, tc.files)
			got, err := Detect(dir)
			if got != tc.want || !errors.Is(err, tc.err) || tc.err == nil && err != nil {
				t.Fatalf("Detect = %q, %v; want %q, %v", got, err, tc.want, tc.err)
			}
			if err != nil && !strings.Contains(err.Error(), tc.msg) {
				t.Errorf("error %q lacks %q", err, tc.msg)
			}
		})
	}
	if _, err := Detect(filepath.Join(t.TempDir(), "absent")); err == nil || !errors.Is(err, os.ErrNotExist) {
		t.Errorf("Detect of a missing directory: %v", err)
	}
}

func TestParseLanguage(t *testing.T) {
	for _, l := range Languages() {
		if got, err := ParseLanguage(strings.ToUpper(string(l))); got != l || err != nil {
			t.Errorf("ParseLanguage(%q) = %q, %v", l, got, err)
		}
	}
	if got, _ := ParseLanguage("as"); got != AssemblyScript {
		t.Errorf("ParseLanguage(as) = %q", got)
	}
	if _, err := ParseLanguage("cobol"); !errors.Is(err, ErrUnknownLanguage) || !strings.Contains(err.Error(), "assemblyscript") {
		t.Errorf("ParseLanguage(cobol): %v", err)
	}
}

func TestRoot(t *testing.T) {
	top := t.TempDir()
	checkout := filepath.Join(top, "sluice")
	write(t, checkout, map[string]string{
		"go.mod":                 "// the checkout\nmodule github.com/sluicehq/sluice\n\ngo 1.26.0\n",
		"plugins/op/op.c":        "",
		"other/go.mod":           "module example.com/other\n",
		"other/op/op.c":          "",
		"fake/go.mod":            "module github.com/sluicehq/sluice/fake\n",
		"fake/op/op.c":           "",
		"../project/op.c":        "",
		"../relative/op.c":       "",
		"../relative/" + SDKFile: "../sluice\n",
		"../broken/" + SDKFile:   "/nonexistent\n",
	})
	if got, err := FindRoot(filepath.Join(checkout, "plugins", "op")); got != checkout || err != nil {
		t.Errorf("FindRoot below the checkout = %q, %v", got, err)
	}
	// A nested module's go.mod is not the checkout's, and does not stop
	// the walk.
	if got, err := FindRoot(filepath.Join(checkout, "other", "op")); got != checkout || err != nil {
		t.Errorf("FindRoot below a nested module = %q, %v", got, err)
	}
	if got, err := FindRoot(filepath.Join(checkout, "fake", "op")); got != checkout || err != nil {
		t.Errorf("FindRoot below a module with a longer path = %q, %v", got, err)
	}
	if _, err := FindRoot(filepath.Join(top, "project")); !errors.Is(err, ErrNoRoot) {
		t.Errorf("FindRoot outside a checkout: %v", err)
	}
	if got, err := Root(filepath.Join(top, "relative"), ""); got != checkout || err != nil {
		t.Errorf("Root from %s = %q, %v", SDKFile, got, err)
	}
	if _, err := Root(filepath.Join(top, "broken"), ""); !errors.Is(err, ErrNoRoot) || !strings.Contains(err.Error(), SDKFile) {
		t.Errorf("Root from a broken %s: %v", SDKFile, err)
	}
	if got, err := Root(filepath.Join(top, "project"), checkout); got != checkout || err != nil {
		t.Errorf("Root explicit = %q, %v", got, err)
	}
	if _, err := Root(filepath.Join(top, "project"), top); !errors.Is(err, ErrNoRoot) {
		t.Errorf("Root explicit, not a checkout: %v", err)
	}
	t.Chdir(filepath.Join(checkout, "plugins"))
	if got, err := Root(filepath.Join(top, "project"), ""); got != checkout || err != nil {
		t.Errorf("Root from the working directory = %q, %v", got, err)
	}
	t.Chdir(top)
	if _, err := Root(filepath.Join(top, "project"), ""); !errors.Is(err, ErrNoRoot) || !strings.Contains(err.Error(), "--sdk") {
		t.Errorf("Root with no checkout anywhere: %v", err)
	}
}

// requireTool skips the test when the named command is missing, unless
// SLUICE_REQUIRE_TOOLCHAINS=1, when it fails it.
func requireTool(t *testing.T, names ...string) {
	t.Helper()
	for _, name := range names {
		if _, err := exec.LookPath(name); err != nil {
			skipOrFail(t, name+" is not installed (scripts/install-toolchains.sh installs it)")
		}
	}
}

func skipOrFail(t *testing.T, why string) {
	t.Helper()
	if os.Getenv("SLUICE_REQUIRE_TOOLCHAINS") == "1" {
		t.Fatal(why + "; SLUICE_REQUIRE_TOOLCHAINS=1 requires it")
	}
	t.Skip(why)
}

// checkModule requires the module at path to be one the host accepts.
func checkModule(t *testing.T, path string) {
	t.Helper()
	wasm, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	eng, err := runtime.NewWazero(ctx, runtime.NewConfig().WithHostModules(plugin.HostModule()))
	if err != nil {
		t.Fatal(err)
	}
	defer eng.Close(ctx)
	if r, err := plugin.Check(ctx, eng, filepath.Base(path), wasm); err != nil || !r.OK() {
		t.Fatalf("%s: the host refuses it: %v %v", path, err, r.Problems)
	}
}

// fakeCheckout makes a directory that passes for a Sluice checkout, with
// the SDK files a build of lang reads, and returns it.
func fakeCheckout(t *testing.T, files map[string]string) string {
	t.Helper()
	root := filepath.Join(t.TempDir(), "checkout")
	write(t, root, map[string]string{"go.mod": "module github.com/sluicehq/sluice\n"})
	write(t, root, files)
	return root
}

// The tiny modules below are valid plugins that pass every row through
// (sluice_process returns OK without emitting: a filter dropping all):
// enough for the host to accept them.

const goSource = `package main

import "unsafe"

var buf [1 << 16]byte

func main() {}

//go:wasmexport sluice_abi_version
func abiVersion() int32 { return 1 }

//go:wasmexport sluice_alloc
func alloc(size int32) int32 {
	if int(size) > len(buf) {
		return 0
	}
	return int32(uintptr(unsafe.Pointer(&buf[0])))
}

//go:wasmexport sluice_process
func process(ptr, n int32) int32 { return 0 }
`

const cSDK = `#include <stdint.h>
#include "sluice.h"
static uint8_t buf[1 << 16];
__attribute__((export_name("sluice_abi_version"))) int32_t sluice_abi_version(void) { return SLUICE_ABI; }
__attribute__((export_name("sluice_alloc"))) uint8_t *sluice_alloc(int32_t size) { return size <= (int32_t)sizeof buf ? buf : 0; }
`

const cOp = `#include <stdint.h>
#include "sluice.h"
__attribute__((export_name("sluice_process"))) int32_t sluice_process(uint8_t *p, int32_t n) { (void)p; (void)n; return 0; }
`

const rustCargo = `[package]
name = "tiny-op"
version = "0.1.0"
edition = "2021"

[lib]
crate-type = ["cdylib"]
`

const rustLib = `static mut BUF: [u8; 65536] = [0; 65536];

#[no_mangle]
pub extern "C" fn sluice_abi_version() -> i32 { 1 }

#[no_mangle]
pub extern "C" fn sluice_alloc(size: i32) -> *mut u8 {
    if size as usize > 65536 { return core::ptr::null_mut(); }
    unsafe { BUF.as_mut_ptr() }
}

#[no_mangle]
pub extern "C" fn sluice_process(_ptr: i32, _len: i32) -> i32 { 0 }
`

const asSource = `const buf = memory.data(65536);
export function sluice_abi_version(): i32 { return 1; }
export function sluice_alloc(size: i32): usize { return size <= 65536 ? buf : 0; }
export function sluice_process(ptr: i32, len: i32): i32 { return 0; }
`

const watSource = `(module
  (memory (export "memory") 1)
  (func (export "sluice_abi_version") (result i32) i32.const 1)
  (func (export "sluice_alloc") (param i32) (result i32) i32.const 1024)
  (func (export "sluice_process") (param i32 i32) (result i32) i32.const 0))
`

func TestBuild(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		lang  Language
		tools []string
		files map[string]string
		sdk   map[string]string // the checkout's files
	}{
		{Go, []string{"go"}, map[string]string{"go.mod": "module tiny\n\ngo 1.24\n", "main.go": goSource}, nil},
		{C, []string{"clang", "wasm-ld"}, map[string]string{"op.c": cOp},
			map[string]string{"sdk/c/sluice.c": cSDK, "sdk/c/sluice.h": "#define SLUICE_ABI 1\n"}},
		{Rust, []string{"cargo", "rustc"}, map[string]string{"Cargo.toml": rustCargo, "src/lib.rs": rustLib}, nil},
		{AssemblyScript, []string{"node"}, map[string]string{"assembly/index.ts": asSource}, nil},
		{WAT, []string{"wat2wasm"}, map[string]string{"tiny.wat": watSource}, nil},
	} {
		t.Run(string(tc.lang), func(t *testing.T) {
			requireTool(t, tc.tools...)
			root := fakeCheckout(t, tc.sdk)
			if tc.lang == AssemblyScript {
				// The real checkout's AssemblyScript SDK has the compiler.
				real, err := FindRoot(".")
				if err != nil {
					t.Fatal(err)
				}
				if _, ok := findASC(t.TempDir(), real); !ok {
					skipOrFail(t, "the AssemblyScript compiler is not installed (npm install in sdk/assemblyscript)")
				}
				root = real
			}
			dir := filepath.Join(t.TempDir(), "tiny")
			write(t, dir, tc.files)
			res, err := Build(ctx, dir, Options{Root: root})
			if err != nil {
				t.Fatal(err)
			}
			if want := filepath.Join(dir, "tiny.wasm"); res.Output != want || res.Language != tc.lang {
				t.Errorf("Build wrote %s as %s, want %s as %s", res.Output, res.Language, want, tc.lang)
			}
			checkModule(t, res.Output)
			if tc.lang == Go || tc.lang == AssemblyScript {
				return // their compilers write the output themselves, as for WAT and C
			}
			// An explicit output, in a directory that does not exist yet.
			out := filepath.Join(t.TempDir(), "sub", "x.wasm")
			if res, err := Build(ctx, dir, Options{Root: root, Output: out, Language: tc.lang}); err != nil || res.Output != out {
				t.Fatalf("Build -o %s: %+v, %v", out, res, err)
			}
			checkModule(t, out)
		})
	}
}

// A compilation error is an *Error carrying the compiler's message.
func TestBuildFailure(t *testing.T) {
	requireTool(t, "wat2wasm")
	dir := filepath.Join(t.TempDir(), "bad")
	write(t, dir, map[string]string{"bad.wat": "(module (func (export \"f\") (result i32) i64.const 1))\n"})
	_, err := Build(context.Background(), dir, Options{})
	var be *Error
	if !errors.Is(err, ErrFailed) || !errors.As(err, &be) || be.Language != WAT || !strings.Contains(be.Output, "bad.wat") {
		t.Fatalf("Build of a bad module: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "bad.wasm")); err == nil {
		t.Error("a failed build left a module behind")
	}
}

func TestBuildRustNotCdylib(t *testing.T) {
	requireTool(t, "cargo", "rustc")
	dir := filepath.Join(t.TempDir(), "notcdylib")
	write(t, dir, map[string]string{"Cargo.toml": strings.Replace(rustCargo, `crate-type = ["cdylib"]`, `crate-type = ["rlib"]`, 1), "src/lib.rs": rustLib})
	_, err := Build(context.Background(), dir, Options{})
	if !errors.Is(err, ErrFailed) || !strings.Contains(err.Error(), "cdylib") {
		t.Fatalf("Build of an rlib crate: %v", err)
	}
}

// A missing tool is a *ToolchainError naming the tool, its package and the
// install script.
func TestToolchainMissing(t *testing.T) {
	empty := t.TempDir()
	for _, tc := range []struct {
		lang  Language
		env   map[string]string
		files map[string]string
		tool  string
		pkg   string
	}{
		{Go, map[string]string{"PATH": empty, "GOROOT": ""}, map[string]string{"main.go": "package main\n"}, "go", "go.dev/dl"},
		{C, map[string]string{"SLUICE_CLANG": filepath.Join(empty, "clang")}, map[string]string{"op.c": ""}, "clang", "wasi-libc"},
		{Rust, map[string]string{"SLUICE_CARGO": filepath.Join(empty, "cargo")}, map[string]string{"Cargo.toml": rustCargo}, "cargo", "libstd-rust-dev-wasm32"},
		{Rust, map[string]string{"SLUICE_RUSTC": filepath.Join(empty, "rustc")}, map[string]string{"Cargo.toml": rustCargo}, "rustc", "rustc"},
		{AssemblyScript, map[string]string{"PATH": empty}, map[string]string{"assembly/index.ts": ""}, "asc", "assemblyscript@" + ASCVersion},
		{WAT, map[string]string{"SLUICE_WAT2WASM": filepath.Join(empty, "wat2wasm")}, map[string]string{"op.wat": ""}, "wat2wasm", "wabt"},
	} {
		t.Run(string(tc.lang)+"/"+tc.tool, func(t *testing.T) {
			for k, v := range tc.env {
				t.Setenv(k, v)
			}
			// An empty checkout: the AssemblyScript SDK has no compiler.
			root := fakeCheckout(t, map[string]string{"sdk/c/sluice.c": ""})
			dir := filepath.Join(t.TempDir(), "op")
			write(t, dir, tc.files)
			_, err := Build(context.Background(), dir, Options{Root: root, Language: tc.lang})
			var te *ToolchainError
			if !errors.Is(err, ErrToolchainMissing) || !errors.As(err, &te) {
				t.Fatalf("Build: %v, want a *ToolchainError", err)
			}
			msg := err.Error()
			for _, want := range []string{tc.tool, tc.pkg, InstallScript} {
				if !strings.Contains(msg, want) {
					t.Errorf("error %q lacks %q", msg, want)
				}
			}
		})
	}
}

// An incomplete C toolchain (no wasi-libc, no wasm-ld) is recognised from
// clang's output.
func TestClangFailureDiagnosis(t *testing.T) {
	b := &builder{ctx: context.Background(), lang: C, cmd: []string{"clang"}}
	for _, tc := range []struct{ output, tool string }{
		{`op.c:1:10: fatal error: 'stdlib.h' file not found`, "wasi-libc"},
		{`wasm-ld: error: cannot open crt1-reactor.o: No such file or directory`, "wasi-libc"},
		{`clang: error: unable to execute command: Executable "wasm-ld" doesn't exist!`, "wasm-ld"},
		{`wasm-ld: error: cannot open /usr/lib/llvm-14/lib/clang/14.0.6/lib/wasi/libclang_rt.builtins-wasm32.a: No such file or directory`, "libclang_rt"},
	} {
		err := b.clangFailed(tc.output, errors.New("exit status 1"))
		if !errors.Is(err, ErrToolchainMissing) || !strings.Contains(err.Error(), tc.tool) {
			t.Errorf("%s: %v, want a missing %s", tc.output, err, tc.tool)
		}
	}
	if err := b.clangFailed("op.c:3:1: error: expected ';'", errors.New("exit status 1")); !errors.Is(err, ErrFailed) {
		t.Errorf("a syntax error: %v", err)
	}
}

// Cancelling the context stops the build.
func TestBuildCancelled(t *testing.T) {
	requireTool(t, "wat2wasm")
	dir := filepath.Join(t.TempDir(), "op")
	write(t, dir, map[string]string{"op.wat": watSource})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := Build(ctx, dir, Options{}); !errors.Is(err, context.Canceled) {
		t.Fatalf("Build with a cancelled context: %v", err)
	}
}

// A module whose sluice_kinds export names its kinds gets them declared
// in its sluice.kinds section; one whose sluice_kinds names none fails
// the build with what it logged, and leaves no module behind.
func TestBuildDeclaresKinds(t *testing.T) {
	requireTool(t, "wat2wasm")
	ctx := context.Background()
	module := func(kinds int, log string) string {
		return `(module
  (import "sluice" "log" (func $log (param i32 i32 i32)))
  (memory (export "memory") 1)
  (data (i32.const 16) "` + log + `")
  (func (export "sluice_abi_version") (result i32) i32.const 1)
  (func (export "sluice_kinds") (result i32)
    (call $log (i32.const 3) (i32.const 16) (i32.const ` + strconv.Itoa(len(log)) + `))
    i32.const ` + strconv.Itoa(kinds) + `)
  (func (export "sluice_alloc") (param i32) (result i32) i32.const 1024)
  (func (export "sluice_process") (param i32 i32) (result i32) i32.const 0))
`
	}
	dir := filepath.Join(t.TempDir(), "counter")
	write(t, dir, map[string]string{"counter.wat": module(8, "")})
	res, err := Build(ctx, dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	wasm, err := os.ReadFile(res.Output)
	if err != nil {
		t.Fatal(err)
	}
	if want := []plugin.Kind{plugin.KindKeyed}; !slices.Equal(res.Kinds, want) || !slices.Equal(plugin.DeclaredKinds(wasm), want) {
		t.Errorf("kinds %v, declared in the module %v; want %v", res.Kinds, plugin.DeclaredKinds(wasm), want)
	}
	checkModule(t, res.Output)

	dir = filepath.Join(t.TempDir(), "none")
	write(t, dir, map[string]string{"none.wat": module(0, "no handler registered")})
	_, err = Build(ctx, dir, Options{})
	var le *plugin.LoadError
	if !errors.As(err, &le) || !strings.Contains(err.Error(), `plugin "none.wasm": no handler registered`) {
		t.Errorf("Build of a plugin without a handler: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "none.wasm")); err == nil {
		t.Error("a failed build left a module behind")
	}
}
