package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/sluicehq/sluice/host/api"
	"github.com/sluicehq/sluice/host/api/schema"
	"github.com/sluicehq/sluice/host/pipeline"
	"github.com/sluicehq/sluice/host/plugin"
	"github.com/sluicehq/sluice/host/registry"
	"github.com/sluicehq/sluice/host/runner"
	"github.com/spf13/cobra"
)

// newPluginLifecycleCmds returns the commands that manage the plugins of
// a running or stopped host: list, swap and rollback.
func newPluginLifecycleCmds() []*cobra.Command {
	return []*cobra.Command{newPluginListCmd(), newPluginSwapCmd(), newPluginRollbackCmd()}
}

func newPluginListCmd() *cobra.Command {
	var dataDir string
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "list --data-dir DIR [--json]",
		Short: "List the plugins a host deployed: versions, hashes, ABI, and each operator's history",
		Long: `List reads the plugin registry under the data directory (DIR/plugins): every
module deployed, by SHA-256, with the version it declares (custom section
"sluice.version"), its ABI version and operator kinds, and the deployments of
each operator (start, swap, rollback, auto-rollback). It needs no running host;
GET /api/v1/plugins answers the same from a running one.`,
		Args: exactArgs(0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if dataDir == "" {
				return &usageError{"plugin list: --data-dir is required (the pipeline's data_dir)"}
			}
			dir := filepath.Join(dataDir, "plugins")
			if _, err := os.Stat(dir); err != nil {
				return fmt.Errorf("plugin list: no plugin registry in %s: %w", dataDir, err)
			}
			reg, err := registry.Open(dir)
			if err != nil {
				return err
			}
			mods, err := reg.List()
			if err != nil {
				return err
			}
			deps, err := reg.Deployments("")
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			if asJSON {
				enc := json.NewEncoder(out)
				enc.SetIndent("", "  ")
				return enc.Encode(struct {
					Modules     []registry.Entry      `json:"modules"`
					Deployments []registry.Deployment `json:"deployments"`
				}{mods, deps})
			}
			printRegistry(out, mods, deps)
			return nil
		},
	}
	cmd.Flags().StringVar(&dataDir, "data-dir", "", "the host's data directory")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}

// printRegistry writes the modules and, per operator, the deployments.
func printRegistry(w io.Writer, mods []registry.Entry, deps []registry.Deployment) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "SHA256\tNAME\tVERSION\tABI\tKINDS\tSIZE\tDEPLOYED")
	byHash := map[string]registry.Entry{}
	for _, m := range mods {
		byHash[m.SHA256] = m
		v := m.Version
		if v == "" {
			v = "-"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\t%d\t%s\n", m.SHA256[:12], m.Name, v, m.ABIVersion,
			strings.Join(m.Kinds, ","), m.Size, m.Deployed.Local().Format(time.DateTime))
	}
	tw.Flush()
	if len(deps) == 0 {
		return
	}
	fmt.Fprintln(w)
	tw = tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "AT\tOPERATOR\tREASON\tMODULE\tDETAIL")
	for _, d := range deps {
		label := "sha256:" + d.SHA256[:min(12, len(d.SHA256))]
		if e, ok := byHash[d.SHA256]; ok {
			label = e.Label()
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", d.At.Local().Format(time.DateTime), d.Operator, d.Reason, label, d.Detail)
	}
	tw.Flush()
}

// apiFlags say how to reach a running host's API.
type apiFlags struct {
	addr, token, dataDir, config string
	operator                     string
	timeout                      time.Duration
}

func (f *apiFlags) register(cmd *cobra.Command) {
	cmd.Flags().StringVar(&f.operator, "operator", "", "the operator whose plugin changes (required)")
	cmd.Flags().StringVar(&f.addr, "addr", "", "the host's HTTP API address (default: the one the running host wrote to DATA-DIR/"+runner.AddrFile+", else http.addr of -c PIPELINE, else "+pipeline.DefaultHTTPAddr+")")
	cmd.Flags().StringVar(&f.token, "token", "", "the API token (default: $"+runner.TokenEnv+", else DATA-DIR/"+runner.TokenFile+")")
	cmd.Flags().StringVar(&f.dataDir, "data-dir", "", "the host's data directory, where it wrote its token (default: data_dir of -c PIPELINE)")
	cmd.Flags().StringVarP(&f.config, "config", "c", "", "the running pipeline's file, for its address and data directory")
	cmd.Flags().DurationVar(&f.timeout, "timeout", 2*time.Minute, "how long to wait for the host (a swap waits for the next batch boundary)")
}

// resolve fills the address and token from the flags, the pipeline file,
// the environment and the token file.
func (f *apiFlags) resolve(name string) error {
	if f.operator == "" {
		return &usageError{name + ": --operator is required"}
	}
	configured := ""
	if f.config != "" {
		p, err := pipeline.Load(f.config)
		if err != nil {
			return err
		}
		configured = p.HTTP.Addr
		if f.dataDir == "" {
			f.dataDir = p.DataDir
		}
	}
	if f.addr == "" && f.dataDir != "" {
		// The running host wrote where it listens: the configured
		// address, one given with --http, or a free port it chose.
		if addr, err := runner.ReadAddr(f.dataDir); err == nil && addr != "" {
			f.addr = addr
		}
	}
	if f.addr == "" {
		f.addr = configured
	}
	if f.addr == "" {
		f.addr = pipeline.DefaultHTTPAddr
	}
	if f.token == "" {
		f.token = os.Getenv(runner.TokenEnv)
	}
	if f.token == "" && f.dataDir != "" {
		tok, err := runner.ReadToken(f.dataDir)
		if err != nil {
			return fmt.Errorf("%s: %w (give --token, or --data-dir of the running host)", name, err)
		}
		f.token = tok
	}
	if f.token == "" {
		return &usageError{name + ": no API token: give --token, $" + runner.TokenEnv + ", --data-dir DIR or -c PIPELINE"}
	}
	return nil
}

