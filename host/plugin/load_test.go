package plugin

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/runtime"
)

func TestParseKind(t *testing.T) {
	for _, k := range []Kind{KindMap, KindFilter, KindFlatMap, KindKeyed, KindTransactional} {
		got, err := ParseKind(string(k))
		if err != nil || got != k {
			t.Errorf("ParseKind(%q) = %q, %v", k, got, err)
		}
	}
	if _, err := ParseKind("transaction"); !errors.Is(err, ErrUnknownKind) {
		t.Errorf("ParseKind(transaction) error = %v, want ErrUnknownKind", err)
	}
	if !KindTransactional.Transactional() || KindKeyed.Transactional() || KindTransactional.Stateful() {
		t.Error("only transactional operators are transactional, and they have no keyed state")
	}
	if !KindKeyed.Stateful() || KindMap.Stateful() || KindFilter.Stateful() || KindFlatMap.Stateful() {
		t.Error("only keyed operators are stateful")
	}
}

func TestLoadAcceptsEveryKind(t *testing.T) {
	eng := newEngine(t, engineConfig())
	ctx := context.Background()
	for _, k := range []Kind{KindMap, KindFilter, KindFlatMap, KindKeyed} {
		p, err := Load(ctx, eng, "ops.wasm", guest(t, "ops"), k)
		if err != nil {
			t.Fatalf("Load as %s: %v", k, err)
		}
		if p.Name() != "ops.wasm" || p.Kind() != k || p.Limits() != DefaultLimits() {
			t.Errorf("plugin = %q %q %+v", p.Name(), p.Kind(), p.Limits())
		}
		if err := p.Close(ctx); err != nil {
			t.Fatal(err)
		}
	}
}

func TestLoadRefusesUnknownKind(t *testing.T) {
	eng := newEngine(t, engineConfig())
	_, err := Load(context.Background(), eng, "ops.wasm", guest(t, "ops"), "windowed")
	if !errors.Is(err, ErrUnknownKind) {
		t.Fatalf("err = %v, want ErrUnknownKind", err)
	}
}

// loadError loads wasm as kind and returns the *LoadError it must fail with.
func loadError(t *testing.T, eng runtime.Engine, name string, wasm []byte, kind Kind) *LoadError {
	t.Helper()
	p, err := Load(context.Background(), eng, name, wasm, kind)
	if err == nil {
		_ = p.Close(context.Background())
		t.Fatal("Load succeeded, want a *LoadError")
	}
	if p != nil {
		t.Error("Load returned a plugin with its error")
	}
	var le *LoadError
	if !errors.As(err, &le) {
		t.Fatalf("err = %T %v, want *LoadError", err, err)
	}
	if le.Plugin != name {
		t.Errorf("LoadError.Plugin = %q, want %q", le.Plugin, name)
	}
	return le
}

func TestLoadRefusesOtherABIVersion(t *testing.T) {
	eng := newEngine(t, engineConfig())
	le := loadError(t, eng, "x.wasm", guest(t, "version2"), KindMap)
	const want = `plugin "x.wasm": module declares ABI version 2, this host speaks version 1`
	if le.Error() != want {
		t.Errorf("error = %q\nwant    %q", le.Error(), want)
	}
}

func TestLoadListsEveryProblem(t *testing.T) {
	eng := newEngine(t, engineConfig())
	le := loadError(t, eng, "badabi.wasm", guest(t, "badabi"), KindKeyed)
	want := []string{
		"missing export sluice_process (i32, i32) -> i32, required by keyed operators",
		"export sluice_alloc has signature (i64) -> i32, want (i32) -> i32",
		`import env.clock () -> i64: module "env" is not provided; plugins may import only from "sluice" and "wasi_snapshot_preview1"`,
		"import sluice.emit has signature (i32), want (i32, i32)",
		"import sluice.teleport: the host has no such function (it provides emit, reject, table_id, state_get, state_put, state_delete, log, txn_plan, txn_get, txn_put, txn_delete)",
	}
	for _, w := range want {
		if !slices.Contains(le.Problems, w) {
			t.Errorf("problems lack %q", w)
		}
	}
	if len(le.Problems) != len(want) {
		t.Errorf("got %d problems, want %d:\n%s", len(le.Problems), len(want), strings.Join(le.Problems, "\n"))
	}
	if !strings.HasPrefix(le.Error(), `plugin "badabi.wasm": 5 problems: `) {
		t.Errorf("error = %q", le.Error())
	}
}

