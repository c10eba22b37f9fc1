package main

import (
	"fmt"
	"path/filepath"
	"regexp"

	"github.com/sluicehq/sluice/host/plugin"
	"github.com/spf13/cobra"
)

func newPluginTestCmd() *cobra.Command {
	var bf buildFlags
	var run string
	cmd := &cobra.Command{
		Use:   "test DIR [--run REGEXP]",
		Short: "Build a plugin and run its test cases (DIR/testdata/*.yaml) through the host",
		Long: `Build the plugin in DIR as 'sluice plugin build' does, then run the test
cases of DIR/testdata/*.yaml through the compiled module in the real host, and
report every case whose outputs, dead letters or final state differ from those
the case expects. Exits 1 when a case fails.

` + casesHelp + "\n\n" + windowCasesHelp,
		Args: exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			dir := args[0]
			var filter *regexp.Regexp
			if run != "" {
				var err error
				if filter, err = regexp.Compile(run); err != nil {
					return &usageError{fmt.Sprintf("plugin test: --run: %v", err)}
				}
			}
			files, err := caseFiles(dir)
			if err != nil {
				return fmt.Errorf("plugin test: %w", err)
			}
			if len(files) == 0 {
				return fmt.Errorf("plugin test: %s has no test cases: write %s (see 'sluice help plugin test')", dir, filepath.Join(dir, "testdata", "cases.yaml"))
			}
			res, _, err := bf.build(cmd, dir, "", "")
			if err != nil {
				return fmt.Errorf("plugin test: %w", err)
			}
			wasm, err := plugin.ReadModule(res.Output, 0)
			if err != nil {
				return fmt.Errorf("plugin test: %w", err)
			}
			w := cmd.OutOrStdout()
			fmt.Fprintf(w, "built %s (%s)\n", res.Output, res.Language)
			var total caseRun
			for _, path := range files {
				f, err := loadCaseFile(path)
				if err != nil {
					return fmt.Errorf("plugin test: %w", err)
				}
				fmt.Fprintf(w, "--- %s\n", path)
				r, err := runCaseFile(cmd.Context(), w, path, f, filepath.Base(res.Output), wasm, filter)
				if err != nil {
					return fmt.Errorf("plugin test: %w", err)
				}
				total.passed += r.passed
				total.failed += r.failed
			}
			if total.failed > 0 {
				return fmt.Errorf("plugin test: %d of %d cases failed", total.failed, total.passed+total.failed)
			}
			if total.passed == 0 {
				return fmt.Errorf("plugin test: no case matches --run %q", run)
			}
			fmt.Fprintf(w, "ok: %d cases passed\n", total.passed)
			return nil
		},
	}
	bf.register(cmd)
	cmd.Flags().StringVar(&run, "run", "", "run only the cases whose names match this regular expression")
	return cmd
}
