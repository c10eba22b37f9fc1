package runtime

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"strings"
	"sync"
	"time"
)

// A Compiler compiles modules into an engine's compilation cache on the
// engine's behalf, outside the engine: an engine configured with one
// (Config.WithCompiler, with a cache directory) asks it first for every
// module it has not yet had compiled that way, and then compiles the
// module itself, which by then only loads the cached code. A host that
// compiles a new module while a pipeline runs uses it to keep the
// compile's CPU time away from the pipeline (ProcessCompiler).
//
// The engine's own compile stays the authority: when the Compiler fails
// (the module is invalid, the child could not start), the engine logs it
// and compiles the module as it would without one, so errors are the
// same with or without a Compiler.
type Compiler interface {
	// Compile compiles wasm, which the engine calls name, as an engine
	// named engine (EngineWazero, EngineWasmtime) configured with cfg
	// would, into cfg's compilation cache directory.
	Compile(ctx context.Context, engine string, cfg Config, name string, wasm []byte) error
}

// WithCompiler returns the configuration with c compiling modules into
// the compilation cache before the engine loads them (see Compiler). It
// has no effect without a cache directory.
func (c Config) WithCompiler(comp Compiler) Config { c.compiler = comp; return c }

// ChildCompileEnv is the environment variable that tells a process
// started by a ProcessCompiler to serve one compile (ServeCompile) instead
// of doing what it otherwise does.
const ChildCompileEnv = "SLUICE_COMPILE_CHILD"

// LowestNice is the niceness of the lowest CPU priority: a process at it
// gets a CPU only when the others leave it one (about 1.5% of a core
// against a process at niceness 0 on Linux).
const LowestNice = 19

// ProcessCompiler compiles each module in a child process, an executable
// that serves the compile with ServeCompile when it finds ChildCompileEnv
// set (the sluice binary does), started at a low CPU priority on Linux. The
// child writes its result into the compilation cache on disk, which the
// parent's engine then reads, so the compile's CPU time, memory and
// garbage stay out of the parent.
type ProcessCompiler struct {
	// Path is the executable; Args are its arguments (Path is not repeated
	// in them).
	Path string
	Args []string
	// Nice is the niceness the child runs at, 0 to 19 (LowestNice); on
	// Linux only (elsewhere the child runs at the parent's priority). A
	// parent that already runs nicer than Nice starts the child at its
	// own.
	Nice int
	// Env is added to the child's environment (the parent's, with
	// ChildCompileEnv set); GOMAXPROCS=1 is the default, since a compile
	// runs on one goroutine.
	Env []string
}

// compileRequest is what a ProcessCompiler sends its child: this, as one
// line of JSON, then the module's bytes.
type compileRequest struct {
	Engine           string `json:"engine"`
	Name             string `json:"name"`
	CacheDir         string `json:"cache_dir"`
	MemoryLimitPages uint32 `json:"memory_limit_pages"`
	TableLimit       uint32 `json:"table_limit"`
	CallTimeoutNs    int64  `json:"call_timeout_ns"`
	Size             int    `json:"size"`
	// Nice is the niceness the child's threads take (lowerOwnPriority).
	Nice int `json:"nice"`
}

// Compile runs the child and waits for it to compile wasm into cfg's
// cache. Its error holds the end of the child's standard error.
func (p *ProcessCompiler) Compile(ctx context.Context, engine string, cfg Config, name string, wasm []byte) error {
	if cfg.cacheDir == "" {
		return errors.New("runtime: compiling in a child process needs a compilation cache directory")
	}
	req, err := json.Marshal(compileRequest{
		Engine: engine, Name: name, CacheDir: cfg.cacheDir,
		MemoryLimitPages: cfg.memoryLimitPages, TableLimit: cfg.tableLimit,
		CallTimeoutNs: int64(cfg.callTimeout), Size: len(wasm), Nice: p.Nice,
	})
	if err != nil {
		return fmt.Errorf("runtime: compiling %q in a child process: %w", name, err)
	}
	cmd := exec.CommandContext(ctx, p.Path, p.Args...)
	cmd.Env = append(append(os.Environ(), "GOMAXPROCS=1"), p.Env...)
	cmd.Env = append(cmd.Env, ChildCompileEnv+"=1")
	var stderr tailBuffer
	cmd.Stderr = &stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return fmt.Errorf("runtime: compiling %q in a child process: %w", name, err)
	}
	if err := startNiced(cmd, p.Nice); err != nil {
		return fmt.Errorf("runtime: compiling %q in a child process (%s): %w", name, p.Path, err)
	}
	// The request goes once the child runs at its priority: the child
	// starts compiling only once it has read it. A failed write is the
	// child's end (its exit status says why).
	_, werr := io.Copy(stdin, io.MultiReader(bytes.NewReader(append(req, '\n')), bytes.NewReader(wasm)))
	_ = stdin.Close()
	if err := cmd.Wait(); err != nil {
		if msg := strings.TrimSpace(stderr.String()); msg != "" {
			return fmt.Errorf("runtime: compiling %q in a child process: %w: %s", name, err, msg)
		}
		return fmt.Errorf("runtime: compiling %q in a child process: %w", name, err)
	}
	if werr != nil {
		return fmt.Errorf("runtime: compiling %q in a child process: sending the module: %w", name, werr)
	}
	return nil
}

