package build

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"

	"github.com/sluicehq/sluice/host/plugin"
	"github.com/sluicehq/sluice/runtime"
	"github.com/sluicehq/sluice/sdk/go/wasmbuild"
)

// InstallScript is the script, relative to the checkout, that installs
// every guest toolchain; errors about a missing tool name it.
const InstallScript = "scripts/install-toolchains.sh"

// ASCVersion is the AssemblyScript compiler version the SDK is built and
// tested with.
const ASCVersion = "0.28.20"

// ErrToolchainMissing is wrapped by the error of a build whose compiler,
// linker or standard library is not installed (a *ToolchainError).
var ErrToolchainMissing = errors.New("build: toolchain missing")

// ErrFailed is wrapped by the error of a build whose compiler ran and
// failed (a *Error): a mistake in the plugin's sources, usually.
var ErrFailed = errors.New("build: compilation failed")

// ToolchainError reports a tool a build needs that is not installed.
type ToolchainError struct {
	Language Language
	Tool     string // the missing command, library or file
	Package  string // what provides it: a Debian package, or "npm: ..."
	Detail   string // what was found wrong, when there is more to say
}

func (e *ToolchainError) Error() string {
	s := fmt.Sprintf("build %s: %s is not installed", e.Language, e.Tool)
	if e.Detail != "" {
		s += " (" + e.Detail + ")"
	}
	return s + "; install " + e.Package + ", or run " + InstallScript + " from the Sluice checkout, which installs every guest toolchain"
}

// Is makes errors.Is(err, ErrToolchainMissing) true.
func (e *ToolchainError) Is(target error) bool { return target == ErrToolchainMissing }

// Error reports a build command that failed, with what it printed.
type Error struct {
	Language Language
	Dir      string
	Command  []string // the command line that ran
	Output   string   // what it printed, trimmed
	Err      error    // the exec error (an *exec.ExitError, usually)
}

func (e *Error) Error() string {
	s := fmt.Sprintf("build %s in %s: %s failed: %v", e.Language, e.Dir, filepath.Base(e.Command[0]), e.Err)
	if e.Output != "" {
		s += "\n" + e.Output
	}
	return s
}

// Unwrap returns the exec error.
func (e *Error) Unwrap() error { return e.Err }

// Is makes errors.Is(err, ErrFailed) true.
func (e *Error) Is(target error) bool { return target == ErrFailed }

// Options are the settings of a Build. The zero value builds DIR/<name of
// DIR>.wasm in the language Detect finds, with the checkout Root finds.
type Options struct {
	// Output is the module file to write; default DIR/<name of DIR>.wasm.
	Output string
	// Language overrides Detect.
	Language Language
	// Root is the Sluice checkout (see Root); needed by C and
	// AssemblyScript builds only, and found when empty.
	Root string
}

// Result describes a successful Build.
type Result struct {
	Language Language
	Output   string   // the module file written, absolute
	Command  []string // the build command that ran
	Log      string   // what the build printed (warnings), trimmed
	// Kinds are the operator kinds the build declared in the module's
	// sluice.kinds custom section, from its sluice_kinds export (see
	// Build); nil when it declared none: the module declares them itself
	// (Rust, WAT) or not at all.
	Kinds []plugin.Kind
}

// Build compiles the plugin in dir to a WebAssembly module with its
// language's build command (see the package documentation) and returns
// where it wrote it. A missing tool fails with a *ToolchainError
// (ErrToolchainMissing); a failed compilation with an *Error (ErrFailed)
// carrying the compiler's output. ctx bounds the build: cancelling it kills
// the compiler.
func Build(ctx context.Context, dir string, opts Options) (Result, error) {
	lang := opts.Language
	if lang == "" {
		var err error
		if lang, err = Detect(dir); err != nil {
			return Result{}, err
		}
	} else if _, err := ParseLanguage(string(lang)); err != nil {
		return Result{}, err
	}
	absDir, err := filepath.Abs(dir)
	if err != nil {
		return Result{}, fmt.Errorf("build: %w", err)
	}
	out := opts.Output
	if out == "" {
		out = filepath.Join(absDir, filepath.Base(absDir)+".wasm")
	}
	if out, err = filepath.Abs(out); err != nil {
		return Result{}, fmt.Errorf("build: %w", err)
	}
	if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
		return Result{}, fmt.Errorf("build: output directory: %w", err)
	}
	b := &builder{ctx: ctx, lang: lang, dir: absDir, out: out, root: opts.Root}
	switch lang {
	case Go:
		err = b.goBuild()
	case Rust:
		err = b.rust()
	case C:
		err = b.c()
	case AssemblyScript:
		err = b.assemblyScript()
	case WAT:
		err = b.wat()
	}
	if err != nil {
		return Result{}, err
	}
	kinds, err := b.declareKinds()
	if err != nil {
		// A module that serves no kind is no more use than one that did
		// not compile.
		_ = os.Remove(out)
		return Result{}, err
	}
	return Result{Language: lang, Output: out, Command: b.cmd, Log: strings.TrimSpace(b.log), Kinds: kinds}, nil
}

