package runtime

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"
)

// wasiModule is the import module name of WASI preview 1, which every engine
// provides.
const wasiModule = "wasi_snapshot_preview1"

// initExport is the WASI reactor initialiser, called once per instance.
const initExport = "_initialize"

// maxMemoryPages is the most a 32-bit linear memory can hold: 4 GiB.
const maxMemoryPages = 65536

// validateConfig checks what both engines rely on, so that a bad Config
// fails at engine creation with a message naming the culprit rather than as
// an engine panic later.
func validateConfig(cfg Config) error {
	if p := cfg.MemoryLimitPages(); p == 0 || p > maxMemoryPages {
		return fmt.Errorf("runtime: memory limit of %d pages is out of range 1..%d (build the Config with NewConfig)", p, maxMemoryPages)
	}
	if cfg.TableLimit() == 0 {
		return errors.New("runtime: table limit of 0 entries (build the Config with NewConfig)")
	}
	if cfg.CallTimeout() < 0 {
		return fmt.Errorf("runtime: negative call timeout %v", cfg.CallTimeout())
	}
	if err := cfg.grants.validate(); err != nil {
		return err
	}
	seen := make(map[string]bool, len(cfg.HostModules()))
	for _, m := range cfg.HostModules() {
		switch {
		case m.Name == "":
			return errors.New("runtime: host module with an empty name")
		case m.Name == wasiModule:
			return fmt.Errorf("runtime: host module %q: the name is reserved for WASI, which the engine provides", m.Name)
		case seen[m.Name]:
			return fmt.Errorf("runtime: host module %q is defined twice", m.Name)
		}
		seen[m.Name] = true
		funcs := make(map[string]bool, len(m.Funcs))
		for _, f := range m.Funcs {
			switch {
			case f.Name == "":
				return fmt.Errorf("runtime: host module %q has a function with an empty name", m.Name)
			case funcs[f.Name]:
				return fmt.Errorf("runtime: host function %s.%s is defined twice", m.Name, f.Name)
			case f.Fn == nil:
				return fmt.Errorf("runtime: host function %s.%s has no Fn", m.Name, f.Name)
			}
			funcs[f.Name] = true
			for _, t := range append(append([]ValueType(nil), f.Params...), f.Results...) {
				if t < I32 || t > F64 {
					return fmt.Errorf("runtime: host function %s.%s has an invalid value type %v", m.Name, f.Name, t)
				}
			}
		}
	}
	return nil
}

// checkTables refuses a module that declares a table of more entries
// than limit (mins are the declared minimums, in table index order).
func checkTables(module string, mins []uint64, limit uint32) error {
	for i, n := range mins {
		if n > uint64(limit) {
			return &Error{Kind: KindCompile, Module: module,
				Err: fmt.Errorf("table %d declares at least %d entries, past the table limit of %d entries", i, n, limit)}
		}
	}
	return nil
}

// stackSize is how many stack slots a call of sig needs.
func stackSize(sig Signature) int { return max(len(sig.Params), len(sig.Results)) }

// stackTooSmall is the error of a Func.Call whose stack cannot hold the
// parameters or the results: a bug in the host, not a guest failure, so it
// is not an *Error and does not break the instance.
func stackTooSmall(module string, info FuncInfo, got int) error {
	return fmt.Errorf("runtime: plugin %q export %q %v needs a stack of %d slots, got %d",
		module, info.Name, info.Signature, stackSize(info.Signature), got)
}

// linkProblems checks a module's function imports against what the host
// provides, and returns nil or a KindLink *Error naming every import at
// fault. provided returns the host's signature of module.name, if any.
func linkProblems(module string, imports []FuncInfo, provided func(module, name string) (Signature, bool)) *Error {
	var problems []string
	for _, imp := range imports {
		have, ok := provided(imp.Module, imp.Name)
		switch {
		case !ok:
			problems = append(problems, fmt.Sprintf("module imports %v, which the host does not provide", imp))
		case !have.Equal(imp.Signature):
			problems = append(problems, fmt.Sprintf("module imports %v, but the host provides %s.%s %v", imp, imp.Module, imp.Name, have))
		}
	}
	if len(problems) == 0 {
		return nil
	}
	return &Error{Kind: KindLink, Module: module, Err: errors.New(strings.Join(problems, "; "))}
}

// hostPanic carries the panic of a HostFunc out through the engine, so the
// call's error can be told apart from a trap and mapped to KindHost.
type hostPanic struct {
	fn    string // module.name of the host function
	value any    // what Fn panicked with
}

func (p *hostPanic) Error() string { return p.cause().Error() }

// Unwrap lets errors.As reach the panic value through the engine's wrapping.
func (p *hostPanic) Unwrap() error { return p.cause() }

// cause is the error an *Error of KindHost carries: the panic value itself
// when it is a *HostError (which names its function), else the value
// wrapped with the name of the host function.
func (p *hostPanic) cause() error {
	var he *HostError
	switch v := p.value.(type) {
	case error:
		if errors.As(v, &he) {
			return v
		}
		return fmt.Errorf("host function %s: %w", p.fn, v)
	default:
		return fmt.Errorf("host function %s panicked: %v", p.fn, v)
	}
}

