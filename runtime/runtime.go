package runtime

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// ValueType is the type of a WebAssembly function parameter or result.
type ValueType byte

// The value types Sluice's ABI uses.
const (
	I32 ValueType = iota + 1
	I64
	F32
	F64
)

func (t ValueType) String() string {
	switch t {
	case I32:
		return "i32"
	case I64:
		return "i64"
	case F32:
		return "f32"
	case F64:
		return "f64"
	}
	return fmt.Sprintf("ValueType(%d)", byte(t))
}

// Signature is a function type.
type Signature struct {
	Params  []ValueType
	Results []ValueType
}

// String formats the signature as "(i32, i32) -> i64"; a function without
// results is "(i32)", one with several results "() -> (i32, i32)".
func (s Signature) String() string {
	var b strings.Builder
	writeTypes(&b, s.Params)
	switch len(s.Results) {
	case 0:
	case 1:
		b.WriteString(" -> ")
		b.WriteString(s.Results[0].String())
	default:
		b.WriteString(" -> ")
		writeTypes(&b, s.Results)
	}
	return b.String()
}

func writeTypes(b *strings.Builder, types []ValueType) {
	b.WriteByte('(')
	for i, t := range types {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(t.String())
	}
	b.WriteByte(')')
}

// Equal reports whether s and o are the same function type.
func (s Signature) Equal(o Signature) bool {
	return equalTypes(s.Params, o.Params) && equalTypes(s.Results, o.Results)
}

func equalTypes(a, b []ValueType) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// Memory is a guest's linear memory as a host function sees it. Offsets and
// lengths come from the guest and are untrusted: Read and Write report false
// when the range is out of bounds, and the caller turns that into a trap.
type Memory interface {
	// Read returns a view of length bytes at offset. The view aliases guest
	// memory and is valid until the guest runs again or grows its memory.
	Read(offset, length uint32) ([]byte, bool)
	// Write copies data into guest memory at offset.
	Write(offset uint32, data []byte) bool
	// Size is the current size of the memory in bytes.
	Size() uint32
}

// HostFunc is a function the host provides to guests, written once and
// adapted to each engine. Fn reads its parameters from stack and writes its
// results to stack[0:len(Results)], as wazero's stack-based API does: it must
// not allocate on the hot path. ctx is the context of the guest call in
// progress (see Func.Call). To fail the guest call, Fn panics with an error
// (for instance a *HostError); the engine turns the panic into a trap.
type HostFunc struct {
	Name string
	Signature
	Fn func(ctx context.Context, mem Memory, stack []uint64)
}

// HostModule is a named set of host functions, imported by guests under Name.
type HostModule struct {
	Name  string
	Funcs []HostFunc
}

// FuncInfo describes a function a module imports or exports.
type FuncInfo struct {
	Module string // import module; empty for exports
	Name   string
	Signature
}

// String formats the function as "sluice.emit (i32, i32)" for an import and
// "sluice_process (i32, i32) -> i32" for an export.
func (f FuncInfo) String() string {
	if f.Module == "" {
		return f.Name + " " + f.Signature.String()
	}
	return f.Module + "." + f.Name + " " + f.Signature.String()
}

// Engine compiles modules and instantiates them. An engine's configuration
// (memory limit, call timeout, host modules) applies to every module it
// compiles. An Engine is safe for concurrent use.
type Engine interface {
	// Compile validates and compiles a module. name identifies it in errors
	// (the plugin's name or path). A module that is not valid fails with an
	// *Error of KindCompile; a compilation cache that cannot be read or
	// written, with an error wrapping ErrCache.
	Compile(ctx context.Context, name string, wasm []byte) (Module, error)
	// Close releases the engine and every module and instance it made.
	Close(ctx context.Context) error
}

// Module is a compiled module, from which any number of instances are made.
// A Module is safe for concurrent use.
type Module interface {
	Name() string
	// Imports lists the functions the module imports.
	Imports() []FuncInfo
	// Exports lists the functions the module exports.
	Exports() []FuncInfo
	// ExportedMemory reports whether the module exports a memory named name.
	ExportedMemory(name string) bool
	// Instantiate makes a new instance with its own memory. It runs the
	// module's start function, and then each of the named init exports
	// present (for example "_initialize").
	Instantiate(ctx context.Context) (Instance, error)
	Close(ctx context.Context) error
}

// Instance is one instantiated module: memory plus exported functions. An
// Instance is not safe for concurrent use: each worker owns its own.
//
// After any error returned by a Func, the instance must be considered broken
// (the guest may have been stopped half-way through an update of its own
// memory) and replaced with a fresh one from the same Module.
type Instance interface {
	// Func returns the exported function name, or false if there is none.
	Func(name string) (Func, bool)
	Memory() Memory
	// SetCallEnv sets what the guest's WASI clocks and random_get answer
	// in the calls that follow, until the next SetCallEnv: the clocks
	// restart (realtime at env.Time, monotonic at MonotonicOrigin) and so
	// does the random stream of env.Seed. Grants of the wall clock or of
	// entropy take precedence over it. It costs a few stores; like Func.Call,
	// it is not safe for concurrent use.
	SetCallEnv(env CallEnv)
	Close(ctx context.Context) error
}

