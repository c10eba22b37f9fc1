package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/sluicehq/sluice/sdk/build"
	"github.com/sluicehq/sluice/sdk/scaffold"
)

func newPluginNewCmd() *cobra.Command {
	var lang, sdk string
	cmd := &cobra.Command{
		Use:   "new --lang LANG [--sdk DIR] NAME",
		Short: "Create a plugin project: a minimal operator, a README and a passing test",
		Long: `Create the directory NAME holding a new plugin project in LANG: a minimal
stateless operator (a map that upper-cases the ASCII letters of each record's
value), a README saying how to build, test and run it in a pipeline, and test
cases in NAME/testdata that pass out of the box:

  sluice plugin new --lang rust myop
  sluice plugin test myop

The project uses the SDK of a Sluice checkout by path: --sdk, by default the
checkout containing the working directory. The last element of NAME names the
plugin: a lower-case letter, then lower-case letters, digits, '-' or '_'.`,
		Args: exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if lang == "" {
				return &usageError{"plugin new: --lang is required (" + languageNames() + ")"}
			}
			l, err := build.ParseLanguage(lang)
			if err != nil {
				return &usageError{"plugin new: " + err.Error()}
			}
			if sdk == "" {
				wd, err := os.Getwd()
				if err != nil {
					return err
				}
				if sdk, err = build.FindRoot(wd); err != nil {
					return fmt.Errorf("plugin new: the working directory is not inside a Sluice checkout (no go.mod of module %s at or above %s): name one with --sdk DIR", build.ModulePath, wd)
				}
			}
			files, err := scaffold.Create(args[0], l, sdk)
			switch {
			case errors.Is(err, scaffold.ErrBadName), errors.Is(err, scaffold.ErrNoTemplate):
				return &usageError{"plugin new: " + err.Error()}
			case err != nil:
				return fmt.Errorf("plugin new: %w", err)
			}
			w := cmd.OutOrStdout()
			for _, f := range files {
				fmt.Fprintf(w, "created %s\n", filepath.Join(args[0], f))
			}
			fmt.Fprintf(w, "\nnext:\n  sluice plugin test %s     # builds it and runs testdata/*.yaml through the host\n", args[0])
			if l == build.Go {
				fmt.Fprintf(w, "  (cd %s && go test .)     # the handler natively\n", args[0])
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&lang, "lang", "", "the project's language: "+languageNames())
	cmd.Flags().StringVar(&sdk, "sdk", "", "the Sluice checkout whose SDK the project uses; default: the checkout containing the working directory")
	return cmd
}

func languageNames() string {
	ls := scaffold.Languages()
	s := make([]string, len(ls))
	for i, l := range ls {
		s[i] = string(l)
	}
	return strings.Join(s, ", ")
}