func TestLoadStructuralProblems(t *testing.T) {
	eng := newEngine(t, engineConfig())
	tests := []struct {
		name string
		mod  wasmModule
		want string
	}{
		{"no memory", wasmModule{funcs: reactor(1)},
			`missing export memory: the module must export its linear memory as "memory"`},
		{"no process", wasmModule{memory: true, funcs: reactor(1)[:2]},
			"missing export sluice_process (i32, i32) -> i32, required by map operators"},
		{"no alloc", wasmModule{memory: true, funcs: slices.Delete(reactor(1), 1, 2)},
			"missing export sluice_alloc (i32) -> i32, required by map operators"},
		{"no version", wasmModule{memory: true, funcs: reactor(1)[1:]},
			"missing export sluice_abi_version () -> i32, required by map operators"},
		{"wrong process signature", wasmModule{memory: true, funcs: append(reactor(1)[:2],
			wasmFunc{export: "sluice_process", sig: runtime.Signature{Params: []runtime.ValueType{runtime.I32}}})},
			"export sluice_process has signature (i32), want (i32, i32) -> i32"},
		{"wrong configure signature", wasmModule{memory: true, funcs: append(reactor(1),
			wasmFunc{export: "sluice_configure", sig: sig(1, 1)})},
			"export sluice_configure has signature (i32) -> i32, want (i32, i32) -> i32"},
		{"command", wasmModule{memory: true, funcs: append(reactor(1), wasmFunc{export: "_start", sig: sig(0, 0)})},
			"module is a WASI command (it exports _start), not a reactor: rebuild it as a reactor; for Go: GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared"},
		{"version 7", wasmModule{memory: true, funcs: reactor(7)},
			"module declares ABI version 7, this host speaks version 1"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			le := loadError(t, eng, "x.wasm", tc.mod.bytes(), KindMap)
			if len(le.Problems) != 1 || le.Problems[0] != tc.want {
				t.Errorf("problems = %q\nwant       [%q]", le.Problems, tc.want)
			}
		})
	}
}

func TestLoadAcceptsMinimalReactor(t *testing.T) {
	eng := newEngine(t, engineConfig())
	p, err := Load(context.Background(), eng, "min.wasm", wasmModule{memory: true, funcs: reactor(1)}.bytes(), KindFilter)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
}

func TestLoadRefusesGarbage(t *testing.T) {
	eng := newEngine(t, engineConfig())
	le := loadError(t, eng, "junk.wasm", []byte("#!/bin/sh\necho hi\n"), KindMap)
	const want = `plugin "junk.wasm": not a WebAssembly module: 18 bytes that do not begin with the \0asm magic number`
	if le.Error() != want {
		t.Errorf("error = %q\nwant    %q", le.Error(), want)
	}
	if !errors.Is(le, runtime.ErrCompile) {
		t.Error("LoadError does not wrap the compile error")
	}
	// Valid magic, broken body.
	le = loadError(t, eng, "cut.wasm", wasmModule{memory: true, funcs: reactor(1)}.bytes()[:20], KindMap)
	if !strings.HasPrefix(le.Problems[0], "not a valid WebAssembly module: ") {
		t.Errorf("problem = %q", le.Problems[0])
	}
}

func TestLoadWithoutHostModule(t *testing.T) {
	eng := newEngine(t, runtime.NewConfig().WithCacheDir(env.cacheDir))
	le := loadError(t, eng, "ops.wasm", guest(t, "ops"), KindMap)
	if len(le.Problems) != 1 || !strings.Contains(le.Problems[0], "is plugin.HostModule() registered with the engine?") {
		t.Errorf("problems = %q", le.Problems)
	}
	if !errors.Is(le, runtime.ErrLink) {
		t.Error("LoadError does not wrap the link error")
	}
}

