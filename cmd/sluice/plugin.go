package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/sluicehq/sluice/abi"
	"github.com/sluicehq/sluice/host/plugin"
	"github.com/sluicehq/sluice/host/registry"
	wasm "github.com/sluicehq/sluice/runtime"
	"github.com/sluicehq/sluice/sdk/build"
	"github.com/spf13/cobra"
)

func newPluginCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "plugin",
		Short: "Create, build, test and inspect WebAssembly plugins",
	}
	cmd.AddCommand(newPluginNewCmd(), newPluginBuildCmd(), newPluginTestCmd(), newPluginCheckCmd())
	cmd.AddCommand(newPluginLifecycleCmds()...)
	return cmd
}

// exactArgs is cobra.ExactArgs(n) with a usage error (exit status 2).
func exactArgs(n int) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if err := cobra.ExactArgs(n)(cmd, args); err != nil {
			return &usageError{strings.TrimPrefix(cmd.CommandPath(), cmd.Root().Name()+" ") + ": " + err.Error()}
		}
		return nil
	}
}

// buildFlags are the flags of the commands that build a plugin.
type buildFlags struct {
	lang string
	sdk  string
}

func (f *buildFlags) register(cmd *cobra.Command) {
	cmd.Flags().StringVar(&f.lang, "lang", "", "the plugin's language (go, rust, c, assemblyscript, wat); default: detected from its files")
	cmd.Flags().StringVar(&f.sdk, "sdk", "", "the Sluice checkout whose SDK the plugin uses (C, AssemblyScript); default: DIR/.sluice-sdk, or the checkout containing DIR or the working directory")
}

// build compiles the plugin in dir to out ("" for DIR/<name>.wasm), writes
// version into it unless it is "", and checks the module as the host
// would; a module the host would refuse is an error, after its report is
// printed to stderr.
func (f *buildFlags) build(cmd *cobra.Command, dir, out, version string) (build.Result, checked, error) {
	if st, err := os.Stat(dir); err != nil || !st.IsDir() {
		return build.Result{}, checked{}, &usageError{fmt.Sprintf("%s is not a directory", dir)}
	}
	opts := build.Options{Output: out, Root: f.sdk}
	if f.lang != "" {
		l, err := build.ParseLanguage(f.lang)
		if err != nil {
			return build.Result{}, checked{}, &usageError{err.Error()}
		}
		opts.Language = l
	}
	res, err := build.Build(cmd.Context(), dir, opts)
	if err != nil {
		return res, checked{}, err
	}
	if version != "" {
		if err := stampVersion(res.Output, version); err != nil {
			return res, checked{}, fmt.Errorf("--version: %w", err)
		}
	}
	c, err := checkFile(cmd, res.Output, wasm.EngineWazero)
	if err != nil {
		return res, c, err
	}
	if !c.OK() {
		printReport(cmd.ErrOrStderr(), c)
		return res, c, fmt.Errorf("%s was built but the host would refuse it", res.Output)
	}
	return res, c, nil
}

// stampVersion writes version into the module file's version section.
func stampVersion(file, version string) error {
	b, err := plugin.ReadModule(file, 0)
	if err != nil {
		return err
	}
	if b, err = registry.AppendVersion(b, version); err != nil {
		return err
	}
	return os.WriteFile(file, b, 0o644)
}

