package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/sluicehq/sluice/host/pipeline"
	"github.com/sluicehq/sluice/host/plugin"
	"github.com/sluicehq/sluice/host/runner"
	wasm "github.com/sluicehq/sluice/runtime"
	"github.com/spf13/cobra"
)

func newLintCmd() *cobra.Command {
	var file string
	cmd := &cobra.Command{
		Use:   "lint -c PIPELINE.yaml",
		Short: "Check a pipeline and its plugins without running it",
		Long: `Check a pipeline file as 'sluice run' would, without running it: the file
(every error with its line and key), then each operator's plugin, compiled
and instantiated under the operator's limits as the host loads it (its
exports serve the operator's kind, its ABI version is this host's), then
what is legal but likely a mistake, as warnings: a source's line cap below
the first operator's max_record_bytes, a max_record_bytes an instance's
memory cannot hold, and the ports 'sluice run' would listen on (nats.port
of the embedded NATS server, http.addr) in use now.

Prints each finding as "error:" or "warning:", then a summary; exits 1 when
there are errors, 0 otherwise (warnings alone included).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if file == "" {
				return &usageError{"lint: -c PIPELINE.yaml is required"}
			}
			return lint(cmd.Context(), cmd.OutOrStdout(), file)
		},
	}
	cmd.Flags().StringVarP(&file, "config", "c", "", "the pipeline file")
	return cmd
}

// lint checks the pipeline file at path and its plugins, writing what it
// finds to w; the error says how many errors it found.
func lint(ctx context.Context, w io.Writer, path string) error {
	var errs, warnings []error
	p, err := pipeline.Load(path)
	if err != nil {
		var pe *pipeline.Error
		if !errors.As(err, &pe) {
			return err // the file cannot be read
		}
		errs = unjoin(err)
	} else {
		fmt.Fprintf(w, "pipeline %s: %s, %s, %s\n", p.Name, count(len(p.Sources), "source"), count(len(p.Operators), "operator"), count(len(p.Sinks), "sink"))
		errs, warnings = lintPlugins(ctx, w, p)
		warnings = append(warnings, lintLimits(p)...)
		warnings = append(warnings, lintPorts(p)...)
	}
	for _, e := range errs {
		fmt.Fprintf(w, "error: %v\n", e)
	}
	for _, e := range warnings {
		fmt.Fprintf(w, "warning: %v\n", e)
	}
	fmt.Fprintf(w, "%s: %s, %s\n", path, count(len(errs), "error"), count(len(warnings), "warning"))
	if len(errs) > 0 {
		return fmt.Errorf("lint: %s has %s", path, count(len(errs), "error"))
	}
	return nil
}

// unjoin returns the errors errors.Join joined into err, or err alone.
func unjoin(err error) []error {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		return j.Unwrap()
	}
	return []error{err}
}

func count(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return strconv.Itoa(n) + " " + what + "s"
}

// lintPlugins checks each operator's plugin as the host loads it: read,
// compiled and instantiated under the operator's limits, serving its kind.
func lintPlugins(ctx context.Context, w io.Writer, p *pipeline.Pipeline) (errs, warnings []error) {
	cacheDir := p.CompileCache
	if cacheDir == "" {
		cacheDir, _ = wasm.UserCacheDir() // none: compile without a cache
	}
	for i := range p.Operators {
		o := &p.Operators[i]
		at := func(msg string, key ...any) *pipeline.Error {
			return p.ErrorAt(msg, append([]any{"operators", i}, key...)...)
		}
		if o.Plugin == "" {
			// A native operator (a built-in aggregate, a join), which
			// the pipeline's validation let through without a plugin.
			fmt.Fprintf(w, "operators[%d] %s: %s, native (no plugin)\n", i, o.Name, nativeOperator(o))
			continue
		}
		name := o.Plugin
		if rel, err := filepath.Rel(p.Dir, o.Plugin); err == nil && filepath.IsLocal(rel) {
			name = rel
		}
		code, err := plugin.ReadModule(o.Plugin, 0)
		if err != nil {
			errs = append(errs, at(strings.ReplaceAll(err.Error(), o.Plugin, name), "plugin"))
			continue
		}
		eng, err := wasm.New(ctx, o.Engine, runner.EngineConfig(o, cacheDir))
		if err != nil {
			errs = append(errs, at(err.Error(), "limits"))
			continue
		}
		r, err := plugin.Check(ctx, eng, filepath.Base(o.Plugin), code)
		_ = eng.Close(ctx)
		if err != nil {
			errs = append(errs, at(fmt.Sprintf("%s: %v", name, err), "plugin"))
			continue
		}
		for _, pr := range r.Problems {
			errs = append(errs, at(fmt.Sprintf("%s: %s", name, pr), "plugin"))
		}
		for _, n := range r.Notes {
			if o.Kind != pipeline.KindKeyed {
				warnings = append(warnings, at(fmt.Sprintf("%s: %s", name, n), "plugin"))
			}
		}
		if len(r.Problems) > 0 {
			continue
		}
		if !slices.Contains(r.Kinds, plugin.Kind(o.Kind)) {
			errs = append(errs, at(fmt.Sprintf("%s serves %s; not %s (sluice plugin check %s says what it lacks)", name, kindList(r.Kinds), o.Kind, name), "kind"))
			continue
		}
		fmt.Fprintf(w, "operators[%d] %s: %s (ABI version %d) serves %s\n", i, o.Name, name, r.ABIVersion, o.Kind)
	}
	return errs, warnings
}

// nativeOperator names what an operator without a plugin runs: the
// built-in aggregate of an aggregate operator, or a join.
func nativeOperator(o *pipeline.Operator) string {
	if o.Kind == pipeline.KindAggregate && o.Function != "" {
		return "aggregate " + o.Function
	}
	return o.Kind
}

// lintLimits warns of limits that hold records back.
func lintLimits(p *pipeline.Pipeline) []error {
	var warnings []error
	if len(p.Operators) == 0 {
		return nil
	}
	first := p.Operators[0].Limits.MaxRecordBytes
	for i, s := range p.Sources {
		if (s.Type == "file" || s.Type == "stdin") && s.MaxLineBytes < first {
			warnings = append(warnings, p.ErrorAt(fmt.Sprintf("lines of more than %d bytes are dead-lettered by the source, below the %d bytes operator %q accepts (its limits.max_record_bytes)",
				s.MaxLineBytes, first, p.Operators[0].Name), "sources", i, "max_line_bytes"))
		}
	}
	for i, o := range p.Operators {
		pages := int64(o.Limits.MemoryPages)
		if pages == 0 {
			pages = wasm.DefaultMemoryLimitPages
		}
		if mem := pages << 16; int64(o.Limits.MaxRecordBytes) >= mem {
			warnings = append(warnings, p.ErrorAt(fmt.Sprintf("max_record_bytes %d is not below the instance's memory, %s of 64 KiB (%d bytes): a record that large cannot reach the plugin; raise limits.memory_pages",
				o.Limits.MaxRecordBytes, count(int(pages), "page"), mem), "operators", i, "limits", "max_record_bytes"))
		}
	}
	return warnings
}

// lintPorts warns of the addresses `sluice run` would listen on that are
// in use now.
func lintPorts(p *pipeline.Pipeline) []error {
	var warnings []error
	if p.NeedsNATS() && p.NATS.URL == "" && p.NATS.Port > 0 {
		addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(p.NATS.Port))
		if err := listenable(addr); err != nil {
			warnings = append(warnings, p.ErrorAt(fmt.Sprintf("%s, where the embedded NATS server would listen, is in use (%v): set nats.port to another port, or -1 for a free one, or nats.url to use a server that runs", addr, err), "nats", "port"))
		}
	}
	if p.HTTP.Addr != "off" {
		if err := listenable(p.HTTP.Addr); err != nil {
			warnings = append(warnings, p.ErrorAt(fmt.Sprintf("%s, where the HTTP API would listen, is in use (%v): set http.addr to another address, or off", p.HTTP.Addr, err), "http", "addr"))
		}
	}
	return warnings
}

// listenable reports why addr cannot be listened on now, or nil.
func listenable(addr string) error {
	l, err := net.Listen("tcp", addr)
	if err != nil {
		var oe *net.OpError
		if errors.As(err, &oe) && oe.Err != nil {
			return oe.Err
		}
		return err
	}
	return l.Close()
}