// tailBuffer keeps the last 4 KiB written to it.
type tailBuffer struct{ b []byte }

func (t *tailBuffer) Write(p []byte) (int, error) {
	const keep = 4 << 10
	t.b = append(t.b, p...)
	if len(t.b) > keep {
		t.b = t.b[len(t.b)-keep:]
	}
	return len(p), nil
}

func (t *tailBuffer) String() string { return string(t.b) }

// ServeCompile is the child's side of a ProcessCompiler: it reads the
// request and the module from r, compiles the module on an engine
// configured as the parent's into the parent's compilation cache, and
// returns the compile's error. The engine has no host modules or grants:
// they are resolved when a module is instantiated, not compiled.
func ServeCompile(ctx context.Context, r io.Reader) error {
	br := bufio.NewReader(r)
	line, err := br.ReadBytes('\n')
	if err != nil {
		return fmt.Errorf("runtime: reading the compile request: %w", err)
	}
	var req compileRequest
	if err := json.Unmarshal(line, &req); err != nil {
		return fmt.Errorf("runtime: reading the compile request: %w", err)
	}
	lowerOwnPriority(req.Nice)
	wasm := make([]byte, req.Size)
	if _, err := io.ReadFull(br, wasm); err != nil {
		return fmt.Errorf("runtime: reading module %q (%d bytes): %w", req.Name, req.Size, err)
	}
	if req.CacheDir == "" {
		return fmt.Errorf("runtime: compiling %q: no compilation cache directory to compile into", req.Name)
	}
	cfg := NewConfig().WithCacheDir(req.CacheDir).WithMemoryLimitPages(req.MemoryLimitPages).
		WithTableLimit(req.TableLimit).WithCallTimeout(time.Duration(req.CallTimeoutNs))
	eng, err := New(ctx, req.Engine, cfg)
	if err != nil {
		return err
	}
	_, err = eng.Compile(ctx, req.Name, wasm)
	return errors.Join(err, eng.Close(ctx))
}

// asideEngine is an engine whose modules a Compiler compiles first.
type asideEngine struct {
	Engine
	name string
	cfg  Config

	mu       sync.Mutex
	compiled map[[sha256.Size]byte]bool // modules the Compiler compiled
}

// withCompiler returns eng, named name, asking cfg's Compiler to compile
// each new module first, when cfg has a Compiler and a cache directory.
func withCompiler(eng Engine, name string, cfg Config) Engine {
	if cfg.compiler == nil || cfg.cacheDir == "" {
		return eng
	}
	if name == "" {
		name = EngineWazero
	}
	return &asideEngine{Engine: eng, name: name, cfg: cfg, compiled: make(map[[sha256.Size]byte]bool)}
}

func (e *asideEngine) Compile(ctx context.Context, name string, wasm []byte) (Module, error) {
	sum := sha256.Sum256(wasm)
	e.mu.Lock()
	done := e.compiled[sum]
	e.mu.Unlock()
	if !done {
		t0 := time.Now()
		if err := e.cfg.compiler.Compile(ctx, e.name, e.cfg, name, wasm); err != nil {
			// The engine's own compile says what is wrong with the module.
			slog.DebugContext(ctx, "runtime: compiling aside failed; compiling in the engine", "module", name, "err", err)
		} else {
			slog.DebugContext(ctx, "runtime: compiled aside", "module", name, "took", time.Since(t0))
			e.mu.Lock()
			e.compiled[sum] = true
			e.mu.Unlock()
		}
	}
	return e.Engine.Compile(ctx, name, wasm)
}
