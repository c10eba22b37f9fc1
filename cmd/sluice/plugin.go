package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

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
	r, err := checkFile(cmd, res.Output)
	if err != nil {
		return res, r, err
	}
	if !r.OK() {
		printReport(cmd.ErrOrStderr(), r)
		return res, r, fmt.Errorf("%s was built but the host would refuse it", res.Output)
	}
	return res, r, nil
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
package that provides it; scripts/install-toolchains.sh installs them all.`,
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
	cmd := &cobra.Command{
		Use:   "check FILE.wasm",
		Short: "Report a module's exports, imports and ABI version, and every problem the host would refuse it for",
		Long: `Compile and inspect a module as the host does when a pipeline loads it, and
report its exports and imports with their signatures, the ABI version it
declares, the operator kinds it can serve, and every problem with it. Exits 1
when the module has problems.`,
		Args: exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			r, err := checkFile(cmd, args[0])
			if err != nil {
				return err
			}
			if asJSON {
				enc := json.NewEncoder(cmd.OutOrStdout())
				enc.SetIndent("", "  ")
				if err := enc.Encode(r); err != nil {
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
	return cmd
}

// checked is what plugin check reports of a module: the host's check, and
// the version the module declares, as the registry shows it.
type checked struct {
	plugin.Report
	// Version is the text of the module's sluice.version custom section;
	// empty when it has none.
	Version string
}

func checkFile(cmd *cobra.Command, path string) (checked, error) {
	code, err := plugin.ReadModule(path, 0)
	if err != nil {
		return checked{}, fmt.Errorf("plugin: %w", err)
	}
	version, verr := registry.ReadVersion(code)
	ctx := cmd.Context()
	cfg := wasm.NewConfig().WithHostModules(plugin.HostModule())
	if dir, err := wasm.UserCacheDir(); err == nil {
		cfg = cfg.WithCacheDir(dir) // so that the pipelines that run it find it compiled
	}
	eng, err := wasm.NewWazero(ctx, cfg)
	if err != nil {
		return checked{}, err
	}
	defer eng.Close(ctx)
	r, err := plugin.Check(ctx, eng, filepath.Base(path), code)
	if err != nil {
		return checked{}, err
	}
	if verr != nil {
		// The registry refuses such a module, and so does the host.
		r.Problems = append(r.Problems, verr.Error())
	}
	return checked{Report: r, Version: version}, nil
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
	} else {
		fmt.Fprintf(w, "version  none (no %s custom section: shown as sha256:%s)\n", registry.VersionSection, r.SHA256[:min(12, len(r.SHA256))])
	}
	fmt.Fprintf(w, "size     %d bytes\n", r.Size)
	fmt.Fprintf(w, "sha256   %s\n", r.SHA256)
	if r.Language != "" {
		fmt.Fprintf(w, "language %s\n", r.Language)
	}
	if r.ABIVersion != 0 {
		fmt.Fprintf(w, "abi      version %d\n", r.ABIVersion)
	}
	fmt.Fprintf(w, "kinds    %s\n", kindList(r.Kinds))
	if len(r.Exports) > 0 {
		fmt.Fprintln(w, "exports")
		for _, f := range r.Exports {
			fmt.Fprintf(w, "  %s %s\n", f.Name, signature(f.Signature))
		}
	}
	if len(r.Imports) > 0 {
		fmt.Fprintln(w, "imports")
		for _, f := range r.Imports {
			fmt.Fprintf(w, "  %s.%s %s\n", f.Module, f.Name, signature(f.Signature))
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

func signature(s wasm.Signature) string {
	list := func(ts []wasm.ValueType) string {
		parts := make([]string, len(ts))
		for i, t := range ts {
			parts[i] = t.String()
		}
		return "(" + strings.Join(parts, ", ") + ")"
	}
	return list(s.Params) + " -> " + list(s.Results)
}