func TestCheckGoodModule(t *testing.T) {
	eng := newEngine(t, engineConfig())
	wasm := guest(t, "ops")
	r := mustCheck(context.Background(), t, eng, "ops.wasm", wasm)
	if !r.OK() {
		t.Fatalf("problems: %q", r.Problems)
	}
	sum := sha256.Sum256(wasm)
	if r.Name != "ops.wasm" || r.Size != len(wasm) || r.SHA256 != hex.EncodeToString(sum[:]) {
		t.Errorf("identity = %q %d %s", r.Name, r.Size, r.SHA256)
	}
	if r.ABIVersion != 1 || !r.Memory || r.Command {
		t.Errorf("ABIVersion %d, Memory %v, Command %v", r.ABIVersion, r.Memory, r.Command)
	}
	if !slices.Equal(r.Kinds, []Kind{KindMap, KindFilter, KindFlatMap, KindKeyed}) {
		t.Errorf("kinds = %v", r.Kinds)
	}
	exports := make([]string, len(r.Exports))
	for i, e := range r.Exports {
		exports[i] = e.String()
	}
	for _, w := range []string{"sluice_process (i32, i32) -> i32", "sluice_configure (i32, i32) -> i32", "_initialize ()"} {
		if !slices.Contains(exports, w) {
			t.Errorf("exports %q lack %q", exports, w)
		}
	}
	imports := make([]string, len(r.Imports))
	for i, e := range r.Imports {
		imports[i] = e.String()
	}
	if !slices.Contains(imports, "sluice.state_get (i32, i32, i32, i32, i32) -> i32") {
		t.Errorf("imports %q lack state_get", imports)
	}
	if r.KindsDeclared || len(r.Notes) != 1 || !strings.Contains(r.Notes[0], "only keyed operators have state") {
		t.Errorf("declared %v, notes = %q", r.KindsDeclared, r.Notes)
	}
}

func TestCheckCommandModule(t *testing.T) {
	eng := newEngine(t, engineConfig())
	wasm := wasmModule{memory: true, funcs: []wasmFunc{{export: "_start", sig: sig(0, 0)}}}.bytes()
	r := mustCheck(context.Background(), t, eng, "cmd.wasm", wasm)
	if !r.Command {
		t.Error("not recognised as a command module")
	}
	if len(r.Kinds) != 0 {
		t.Errorf("kinds = %v, want none", r.Kinds)
	}
	found := false
	for _, p := range r.Problems {
		found = found || strings.Contains(p, "-buildmode=c-shared")
	}
	if !found {
		t.Errorf("problems do not say how to rebuild: %q", r.Problems)
	}
}

func TestCheckGarbage(t *testing.T) {
	eng := newEngine(t, engineConfig())
	wasm := []byte{0xde, 0xad, 0xbe, 0xef}
	r := mustCheck(context.Background(), t, eng, "junk", wasm)
	if r.OK() || r.Size != 4 || len(r.SHA256) != 64 {
		t.Fatalf("report = %+v", r)
	}
	if !strings.HasPrefix(r.Problems[0], "not a WebAssembly module") {
		t.Errorf("problems = %q", r.Problems)
	}
}

func TestCheckWrongVersion(t *testing.T) {
	eng := newEngine(t, engineConfig())
	r := mustCheck(context.Background(), t, eng, "v2.wasm", guest(t, "version2"))
	if r.ABIVersion != 2 || r.OK() || len(r.Kinds) != 0 {
		t.Errorf("report: version %d, problems %q, kinds %v", r.ABIVersion, r.Problems, r.Kinds)
	}
}

// mustCheck is Check, failing the test if the host fails.
func mustCheck(ctx context.Context, t testing.TB, eng runtime.Engine, name string, wasm []byte) Report {
	t.Helper()
	r, err := Check(ctx, eng, name, wasm)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// TestCacheFailureIsNotAnInvalidModule makes the compilation cache
// unusable (its directory replaced by a regular file, as a full disk or
// lost permissions would) under an engine: Load and Check fail with the
// runtime's ErrCache, naming the path, and neither calls the module
// invalid, which the swap API would answer with 422.
func TestCacheFailureIsNotAnInvalidModule(t *testing.T) {
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "cache")
	eng := newEngine(t, engineConfig().WithCacheDir(dir))
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dir, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	wasm := guest(t, "ops")
	_, err := Load(ctx, eng, "ops.wasm", wasm, KindMap)
	var le *LoadError
	if errors.As(err, &le) || !errors.Is(err, runtime.ErrCache) || !strings.Contains(err.Error(), dir) ||
		strings.Contains(err.Error(), "not a valid WebAssembly module") {
		t.Errorf("Load with an unusable cache: %v; want runtime.ErrCache naming %s, not a *LoadError", err, dir)
	}
	r, err := Check(ctx, eng, "ops.wasm", wasm)
	if !errors.Is(err, runtime.ErrCache) || len(r.Problems) != 0 {
		t.Errorf("Check with an unusable cache: %v, problems %q; want runtime.ErrCache and no problems", err, r.Problems)
	}
}