func newPluginBuildCmd() *cobra.Command {
	var out, version string
	var bf buildFlags
	cmd := &cobra.Command{
		Use:   "build DIR [-o FILE.wasm] [--version V]",
		Short: "Compile a plugin, in any supported language, to a WebAssembly module and check it",
		Long: `Compile the plugin in DIR to a WebAssembly module with its language's build
command, then check it as 'sluice plugin check' does. The module is written to
FILE.wasm, by default DIR/<name of DIR>.wasm. The language comes from DIR's
files (--lang overrides it):

  go              Go files of package main:
                  GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared
  rust            Cargo.toml: RUSTC=/usr/bin/rustc /usr/bin/cargo build --release
                  --target wasm32-unknown-unknown --offline
  c               *.c: clang --target=wasm32-wasi -O2 -mexec-model=reactor -s
                  -I SDK/sdk/c DIR/*.c SDK/sdk/c/sluice.c
  assemblyscript  assembly/index.ts: asc assembly/index.ts -O3 --runtime stub
                  --noAssert --use abort= (asc from SDK/sdk/assemblyscript/node_modules)
  wat             DIR/<name of DIR>.wat: wat2wasm

SDK is the Sluice checkout (--sdk). A missing toolchain is reported with the
package that provides it; scripts/install-toolchains.sh installs them all.

The module declares the operator kind of the handler the plugin registers
in its sluice.kinds custom section (abi/ABI.md section 12), which Rust's
SDK writes and the build writes for the others, from what the module's
sluice_kinds export says: a pipeline that runs it as another kind is then
refused when it loads. A plugin that registers no handler fails the build.`,
		Args: exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			res, r, err := bf.build(cmd, args[0], out, version)
			if err != nil {
				return fmt.Errorf("plugin build: %w", err)
			}
			if res.Log != "" {
				fmt.Fprintln(cmd.ErrOrStderr(), res.Log)
			}
			v := ""
			if r.Version != "" {
				v = ", version " + r.Version
			}
			fmt.Fprintf(cmd.OutOrStdout(), "built %s (%s, %d bytes%s, ABI version %d, serves %s)\n", res.Output, res.Language, r.Size, v, r.ABIVersion, kindList(r.Kinds))
			return nil
		},
	}
	cmd.Flags().StringVarP(&out, "output", "o", "", "the module file to write")
	cmd.Flags().StringVar(&version, "version", "", "write this version into the module (custom section "+registry.VersionSection+"), which the registry, the status and dead letters show")
	bf.register(cmd)
	return cmd
}