// declareKinds writes the sluice.kinds custom section (abi/ABI.md section
// 12) into the module built, from what its sluice_kinds export reports
// (plugin.DeclareKinds), and returns the kinds it wrote. The SDKs of Go, C
// and AssemblyScript register a plugin's handler when the module starts,
// so only an instance of the module knows which it is; Rust's SDK and WAT
// modules write the section when they compile, and are left as they are.
// A plugin that registers no handler, or more than one, fails the build
// with what its SDK says about it.
func (b *builder) declareKinds() ([]plugin.Kind, error) {
	wasm, err := plugin.ReadModule(b.out, 0)
	if err != nil {
		return nil, fmt.Errorf("build %s: %w", b.lang, err)
	}
	eng, err := runtime.NewWazero(b.ctx, runtime.NewConfig().WithHostModules(plugin.HostModule()))
	if err != nil {
		return nil, fmt.Errorf("build %s: declaring the operator kinds: %w", b.lang, err)
	}
	defer func() { _ = eng.Close(context.WithoutCancel(b.ctx)) }()
	declared, kinds, err := plugin.DeclareKinds(b.ctx, eng, filepath.Base(b.out), wasm)
	if err != nil {
		return nil, fmt.Errorf("build %s in %s: %w", b.lang, b.dir, err)
	}
	if kinds == nil {
		return nil, nil
	}
	if err := writeFile(b.out, declared); err != nil {
		return nil, err
	}
	return kinds, nil
}

// builder is one build in progress.
type builder struct {
	ctx  context.Context
	lang Language
	dir  string // absolute
	out  string // absolute
	root string // as given; resolved by needRoot
	cmd  []string
	log  string
}

// needRoot resolves the checkout.
func (b *builder) needRoot() (string, error) {
	r, err := Root(b.dir, b.root)
	if err != nil {
		return "", fmt.Errorf("build %s: the %s SDK is in the Sluice checkout: %w", b.lang, b.lang, err)
	}
	return r, nil
}

// run runs argv in b.dir with env added to the environment, and returns
// its standard output and standard error.
func (b *builder) run(env []string, argv ...string) (stdout, stderr string, err error) {
	b.cmd = argv
	cmd := exec.CommandContext(b.ctx, argv[0], argv[1:]...)
	cmd.Dir = b.dir
	cmd.Env = append(os.Environ(), env...)
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	err = cmd.Run()
	return o.String(), e.String(), err
}

// failed returns the *Error of a command that failed.
func (b *builder) failed(output string, err error) error {
	if ctxErr := b.ctx.Err(); ctxErr != nil {
		err = fmt.Errorf("%w (%w)", ctxErr, err)
	}
	return &Error{Language: b.lang, Dir: b.dir, Command: b.cmd, Output: strings.TrimSpace(output), Err: err}
}

// missing returns a *ToolchainError.
func (b *builder) missing(tool, pkg, detail string) error {
	return &ToolchainError{Language: b.lang, Tool: tool, Package: pkg, Detail: detail}
}

// lookPath finds a command: the one the environment variable override
// names when it is set (and nothing else then), else the first of paths
// that exists, else name on the PATH.
func lookPath(override, name string, paths ...string) (string, bool) {
	if p := os.Getenv(override); p != "" {
		p, err := exec.LookPath(p)
		return p, err == nil
	}
	for _, p := range paths {
		if isFile(p) {
			return p, true
		}
	}
	p, err := exec.LookPath(name)
	return p, err == nil
}

func (b *builder) goBuild() error {
	b.cmd = []string{"go", "build", "-buildmode=c-shared", "-o", b.out, "."}
	err := wasmbuild.Go(b.ctx, b.dir, b.out)
	switch {
	case errors.Is(err, wasmbuild.ErrNoGo):
		return b.missing("go", "Go 1.26 or later from https://go.dev/dl (Debian's golang package is older)", "")
	case err != nil:
		return &Error{Language: Go, Dir: b.dir, Command: b.cmd, Output: "", Err: err}
	}
	return nil
}