// timeoutCause says why a call stopped when its context was done: the
// caller's context (cancelled, or its own deadline), else the engine's call
// timeout. The result matches context.Canceled or context.DeadlineExceeded
// with errors.Is.
func timeoutCause(parent context.Context, timeout time.Duration) error {
	if err := parent.Err(); err != nil {
		return fmt.Errorf("the caller's context is done: %w", err)
	}
	return fmt.Errorf("the call ran past its timeout of %v: %w", timeout, context.DeadlineExceeded)
}

// initFailed is the KindLink *Error of an instance whose start function
// or initialiser (export, empty for a start function) failed with err. The
// call's own error, an *Error of KindTrap, KindTimeout, KindExit or
// KindHost, stays its cause: errors.Is(err, ErrTimeout) holds for an
// initialiser that ran past its deadline, and errors.As reaches the inner
// *Error. The exit code of a guest that exited is copied up.
func initFailed(module, export string, err error, stderr string) *Error {
	le := &Error{Kind: KindLink, Module: module, Export: export, Err: err, Stderr: stderr}
	var ce *Error
	if errors.As(err, &ce) {
		le.Err, le.ExitCode = &initError{ce}, ce.ExitCode
	}
	return le
}

// initError carries the *Error of a failed start function or initialiser
// inside the KindLink *Error of the instantiation. Its message is the inner
// error's cause alone, as it was before the inner *Error was kept: the
// outer error names the module and the export already, and the cause says
// what happened ("wasm error: unreachable", "the call ran past its
// timeout").
type initError struct{ inner *Error }

func (e *initError) Error() string {
	if e.inner.Err == nil {
		return e.inner.Kind.String()
	}
	return e.inner.Err.Error()
}

// Unwrap returns the inner *Error.
func (e *initError) Unwrap() error { return e.inner }

// brokenError is returned by calls on an instance that failed before.
func brokenError(module string, export string, first error) error {
	return fmt.Errorf("runtime: plugin %q export %q: the instance failed earlier and must be replaced: %w", module, export, first)
}

// closedError is returned by calls on a closed instance.
func closedError(module string, export string) error {
	return fmt.Errorf("runtime: plugin %q export %q: instance: %w", module, export, ErrClosed)
}

// noMemory is the Memory of a guest that has none: every access is out of
// bounds.
type noMemory struct{}

func (noMemory) Read(uint32, uint32) ([]byte, bool) { return nil, false }
func (noMemory) Write(uint32, []byte) bool          { return false }
func (noMemory) Size() uint32                       { return 0 }

// stderrBuffer is the stderr of one instance. It keeps what the guest
// wrote during the current call (reset at each call's start): the first
// quarter of limit bytes, where a crash's headline is ("panic: ...",
// "fatal error: out of memory"), and the last three quarters, where the
// stack trace of the failing goroutine ends.
//
// It is used only by the goroutine calling the instance (the guest writes
// to it from inside a call), so it has no lock.
type stderrBuffer struct {
	headCap, tailCap int
	head             []byte
	tail             []byte // grows to at most 2*tailCap before being compacted
	total            int64  // bytes written since reset
}

func newStderrBuffer(limit int) *stderrBuffer {
	limit = max(limit, 0)
	return &stderrBuffer{headCap: limit / 4, tailCap: limit - limit/4}
}

// reset forgets what earlier calls wrote.
func (b *stderrBuffer) reset() {
	if b.total != 0 {
		b.head, b.tail, b.total = b.head[:0], b.tail[:0], 0
	}
}

// Write keeps the head and the tail of what it is given; it never fails.
func (b *stderrBuffer) Write(p []byte) (int, error) {
	n := len(p)
	b.total += int64(n)
	if room := b.headCap - len(b.head); room > 0 {
		k := min(room, len(p))
		b.head = append(b.head, p[:k]...)
		p = p[k:]
	}
	switch {
	case len(p) == 0 || b.tailCap == 0:
	case len(p) >= b.tailCap:
		b.tail = append(b.tail[:0], p[len(p)-b.tailCap:]...)
	default:
		if len(b.tail)+len(p) > 2*b.tailCap {
			keep := b.tailCap - len(p)
			b.tail = append(b.tail[:0], b.tail[len(b.tail)-keep:]...)
		}
		b.tail = append(b.tail, p...)
	}
	return n, nil
}

// String returns what the current call wrote, trimmed of surrounding white
// space, with a "..." line where bytes in the middle were dropped.
func (b *stderrBuffer) String() string {
	if b.headCap+b.tailCap == 0 {
		return ""
	}
	tail := b.tail
	if len(tail) > b.tailCap {
		tail = tail[len(tail)-b.tailCap:]
	}
	if b.total <= int64(len(b.head)+len(tail)) {
		return strings.TrimSpace(string(b.head) + string(tail))
	}
	for i := 0; i < utf8.UTFMax && len(tail) > 0 && !utf8.RuneStart(tail[0]); i++ {
		tail = tail[1:]
	}
	return strings.TrimSpace(string(b.head) + "\n...\n" + string(tail))
}