// Func is an exported guest function resolved once and called many times.
type Func interface {
	Info() FuncInfo
	// Call runs the function. stack holds the parameters on entry and the
	// results on return; it must be at least max(len(Params), len(Results))
	// long. ctx is passed to every host function the guest calls, and its
	// cancellation, like the engine's call timeout, stops the guest.
	Call(ctx context.Context, stack []uint64) error
}

// Config is the configuration shared by every engine implementation. Build
// it with NewConfig and the With methods, which return modified copies.
type Config struct {
	cacheDir         string
	memoryLimitPages uint32
	tableLimit       uint32
	callTimeout      time.Duration
	hostModules      []HostModule
	stderrLimit      int
	grants           Grants
	compiler         Compiler
}

// Defaults.
const (
	// DefaultMemoryLimitPages is 1024 pages of 64 KiB: 64 MiB per instance.
	DefaultMemoryLimitPages = 1024
	// DefaultCallTimeout bounds one guest call.
	DefaultCallTimeout = 5 * time.Second
	// DefaultTableLimit is 2^20 entries per table: 8 MiB of host memory
	// for a table of function references (wazero keeps 8 bytes an entry),
	// some 500 times what a large Go guest's function table holds.
	DefaultTableLimit = 1 << 20
)

// NewConfig returns the default configuration: no compilation cache, 64 MiB
// of memory per instance, tables of at most 2^20 entries, a 5 s deadline
// per call, no host modules, no grants.
func NewConfig() Config {
	return Config{memoryLimitPages: DefaultMemoryLimitPages, tableLimit: DefaultTableLimit,
		callTimeout: DefaultCallTimeout, stderrLimit: 4096}
}

// WithCacheDir stores compiled code under dir, so a module compiles once
// across restarts. An empty dir disables the cache. Entries are keyed by
// the module's bytes, the engine and its version, the platform and the
// options that change the code, and each is written to a temporary file
// renamed into place: engines of any number of processes can share dir,
// and a process killed while compiling leaves no partial entry. A damaged
// entry is replaced; a cache that cannot be read or written fails the
// compile with ErrCache.
func (c Config) WithCacheDir(dir string) Config { c.cacheDir = dir; return c }

// UserCacheDir returns the compilation cache directory shared by every
// pipeline and command of the user, sluice/compile in os.UserCacheDir
// ($XDG_CACHE_HOME or ~/.cache on Linux, ~/Library/Caches on macOS),
// creating it. It fails when the system names no cache directory for the
// user, or when the directory cannot be created or written (a read-only
// home directory): callers then use a directory of their own, or none.
func UserCacheDir() (string, error) {
	dir, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("runtime: no user cache directory: %w", err)
	}
	dir = filepath.Join(dir, "sluice", "compile")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", fmt.Errorf("runtime: user cache directory: %w", err)
	}
	f, err := os.CreateTemp(dir, ".probe-*")
	if err != nil {
		return "", fmt.Errorf("runtime: user cache directory: %w", err)
	}
	_ = f.Close()
	_ = os.Remove(f.Name())
	return dir, nil
}

// WithMemoryLimitPages caps each instance's memory at pages of 64 KiB.
func (c Config) WithMemoryLimitPages(pages uint32) Config { c.memoryLimitPages = pages; return c }

// WithTableLimit caps each table of an instance at entries entries (at
// least 1; NewConfig sets DefaultTableLimit). Tables are host memory outside
// the memory limit, which a guest could otherwise grow by gigabytes with one
// table.grow: past the limit, table.grow fails (returns -1, as the
// WebAssembly specification lets an engine answer), and a module that
// declares a larger table fails to compile (KindCompile). On wazero the
// engine rewrites each table.grow into a call of a bounding function it
// adds to the module; a module without table.grow runs unchanged, whether
// or not the call timeout is on. On wasmtime its store limiter enforces the
// limit.
func (c Config) WithTableLimit(entries uint32) Config { c.tableLimit = entries; return c }

// TableLimit returns the per-table cap in entries.
func (c Config) TableLimit() uint32 { return c.tableLimit }

// WithCallTimeout bounds each guest call; zero disables the deadline (for
// trusted modules: the check costs time in guest loops). With zero, the
// engines also stop watching the caller's context during a call: a running
// guest then stops only by returning.
func (c Config) WithCallTimeout(d time.Duration) Config { c.callTimeout = d; return c }

// WithHostModules sets the host modules guests may import from, besides
// WASI (wasi_snapshot_preview1), which every engine provides.
func (c Config) WithHostModules(m ...HostModule) Config {
	c.hostModules = append([]HostModule(nil), m...)
	return c
}