func (b *builder) rust() error {
	cargo, ok := lookPath("SLUICE_CARGO", "cargo", "/usr/bin/cargo")
	if !ok {
		return b.missing("cargo", "the Debian packages rustc, cargo and libstd-rust-dev-wasm32", "")
	}
	rustc, ok := lookPath("SLUICE_RUSTC", "rustc", "/usr/bin/rustc")
	if !ok {
		return b.missing("rustc", "the Debian packages rustc, cargo and libstd-rust-dev-wasm32", "")
	}
	stdout, stderr, err := b.run([]string{"RUSTC=" + rustc}, cargo, "build", "--release",
		"--target", "wasm32-unknown-unknown", "--offline", "--message-format=json-render-diagnostics")
	if err != nil {
		if strings.Contains(stderr, "can't find crate for `core`") || strings.Contains(stderr, "can't find crate for `std`") ||
			strings.Contains(stderr, "target may not be installed") {
			return b.missing("the Rust standard library for wasm32-unknown-unknown", "the Debian package libstd-rust-dev-wasm32",
				"rustc "+rustc+" has no wasm32-unknown-unknown target")
		}
		return b.failed(stderr+nonJSON(stdout), err)
	}
	b.log = withoutProgress(stderr)
	dir := b.dir
	if d, err := filepath.EvalSymlinks(dir); err == nil {
		dir = d // cargo reports the manifest's real path
	}
	artifact, err := cargoArtifact(stdout, filepath.Join(dir, "Cargo.toml"))
	if err != nil {
		return b.failed(stderr, err)
	}
	return copyFile(artifact, b.out)
}

// cargoArtifact finds, in cargo's JSON messages, the .wasm file built for
// the package whose manifest is manifest.
func cargoArtifact(messages, manifest string) (string, error) {
	var found []string
	sc := bufio.NewScanner(strings.NewReader(messages))
	sc.Buffer(make([]byte, 0, 64<<10), 16<<20)
	for sc.Scan() {
		var m struct {
			Reason       string   `json:"reason"`
			ManifestPath string   `json:"manifest_path"`
			Filenames    []string `json:"filenames"`
		}
		if json.Unmarshal(sc.Bytes(), &m) != nil || m.Reason != "compiler-artifact" || m.ManifestPath != manifest {
			continue
		}
		for _, f := range m.Filenames {
			if strings.HasSuffix(f, ".wasm") {
				found = append(found, f)
			}
		}
	}
	switch len(found) {
	case 0:
		return "", errors.New(`cargo built no .wasm file for this crate: its Cargo.toml needs [lib] crate-type = ["cdylib"]`)
	case 1:
		return found[0], nil
	}
	return "", fmt.Errorf("cargo built %d .wasm files for this crate (%s): a plugin crate builds one, its cdylib", len(found), strings.Join(found, ", "))
}

// withoutProgress returns cargo's output less its progress lines
// ("Compiling x", "Finished release"), which say nothing when the build
// succeeded: what is left is warnings.
func withoutProgress(s string) string {
	var b strings.Builder
	for line := range strings.Lines(s) {
		word, _, _ := strings.Cut(strings.TrimSpace(line), " ")
		switch word {
		case "Compiling", "Finished", "Fresh", "Blocking", "Updating", "Locking":
			continue
		}
		b.WriteString(line)
	}
	return b.String()
}

// nonJSON returns the lines of s that are not JSON messages.
func nonJSON(s string) string {
	var b strings.Builder
	for line := range strings.Lines(s) {
		if !strings.HasPrefix(line, "{") {
			b.WriteString(line)
		}
	}
	return b.String()
}

func (b *builder) c() error {
	root, err := b.needRoot()
	if err != nil {
		return err
	}
	clang, ok := lookPath("SLUICE_CLANG", "clang")
	if !ok {
		return b.missing("clang", "the Debian packages clang, lld, wasi-libc and libclang-rt-14-dev-wasm32", "")
	}
	sdk := filepath.Join(root, "sdk", "c")
	sdkSource := filepath.Join(sdk, "sluice.c")
	if !isFile(sdkSource) {
		return fmt.Errorf("build c: the C SDK's %s does not exist: is %s a Sluice checkout with the C SDK?", sdkSource, root)
	}
	sources, err := filepath.Glob(filepath.Join(b.dir, "*.c"))
	if err != nil || len(sources) == 0 {
		return fmt.Errorf("build c: %s holds no *.c file", b.dir)
	}
	slices.Sort(sources)
	argv := []string{clang, "--target=wasm32-wasi", "-O2", "-mexec-model=reactor", "-s", "-I", sdk, "-o", b.out}
	argv = append(argv, sources...)
	argv = append(argv, sdkSource)
	stdout, stderr, err := b.run(nil, argv...)
	output := stdout + stderr
	if err != nil {
		return b.clangFailed(output, err)
	}
	b.log = output
	return nil
}