// client returns the API client the flags point at.
func (f *apiFlags) client() *api.Client { return &api.Client{Addr: f.addr, Token: f.token} }

// printSwap prints the answer of a swap or rollback: the modules, and
// how long each step took.
func printSwap(w io.Writer, res schema.SwapResult, err error) error {
	if err != nil {
		return err
	}
	s := res.Steps
	_, err = fmt.Fprintf(w, "operator %s: %s -> %s (sha256 %s)\n  %s: check %s, load %s, instances %s, boundary %s, install %s; total %s\n",
		res.Operator, res.From.Label(), res.To.Label(), res.To.SHA256, sourceText(res.Source),
		millis(s.CheckMS), millis(s.LoadMS), millis(s.InstancesMS), millis(s.BoundaryMS), millis(s.InstallMS), millis(s.TotalMS))
	return err
}

// printPrepare prints the answer of a prepare.
func printPrepare(w io.Writer, res schema.PrepareResult, err error) error {
	if err != nil {
		return err
	}
	m, s := res.Module, res.Steps
	_, err = fmt.Fprintf(w, "operator %s: prepared %s (sha256 %s, ABI %d, kinds %s)\n  %s: check %s, load %s; total %s\n"+
		"  a swap of the same file now only makes its instances and installs them\n",
		res.Operator, m.Label(), m.SHA256, m.ABIVersion, strings.Join(m.Kinds, ","), sourceText(res.Source),
		millis(s.CheckMS), millis(s.LoadMS), millis(s.TotalMS))
	return err
}

// sourceText says where the host took a module from (schema.Source*).
func sourceText(source string) string {
	switch source {
	case schema.SourceUpload:
		return "new module, checked and compiled"
	case schema.SourceRegistry:
		return "module from the registry, not checked again"
	case schema.SourcePrepared:
		return "prepared module, neither checked nor loaded again"
	}
	return "module from " + source
}

// millis formats a time in milliseconds with three significant digits
// or more ("0 ms" for a step that was not needed).
func millis(ms float64) string {
	switch {
	case ms == 0:
		return "0 ms"
	case ms >= 100:
		return fmt.Sprintf("%.0f ms", ms)
	case ms >= 10:
		return fmt.Sprintf("%.1f ms", ms)
	case ms >= 1:
		return fmt.Sprintf("%.2f ms", ms)
	}
	return fmt.Sprintf("%.3f ms", ms)
}

func newPluginSwapCmd() *cobra.Command {
	var f apiFlags
	var prepare bool
	cmd := &cobra.Command{
		Use:   "swap --operator NAME [--prepare] [-c PIPELINE | --data-dir DIR] [--addr HOST:PORT] [--token T] [--timeout D] FILE.wasm",
		Short: "Replace a running operator's plugin at the next batch boundary, keeping its state",
		Long: `Swap sends FILE.wasm to the running host, which stores it in its registry,
checks it (valid, same ABI version, has what the operator's kind needs),
compiles it and makes its instances in the background, and puts it in place
of the old plugin at the next batch boundary on every worker at once. State
stays. If the new plugin fails in its first rollback_batches batches, the
host rolls back to the previous one by itself. It prints where the host took
the module from and how long each step took (docs/api.md).

With --prepare, the host does the first half only: it stores, checks,
compiles and loads FILE.wasm for the operator, refusing it as a swap would,
and keeps it; the operator runs on unchanged. A later swap of the same file
then only makes its instances and installs them, so the compile (the slow
part, which competes with the pipeline for the CPU) happens when you choose.
It is a flag of swap rather than a command of its own because it is the
first half of a swap: same file, same operator, same host, same refusals.`,
		Args: exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := f.resolve("plugin swap"); err != nil {
				return err
			}
			module, err := plugin.ReadModule(args[0], 0)
			if err != nil {
				return fmt.Errorf("plugin swap: %w", err)
			}
			ctx, cancel := context.WithTimeout(cmd.Context(), f.timeout)
			defer cancel()
			if prepare {
				res, err := f.client().Prepare(ctx, f.operator, filepath.Base(args[0]), module)
				return printPrepare(cmd.OutOrStdout(), res, err)
			}
			res, err := f.client().Swap(ctx, f.operator, filepath.Base(args[0]), module)
			return printSwap(cmd.OutOrStdout(), res, err)
		},
	}
	f.register(cmd)
	cmd.Flags().BoolVar(&prepare, "prepare", false, "store, check, compile and load the module for the operator without swapping it in: a later swap of the same file only installs it")
	return cmd
}

func newPluginRollbackCmd() *cobra.Command {
	var f apiFlags
	cmd := &cobra.Command{
		Use:   "rollback --operator NAME [-c PIPELINE | --data-dir DIR] [--addr HOST:PORT] [--token T] [--timeout D]",
		Short: "Return a running operator to the plugin it ran before the current one",
		Args:  exactArgs(0),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := f.resolve("plugin rollback"); err != nil {
				return err
			}
			ctx, cancel := context.WithTimeout(cmd.Context(), f.timeout)
			defer cancel()
			res, err := f.client().Rollback(ctx, f.operator)
			return printSwap(cmd.OutOrStdout(), res, err)
		},
	}
	f.register(cmd)
	return cmd
}
