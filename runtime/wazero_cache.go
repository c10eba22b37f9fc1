package runtime

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/tetratelabs/wazero"
)

// wazero's compilation cache, under Config.CacheDir, is a directory per
// wazero version and platform (wazero-<version>-<arch>-<os>) holding one
// file per compiled module, named by a hash of the module's bytes, its
// compile options and the CPU's features. wazero writes an entry to a
// temporary file, syncs it and renames it into place, so a process killed
// while writing leaves at most a temporary file, never half an entry, and
// an entry whose write returned is there for the next process. The
// engine adds what wazero leaves to its embedder: a cache that cannot be
// read or written is an error of its own (ErrCache), not the module's; an
// entry that is damaged (by a full disk at the wrong time, or a hand) is
// replaced rather than failing the compile; and temporary files a killed
// process left are removed.

// staleAfter is the age past which a temporary file in the cache is one
// that a killed process left, not one that another process is writing.
const staleAfter = time.Hour

// scratchPrefix begins the name of the directory, in the cache
// directory, where the engine compiles a module aside.
const scratchPrefix = ".scratch-"

// runtimeConfig is the configuration of the engine's runtimes, but for
// the compilation cache.
func (e *wazeroEngine) runtimeConfig(closeOnDone bool) wazero.RuntimeConfig {
	// NewRuntimeConfig picks the compiler where the platform supports it and
	// the interpreter elsewhere.
	return wazero.NewRuntimeConfig().
		WithMemoryLimitPages(e.cfg.MemoryLimitPages()).
		WithCloseOnContextDone(closeOnDone)
}

// compileModule compiles bin, which the engine calls name, on rt, one of
// its runtimes, through the compilation cache when there is one. A cache
// that cannot be read or written fails the compile with ErrCache. When
// wazero fails otherwise, bin is compiled again aside, into a cache of
// its own: if that fails too, the failure is the module's, and wazero's
// first error is returned; if it succeeds, the engine's cache entry for
// bin was damaged, and the entry just written replaces it.
func (e *wazeroEngine) compileModule(ctx context.Context, rt wazero.Runtime, name string, bin []byte) (wazero.CompiledModule, error) {
	cm, err := rt.CompileModule(ctx, bin)
	if err == nil || e.cache == nil {
		return cm, err
	}
	if fileError(err) {
		return nil, e.cacheError(name, err)
	}
	closeOnDone := rt != e.rt || (e.cfg.CallTimeout() > 0 && !e.instrument)
	scratch, entry, aerr := e.compileAside(ctx, closeOnDone, bin)
	if scratch != "" {
		defer os.RemoveAll(scratch)
	}
	switch {
	case aerr != nil && fileError(aerr):
		return nil, e.cacheError(name, aerr)
	case aerr != nil:
		return nil, err // the module's own failure, as wazero reported it first
	}
	dir := e.cfg.CacheDir()
	slog.WarnContext(ctx, "runtime: replacing a damaged compilation cache entry", "module", name,
		"entry", filepath.Join(dir, entry), "err", err)
	if err := os.Rename(filepath.Join(scratch, entry), filepath.Join(dir, entry)); err != nil {
		return nil, e.cacheError(name, err)
	}
	cm, err = rt.CompileModule(ctx, bin)
	if err != nil {
		return nil, e.cacheError(name, err)
	}
	return cm, nil
}

// compileAside compiles bin on a runtime made for it, configured as the
// engine's runtimes are (closeOnDone as the one it stands in for), with a
// compilation cache in scratch, a new directory in the engine's cache
// directory. It returns scratch, for the caller to remove, and the path of
// the entry written there relative to scratch, which is where the engine's
// own entry for bin is relative to its cache directory.
func (e *wazeroEngine) compileAside(ctx context.Context, closeOnDone bool, bin []byte) (scratch, entry string, err error) {
	scratch, err = os.MkdirTemp(e.cfg.CacheDir(), scratchPrefix)
	if err != nil {
		return "", "", err
	}
	cache, err := wazero.NewCompilationCacheWithDir(scratch)
	if err != nil {
		return scratch, "", err
	}
	rt := wazero.NewRuntimeWithConfig(ctx, e.runtimeConfig(closeOnDone).WithCompilationCache(cache))
	_, err = rt.CompileModule(ctx, bin)
	_ = rt.Close(ctx)
	_ = cache.Close(ctx)
	if err != nil {
		return scratch, "", err
	}
	written, err := filepath.Glob(filepath.Join(scratch, "*", "*"))
	if err != nil || len(written) != 1 {
		return scratch, "", fmt.Errorf("compiling aside in %s wrote %d cache entries, not one (%v)", scratch, len(written), err)
	}
	entry, err = filepath.Rel(scratch, written[0])
	return scratch, entry, err
}

// cacheError is the error of a compile that the compilation cache failed.
func (e *wazeroEngine) cacheError(name string, err error) error {
	return fmt.Errorf("runtime: compiling %q: %w in %s: %w", name, ErrCache, e.cfg.CacheDir(), err)
}

// fileError reports whether err is the operating system's failure to
// read or write a file, which no module can cause.
func fileError(err error) bool {
	var pe *fs.PathError
	var le *os.LinkError
	var se *os.SyscallError
	return errors.As(err, &pe) || errors.As(err, &le) || errors.As(err, &se)
}

// removeStale removes, from the compilation cache in dir, the temporary
// files and scratch directories older than staleAfter: those of processes
// killed while writing them. Failures are ignored: the files are only
// clutter.
func removeStale(dir string) {
	old := time.Now().Add(-staleAfter)
	stale := func(path string) bool {
		st, err := os.Lstat(path)
		return err == nil && st.ModTime().Before(old)
	}
	scratch, _ := filepath.Glob(filepath.Join(dir, scratchPrefix+"*"))
	for _, p := range scratch {
		if stale(p) {
			_ = os.RemoveAll(p)
		}
	}
	temps, _ := filepath.Glob(filepath.Join(dir, "wazero-*", "*.tmp"))
	for _, p := range temps {
		if stale(p) {
			_ = os.Remove(p)
		}
	}
}