// clangFailed recognises the failures of an incomplete C toolchain.
func (b *builder) clangFailed(output string, err error) error {
	switch {
	case strings.Contains(output, `"wasm-ld"`) || strings.Contains(output, "wasm-ld: not found") ||
		strings.Contains(output, "wasm-ld: No such file"):
		return b.missing("wasm-ld", "the Debian package lld", "clang cannot link WebAssembly without it")
	case strings.Contains(output, "libclang_rt.builtins-wasm32.a"):
		return b.missing("libclang_rt.builtins-wasm32.a", "the Debian package libclang-rt-14-dev-wasm32", "clang's runtime library for wasm32")
	case strings.Contains(output, ".h' file not found") && (strings.Contains(output, "stdlib.h") || strings.Contains(output, "stdint.h") ||
		strings.Contains(output, "string.h") || strings.Contains(output, "stddef.h") || strings.Contains(output, "stdio.h")) ||
		strings.Contains(output, "crt1-reactor.o") || strings.Contains(output, "unable to find library -lc"):
		return b.missing("wasi-libc", "the Debian package wasi-libc", "the C library and headers for wasm32-wasi")
	}
	return b.failed(output, err)
}

func (b *builder) assemblyScript() error {
	root, rootErr := b.needRoot()
	asc, ok := findASC(b.dir, root)
	if !ok {
		detail := "looked in node_modules/.bin of " + b.dir + " and its parents"
		if rootErr == nil {
			detail += ", in " + filepath.Join(root, "sdk", "assemblyscript", "node_modules", ".bin")
		}
		detail += " and on the PATH; run `npm install` in sdk/assemblyscript of the Sluice checkout"
		return b.missing("the AssemblyScript compiler asc", "the npm package assemblyscript@"+ASCVersion+" (and the Debian packages nodejs and npm)", detail)
	}
	if _, err := exec.LookPath("node"); err != nil {
		return b.missing("node", "the Debian package nodejs", "asc is a Node.js program")
	}
	stdout, stderr, err := b.run(nil, asc, filepath.Join("assembly", "index.ts"), "-O3", "--runtime", "stub", "--noAssert", "--use", "abort=", "-o", b.out)
	if err != nil {
		return b.failed(stdout+stderr, err)
	}
	b.log = stdout + stderr
	return nil
}

// findASC looks for the AssemblyScript compiler: in node_modules/.bin of
// dir and its parents, then of root's AssemblyScript SDK (when root is not
// empty), then on the PATH.
func findASC(dir, root string) (string, bool) {
	for d := dir; ; d = filepath.Dir(d) {
		if p := filepath.Join(d, "node_modules", ".bin", "asc"); isFile(p) {
			return p, true
		}
		if filepath.Dir(d) == d {
			break
		}
	}
	if root != "" {
		if p := filepath.Join(root, "sdk", "assemblyscript", "node_modules", ".bin", "asc"); isFile(p) {
			return p, true
		}
	}
	p, err := exec.LookPath("asc")
	return p, err == nil
}

func (b *builder) wat() error {
	wat2wasm, ok := lookPath("SLUICE_WAT2WASM", "wat2wasm")
	if !ok {
		return b.missing("wat2wasm", "the Debian package wabt", "")
	}
	src := filepath.Base(b.dir) + ".wat"
	if !isFile(filepath.Join(b.dir, src)) {
		return fmt.Errorf("build wat: %s does not exist: a WAT plugin's source is named after its directory", filepath.Join(b.dir, src))
	}
	stdout, stderr, err := b.run(nil, wat2wasm, src, "-o", b.out)
	if err != nil {
		return b.failed(stdout+stderr, err)
	}
	b.log = stdout + stderr
	return nil
}

// copyFile copies src to dst through a temporary file in dst's directory,
// so that dst is never seen half-written.
func copyFile(src, dst string) error {
	data, err := os.ReadFile(src)
	if err != nil {
		return fmt.Errorf("build: %w", err)
	}
	return writeFile(dst, data)
}

// writeFile writes data to dst through a temporary file in dst's
// directory, so that dst is never seen half-written.
func writeFile(dst string, data []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(dst), ".build-*.wasm")
	if err != nil {
		return fmt.Errorf("build: %w", err)
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return fmt.Errorf("build: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("build: %w", err)
	}
	if err := os.Rename(tmp.Name(), dst); err != nil {
		return fmt.Errorf("build: %w", err)
	}
	return nil
}