func newPluginCheckCmd() *cobra.Command {
	var asJSON bool
	var engine string
	cmd := &cobra.Command{
		Use:   "check FILE.wasm",
		Short: "Report a module's exports, imports and ABI version, and every problem the host would refuse it for",
		Long: `Compile and inspect a module as the host does when a pipeline loads it, and
report its version (custom section sluice.version), its exports and imports
with their signatures, the ABI version it declares, the operator kinds it can
serve, and every problem with it. Exits 1 when the module has problems.

The kinds are those the module declares in its sluice.kinds custom section,
which 'sluice plugin build' writes from the handler the plugin registers; a
pipeline that runs it as another kind is refused when it loads. A module
without the section (built otherwise, or before the section existed) is
said to serve every kind whose exports it has: "inferred from its exports".`,
		Args: exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkEngineFlag(engine); err != nil {
				return err
			}
			r, err := checkFile(cmd, args[0], engine)
			if err != nil {
				return err
			}
			if asJSON {
				enc := json.NewEncoder(cmd.OutOrStdout())
				enc.SetIndent("", "  ")
				enc.SetEscapeHTML(false) // "(i32) -> i32", not "-\u003e"
				if err := enc.Encode(r.json()); err != nil {
					return err
				}
			} else {
				printReport(cmd.OutOrStdout(), r)
			}
			if !r.OK() {
				return fmt.Errorf("plugin check: %s has %d problem(s)", args[0], len(r.Problems))
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the report as JSON")
	registerEngineFlag(cmd, &engine)
	return cmd
}

// checked is what `sluice plugin check` reports on a module: what the host
// found (plugin.Check) and the version the module declares.
type checked struct {
	plugin.Report
	Version string // its sluice.version custom section; "" when it has none
}

// checkFile checks the module file at path as the host would, on the
// engine named engine.
func checkFile(cmd *cobra.Command, path, engine string) (checked, error) {
	code, err := plugin.ReadModule(path, 0)
	if err != nil {
		return checked{}, fmt.Errorf("plugin: %w", err)
	}
	ctx := cmd.Context()
	cfg := wasm.NewConfig().WithHostModules(plugin.HostModule())
	if dir, err := wasm.UserCacheDir(); err == nil {
		cfg = cfg.WithCacheDir(dir) // so that the pipelines that run it find it compiled
	}
	eng, err := wasm.New(ctx, engine, cfg)
	if err != nil {
		return checked{}, err
	}
	defer eng.Close(ctx)
	r, err := plugin.Check(ctx, eng, filepath.Base(path), code)
	c := checked{Report: r}
	if err != nil {
		return c, err
	}
	// The registry refuses a module whose version section it cannot
	// read; a module that has other problems does not get that far.
	if c.Version, err = registry.ReadVersion(code); err != nil && c.OK() {
		c.Problems = append(c.Problems, fmt.Sprintf("custom section %s: %v: the registry (sluice plugin swap) refuses the module", registry.VersionSection, err))
	}
	return c, nil
}

func kindList(kinds []plugin.Kind) string {
	if len(kinds) == 0 {
		return "no operator kind"
	}
	s := make([]string, len(kinds))
	for i, k := range kinds {
		s[i] = string(k)
	}
	return strings.Join(s, ", ")
}

func printReport(w io.Writer, r checked) {
	fmt.Fprintf(w, "module   %s\n", r.Name)
	if r.Version != "" {
		fmt.Fprintf(w, "version  %s\n", r.Version)
	}
	fmt.Fprintf(w, "size     %d bytes\n", r.Size)
	fmt.Fprintf(w, "sha256   %s\n", r.SHA256)
	if r.Language != "" {
		fmt.Fprintf(w, "language %s\n", r.Language)
	}
	if r.ABIVersion != 0 {
		fmt.Fprintf(w, "abi      version %d\n", r.ABIVersion)
	}
	switch {
	case r.KindsDeclared:
		fmt.Fprintf(w, "kinds    %s (declared: custom section %s)\n", kindList(r.Kinds), abi.SectionKinds)
	case len(r.Kinds) > 0:
		fmt.Fprintf(w, "kinds    %s (inferred from its exports: the module has no %s custom section)\n", kindList(r.Kinds), abi.SectionKinds)
	default:
		fmt.Fprintf(w, "kinds    %s\n", kindList(r.Kinds))
	}
	if len(r.Exports) > 0 {
		fmt.Fprintln(w, "exports")
		for _, f := range r.Exports {
			fmt.Fprintf(w, "  %s\n", f)
		}
	}
	if len(r.Imports) > 0 {
		fmt.Fprintln(w, "imports")
		for _, f := range r.Imports {
			fmt.Fprintf(w, "  %s\n", f)
		}
	}
	for _, n := range r.Notes {
		fmt.Fprintf(w, "note: %s\n", n)
	}
	if r.OK() {
		fmt.Fprintln(w, "ok: the host accepts this module")
		return
	}
	for _, p := range r.Problems {
		fmt.Fprintf(w, "problem: %s\n", p)
	}
}

// checkJSON is the JSON form of a check: plugin.Report's fields, the
// module's version, and each function's signature as text ("(i32, i32) ->
// i32"). Lists are never null.
type checkJSON struct {
	Name          string
	Version       string `json:",omitempty"`
	Size          int
	SHA256        string
	Memory        bool
	Exports       []funcJSON
	Imports       []funcJSON
	ABIVersion    int32
	Command       bool
	Language      string
	Kinds         []plugin.Kind
	KindsDeclared bool
	Notes         []string
	Problems      []string
}

// funcJSON is an exported or imported function in a checkJSON.
type funcJSON struct {
	Module    string `json:",omitempty"` // the import module; none for an export
	Name      string
	Signature string
}

func (r checked) json() checkJSON {
	funcs := func(fs []wasm.FuncInfo) []funcJSON {
		out := make([]funcJSON, len(fs))
		for i, f := range fs {
			out[i] = funcJSON{Module: f.Module, Name: f.Name, Signature: f.Signature.String()}
		}
		return out
	}
	nonNil := func(s []string) []string { return append([]string{}, s...) }
	return checkJSON{
		Name: r.Name, Version: r.Version, Size: r.Size, SHA256: r.SHA256, Memory: r.Memory,
		Exports: funcs(r.Exports), Imports: funcs(r.Imports), ABIVersion: r.ABIVersion, Command: r.Command,
		Language: r.Language, Kinds: append([]plugin.Kind{}, r.Kinds...), KindsDeclared: r.KindsDeclared,
		Notes: nonNil(r.Notes), Problems: nonNil(r.Problems),
	}
}
