package runtime

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
)

// builtEngines lists the engines of this build.
func builtEngines() []string {
	var out []string
	for _, name := range Engines() {
		if CheckEngine(name) == nil {
			out = append(out, name)
		}
	}
	return out
}

// testCompiler compiles in a child process of this test binary, which
// TestMain turns into ServeCompile.
func testCompiler(t *testing.T) *ProcessCompiler {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return &ProcessCompiler{Path: exe, Nice: LowestNice}
}

// countingCompiler counts the compiles it is asked for.
type countingCompiler struct {
	Compiler
	calls atomic.Int32
}

func (c *countingCompiler) Compile(ctx context.Context, engine string, cfg Config, name string, wasm []byte) error {
	c.calls.Add(1)
	return c.Compiler.Compile(ctx, engine, cfg, name, wasm)
}

// cacheFiles lists the files under dir, relative to it.
func cacheFiles(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, err := filepath.Rel(dir, path)
		out = append(out, rel)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// A module compiled in the child is in the cache under the key the
// engine looks for: the engine's own compile then adds no entry (with the
// call timeout's instrumentation and a table limit, which change the
// bytes wazero compiles), and the module runs.
func TestProcessCompilerFillsTheEnginesCache(t *testing.T) {
	ctx := context.Background()
	for _, name := range builtEngines() {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			cfg := NewConfig().WithCacheDir(dir).WithTableLimit(1000)
			pc := testCompiler(t)
			if err := pc.Compile(ctx, name, cfg, "raw", rawModule()); err != nil {
				t.Fatal(err)
			}
			written := cacheFiles(t, dir)
			if len(written) == 0 {
				t.Fatal("the child wrote nothing into the cache")
			}
			cc := &countingCompiler{Compiler: pc}
			e, err := New(ctx, name, cfg.WithCompiler(cc))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = e.Close(ctx) })
			for range 2 {
				inst := instantiate(t, compile(t, e, "raw", rawModule()))
				if got := int32(call(t, inst, "div", 42, 6)); got != 7 {
					t.Fatalf("div(42, 6) = %d", got)
				}
			}
			if n := cc.calls.Load(); n != 1 {
				t.Errorf("the compiler was asked %d times for one module, want once", n)
			}
			if got := cacheFiles(t, dir); !slices.Equal(got, written) {
				t.Errorf("the engine wrote into the cache after the child had compiled the module (another key?):\nchild: %v\nafter: %v", written, got)
			}
		})
	}
}

// A module the child cannot compile fails there with the module's name;
// the engine then compiles it itself and fails as it would without a
// compiler.
func TestProcessCompilerFailureLeavesTheEnginesError(t *testing.T) {
	ctx := context.Background()
	garbage := []byte("not wasm at all")
	for _, name := range builtEngines() {
		t.Run(name, func(t *testing.T) {
			cfg := NewConfig().WithCacheDir(t.TempDir())
			err := testCompiler(t).Compile(ctx, name, cfg, "garbage.wasm", garbage)
			if err == nil || !strings.Contains(err.Error(), `"garbage.wasm"`) || !strings.Contains(err.Error(), "compile error") {
				t.Fatalf("child compile of garbage: %v, want an error naming the module and its compile error", err)
			}
			e, err := New(ctx, name, cfg.WithCompiler(testCompiler(t)))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = e.Close(ctx) })
			_, err = e.Compile(ctx, "garbage.wasm", garbage)
			checkError(t, asError(t, err), KindCompile, "garbage.wasm", "", `plugin "garbage.wasm": compile error`)
		})
	}
}

// A child that cannot start leaves the compile to the engine.
func TestProcessCompilerThatCannotStart(t *testing.T) {
	ctx := context.Background()
	cfg := NewConfig().WithCacheDir(t.TempDir())
	pc := &ProcessCompiler{Path: filepath.Join(t.TempDir(), "no-such-program")}
	err := pc.Compile(ctx, EngineWazero, cfg, "raw", rawModule())
	if !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("compile with a missing program: %v, want an error wrapping fs.ErrNotExist", err)
	}
	e, err := New(ctx, EngineWazero, cfg.WithCompiler(pc))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = e.Close(ctx) })
	inst := instantiate(t, compile(t, e, "raw", rawModule()))
	if got := int32(call(t, inst, "div", 42, 6)); got != 7 {
		t.Fatalf("div(42, 6) = %d", got)
	}
}

// Without a cache directory there is nowhere for the child to compile
// into: the configuration's compiler is not used.
func TestCompilerNeedsACache(t *testing.T) {
	ctx := context.Background()
	cc := &countingCompiler{Compiler: testCompiler(t)}
	e, err := New(ctx, EngineWazero, NewConfig().WithCompiler(cc))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = e.Close(ctx) })
	compile(t, e, "raw", rawModule())
	if n := cc.calls.Load(); n != 0 {
		t.Errorf("the compiler was asked %d times with no cache", n)
	}
	if err := cc.Compiler.Compile(ctx, EngineWazero, NewConfig(), "raw", rawModule()); err == nil {
		t.Error("a child compile without a cache directory succeeded")
	}
}
