package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/sluicehq/sluice/host/plugin"
	wasm "github.com/sluicehq/sluice/runtime"
	"github.com/sluicehq/sluice/sdk/go/wasmbuild"
	"github.com/spf13/cobra"
)

func newPluginCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "plugin",
		Short: "Build and inspect WebAssembly plugins",
	}
	cmd.AddCommand(newPluginBuildCmd(), newPluginCheckCmd())
	return cmd
}

func newPluginBuildCmd() *cobra.Command {
	var out string
	cmd := &cobra.Command{
		Use:   "build DIR [-o FILE.wasm]",
		Short: "Compile a Go plugin (a main package using sdk/go/sluice) to a WebAssembly module",
		Long: `Compile the Go main package in DIR to a WebAssembly module with
GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared, then check it as
'sluice plugin check' does. The module is written to FILE.wasm, by default
DIR/<name of DIR>.wasm.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			dir := args[0]
			if st, err := os.Stat(dir); err != nil || !st.IsDir() {
				return &usageError{fmt.Sprintf("plugin build: %s is not a directory", dir)}
			}
			if out == "" {
				abs, err := filepath.Abs(dir)
				if err != nil {
					return err
				}
				out = filepath.Join(dir, filepath.Base(abs)+".wasm")
			}
			if err := wasmbuild.Go(cmd.Context(), dir, out); err != nil {
				return err
			}
			r, err := checkFile(cmd, out)
			if err != nil {
				return err
			}
			if !r.OK() {
				printReport(cmd.ErrOrStderr(), r)
				return fmt.Errorf("plugin build: %s was built but the host would refuse it", out)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "built %s (%d bytes, ABI version %d, serves %s)\n", out, r.Size, r.ABIVersion, kindList(r.Kinds))
			return nil
		},
	}
	cmd.Flags().StringVarP(&out, "output", "o", "", "the module file to write")
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
		Args: cobra.ExactArgs(1),
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

func checkFile(cmd *cobra.Command, path string) (plugin.Report, error) {
	code, err := os.ReadFile(path)
	if err != nil {
		return plugin.Report{}, fmt.Errorf("plugin: %w", err)
	}
	ctx := cmd.Context()
	eng, err := wasm.NewWazero(ctx, wasm.NewConfig().WithHostModules(plugin.HostModule()))
	if err != nil {
		return plugin.Report{}, err
	}
	defer eng.Close(ctx)
	return plugin.Check(ctx, eng, filepath.Base(path), code), nil
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

func printReport(w io.Writer, r plugin.Report) {
	fmt.Fprintf(w, "module   %s\n", r.Name)
	fmt.Fprintf(w, "size     %d bytes\n", r.Size)
	fmt.Fprintf(w, "sha256   %s\n", r.SHA256)
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
