package runtime

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// cacheEntries returns the size of every file under dir, by path.
func cacheEntries(t *testing.T, dir string) map[string]int64 {
	t.Helper()
	sizes := map[string]int64{}
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		sizes[path] = info.Size()
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return sizes
}

// TestDamagedCacheEntryIsReplaced cuts every compilation cache entry to
// half its size, as a write cut short would, and checks that the module
// still compiles and runs, and that its entry is whole again: a damaged
// entry costs a compile, not a failure or a slower way of running.
func TestDamagedCacheEntryIsReplaced(t *testing.T) {
	ctx := context.Background()
	for _, cfg := range []Config{NewConfig(), NewConfig().WithCallTimeout(0)} {
		dir := t.TempDir()
		cfg = cfg.WithCacheDir(dir)
		first := newEngine(t, cfg)
		compile(t, first, "raw", rawModule())
		if err := first.Close(ctx); err != nil {
			t.Fatal(err)
		}
		whole := cacheEntries(t, dir)
		if len(whole) == 0 {
			t.Fatal("no cache entry after a compile")
		}
		for path, size := range whole {
			if err := os.Truncate(path, size/2); err != nil {
				t.Fatal(err)
			}
		}

		second := newEngine(t, cfg)
		m, err := second.Compile(ctx, "raw", rawModule())
		if err != nil {
			t.Fatalf("call timeout %v: compiling with a damaged cache entry: %v", cfg.CallTimeout(), err)
		}
		if got := int32(call(t, instantiate(t, m), "div", 12, 4)); got != 3 {
			t.Errorf("div(12, 4) = %d", got)
		}
		if got := cacheEntries(t, dir); len(got) != len(whole) {
			t.Errorf("call timeout %v: cache holds %v after the repair, want %v", cfg.CallTimeout(), got, whole)
		} else {
			for path, size := range whole {
				if got[path] != size {
					t.Errorf("call timeout %v: entry %s has %d bytes after the repair, want %d", cfg.CallTimeout(), path, got[path], size)
				}
			}
		}
	}
}

// TestUnusableCacheIsNotTheModulesFault replaces the compilation cache
// directory with a regular file, under a running engine and before one is
// made: the failure wraps ErrCache and names the path, and is not a
// compile error, which would say the module is invalid.
func TestUnusableCacheIsNotTheModulesFault(t *testing.T) {
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "cache")
	cfg := NewConfig().WithCacheDir(dir)
	e := newEngine(t, cfg)
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dir, []byte("not a directory"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := e.Compile(ctx, "raw", rawModule())
	if !errors.Is(err, ErrCache) || errors.Is(err, ErrCompile) || !strings.Contains(err.Error(), dir) {
		t.Errorf("compiling with the cache directory a file: %v; want ErrCache naming %s, not ErrCompile", err, dir)
	}
	if !errors.Is(err, fs.ErrNotExist) && !strings.Contains(err.Error(), "not a directory") {
		t.Errorf("the error does not carry the system's: %v", err)
	}

	_, err = newEngineErr(cfg)
	if !errors.Is(err, ErrCache) || !strings.Contains(err.Error(), dir) {
		t.Errorf("making an engine whose cache directory is a file: %v; want ErrCache naming %s", err, dir)
	}
}

// TestCacheSharedByEngines compiles one module on several engines at once
// into one cache directory, as pipelines sharing a cache do: each gets a
// working module.
func TestCacheSharedByEngines(t *testing.T) {
	ctx := context.Background()
	cfg := NewConfig().WithCacheDir(t.TempDir())
	var wg sync.WaitGroup
	for range 4 {
		e := newEngine(t, cfg)
		wg.Go(func() {
			m, err := e.Compile(ctx, "raw", rawModule())
			if err != nil {
				t.Error(err)
				return
			}
			inst, err := m.Instantiate(ctx)
			if err != nil {
				t.Error(err)
				return
			}
			defer inst.Close(ctx)
			f, ok := inst.Func("div")
			stack := []uint64{12, 4}
			if !ok || f.Call(ctx, stack) != nil || stack[0] != 3 {
				t.Errorf("div(12, 4) on a module from the shared cache: %v", stack)
			}
		})
	}
	wg.Wait()
}