// CacheDir returns the compilation cache directory, or "".
func (c Config) CacheDir() string { return c.cacheDir }

// MemoryLimitPages returns the per-instance memory cap in pages.
func (c Config) MemoryLimitPages() uint32 { return c.memoryLimitPages }

// CallTimeout returns the per-call deadline, zero for none.
func (c Config) CallTimeout() time.Duration { return c.callTimeout }

// HostModules returns the host modules.
func (c Config) HostModules() []HostModule { return c.hostModules }

// WithStderrLimit keeps up to n bytes of what a guest writes to stderr
// during a call, reported in Error.Stderr: the first quarter and the last
// three quarters when it writes more. Zero or less discards stderr.
// NewConfig keeps 4 KiB.
func (c Config) WithStderrLimit(n int) Config { c.stderrLimit = n; return c }

// StderrLimit returns how many bytes of each instance's stderr are kept.
func (c Config) StderrLimit() int { return c.stderrLimit }

// WithGrants sets what every instance may reach beyond the deterministic
// sandbox (see Grants); NewConfig grants nothing. The engine checks the
// grants when it is made: a granted directory must exist.
func (c Config) WithGrants(g Grants) Config { c.grants = g.clone(); return c }

// Grants returns a copy of the grants.
func (c Config) Grants() Grants { return c.grants.clone() }

// ErrorKind classifies a guest failure.
type ErrorKind int

// Kinds of guest failure.
const (
	KindTrap    ErrorKind = iota + 1 // the guest trapped (unreachable, bad memory access, stack overflow...)
	KindTimeout                      // the call ran past its deadline or its context was cancelled
	KindExit                         // the guest called WASI proc_exit
	KindHost                         // a host function failed the call (bad pointer, misuse)
	KindLink                         // instantiation failed: unknown import, bad start function
	KindCompile                      // the module is not valid WebAssembly
)

func (k ErrorKind) String() string {
	switch k {
	case KindTrap:
		return "trap"
	case KindTimeout:
		return "timeout"
	case KindExit:
		return "exit"
	case KindHost:
		return "host function error"
	case KindLink:
		return "link error"
	case KindCompile:
		return "compile error"
	}
	return fmt.Sprintf("ErrorKind(%d)", int(k))
}

// Sentinel errors matched with errors.Is against an *Error of that kind.
var (
	ErrTrap    = errors.New("guest trapped")
	ErrTimeout = errors.New("guest call timed out")
	ErrExit    = errors.New("guest exited")
	ErrHost    = errors.New("host function failed")
	ErrLink    = errors.New("module failed to link")
	ErrCompile = errors.New("module failed to compile")
)

// ErrClosed is returned (wrapped) by any use of an Engine, Module or
// Instance after its Close.
var ErrClosed = errors.New("runtime: closed")

// ErrCache is wrapped by the error of a Compile, or of making an engine,
// that failed because the compilation cache (Config.WithCacheDir) could
// not be read or written: a full disk, a file where a directory should
// be, missing permissions. The module is not at fault. The error also
// wraps the operating system's, which names the file.
var ErrCache = errors.New("compilation cache failed")

// Error is a guest failure, naming the module and the export involved.
type Error struct {
	Kind   ErrorKind
	Module string // the module's name as given to Compile
	// Export is the export being called: empty during compile and link,
	// except "_initialize" when the module's initialiser failed (KindLink).
	Export   string
	ExitCode uint32 // the guest's exit code, for KindExit
	Stderr   string // what the guest wrote to stderr during the failed call (head and tail), if anything
	Err      error  // the engine's error or the host function's panic value
}

func (e *Error) Error() string {
	s := fmt.Sprintf("plugin %q", e.Module)
	if e.Export != "" {
		s += fmt.Sprintf(" export %q", e.Export)
	}
	s += ": " + e.Kind.String()
	if e.Err != nil {
		s += ": " + e.Err.Error()
	}
	if e.Stderr != "" {
		s += " (guest stderr: " + e.Stderr + ")"
	}
	return s
}

// Unwrap returns the kind's sentinel and the cause.
func (e *Error) Unwrap() []error {
	var kind error
	switch e.Kind {
	case KindTrap:
		kind = ErrTrap
	case KindTimeout:
		kind = ErrTimeout
	case KindExit:
		kind = ErrExit
	case KindHost:
		kind = ErrHost
	case KindLink:
		kind = ErrLink
	case KindCompile:
		kind = ErrCompile
	}
	return []error{kind, e.Err}
}

// HostError is what a HostFunc panics with to fail a guest call; the engine
// reports it as an *Error of KindHost wrapping it.
type HostError struct {
	Func   string // the host function
	Reason string
}

func (e *HostError) Error() string { return fmt.Sprintf("host function %s: %s", e.Func, e.Reason) }
